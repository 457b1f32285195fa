package records

import (
	"context"
	"fmt"
	"testing"
)

type seen struct{ log *[]string }

func (s seen) Record(_ context.Context, e *Event) { *s.log = append(*s.log, "event "+e.Name) }

type observer struct{ seen }

func (o observer) RequestBegan(_ context.Context, r string) { *o.log = append(*o.log, "began "+r) }
func (o observer) RequestEnded(_ context.Context, r string) { *o.log = append(*o.log, "ended "+r) }

// TestFan: every recorder gets every event, in order; only the observers
// hear of requests.
func TestFan(t *testing.T) {
	var a, b []string
	f := Fan[string](seen{&a}, observer{seen{&b}})
	f.Record(context.Background(), &Event{Name: "x"})
	o, ok := f.(Observer[string])
	if !ok {
		t.Fatal("a fan is not an Observer")
	}
	o.RequestBegan(context.Background(), "r1")
	o.RequestEnded(context.Background(), "r1")
	if len(a) != 1 || a[0] != "event x" {
		t.Errorf("the plain recorder saw %q", a)
	}
	if want := "[event x began r1 ended r1]"; fmt.Sprint(b) != want {
		t.Errorf("the observer saw %v, want %s", b, want)
	}
}
