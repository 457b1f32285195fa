package approval

import (
	"bytes"
	"encoding/json"
	"reflect"
	"testing"

	"github.com/agentreach/reach/internal/store"
)

// TestReview38bArgumentsDoNotMarkAnApprovalUnaudited: the stores find an
// approval whose action is not audited yet by the text of its data,
// `"unaudited":true` (store.UnauditedMark), and the retention sweep keeps
// such an approval however old. The data holds the call's arguments as
// the agent wrote them, compacted: a call with {"unaudited": true} among
// its arguments was marked so, and its approval was never swept, kept
// past the retention the operator set. An approval's data holds the mark
// only when its action is not audited; its arguments mean what they
// meant.
func TestReview38bArgumentsDoNotMarkAnApprovalUnaudited(t *testing.T) {
	args := `{"unaudited": true, "nested": {"unaudited":true}, "x\"unaudited": true, "note": "\"unaudited\":true"}`
	rec := &record{Approval: Approval{ID: "ap-1", Tool: "refund", Status: Denied, Arguments: json.RawMessage(args)}, key: "k-1"}
	q := &Queue{}
	mark := []byte(store.UnauditedMark)
	for _, unaudited := range []bool{false, true} {
		ar, err := q.stored(rec, unaudited, "reach")
		if err != nil {
			t.Fatal(err)
		}
		if got := bytes.Count(ar.Data, mark); got != map[bool]int{false: 0, true: 1}[unaudited] {
			t.Errorf("unaudited %v: the data holds the mark %d times: %s", unaudited, got, ar.Data)
		}
		var sa storedApproval
		if err := json.Unmarshal(ar.Data, &sa); err != nil {
			t.Fatalf("unaudited %v: the data is no approval: %v: %s", unaudited, err, ar.Data)
		}
		if sa.Unaudited != unaudited || sa.ID != "ap-1" || sa.Key != "k-1" || sa.Instance != "reach" {
			t.Errorf("unaudited %v: read back as %+v", unaudited, sa)
		}
		var want, got any
		json.Unmarshal([]byte(args), &want)
		json.Unmarshal(sa.Arguments, &got)
		if !reflect.DeepEqual(want, got) {
			t.Errorf("unaudited %v: the arguments read back are %s, want %s", unaudited, sa.Arguments, args)
		}
	}
}
