package upstream

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"sync/atomic"
	"testing"

	"github.com/agentreach/reach/internal/config"
)

// answersUpstream is an MCP upstream over Streamable HTTP whose answers to
// the listings and to a call are what the fuzzer gives.
type answersUpstream struct{ tools, resources, prompts, result atomic.Value }

func (a *answersUpstream) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		w.WriteHeader(http.StatusMethodNotAllowed)
		return
	}
	b, _ := io.ReadAll(r.Body)
	var m struct {
		ID     json.RawMessage `json:"id"`
		Method string          `json:"method"`
	}
	json.Unmarshal(b, &m)
	answer := func(v *atomic.Value) {
		result := `{"protocolVersion":"2025-06-18","capabilities":{"tools":{},"resources":{},"prompts":{}},"serverInfo":{"name":"f","version":"1"}}`
		if v != nil {
			result = v.Load().(string)
		}
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Mcp-Session-Id", "s1")
		fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"result":%s}`, m.ID, result)
	}
	switch m.Method {
	case "initialize":
		answer(nil)
	case "tools/list":
		answer(&a.tools)
	case "resources/list", "resources/templates/list", "resources/read":
		answer(&a.resources)
	case "prompts/list", "prompts/get":
		answer(&a.prompts)
	case "tools/call":
		answer(&a.result)
	default:
		w.WriteHeader(http.StatusAccepted)
	}
}

// FuzzUpstreamAnswers: whatever an upstream answers to the listings of its
// tools, resources, templates and prompts, and to a call, the pool reads it
// (and mirrors its resources and prompts) without a panic, offers only
// tools with a name, and answers the call. A null in a listing crashed the
// gateway.
func FuzzUpstreamAnswers(f *testing.F) {
	f.Add(`{"tools":[null,{"name":"ok","inputSchema":{"type":"object"}}]}`,
		`{"resources":[null,{"uri":"file:///a","name":"a"}],"resourceTemplates":[null,{"uriTemplate":"file:///{x}","name":"t"}],"contents":[null]}`,
		`{"prompts":[null,{"name":"p","arguments":[null]}],"messages":[null]}`,
		`{"content":[null,{"type":"text","text":"done"}]}`)
	f.Add(`{"tools":[{"name":"a","inputSchema":null,"annotations":null,"icons":[null]}],"nextCursor":"c"}`,
		`{"resources":null,"resourceTemplates":[{"uriTemplate":null}]}`, `{"prompts":[{"name":null}]}`, `null`)
	f.Add(`null`, `[]`, `{}`, `{"content":null,"structuredContent":null,"isError":null}`)
	a := &answersUpstream{}
	for _, v := range []*atomic.Value{&a.tools, &a.resources, &a.prompts, &a.result} {
		v.Store("{}")
	}
	srv := httptest.NewServer(a)
	f.Cleanup(srv.Close)
	cfg, err := config.Parse([]byte("upstreams:\n  - name: f\n    url: "+srv.URL+"\n    timeout: 5s\n"), os.LookupEnv)
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, tools, resources, prompts, result string) {
		for v, s := range map[*atomic.Value]string{&a.tools: tools, &a.resources: resources, &a.prompts: prompts, &a.result: result} {
			if !json.Valid([]byte(s)) {
				s = "{}"
			}
			v.Store(s)
		}
		t.Cleanup(srv.CloseClientConnections) // after the pool's close: each input's connections go with it
		p := newPool(t, cfg)
		for i, rt := range p.Tools() {
			if rt.Name == "" {
				t.Fatalf("a tool without a name is offered: %+v", rt)
			}
			if i == 0 {
				rt.Func(t.Context(), json.RawMessage(`{}`))
			}
		}
	})
}
