package records

import (
	"errors"
	"fmt"
	"testing"
)

type kreq struct {
	id    string
	ended bool
}

func newKept(max int) *Kept[*kreq] {
	return NewKept(max, func(r *kreq) string { return r.id }, func(r *kreq) bool { return r.ended })
}

func ids(rs []*kreq) string {
	s := ""
	for _, r := range rs {
		s += r.id + " "
	}
	return s
}

// TestKeptForgetsTheOldestEnded: past twice the maximum, the oldest ended
// requests are forgotten until the maximum is kept, and a running one is
// never forgotten.
func TestKeptForgetsTheOldestEnded(t *testing.T) {
	k := newKept(2)
	ok := func(*kreq, bool) error { return nil }
	running := &kreq{id: "r0"}
	k.Add(running, ok)
	for i := 1; i <= 4; i++ {
		k.Add(&kreq{id: fmt.Sprint("r", i), ended: true}, ok)
	}
	if got := ids(k.List()); got != "r4 r0 " {
		t.Fatalf("List = %q, want the newest ended one and the running one, newest first", got)
	}
	if _, ok := k.Get("r3"); ok {
		t.Fatal("r3, an ended one beyond the maximum, is still kept")
	}
}

// TestKeptChecksAndReplaces: check sees the request of the id and may
// refuse; a new request of an ended id replaces it; AddNew keeps the one
// there; Remove forgets only that request.
func TestKeptChecksAndReplaces(t *testing.T) {
	k := newKept(10)
	busy := errors.New("running")
	check := func(old *kreq, ok bool) error {
		if ok && !old.ended {
			return busy
		}
		return nil
	}
	a := &kreq{id: "a"}
	if err := k.Add(a, check); err != nil {
		t.Fatal(err)
	}
	if err := k.Add(&kreq{id: "a"}, check); err != busy {
		t.Fatalf("a second a while the first runs: %v", err)
	}
	a.ended = true
	b := &kreq{id: "a"}
	if err := k.Add(b, check); err != nil {
		t.Fatal(err)
	}
	if got, _ := k.Get("a"); got != b || k.AddNew(&kreq{id: "a"}) != b {
		t.Fatal("the new a does not replace the ended one, or AddNew replaced it")
	}
	k.Remove(a) // not the one kept under its id
	if got, ok := k.Get("a"); !ok || got != b || ids(k.List()) != "a " {
		t.Fatalf("Remove of the old a: Get = %v, %v; List = %q", got, ok, ids(k.List()))
	}
	k.Remove(b)
	if _, ok := k.Get("a"); ok || len(k.List()) != 0 {
		t.Fatal("Remove left b")
	}
}

// TestKeptCrowdOfRunningScannedAsItDoubles: requests that keep running
// (model turns no call linked, each a request of its own until its idle
// gap) are never forgotten, and are looked at again only as their number
// doubles, not on every Add: 10,000 of them past a maximum of 10 asked
// whether a request ended some 5 million times, and each Add took longer
// than the one before (the model route slowed from 240 to 460 µs a turn
// over 10,000 turns). Those that end are forgotten still.
func TestKeptCrowdOfRunningScannedAsItDoubles(t *testing.T) {
	asked := 0
	k := NewKept(10, func(r *kreq) string { return r.id }, func(r *kreq) bool { asked++; return r.ended })
	var all []*kreq
	for i := range 10000 {
		r := &kreq{id: fmt.Sprint("r", i)}
		all = append(all, r)
		if err := k.Add(r, func(*kreq, bool) error { return nil }); err != nil {
			t.Fatal(err)
		}
	}
	if asked > 4*10000 {
		t.Errorf("10,000 running requests were asked %d times whether they ended, want at most 40,000", asked)
	}
	if n := len(k.List()); n != 10000 {
		t.Errorf("%d requests kept, want all 10,000 (running)", n)
	}
	for _, r := range all {
		r.ended = true
	}
	for i := range 30000 {
		k.Add(&kreq{id: fmt.Sprint("s", i), ended: true}, func(*kreq, bool) error { return nil })
	}
	if n := len(k.List()); n > 2*10000 {
		t.Errorf("%d requests kept once all had ended, want them forgotten down to the maximum as more come", n)
	}
}
