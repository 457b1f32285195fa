package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/agentreach/reach/internal/pgtest"
)

// sessions38Gap is the idle gap of the sessions.touched tests: the sweep
// that writes a session's use runs a tenth of it apart.
const sessions38Gap = 4 * time.Second

// TestKill38SessionsTouched kills a real `reach serve` (kill -9) at
// sessions.touched: the last use of the MCP sessions used since the
// sweep before written to the store (TouchSessions), the next sweep not
// run. The session was opened more than idle_gap before the kill and
// used all along: restarted, the gateway takes it over when its client
// comes back under its id, as the use the kill left stored says it is
// not idle, though its opening is older than the gap. Had the use not
// been durable at the point, the record would say the session was idle
// past the gap, and its client would be answered 404.
func TestKill38SessionsTouched(t *testing.T) {
	if testing.Short() {
		t.Skip("crash test skipped in -short mode")
	}
	killAtSessionsTouched(t, "")
}

// TestKill38SessionsTouchedOnPostgres is TestKill38SessionsTouched over
// PostgreSQL (one instance, restarted under its name).
func TestKill38SessionsTouchedOnPostgres(t *testing.T) {
	if testing.Short() {
		t.Skip("crash test skipped in -short mode")
	}
	url, err := pgtest.Own(t).CreateDatabase(t.Context(), "touched38")
	if err != nil {
		t.Fatal(err)
	}
	killAtSessionsTouched(t, url)
}

// killAtSessionsTouched is TestKill38SessionsTouched over the PostgreSQL
// database url, or SQLite if "".
func killAtSessionsTouched(t *testing.T, url string) {
	h := &crashRun{data: t.TempDir(), fx: newSideEffects(nil), store: url}
	cfg := writeConfig(t, storeHead(url)+"idle_gap: "+sessions38Gap.String()+"\n"+travelYAML(sideEffectsUpstream(t, h.fx), ""))
	addr := freeAddr(t)
	h.base = "http://" + addr
	mcpPost := func(sid, body string) (int, string, error) {
		req, _ := http.NewRequest("POST", h.base+"/mcp", strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		if sid != "" {
			req.Header.Set("Mcp-Session-Id", sid)
		}
		resp, err := (&http.Client{Timeout: time.Minute}).Do(req)
		if err != nil {
			return 0, "", err
		}
		defer resp.Body.Close()
		io.Copy(io.Discard, resp.Body)
		return resp.StatusCode, resp.Header.Get("Mcp-Session-Id"), nil
	}
	sid := make(chan string, 1)
	// The twelfth touch after the first is at least 11 sweeps, 1.1 gaps,
	// after the session was opened: the session is used every 100 ms, so
	// every sweep from its opening on touches it.
	h.kill(t, cfg, addr, "sessions.touched#12", func(t *testing.T, h *crashRun) {
		_, id, err := mcpPost("", `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"crash","version":"1"}}}`)
		sid <- id
		if id == "" {
			h.note(fmt.Sprintf("initialize answered without a session: %v", err))
			return
		}
		mcpPost(id, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
		for n := 2; ; n++ { // until the kill
			if status, _, err := mcpPost(id, `{"jsonrpc":"2.0","id":`+strconv.Itoa(n)+`,"method":"tools/list"}`); err != nil || status != 200 {
				return
			}
			time.Sleep(100 * time.Millisecond)
		}
	})
	id := <-sid
	if id == "" {
		t.Fatal("no session was opened before the kill")
	}
	// The case's premise: the use stored at the point is what keeps the
	// session, its opening being older than the gap.
	st := h.open(t)
	sum := sha256.Sum256([]byte(id))
	rec, err := st.GetSession(t.Context(), hex.EncodeToString(sum[:]))
	st.Close()
	if err != nil {
		t.Fatalf("the session's record: %v", err)
	}
	if rec.Used.Sub(rec.Created) < sessions38Gap {
		t.Errorf("the session's record: opened %v, used %v: the use stored is less than the gap after the opening, so the case shows nothing", rec.Created, rec.Used)
	}
	cmd := startReach(t, cfg, addr, h.data)
	killAtEnd(t, cmd)
	if status, _, err := mcpPost(id, `{"jsonrpc":"2.0","id":1000,"method":"tools/list"}`); err != nil || status != 200 {
		t.Errorf("the session used until the kill, called again after the restart: %d %v; want it taken over (200)", status, err)
	}
	if url != "" {
		h.recovered(t)
	}
	h.checkAll(t, cmd)
}

// refusal38 is the call of TestKill38RefusedNoted's refusals: a tool the
// configuration forbids, in request r.
func refusal38(t *testing.T, base string, n int) map[string]any {
	t.Helper()
	return callHTTP(t, base, "r", "c"+strconv.Itoa(n), "travel__close", `{}`, "")
}

// TestKill38RefusedNoted kills a real `reach serve` (kill -9) at
// refused.noted: an actionable refusal of request r's calls counted in
// the store (store.Refusals, the refusals in a row of docs/LOOPS.md), its
// caller not answered yet: here the fourth, of a tool the configuration
// forbids. Restarted, r is interrupted (its only life died) and stays so:
// a call naming it is refused request_interrupted, not begun again with
// a count of its own, and the count the kill left is the four refusals
// made, each once (the store's next count of r is the fifth).
func TestKill38RefusedNoted(t *testing.T) {
	if testing.Short() {
		t.Skip("crash test skipped in -short mode")
	}
	h := &crashRun{data: t.TempDir(), fx: newSideEffects(nil)}
	cfg := writeConfig(t, travelYAML(sideEffectsUpstream(t, h.fx), "  travel__close: {access: forbidden}\n"))
	addr := freeAddr(t)
	h.base = "http://" + addr
	h.kill(t, cfg, addr, "refused.noted#4", func(t *testing.T, h *crashRun) {
		for n := 1; n <= 3; n++ {
			if r := refusal38(t, h.base, n); r["status"] != "refused" || errCode(r) != "denied" {
				h.note(fmt.Sprintf("refusal %d: %v", n, r))
			}
		}
		h.post("/v1/calls", `{"request_id":"r","tool_calls":[{"call_id":"c4","tool":"travel__close","arguments":{}}]}`) // cut off by the kill
	})
	cmd := startReach(t, cfg, addr, h.data)
	killAtEnd(t, cmd)
	if s := h.state(t, "r"); s != "interrupted" {
		t.Errorf("request r is %s after the restart; want interrupted", s)
	}
	if r := refusal38(t, h.base, 5); r["status"] != "refused" || errCode(r) != "request_interrupted" {
		t.Errorf("a call naming r after the restart: %v; want it refused request_interrupted", r)
	}
	h.checkAll(t, cmd) // stops the gateway
	st := h.open(t)
	defer st.Close()
	if n, err := st.NoteRefused(t.Context(), "r", false); err != nil || n != 5 {
		t.Errorf("the store's next count of r's refusals: %d (%v); want 5: the four made before the kill, each counted once", n, err)
	}
}

// TestKill38RefusedNotedOnPostgres kills instance a of two on one
// PostgreSQL at refused.noted: request r's calls alternate between a and
// b, each refused (a tool the configuration forbids), and a dies once
// the seventh refusal in a row, its fourth, is counted on the shared
// count, before its caller is answered. r runs on in b's part: the next
// refusal, through b, is the eighth in a row and stops r with the
// streak's text, whether it comes before a's killed life is recovered
// or after: the refusal a counted is neither lost with a (the ninth
// would stop it) nor counted twice (the seventh would have), and r ends
// stopped, not interrupted, once b's part left it (its idle gap) and a
// recovery ended it with a's dead part.
func TestKill38RefusedNotedOnPostgres(t *testing.T) {
	if testing.Short() {
		t.Skip("crash test skipped in -short mode")
	}
	pg := pgtest.Own(t)
	for i, after := range []bool{false, true} {
		name := "before_recovery"
		if after {
			name = "after_recovery"
		}
		t.Run(name, func(t *testing.T) {
			url, err := pg.CreateDatabase(t.Context(), "refused38_"+strconv.Itoa(i))
			if err != nil {
				t.Fatal(err)
			}
			killAtRefusedNoted(t, url, after)
		})
	}
}

// killAtRefusedNoted is a case of TestKill38RefusedNotedOnPostgres over
// the PostgreSQL database url: refusal 8 made once a's killed life is
// recovered if after, else at once.
func killAtRefusedNoted(t *testing.T, url string, after bool) {
	h := &crashRun{data: t.TempDir(), fx: newSideEffects(nil), store: url}
	upstream := sideEffectsUpstream(t, h.fx)
	config := func(name string) string {
		return writeConfig(t, "store: "+url+"\ninstance: "+name+"\ninstance_ttl: 1s\nidle_gap: 8s\n"+travelYAML(upstream, "  travel__close: {access: forbidden}\n"))
	}
	addrA, addrB := freeAddr(t), freeAddr(t)
	a, reached := startReachAt(t, config("a"), addrA, t.TempDir(), "refused.noted#4")
	killAtEnd(t, a)
	b := startReach(t, config("b"), addrB, h.data)
	killAtEnd(t, b)
	h.base = "http://" + addrB
	bases := [2]string{"http://" + addrB, "http://" + addrA} // refusal n through bases[n%2]
	driven := make(chan struct{})
	go func() {
		defer close(driven)
		for n := 1; n <= 6; n++ {
			if r := refusal38(t, bases[n%2], n); r["status"] != "refused" || errCode(r) != "denied" || strings.Contains(fmt.Sprint(r["notes"]), streak22Text) {
				h.note(fmt.Sprintf("refusal %d: %v", n, r))
			}
		}
		(&crashRun{base: bases[1]}).post("/v1/calls", `{"request_id":"r","tool_calls":[{"call_id":"c7","tool":"travel__close","arguments":{}}]}`) // cut off by the kill
	}()
	select {
	case <-reached:
	case <-time.After(time.Minute):
		t.Fatalf("instance a never reached refused.noted#4; the drive saw %q", h.notes)
	}
	a.Process.Signal(syscall.SIGKILL)
	a.Wait()
	<-driven
	if len(h.notes) > 0 {
		t.Fatalf("before the kill: %q", h.notes)
	}
	if after {
		waitLifeGone(t, url, "a")
	}
	r := refusal38(t, h.base, 8)
	if r["status"] != "refused" || !strings.Contains(fmt.Sprint(r["notes"]), streak22Text) {
		t.Errorf("refusal 8, through b once a was killed after counting refusal 7: %v; want it refused, its notes saying the request is stopped", r)
	}
	for range 600 {
		if s := h.state(t, "r"); s == "stopped_cancel" {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	if s := h.state(t, "r"); s != "stopped_cancel" {
		t.Errorf("request r is %s; want stopped_cancel (the streak's stop)", s)
	}
	// b's part, stopped, leaves r once idle (idle_gap); the next
	// recovery ends r, a's dead part with it.
	h.recovered(t)
	h.checkAll(t, b)
}

// waitLifeGone waits, 30 s at most, until the PostgreSQL store at url
// has recovered and forgotten the lives of instance name: no life of it
// listed. (A dead life's part of a request that runs on elsewhere stays
// listed, a dead part, until the request's last live part leaves.)
func waitLifeGone(t *testing.T, url, name string) {
	t.Helper()
	db, err := pgx.Connect(t.Context(), url)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close(context.Background())
	var lives int64
	for range 600 {
		if err := db.QueryRow(t.Context(), `SELECT count(*) FROM instances WHERE name = $1`, name).Scan(&lives); err == nil && lives == 0 {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("instance %s's killed life not recovered within 30 s: %d lives left\n%s", name, lives, holders(t, url))
}

// TestKill38HandedPutOnPostgres kills a real `reach serve` (kill -9) at
// handed.put: on PostgreSQL, the tasks a manager's model turn hands (the
// string arguments of its tool calls) recorded in the shared store
// (handed_tasks), the turn's answer not passed on to its agent (docs/STATE.md,
// "Tasks handed across instances"). Instance a runs the turn of request
// mgr and dies there; instance b lives on.
//
// The agent, which never got the answer, sends its turn again through b:
// before a's killed life is recovered, b joins mgr and its turn's records
// replace the killed turn's (one turn's records per request), and once a's
// life is recovered mgr runs on in b's part; the sub-agent's first turn,
// through b, begins one sub-request under mgr, recorded on b's turn's
// record. Sent again once a's life is recovered, the turn is refused
// (mgr, whose only part was a's, interrupted), and a sub-agent's first
// turn with the task is not linked to the interrupted mgr by the killed
// turn's record: it runs in a request of its own, answered.
func TestKill38HandedPutOnPostgres(t *testing.T) {
	if testing.Short() {
		t.Skip("crash test skipped in -short mode")
	}
	pg := pgtest.Own(t)
	for i, after := range []bool{false, true} {
		name := "sent_again_before_recovery"
		if after {
			name = "sent_again_after_recovery"
		}
		t.Run(name, func(t *testing.T) {
			url, err := pg.CreateDatabase(t.Context(), "handedput38_"+strconv.Itoa(i))
			if err != nil {
				t.Fatal(err)
			}
			killAtHandedPut(t, url, after)
		})
	}
}

// killAtHandedPut is a case of TestKill38HandedPutOnPostgres over the
// PostgreSQL database url: the manager's turn sent again once a's killed
// life is recovered if after, else at once.
func killAtHandedPut(t *testing.T, url string, after bool) {
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
		return writeConfig(t, "store: "+url+"\ninstance: "+name+"\ninstance_ttl: 2s\n"+
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
	const (
		manage = `{"model":"m","messages":[{"role":"user","content":"manage"}],"tools":[{"type":"function","function":{"name":"researcher","parameters":{"type":"object"}}}]}`
		first  = `{"model":"m","messages":[{"role":"system","content":"You are a researcher."},{"role":"user","content":"find the cheapest route"}]}`
	)
	addrB := freeAddr(t)
	b := startReach(t, config("b"), addrB, t.TempDir())
	killAtEnd(t, b)
	addrA := freeAddr(t)
	a, reached := startReachAt(t, config("a"), addrA, t.TempDir(), "handed.put")
	killAtEnd(t, a)
	answered := make(chan int, 1)
	go func() { // cut off by the kill
		status, _ := turn("http://"+addrA, "mgr", manage)
		answered <- status
	}()
	select {
	case <-reached:
	case <-time.After(time.Minute):
		t.Fatal("instance a never reached crash point handed.put")
	}
	a.Process.Signal(syscall.SIGKILL)
	a.Wait()
	if status := <-answered; status != 0 {
		t.Fatalf("the manager's turn through a was answered %d; want it cut off by the kill", status)
	}

	db, err := pgx.Connect(context.Background(), url)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close(context.Background())
	frames := func() []string {
		t.Helper()
		rows, err := db.Query(t.Context(), `SELECT DISTINCT frame FROM handed_tasks WHERE request = 'mgr'`)
		if err != nil {
			t.Fatal(err)
		}
		defer rows.Close()
		var out []string
		for rows.Next() {
			var f string
			rows.Scan(&f)
			out = append(out, f)
		}
		return out
	}
	killed := frames()
	if len(killed) != 1 {
		t.Fatalf("the killed turn's records: frames %v; want the one turn's", killed)
	}
	subs := func() []string {
		t.Helper()
		rows, err := db.Query(t.Context(), `SELECT id FROM requests WHERE parent = 'mgr'`)
		if err != nil {
			t.Fatal(err)
		}
		defer rows.Close()
		var out []string
		for rows.Next() {
			var id string
			rows.Scan(&id)
			out = append(out, id)
		}
		return out
	}

	base := "http://" + addrB
	if after {
		waitLifeGone(t, url, "a")
		waitState(t, db, "mgr", "interrupted")
		if status, body := turn(base, "mgr", manage); status != http.StatusForbidden || !strings.Contains(body, "request_interrupted") {
			t.Errorf("the manager's turn sent again once a's life was recovered: %d %s; want 403 request_interrupted", status, body)
		}
		if status, body := turn(base, "", first); status != 200 {
			t.Errorf("the sub-agent's first turn: %d %s; want it answered in a request of its own", status, body)
		}
		if s := subs(); len(s) != 0 {
			t.Errorf("sub-requests of the interrupted mgr: %v; want none (the killed turn's record links nothing)", s)
		}
		return
	}
	if status, body := turn(base, "mgr", manage); status != 200 {
		t.Fatalf("the manager's turn sent again through b: %d %s", status, body)
	}
	if got := frames(); len(got) != 1 || got[0] == killed[0] {
		t.Errorf("mgr's records after its turn was sent again: frames %v (the killed turn's %v); want the new turn's alone", got, killed)
	}
	waitLifeGone(t, url, "a")
	var state string
	if err := db.QueryRow(t.Context(), `SELECT state FROM requests WHERE id = 'mgr'`).Scan(&state); err != nil || state != "running" {
		t.Errorf("mgr is %q (%v) once a's life was recovered; want it running in b's part", state, err)
	}
	if status, body := turn(base, "", first); status != 200 {
		t.Fatalf("the sub-agent's first turn through b: %d %s", status, body)
	}
	s := subs()
	var sub string
	if err := db.QueryRow(t.Context(), `SELECT sub FROM handed_tasks WHERE request = 'mgr'`).Scan(&sub); err != nil || len(s) != 1 || sub != s[0] {
		t.Errorf("sub-requests of mgr %v, the task's record names %q (%v); want one, named by the record", s, sub, err)
	}
}

// TestKill38ClaimSettled kills a real `reach serve` (kill -9) while a
// write runs (its tool began, its caller waiting), then kills the next
// life in its recovery at claim.settled: the write's claim settled
// interrupted (it may have run), its checkpoint and the note of the write
// cut off (cut_offs) not written yet. The third life's recovery finds no
// claim to settle; still the write's first identical retry (a call of
// its own, no key: an HTTP client's retry after a transport error) is
// answered interrupted, nothing run, as after a restart with no kill in
// its recovery (TestKill21CutOffPoints); the next runs. Killed instead
// at cutoff.noted in its recovery (the note written, the claim not
// settled yet), the second life leaves the claim, which the third one
// notes again and settles: the same.
func TestKill38ClaimSettled(t *testing.T) {
	if testing.Short() {
		t.Skip("crash test skipped in -short mode")
	}
	for _, point := range []string{"claim.settled", "cutoff.noted"} {
		t.Run(point, func(t *testing.T) { killAtClaimSettled(t, "", point) })
	}
}

// TestKill38ClaimSettledOnPostgres is TestKill38ClaimSettled over
// PostgreSQL (one instance, restarted under its name: each life's
// recovery of the one before comes once its heartbeat is instance_ttl
// old).
func TestKill38ClaimSettledOnPostgres(t *testing.T) {
	if testing.Short() {
		t.Skip("crash test skipped in -short mode")
	}
	pg := pgtest.Own(t)
	for i, point := range []string{"claim.settled", "cutoff.noted"} {
		t.Run(point, func(t *testing.T) {
			url, err := pg.CreateDatabase(t.Context(), "settled38_"+strconv.Itoa(i))
			if err != nil {
				t.Fatal(err)
			}
			killAtClaimSettled(t, url, point)
		})
	}
}

// killAtClaimSettled is a case of TestKill38ClaimSettled over the
// PostgreSQL database url, or SQLite if "": the second life killed in its
// recovery at point.
func killAtClaimSettled(t *testing.T, url, point string) {
	sh := newKill21Shop(t)
	cfg := writeConfig(t, storeHead(url)+"upstreams:\n  - {name: shop, url: '"+sh.url+"'}\ntools:\n  shop__add_item: {access: write}\n")
	h := &crashRun{data: t.TempDir(), fx: newSideEffects(nil), store: url}
	addr := freeAddr(t)
	h.base = "http://" + addr
	cmd := startReach(t, cfg, addr, h.data)
	killAtEnd(t, cmd)
	go h.post("/v1/calls", `{"request_id":"r","tool_calls":[{"call_id":"c1","tool":"shop__add_item","arguments":{"item":"slow pear"}}]}`) // cut off by the kill
	select {
	case <-sh.began:
	case <-time.After(time.Minute):
		t.Fatal("the write never reached its tool")
	}
	cmd.Process.Signal(syscall.SIGKILL)
	cmd.Wait()
	cmd, reached := startReachAt(t, cfg, addr, h.data, point)
	killAtEnd(t, cmd)
	select {
	case <-reached:
	case <-time.After(time.Minute):
		t.Fatalf("the second life's recovery never reached %s", point)
	}
	cmd.Process.Signal(syscall.SIGKILL)
	cmd.Wait()
	cmd = startReach(t, cfg, addr, h.data)
	killAtEnd(t, cmd)
	if url != "" {
		h.recovered(t)
	}
	if st, e := sh.add(t, h.base, "slow pear"); st == "success" || !strings.Contains(e, "was cut off before its answer was delivered") {
		t.Errorf("the first identical retry after the restarts: %s %s; want the error interrupted, nothing run", st, e)
	}
	if n := sh.ran("slow pear"); n != 1 {
		t.Errorf("the write ran %d times with its first retry; want 1", n)
	}
	if st, e := sh.add(t, h.base, "slow pear"); st != "success" {
		t.Errorf("called again: %s %s; want it run", st, e)
	}
	if s := h.state(t, "r"); s != "interrupted" {
		t.Errorf("request r is %s; want interrupted", s)
	}
	h.checkAll(t, cmd)
}
