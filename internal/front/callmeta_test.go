package front

import (
	"bytes"
	"encoding/json"
	"net/http"
	"reflect"
	"testing"

	"github.com/agentreach/reach/internal/link"
	"github.com/agentreach/reach/internal/mcpwire"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// mapReading is what the fast lane read of a tools/call's _meta when it
// decoded it into a map (mcp.Meta), as it did before callMeta: the oracle
// of FuzzCallMeta.
type mapReading struct {
	badMeta, progress, protocol, capabilities bool
	name, version                             string
	link                                      link.Meta
	linkErr                                   string
}

func readMap(value []byte) (r mapReading) {
	var meta mcp.Meta
	if string(value) != "null" && string(value) != "{}" {
		m := mcp.Meta{}
		if err := json.Unmarshal(value, &m); err != nil {
			r.badMeta = true
			return r
		}
		meta = m
	}
	r.progress = meta["progressToken"] != nil
	r.protocol = meta[metaProtocolVersion] == mcpwire.StatelessProtocol
	r.capabilities = meta[metaClientCapabilities] != nil
	if m, ok := meta[metaClientInfo].(map[string]any); ok {
		r.name, _ = m["name"].(string)
		r.version, _ = m["version"].(string)
	}
	var err error
	if r.link, err = link.FromMeta(meta); err != nil {
		r.linkErr = err.Error()
	}
	return r
}

func readTyped(params []byte) (r mapReading) {
	var p mcpwire.CallParams
	if err := mcpwire.ParseCallParams(params, &p); err != nil {
		r.badMeta = true
		return r
	}
	var m callMeta
	m.read(p.RawMeta)
	r.progress, r.protocol, r.capabilities = m.progress, stringIs(m.protocol, mcpwire.StatelessProtocol), m.capabilities
	r.name, r.version = m.client()
	tc := toolCall{params: p, meta: m.link}
	var err error
	if r.link, err = tc.linkMeta(); err != nil {
		r.linkErr = err.Error()
	}
	return r
}

// FuzzCallMeta: the fast lane's reading of a tools/call's _meta from its
// JSON (callMeta, link.FromRawMeta) is the reading of the map encoding/json
// makes of it (the oracle, readMap), on any _meta: the same refusal of one
// that is not an object, the same progress token, protocol, capabilities
// and client, the same link.Meta and the same error. Keys spelled with
// escapes, given twice, values of other types, bytes that are not UTF-8:
// as the map reads them.
func FuzzCallMeta(f *testing.F) {
	for _, s := range []string{
		`null`, `{}`, `[1]`, `"s"`, `1`, `true`,
		`{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{},"io.modelcontextprotocol/clientInfo":{"name":"a","version":"1"}}`,
		`{"io.modelcontextprotocol\/protocolVersion":"2026-07-2\u0038","io.modelcontextprotocol/clientCapabilities":null}`,
		`{"progressToken":null}`, `{"progressToken":0}`, `{"progressToken":1,"progressToken":null}`,
		`{"io.modelcontextprotocol/clientInfo":{"name":3,"version":"v","name":"n\u00e9"}}`,
		`{"io.modelcontextprotocol/clientInfo":[1]}`, `{"io.modelcontextprotocol/clientInfo":"x"}`,
		`{"reach/request":"r1","reach/why":"w","reach/idempotency_key":"k","reach/call_id":"c","reach/scene":"chitchat"}`,
		`{"reach/request":1}`, `{"reach/why":{}}`, `{"reach/scene":"a b"}`, `{"reach/request":null,"reach/request":"x"}`,
		`{"reach/parent":"0000000000000001"}`, `{"reach/parent":"zz"}`, `{"reach/parent":"0000000000000000"}`,
		`{"reach/budget":"big"}`, `{"reach/budget":{"turns":3,"wall":"1m"}}`, `{"reach/budget":{"turns":-1}}`,
		`{"reach/budget":{"x":1}}`, `{"reach/budget":7}`, `{"reach/budget":null}`, `{"reach/budget":{"tokens":9007199254740993}}`,
		`{"traceparent":"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"}`, `{"traceparent":5}`,
		`{"baggage":"reach.request=abc,reach.budget=small"}`, `{"baggage":"reach.request=%zz"}`,
		"{\"reach/request\":\"a\xffb\"}", "{\"reach/req\xffuest\":\"x\"}", `{"reach\u002frequest":"esc"}`,
		`{"reach/request":"` + string(make([]byte, 300)) + `"}`,
		`{"reach/priority":1}`, `{"reach/priority":"-2"}`, `{"reach/priority":1.5}`, `{"reach/priority":"x\u00e9"}`,
		`{"reach/priority": { "b":1, "a":[ 2 ] }}`, `{"reach/priority":[1]}`, `{"reach/priority":false}`, `{"reach/priority":1e-400}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, meta []byte) {
		params := append(append([]byte(`{"name":"t","_meta":`), meta...), '}')
		if !json.Valid(params) || !json.Valid(meta) { // meta one value, not `{},"k":1` that ends it and adds a member
			return
		}
		value := bytes.TrimSpace(meta) // the _meta as ParseCallParams finds it
		want, got := readMap(value), readTyped(params)
		if !reflect.DeepEqual(want, got) {
			t.Errorf("_meta %q:\n got %+v\nwant %+v", meta, got, want)
		}
	})
}

// TestStatelessCallReadsMetaTyped: a sessionless call is taken by the fast
// lane, or left to the SDK, by its _meta's keys as they read, whatever
// their spelling: escaped keys and values read as the map reads them, a
// progress token or a malformed reach key leaves it to the SDK.
func TestStatelessCallReadsMetaTyped(t *testing.T) {
	h := http.Header{}
	h.Set(mcpwire.HeaderProtocol, mcpwire.StatelessProtocol)
	h.Set("Mcp-Name", "echo")
	for _, c := range []struct {
		meta string
		fast bool
	}{
		{`{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}`, true},
		{`{"io.modelcontextprotocol\/protocolVersion":"2026-07-2\u0038","io.modelcontextprotocol/clientCapabilities":{"a":1}}`, true},
		{`{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}`, false},
		{`{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":null}`, false},
		{`{"io.modelcontextprotocol/protocolVersion":"2025-11-25","io.modelcontextprotocol/clientCapabilities":{}}`, false},
		{`{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{},"progressToken":"p"}`, false},
		{`{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{},"progressToken":null}`, true},
		{`{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{},"reach/request":1}`, false},
		{`{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{},"reach\/request":"r"}`, true},
	} {
		msg := mcpwire.Message{Method: "tools/call", ID: json.RawMessage(`1`),
			Params: json.RawMessage(`{"name":"echo","arguments":{},"_meta":` + c.meta + `}`)}
		var p mcpwire.CallParams
		var m callMeta
		if got := statelessCall(h, &msg, &p, &m, nil); got != c.fast {
			t.Errorf("_meta %s: taken by the fast lane %v, want %v", c.meta, got, c.fast)
		}
	}
}
