package front

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentreach/reach"
	"github.com/agentreach/reach/internal/link"
	"github.com/agentreach/reach/internal/refusals"
)

// TestEveryRefusalOverMCP walks every refusal code reach's source makes
// (package refusals) and every link.Kind through the MCP front's answer:
// a refused or failed call is a tool result with isError, _meta
// reach/status and reach/error {code, type}, its text the message and
// the suggestion; a link error the model reads the same, with its type;
// one that is the client's a JSON-RPC error whose data has the code.
func TestEveryRefusalOverMCP(t *testing.T) {
	codes, err := refusals.Codes("../..")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range codes {
		e := &reach.Error{Code: c.Code, Type: c.Type, Message: "What happened.", Suggestion: "What to do next."}
		out := mcpResult(&reach.Result{Status: reach.StatusRefused, Error: e}, "r1", nil)
		me, _ := out.Meta[link.MetaError].(*resultError)
		text := out.Content[0].(*mcp.TextContent).Text
		if !out.IsError || me == nil || me.Code != c.Code || me.Type != c.Type || out.Meta[link.MetaStatus] != string(reach.StatusRefused) ||
			!strings.Contains(text, "What happened.") || !strings.Contains(text, "What to do next.") {
			t.Errorf("%s (%s): isError %v, reach/error %+v, text %q", c.Code, c.Pos, out.IsError, me, text)
		}
	}
	for _, k := range link.Kinds() {
		res, err := linkRefusal(k.New("What happened.", "What to do next."))
		if k.Model {
			if err != nil || res == nil || !res.IsError {
				t.Errorf("%s: %v %v; want a tool result with isError", k.Code, res, err)
				continue
			}
			me, _ := res.Meta[link.MetaError].(*resultError)
			if me == nil || me.Code != k.Code || me.Type != k.Type || !strings.Contains(res.Content[0].(*mcp.TextContent).Text, "What to do next.") {
				t.Errorf("%s: reach/error %+v, content %v", k.Code, me, res.Content)
			}
			continue
		}
		var je *jsonrpc.Error
		var data struct {
			Code   string
			Status int
		}
		if res != nil || !errors.As(err, &je) || json.Unmarshal(je.Data, &data) != nil || data.Code != k.Code || data.Status != k.Status ||
			!strings.Contains(je.Message, "What to do next.") {
			t.Errorf("%s: %v %v; want a JSON-RPC error with data {code, status}", k.Code, res, err)
		}
	}
}
