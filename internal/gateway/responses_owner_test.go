package gateway

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
)

// TestModelProxyResponsesOwnedAcrossRestart: a gateway with keys keeps the
// owner of each Responses API answer on its store, so that after a restart
// (a new gateway on the same data folder) bob's turn naming alice's
// answer is still refused, the model not asked, and alice's goes on.
func TestModelProxyResponsesOwnedAcrossRestart(t *testing.T) {
	var n, asked atomic.Int64
	model := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		asked.Add(1)
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"id":"resp_%d","object":"response","status":"completed","model":"m","output":[],"usage":{"input_tokens":3,"output_tokens":1}}`, n.Add(1))
	}))
	defer model.Close()
	g, url, _, keys := authGateway(t, "model: {base_url: '"+model.URL+"/v1', name: m, api_key: sk-gateway}\n")
	turn := func(url, who, prev string) (int, string) {
		t.Helper()
		body := `{"model":"m","input":"hi"}`
		if prev != "" {
			body = `{"model":"m","input":"go on","previous_response_id":"` + prev + `"}`
		}
		req, _ := http.NewRequestWithContext(context.Background(), "POST", url+"/v1/responses", strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+keys[who])
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var a struct {
			ID    string
			Error struct{ Code string }
		}
		json.NewDecoder(resp.Body).Decode(&a)
		return resp.StatusCode, a.ID + a.Error.Code
	}
	status, id := turn(url, "alice", "")
	if status != 200 {
		t.Fatalf("alice's first turn: %d %s", status, id)
	}
	g.Close() // the gateway stops; its store is closed
	cfg := g.cfg
	g2 := newTestGateway(t, cfg)
	url2 := serveTest(t, g2).URL
	before := asked.Load()
	if status, got := turn(url2, "bob", id); status != 400 || got != "previous_response_not_found" || asked.Load() != before {
		t.Errorf("after a restart, bob's turn after alice's %s: %d %s, model asked %d times; want 400 previous_response_not_found, not asked",
			id, status, got, asked.Load()-before)
	}
	if status, got := turn(url2, "alice", id); status != 200 {
		t.Errorf("after a restart, alice's turn after her %s: %d %s; want 200", id, status, got)
	}
}
