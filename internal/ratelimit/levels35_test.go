package ratelimit

import (
	"testing"
	"testing/synctest"
	"time"
)

// levelRun drives l for a minute of fake time: bulk work (priority 0) and
// a principal's level-1 work each ask every 100ms (retrying as refused
// clients do), and a level-2 request asks every 2s; it returns how many
// calls of each level got through, and how many level-2 ones were asked.
func levelRun(t *testing.T, l *Limiter) (served [3]int, asked2 int) {
	synctest.Test(t, func(t *testing.T) {
		start := time.Now()
		for tick := 0; time.Since(start) < time.Minute; tick++ {
			for _, p := range []int{0, 1} {
				if wait, _ := l.Allow("p", p); wait == 0 {
					served[p]++
				}
			}
			if tick%20 == 0 {
				asked2++
				if wait, _ := l.Allow("p", 2); wait == 0 {
					served[2]++
				}
			}
			time.Sleep(100 * time.Millisecond)
		}
	})
	return served, asked2
}

// TestReservedLevels (R8): with priorities of several levels above 0
// (Levels), the reserve serves them in order: a level-1 principal that
// asks all the time cannot take the tokens a level-2 request needs, as it
// could when every level above 0 took the whole reserve (then the level-2
// request got through on a few of its tries only, whichever asked first
// after a token came back). Measured on one bucket of 10 tokens, 4
// reserved, one token a second, for a minute: bulk work, a level-1 flood,
// a level-2 request every 2 seconds.
func TestReservedLevels(t *testing.T) {
	flat, asked := levelRun(t, New(Limits{PerSecond: 1, Burst: 10, Reserved: 0.4}))
	t.Logf("one level (the whole reserve for every priority above 0): served %v of levels 0, 1, 2; level 2 asked %d times", flat, asked)
	ordered, asked := levelRun(t, New(Limits{PerSecond: 1, Burst: 10, Reserved: 0.4, Levels: 2}))
	t.Logf("two levels in order: served %v of levels 0, 1, 2; level 2 asked %d times", ordered, asked)
	if ordered[2] != asked {
		t.Errorf("levels in order: level 2 got %d of %d calls through, want all (a token a second, one call every two)", ordered[2], asked)
	}
	if flat[2] >= asked {
		t.Errorf("one level: level 2 got all its %d calls through; the flood of level 1 should have taken its tokens", asked)
	}
	if ordered[1] == 0 || ordered[0] == 0 {
		t.Errorf("levels in order starved level 0 or 1: %v", ordered)
	}
}
