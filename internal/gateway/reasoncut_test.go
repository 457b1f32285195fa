package gateway

import (
	"strings"
	"testing"
	"unicode/utf8"
)

// TestAPICancelReasonCutAtRune: a stop's reason longer than 500 bytes is
// kept to its first 500 at a rune boundary. Before, a character across
// byte 500 was cut in two, and the kept reason ended in half of it (the
// answer showed U+FFFD in its place).
func TestAPICancelReasonCutAtRune(t *testing.T) {
	g, srv, done := waitingCall(t)
	reason := strings.Repeat("a", 499) + "é and more"
	status, out := do(t, "POST", srv.URL+"/v1/requests/long/cancel", `{"mode":"cancel","reason":"`+reason+`"}`, nil)
	<-done
	if status != 200 {
		t.Fatalf("cancel answered %d %v", status, out)
	}
	req, ok := g.rt.Lookup("long")
	if !ok || req.StopCause() == nil {
		t.Fatal("the request or its stop is not kept")
	}
	if kept := req.StopCause().Reason; !utf8.ValidString(kept) || len(kept) > 500 {
		t.Errorf("the kept reason is %d bytes, valid UTF-8 %v: want at most 500, valid", len(kept), utf8.ValidString(kept))
	}
	got, _ := path(out, "stop", "reason").(string)
	if want := strings.Repeat("a", 499); got != want {
		t.Errorf("the kept reason is %d bytes ending %q, want the first 499 (the é across byte 500 left out whole)", len(got), got[max(0, len(got)-4):])
	}
}
