package effects

import (
	"strings"
	"testing"

	"github.com/agentreach/reach/internal/fault"
	"github.com/agentreach/reach/internal/template"
)

func TestCompileFallbacks(t *testing.T) {
	bad := []struct {
		read bool
		fs   []Call
		want string
	}{
		{false, []Call{{Tool: "later"}}, "tool get: fallback is for reads; a write tool's failure goes to the model and the saga"},
		{true, []Call{{Tool: "a"}, {}}, "tool get: fallback 2 needs a tool"},
		{true, []Call{{Tool: "get"}}, "tool get: fallback 1 is the tool itself"},
		{true, []Call{{Tool: "b", Args: "{"}}, "tool get: fallback b: template"},
		{true, []Call{{Tool: "b", Args: `{"x": "{result.x}"}`}}, "tool get: fallback b: {result.x}: a fallback's arguments come from the call's arguments"},
	}
	for _, tt := range bad {
		if _, err := CompileFallbacks("get", tt.read, "write", tt.fs); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("CompileFallbacks(%+v): err = %v, want %q", tt.fs, err, tt.want)
		}
	}
	if fs, err := CompileFallbacks("get", false, "write", nil); fs != nil || err != nil {
		t.Errorf("no fallbacks = %v, %v; want nil", fs, err)
	}
	fs, err := CompileFallbacks("get", true, "read", []Call{{Tool: "mirror"}, {Tool: "cache", Args: `{"key": "{id}"}`}})
	if err != nil {
		t.Fatal(err)
	}
	if len(fs) != 2 || fs[0].Tool != "mirror" || fs[0].Args != nil || fs[1].Tool != "cache" {
		t.Fatalf("fallbacks = %+v; want mirror (its arguments passed on), then cache", fs)
	}
	got, err := fs[1].Args.JSON(template.NewScope([]byte(`{"id": "k1"}`), nil))
	if err != nil || string(got) != `{"key":"k1"}` {
		t.Errorf("cache's arguments = %s, %v; want {\"key\":\"k1\"}", got, err)
	}
}

func TestCompensationNote(t *testing.T) {
	got := CompensationNote([]Compensation{
		{Tool: "unrefund", Undoes: "refund {order:1}", OK: true},
		{Tool: "unship", Undoes: "ship {order:1}", DeadLetter: "dl-7"},
	})
	want := "the request's earlier writes were compensated, newest first: unrefund (undoing refund {order:1}); " +
		"unship (undoing ship {order:1}) FAILED and is queued for an operator as dead letter dl-7"
	if got != want {
		t.Errorf("note = %q\nwant %q", got, want)
	}
}

func TestVerifyErrors(t *testing.T) {
	e := CheckFailed("refund", "get_refund", "it timed out")
	if e.Type != fault.TypeTool || e.Code != "verify_failed" || e.Guard != "verify" ||
		e.Message != "refund reported success, but its check get_refund failed: it timed out" || !strings.HasPrefix(e.Suggestion, "Treat the write as not done") {
		t.Errorf("CheckFailed = %+v", e)
	}
	e = NotConfirmed("refund", "get_refund", "result.state == 'done'", "it evaluated to false", `{"state":"open"}`)
	if e.Code != "verify_failed" || !strings.Contains(e.Message, `does not confirm it (result.state == 'done': it evaluated to false; the check returned {"state":"open"}). This is a silent failure.`) {
		t.Errorf("NotConfirmed = %+v", e)
	}
}

func TestFallbackNote(t *testing.T) {
	tests := []struct {
		e    *fault.Error
		want string
	}{
		{nil, "get failed (it failed); this result comes from its fallback mirror, not from get."},
		{&fault.Error{Type: fault.TypeUnavailable, Retry: "3/3"}, "get failed (it is unavailable: its circuit breaker is open); this result comes from its fallback mirror, not from get."},
		{&fault.Error{Type: fault.TypeTransient, Retry: "3/3"}, "get failed (a transient failure, 3/3 attempts); this result comes from its fallback mirror, not from get."},
		{&fault.Error{Type: fault.TypeTransient}, "get failed (a transient failure); this result comes from its fallback mirror, not from get."},
	}
	for _, tt := range tests {
		if got := FallbackNote("get", "mirror", tt.e); got != tt.want {
			t.Errorf("FallbackNote(%+v) = %q\nwant %q", tt.e, got, tt.want)
		}
	}
}
