package main

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentreach/reach/internal/pgtest"
)

// TestKill37ResponseOwnerStored kills a real `reach serve` (kill -9) at
// owner.stored: the owner of a Responses API answer recorded in the store
// (docs/STATE.md, "Responses API answers across a restart"), before the
// answer's id is passed on. After the restart, a turn of the same
// principal that names the answer (previous_response_id) goes on to the
// endpoint: the id is known though the life that recorded it is gone
// (its memory of owners with it), not refused previous_response_not_found.
// A turn that names an id reach never gave is still refused.
func TestKill37ResponseOwnerStored(t *testing.T) {
	if testing.Short() {
		t.Skip("crash test skipped in -short mode")
	}
	runs(t, nil, ownerCases(t))
}

// TestKill37ResponseOwnerStoredOnPostgres is TestKill37ResponseOwnerStored
// over PostgreSQL (one instance, restarted under its name).
func TestKill37ResponseOwnerStoredOnPostgres(t *testing.T) {
	if testing.Short() {
		t.Skip("crash test skipped in -short mode")
	}
	pg := pgtest.Own(t)
	runs(t, func(t *testing.T) string {
		url, err := pg.CreateDatabase(t.Context(), "owner37")
		if err != nil {
			t.Fatal(err)
		}
		return url
	}, ownerCases(t))
}

// ownerCases are the cases of TestKill37ResponseOwnerStored: one turn
// through the Responses API, killed once its answer's owner is durable.
func ownerCases(t *testing.T) []durablePoint {
	var asked atomic.Int32
	up := fakeResponses(t, &asked)
	return []durablePoint{{
		point: "owner.stored",
		more:  "model: {base_url: '" + up + "'}\n",
		drive: func(t *testing.T, h *crashRun) {
			h.responsesTurn(t, `{"model":"m","input":"go"}`) // cut off by the kill
		},
		check: func(t *testing.T, h *crashRun) {
			before := asked.Load()
			status, body := h.responsesTurn(t, `{"model":"m","previous_response_id":"`+fakeResponseID+`","input":"and then"}`)
			if status != http.StatusOK || asked.Load() != before+1 {
				t.Errorf("a turn naming the answer whose owner was stored before the kill: %d %s (the endpoint asked %d times, %d before); want it passed on",
					status, body, asked.Load(), before)
			}
			status, body = h.responsesTurn(t, `{"model":"m","previous_response_id":"resp_never_given","input":"and then"}`)
			if status != http.StatusBadRequest || !strings.Contains(body, "previous_response_not_found") {
				t.Errorf("a turn naming an answer reach never gave: %d %s; want 400 previous_response_not_found", status, body)
			}
		},
	}}
}

// fakeResponseID is the id of every answer of fakeResponses.
const fakeResponseID = "resp_kill37"

// fakeResponses serves a Responses API endpoint on loopback, each answer
// whole and with the id fakeResponseID, counting the turns it is asked;
// it returns its base URL.
func fakeResponses(t *testing.T, asked *atomic.Int32) string {
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		asked.Add(1)
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"id":"`+fakeResponseID+`","object":"response","status":"completed","model":"m","output":[{"type":"message","id":"msg_kill37","role":"assistant","status":"completed","content":[{"type":"output_text","text":"done","annotations":[]}]}],"usage":{"input_tokens":100,"output_tokens":50,"total_tokens":150}}`)
	}))
	t.Cleanup(up.Close)
	return up.URL
}

// responsesTurn asks the Responses API route for the turn body, and
// returns the answer's status and body (0 if the gateway was killed
// meanwhile).
func (h *crashRun) responsesTurn(t *testing.T, body string) (int, string) {
	resp, err := (&http.Client{Timeout: time.Minute}).Post(h.base+"/v1/responses", "application/json", strings.NewReader(body))
	if err != nil {
		return 0, err.Error()
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}
