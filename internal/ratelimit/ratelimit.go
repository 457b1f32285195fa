// Package ratelimit holds the runtime's token buckets (R8): one global,
// and one per principal, each with part of its burst reserved for
// requests of a higher priority.
//
//	l := ratelimit.New(ratelimit.Limits{PerSecond: 50, PerPrincipal: 5})
//	if wait, bucket := l.Allow("alice", 0); wait > 0 { /* refused: retry after wait */ }
package ratelimit

import (
	"math"
	"sync"
	"time"

	"golang.org/x/time/rate"
)

// Limits configure a Limiter. A zero rate means no limit.
type Limits struct {
	PerSecond         float64 // global calls per second
	Burst             int     // if zero, max(1, PerSecond)
	PerPrincipal      float64 // calls per second for each principal
	PerPrincipalBurst int     // if zero, max(1, PerPrincipal)
	// MaxPrincipalsKnown is how many principals are tracked; past it idle
	// ones are dropped, and while all are throttled a new one waits; if
	// zero, 10000.
	MaxPrincipalsKnown int
	// Reserved is the fraction of each bucket's burst (the global one's,
	// and each principal's) that only requests of priority above 0 may
	// use, so that an urgent request still gets through when the bulk of
	// traffic has drained the bucket; in whole tokens, rounded down (a
	// bucket of one token keeps none); if zero, none.
	Reserved float64
	// Levels is the highest priority a request may have (the highest of
	// rate_limit.priorities). Above 1, the levels above 0 take the
	// reserve in order: a request of priority p below Levels leaves
	// (Levels-p)/Levels of it (in whole tokens, rounded down) to the
	// higher ones, so that a flood of level 1 cannot take the tokens of a
	// level-2 request; if 0 or 1, every priority above 0 may take the
	// whole reserve.
	Levels int
}

// Limiter holds the global and per-principal token buckets. Safe for
// concurrent use.
type Limiter struct {
	global   *rate.Limiter
	reserve  float64 // global tokens kept for high-priority requests
	per      rate.Limit
	burst    int
	preserve float64 // each principal's tokens kept for its high-priority requests
	maxN     int
	levels   int

	mu         sync.Mutex
	principals map[string]*rate.Limiter
}

// New returns a Limiter with the limits o.
func New(o Limits) *Limiter {
	l := &Limiter{principals: map[string]*rate.Limiter{}}
	if o.PerSecond > 0 {
		b := o.Burst
		if b == 0 {
			b = max(1, int(o.PerSecond))
		}
		l.global = rate.NewLimiter(rate.Limit(o.PerSecond), b)
		l.reserve = wholeTokens(o.Reserved, b)
	}
	if o.PerPrincipal > 0 {
		l.per = rate.Limit(o.PerPrincipal)
		l.burst = o.PerPrincipalBurst
		if l.burst == 0 {
			l.burst = max(1, int(o.PerPrincipal))
		}
		l.preserve = wholeTokens(o.Reserved, l.burst)
	}
	l.levels = o.Levels
	l.maxN = o.MaxPrincipalsKnown
	if l.maxN == 0 {
		l.maxN = 10000
	}
	return l
}

// Allow takes a token for principal, or returns how long until one is
// there and which bucket is empty (as the refusal names it: "global",
// "per-principal", ...). A request of priority 0 or below may not take the
// tokens reserved for higher priorities, in its principal's bucket or the
// global one; one above 0, the share of them kept for the levels above
// its own (Limits.Levels).
func (l *Limiter) Allow(principal string, priority int) (time.Duration, string) {
	if l.per <= 0 && l.global == nil {
		return 0, "" // no limit: no clock to read (every call asks)
	}
	now := time.Now()
	var mine *rate.Reservation // the principal's token, given back if the global bucket refuses
	if l.per > 0 {
		l.mu.Lock()
		pl, ok := l.principals[principal]
		if !ok {
			if len(l.principals) >= l.maxN {
				if wait := l.evict(now); len(l.principals) >= l.maxN {
					l.mu.Unlock()
					return wait, "per-principal (as many principals as are tracked are using their limits)"
				}
			}
			pl = rate.NewLimiter(l.per, l.burst)
			l.principals[principal] = pl
		}
		l.mu.Unlock()
		if keep := l.kept(l.preserve, priority); keep > 0 && pl.TokensAt(now)-1 < keep {
			return reserveWait(pl, keep, now), "per-principal (" + reservedFor(priority) + ")"
		}
		mine = pl.ReserveN(now, 1)
		if !mine.OK() || mine.DelayFrom(now) > 0 {
			mine.CancelAt(now)
			return wait(pl, now), "per-principal"
		}
	}
	if l.global != nil {
		if keep := l.kept(l.reserve, priority); keep > 0 && l.global.TokensAt(now)-1 < keep {
			if mine != nil {
				mine.CancelAt(now)
			}
			return reserveWait(l.global, keep, now), "global (" + reservedFor(priority) + ")"
		}
		if !l.global.AllowN(now, 1) {
			if mine != nil {
				mine.CancelAt(now)
			}
			return wait(l.global, now), "global"
		}
	}
	return 0, ""
}

// kept is how many of a bucket's reserved tokens a request of priority
// may not take: all of them at 0 or below; above, the higher levels'
// share (Limits.Levels), none at the highest.
func (l *Limiter) kept(reserve float64, priority int) float64 {
	switch {
	case reserve <= 0:
		return 0
	case priority <= 0:
		return reserve
	case priority >= l.levels:
		return 0
	}
	return math.Floor(reserve*float64(l.levels-priority)/float64(l.levels) + 1e-9)
}

// reservedFor is what a refusal by a bucket's reserve says of it.
func reservedFor(priority int) string {
	if priority > 0 {
		return "capacity reserved for higher-priority requests"
	}
	return "capacity reserved for priority requests"
}

// evict makes room in the full principals table: it forgets the idle
// principals (their buckets are full, so forgetting them changes nothing),
// or else the one closest to full if it lacks at most a token (forgetting
// it gives it at most one call back) and has some left. A principal further from full
// is never forgotten, so that others filling the table cannot reset its
// bucket; when every one is, the table stays full and evict returns how
// long until the closest is within a token of full. l.mu is held.
func (l *Limiter) evict(now time.Time) time.Duration {
	var fullest string
	most := -1.0
	for p, pl := range l.principals {
		tk := pl.TokensAt(now)
		if tk >= float64(l.burst) {
			delete(l.principals, p)
			continue
		}
		if tk > most {
			fullest, most = p, tk
		}
	}
	if len(l.principals) < l.maxN {
		return 0
	}
	// Within a token of full, and not empty (with a burst of one, an empty
	// bucket is a throttled principal).
	if need := max(float64(l.burst)-1, 1e-9) - most; need > 0 {
		return max(time.Duration(need/float64(l.per)*float64(time.Second)), time.Millisecond)
	}
	delete(l.principals, fullest)
	return 0
}

func wait(l *rate.Limiter, now time.Time) time.Duration {
	missing := 1 - l.TokensAt(now)
	if missing <= 0 {
		return time.Millisecond
	}
	return max(time.Duration(missing/float64(l.Limit())*float64(time.Second)), time.Millisecond)
}

// reserveWait is how long until l has a token above its reserve.
func reserveWait(l *rate.Limiter, reserve float64, now time.Time) time.Duration {
	missing := reserve + 1 - l.TokensAt(now)
	return max(time.Duration(missing/float64(l.Limit())*float64(time.Second)), time.Millisecond)
}

// wholeTokens is the reserve of a bucket of burst tokens: the fraction
// share of it, rounded down to whole tokens (a float product such as
// 0.7*10 may land a hair below the whole number it is), at most burst-1.
func wholeTokens(share float64, burst int) float64 {
	if share <= 0 {
		return 0
	}
	return min(math.Floor(share*float64(burst)+1e-9), float64(max(burst-1, 0)))
}
