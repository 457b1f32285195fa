package gateway

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentreach/reach/internal/mcpwire"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/santhosh-tekuri/jsonschema/v6"
)

// The MCP specification's JSON Schema of each protocol version, vendored in
// testdata/mcp-schema (see its README for the source and the license).

// mcpSchema is one protocol version's schema, compiled on demand.
type mcpSchema struct {
	version string
	c       *jsonschema.Compiler
	url     string
	defs    string // "$defs" or "definitions"
}

func loadMCPSchema(t *testing.T, version string) *mcpSchema {
	t.Helper()
	f, err := os.Open(filepath.Join("testdata", "mcp-schema", version, "schema.json"))
	if err != nil {
		t.Fatalf("the schema of %s: %v", version, err)
	}
	defer f.Close()
	doc, err := jsonschema.UnmarshalJSON(f)
	if err != nil {
		t.Fatal(err)
	}
	s := &mcpSchema{version: version, c: jsonschema.NewCompiler(), url: "urn:mcp:" + version + ":schema.json", defs: "definitions"}
	if m, ok := doc.(map[string]any); ok && m["$defs"] != nil {
		s.defs = "$defs"
	}
	if err := s.c.AddResource(s.url, doc); err != nil {
		t.Fatal(err)
	}
	return s
}

// check validates the JSON v against the schema's definition def.
func (s *mcpSchema) check(t *testing.T, what, def string, v []byte) {
	t.Helper()
	sch, err := s.c.Compile(s.url + "#/" + s.defs + "/" + def)
	if err != nil {
		t.Fatalf("%s: compiling %s: %v", s.version, def, err)
	}
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(v))
	if err != nil {
		t.Fatalf("%s %s: not JSON: %v: %s", s.version, what, err, v)
	}
	if err := sch.Validate(inst); err != nil {
		t.Errorf("%s %s is not a valid %s:\n%s\n%v", s.version, what, def, clip(string(v), 2000), err)
	}
}

// response checks a JSON-RPC response: the envelope, and its result
// against resultDef (or its error, when resultDef is "").
func (s *mcpSchema) response(t *testing.T, what, resultDef string, msg []byte) map[string]json.RawMessage {
	t.Helper()
	var env map[string]json.RawMessage
	if err := json.Unmarshal(msg, &env); err != nil {
		t.Fatalf("%s %s: %v: %s", s.version, what, err, msg)
	}
	resultEnv, errorEnv := "JSONRPCResultResponse", "JSONRPCErrorResponse"
	if s.version < "2025-11-25" {
		resultEnv, errorEnv = "JSONRPCResponse", "JSONRPCError"
	}
	if resultDef == "" {
		if env["error"] == nil {
			t.Errorf("%s %s: want an error, got %s", s.version, what, msg)
		}
		s.check(t, what, errorEnv, msg)
		return env
	}
	if env["result"] == nil {
		t.Errorf("%s %s: want a result, got %s", s.version, what, msg)
		return env
	}
	s.check(t, what, resultEnv, msg)
	s.check(t, what+" result", resultDef, env["result"])
	return env
}

// specClient posts JSON-RPC messages to /mcp as a client of one protocol
// version would: with a session (initialize first) before 2026-07-28,
// with the per-request _meta and headers of the sessionless protocol from
// then on.
type specClient struct {
	t       *testing.T
	url     string
	version string
	session string
	seq     int
}

func (c *specClient) stateless() bool { return c.version >= mcpwire.StatelessProtocol }

// post sends one message and returns the JSON-RPC response to it (read
// from an SSE answer too); nil for a notification.
func (c *specClient) post(method string, params map[string]any, notification bool) []byte {
	c.t.Helper()
	if params == nil {
		params = map[string]any{}
	}
	msg := map[string]any{"jsonrpc": "2.0", "method": method, "params": params}
	if !notification {
		c.seq++
		msg["id"] = c.seq
	}
	h := http.Header{"Content-Type": {"application/json"}, "Accept": {"application/json, text/event-stream"}}
	if c.stateless() {
		meta, _ := params["_meta"].(map[string]any)
		if meta == nil {
			meta = map[string]any{}
			params["_meta"] = meta
		}
		meta["io.modelcontextprotocol/protocolVersion"] = c.version
		meta["io.modelcontextprotocol/clientInfo"] = map[string]any{"name": "schema-check", "version": "1"}
		meta["io.modelcontextprotocol/clientCapabilities"] = map[string]any{}
		h.Set(mcpwire.HeaderProtocol, c.version)
		h.Set("Mcp-Method", method)
		if name, ok := params["name"].(string); ok {
			h.Set("Mcp-Name", name)
		}
	} else if method != "initialize" {
		h.Set(mcpwire.HeaderProtocol, c.version)
		h.Set(mcpwire.HeaderSession, c.session)
	}
	body, _ := json.Marshal(msg)
	req, _ := http.NewRequest(http.MethodPost, c.url, bytes.NewReader(body))
	req.Header = h
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		c.t.Fatal(err)
	}
	defer resp.Body.Close()
	if sid := resp.Header.Get(mcpwire.HeaderSession); sid != "" {
		c.session = sid
	}
	if notification {
		io.Copy(io.Discard, resp.Body)
		if resp.StatusCode != http.StatusAccepted {
			c.t.Fatalf("%s %s: status %d", c.version, method, resp.StatusCode)
		}
		return nil
	}
	if !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		b, _ := io.ReadAll(resp.Body)
		return b
	}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		d, ok := strings.CutPrefix(sc.Text(), "data:")
		if !ok {
			continue
		}
		var m struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
		}
		if json.Unmarshal([]byte(d), &m) == nil && m.Method == "" && string(m.ID) == fmt.Sprint(c.seq) {
			return []byte(strings.TrimSpace(d))
		}
	}
	c.t.Fatalf("%s %s: the stream ended without a response", c.version, method)
	return nil
}

// TestAnswersMatchTheSpecSchema: every answer reach gives an MCP client —
// initialize or discovery, tools/list, tools/call (on the fast path and
// through the SDK, a success, structured content, a tool's error, a
// refusal) and a protocol error — is valid, on every protocol version the
// gateway speaks, against that version's JSON Schema from the MCP
// specification. (2026-07-28 requires resultType on every result, a
// tools/call's too, which clients of that version check.)
func TestAnswersMatchTheSpecSchema(t *testing.T) {
	g, _, srv := upstreamGateway(t, probeConfig+"tools:\n  up__slow: {access: forbidden}\n")
	for _, version := range mcp.SupportedProtocolVersions() {
		t.Run(version, func(t *testing.T) {
			s := loadMCPSchema(t, version)
			c := &specClient{t: t, url: srv.URL + "/mcp", version: version}
			if c.stateless() {
				s.response(t, "server/discover", "DiscoverResult", c.post("server/discover", nil, false))
			} else {
				s.response(t, "initialize", "InitializeResult", c.post("initialize", map[string]any{
					"protocolVersion": version, "capabilities": map[string]any{},
					"clientInfo": map[string]any{"name": "schema-check", "version": "1"}}, false))
				c.post("notifications/initialized", nil, true)
				s.response(t, "ping", "EmptyResult", c.post("ping", nil, false))
			}
			s.response(t, "tools/list", "ListToolsResult", c.post("tools/list", nil, false))
			fast := g.front.FastCalls()
			calls := []struct {
				what    string
				name    string
				args    map[string]any
				isError bool
			}{
				{"a text result", "up__echo", map[string]any{"text": "hi"}, false},
				{"structured content", "up__add", map[string]any{"a": 2, "b": 3}, false},
				{"a tool's error", "up__fail", map[string]any{}, true},
				{"a refusal (forbidden)", "up__slow", map[string]any{"text": "x"}, true},
				{"a refusal (bad arguments)", "up__add", map[string]any{"a": "two"}, true},
			}
			for _, sdk := range []bool{false, true} {
				path := "fast path"
				if sdk {
					path = "SDK"
				}
				for _, call := range calls {
					params := map[string]any{"name": call.name, "arguments": call.args}
					if sdk { // a progress token sends the call to the SDK
						params["_meta"] = map[string]any{"progressToken": "p-" + call.name}
					}
					env := s.response(t, path+" tools/call, "+call.what, "CallToolResult", c.post("tools/call", params, false))
					var res struct {
						IsError    bool   `json:"isError"`
						ResultType string `json:"resultType"`
					}
					json.Unmarshal(env["result"], &res)
					if res.IsError != call.isError {
						t.Errorf("%s tools/call, %s: isError %v, want %v", path, call.what, res.IsError, call.isError)
					}
					if c.stateless() && res.ResultType != "complete" {
						t.Errorf("%s tools/call, %s: resultType %q, want complete", path, call.what, res.ResultType)
					}
				}
				s.response(t, path+" tools/call with a malformed reach _meta", "", c.post("tools/call", map[string]any{
					"name": "up__echo", "arguments": map[string]any{"text": "x"}, "_meta": map[string]any{"reach/request": 5}}, false))
			}
			if g.front.FastCalls() == fast {
				t.Errorf("no call took the fast path")
			}
		})
	}
}
