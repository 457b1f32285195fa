package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/agentreach/reach/internal/pgtest"
)

// TestKill37HandedClaimedOnPostgres kills a real `reach serve` (kill -9)
// at handed.claimed: on PostgreSQL, a sub-agent's first turn claimed the
// record of the task a manager's turn on another instance handed (marked
// used), and the instance dies before it begins the sub-request
// (docs/STATE.md, "Tasks handed across instances"). Instance a ran the
// manager's turn in request mgr, which runs on; b is killed at the claim
// and never comes back; the sub-agent's first turn, sent again through a
// third instance c, is answered and begins one sub-request under mgr,
// recorded on the task's record: the hand-off is neither lost (the used
// record taken again) nor doubled (one sub-request), and mgr still runs.
//
// At handed.sub the killed turn had begun its sub-request on b (joining
// mgr there) and recorded it on the task's record, its model not asked:
// once b's life is recovered (by a) that sub-request is interrupted, and
// the first turn sent again through c then begins a new one, which the
// record names instead; mgr, whose part on a lives, still runs.
func TestKill37HandedClaimedOnPostgres(t *testing.T) {
	if testing.Short() {
		t.Skip("crash test skipped in -short mode")
	}
	pg := pgtest.Own(t)
	for i, point := range []string{"handed.claimed", "handed.sub"} {
		t.Run(point, func(t *testing.T) {
			url, err := pg.CreateDatabase(t.Context(), fmt.Sprint("handed37_", i))
			if err != nil {
				t.Fatal(err)
			}
			handedKilledAt(t, url, point)
		})
	}
}

// handedKilledAt is a case of TestKill37HandedClaimedOnPostgres over the
// PostgreSQL database url.
func handedKilledAt(t *testing.T, url, point string) {
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		w.Header().Set("Content-Type", "application/json")
		if strings.Contains(string(b), `"manage"`) {
			io.WriteString(w, `{"id":"c0","object":"chat.completion","model":"m","choices":[{"index":0,"message":{"role":"assistant","content":null,"tool_calls":[{"id":"call_a","type":"function","function":{"name":"researcher","arguments":"{\"input\":\"find the cheapest route\"}"}}]},"finish_reason":"tool_calls"}],"usage":{"prompt_tokens":10,"completion_tokens":5,"total_tokens":15}}`)
			return
		}
		io.WriteString(w, `{"id":"c1","object":"chat.completion","model":"m","choices":[{"index":0,"message":{"role":"assistant","content":"done"},"finish_reason":"stop"}],"usage":{"prompt_tokens":10,"completion_tokens":5,"total_tokens":15}}`)
	}))
	t.Cleanup(up.Close)
	upstream := sideEffectsUpstream(t, newSideEffects(nil))
	config := func(name string) string {
		return writeConfig(t, "store: "+url+"\ninstance: "+name+"\ninstance_ttl: 1s\n"+
			travelYAML(upstream, "model: {base_url: '"+up.URL+"'}\n"))
	}
	turn := func(base, request, body string) (int, string) {
		req, _ := http.NewRequest("POST", base+"/v1/chat/completions", strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		if request != "" {
			req.Header.Set("Reach-Request", request)
		}
		resp, err := (&http.Client{Timeout: time.Minute}).Do(req)
		if err != nil {
			return 0, err.Error()
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	const first = `{"model":"m","messages":[{"role":"system","content":"You are a researcher."},{"role":"user","content":"find the cheapest route"}]}`

	addrA := freeAddr(t)
	a := startReach(t, config("a"), addrA, t.TempDir())
	killAtEnd(t, a)
	if status, body := turn("http://"+addrA, "mgr", `{"model":"m","messages":[{"role":"user","content":"manage"}],"tools":[{"type":"function","function":{"name":"researcher","parameters":{"type":"object"}}}]}`); status != 200 {
		t.Fatalf("the manager's turn: %d %s", status, body)
	}

	addrB := freeAddr(t)
	b, reached := startReachAt(t, config("b"), addrB, t.TempDir(), point)
	killAtEnd(t, b)
	go turn("http://"+addrB, "", first) // cut off by the kill
	select {
	case <-reached:
	case <-time.After(time.Minute):
		t.Fatalf("instance b never reached crash point %s", point)
	}
	b.Process.Signal(syscall.SIGKILL)
	b.Wait()

	db, err := pgx.Connect(context.Background(), url)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close(context.Background())
	var used int64
	var sub string
	if err := db.QueryRow(t.Context(), `SELECT used, sub FROM handed_tasks WHERE request = 'mgr'`).Scan(&used, &sub); err != nil || used == 0 || (sub != "") != (point == "handed.sub") {
		t.Fatalf("the task's record after the kill: used %d, sub %q (%v); want it used, naming a sub-request only if killed at handed.sub", used, sub, err)
	}
	killed := sub // the sub-request begun on b, if any

	if killed != "" {
		// b's life recovered (by a): the sub-request it began, whose
		// only part was b's, interrupted. (Sent before, the first turn
		// joins it while it is stored running: one sub-request too.)
		waitState(t, db, killed, "interrupted")
	}
	addrC := freeAddr(t)
	c := startReach(t, config("c"), addrC, t.TempDir())
	killAtEnd(t, c)
	if status, body := turn("http://"+addrC, "", first); status != 200 {
		t.Fatalf("the sub-agent's first turn sent again through c: %d %s", status, body)
	}
	var subs []string
	rows, err := db.Query(t.Context(), `SELECT id FROM requests WHERE parent = 'mgr' AND id <> $1`, killed)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var id string
		rows.Scan(&id)
		subs = append(subs, id)
	}
	rows.Close()
	if len(subs) != 1 {
		t.Errorf("sub-requests of mgr begun by c: %v (b's: %q); want one, begun from the first turn sent again", subs, killed)
	}
	if err := db.QueryRow(t.Context(), `SELECT sub FROM handed_tasks WHERE request = 'mgr'`).Scan(&sub); err != nil || len(subs) != 1 || sub != subs[0] {
		t.Errorf("the task's record names sub-request %q (%v); want %v", sub, err, subs)
	}
	var state string
	if err := db.QueryRow(t.Context(), `SELECT state FROM requests WHERE id = 'mgr'`).Scan(&state); err != nil || state != "running" {
		t.Errorf("the manager's request is %q (%v) after b's kill; want it running on a", state, err)
	}
}

// waitState waits, 30 s at most, until the stored request id is in state.
func waitState(t *testing.T, db *pgx.Conn, id, state string) {
	t.Helper()
	got := ""
	for range 600 {
		if err := db.QueryRow(t.Context(), `SELECT state FROM requests WHERE id = $1`, id).Scan(&got); err == nil && got == state {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Errorf("request %s is %q 30 s after its instance was killed; want %s", id, got, state)
}
