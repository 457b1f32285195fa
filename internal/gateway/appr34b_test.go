package gateway

import (
	"testing"
	"time"
)

// TestInstancesDecisionElsewhereReachesBoth: two instances on one
// PostgreSQL. A high-risk call asked through a waits for approval, which
// is decided through b. Denied, the call repeated through a and through b
// is refused with the denial, it never runs, and the frame that waited on
// a ends refused there. Approved, the call repeated through b runs once,
// repeated after through a and b it is answered its result, and the frame
// that waited on a ends completed.
func TestInstancesDecisionElsewhereReachesBoth(t *testing.T) {
	for _, tc := range []struct {
		name, action, want string
	}{
		{"denied", "deny", "refused"},
		{"approved", "approve", "completed"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a, b, p := twoInstances(t, "")
			runs := func() int { p.mu.Lock(); defer p.mu.Unlock(); return len(p.metas) }
			rid := "rd34-" + tc.action
			if r := callOn(t, a, rid, "d", "up__delete_all", `{}`); r["status"] != "pending" {
				t.Fatalf("a high-risk call on a: %v", r)
			}
			var waited string
			for _, f := range graphFrames(t, a, rid) {
				if f["status"] == "awaiting_approval" {
					waited, _ = f["id"].(string)
				}
			}
			if waited == "" {
				t.Fatalf("no frame awaits approval on a: %v", graphFrames(t, a, rid))
			}
			_, list := do(t, "GET", b+"/v1/approvals?status=pending", "", nil)
			id, _ := path(list, "approvals", 0, "id").(string)
			if id == "" {
				t.Fatalf("b lists no pending approval: %v", list)
			}
			if st, out := do(t, "POST", b+"/v1/approvals/"+id+"/"+tc.action, `{"reason":"not now"}`, nil); st != 200 {
				t.Fatalf("%s on b: %d %v", tc.action, st, out)
			}
			if tc.action == "deny" {
				// The denial reaches a with no call made there: the
				// store's notice of the change (Refresh) ends the frame.
				status := ""
				for end := time.Now().Add(20 * time.Second); status != "refused" && time.Now().Before(end); time.Sleep(50 * time.Millisecond) {
					for _, f := range graphFrames(t, a, rid) {
						if f["id"] == waited {
							status, _ = f["status"].(string)
						}
					}
				}
				if status != "refused" {
					t.Errorf("denied through b, the frame that waited on a is %q there; want it refused", status)
				}
			}
			for i, base := range []string{b, a, b} {
				r := callOn(t, base, rid, "d", "up__delete_all", `{}`)
				switch code, _ := path(r, "error", "code").(string); {
				case tc.action == "deny" && code != "approval_denied":
					t.Errorf("repeat %d: %v; want it refused approval_denied", i, r)
				case tc.action == "approve" && r["status"] != "success":
					t.Errorf("repeat %d: %v; want the approved call's result", i, r)
				}
			}
			want := 0
			if tc.action == "approve" {
				want = 1
			}
			if n := runs(); n != want {
				t.Errorf("the call ran %d times, want %d", n, want)
			}
			for _, base := range []string{a, b} {
				for _, f := range graphFrames(t, base, rid) {
					if f["id"] == waited && f["status"] != tc.want {
						t.Errorf("the frame that waited on a, seen through %s: %v; want it %s", base, f, tc.want)
					}
				}
			}
		})
	}
}
