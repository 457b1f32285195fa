package gateway

import (
	"context"
	"os"
	"testing"

	"github.com/agentreach/reach/internal/config"
	"github.com/agentreach/reach/internal/link"
	"github.com/agentreach/reach/internal/mcpwire"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestSamplingIsChargedAtTheModelThatAnswered: an upstream's model hint is
// a preference; the client answers with the model it chose and says which.
// The tokens are charged at that model's price, so that a hint naming a
// cheap (or unpriced) model does not make a dear one's answer cheap.
func TestSamplingIsChargedAtTheModelThatAnswered(t *testing.T) {
	// The upstream hints client-model; 1000 input tokens and 500 output.
	for _, tc := range []struct {
		name, prices, answered string
		want                   float64
	}{
		{"a dear model for a cheap hint", "client-model: {input: 0, output: 0}, dear-model: {input: 1000, output: 2000}", "dear-model", 2},
		{"a free model for a dear hint", "client-model: {input: 1000, output: 2000}, local-model: {input: 0, output: 0}", "local-model", 0},
		{"an unpriced model: the hint's price", "client-model: {input: 1000, output: 2000}", "mystery-model", 2},
	} {
		t.Run(tc.name, func(t *testing.T) { samplingCharged(t, tc.prices, tc.answered, tc.want) })
	}
}

func samplingCharged(t *testing.T, prices, answered string, want float64) {
	up := samplingUpstream(t) // hints "client-model"
	yaml := "upstreams:\n  - name: s\n    url: " + up.URL + "\n" +
		"model:\n  base_url: http://127.0.0.1:9/v1\n  prices: {" + prices + "}\n"
	cfg, err := config.Parse([]byte(yaml), os.LookupEnv)
	if err != nil {
		t.Fatal(err)
	}
	g := newTestGateway(t, cfg)
	client := mcp.NewClient(&mcp.Implementation{Name: "agent", Version: "1"}, &mcp.ClientOptions{
		CreateMessageHandler: func(context.Context, *mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
			return &mcp.CreateMessageResult{Model: answered, Role: "assistant", Content: &mcp.TextContent{Text: "30 days"},
				Meta: mcp.Meta{"usage": map[string]any{"input_tokens": 1000, "output_tokens": 500}}}, nil
		},
	})
	ct, st := mcp.NewInMemoryTransports()
	ss, err := g.MCPServer().Connect(t.Context(), st, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ss.Close() })
	cs, err := client.Connect(t.Context(), ct, &mcp.ClientSessionOptions{ProtocolVersion: mcpwire.SessionProtocol})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	if res, text := callText(t, cs, "s__ask", map[string]any{"q": "refunds?"}, mcp.Meta{link.MetaRequest: "priced"}); res.IsError {
		t.Fatalf("s__ask: %s", text)
	}
	r, ok := g.rt.Lookup("priced")
	if !ok {
		t.Fatal("request is not kept")
	}
	if got := r.Usage().Cost; got != want {
		t.Errorf("request cost = %v, want %v", got, want)
	}
}
