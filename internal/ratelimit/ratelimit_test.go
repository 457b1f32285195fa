package ratelimit

import (
	"testing"
	"testing/synctest"
	"time"
)

func TestNoLimits(t *testing.T) {
	l := New(Limits{})
	for range 1000 {
		if wait, bucket := l.Allow("p", 0); wait != 0 {
			t.Fatalf("Allow without limits = %v %q, want 0", wait, bucket)
		}
	}
}

// TestBuckets: a principal's bucket refuses past its burst and says how
// long until a token is back; another principal has its own; the global
// bucket refuses everyone once empty.
func TestBuckets(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := New(Limits{PerSecond: 4, Burst: 3, PerPrincipal: 1, PerPrincipalBurst: 2})
		for i := range 2 {
			if wait, _ := l.Allow("alice", 0); wait != 0 {
				t.Fatalf("alice's call %d refused", i+1)
			}
		}
		wait, bucket := l.Allow("alice", 0)
		if bucket != "per-principal" || wait != time.Second {
			t.Errorf("alice's third call = %v %q, want 1s per-principal", wait, bucket)
		}
		if wait, _ := l.Allow("bob", 0); wait != 0 {
			t.Fatal("bob's first call refused")
		}
		wait, bucket = l.Allow("carol", 0)
		if bucket != "global" || wait != 250*time.Millisecond {
			t.Errorf("the call past the global burst = %v %q, want 250ms global", wait, bucket)
		}
		time.Sleep(time.Second)
		if wait, _ := l.Allow("alice", 0); wait != 0 {
			t.Errorf("alice refused after a second: %v", wait)
		}
	})
}

// TestReserved: requests of priority 0 leave the reserved part of the
// global burst to those of a higher priority.
func TestReserved(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := New(Limits{PerSecond: 10, Burst: 10, Reserved: 0.3})
		n := 0
		for ; n < 10; n++ {
			if wait, _ := l.Allow("p", 0); wait != 0 {
				break
			}
		}
		if n != 7 {
			t.Errorf("priority 0 took %d tokens, want 7 of 10 (3 reserved)", n)
		}
		if wait, bucket := l.Allow("p", 0); wait == 0 || bucket != "global (capacity reserved for priority requests)" {
			t.Errorf("priority 0 past its share = %v %q", wait, bucket)
		}
		for i := range 3 {
			if wait, _ := l.Allow("p", 1); wait != 0 {
				t.Errorf("priority 1 refused the reserved token %d", i+1)
			}
		}
	})
}

// TestFullTableKeepsThrottled: with every tracked principal throttled, a
// new principal waits instead of evicting one (which would reset its
// bucket); an idle one is forgotten to make room.
func TestFullTableKeepsThrottled(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := New(Limits{PerPrincipal: 1, PerPrincipalBurst: 1, MaxPrincipalsKnown: 2})
		l.Allow("a", 0)
		l.Allow("b", 0)
		if wait, bucket := l.Allow("c", 0); wait == 0 || bucket == "" {
			t.Fatalf("a new principal with a full table of throttled ones got through")
		}
		if wait, _ := l.Allow("a", 0); wait == 0 {
			t.Error("a's bucket was reset")
		}
		time.Sleep(2 * time.Second) // a and b are full again: idle
		if wait, _ := l.Allow("c", 0); wait != 0 {
			t.Errorf("c refused once the others were idle: %v", wait)
		}
	})
}

// TestReservedPerPrincipal: a principal's own bucket keeps its reserved
// share for the principal's requests of a higher priority (its bulk work,
// lowered to 0, is refused first); a bucket too small to keep a whole
// token keeps none.
func TestReservedPerPrincipal(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := New(Limits{PerPrincipal: 1, PerPrincipalBurst: 4, Reserved: 0.5})
		n := 0
		for ; n < 4; n++ {
			if wait, _ := l.Allow("alice", 0); wait != 0 {
				break
			}
		}
		if n != 2 {
			t.Errorf("alice's priority 0 took %d tokens, want 2 of 4 (2 reserved)", n)
		}
		wait, bucket := l.Allow("alice", 0)
		if bucket != "per-principal (capacity reserved for priority requests)" || wait != time.Second {
			t.Errorf("priority 0 past its share = %v %q, want 1s and the reserve named", wait, bucket)
		}
		for i := range 2 {
			if wait, bucket := l.Allow("alice", 1); wait != 0 {
				t.Errorf("alice's priority 1 refused the reserved token %d: %q", i+1, bucket)
			}
		}
		if wait, bucket := l.Allow("alice", 1); wait == 0 || bucket != "per-principal" {
			t.Errorf("priority 1 past the whole bucket = %v %q, want refused per-principal", wait, bucket)
		}
		if wait, _ := l.Allow("bob", 0); wait != 0 {
			t.Error("bob's bucket is his own")
		}

		small := New(Limits{PerPrincipal: 1, PerPrincipalBurst: 1, Reserved: 0.5})
		if wait, bucket := small.Allow("alice", 0); wait != 0 {
			t.Errorf("a one-token bucket kept its token from priority 0: %q", bucket)
		}
	})
}

// TestReservedWholeTokens: the reserve is a whole number of tokens,
// rounded down (a fraction of a token would keep a whole one).
func TestReservedWholeTokens(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := New(Limits{PerSecond: 1, Burst: 5, Reserved: 0.3}) // 1.5 tokens: 1 kept
		n := 0
		for ; n < 5; n++ {
			if wait, _ := l.Allow("p", 0); wait != 0 {
				break
			}
		}
		if n != 4 {
			t.Errorf("priority 0 took %d tokens, want 4 of 5 (1 reserved)", n)
		}
	})
}
