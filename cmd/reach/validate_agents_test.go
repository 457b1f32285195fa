package main

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// validate fetches each A2A agent's card: an agent that does not answer is
// a warning, a card reach cannot use is an error; --offline fetches none.
func TestValidateAgents(t *testing.T) {
	good := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, `{"name":"exec","description":"d","version":"1","capabilities":{"streaming":true},"defaultInputModes":["text"],"defaultOutputModes":["text"],"skills":[],`+
			`"supportedInterfaces":[{"url":"http://`+r.Host+`/","protocolBinding":"JSONRPC","protocolVersion":"1.0"}]}`)
	}))
	defer good.Close()
	grpcOnly := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, `{"name":"g","supportedInterfaces":[{"url":"http://`+r.Host+`/","protocolBinding":"GRPC","protocolVersion":"1.0"}]}`)
	}))
	defer grpcOnly.Close()
	for _, tc := range []struct {
		name, url, flag string
		ok              bool
		want            string
	}{
		{"a usable card", good.URL, "", true, "ok, 4 tools from 0 upstreams, 1 A2A agent\n"},
		{"no answer", "http://127.0.0.1:1", "", true, "warning: agent a does not answer"},
		{"no JSON-RPC interface", grpcOnly.URL, "", false, "its card offers no JSON-RPC interface"},
		{"offline", grpcOnly.URL, "--offline", true, "ok, 4 tools"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var out strings.Builder
			args := []string{"validate", "--config", writeConfig(t, "agents:\n  - {name: a, url: \""+tc.url+"\"}\n")}
			if tc.flag != "" {
				args = append(args, tc.flag)
			}
			err := run(context.Background(), args, &out, io.Discard)
			got := out.String()
			if err != nil {
				got = err.Error()
			}
			if (err == nil) != tc.ok || !strings.Contains(got, tc.want) {
				t.Errorf("validate: err %v, output %q; want ok=%v and %q", err, out.String(), tc.ok, tc.want)
			}
		})
	}
}
