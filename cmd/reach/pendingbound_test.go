package main

import (
	"fmt"
	"testing"
)

// TestInstancesPendingBound: the bound of one principal's approvals that
// wait for a decision (100) holds across the instances that share a
// PostgreSQL store: 60 high-risk calls asked on a and 60 on b file 100
// approvals, and the 20 past the bound are refused (too_many_approvals),
// filing none. Each instance counted its own before: 120 were filed.
func TestInstancesPendingBound(t *testing.T) {
	if testing.Short() {
		t.Skip("several processes and a PostgreSQL cluster: skipped in -short mode")
	}
	f := newFleet(t)
	pending, refused := 0, 0
	for i := range 2 {
		for j := range 60 {
			r := callHTTP(t, f.base(i), fmt.Sprintf("r-bound-%d-%d", i, j), "c", "up__wipe", fmt.Sprintf(`{"key":"bound-%d-%d"}`, i, j), "")
			switch {
			case r["status"] == "pending":
				pending++
			case errCode(r) == "too_many_approvals":
				refused++
				if i == 0 {
					t.Fatalf("call %d on a refused before b asked any: %v", j, r)
				}
			default:
				t.Fatalf("call %d on instance %d: %v", j, i, r)
			}
		}
	}
	if pending != 100 || refused != 20 {
		t.Errorf("%d approvals filed and %d calls refused; want 100 and 20", pending, refused)
	}
	for i := range 2 {
		list := getJSONTB(t, f.base(i)+"/v1/approvals?status=pending")
		if aps, _ := list["approvals"].([]any); len(aps) != 100 {
			t.Errorf("instance %d lists %d pending approvals, want 100", i, len(aps))
		}
	}
	if n := f.up.count("wipe bound-0-0"); n != 0 {
		t.Errorf("a high-risk call ran %d times without approval", n)
	}
}
