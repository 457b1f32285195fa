package gateway

import (
	"context"
	"encoding/json"
	"fmt"
	"html"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentreach/reach/internal/audit"
	"github.com/agentreach/reach/internal/config"
	"github.com/agentreach/reach/internal/front"
	"github.com/agentreach/reach/internal/link"
	"github.com/agentreach/reach/internal/redact"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// getBody answers a GET on g's handler.
func getBody(t *testing.T, g *Gateway, path string) string {
	t.Helper()
	rec := httptest.NewRecorder()
	g.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "http://127.0.0.1"+path, nil))
	if rec.Code != http.StatusOK {
		t.Fatalf("GET %s: %d %s", path, rec.Code, rec.Body)
	}
	return rec.Body.String()
}

// shown returns a surface's text with its encoding undone (HTML and SVG
// entities, DOT's and JSON's escaped quotes), so that one masked form can
// be looked for in all of them.
func shown(s string) string {
	s = html.UnescapeString(s)
	for range 2 {
		s = strings.ReplaceAll(s, `\"`, `"`)
	}
	return s
}

// auditOf returns the stored events of a request, as JSON.
func auditOf(t *testing.T, g *Gateway, request string) string {
	t.Helper()
	if err := g.audit.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	evs, err := audit.Show(context.Background(), g.store, request)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(evs)
	return string(b)
}

// TestSecretMaskedAlikeEverywhere: a configured secret, under names such
// as token_type, x-api-token and accessToken, echoed by an upstream in its
// result and by a model in its answer, is masked the same way in what the
// model gets (the MCP result, the model proxy's answer), in the audit log,
// in the request API, in the graph (JSON, DOT, SVG) and in the UI. So are
// a secret split across two content blocks of one result (D7) and the
// model's key echoed into the summary of its frame (D1).
func TestSecretMaskedAlikeEverywhere(t *testing.T) {
	const tok = "sk-fx-SECRETVALUE-1234567890" // the upstream's
	const modelKey = "sk-model-KEY-0123456789"
	names := []string{"token_type", "x-api-token", "accessToken"}

	s := mcp.NewServer(&mcp.Implementation{Name: "up", Version: "1"}, nil)
	mcp.AddTool(s, &mcp.Tool{Name: "creds", Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}},
		func(_ context.Context, req *mcp.CallToolRequest, in map[string]any) (*mcp.CallToolResult, any, error) {
			secret := strings.TrimPrefix(req.Extra.Header.Get("Authorization"), "Bearer ")
			out := map[string]any{}
			for k := range in {
				out[k] = secret // the upstream echoes its credential under the names it was asked for
			}
			return nil, out, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "split", Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}},
		func(_ context.Context, req *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
			a := req.Extra.Header.Get("Authorization")
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: a[:17]}, &mcp.TextContent{Text: a[17:]}}}, nil, nil
		})
	up := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, nil))
	t.Cleanup(up.Close)
	model := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		key := strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")
		content := fmt.Sprintf(`you sent {"token_type":%q,"x-api-token":%q,"accessToken":%q}`, key, key, key)
		json.NewEncoder(w).Encode(map[string]any{"choices": []any{map[string]any{"index": 0,
			"message": map[string]any{"role": "assistant", "content": content}, "finish_reason": "stop"}},
			"usage": map[string]any{"prompt_tokens": 5, "completion_tokens": 5}})
	}))
	t.Cleanup(model.Close)
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "secrets.env"), []byte("UP_TOKEN="+tok+"\nMODEL_KEY="+modelKey+"\n"), 0o600)
	cfgPath := filepath.Join(dir, "reach.yaml")
	os.WriteFile(cfgPath, []byte("secrets: {file: secrets.env}\ndata: data\n"+
		"model: {base_url: '"+model.URL+"/v1', api_key: '${MODEL_KEY}', name: fake}\n"+
		"upstreams:\n  - name: up\n    url: "+up.URL+"\n    headers: {Authorization: 'Bearer ${UP_TOKEN}'}\n"), 0o600)
	cfg, err := config.Load(cfgPath)
	if err != nil {
		t.Fatal(err)
	}
	g, err := New(context.Background(), cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { g.Close() })
	srv := serveTest(t, g)

	// The model, through the proxy.
	resp, answer := postChat(t, srv.URL, `{"messages":[{"role":"user","content":"hi"}]}`, map[string]string{link.HeaderRequest: "alike"})
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("the proxy answered %d %s", resp.StatusCode, answer)
	}
	// The model's tools, through MCP: one name at a time, so that each
	// fits in what the graph's drawings show of the arguments.
	cs := connectMCP(t, g, nil)
	surfaces := map[string]string{"model proxy answer": string(answer)}
	for _, name := range names {
		res, text := callText(t, cs, "up__creds", map[string]any{name: tok}, mcp.Meta{link.MetaRequest: "alike"})
		b, _ := json.Marshal(res)
		surfaces["MCP result for "+name] = string(b) + text
	}
	res, split := callText(t, cs, "up__split", map[string]any{}, mcp.Meta{link.MetaRequest: "alike"})
	// The header's value is a secret whole, as is its token: the first
	// block begins it, so the first block holds the mask (the client gets
	// the upstream's two blocks, the second emptied: keep.go).
	if res.IsError || split != "[REDACTED]" || len(res.Content) != 2 {
		t.Errorf("the split result reached the model as %q, want the credential masked in its first block", split)
	}
	splitJSON, _ := json.Marshal(res)
	surfaces["MCP result of split"] = string(splitJSON)
	surfaces["request"] = getBody(t, g, "/v1/requests/alike")
	for _, f := range []string{"json", "dot", "svg"} {
		surfaces["graph "+f] = getBody(t, g, "/v1/requests/alike/graph?format="+f)
	}
	surfaces["UI"] = getBody(t, g, "/ui/requests/alike")
	surfaces["audit log"] = auditOf(t, g, "alike")

	for where, s := range surfaces {
		for _, leak := range []string{tok, modelKey, "ETVALUE-1234567890", "sk-fx-SECR", "KEY-0123456789"} {
			if strings.Contains(s, leak) {
				t.Errorf("%s shows %q:\n%s", where, leak, s)
			}
		}
	}
	// Every surface that shows a value under one of the names shows the
	// same masked form; where the model's text is shown, so is its mask.
	wants := map[string][]string{
		"model proxy answer": {"token_type", "x-api-token", "accessToken"},
		"request":            {"token_type", "x-api-token", "accessToken"},
		"graph json":         {"token_type", "x-api-token", "accessToken"},
		"graph dot":          {"token_type", "x-api-token", "accessToken"},
		"graph svg":          {"token_type", "x-api-token", "accessToken"},
		"UI":                 {"token_type", "x-api-token", "accessToken"},
		"audit log":          {"token_type", "x-api-token", "accessToken"},
	}
	for _, name := range names {
		wants["MCP result for "+name] = []string{name}
	}
	for where, ns := range wants {
		s := shown(surfaces[where])
		for _, n := range ns {
			if m := `"` + n + `":"` + redact.Mask + `"`; !strings.Contains(s, m) {
				t.Errorf("%s does not show %s:\n%s", where, m, s)
			}
		}
	}
	// The model frame's summary is what the model said, masked (D1).
	for _, where := range []string{"request", "graph json", "UI", "audit log"} {
		if !strings.Contains(shown(surfaces[where]), `you sent {"token_type":"[REDACTED]"`) {
			t.Errorf("%s does not show the model's text masked:\n%s", where, surfaces[where])
		}
	}
}

// TestArrayUnderSecretNameInText (D5): a secret written as
// "password":["value"] inside a text argument is masked whole, in the
// audit log as for the model, and the text around it stays as it was.
func TestArrayUnderSecretNameInText(t *testing.T) {
	g := newTestGateway(t, nil) // zero config: the built-in tools, a data folder
	srv := serveTest(t, g)
	code, out := do(t, "POST", srv.URL+"/v1/calls", `{"request_id":"d5","tool_calls":[{"call_id":"c","tool":"search_kb",`+
		`"arguments":{"query":"cfg {\"password\":[\"hunter2hunter2\"],\"nested\":{\"session\":{\"id\":\"s-77aa\"}},\"user\":\"bob\"}"}}]}`, nil)
	if code != http.StatusOK {
		t.Fatalf("POST /v1/calls: %d %v", code, out)
	}
	stored := auditOf(t, g, "d5")
	var evs []map[string]any
	json.Unmarshal([]byte(stored), &evs)
	var args string
	for _, e := range evs {
		if e["name"] == "search_kb" {
			b, _ := json.Marshal(e["args"])
			args = string(b)
		}
	}
	var parsed map[string]string
	if err := json.Unmarshal([]byte(args), &parsed); err != nil {
		t.Fatalf("stored args %s: %v", args, err)
	}
	if want := `cfg {"password":"[REDACTED]","nested":{"session":"[REDACTED]"},"user":"bob"}`; parsed["query"] != want {
		t.Errorf("the audit log stored the query as %q, want %q", parsed["query"], want)
	}
	for _, s := range []string{stored, getBody(t, g, "/v1/requests/d5/graph?format=json"), getBody(t, g, "/ui/requests/d5")} {
		if strings.Contains(s, "hunter2") || strings.Contains(s, "s-77aa") {
			t.Errorf("a secret is shown:\n%s", s)
		}
	}
}

// TestSamplingRequestMasked: an upstream's sampling request that quotes
// its own credential, split across two messages, reaches the client's
// model masked; so do its system prompt and a log message it sends.
func TestSamplingRequestMasked(t *testing.T) {
	const tok = "sk-fx-SECRETVALUE-1234567890"
	s := mcp.NewServer(&mcp.Implementation{Name: "up", Version: "1"}, nil)
	mcp.AddTool(s, &mcp.Tool{Name: "ask", Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}},
		func(ctx context.Context, req *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
			a := req.Extra.Header.Get("Authorization")
			req.Session.Log(ctx, &mcp.LoggingMessageParams{Level: "info", Data: map[string]any{"msg": "calling with " + a, "api_key": "k-998877"}})
			res, err := req.Session.CreateMessage(ctx, &mcp.CreateMessageParams{MaxTokens: 10, SystemPrompt: "you hold " + a,
				Messages: []*mcp.SamplingMessage{{Role: "user", Content: &mcp.TextContent{Text: a[:17]}}, {Role: "user", Content: &mcp.TextContent{Text: a[17:]}}}})
			if err != nil {
				return nil, nil, err
			}
			return &mcp.CallToolResult{Content: []mcp.Content{res.Content}}, nil, nil
		})
	up := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, nil))
	t.Cleanup(up.Close)
	cfg, err := config.Parse([]byte("upstreams:\n  - name: up\n    url: "+up.URL+"\n    headers: {Authorization: 'Bearer "+tok+"'}\n"), os.LookupEnv)
	if err != nil {
		t.Fatal(err)
	}
	g := newTestGateway(t, cfg)
	srv := serveTest(t, g)
	var seen []string
	logs := make(chan string, 4)
	client := mcp.NewClient(&mcp.Implementation{Name: "agent", Version: "1"}, &mcp.ClientOptions{
		CreateMessageHandler: func(_ context.Context, req *mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
			b, _ := json.Marshal(req.Params)
			seen = append(seen, string(b))
			return &mcp.CreateMessageResult{Model: "m", Role: "assistant", Content: &mcp.TextContent{Text: "ok"}}, nil
		},
		LoggingMessageHandler: func(_ context.Context, req *mcp.LoggingMessageRequest) {
			b, _ := json.Marshal(req.Params)
			logs <- string(b)
		},
	})
	cs, err := client.Connect(t.Context(), &mcp.StreamableClientTransport{Endpoint: srv.URL + "/mcp"}, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	if err := cs.SetLoggingLevel(context.Background(), &mcp.SetLoggingLevelParams{Level: "debug"}); err != nil {
		t.Fatal(err)
	}
	if res, text := callText(t, cs, "up__ask", map[string]any{}, nil); res.IsError {
		t.Fatalf("ask: %s", text)
	}
	if len(seen) != 1 {
		t.Fatalf("the client got %d sampling requests", len(seen))
	}
	select { // passed on before the result, but handled by the client in a goroutine of its own
	case l := <-logs:
		seen = append(seen, l)
	case <-time.After(10 * time.Second):
		t.Error("the upstream's log message did not reach the client")
	}
	for _, s := range seen {
		if strings.Contains(s, "ETVALUE-1234567890") || strings.Contains(s, "sk-fx-SECR") || strings.Contains(s, "k-998877") {
			t.Errorf("the client got a secret: %s", s)
		}
		if !strings.Contains(s, redact.Mask) {
			t.Errorf("nothing was masked in %s", s)
		}
	}
}

// TestLogMasksSecretNames: a log attribute with a secret name is masked
// whole, save a count of tokens; the texts of the others are masked too.
func TestLogMasksSecretNames(t *testing.T) {
	red, err := redact.New(&redact.Options{Secrets: []string{"sk-log-0123456789"}})
	if err != nil {
		t.Fatal(err)
	}
	var buf lockedBuffer
	log := slog.New(redactHandler{slog.NewTextHandler(&buf, nil), red})
	log.Info("called with sk-log-0123456789", "session_id", "sess-4455", "password", 123456, "tokens", 812,
		"note", "password=hunter2", slog.Group("g", "api_key", "k-778899"))
	out := buf.String()
	for _, leak := range []string{"sk-log-0123456789", "sess-4455", "123456", "hunter2", "k-778899"} {
		if strings.Contains(out, leak) {
			t.Errorf("the log shows %q: %s", leak, out)
		}
	}
	if !strings.Contains(out, "tokens=812") {
		t.Errorf("a count of tokens was masked: %s", out)
	}
}

// TestCheckpointArgumentsMasked: a write's checkpoint keeps its arguments
// masked as the audit log does (docs/STATE.md: "its redacted arguments"):
// a secret written inside a text argument reaches neither.
func TestCheckpointArgumentsMasked(t *testing.T) {
	dir := t.TempDir()
	g := newTestGateway(t, &config.Config{Data: dir})
	srv := serveTest(t, g)
	code, out := do(t, "POST", srv.URL+"/v1/calls", `{"request_id":"cp1","tool_calls":[{"call_id":"c","tool":"refund_order",`+
		`"arguments":{"order_id":"1001","amount":5,"reason":"cfg {\"password\":\"hunter2hunter2\"}"}}]}`, nil)
	if code != http.StatusOK {
		t.Fatalf("POST /v1/calls: %d %v", code, out)
	}
	frames, err := g.store.RequestFrames(t.Context(), "cp1")
	if err != nil {
		t.Fatal(err)
	}
	var args string
	for _, f := range frames {
		if f.Name == "refund_order" {
			args = string(f.Args)
		}
	}
	if want := `{"amount":5,"order_id":"1001","reason":"cfg {\"password\":\"[REDACTED]\"}"}`; args != want {
		t.Errorf("the checkpoint stored the arguments %s, want %s", args, want)
	}
	if stored := auditOf(t, g, "cp1"); !strings.Contains(shown(stored), `"reason":"cfg {"password":"[REDACTED]"}"`) {
		t.Errorf("the audit log does not hold the reason masked:\n%s", stored)
	}
}

// TestLogSessionIDOneRule: a session id in the log appears one way whoever
// logs it, the SDK (through front's logger) or anything else: its short
// hash (front.SessionRefOf), neither the id nor [REDACTED].
func TestLogSessionIDOneRule(t *testing.T) {
	red, err := redact.New(&redact.Options{})
	if err != nil {
		t.Fatal(err)
	}
	var buf lockedBuffer
	log := slog.New(redactHandler{slog.NewTextHandler(&buf, nil), red})
	const id = "JDW6HKQFVNLGJTEWXSBBSPET7X"
	log.Info("a", "session_id", id)
	log.Info("b", "session_id", front.SessionRefOf(id))
	log.Info("c", "sessionId", id)
	log.Info("d", "session_id", "") // a stdio session has no id
	out := buf.String()
	want := string(front.SessionRefOf(id))
	if strings.Count(out, "session_id="+want) != 2 || strings.Count(out, "sessionId="+want) != 1 || strings.Contains(out, id) || strings.Contains(out, redact.Mask) {
		t.Errorf("the session id is not its hash %s in each line:\n%s", want, out)
	}
	if strings.Contains(out, "msg=d session_id") {
		t.Errorf("an empty session id is shown:\n%s", out)
	}
}
