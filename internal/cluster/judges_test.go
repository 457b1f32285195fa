package cluster

import (
	"testing"
	"time"
)

// TestAliveAfterABreak: a view of who is alive read less than a TTL after
// this instance's heartbeats came back (or while they fail) takes no other
// life for dead, whatever it reads; one read a TTL or more after does. A
// claim of another life, made well before the view, that the view does
// not find alive, is the case.
func TestAliveAfterABreak(t *testing.T) {
	now := time.Now()
	c := &Cluster{owner: "a/1", ttl: 10 * time.Second}
	c.view.Store(&liveView{at: now, alive: map[string]bool{"a/1": true}, dead: []string{"b/1"}})
	claimed := now.Add(-time.Minute)
	for _, tc := range []struct {
		name    string
		healthy time.Time // zero: the last heartbeat failed
		alive   bool
	}{
		{"heartbeats failing", time.Time{}, true},
		{"back a moment ago", now.Add(-time.Second), true},
		{"back just under a TTL ago", now.Add(-10*time.Second + time.Millisecond), true},
		{"back a TTL ago", now.Add(-10 * time.Second), false},
		{"healthy for long", now.Add(-time.Hour), false},
	} {
		if tc.healthy.IsZero() {
			c.healthy.Store(0)
		} else {
			c.healthy.Store(tc.healthy.UnixNano())
		}
		if got := c.Alive("b/1", claimed); got != tc.alive {
			t.Errorf("%s: Alive(b/1) = %v, want %v", tc.name, got, tc.alive)
		}
		if got := c.Alive("a/1", claimed); !got {
			t.Errorf("%s: Alive of this life = false", tc.name)
		}
	}
}

// TestAliveAcrossClockSkew: a life the view does not know (it began after
// the view was read) claims a key by its clock, 1.5s behind this
// instance's: its claim looks older than the view, yet it runs. It is not
// taken for dead until the view is a TTL newer than its claim; a life the
// view finds dead (by the store's clock) is, as soon as the view is
// newer than its claim.
func TestAliveAcrossClockSkew(t *testing.T) {
	now := time.Now()
	c := &Cluster{owner: "a/1", ttl: 10 * time.Second}
	c.healthy.Store(now.Add(-time.Hour).UnixNano())
	c.view.Store(&liveView{at: now, alive: map[string]bool{"a/1": true}, dead: []string{"c/1"}})
	behind := now.Add(-1500 * time.Millisecond) // its clock's now, as the view was read
	if !c.Alive("b/1", behind) {
		t.Errorf("a life that began after the view, whose clock is 1.5s behind, is taken for dead")
	}
	if c.Alive("b/1", now.Add(-11*time.Second)) {
		t.Errorf("a life no view has known for more than a TTL since its claim is taken for alive")
	}
	if c.Alive("c/1", behind) {
		t.Errorf("a life the view finds dead is taken for alive")
	}
}
