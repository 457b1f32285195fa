package gateway

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// TestFrameworksShapedOutputSchema: a tool whose results reach reshapes
// (its shape: selects fields or flattens) is listed without the upstream's
// output schema, which its results no longer match. The TypeScript SDK's
// clients check a result against the schema a tool lists and throw when it
// does not match, so a listed schema made every call of such a tool an
// error thrown at the application ("Structured content does not match the
// tool's output schema"), its result lost; without it, the client takes
// the shaped result. A tool shaped otherwise keeps its schema; a result of
// it cut to text (its max_bytes, or the runtime's), which matches no
// schema of an object, is answered with isError, the cut text and reach's
// note in it: before, the client threw "has an output schema but did not
// return structured content", and the note telling the model to narrow its
// query was lost.
func TestFrameworksShapedOutputSchema(t *testing.T) {
	dir, node := frameworksCacheOf(t, "@modelcontextprotocol/sdk", "@modelcontextprotocol/client")
	src, err := os.ReadFile("testdata/frameworks/shaped-client.mjs")
	if err != nil {
		t.Fatal(err)
	}
	script := writeScript(t, dir, "reach-shaped-client", src)
	for _, tc := range []struct {
		name, shape string
		schema      bool   // the listing keeps the output schema
		isError     bool   // the result is answered with isError
		text        string // what the result's text holds
	}{
		{"fields", "{fields: [total]}", false, false, "{}"},
		{"flatten", "{flatten: true}", false, false, `"sum":5`},
		{"max_bytes", "{max_bytes: 1000}", true, false, `"sum":5`},
		// Cut to text, which no structured result can be: an error the
		// client takes as the tool's, with the cut text and the note.
		{"cut", "{max_bytes: 8}", true, true, "Narrow your query"},
	} {
		for _, which := range []string{"sdk1", "client"} {
			t.Run(tc.name+"/"+which, func(t *testing.T) {
				_, _, srv := upstreamGateway(t, probeConfig+"tools:\n  up__add: {shape: "+tc.shape+"}\n")
				ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
				defer cancel()
				out, err := exec.CommandContext(ctx, node, script, which, srv.URL+"/mcp").CombinedOutput()
				if err != nil {
					t.Fatalf("shaped-client: %v\n%s", err, out)
				}
				lines := strings.Split(strings.TrimSpace(string(out)), "\n")
				var got map[string]any
				if err := json.Unmarshal([]byte(lines[len(lines)-1]), &got); err != nil {
					t.Fatalf("shaped-client printed %s", out)
				}
				if got["error"] != nil {
					t.Fatalf("shaped-client: %v", got["error"])
				}
				if has := path(got, "tool", "outputSchema") != nil; has != tc.schema {
					t.Errorf("up__add listed with an output schema: %v, want %v (tool %v)", has, tc.schema, got["tool"])
				}
				r, _ := got["add"].(map[string]any)
				if r == nil || r["thrown"] != nil || (r["isError"] == true) != tc.isError {
					t.Fatalf("up__add = %v, want its shaped result, isError %v", got["add"], tc.isError)
				}
				if s, _ := path(r, "content", 0, "text").(string); !strings.Contains(s, tc.text) {
					t.Errorf("up__add's text = %q, want %s in it", s, tc.text)
				}
			})
		}
	}
}
