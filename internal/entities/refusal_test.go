package entities

import (
	"testing"

	"github.com/agentreach/reach/internal/fault"
)

func TestRefusals(t *testing.T) {
	d := &Deadlock[int, int]{Entity: "order:1", Waiting: "order:2"}
	e := d.Refusal(false, "req-a", "ship")
	if e.Code != "deadlock" || e.Type != fault.TypeState ||
		e.Message != "Writing order 1 would deadlock: request req-a holds it and waits for order 2, which this request holds." {
		t.Errorf("another request's deadlock = %+v", e)
	}
	if e := d.Refusal(false, "", "ship"); e.Message != "Writing order 1 would deadlock: a request of another principal holds it and waits for order 2, which this request holds." {
		t.Errorf("another principal's request's deadlock = %q", e.Message)
	}
	e = d.Refusal(true, "req-a", "ship")
	if e.Message != "Writing order 1 would deadlock: ship, another call of request req-a, holds it and waits for order 2, which this call holds." {
		t.Errorf("one request's deadlock = %q", e.Message)
	}
	e = StaleRead("order:1", 3, 5)
	if e.Code != "stale_read" || e.Guard != "state" || e.Message != "Order 1 changed since you read it (v3 -> v5)." {
		t.Errorf("StaleRead = %+v", e)
	}
	if e := StaleRead("", 1, 2); e.Message != " changed since you read it (v1 -> v2)." {
		t.Errorf("StaleRead of no name = %q", e.Message)
	}
}
