package approval

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/agentreach/reach/internal/store"
)

// FuzzDecodeStored: whatever a row of the approvals table holds, reading
// it never panics, and what it accepts is an approval of that row's id
// with a call and a known status; what the queue writes it reads back.
func FuzzDecodeStored(f *testing.F) {
	good, _ := json.Marshal(storedApproval{Approval: Approval{ID: "apr_1", Tool: "t", Status: Pending, Created: time.Unix(1, 0)}, Key: "k"})
	for _, s := range []string{string(good), `{not json`, `{}`, `{"id":"apr_1","key":"k","status":"odd"}`, `{"id":"apr_2","key":"k","status":"pending"}`, `null`, `[]`} {
		f.Add("apr_1", s)
	}
	f.Fuzz(func(t *testing.T, id, data string) {
		sa, err := decodeStored(&store.ApprovalRecord{ID: id, Data: []byte(data)})
		if err != nil {
			return
		}
		if sa.ID != id || sa.Key == "" {
			t.Fatalf("accepted %q for row %q: %+v", data, id, sa)
		}
		switch sa.Status {
		case Pending, Approved, Used, Denied, Expired:
		default:
			t.Fatalf("accepted the status %q", sa.Status)
		}
		again, _ := json.Marshal(sa)
		if _, err := decodeStored(&store.ApprovalRecord{ID: id, Data: again}); err != nil {
			t.Fatalf("what it read does not read back: %v", err)
		}
	})
}
