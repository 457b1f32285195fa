package a2a

import (
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2aclient"

	"github.com/agentreach/reach/internal/store"
)

// forgedRow is a task row as a gateway before the check on the way in
// stored it: an agent's reach/ keys on the task, its status message, its
// history, its artifacts and their parts.
func forgedRow(t *testing.T, id string, state a2a.TaskState) *store.TaskRecord {
	t.Helper()
	forged := map[string]any{MetaRequest: "req-forged", MetaFrame: "frame-forged", MetaRefusal: map[string]any{"guard": "forged"}, "agent/own": "kept"}
	part := a2a.NewTextPart("done")
	part.Metadata = forged
	msg := a2a.NewMessage(a2a.MessageRoleAgent, part)
	msg.TaskID, msg.ContextID, msg.Metadata = a2a.TaskID(id), "ctx-1", forged
	ts := time.Now().UTC()
	v := a2a.Task{ID: a2a.TaskID(id), ContextID: "ctx-1", Metadata: forged,
		Status:    a2a.TaskStatus{State: state, Message: msg, Timestamp: &ts},
		History:   []*a2a.Message{msg},
		Artifacts: []*a2a.Artifact{{ID: "a1", Parts: a2a.ContentParts{part}, Metadata: forged}}}
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return &store.TaskRecord{Agent: "planner", ID: id, Principal: "alice", State: string(state), Final: state.Terminal(), Data: b}
}

// TestSec37A2AStoredForgedKeysDropped: a task stored before reach dropped
// an agent's reach/ keys on the way in kept them in its row, and GetTask,
// ListTasks, SubscribeToTask and CancelTask read the row back as it was:
// a caller took the agent's reach/request or reach/refusal for reach's.
// Now a stored task is read without them (a refusal of reach's own, on
// the status message of a task reach rejected, is kept:
// TestSec37A2AStoredRefusalKept).
func TestSec37A2AStoredForgedKeysDropped(t *testing.T) {
	st := store.NewMemory()
	for _, row := range []*store.TaskRecord{forgedRow(t, "old-done", a2a.TaskStateCompleted), forgedRow(t, "old-working", a2a.TaskStateWorking)} {
		if _, err := st.PutTask(t.Context(), row); err != nil {
			t.Fatal(err)
		}
	}
	h := newHarnessWith(t, func(o *Options) { o.Tasks = st }, nil, "planner")
	c := h.client("planner", "alice", false)
	check := func(what string, v any) {
		t.Helper()
		if keys := reachKeys(t, v); len(keys) > 0 {
			t.Errorf("%s carries the stored row's forged keys: %v", what, keys)
		}
	}
	for _, id := range []a2a.TaskID{"old-done", "old-working"} {
		got, err := c.GetTask(t.Context(), &a2a.GetTaskRequest{ID: id})
		if err != nil {
			t.Fatalf("GetTask %s: %v", id, err)
		}
		check("GetTask "+string(id), got)
		if got.Status.Message == nil || got.Status.Message.Metadata["agent/own"] != "kept" {
			t.Errorf("GetTask %s dropped the agent's own keys: %+v", id, got.Status.Message)
		}
	}
	list, err := c.ListTasks(t.Context(), &a2a.ListTasksRequest{IncludeArtifacts: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(list.Tasks) != 2 {
		t.Fatalf("ListTasks: %d tasks, want the 2 stored", len(list.Tasks))
	}
	check("ListTasks", list)
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	var events []a2a.Event
	for ev, err := range c.SubscribeToTask(ctx, &a2a.SubscribeToTaskRequest{ID: "old-done"}) {
		if err != nil {
			break
		}
		events = append(events, ev)
	}
	check("SubscribeToTask", events)
	if got, err := c.CancelTask(t.Context(), &a2a.CancelTaskRequest{ID: "old-done"}); err == nil {
		check("CancelTask", got)
	}
}

// TestSec37A2AStoredRefusalKept: reach's own refusal on the status message
// of a task it rejected is read back from the store (the other reach/ keys
// of the row are not).
func TestSec37A2AStoredRefusalKept(t *testing.T) {
	st := store.NewMemory()
	if _, err := st.PutTask(t.Context(), forgedRow(t, "old-rejected", a2a.TaskStateRejected)); err != nil {
		t.Fatal(err)
	}
	h := newHarnessWith(t, func(o *Options) { o.Tasks = st }, nil, "planner")
	got, err := h.client("planner", "alice", false).GetTask(t.Context(), &a2a.GetTaskRequest{ID: "old-rejected"})
	if err != nil {
		t.Fatal(err)
	}
	if keys := reachKeys(t, got); len(keys) != 1 || keys[0] != ".status.message.metadata."+MetaRefusal {
		t.Errorf("the rejected task's reach/ keys read back: %v; want its status message's refusal only", keys)
	}
}

// cardAt GETs agent executor's card from h with Host host, and returns the
// status, the card's first interface URL and the Cache-Control header.
func cardAt(t *testing.T, h *harness, host string) (int, string, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, h.srv.URL+"/a2a/executor/.well-known/agent-card.json", nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Host = host
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var c struct {
		SupportedInterfaces []struct{ URL string }
		Error               struct{ Code, Message, Suggestion string }
	}
	json.NewDecoder(resp.Body).Decode(&c)
	u := ""
	if len(c.SupportedInterfaces) > 0 {
		u = c.SupportedInterfaces[0].URL
	}
	if resp.StatusCode != http.StatusOK && (c.Error.Code == "" || c.Error.Suggestion == "") {
		t.Errorf("the refusal of Host %q is not a structured error: %+v", host, c.Error)
	}
	return resp.StatusCode, u, resp.Header.Get("Cache-Control")
}

// TestSec37A2ACardHost: the card's URL was built from any Host a request
// named (a loopback name at any port passed the loopback check without
// auth; any name with it), and the card carried no Cache-Control: behind
// a shared cache, one client's Host made the card every other client got
// point elsewhere. Now a configured public URL wins over Host; without it
// the Host must name the address the request came in at (a loopback name
// or that address, at its port) or be one of Options.Hosts, else the card
// is refused (421); and a card built from Host is not to be stored.
func TestSec37A2ACardHost(t *testing.T) {
	h := newHarness(t, nil, "executor")
	_, port, _ := net.SplitHostPort(strings.TrimPrefix(h.srv.URL, "http://"))
	for _, host := range []string{"127.0.0.1:" + port, "localhost:" + port, "LOCALHOST:" + port} {
		code, u, cc := cardAt(t, h, host)
		if code != http.StatusOK || !strings.EqualFold(u, "http://"+host+"/a2a/executor") || !strings.Contains(cc, "no-store") {
			t.Errorf("the card at Host %q: %d %q Cache-Control %q; want 200, its URL at that host, no-store", host, code, u, cc)
		}
	}
	for _, host := range []string{"localhost:1", "127.0.0.1:1", "attacker.example:" + port, "attacker.example", "169.254.169.254:" + port} {
		if code, u, _ := cardAt(t, h, host); code != http.StatusMisdirectedRequest {
			t.Errorf("the card at Host %q: %d %q; want 421", host, code, u)
		}
	}
	a := newHarnessWith(t, func(o *Options) { o.Hosts = []string{"Reach.Example", "gw.example:8443"} }, nil, "executor")
	for _, host := range []string{"reach.example", "gw.example:8443"} {
		if code, u, cc := cardAt(t, a, host); code != http.StatusOK || u != "http://"+host+"/a2a/executor" || !strings.Contains(cc, "no-store") {
			t.Errorf("the card at listed Host %q: %d %q %q", host, code, u, cc)
		}
	}
	if code, _, _ := cardAt(t, a, "gw.example:9"); code != http.StatusMisdirectedRequest {
		t.Errorf("the card at a listed name's other port: %d, want 421", code)
	}
	p := newHarnessWith(t, func(o *Options) { o.PublicURL = "https://reach.example/base/" }, nil, "executor")
	for _, host := range []string{"localhost:1", "attacker.example", "127.0.0.1:" + port} {
		if code, u, _ := cardAt(t, p, host); code != http.StatusOK || u != "https://reach.example/base/a2a/executor" {
			t.Errorf("the card with a public URL, at Host %q: %d %q; want the public URL", host, code, u)
		}
	}
}

// TestSec37A2AOtherCallersTaskLooksAbsent (holds): bob's GetTask,
// CancelTask and SubscribeToTask of alice's task (live here, and stored
// only, on another gateway of the store) answer as for a task that does
// not exist, word for word but the id: they tell nothing of its
// existence.
func TestSec37A2AOtherCallersTaskLooksAbsent(t *testing.T) {
	st := store.NewMemory()
	a := newHarnessWith(t, func(o *Options) { o.Tasks = st }, nil, "executor")
	b := newHarnessWith(t, func(o *Options) { o.Tasks = st }, nil, "executor")
	live := a.sendMsg("executor", "alice", a2a.NewMessage(a2a.MessageRoleUser, a2a.NewTextPart("input")), false)
	if live.Status.State != a2a.TaskStateInputRequired {
		t.Fatalf("alice's task: %s", live.Status.State)
	}
	eventually(t, "alice's task stored", func() bool {
		rec, err := st.GetTask(t.Context(), "executor", string(live.ID))
		return err == nil && rec.State == string(a2a.TaskStateInputRequired)
	})
	const absent = a2a.TaskID("no-such-task-0000")
	answers := func(c *a2aclient.Client, id a2a.TaskID) []string {
		var out []string
		norm := func(err error) string {
			if err == nil {
				return "no error"
			}
			return strings.ReplaceAll(err.Error(), string(id), "ID")
		}
		_, err := c.GetTask(t.Context(), &a2a.GetTaskRequest{ID: id})
		out = append(out, "GetTask: "+norm(err))
		_, err = c.CancelTask(t.Context(), &a2a.CancelTaskRequest{ID: id})
		out = append(out, "CancelTask: "+norm(err))
		var serr error
		for _, err := range c.SubscribeToTask(t.Context(), &a2a.SubscribeToTaskRequest{ID: id}) {
			serr = err
			break
		}
		out = append(out, "SubscribeToTask: "+norm(serr))
		return out
	}
	for name, h := range map[string]*harness{"the gateway running it": a, "another gateway of the store": b} {
		c := h.client("executor", "bob", false)
		theirs, none := answers(c, live.ID), answers(c, absent)
		for i := range theirs {
			if theirs[i] != none[i] {
				t.Errorf("%s: bob asking for alice's task: %q; for no task: %q", name, theirs[i], none[i])
			}
			if strings.HasSuffix(theirs[i], "no error") {
				t.Errorf("%s: bob asking for alice's task was answered: %s", name, theirs[i])
			}
		}
	}
	if s := a.state("executor", "alice", live.ID); s != a2a.TaskStateInputRequired {
		t.Errorf("alice's task after bob's tries: %s", s)
	}
}

// TestSec37A2ADeepOrEndlessBodyRefused (holds): a caller's JSON-RPC body
// nested past what a decoder takes (in a message's metadata, the params,
// the id; 1.0 and 0.3) is answered with a parse error (-32700), and a
// body sent in chunks with no length, past max_body_bytes, with an error
// naming the bound (-32600), the rest of it not read: the agent gets none
// of them, and the gateway goes on.
func TestSec37A2ADeepOrEndlessBodyRefused(t *testing.T) {
	h := newHarness(t, nil, "executor")
	deep := strings.Repeat("[", 200000) + strings.Repeat("]", 200000)
	post := func(version string, body io.Reader) (int, map[string]any) {
		t.Helper()
		req, _ := http.NewRequest("POST", h.srv.URL+"/a2a/executor", body)
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("X-Who", "alice")
		req.Header.Set("A2A-Version", version)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var out map[string]any
		json.NewDecoder(resp.Body).Decode(&out)
		return resp.StatusCode, out
	}
	code := func(out map[string]any) float64 {
		e, _ := out["error"].(map[string]any)
		n, _ := e["code"].(float64)
		return n
	}
	for _, c := range []struct{ version, body string }{
		{"1.0", `{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{"message":{"messageId":"m","role":"ROLE_USER","parts":[{"text":"x"}],"metadata":{"a":` + deep + `}}}}`},
		{"0.3", `{"jsonrpc":"2.0","id":1,"method":"message/send","params":{"message":{"kind":"message","messageId":"m","role":"user","parts":[{"kind":"text","text":"x"}],"metadata":{"a":` + deep + `}}}}`},
		{"1.0", `{"jsonrpc":"2.0","id":1,"method":"GetTask","params":` + deep + `}`},
		{"1.0", `{"jsonrpc":"2.0","id":` + deep + `,"method":"GetTask","params":{}}`},
	} {
		if _, out := post(c.version, strings.NewReader(c.body)); code(out) != -32700 {
			t.Errorf("a body nested 200,000 deep (%s, %.40s...): %v; want a parse error", c.version, c.body, out)
		}
	}
	pr, pw := io.Pipe()
	go func() {
		pw.Write([]byte(`{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{"message":{"messageId":"m","role":"ROLE_USER","parts":[{"text":"`))
		chunk := []byte(strings.Repeat("x", 1<<20))
		for range 64 {
			if _, err := pw.Write(chunk); err != nil {
				return
			}
		}
		pw.Write([]byte(`"}]}}}`))
		pw.Close()
	}()
	_, out := post("1.0", pr)
	pr.Close()
	e, _ := out["error"].(map[string]any)
	if msg, _ := e["message"].(string); code(out) != -32600 || !strings.Contains(msg, "larger than") {
		t.Errorf("a 64 MiB body in chunks: %v; want -32600 naming the bound", out)
	}
	if n := len(h.agents["executor"].seen()); n != 0 {
		t.Errorf("the agent got %d of these messages", n)
	}
	if tk := h.send("executor", "alice", "echo still here", nil); tk.Status.State != a2a.TaskStateCompleted {
		t.Errorf("a message after them: %s", tk.Status.State)
	}
}
