package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agentreach/reach/internal/audit"
	"github.com/agentreach/reach/internal/store/sqlite"
)

// heldStream is an OpenAI-style model endpoint whose streamed answer sends
// its first chunk and then waits for the test (or for its client to go).
type heldStream struct {
	url     string
	started chan struct{}
	release chan struct{}
}

func newHeldStream(t *testing.T) *heldStream {
	m := &heldStream{started: make(chan struct{}, 4), release: make(chan struct{})}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprint(w, `data: {"id":"c1","object":"chat.completion.chunk","model":"m","choices":[{"index":0,"delta":{"role":"assistant","content":"working"},"finish_reason":null}]}`+"\n\n")
		w.(http.Flusher).Flush()
		m.started <- struct{}{}
		select {
		case <-m.release:
		case <-r.Context().Done():
			return
		}
		fmt.Fprint(w, `data: {"id":"c1","object":"chat.completion.chunk","model":"m","choices":[{"index":0,"delta":{},"finish_reason":"stop"}],"usage":{"prompt_tokens":5,"completion_tokens":1,"total_tokens":6}}`+"\n\ndata: [DONE]\n\n")
	}))
	t.Cleanup(func() {
		select {
		case <-m.release:
		default:
			close(m.release)
		}
		srv.Close()
	})
	m.url = srv.URL
	return m
}

// TestDrain32StreamingTurnAtStop stops a real `reach serve` (SIGTERM) while
// a streamed model turn of a named request is held by its endpoint past
// the shutdown grace, then restarts it over the same data folder. The stop
// ends the request, which cuts the turn, and waits for the turn's end
// before it closes the store: the turn's frame is stored ended (not
// completed: it was cut) by the stopping life, its audit event written,
// the request not left running, and the audit chain verifies, before and
// after a restart. Before, the drain waited for tool calls only: the
// turn's end raced the store's close, and was lost.
func TestDrain32StreamingTurnAtStop(t *testing.T) {
	if testing.Short() {
		t.Skip("waits out reach serve's shutdown grace: skipped in -short mode")
	}
	m := newHeldStream(t)
	cfg := writeConfig(t, fmt.Sprintf("model: {base_url: '%s'}\n", m.url))
	data, addr := t.TempDir(), freeAddr(t)
	base := "http://" + addr
	cmd := startReach(t, cfg, addr, data)

	got := make(chan string, 1)
	go func() {
		req, _ := http.NewRequest("POST", base+"/v1/chat/completions",
			strings.NewReader(`{"model":"m","stream":true,"messages":[{"role":"user","content":"go"}]}`))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Reach-Request", "r-turn")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			got <- err.Error()
			return
		}
		defer resp.Body.Close()
		var b strings.Builder
		sc := bufio.NewScanner(resp.Body)
		for sc.Scan() {
			b.WriteString(sc.Text() + "\n")
		}
		got <- b.String()
	}()
	select {
	case <-m.started:
	case <-time.After(time.Minute):
		t.Fatal("the streamed turn did not reach its endpoint")
	}
	if err := stopServe(t, cmd, syscall.SIGTERM); err != nil {
		t.Fatalf("reach serve stopped with %v", err)
	}
	<-got // the connection closed with the gateway

	check := func(when string) {
		t.Helper()
		ctx := context.Background()
		st, err := sqlite.Open(ctx, data, &sqlite.Options{NoCreate: true})
		if err != nil {
			t.Fatal(err)
		}
		defer st.Close()
		recs, err := st.RequestAudit(ctx, "r-turn")
		if err != nil {
			t.Fatal(err)
		}
		var turns []string
		for _, r := range recs {
			var e struct{ Kind, Decision string }
			json.Unmarshal(r.Data, &e)
			if e.Kind == "model" {
				turns = append(turns, e.Decision)
			}
		}
		if len(turns) != 1 || turns[0] == "" || turns[0] == "completed" || turns[0] == "executing" {
			t.Errorf("%s: the audit log of r-turn holds model turns %q; want the held turn once, ended cut (not completed)", when, turns)
		}
		frames, err := st.RequestFrames(ctx, "r-turn")
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range frames {
			if f.State == "executing" {
				t.Errorf("%s: frame %s (%s %s) of r-turn is stored executing", when, f.Frame, f.Kind, f.Name)
			}
		}
		if r, err := st.GetRequest(ctx, "r-turn"); err != nil || r.State == "running" {
			t.Errorf("%s: the stored request r-turn: %+v (%v); want it not running", when, r, err)
		}
		if rep, err := audit.Verify(ctx, st); err != nil || rep.Events == 0 {
			t.Errorf("%s: audit.Verify: %+v, %v", when, rep, err)
		}
	}
	check("after the stop")
	cmd = startReach(t, cfg, addr, data)
	stopServe(t, cmd, os.Interrupt)
	check("after a restart")
}
