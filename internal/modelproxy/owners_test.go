package modelproxy

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentreach/reach"
	"github.com/agentreach/reach/internal/auth"
	"github.com/agentreach/reach/internal/config"
	"github.com/agentreach/reach/internal/link"
	"github.com/agentreach/reach/internal/pgtest"
	"github.com/agentreach/reach/internal/store"
	"github.com/agentreach/reach/internal/store/postgres"
	"github.com/agentreach/reach/internal/store/sqlite"
)

func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }

// ownersProxy is a proxy in front of upstream, with the model's key, whose
// client is the principal its Who header names (authenticated), and
// which keeps the owners of its answers in owners (if not nil) for kept.
func ownersProxy(t *testing.T, upstream http.Handler, owners Owners, kept time.Duration) *httptest.Server {
	t.Helper()
	return ownersProxyLog(t, upstream, owners, kept, nil)
}

// ownersProxyLog is ownersProxy logging to log.
func ownersProxyLog(t *testing.T, upstream http.Handler, owners Owners, kept time.Duration, log *slog.Logger) *httptest.Server {
	t.Helper()
	up := httptest.NewServer(upstream)
	t.Cleanup(up.Close)
	rt := reach.New(nil)
	p := New(&Options{Model: &config.ModelConfig{BaseURL: up.URL + "/v1", Name: "m", APIKey: config.Secret("sk-gateway")},
		Choices: &link.ModelChoices{}, Models: rt, Breakers: rt, Authenticates: true, Owners: owners, Kept: kept, Logger: log,
		Owned: link.NewOwned(context.Background(), rt, time.Minute, link.Budgets{})})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		who := &auth.Identity{Principal: r.Header.Get("Who"), Tenant: "acme", Method: "api_key"}
		p.ServeHTTP(w, r.WithContext(auth.WithIdentity(r.Context(), who)))
	}))
	t.Cleanup(srv.Close)
	return srv
}

// turnAfter sends who's turn naming the answer prev, and returns its
// status, its error's code and param, and whether it may be retried.
func turnAfter(t *testing.T, url, who, prev string) (status int, code, param, retry string) {
	t.Helper()
	resp, b := postResponses(t, url, `{"model":"m","previous_response_id":"`+prev+`","input":"go on"}`, map[string]string{"Who": who})
	var e struct {
		Error struct{ Code, Param, Message string }
	}
	json.Unmarshal([]byte(b), &e)
	return resp.StatusCode, e.Error.Code, e.Error.Param, resp.Header.Get("X-Should-Retry")
}

// firstTurn sends who's first turn and returns its answer's id.
func firstTurn(t *testing.T, url, who string) string {
	t.Helper()
	resp, b := postResponses(t, url, `{"model":"m","input":"hello"}`, map[string]string{"Who": who})
	var a struct{ ID string }
	if json.Unmarshal([]byte(b), &a); resp.StatusCode != 200 || a.ID == "" {
		t.Fatalf("%s's first turn: %d %s", who, resp.StatusCode, b)
	}
	return a.ID
}

// TestResponsesPreviousBelongsToItsPrincipal: the model's key is the
// gateway's, so the endpoint would go on with any answer named: a turn
// that names another principal's answer, or one reach never gave (made
// against the provider directly), is refused with the endpoint's own
// code (400 previous_response_not_found, not retried), the model not
// asked; its owner's turn goes on. A conversation, which reach cannot
// place, is refused too.
func TestResponsesPreviousBelongsToItsPrincipal(t *testing.T) {
	fake := &fakeResponses{text: "hi"}
	srv := ownersProxy(t, fake, nil, 0)
	id := firstTurn(t, srv.URL, "alice")
	for _, c := range []struct{ who, prev string }{{"bob", id}, {"alice", "resp_made_elsewhere"}} {
		asked := fake.n
		status, code, param, retry := turnAfter(t, srv.URL, c.who, c.prev)
		if status != 400 || code != "previous_response_not_found" || param != "previous_response_id" || retry != "false" {
			t.Errorf("%s's turn after %s: %d %q %q x-should-retry %q; want 400 previous_response_not_found previous_response_id, not retried",
				c.who, c.prev, status, code, param, retry)
		}
		if fake.n != asked {
			t.Errorf("%s's turn after %s was sent to the model", c.who, c.prev)
		}
	}
	if status, code, _, _ := turnAfter(t, srv.URL, "alice", id); status != 200 {
		t.Errorf("alice's turn after her own answer: %d %q; want 200", status, code)
	}
	for _, conv := range []string{`"conv_1"`, `{"id":"conv_1"}`} {
		resp, b := postResponses(t, srv.URL, `{"model":"m","conversation":`+conv+`,"input":"go on"}`, map[string]string{"Who": "bob"})
		if resp.StatusCode != 400 || !strings.Contains(b, "conversation_unsupported") || !strings.Contains(b, "conv_1") {
			t.Errorf("a turn in conversation %s: %d %s; want 400 conversation_unsupported", conv, resp.StatusCode, b)
		}
	}
}

// TestResponsesPreviousOwnKey: a client whose own key the endpoint gets
// (no model key, no authentication) may name any answer: the endpoint
// checks that key's.
func TestResponsesPreviousOwnKey(t *testing.T) {
	fake := &fakeResponses{text: "hi"}
	up := httptest.NewServer(fake)
	defer up.Close()
	rt := reach.New(nil)
	p := New(&Options{Model: &config.ModelConfig{BaseURL: up.URL + "/v1", Name: "m"}, Choices: &link.ModelChoices{}, Models: rt, Breakers: rt,
		Owned: link.NewOwned(context.Background(), rt, time.Minute, link.Budgets{})})
	srv := httptest.NewServer(p)
	defer srv.Close()
	resp, b := postResponses(t, srv.URL, `{"model":"m","previous_response_id":"resp_made_elsewhere","input":"go on"}`,
		map[string]string{"Authorization": "Bearer sk-client"})
	if resp.StatusCode != 200 {
		t.Errorf("a turn with the client's own key after an answer made elsewhere: %d %s; want 200", resp.StatusCode, b)
	}
}

// TestResponsesOwnersSurviveRestart: the owner of an answer is on the
// store before the client reads its id, so that a proxy on the store
// reopened (a restarted gateway, SQLite) or on another instance
// (PostgreSQL) refuses another principal's turn naming it and lets its
// owner's go on; an owner older than Kept counts no more.
func TestResponsesOwnersSurviveRestart(t *testing.T) {
	// after opens the store again, or another instance's.
	check := func(t *testing.T, before Owners, after func() Owners) {
		fake := &fakeResponses{text: "hi", cut: 1}
		id := firstTurn(t, ownersProxy(t, fake, before, 0).URL, "alice")
		// Streamed: the id is in response.created, then response.completed.
		resp, b := postResponses(t, ownersProxy(t, fake, before, 0).URL, `{"model":"m","input":"hello","stream":true}`, map[string]string{"Who": "alice"})
		if resp.StatusCode != 200 || !strings.Contains(b, `"resp_2"`) {
			t.Fatalf("alice's streamed turn: %d %s", resp.StatusCode, b)
		}
		gone := firstTurn(t, ownersProxy(t, fake, before, time.Nanosecond).URL, "alice")
		srv := ownersProxy(t, fake, after(), 0)
		for _, c := range []struct {
			who, prev string
			want      int
		}{{"bob", id, 400}, {"bob", "resp_2", 400}, {"alice", id, 200}, {"alice", "resp_2", 200}, {"alice", gone, 400}} {
			if status, code, _, _ := turnAfter(t, srv.URL, c.who, c.prev); status != c.want {
				t.Errorf("%s's turn after %s, on the store reopened: %d %q; want %d", c.who, c.prev, status, code, c.want)
			}
		}
	}
	t.Run("SQLite", func(t *testing.T) {
		dir := t.TempDir()
		st, err := sqlite.Open(t.Context(), dir, nil)
		if err != nil {
			t.Fatal(err)
		}
		check(t, st, func() Owners {
			if err := st.Close(); err != nil {
				t.Fatal(err)
			}
			st, err := sqlite.Open(t.Context(), dir, &sqlite.Options{NoCreate: true})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { st.Close() })
			return st
		})
	})
	t.Run("PostgreSQL", func(t *testing.T) {
		url := pgtest.Database(t)
		open := func() *postgres.Store {
			st, err := postgres.Open(t.Context(), url, nil)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { st.Close() })
			return st
		}
		check(t, open(), func() Owners { return open() })
	})
}

// itemsFake answers each turn with a message and a reasoning item whose
// ids are its own (msg_N, rs_N, after prefix), as OpenAI's are, whole or
// streamed.
type itemsFake struct {
	prefix string
	mu     sync.Mutex
	n      int
	bodies []map[string]any
}

func (f *itemsFake) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var body map[string]any
	json.NewDecoder(r.Body).Decode(&body)
	f.mu.Lock()
	f.n++
	n := f.n
	f.bodies = append(f.bodies, body)
	f.mu.Unlock()
	rs := map[string]any{"type": "reasoning", "id": fmt.Sprintf("rs_%s%d", f.prefix, n), "summary": []any{}}
	msg := map[string]any{"type": "message", "id": fmt.Sprintf("msg_%s%d", f.prefix, n), "role": "assistant", "status": "completed",
		"content": []any{map[string]any{"type": "output_text", "text": "secret plan", "annotations": []any{}}}}
	resp := map[string]any{"id": fmt.Sprintf("resp_%s%d", f.prefix, n), "object": "response", "status": "completed", "model": "m", "output": []any{rs, msg},
		"usage": map[string]any{"input_tokens": 4, "output_tokens": 2, "total_tokens": 6}}
	if body["stream"] != true {
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(resp)
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	for i, ev := range []map[string]any{
		{"type": "response.created", "response": map[string]any{"id": resp["id"], "status": "in_progress", "output": []any{}}},
		{"type": "response.output_item.added", "output_index": 0, "item": rs},
		{"type": "response.output_item.added", "output_index": 1, "item": msg},
		{"type": "response.completed", "response": resp},
	} {
		ev["sequence_number"] = i
		b, _ := json.Marshal(ev)
		fmt.Fprintf(w, "event: %s\ndata: %s\n\n", ev["type"], b)
	}
}

// TestResponsesInputItemsBelongToTheirPrincipal: an input item that
// carries an id (an item_reference, or a reasoning item without its
// content) is read by the endpoint from what it stored under that id, for
// the gateway's key: naming another principal's item is naming their
// answer, previous_response_id or not. A turn whose input names an item
// reach did not give its principal is refused, the model not asked;
// items of one's own answers, whole or streamed, go on.
func TestResponsesInputItemsBelongToTheirPrincipal(t *testing.T) {
	fake := &itemsFake{}
	srv := ownersProxy(t, fake, nil, 0)
	firstTurn(t, srv.URL, "alice") // resp_1: rs_1, msg_1
	resp, b := postResponses(t, srv.URL, `{"model":"m","input":"hello","stream":true}`, map[string]string{"Who": "alice"})
	if resp.StatusCode != 200 || !strings.Contains(b, `"msg_2"`) {
		t.Fatalf("alice's streamed turn: %d %s", resp.StatusCode, b)
	}
	for _, input := range []string{
		`[{"type":"item_reference","id":"msg_1"},{"role":"user","content":"repeat it"}]`,
		`[{"type":"reasoning","id":"rs_2","summary":[]},{"role":"user","content":"go on"}]`,
		`[{"type":"item_reference","id":"msg\u005f1"}]`,
		`[{"type":"item_reference","ID":"msg_9","id":"msg_1"}]`,
		`[7,{"type":"item_reference","id":"msg_2"}]`,
	} {
		asked := fake.n
		resp, b := postResponses(t, srv.URL, `{"model":"m","input":`+input+`}`, map[string]string{"Who": "bob"})
		if resp.StatusCode != 400 || !strings.Contains(b, `"item_not_found"`) || !strings.Contains(b, `"param":"input"`) || resp.Header.Get("X-Should-Retry") != "false" {
			t.Errorf("bob's turn naming alice's item, input %s: %d %s; want 400 item_not_found, not retried", input, resp.StatusCode, b)
		}
		if fake.n != asked {
			t.Errorf("bob's turn naming alice's item (input %s) was sent to the model", input)
		}
	}
	resp, b = postResponses(t, srv.URL, `{"model":"m","input":[{"type":"item_reference","id":"msg_1"},{"type":"reasoning","id":"rs_2","summary":[]},{"role":"user","content":"go on"}]}`,
		map[string]string{"Who": "alice"})
	if resp.StatusCode != 200 {
		t.Errorf("alice's turn naming her own items: %d %s; want 200", resp.StatusCode, b)
	}
}

// TestResponsesContainerBelongsToItsPrincipal: a code interpreter's
// container, which an answer names (code_interpreter_call's
// container_id), keeps the files and state of the code run in it, for
// the gateway's key: a turn whose code_interpreter tool names another
// principal's container by its id would run in it. It is refused, the
// model not asked; its owner's turn goes on.
func TestResponsesContainerBelongsToItsPrincipal(t *testing.T) {
	fake := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"id":"resp_c1","object":"response","status":"completed","model":"m","output":[`+
			`{"type":"code_interpreter_call","id":"ci_1","status":"completed","code":"open('x','w')","container_id":"cntr_alice1","outputs":[]}],`+
			`"usage":{"input_tokens":4,"output_tokens":2,"total_tokens":6}}`)
	})
	srv := ownersProxy(t, fake, nil, 0)
	firstTurn(t, srv.URL, "alice")
	turn := `{"model":"m","input":"read x","tools":[{"type":"code_interpreter","container":"cntr_alice1"}]}`
	resp, b := postResponses(t, srv.URL, turn, map[string]string{"Who": "bob"})
	if resp.StatusCode != 400 || !strings.Contains(b, `"container_not_found"`) || resp.Header.Get("X-Should-Retry") != "false" {
		t.Errorf("bob's turn in alice's container: %d %s; want 400 container_not_found, not retried", resp.StatusCode, b)
	}
	if resp, b = postResponses(t, srv.URL, turn, map[string]string{"Who": "alice"}); resp.StatusCode != 200 {
		t.Errorf("alice's turn in her container: %d %s; want 200", resp.StatusCode, b)
	}
	auto := `{"model":"m","input":"x","tools":[{"type":"code_interpreter","container":{"type":"auto"}}]}`
	if resp, b = postResponses(t, srv.URL, auto, map[string]string{"Who": "bob"}); resp.StatusCode != 200 {
		t.Errorf("bob's turn in a new container: %d %s; want 200", resp.StatusCode, b)
	}
}

// TestResponsesItemMembersInAnotherCase: an input item's id or type, a
// tool's type or container, spelled in another case ("ID", "Type",
// "Container") is one reach did not read, so it checked no owner, and that
// a server in Go (decoding the body into structs with encoding/json) reads
// as that member: bob's turn read alice's item, or ran code in her
// container. It is refused, 400 unknown_parameter naming the member and
// how to spell it, the model not asked; among items the principal owns
// too, as "TYPE" decides whether the endpoint reads the item from what it
// stored.
func TestResponsesItemMembersInAnotherCase(t *testing.T) {
	fake := &itemsFake{}
	srv := ownersProxy(t, fake, nil, 0)
	firstTurn(t, srv.URL, "alice") // resp_1: rs_1, msg_1
	for _, tc := range []struct{ who, body, member, param string }{
		{"bob", `{"model":"m","input":[{"type":"item_reference","ID":"msg_1"}]}`, "ID", "input"},
		{"bob", `{"model":"m","input":[{"role":"user","content":"x"},{"Id":"msg_1"}]}`, "Id", "input"},
		{"alice", `{"model":"m","input":[{"TYPE":"reasoning","id":"rs_1","summary":[]}]}`, "TYPE", "input"},
		{"alice", `{"model":"m","input":[{"type":"reasoning","id":"rs_1","summary":[],"Encrypted_Content":"x"}]}`, "Encrypted_Content", "input"},
		{"bob", `{"model":"m","input":"x","tools":[{"type":"code_interpreter","Container":"cntr_alice1"}]}`, "Container", "tools"},
		{"bob", `{"model":"m","input":"x","tools":[{"Type":"code_interpreter","container":"cntr_alice1"}]}`, "Type", "tools"},
		{"bob", `{"model":"m","input":"x","tools":[{"type":"code_interpreter","container":{"type":"auto"},"CONTAINER":"cntr_alice1"}]}`, "CONTAINER", "tools"},
	} {
		asked := fake.n
		resp, b := postResponses(t, srv.URL, tc.body, map[string]string{"Who": tc.who})
		if resp.StatusCode != 400 || !strings.Contains(b, `"unknown_parameter"`) || !strings.Contains(b, `"param":"`+tc.param+`"`) ||
			!strings.Contains(b, `\"`+tc.member+`\"`) || resp.Header.Get("X-Should-Retry") != "false" {
			t.Errorf("%s's turn %s: %d %s; want 400 unknown_parameter naming %s in %s, not retried", tc.who, tc.body, resp.StatusCode, b, tc.member, tc.param)
		}
		if fake.n != asked {
			t.Errorf("%s's turn %s was sent to the model", tc.who, tc.body)
		}
	}
	// Members spelled as the API spells them, and others in any case, go on.
	resp, b := postResponses(t, srv.URL, `{"model":"m","input":[{"type":"item_reference","id":"msg_1"},{"Role":"user","content":"go on"}]}`,
		map[string]string{"Who": "alice"})
	if resp.StatusCode != 200 {
		t.Errorf("alice's turn naming her own item: %d %s; want 200", resp.StatusCode, b)
	}
}

// TestOwnerMemoryKeptPerPrincipal: without a store, the owners of the
// newest 10,000 answers were all reach knew, one list for every principal:
// bob's flood of turns pushed out alice's answer, and her next turn naming
// it was refused previous_response_not_found. Past the bound the principal
// holding the most gives way; the total stays bounded.
func TestOwnerMemoryKeptPerPrincipal(t *testing.T) {
	p := &Proxy{}
	put := func(id, principal string) {
		now := time.Now()
		p.owners.put(&store.ResponseOwner{Hash: idHash(id), Principal: principal, Tenant: "acme", Created: now, Expires: now.Add(time.Hour)})
	}
	alice, bob := &auth.Identity{Principal: "alice", Tenant: "acme"}, &auth.Identity{Principal: "bob", Tenant: "acme"}
	put("resp_alice", "alice")
	const flood = 3 * maxOwners
	for i := range flood {
		put(fmt.Sprint("resp_", i), "bob")
	}
	if o, err := p.owned(t.Context(), "resp_alice", alice); err != nil || o == nil {
		t.Errorf("alice's answer after bob's %d: %v, %v; want hers kept", flood, o, err)
	}
	if o, _ := p.owned(t.Context(), "resp_0", bob); o != nil {
		t.Error("bob's oldest answer kept past the bound")
	}
	if o, _ := p.owned(t.Context(), fmt.Sprint("resp_", flood-1), bob); o == nil {
		t.Error("bob's newest answer forgotten")
	}
	if n := len(p.owners.m); n > maxOwners {
		t.Errorf("%d owners kept, want at most %d", n, maxOwners)
	}
}

// TestResponsesIDNotTakenOver: an endpoint that answers bob with the id
// of alice's answer (and of its item), buggy or hostile, does not make
// them bob's: bob's answer is passed on, alice's next turn naming them
// goes on, and bob's is refused. Each turn is served by a proxy of its
// own on the store (another instance), or by one proxy without a store.
func TestResponsesIDNotTakenOver(t *testing.T) {
	same := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"id":"resp_same","object":"response","status":"completed","model":"m","output":[`+
			`{"type":"message","id":"msg_same","role":"assistant","status":"completed","content":[{"type":"output_text","text":"hi","annotations":[]}]}],`+
			`"usage":{"input_tokens":4,"output_tokens":1,"total_tokens":5}}`)
	})
	check := func(t *testing.T, proxy func() string) {
		if id := firstTurn(t, proxy(), "alice"); id != "resp_same" {
			t.Fatalf("alice's answer %q", id)
		}
		if id := firstTurn(t, proxy(), "bob"); id != "resp_same" { // passed on
			t.Fatalf("bob's answer %q", id)
		}
		for _, c := range []struct {
			who  string
			want int
		}{{"alice", 200}, {"bob", 400}, {"alice", 200}} {
			if status, code, _, _ := turnAfter(t, proxy(), c.who, "resp_same"); status != c.want {
				t.Errorf("%s's turn after the answer both were given: %d %q; want %d", c.who, status, code, c.want)
			}
			resp, b := postResponses(t, proxy(), `{"model":"m","input":[{"type":"item_reference","id":"msg_same"}]}`, map[string]string{"Who": c.who})
			if resp.StatusCode != c.want {
				t.Errorf("%s's turn naming the item both were given: %d %s; want %d", c.who, resp.StatusCode, b, c.want)
			}
		}
	}
	t.Run("memory", func(t *testing.T) {
		var logged bytes.Buffer
		srv := ownersProxyLog(t, same, nil, 0, slog.New(slog.NewTextHandler(&logged, nil)))
		check(t, func() string { return srv.URL })
		if l := logged.String(); !strings.Contains(l, "another principal already owns") || strings.Contains(l, "_same") {
			t.Errorf("the log of the collision: %s; want a warning without the id", l)
		}
	})
	t.Run("Memory store", func(t *testing.T) {
		st := store.NewMemory()
		check(t, func() string { return ownersProxy(t, same, st, 0).URL })
	})
	t.Run("SQLite", func(t *testing.T) {
		st, err := sqlite.Open(t.Context(), t.TempDir(), nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { st.Close() })
		check(t, func() string { return ownersProxy(t, same, st, 0).URL })
	})
	t.Run("PostgreSQL", func(t *testing.T) {
		st, err := postgres.Open(t.Context(), pgtest.Database(t), nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { st.Close() })
		check(t, func() string { return ownersProxy(t, same, st, 0).URL })
	})
}
