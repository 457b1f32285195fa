package gateway

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"iter"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2aclient"
	"github.com/a2aproject/a2a-go/v2/a2asrv"
	"github.com/agentreach/reach/internal/auth"
	"github.com/agentreach/reach/internal/config"
)

// sharedCache is a caching reverse proxy as a careless operator puts one
// in front of reach: it passes each request's Host on, and keeps a GET's
// 200 answer by its path alone for every later client, unless the answer
// says Cache-Control no-store or private.
type sharedCache struct {
	target string
	mu     sync.Mutex
	kept   map[string][]byte
}

func (c *sharedCache) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method == http.MethodGet {
		c.mu.Lock()
		b, ok := c.kept[r.URL.Path]
		c.mu.Unlock()
		if ok {
			w.Header().Set("Content-Type", "application/json")
			w.Write(b)
			return
		}
	}
	out, err := http.NewRequestWithContext(r.Context(), r.Method, c.target+r.URL.RequestURI(), r.Body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	out.Header = r.Header.Clone()
	out.Host = r.Host
	resp, err := http.DefaultTransport.RoundTrip(out)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	cc := resp.Header.Get("Cache-Control")
	if r.Method == http.MethodGet && resp.StatusCode == http.StatusOK && !strings.Contains(cc, "no-store") && !strings.Contains(cc, "private") {
		c.mu.Lock()
		c.kept[r.URL.Path] = b
		c.mu.Unlock()
	}
	for k, v := range resp.Header {
		w.Header()[k] = v
	}
	w.WriteHeader(resp.StatusCode)
	w.Write(b)
}

// TestSec37A2ACardNotPoisonedThroughSharedCache: a client asked reach's
// card through a shared cache with a Host of its choosing (a loopback name
// at another port passes reach's loopback check), the card named that
// Host and said nothing of caching, and the cache gave that card to the
// next client: the A2A JS SDK's client, made from it, sent its messages
// where the first client chose. Now reach refuses a card at a Host that is
// neither its own address nor a configured one (421: the cache keeps
// nothing), and the card it builds from Host says no-store: the JS client
// gets the card for the Host it used, and its message goes through.
func TestSec37A2ACardNotPoisonedThroughSharedCache(t *testing.T) {
	cache := a2aCache(t)
	sc := &sharedCache{kept: map[string][]byte{}}
	front := httptest.NewServer(sc)
	defer front.Close()
	frontHost := strings.TrimPrefix(front.URL, "http://")
	up := executorUpstream(t, "says done", doneAgent{})
	cfg, err := config.Parse([]byte("examples: true\nagents:\n  - {name: executor, url: "+up.URL+"}\na2a:\n  hosts: ['"+frontHost+"']\n"), os.LookupEnv)
	if err != nil {
		t.Fatal(err)
	}
	g, err := New(context.Background(), cfg, &Options{Ephemeral: true})
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	sc.target = serveTest(t, g).URL

	// At reach itself: its own address, and another port of loopback.
	for host, want := range map[string]int{strings.TrimPrefix(sc.target, "http://"): http.StatusOK, "localhost:1": http.StatusMisdirectedRequest} {
		req, _ := http.NewRequest(http.MethodGet, sc.target+"/a2a/executor/.well-known/agent-card.json", nil)
		req.Host = host
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != want || (want == http.StatusOK && resp.Header.Get("Cache-Control") != "no-store") {
			t.Errorf("the card at reach with Host %s: %d %q; want %d (no-store)", host, resp.StatusCode, resp.Header.Get("Cache-Control"), want)
		}
	}
	// The first client, at a Host of its choosing.
	req, _ := http.NewRequest(http.MethodGet, front.URL+"/a2a/executor/.well-known/agent-card.json", nil)
	req.Host = "localhost:1"
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusMisdirectedRequest || !bytes.Contains(body, []byte("a2a.public_url")) {
		t.Errorf("the card at Host localhost:1: %d %s; want 421 saying what to configure", resp.StatusCode, body)
	}

	// The next client: the A2A JS SDK's, through the same cache.
	script, err := filepath.Abs("testdata/a2a/cardclient.cjs")
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("node", script)
	cmd.Env = append(os.Environ(), "NODE_PATH="+filepath.Join(cache, "node_modules"), "BASE="+front.URL+"/a2a/executor/")
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("the JS client: %v\n%s", err, out)
	}
	var got struct{ URL, State, Text, Error string }
	if err := json.Unmarshal(bytes.TrimSpace(out), &got); err != nil {
		t.Fatalf("the JS client printed %q: %v", out, err)
	}
	if got.URL != front.URL+"/a2a/executor" || got.State != "TASK_STATE_COMPLETED" || got.Text != "done" {
		t.Errorf("the JS client through the cache: %+v; want the card at %s and the task completed", got, front.URL)
	}
	sc.mu.Lock()
	defer sc.mu.Unlock()
	if b, ok := sc.kept["/a2a/executor/.well-known/agent-card.json"]; ok {
		t.Errorf("the shared cache kept a card built from a Host: %s", b)
	}
}

// TestSec37A2APublicURLConfigured: a2a.public_url is the URL the cards
// name, whatever Host a card is asked at; a public URL or a host that is
// not one is refused at load, naming the field.
func TestSec37A2APublicURLConfigured(t *testing.T) {
	for _, bad := range []string{"a2a: {public_url: 'ftp://reach.example'}", "a2a: {public_url: 'https://reach.example/?k=v'}", "a2a: {public_url: 'reach.example'}",
		"a2a: {hosts: ['https://reach.example']}", "a2a: {hosts: ['']}"} {
		_, err := config.Parse([]byte("agents:\n  - {name: executor, url: http://127.0.0.1:1}\n"+bad+"\n"), os.LookupEnv)
		if err == nil || !strings.Contains(err.Error(), "a2a") {
			t.Errorf("%s: %v; want refused", bad, err)
		}
	}
	up := executorUpstream(t, "says done", doneAgent{})
	cfg, err := config.Parse([]byte("examples: true\nagents:\n  - {name: executor, url: "+up.URL+"}\na2a: {public_url: 'https://reach.example/gw/'}\n"), os.LookupEnv)
	if err != nil {
		t.Fatal(err)
	}
	g, err := New(context.Background(), cfg, &Options{Ephemeral: true})
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	base := serveTest(t, g).URL
	for _, host := range []string{"", "localhost:1"} {
		req, _ := http.NewRequest(http.MethodGet, base+"/a2a/executor/.well-known/agent-card.json", nil)
		if host != "" {
			req.Host = host
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		var card struct {
			Interfaces []struct{ URL string } `json:"supportedInterfaces"`
		}
		json.NewDecoder(resp.Body).Decode(&card)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK || len(card.Interfaces) == 0 || card.Interfaces[0].URL != "https://reach.example/gw/a2a/executor" {
			t.Errorf("the card at Host %q: %d %+v; want the public URL", host, resp.StatusCode, card.Interfaces)
		}
	}
}

// metaAgent completes each task, keeping the metadata of each message it
// got.
type metaAgent struct {
	mu   sync.Mutex
	meta []map[string]any
}

func (a *metaAgent) Execute(ctx context.Context, ec *a2asrv.ExecutorContext) iter.Seq2[a2a.Event, error] {
	a.mu.Lock()
	a.meta = append(a.meta, ec.Message.Metadata)
	a.mu.Unlock()
	return doneAgent{}.Execute(ctx, ec)
}

func (a *metaAgent) Cancel(ctx context.Context, ec *a2asrv.ExecutorContext) iter.Seq2[a2a.Event, error] {
	return doneAgent{}.Cancel(ctx, ec)
}

// TestSec37A2AOtherTenantsRequestAndParentTellNothing (holds): alice of
// tenant globex sending an A2A message that names, in its metadata, the
// reach/parent an agent was given for alice@acme's hand-off (as a hostile
// agent or a leak passes it on) is answered as for a frame no request has,
// word for word but the id; naming acme's reach/request (alone or with
// the parent) is refused without a word of the request or its owner beyond
// the id she sent (as TestOtherTenantsRequestIDAnswersAsUnknown has it for
// the other routes); the agent gets nothing of hers.
func TestSec37A2AOtherTenantsRequestAndParentTellNothing(t *testing.T) {
	dir := t.TempDir()
	pol := filepath.Join(dir, "policy.cedar")
	if err := os.WriteFile(pol, []byte(`permit (principal, action, resource);`), 0o600); err != nil {
		t.Fatal(err)
	}
	ks, err := auth.OpenKeys(auth.KeysPath(dir))
	if err != nil {
		t.Fatal(err)
	}
	keys := map[string]string{}
	for name, spec := range map[string]auth.KeySpec{"alice@acme": {Principal: "alice", Tenant: "acme"}, "alice@globex": {Principal: "alice", Tenant: "globex"}} {
		if keys[name], _, err = ks.Create(spec); err != nil {
			t.Fatal(err)
		}
	}
	ag := &metaAgent{}
	up := executorUpstream(t, "keeps metadata", ag)
	cfg, err := config.Parse([]byte("data: "+dir+"\nauth: {keys: true}\npolicy: {path: "+pol+"}\nagents:\n  - {name: executor, url: "+up.URL+"}\n"), os.LookupEnv)
	if err != nil {
		t.Fatal(err)
	}
	base := serveTest(t, newTestGateway(t, cfg)).URL
	send := func(who string, meta map[string]any) (state, answer string) {
		t.Helper()
		msg := map[string]any{"messageId": "m-1", "role": "ROLE_USER", "parts": []any{map[string]any{"text": "work"}}}
		if meta != nil {
			msg["metadata"] = meta
		}
		b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "method": "SendMessage", "params": map[string]any{"message": msg}})
		_, out := do(t, "POST", base+"/a2a/executor", string(b), map[string]string{"Authorization": "Bearer " + keys[who], "Content-Type": "application/json", "A2A-Version": "1.0"})
		res, _ := out["result"].(map[string]any)
		task, _ := res["task"].(map[string]any)
		if task != nil {
			st, _ := task["status"].(map[string]any)
			// The caller's own message, as it sent it, is the history:
			// the answer is reach's status.
			raw, _ := json.Marshal(st["message"].(map[string]any)["parts"])
			return fmt.Sprint(st["state"]), string(raw)
		}
		e, _ := out["error"].(map[string]any)
		delete(e, "data") // a timestamp
		raw, _ := json.Marshal(e)
		return "error", string(raw)
	}
	if st, _ := send("alice@acme", nil); st != "TASK_STATE_COMPLETED" {
		t.Fatalf("alice@acme's message: %s", st)
	}
	ag.mu.Lock()
	given := ag.meta[0]
	ag.mu.Unlock()
	req, _ := given["reach/request"].(string)
	parent, _ := given["reach/parent"].(string)
	if req == "" || parent == "" {
		t.Fatalf("the agent was given %v", given)
	}
	absent := strings.Repeat("7", 16)
	st, got := send("alice@globex", map[string]any{"reach/parent": parent})
	wantSt, want := send("alice@globex", map[string]any{"reach/parent": absent})
	if st != wantSt || strings.ReplaceAll(got, parent, "ID") != strings.ReplaceAll(want, absent, "ID") || st == "TASK_STATE_COMPLETED" {
		t.Errorf("alice@globex naming acme's frame: %s %s; a frame no request has: %s %s", st, got, wantSt, want)
	}
	for name, meta := range map[string]map[string]any{"reach/request": {"reach/request": req}, "both": {"reach/request": req, "reach/parent": parent}} {
		st, got := send("alice@globex", meta)
		if st == "TASK_STATE_COMPLETED" || strings.Contains(got, "another principal") || strings.Contains(got, "not_your_request") || strings.Contains(got, "acme") {
			t.Errorf("alice@globex naming acme's %s: %s %s; want refused, saying nothing of it", name, st, got)
		}
	}
	ag.mu.Lock()
	defer ag.mu.Unlock()
	if len(ag.meta) != 1 {
		t.Errorf("the agent got %d messages; want alice@acme's alone", len(ag.meta))
	}
}

// frameAgent is an A2A agent written by hand: its stream for any message
// is the task working, a status update whose metadata is second (as the
// agent wrote it, valid or not), then the task completed.
func frameAgent(t *testing.T, second string) string {
	mux := http.NewServeMux()
	up := httptest.NewServer(mux)
	t.Cleanup(up.Close)
	card := &a2a.AgentCard{Name: "executor", Description: "raw", Version: "1",
		SupportedInterfaces: []*a2a.AgentInterface{a2a.NewAgentInterface(up.URL+"/", a2a.TransportProtocolJSONRPC)},
		Capabilities:        a2a.AgentCapabilities{Streaming: true}, DefaultInputModes: []string{"text"}, DefaultOutputModes: []string{"text"},
		Skills: []a2a.AgentSkill{{ID: "run", Name: "run", Description: "run", Tags: []string{"run"}}}}
	mux.Handle("GET "+a2asrv.WellKnownAgentCardPath, a2asrv.NewStaticAgentCardHandler(card))
	mux.HandleFunc("POST /", func(w http.ResponseWriter, r *http.Request) {
		var in struct {
			ID     any
			Method string
		}
		json.NewDecoder(r.Body).Decode(&in)
		id, _ := json.Marshal(in.ID)
		if in.Method != "SendStreamingMessage" {
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"error":{"code":-32001,"message":"task not found"}}`, id)
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprintf(w, "data: {\"jsonrpc\":\"2.0\",\"id\":%s,\"result\":{\"task\":{\"id\":\"t1\",\"contextId\":\"c1\",\"status\":{\"state\":\"TASK_STATE_WORKING\"}}}}\n\n", id)
		w.(http.Flusher).Flush()
		fmt.Fprintf(w, "data: {\"jsonrpc\":\"2.0\",\"id\":%s,\"result\":{\"statusUpdate\":{\"taskId\":\"t1\",\"contextId\":\"c1\",\"status\":{\"state\":\"TASK_STATE_WORKING\"},\"metadata\":%s}}}\n\n", id, second)
		w.(http.Flusher).Flush()
		fmt.Fprintf(w, "data: {\"jsonrpc\":\"2.0\",\"id\":%s,\"result\":{\"statusUpdate\":{\"taskId\":\"t1\",\"contextId\":\"c1\",\"status\":{\"state\":\"TASK_STATE_COMPLETED\",\"message\":{\"messageId\":\"x\",\"role\":\"ROLE_AGENT\",\"parts\":[{\"text\":\"done\"}]}}}}}\n\n", id)
	})
	return up.URL
}

// TestSec37A2AAgentDeepOrLongFrameFailsTheTask (holds): an agent whose
// stream sends an event nested past what a decoder takes, or one line of
// 30 MiB, has its task failed at reach at once, saying reach lost it and
// why (the agent's stream is not read on: what reach holds of it stays
// bounded), instead of the caller waiting on it.
func TestSec37A2AAgentDeepOrLongFrameFailsTheTask(t *testing.T) {
	for name, second := range map[string]string{"deep": `{"deep":` + strings.Repeat("[", 20000) + strings.Repeat("]", 20000) + `}`, "long": `{"long":"` + strings.Repeat("y", 30<<20) + `"}`} {
		t.Run(name, func(t *testing.T) {
			url := frameAgent(t, second)
			cfg, err := config.Parse([]byte("examples: true\nagents:\n  - {name: executor, url: "+url+"}\n"), os.LookupEnv)
			if err != nil {
				t.Fatal(err)
			}
			g, err := New(context.Background(), cfg, &Options{Ephemeral: true})
			if err != nil {
				t.Fatal(err)
			}
			defer g.Close()
			base := serveTest(t, g).URL
			c, err := a2aclient.NewFromEndpoints(t.Context(), []*a2a.AgentInterface{a2a.NewAgentInterface(base+"/a2a/executor", a2a.TransportProtocolJSONRPC)},
				a2aclient.WithJSONRPCTransport(http.DefaultClient))
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
			defer cancel()
			res, err := c.SendMessage(ctx, &a2a.SendMessageRequest{Message: a2a.NewMessage(a2a.MessageRoleUser, a2a.NewTextPart("x"))})
			if err != nil {
				t.Fatal(err)
			}
			tk, ok := res.(*a2a.Task)
			if !ok || tk.Status.State != a2a.TaskStateFailed || tk.Status.Message == nil || !strings.Contains(tk.Status.Message.Parts[0].Text(), "reach lost agent executor's task") {
				t.Fatalf("the task: %+v; want it failed, saying reach lost it", res)
			}
		})
	}
}
