package ui

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"testing"

	"github.com/agentreach/reach"
)

// BenchmarkRequestsList2000 serves the requests list of a runtime that
// keeps 2,000 ended requests (a call each): its first page, its last
// (page 40), a state filter and a search that matches none. The list is
// paged (50 rows); what a page costs is reading and counting every
// request the viewer may see.
func BenchmarkRequestsList2000(b *testing.B) {
	rt := reach.New(&reach.Options{MaxRequests: 2000})
	rt.MustRegister(reach.Tool{Name: "search", Access: reach.Read, Reentrancy: reach.Reentrant, Func: func(context.Context, json.RawMessage) (json.RawMessage, error) {
		return json.RawMessage(`{"hits":3}`), nil
	}})
	for i := range 2000 {
		ctx, req, err := rt.Begin(context.Background(), &reach.RequestOptions{ID: fmt.Sprintf("r%04d", i), Principal: "alice"})
		if err != nil {
			b.Fatal(err)
		}
		rt.Call(ctx, &reach.Call{ID: "c1", Tool: "search", Arguments: json.RawMessage(fmt.Sprintf(`{"q":"%d"}`, i))})
		req.End()
	}
	u := New(Options{Runtime: rt})
	for _, path := range []string{"/ui/", "/ui/?page=40", "/ui/?state=done", "/ui/?q=nothing"} {
		b.Run(path, func(b *testing.B) {
			for b.Loop() {
				w := httptest.NewRecorder()
				u.ServeHTTP(w, httptest.NewRequest("GET", path, nil))
				if w.Code != 200 {
					b.Fatalf("GET %s: %d", path, w.Code)
				}
			}
		})
	}
}
