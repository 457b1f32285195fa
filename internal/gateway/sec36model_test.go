package gateway

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/agentreach/reach/internal/auth"
	"github.com/agentreach/reach/internal/config"
	"github.com/agentreach/reach/internal/link"
)

// TestSec36ModelForeignRequestRefused: a principal's model turn that names
// another principal's request (Reach-Request), or a frame of it
// (Reach-Parent, with the request or alone), is not run in it: it is
// refused or runs apart, the model is not asked in the other's request,
// the other's request counts no turn of it, and the answer names nothing
// of the other's (its request id) beyond what the caller sent.
func TestSec36ModelForeignRequestRefused(t *testing.T) {
	var asked atomic.Int64
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		asked.Add(1)
		json.NewEncoder(w).Encode(map[string]any{"choices": []any{map[string]any{"index": 0, "message": map[string]any{"role": "assistant", "content": "ok"}}},
			"usage": map[string]any{"prompt_tokens": 1, "completion_tokens": 1}})
	}))
	t.Cleanup(up.Close)
	dir := t.TempDir()
	ks, err := auth.OpenKeys(auth.KeysPath(dir))
	if err != nil {
		t.Fatal(err)
	}
	alice, _, _ := ks.Create(auth.KeySpec{Principal: "alice", Tenant: "acme"})
	bob, _, _ := ks.Create(auth.KeySpec{Principal: "bob", Tenant: "globex"})
	cfg, err := config.Parse([]byte("data: "+dir+"\nauth: {keys: true}\nmodel: {base_url: '"+up.URL+"/v1', name: fake}\n"), os.LookupEnv)
	if err != nil {
		t.Fatal(err)
	}
	g := newTestGateway(t, cfg)
	url := serveTest(t, g).URL
	resp, _ := postChat(t, url, `{"messages":[{"role":"user","content":"hi"}]}`, map[string]string{link.HeaderRequest: "alice-private", "Authorization": "Bearer " + alice})
	frame := resp.Header.Get(link.HeaderFrame)
	if resp.StatusCode != http.StatusOK || frame == "" {
		t.Fatalf("alice's turn: %d (frame %q)", resp.StatusCode, frame)
	}
	for _, h := range []map[string]string{
		{link.HeaderRequest: "alice-private"},
		{link.HeaderRequest: "alice-private", link.HeaderParent: frame},
		{link.HeaderParent: frame},
	} {
		h["Authorization"] = "Bearer " + bob
		resp, b := postChat(t, url, `{"messages":[{"role":"user","content":"hi"}]}`, h)
		if resp.StatusCode == http.StatusOK && resp.Header.Get(link.HeaderRequest) == "alice-private" {
			t.Errorf("bob's turn naming %v ran in alice's request: %s", h, b)
		}
		if _, named := h[link.HeaderRequest]; !named && strings.Contains(string(b)+resp.Header.Get(link.HeaderRequest), "alice-private") {
			t.Errorf("bob's turn naming alice's frame alone was told her request's id: %d %s", resp.StatusCode, b)
		}
	}
	r, ok := g.rt.Lookup("alice-private")
	if !ok {
		t.Fatal("alice's request is gone")
	}
	if u := r.Usage(); u.Turns != 1 {
		t.Errorf("alice's request counts %d turns, want 1 (hers)", u.Turns)
	}
}
