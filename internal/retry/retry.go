// Package retry holds what the runtime's executor needs to retry a tool's
// failures (R6): which failures are transient — the one classification,
// which the circuit breakers count too — and the backoff between
// attempts.
//
//	if retry.Classify(err.Error()) != "" && n < attempts {
//		retry.Sleep(ctx, retry.Backoff(100*time.Millisecond, 5*time.Second, n))
//	}
package retry

import (
	"context"
	mrand "math/rand/v2"
	"strings"
	"time"
)

// Backoff returns the wait before attempt n+1: base doubled n-1 times,
// capped at max, with jitter (half of it, plus up to half at random).
func Backoff(base, max time.Duration, n int) time.Duration {
	d := base << (n - 1)
	if d > max || d <= 0 {
		d = max
	}
	return d/2 + time.Duration(mrand.Int64N(int64(d/2)+1))
}

// Sleep waits for d, or until ctx ends: then it returns ctx's cause.
func Sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return context.Cause(ctx)
	}
}

// permanentTypes are the tool error types that say trying again as is
// cannot help.
var permanentTypes = map[string]bool{"invalid_args": true, "not_found": true, "forbidden": true, "conflict": true, "internal": true}

// Permanent reports whether a tool error type says that trying again as
// is cannot help: invalid_args, not_found, forbidden, conflict, internal.
func Permanent(typ string) bool { return permanentTypes[typ] }

// transientPhrases are what a message says when its failure is temporary,
// and the transient type each one means.
var transientPhrases = []struct{ phrase, typ string }{
	{"too many requests", "rate_limited"}, {"rate limit", "rate_limited"}, {"rate-limit", "rate_limited"},
	{"ratelimit", "rate_limited"}, {"throttl", "rate_limited"}, {"quota exceeded", "rate_limited"},
	{"timed out", "timeout"}, {"timeout", "timeout"}, {"deadline exceeded", "timeout"},
	{"temporarily", "unavailable"}, {"temporary failure", "unavailable"}, {"overloaded", "unavailable"},
	{"over capacity", "unavailable"}, {"service unavailable", "unavailable"}, {"bad gateway", "unavailable"},
	{"try again later", "unavailable"}, {"try again in", "unavailable"}, {"retry later", "unavailable"},
	{"retry in ", "unavailable"}, {"retry after", "unavailable"}, {"connection reset", "unavailable"},
	{"connection refused", "unavailable"}, {"econnreset", "unavailable"}, {"econnrefused", "unavailable"},
	{"server is busy", "unavailable"}, {"please retry", "unavailable"},
}

// Classify returns the transient type that a failure's message names
// ("rate_limited", "timeout" or "unavailable"), or "": an HTTP status 408,
// 425, 429, 502, 503 or 504 at its start or after "HTTP", "status" or
// "code", or a phrase such as "timed out", "temporarily", "overloaded",
// "too many requests", "try again later". It reads the first 512 bytes.
func Classify(msg string) string {
	if len(msg) > 512 {
		msg = msg[:512]
	}
	low := strings.ToLower(msg)
	for _, p := range transientPhrases {
		if strings.Contains(low, p.phrase) {
			return p.typ
		}
	}
	for i := 0; i+3 <= len(low); i++ {
		if !isStatusAt(low, i) {
			continue
		}
		before := strings.TrimRight(low[:i], " :=#([")
		if before != "" && !strings.HasSuffix(before, "http") && !strings.HasSuffix(before, "status") &&
			!strings.HasSuffix(before, "code") && !strings.HasSuffix(before, "error") && !strings.HasSuffix(before, "http/1.1") && !strings.HasSuffix(before, "http/2") {
			continue
		}
		switch low[i : i+3] {
		case "429":
			return "rate_limited"
		case "408", "504":
			return "timeout"
		}
		return "unavailable"
	}
	return ""
}

// isStatusAt reports whether s holds, at i, a transient HTTP status as a
// number of its own.
func isStatusAt(s string, i int) bool {
	switch s[i : i+3] {
	case "408", "425", "429", "502", "503", "504":
	default:
		return false
	}
	digit := func(j int) bool { return j >= 0 && j < len(s) && s[j] >= '0' && s[j] <= '9' }
	return !digit(i-1) && !digit(i+3)
}
