package loops

import (
	"fmt"
	"strings"
	"testing"
)

// thPlay plays one agent's calls in order, each checked then done with
// its answer, and returns the index of the first refused, or -1.
func thPlay(t *testing.T, calls []asCall, access map[string]string) (int, *Verdict) {
	t.Helper()
	d := New(nil)
	for i, c := range calls {
		a := access[c.tool]
		if a == "" {
			a = "read"
		}
		s := &Step{Tool: c.tool, Args: []byte(c.args), Access: a}
		if v := d.Check(s); v != nil {
			return i, v
		}
		o := Outcome{Result: []byte(c.res)}
		if c.err != "" {
			o.Error, o.ErrorType = true, c.err
		}
		d.Done(s, o)
	}
	return -1, nil
}

// A command that exits non-zero with its error in its output failed: the
// same rejection under respelled commands is one complaint, refused at
// the fourth; commands that exit non-zero saying nothing of an error (grep
// finding nothing, diff finding a difference) did what they were asked.
func TestCommandExitFailure(t *testing.T) {
	cmd := func(c string, res obj) asCall { return asOK("run", obj{"command": c}, res) }
	w := map[string]string{"run": "write"}
	rej := obj{"stdout": "", "stderr": " ! [rejected] main -> main (fetch first)\nerror: failed to push some refs to 'git.example:shop/infra.git'", "exitCode": 1}
	at, v := thPlay(t, []asCall{cmd("git push", rej), cmd("git push origin main", rej), cmd("git push -u origin main", rej), cmd("git push origin HEAD:main", rej)}, w)
	if at != 3 || v.Detector != "same_error" {
		t.Errorf("push rejected under respelled commands: refused at %d (%v), want 3 by same_error", at, v)
	}
	rej["exitCode"] = 0
	if at, v := thPlay(t, []asCall{cmd("git push", rej), cmd("git push origin main", rej), cmd("git push -u origin main", rej), cmd("git push origin HEAD:main", rej)}, w); at >= 0 {
		t.Errorf("exit 0: refused at %d (%v)", at, v)
	}
	for name, res := range map[string]obj{
		"grep finds nothing":   {"stdout": "", "stderr": "", "exit_code": 1},
		"diff finds a change":  {"stdout": "3c3\n< a\n---\n> b", "stderr": "", "returncode": 1},
		"test -f says missing": {"output": "", "exitStatus": 1},
	} {
		var calls []asCall
		for _, f := range []string{"a", "b", "c", "d", "e"} {
			calls = append(calls, cmd("probe "+f, res))
		}
		if at, v := thPlay(t, calls, w); at >= 0 {
			t.Errorf("%s: refused at %d (%v)", name, at, v)
		}
	}
	for res, want := range map[string]bool{
		`{"stdout":"","stderr":"fatal: not a git repository","exit_code":128}`: true,
		`{"output":"1 failed, 3 passed","exitCode":1}`:                         true,
		`{"stdout":"ok","exit_code":0}`:                                        false,
		`{"stdout":"x","exit_code":"1"}`:                                       false,
		`{"exit_code":2}`:                                                      false,
		`["stderr", "exit_code", 1]`:                                           false,
	} {
		if got := exitFailedAnswer([]byte(res)); got != want {
			t.Errorf("exitFailedAnswer(%s) = %v, want %v", res, got, want)
		}
	}
}

// Edits to one file that undo each other, each followed by the same test
// failing through a shell tool (a write that failed, so it wrote nothing),
// refuse the fourth edit; a failure that changes after each edit does not.
func TestEditsUndoSameShellFailure(t *testing.T) {
	w := map[string]string{"edit_file": "write", "run": "write"}
	edit := func(from, to string) asCall {
		return asOK("edit_file", obj{"path": "/app/tax.py", "edits": arr{obj{"oldText": from, "newText": to}}}, "```diff\n-"+from+"\n+"+to+"\n```")
	}
	fail := func(msg string) asCall {
		return asOK("run", obj{"command": "pytest -x -q"}, obj{"stdout": "FAILED tests/test_tax.py::" + msg + "\n1 failed", "stderr": "", "exit_code": 1})
	}
	var calls []asCall
	for i := 0; i < 4; i++ {
		a, b := "round(x, 2)", "round(x + 0, 2)"
		if i%2 == 1 {
			a, b = b, a
		}
		calls = append(calls, edit(a, b), fail("test_vat - assert 10.00 == 10.01"))
	}
	at, v := thPlay(t, calls, w)
	if at != 6 || v.Detector != "same_error" || !strings.Contains(v.Message, "edit_file") {
		t.Errorf("edits undone over the same failure: refused at %d (%v), want 6", at, v)
	}
	calls = calls[:0]
	for i, m := range []string{"test_vat - assert 10.00 == 10.01", "test_vat - TypeError: float", "test_exempt - assert 2.30 == 0", "test_total - KeyError: 'eur'"} {
		calls = append(calls, edit("v"+strings.Repeat("1", i), "v"+strings.Repeat("1", i+1)), fail(m))
	}
	if at, v := thPlay(t, calls, w); at >= 0 {
		t.Errorf("a failure that changes: refused at %d (%v)", at, v)
	}
}

func FuzzExitFailedAnswer(f *testing.F) {
	for _, s := range []string{`{"stdout":"","stderr":"error: x","exit_code":1}`, `{"output":"FAIL","exitCode":2}`, `{"stdout":"","exit_code":0}`, `{"rc":1,"stderr":"é"}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		if exitFailedAnswer(b) && !strings.Contains(string(b), "{") {
			t.Fatalf("failed without an object: %q", b)
		}
	})
}

// One thing the calls keep naming, refused the same way (a state that
// refuses the call) whatever other value is tried for it, is one
// complaint: the fourth try is refused. A batch names another thing each
// time, and candidates tried one by one (coupon codes for one cart) are
// each a thing of their own.
func TestOneThingOtherValues(t *testing.T) {
	tr := func(id string) asCall {
		return asFail("transition", obj{"issue_key": "OPS-77", "transition_id": id}, "tool_error", "Error transitioning issue OPS-77: Transition '"+id+"' is not valid for issue OPS-77 in status 'Blocked'.")
	}
	at, v := thPlay(t, []asCall{tr("21"), tr("Close"), tr("close it"), tr("Resolve")}, map[string]string{"transition": "write"})
	if at != 3 || v.Detector != "same_error" {
		t.Errorf("one issue, other transitions: refused at %d (%v), want 3", at, v)
	}
	var batch, coupons []asCall
	for _, o := range []string{"O-4411", "O-4412", "O-4413", "O-4414", "O-4415"} {
		batch = append(batch, asFail("cancel_order", obj{"order_id": o, "reason": "customer request"}, "tool_error", "Order "+o+" cannot be cancelled in status 'shipped'."))
	}
	for _, c := range []string{"SAVE10", "XMAS25", "WELCOME5", "VIP2026", "FREESHIP1"} {
		coupons = append(coupons, asFail("apply_coupon", obj{"cart_id": "cart_8812", "code": c}, "tool_error", "Coupon '"+c+"' is not valid for cart cart_8812 in its current state."))
	}
	for name, calls := range map[string][]asCall{"a batch": batch, "coupons for one cart": coupons} {
		if at, v := thPlay(t, calls, map[string]string{"cancel_order": "write", "apply_coupon": "write"}); at >= 0 {
			t.Errorf("%s: refused at %d (%v)", name, at, v)
		}
	}
}

// Writes that name no id, their words respelled ("the kitchen light",
// "Kitchen lights"), each answered word for word with what they acted on
// by its id, are writes to one thing: the same read after each, answered
// alike, is refused after the fourth. Lights turned on one by one answer
// other ids; a cart's products named by id are other targets whatever
// their answers.
func TestWriteAnsweredSameThing(t *testing.T) {
	acc := map[string]string{"turn_on": "write", "add_to_cart": "write"}
	done := func(id string) obj {
		return obj{"response_type": "action_done", "data": obj{"success": arr{obj{"name": id, "type": "entity", "id": id}}, "failed": arr{}}}
	}
	state := asOK("get_states", obj{}, "kitchen light: unavailable\nhall light: off\nporch light: off")
	var calls []asCall
	for _, n := range []string{"Kitchen light", "the kitchen light", "kitchen lights", "Kitchen ceiling light", "light in the kitchen"} {
		calls = append(calls, asOK("turn_on", obj{"name": n}, done("light.kitchen")), state)
	}
	if at, v := thPlay(t, calls, acc); at != 7 || v.Detector != "repeat" {
		t.Errorf("one light under other words: refused at %d (%v), want 7", at, v)
	}
	calls = calls[:0]
	for _, n := range []string{"kitchen", "hall", "porch", "garage", "attic"} {
		calls = append(calls, asOK("turn_on", obj{"name": n + " light"}, done("light."+n)), state)
	}
	if at, v := thPlay(t, calls, acc); at >= 0 {
		t.Errorf("lights one by one: refused at %d (%v)", at, v)
	}
	calls = calls[:0]
	for _, p := range []string{"p-101", "p-102", "p-103", "p-104", "p-105"} {
		calls = append(calls, asOK("add_to_cart", obj{"product_id": p, "qty": 1}, obj{"cart_id": "cart_77", "status": "added"}), asOK("shipping_estimate", obj{"zip": "1000-001"}, obj{"carrier": "CTT", "days": 2, "price": "4.90"}))
	}
	if at, v := thPlay(t, calls, acc); at >= 0 {
		t.Errorf("products added by id: refused at %d (%v)", at, v)
	}
}

// An HTTP response of 400 or more handed back as a tool's answer failed,
// classed by its status: a 401 under respelled headers is refused at the
// fourth; 404s for other addresses are candidates, and 503s are worth a
// retry until one succeeds.
func TestHTTPStatusAnswer(t *testing.T) {
	get := func(url string, h obj, res obj) asCall {
		return asOK("http_request", obj{"method": "GET", "url": url, "headers": h}, res)
	}
	u := "https://api.example/v1/items"
	denied := func(i int) obj {
		return obj{"status": 401, "headers": obj{"x-request-id": fmt.Sprintf("req_%04x", 0x1a2b+i)}, "body": `{"error":"invalid_token"}`}
	}
	var calls []asCall
	for i, h := range []obj{{"Authorization": "Bearer T"}, {"authorization": "Bearer T"}, {"Authorization": "Bearer T", "Accept": "*/*"}, {"X-Api-Key": "T"}} {
		calls = append(calls, get(u, h, denied(i)))
	}
	if at, v := thPlay(t, calls, nil); at != 3 || v.Detector != "same_error" {
		t.Errorf("401 under respelled headers: refused at %d (%v), want 3", at, v)
	}
	calls = calls[:0]
	for _, p := range []string{"/v1/item", "/v1/items/", "/api/items", "/v2/items", "/items"} {
		calls = append(calls, get("https://api.example"+p, obj{}, obj{"status": 404, "headers": obj{}, "body": "Not Found"}))
	}
	if at, v := thPlay(t, calls, nil); at >= 0 {
		t.Errorf("candidate addresses: refused at %d (%v)", at, v)
	}
	calls = calls[:0]
	for i := 0; i < 3; i++ {
		calls = append(calls, get(u, obj{}, obj{"status": 503, "headers": obj{"retry-after": "2"}, "body": "busy"}))
	}
	calls = append(calls, get(u, obj{}, obj{"status": 200, "headers": obj{}, "body": `[{"id":1}]`}))
	if at, v := thPlay(t, calls, nil); at >= 0 {
		t.Errorf("503s then 200: refused at %d (%v)", at, v)
	}
	for res, want := range map[string]string{
		`{"status":409,"body":"version mismatch"}`:     "conflict",
		`{"statusCode":422,"headers":{},"body":"x"}`:   "invalid_args",
		`{"status_code":500,"body":"boom"}`:            "unavailable",
		`{"status":418,"body":"teapot"}`:               untypedStreak,
		`{"status":200,"body":"ok"}`:                   "",
		`{"status":412,"error":"Precondition Failed"}`: "",
	} {
		if got := httpFailedAnswer([]byte(res)); got != want {
			t.Errorf("httpFailedAnswer(%s) = %q, want %q", res, got, want)
		}
	}
}
