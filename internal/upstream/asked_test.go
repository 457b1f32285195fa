package upstream

import (
	"strings"
	"testing"

	"github.com/agentreach/reach"
	"github.com/agentreach/reach/internal/link"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// A stdio upstream's sampling and elicitation requests (through the SDK's
// client, onCreateMessage and onElicit) of one tool call are relayed at
// most MaxAsked at once, as the wire client's are
// (TestUpstreamRequestFloodBounded): one more is answered at once with an
// error that says why, and once one of those in flight is answered, the
// next is relayed again.
func TestAskedBoundedThroughSDK(t *testing.T) {
	u := &upstream{}
	cs := &mcp.ClientSession{}
	fl := &openCall{ctx: t.Context(), frame: &reach.Frame{ID: 0xa1}}
	defer u.open.add(cs, fl)()
	meta := mcp.Meta{link.MetaParent: fl.frame.ID.String()}
	ask := map[string]func() error{
		"elicitation/create": func() error {
			_, err := u.onElicit(t.Context(), &mcp.ElicitRequest{Session: cs, Params: &mcp.ElicitParams{Meta: meta, Message: "ok?"}})
			return err
		},
		"sampling/createMessage": func() error {
			_, err := u.onCreateMessage(t.Context(), &mcp.CreateMessageRequest{Session: cs, Params: &mcp.CreateMessageParams{Meta: meta, MaxTokens: 1}})
			return err
		},
	}
	for method, ask := range ask {
		for range MaxAsked { // as many in flight, waiting for the client
			if !fl.asked.take() {
				t.Fatalf("%s: fewer than %d requests may be in flight", method, MaxAsked)
			}
		}
		if err := ask(); err == nil || !strings.Contains(err.Error(), "at most") || !strings.Contains(err.Error(), method) {
			t.Errorf("%s past %d in flight: %v, want it refused, saying why", method, MaxAsked, err)
		}
		fl.asked.done() // one was answered
		// Relayed now: the call's client (none here) is asked, and says no.
		if err := ask(); err == nil || strings.Contains(err.Error(), "at most") {
			t.Errorf("%s once one in flight was answered: %v, want it relayed", method, err)
		}
		for range MaxAsked - 1 {
			fl.asked.done()
		}
		if n := fl.asked.n.Load(); n != 0 {
			t.Errorf("%s: %d places still taken once every request was answered", method, n)
		}
	}
}
