package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"
)

// shutResult is one result of POST /v1/calls, with its error's type.
type shutResult struct {
	Status string `json:"status"`
	Error  *struct {
		Code       string `json:"code"`
		Type       string `json:"type"`
		Message    string `json:"message"`
		Suggestion string `json:"suggestion"`
	} `json:"error"`
}

// postAsync posts envelope to base's /v1/calls and sends its one result
// (or nil, the connection lost) on the channel it returns.
func postAsync(base, envelope string) <-chan *shutResult {
	ch := make(chan *shutResult, 1)
	go func() {
		c := &http.Client{Timeout: 2 * time.Minute}
		resp, err := c.Post(base+"/v1/calls", "application/json", strings.NewReader(envelope))
		if err != nil {
			ch <- nil
			return
		}
		defer resp.Body.Close()
		data, _ := io.ReadAll(resp.Body)
		var out struct {
			Results []*shutResult `json:"results"`
		}
		if json.Unmarshal(data, &out) != nil || len(out.Results) != 1 {
			ch <- nil
			return
		}
		ch <- out.Results[0]
	}()
	return ch
}

// TestShut34StopSaysTheGatewayStops stops a real `reach serve` (Ctrl-C)
// while a write of a request runs on its upstream, its tool honouring its
// cancellation. The call's answer says that the gateway is shutting down,
// that the write may have taken effect, and what to do: call again in a
// moment (code cut_by_shutdown, type transient, which a client retries),
// repeating a write under its key. After a restart, the retry of that key
// is answered interrupted, not run again, and says no more that someone
// stopped the request. Before, the connection was closed before the call
// was cut (no answer at all), and what the call recorded said the request
// "was stopped (cancel) by runtime: request ended" ("Do not start new
// work"): a user's stop, not the gateway's.
func TestShut34StopSaysTheGatewayStops(t *testing.T) {
	if testing.Short() {
		t.Skip("waits out reach serve's shutdown grace: skipped in -short mode")
	}
	h, upURL := newHeldUpstream(t, false)
	cfg := writeConfig(t, fmt.Sprintf("upstreams:\n  - {name: up, url: '%s'}\n", upURL))
	data, addr := t.TempDir(), freeAddr(t)
	cmd := startReach(t, cfg, addr, data)
	got := postAsync("http://"+addr, `{"request_id":"r-shut","tool_calls":[{"call_id":"s1","tool":"up__hold","idempotency_key":"k-shut","arguments":{}}]}`)
	select {
	case <-h.started:
	case <-time.After(time.Minute):
		t.Fatal("the held call did not reach its upstream")
	}
	if err := stopServe(t, cmd, os.Interrupt); err != nil {
		t.Fatalf("reach serve stopped with %v", err)
	}
	res := <-got
	if res == nil || res.Error == nil {
		t.Fatalf("the held call's answer as the gateway stopped: %+v; want an error", res)
	}
	e := res.Error
	msg := e.Message + " " + e.Suggestion
	if e.Code != "cut_by_shutdown" || e.Type != "transient" {
		t.Errorf("the held call's error: code %q type %q; want cut_by_shutdown, transient (the client may call again)", e.Code, e.Type)
	}
	for _, want := range []string{"shutting down", "may have taken effect", "again in a moment", "idempotency key"} {
		if !strings.Contains(msg, want) {
			t.Errorf("the held call's error %q lacks %q", msg, want)
		}
	}
	for _, bad := range []string{"request ended", "Do not start new work", "by runtime"} {
		if strings.Contains(msg, bad) {
			t.Errorf("the held call's error %q says %q: a user's stop, not the gateway's", msg, bad)
		}
	}

	cmd = startReach(t, cfg, addr, data)
	retry := call(t, "http://"+addr, `{"tool_calls":[{"call_id":"s2","tool":"up__hold","idempotency_key":"k-shut","arguments":{}}]}`)
	stopServe(t, cmd, os.Interrupt)
	if retry.Error == nil || retry.Error.Code != "interrupted" || !strings.Contains(retry.Error.Message, "shutting down") || strings.Contains(retry.Error.Message, "request ended") {
		t.Errorf("the retry of the held call's key after a restart: %+v; want interrupted, saying the gateway shut down", retry)
	}
	if n := h.count(); n != 1 {
		t.Errorf("the held call ran %d times on its upstream; want once", n)
	}
}
