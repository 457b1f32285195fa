package gateway

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/agentreach/reach/internal/config"
	"github.com/agentreach/reach/internal/link"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string { l.mu.Lock(); defer l.mu.Unlock(); return l.b.String() }

// TestUpstreamSecretNeverShows: a secret from the secrets file, sent to an
// upstream in a header, reaches the upstream but never the model (results,
// errors), the logs or the graph, even when the upstream echoes it.
func TestUpstreamSecretNeverShows(t *testing.T) {
	const secret = "s3cr3t-t0ken-value-42"
	s := mcp.NewServer(&mcp.Implementation{Name: "leaky", Version: "1"}, nil)
	var got string
	mcp.AddTool(s, &mcp.Tool{Name: "whoami", Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}},
		func(_ context.Context, req *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
			got = req.Extra.Header.Get("Authorization")
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: `{"auth":"` + got + `"}`}}}, nil, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "leak_err", Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}},
		func(_ context.Context, req *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
			return nil, nil, errors.New("login failed with " + req.Extra.Header.Get("Authorization"))
		})
	up := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, nil))
	t.Cleanup(up.Close)
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "secrets.env"), []byte("LEAKY_TOKEN="+secret+"\n"), 0o600)
	cfgPath := filepath.Join(dir, "reach.yaml")
	os.WriteFile(cfgPath, []byte("secrets: {file: secrets.env}\nupstreams:\n  - name: leaky\n    url: "+up.URL+"\n    headers: {Authorization: 'Bearer ${LEAKY_TOKEN}'}\n"), 0o600)
	cfg, err := config.Load(cfgPath)
	if err != nil {
		t.Fatal(err)
	}
	logs := &lockedBuffer{}
	g, err := New(context.Background(), cfg, &Options{Logger: slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { g.Close() })
	srv := serveTest(t, g)
	cs := connectMCP(t, g, nil)
	var seen []string
	for _, tool := range []string{"leaky__whoami", "leaky__leak_err"} {
		res, text := callText(t, cs, tool, map[string]any{}, mcp.Meta{link.MetaRequest: "sec"})
		seen = append(seen, text)
		if tool == "leaky__whoami" && (res.IsError || !strings.Contains(text, "[REDACTED]")) {
			t.Errorf("%s = %q, want the token masked", tool, text)
		}
	}
	_, out := do(t, "POST", srv.URL+"/v1/calls", `{"request_id":"sec","tool_calls":[{"call_id":"x","tool":"leaky__whoami","arguments":{}}]}`, nil)
	b, _ := json.Marshal(out)
	seen = append(seen, string(b))
	if got != "Bearer "+secret {
		t.Fatalf("the upstream got Authorization %q, want the secret", got)
	}
	g.log.Info("a log line that mentions the token", "auth", "Bearer "+secret)
	for _, format := range []string{"json", "dot"} {
		rec := httptest.NewRecorder()
		g.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "http://127.0.0.1/v1/requests/sec/graph?format="+format, nil))
		seen = append(seen, rec.Body.String())
	}
	seen = append(seen, logs.String())
	for i, s := range seen {
		if strings.Contains(s, secret) {
			t.Errorf("surface %d shows the secret:\n%s", i, s)
		}
	}
	if !strings.Contains(logs.String(), "[REDACTED]") {
		t.Errorf("the log line was not masked:\n%s", logs.String())
	}
}

// TestVariableInsideAValueIsMasked: a ${VAR} among other text in a header
// or env value is a secret on its own too, as an upstream's error may quote
// it alone.
func TestVariableInsideAValueIsMasked(t *testing.T) {
	env := map[string]string{"DB_PASS": "hunter2-Pa55word", "TOK": "tok-0123456789", "MODEL_KEY": "sk-model-9876"}
	cfg, err := config.Parse([]byte(`upstreams:
  - name: db
    url: http://127.0.0.1:9/mcp
    headers: {X-Dsn: "postgres://app:${DB_PASS}@db:5432/app", X-Key: "key=${TOK}"}
model: {base_url: "http://127.0.0.1:9/v1", api_key: "${MODEL_KEY}"}
`), func(k string) (string, bool) { v, ok := env[k]; return v, ok })
	if err != nil {
		t.Fatal(err)
	}
	r, err := newRedactor(cfg)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{
		"FATAL: password authentication failed (password hunter2-Pa55word)",
		"upstream said: invalid key tok-0123456789",
		"dial postgres://app:hunter2-Pa55word@db:5432/app failed",
		"401 for sk-model-9876",
	} {
		if got := r.RedactString(s); strings.Contains(got, "hunter2") || strings.Contains(got, "tok-0123") || strings.Contains(got, "sk-model") {
			t.Errorf("%q -> %q, want the secret masked", s, got)
		}
	}
}

// TestUpstreamURLSecretMasked: a hosted MCP server's URL often carries its
// credential, in the query (?api_key=, ?key=) or as a path segment
// (.../s/<token>/mcp), and ${VAR} is not expanded there, so it is written
// out in the configuration. Every error of a dial quotes the URL: the model
// got it in a refusal (upstream_unavailable), /healthz (which asks no
// credentials) and the banner in the upstream's error, and the log.
func TestUpstreamURLSecretMasked(t *testing.T) {
	const pathTok, keyVal, apiKey = "ZapT0ken4f9a8b7c6d5e", "PLAINKEY987654", "Qk3y-0123456789"
	dir := t.TempDir()
	cfgPath := filepath.Join(dir, "reach.yaml")
	os.WriteFile(cfgPath, []byte("examples: true\nupstreams:\n  - name: zap\n    url: http://127.0.0.1:9/api/mcp/s/"+pathTok+"/mcp?api_key="+apiKey+"&key="+keyVal+"&format=json&v=2\n"), 0o600)
	cfg, err := config.Load(cfgPath)
	if err != nil {
		t.Fatal(err)
	}
	logs := &lockedBuffer{}
	g, err := New(context.Background(), cfg, &Options{Logger: slog.New(slog.NewTextHandler(logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { g.Close() })
	srv := serveTest(t, g)
	var seen []string
	resp, err := http.Get(srv.URL + "/healthz")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	seen = append(seen, string(b))
	_, out := do(t, "POST", srv.URL+"/v1/calls", `{"tool_calls":[{"call_id":"x","tool":"zap__anything","arguments":{}}]}`, nil)
	b, _ = json.Marshal(out)
	seen = append(seen, string(b))
	for _, u := range g.Upstreams() { // the banner's
		seen = append(seen, u.Error)
	}
	seen = append(seen, logs.String())
	for i, s := range seen {
		if !strings.Contains(s, "127.0.0.1:9") {
			t.Errorf("surface %d does not say which upstream failed:\n%s", i, s)
		}
		for _, secret := range []string{pathTok, keyVal, apiKey} {
			if strings.Contains(s, secret) {
				t.Errorf("surface %d shows %s:\n%s", i, secret, s)
			}
		}
	}
	// Words of the URL that are no credential stay words elsewhere.
	if got := g.redactor.RedactString("format json, v 2, api mcp"); got != "format json, v 2, api mcp" {
		t.Errorf("plain words masked: %q", got)
	}
	for v, want := range map[string]bool{
		pathTok: true, "Pl41nKeyValue7788": true, "550e8400-e29b-41d4-a716-446655440000": true, "4f9a8b7c6d5e1234abcd": true,
		"github-mcp-server-v2": false, "2024-11-05": false, "json": false, "streamable-http-endpoint": false,
	} {
		if tokenLike(v) != want {
			t.Errorf("tokenLike(%q) = %v, want %v", v, !want, want)
		}
	}
}

// TestUpstreamToolDefinitionSecretMasked: an upstream that writes a secret
// of reach's into a tool's definition (a connection string in its
// description, a key as a schema's default, in a title) puts it before
// every client's model on every listing: tools/list, GET /v1/tools and the
// UI's tool page showed it as it came.
func TestUpstreamToolDefinitionSecretMasked(t *testing.T) {
	const secret = "s3cr3t-t0ken-value-42"
	s := mcp.NewServer(&mcp.Implementation{Name: "chatty", Version: "1"}, nil)
	schema := map[string]any{"type": "object", "properties": map[string]any{
		"key": map[string]any{"type": "string", "default": secret, "description": "defaults to " + secret}}}
	s.AddTool(&mcp.Tool{Name: "query", Title: "Query as " + secret, Description: "Runs SQL on postgres://app:" + secret + "@db/app.",
		InputSchema: schema, Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true, Title: "as " + secret}},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "ok"}}}, nil
		})
	up := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, nil))
	t.Cleanup(up.Close)
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "secrets.env"), []byte("CHATTY_TOKEN="+secret+"\n"), 0o600)
	cfgPath := filepath.Join(dir, "reach.yaml")
	os.WriteFile(cfgPath, []byte("secrets: {file: secrets.env}\nupstreams:\n  - name: chatty\n    url: "+up.URL+"\n    headers: {Authorization: 'Bearer ${CHATTY_TOKEN}'}\n"), 0o600)
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
	cs := connectMCP(t, g, nil)
	list, err := cs.ListTools(t.Context(), nil)
	if err != nil {
		t.Fatal(err)
	}
	var seen []string
	for _, tool := range list.Tools {
		if tool.Name == "chatty__query" {
			b, _ := json.Marshal(tool)
			seen = append(seen, string(b))
		}
	}
	if len(seen) != 1 || !strings.Contains(seen[0], "[REDACTED]") {
		t.Fatalf("tools/list: %v, want chatty__query with the secret masked", seen)
	}
	for _, path := range []string{"/v1/tools", "/ui/tools"} {
		resp, err := http.Get(srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		seen = append(seen, string(b))
	}
	for i, s := range seen {
		if strings.Contains(s, secret) {
			t.Errorf("surface %d shows the secret:\n%s", i, s)
		}
	}
	if res, text := callText(t, cs, "chatty__query", map[string]any{}, nil); res.IsError || text != "ok" {
		t.Errorf("the tool is still called as it is: %v %q", res.IsError, text)
	}
}

// TestUpstreamResourceAndPromptSecretMasked: resources, prompts and
// completions pass through unguarded, but what they carry reaches the
// client's model as a tool's result does: a registered secret in a
// resource's text, a prompt's messages, their listings or an upstream's
// error was passed on as it came.
func TestUpstreamResourceAndPromptSecretMasked(t *testing.T) {
	const secret = "s3cr3t-t0ken-value-42"
	s := mcp.NewServer(&mcp.Implementation{Name: "chatty", Version: "1"}, nil)
	s.AddResource(&mcp.Resource{URI: "file:///config.txt", Name: "config", Description: "the config, key " + secret},
		func(context.Context, *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
			return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: "file:///config.txt", Text: "dsn=postgres://app:" + secret + "@db/app"}}}, nil
		})
	s.AddResource(&mcp.Resource{URI: "file:///broken.txt", Name: "broken"},
		func(context.Context, *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
			return nil, errors.New("could not log in with " + secret)
		})
	s.AddPrompt(&mcp.Prompt{Name: "setup", Description: "Sets up with " + secret},
		func(context.Context, *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
			return &mcp.GetPromptResult{Messages: []*mcp.PromptMessage{{Role: "user", Content: &mcp.TextContent{Text: "Use the key " + secret + " to sign in."}}}}, nil
		})
	up := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, nil))
	t.Cleanup(up.Close)
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "secrets.env"), []byte("CHATTY_TOKEN="+secret+"\n"), 0o600)
	cfgPath := filepath.Join(dir, "reach.yaml")
	os.WriteFile(cfgPath, []byte("secrets: {file: secrets.env}\nupstreams:\n  - name: chatty\n    url: "+up.URL+"\n    headers: {Authorization: 'Bearer ${CHATTY_TOKEN}'}\n"), 0o600)
	cfg, err := config.Load(cfgPath)
	if err != nil {
		t.Fatal(err)
	}
	g, err := New(context.Background(), cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { g.Close() })
	cs := connectMCP(t, g, nil)
	ctx := t.Context()
	var seen []any
	add := func(v any, err error) {
		if err != nil {
			seen = append(seen, err.Error())
			return
		}
		seen = append(seen, v)
	}
	add(cs.ListResources(ctx, nil))
	add(cs.ListPrompts(ctx, nil))
	add(cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "file:///config.txt"}))
	_, err = cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "file:///broken.txt"})
	if err == nil {
		t.Fatal("reading the broken resource succeeded")
	}
	add(nil, err)
	add(cs.GetPrompt(ctx, &mcp.GetPromptParams{Name: "chatty__setup"}))
	masked := 0
	for i, v := range seen {
		b, _ := json.Marshal(v)
		if strings.Contains(string(b), secret) {
			t.Errorf("surface %d shows the secret:\n%s", i, b)
		}
		if strings.Contains(string(b), "[REDACTED]") {
			masked++
		}
	}
	if masked != len(seen) {
		t.Errorf("%d of %d surfaces show the mask: %v", masked, len(seen), seen)
	}
}

// TestUpstreamURLNameNotMasked: a segment of an upstream's URL that names
// something (a model served behind it, words and a version joined by
// dashes) is no credential: registered as one, it was masked in every
// result, log line and view that named the model. A token with dashes is
// still one.
func TestUpstreamURLNameNotMasked(t *testing.T) {
	const tok = "sk-ant-api03-Xk2pQr9ZtLm8Nw4vBc"
	dir := t.TempDir()
	cfgPath := filepath.Join(dir, "reach.yaml")
	os.WriteFile(cfgPath, []byte("examples: true\nupstreams:\n"+
		"  - name: llama\n    url: http://127.0.0.1:9/models/Meta-Llama-3.1-8B-Instruct/mcp\n"+
		"  - name: qwen\n    url: http://127.0.0.1:9/serve/Qwen2.5-Coder-32B-Instruct/mcp\n"+
		"  - name: zap\n    url: http://127.0.0.1:9/s/"+tok+"/mcp\n"), 0o600)
	cfg, err := config.Load(cfgPath)
	if err != nil {
		t.Fatal(err)
	}
	r, err := newRedactor(cfg)
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"Meta-Llama-3.1-8B-Instruct", "Qwen2.5-Coder-32B-Instruct"} {
		if got := r.RedactString("answered by " + name); got != "answered by "+name {
			t.Errorf("a model's name masked: %q", got)
		}
	}
	if got := r.RedactString("dial /s/" + tok + "/mcp"); strings.Contains(got, tok) {
		t.Errorf("a token with dashes shown: %q", got)
	}
}

// TestLogHidesURLQueries: the log quotes an upstream's URL with its query
// as ?…, as the banner does, whatever its parameters' names or looks: a
// ?code=abc12 is neither a secret name nor token-like, and was logged as
// it was.
func TestLogHidesURLQueries(t *testing.T) {
	cfg, err := config.Parse([]byte("examples: true\nupstreams:\n  - name: cb\n    url: http://127.0.0.1:9/mcp?code=abc12&state=q7\n"), os.LookupEnv)
	if err != nil {
		t.Fatal(err)
	}
	cfg.Data = t.TempDir()
	logs := &lockedBuffer{}
	g, err := New(context.Background(), cfg, &Options{Logger: slog.New(slog.NewTextHandler(logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { g.Close() })
	out := logs.String()
	if !strings.Contains(out, "127.0.0.1:9/mcp?…") {
		t.Fatalf("the log does not quote the upstream's URL with its query hidden:\n%s", out)
	}
	if strings.Contains(out, "abc12") || strings.Contains(out, "q7") {
		t.Errorf("the log shows the URL's query:\n%s", out)
	}
}
