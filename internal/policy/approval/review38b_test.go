package approval

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"sync/atomic"
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

// driverStore answers every read of an approval with a driver's error,
// which names the database's host and user, and fails every write.
type driverStore struct{ store.Store }

const driverText = "failed to connect to `host=pg-prod.internal user=reach_svc database=reach`"

func (driverStore) GetApproval(context.Context, string) (*store.ApprovalRecord, error) {
	return nil, errors.New(driverText + ": dial error")
}

func (d driverStore) PutApproval(ctx context.Context, a *store.ApprovalRecord) error {
	var sa storedApproval
	if json.Unmarshal(a.Data, &sa) == nil && (len(sa.Votes) > 0 || sa.Denial != nil) {
		return errors.New(driverText + ": server closed the connection")
	}
	return d.Store.PutApproval(ctx, a)
}

// TestReview38bStoreTextNotToldToTheCaller: the API's answers of an
// approval the store could not read (503 store_unavailable) or a decision
// it did not take (503 not_recorded) quoted the store's error, a driver's
// text with the database's host, user and name, to whoever asked, an
// agent's principal too. As every other answer of a store that did not
// answer, they say what happened and what to do; the store's text is
// logged.
func TestReview38bStoreTextNotToldToTheCaller(t *testing.T) {
	for _, c := range []struct {
		name, code string
		shared     bool
	}{{"unknown, the shared store down", "store_unavailable", true}, {"the decision not taken", "not_recorded", false}} {
		var q *Queue
		id := "apr_0123456789abcdef0123456789abcdef"
		if c.shared {
			q = New(&Options{Store: driverStore{openStore(t, t.TempDir())}, Shared: true, Instance: "b"})
		} else {
			var runs atomic.Int32
			a := newLife(t, driverStore{openStore(t, t.TempDir())}, &runs, nil)
			if id = WaitsFor(refund7(t, a, "r1").Error); id == "" {
				t.Fatal("the call is not pending")
			}
			q = a.q
		}
		srv := httptest.NewServer(q.Handler(&HandlerOptions{Actor: func(*http.Request) Actor { return Actor{Principal: "alice"} }}))
		paths := []string{"/approve", "/deny"}
		if c.shared {
			paths = append(paths, "")
		}
		for _, path := range paths {
			method := "POST"
			if path == "" {
				method = "GET"
			}
			req, _ := http.NewRequest(method, srv.URL+"/v1/approvals/"+id+path, strings.NewReader(`{"reason":"no"}`))
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != http.StatusServiceUnavailable || !strings.Contains(string(body), c.code) {
				t.Errorf("%s: %s %s: %d %s; want 503 %s", c.name, method, path, resp.StatusCode, body, c.code)
			}
			for _, leak := range []string{"pg-prod.internal", "reach_svc", "server closed", "dial error"} {
				if strings.Contains(string(body), leak) {
					t.Errorf("%s: %s %s: the answer tells the store's text %q: %s", c.name, method, path, leak, body)
				}
			}
		}
		srv.Close()
	}
}
