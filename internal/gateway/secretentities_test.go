package gateway

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/agentreach/reach/internal/config"
	"github.com/agentreach/reach/internal/pgtest"
	"github.com/jackc/pgx/v5"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// accountTokens is an MCP server whose tools name an account by its
// access token, a secret argument: balance reads it, charge writes it.
func accountTokens(t *testing.T) *httptest.Server {
	t.Helper()
	s := mcp.NewServer(&mcp.Implementation{Name: "bank", Version: "1"}, nil)
	type in struct {
		Token  string `json:"token"`
		Amount int    `json:"amount,omitempty"`
	}
	no := false
	mcp.AddTool(s, &mcp.Tool{Name: "balance", Description: "The account's balance.", Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}},
		func(context.Context, *mcp.CallToolRequest, in) (*mcp.CallToolResult, any, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "balance: 10"}}}, nil, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "charge", Description: "Charge the account.", Annotations: &mcp.ToolAnnotations{DestructiveHint: &no}},
		func(_ context.Context, _ *mcp.CallToolRequest, a in) (*mcp.CallToolResult, any, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: fmt.Sprintf("charged %d", a.Amount)}}}, nil, nil
		})
	srv := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, nil))
	t.Cleanup(srv.Close)
	return srv
}

// TestSecretEntityNamesMasked: an entity named from a secret argument
// (acct:{token}) is shown masked wherever it is shown: in the stale_read
// refusal the model gets, in the note of a refresh, and so in the
// request's view, its graph, the audit log and the logs; on SQLite and on
// PostgreSQL, where the versions are the store's, and where the entities
// table keeps the account under a digest of its name, not the token. The versions are
// still the real entity's: the stale write is refused, and a write on
// another token's account is not. Before, the refusal said
// "Acct tok_live_... changed since you read it".
func TestSecretEntityNamesMasked(t *testing.T) {
	const secret, other = "tok_live_8f3a9c2e71d4b6", "tok_live_0a1b2c3d4e5f69"
	up := accountTokens(t)
	for _, tc := range []struct {
		name, extra, want string
		postgres          bool
	}{
		{"refused", "", "stale_read", false},
		{"refreshed", "    refresh: {tool: bank__balance, args: '{\"token\": \"{token}\"}'}\n", "success", false},
		{"refused/postgres", "", "stale_read", true},
		{"refreshed/postgres", "    refresh: {tool: bank__balance, args: '{\"token\": \"{token}\"}'}\n", "success", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			db := ""
			if tc.postgres {
				// The versions are the store's (withSharedEntities).
				db = pgtest.Database(t)
				tc.extra += "store: " + db + "\n"
			}
			yaml := "upstreams:\n  - name: bank\n    url: " + up.URL + "\ntools:\n  bank__balance: {reads: [\"acct:{token}\"]}\n" +
				"  bank__charge:\n    access: write\n    writes: [\"acct:{token}\"]\n" + tc.extra
			cfg, err := config.Parse([]byte(yaml), os.LookupEnv)
			if err != nil {
				t.Fatal(err)
			}
			cfg.Data = t.TempDir()
			var logs bytes.Buffer
			g, err := New(context.Background(), cfg, &Options{Logger: slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))})
			if err != nil {
				t.Fatal(err)
			}
			defer g.Close()
			url := serveTest(t, g).URL
			var everything bytes.Buffer
			call := func(request, id, tool string, args string) map[string]any {
				r := callOn(t, url, request, id, tool, args)
				json.NewEncoder(&everything).Encode(r)
				return r
			}
			if r := call("r1", "c1", "bank__balance", `{"token":"`+secret+`"}`); r["status"] != "success" {
				t.Fatalf("the read: %v", r)
			}
			if r := call("r1", "c2", "bank__balance", `{"token":"`+other+`"}`); r["status"] != "success" {
				t.Fatalf("the read of the other account: %v", r)
			}
			if r := call("r2", "c1", "bank__charge", `{"token":"`+secret+`","amount":1}`); r["status"] != "success" {
				t.Fatalf("the other request's write: %v", r)
			}
			r := call("r1", "c3", "bank__charge", `{"token":"`+secret+`","amount":2}`)
			text, _ := json.Marshal(r)
			switch tc.want {
			case "stale_read":
				if code, _ := path(r, "error", "code").(string); code != "stale_read" {
					t.Fatalf("a write on a stale read: %v, want stale_read", r)
				}
				if msg, _ := path(r, "error", "message").(string); !strings.HasPrefix(msg, "Acct [REDACTED] changed since you read it") {
					t.Errorf("the refusal says %q, want the account masked", msg)
				}
			default:
				if r["status"] != "success" || !strings.Contains(string(text), "acct [REDACTED] changed since you read it") {
					t.Errorf("a refreshed write: %s, want success with the account masked in its note", text)
				}
			}
			if r := call("r1", "c4", "bank__charge", `{"token":"`+other+`","amount":3}`); r["status"] != "success" {
				t.Errorf("a write on the other account, not written since its read: %v", r)
			}
			for _, u := range []string{"/v1/requests", "/v1/requests/r1", "/v1/requests/r1/graph", "/v1/requests/r1/graph?format=dot",
				"/v1/audit?request=r1", "/healthz"} {
				resp, err := http.Get(url + u)
				if err != nil {
					t.Fatal(err)
				}
				everything.ReadFrom(resp.Body)
				resp.Body.Close()
			}
			everything.Write(logs.Bytes())
			if db != "" {
				// The store keeps the account under a digest of its name.
				conn, err := pgx.Connect(context.Background(), db)
				if err != nil {
					t.Fatal(err)
				}
				defer conn.Close(context.Background())
				rows, _ := conn.Query(context.Background(), "SELECT name FROM entities")
				names, err := pgx.CollectRows(rows, pgx.RowTo[string])
				if err != nil {
					t.Fatal(err)
				}
				if !slices.ContainsFunc(names, func(n string) bool { return strings.HasPrefix(n, "sha256:") }) {
					t.Errorf("the entities table holds %q, want the accounts under digests", names)
				}
				everything.WriteString(strings.Join(names, "\n"))
			}
			for _, s := range []string{secret, other} {
				if strings.Contains(everything.String(), s) {
					t.Errorf("the token %s was shown:\n%s", s, everything.String())
				}
			}
		})
	}
}
