package ui

import (
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/agentreach/reach"
)

// TestGraphCaptionPriority (R8): the UI's drawing of a request's graph
// (inline on its page, and graph.svg) says the request's priority when it
// is not the default; one of priority 0 has no caption.
func TestGraphCaptionPriority(t *testing.T) {
	rt := reach.New(nil)
	for id, p := range map[string]int{"urgent": 1, "plain": 0} {
		if _, _, err := rt.Begin(t.Context(), &reach.RequestOptions{ID: id, Priority: p}); err != nil {
			t.Fatal(err)
		}
	}
	srv := httptest.NewServer(New(Options{Runtime: rt}))
	defer srv.Close()
	for _, path := range []string{"/ui/requests/urgent", "/ui/requests/urgent/graph.svg"} {
		if page := get(t, srv.URL+path); !strings.Contains(page, "request urgent: priority 1</text>") {
			t.Errorf("%s: no caption of the priority:\n%s", path, page)
		}
	}
	for _, path := range []string{"/ui/requests/plain", "/ui/requests/plain/graph.svg"} {
		if page := get(t, srv.URL+path); strings.Contains(page, `class="caption"`) {
			t.Errorf("%s: a caption for priority 0", path)
		}
	}
}
