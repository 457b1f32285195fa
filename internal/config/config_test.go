package config

import (
	"bytes"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agentreach/reach"
)

func env(m map[string]string) func(string) (string, bool) {
	return func(k string) (string, bool) { v, ok := m[k]; return v, ok }
}

// issueExample is the configuration from issue #4.
const issueExample = `listen: 127.0.0.1:7400
data: ./.reach
upstreams:
  - name: everything                      # Streamable HTTP upstream
    url: http://127.0.0.1:3001/mcp
    headers: {Authorization: "Bearer ${EVERYTHING_TOKEN}"}
  - name: memory                          # stdio upstream
    command: [node, ./node_modules/@modelcontextprotocol/server-memory/dist/index.js]
    env: {MEMORY_FILE_PATH: ./memory.jsonl}
tools:                                    # per-tool contract overrides, by exposed name
  memory__delete_entities: {access: high_risk}
  everything__trigger-long-running-operation: {timeout: 30s}
budgets:
  default: {turns: 30, depth: 5, tool_calls: 200, tokens: 200000, wall: 10m}
model:
  base_url: http://127.0.0.1:8000/v1
  api_key: ${OPENAI_API_KEY}
`

func TestParseConfigIssueExample(t *testing.T) {
	c, err := Parse([]byte(issueExample), env(map[string]string{"EVERYTHING_TOKEN": "tok-123", "OPENAI_API_KEY": "sk-secret"}))
	if err != nil {
		t.Fatal(err)
	}
	if got := c.Upstreams[0].Headers["Authorization"].Reveal(); got != "Bearer tok-123" {
		t.Errorf("header = %q, want the token expanded", got)
	}
	if got := c.Model.APIKey.Reveal(); got != "sk-secret" {
		t.Errorf("api_key = %q", got)
	}
	if got := c.Upstreams[1].Env["MEMORY_FILE_PATH"].Reveal(); got != "./memory.jsonl" {
		t.Errorf("env = %q", got)
	}
	if got := time.Duration(c.Tools["everything__trigger-long-running-operation"].Timeout); got != 30*time.Second {
		t.Errorf("timeout = %v, want 30s", got)
	}
	if got, want := *c.DefaultBudget(), (reach.Budget{Turns: 30, Depth: 5, ToolCalls: 200, Tokens: 200000, Wall: 10 * time.Minute}); got != want {
		t.Errorf("budget = %+v, want %+v", got, want)
	}
	if c.Tools["memory__delete_entities"].Access != reach.HighRisk {
		t.Errorf("override access = %q", c.Tools["memory__delete_entities"].Access)
	}
}

func TestParseConfigErrorsNameTheLine(t *testing.T) {
	vars := env(map[string]string{"T": "x"})
	cases := []struct {
		name, yaml string
		want       []string // substrings of the error
	}{
		{"unknown top-level field", "listen: 127.0.0.1:1\nlisten_on: x\n", []string{"line 2", "unknown field listen_on"}},
		{"unknown nested field", "upstreams:\n  - name: a\n    url: http://127.0.0.1:1/mcp\n    header: {}\n", []string{"line 4", "header (did you mean headers?)"}},
		{"misspelled key", "upstrems:\n  - name: a\n", []string{"line 1", "unknown field upstrems (did you mean upstreams?)"}},
		{"misspelled deep key", "telemetry: {otlp_endpont: http://x}\n", []string{"line 1", "(did you mean otlp_endpoint?)"}},
		{"bad log format", "log: {format: xml}\n", []string{"line 1", `"xml" is not a log format`}},
		{"bad log level", "log:\n  level: loud\n", []string{"line 2", `"loud" is not a log level`}},
		{"bad duration", "tools:\n  a: {timeout: soon}\n", []string{"line 2", `"soon" is not a duration`}},
		{"negative duration", "idle_gap: -1s\n", []string{"line 1", "is negative; a duration is 0 or more"}},
		{"wrong type", "max_body_bytes: lots\n", []string{"line 1", "lots"}},
		{"duplicate key", "listen: 127.0.0.1:1\nlisten: 127.0.0.1:2\n", []string{"line 2", "already defined"}},
		{"unset variable", "upstreams:\n  - name: a\n    url: http://127.0.0.1:1/mcp\n    headers: {Authorization: \"Bearer ${NOPE}\"}\n", []string{"line 4", "${NOPE} is not set"}},
		{"bad variable name", "model:\n  base_url: http://127.0.0.1:1/v1\n  api_key: ${1X}\n", []string{"line 3", "not a variable name"}},
		{"unclosed variable in a header", "upstreams:\n  - name: a\n    url: http://127.0.0.1:1/mcp\n    headers: {A: \"Bearer ${TOK\"}\n", []string{"line 4", "header A", "not closed", "$${"}},
		{"unclosed variable after a good one", "upstreams:\n  - name: a\n    command: [x]\n    env:\n      A: '${T}-${T'\n", []string{"line 5", "env A", "not closed"}},
		{"unclosed variable in api_key", "model:\n  base_url: http://127.0.0.1:1/v1\n  api_key: ${T\n", []string{"line 3", "api_key", "not closed"}},
		{"non-loopback listen", "\n\nlisten: 0.0.0.0:7400\n", []string{"line 3", "loopback"}},
		{"url and command", "upstreams:\n  - name: a\n    url: http://127.0.0.1:1/mcp\n    command: [x]\n", []string{"line 2", "both url and command"}},
		{"neither url nor command", "upstreams:\n  - name: a\n", []string{"line 2", "needs url"}},
		{"duplicate upstream", "upstreams:\n  - {name: a, url: 'http://127.0.0.1:1/mcp'}\n  - {name: a, url: 'http://127.0.0.1:1/mcp'}\n", []string{"line 3", "used twice"}},
		{"bad upstream name", "upstreams:\n  - {name: 'a b', url: 'http://127.0.0.1:1/mcp'}\n", []string{"line 2", "upstream name"}},
		{"credentials in url", "upstreams:\n  - {name: a, url: 'http://u:p@127.0.0.1:1/mcp'}\n", []string{"line 2", "headers with ${VAR}"}},
		{"credentials in model url", "model:\n  name: m\n  base_url: 'https://u:p@api.example.com/v1'\n", []string{"line 3", "api_key with ${VAR}"}},
		{"only a key in model url", "model:\n  base_url: 'https://sk-only@api.example.com/v1'\n", []string{"line 2", "not in the base_url"}},
		{"bad access", "tools:\n  x:\n    access: admin\n", []string{"line 3", "want read, write, high_risk or forbidden"}},
		{"reserved tag", "tools:\n  x:\n    tags: [public, 'upstream:other']\n", []string{"line 3", "upstream:other", "gateway's own"}},
		{"keyed without key", "tools:\n  x: {reentrancy: keyed}\n", []string{"line 2", "needs key"}},
		{"bad model url", "model: {base_url: 'localhost:8000'}\n", []string{"line 1", "base_url"}},
		{"breaker rate above 1", "breaker: {rate: 1.5}\n", []string{"line 1", "rate is a fraction"}},
		{"unknown breaker key", "upstreams:\n  - name: a\n    url: http://127.0.0.1:1/mcp\n    breaker: {failure: 3}\n", []string{"line 4", "failure"}},
		{"negative breaker", "tools:\n  x:\n    breaker: {open_for: -1s}\n", []string{"line 3", "is negative"}},
		{"tool breaker rate", "tools:\n  x:\n    breaker: {rate: 2}\n", []string{"line 3", "tool x", "rate is a fraction"}},
		{"fallback of a write", "tools:\n  x:\n    access: write\n    fallback: [y]\n", []string{"line 4", "fallback is for reads", "saga"}},
		{"fallback to itself", "tools:\n  x:\n    fallback:\n      - y\n      - x\n", []string{"line 5", "fallback 2 is the tool itself"}},
		{"fallback without a tool", "tools:\n  x:\n    fallback: [{args: '{}'}]\n", []string{"line 3", "names no tool"}},
		{"fallback with an unknown key", "tools:\n  x:\n    fallback: [{tool: y, arguments: '{}'}]\n", []string{"line 3", "unknown field arguments"}},
		{"model fallback url", "model:\n  base_url: http://127.0.0.1:1/v1\n  fallbacks:\n    - {base_url: 'localhost:8001', model: m}\n", []string{"line 4", "model fallback 1", "base_url"}},
		{"model fallback credentials", "model:\n  base_url: http://127.0.0.1:1/v1\n  fallbacks:\n    - {base_url: 'https://u:p@api.example.com/v1'}\n", []string{"line 4", "api_key with ${VAR}"}},
		{"model fallback unset key", "model:\n  base_url: http://127.0.0.1:1/v1\n  fallbacks:\n    - {base_url: 'https://api.example.com/v1', api_key: '${NOPE}'}\n", []string{"line 4", "${NOPE} is not set"}},
		{"two documents", "listen: 127.0.0.1:1\n---\nlisten: 127.0.0.1:2\n", []string{"more than one YAML document"}},
		{"not a mapping", "- a\n- b\n", []string{"line 1"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse([]byte(tc.yaml), vars)
			if err == nil {
				t.Fatalf("ParseConfig succeeded, want an error containing %q", tc.want)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not contain %q", err, w)
				}
			}
			if strings.Contains(err.Error(), "gateway.") {
				t.Errorf("error %q shows a Go type name", err)
			}
		})
	}
}

// TestParseBreakersAndFallbacks: the breaker settings (top level, per
// upstream, per tool, for the model endpoints), a read's fallbacks (a
// name, or {tool, args}) and the model's fallbacks decode into the policies
// the runtime and the proxy use; a fallback's api_key is a secret.
func TestParseBreakersAndFallbacks(t *testing.T) {
	cfg, err := Parse([]byte(`breaker: {failures: 4, open_for: 30s}
upstreams:
  - {name: kb, url: "http://127.0.0.1:1/mcp", breaker: {failures: 2, rate: 0.25, window: 2m, min_calls: 8}}
tools:
  kb__search:
    breaker: {disabled: true}
    fallback:
      - wiki__search
      - {tool: web__search, args: '{"q": "{args.query}"}'}
model:
  base_url: http://127.0.0.1:2/v1
  breaker: {failures: 1}
  fallbacks:
    - {base_url: "http://127.0.0.1:3/v1", model: small, api_key: "${KEY}"}
`), env(map[string]string{"KEY": "sk-fallback-secret"}))
	if err != nil {
		t.Fatal(err)
	}
	if got, want := *cfg.Breaker.Policy(), (reach.BreakerPolicy{Failures: 4, OpenFor: 30 * time.Second}); got != want {
		t.Errorf("breaker = %+v, want %+v", got, want)
	}
	if got, want := *cfg.Upstreams[0].Breaker.Policy(), (reach.BreakerPolicy{Failures: 2, Rate: 0.25, Window: 2 * time.Minute, MinCalls: 8}); got != want {
		t.Errorf("upstream breaker = %+v, want %+v", got, want)
	}
	tool := reach.Tool{Name: "kb__search"}
	o := cfg.Tools["kb__search"]
	o.Apply(&tool)
	if !tool.Breaker.Disabled || len(tool.Fallback) != 2 || tool.Fallback[0] != (reach.Followup{Tool: "wiki__search"}) ||
		tool.Fallback[1] != (reach.Followup{Tool: "web__search", Args: `{"q": "{args.query}"}`}) {
		t.Errorf("tool = breaker %+v, fallback %+v", tool.Breaker, tool.Fallback)
	}
	if f := cfg.Model.Fallbacks; len(f) != 1 || f[0].Model != "small" || f[0].APIKey.Reveal() != "sk-fallback-secret" || cfg.Model.Breaker.Failures != 1 {
		t.Errorf("model fallbacks = %+v", f)
	}
	if !slices.Contains(cfg.SecretValues(), "sk-fallback-secret") {
		t.Error("a model fallback's api_key is not among the secrets masked")
	}
}

func TestParseConfigEmptyIsValid(t *testing.T) {
	for _, in := range []string{"", "\n", "# nothing\n", "{}"} {
		c, err := Parse([]byte(in), nil)
		if err != nil {
			t.Fatalf("Parse(%q): %v", in, err)
		}
		if c.ListenAddr() != DefaultListen {
			t.Errorf("listen = %q, want %q", c.ListenAddr(), DefaultListen)
		}
	}
}

func TestExpandOnlyInSecrets(t *testing.T) {
	// ${VAR} stays literal in a command's arguments (a shell it starts may
	// expand it), is expanded in headers, env and api_key, and $${ escapes.
	in := "upstreams:\n  - name: a\n    command: [echo, '${X}']\n    env: {A: '${X}-$${X}'}\n"
	c, err := Parse([]byte(in), env(map[string]string{"X": "val", "HOME": "/home"}))
	if err != nil {
		t.Fatal(err)
	}
	if c.Upstreams[0].Command[1] != "${X}" {
		t.Errorf("expanded in a command: %q", c.Upstreams[0].Command)
	}
	if got := c.Upstreams[0].Env["A"].Reveal(); got != "val-${X}" {
		t.Errorf("env A = %q, want %q", got, "val-${X}")
	}
}

// TestUnexpandedVariableRefused: a ${NAME} where reach expands none (a
// path, an address, a URL) is an error naming its line, its key and where
// variables are expanded; data: ./${HOME} loaded as a folder named ${HOME},
// and a URL's error said it was not an http:// URL. Text, templates and a
// command's arguments keep theirs.
func TestUnexpandedVariableRefused(t *testing.T) {
	vars := env(map[string]string{"HOME": "/home", "HOST": "127.0.0.1:3001", "T": "tok"})
	for _, tc := range []struct{ in, key string }{
		{"data: ./${HOME}\n", "data"},
		{"listen: ${HOST}\n", "listen"},
		{"upstreams:\n  - name: a\n    url: http://${HOST}/mcp\n", "url"},
		{"upstreams:\n  - name: a\n    command: [node, x.js]\n    dir: ${HOME}/srv\n", "dir"},
		{"model: {base_url: 'http://${HOST}/v1', name: m}\n", "base_url"},
		{"policy: {path: '${HOME}/policies'}\n", "path"},
		{"telemetry: {otlp_endpoint: 'http://${HOST}'}\n", "otlp_endpoint"},
		{"agents:\n  - {name: x, url: 'http://${HOST}'}\n", "url"},
	} {
		_, err := Parse([]byte(tc.in), vars)
		if err == nil || !strings.Contains(err.Error(), "line ") || !strings.Contains(err.Error(), " in "+tc.key+" is not expanded") || !strings.Contains(err.Error(), "only in headers, env, api_key and store") {
			t.Errorf("%q: error %v, want one saying a variable in %s is not expanded", tc.in, err, tc.key)
		}
	}
	for _, in := range []string{
		"upstreams:\n  - name: a\n    command: [sh, -c, 'exec node ${HOME}/srv.js']\n",
		"upstreams:\n  - name: a\n    url: http://127.0.0.1:1/mcp\n    headers: {Authorization: 'Bearer ${T}'}\n",
		"upstreams:\n  - name: a\n    url: http://127.0.0.1:1/mcp\ntools:\n  a__x: {description: 'costs ${PRICE} a call'}\n",
		"data: ./$HOME\n", // no braces: not a variable reach writes
	} {
		if _, err := Parse([]byte(in), vars); err != nil {
			t.Errorf("%q: %v, want it loaded", in, err)
		}
	}
}

func TestSecretsAreNeverPrinted(t *testing.T) {
	c, err := Parse([]byte(issueExample), env(map[string]string{"EVERYTHING_TOKEN": "tok-SECRET", "OPENAI_API_KEY": "sk-SECRET"}))
	if err != nil {
		t.Fatal(err)
	}
	var logs bytes.Buffer
	log := slog.New(slog.NewJSONHandler(&logs, nil))
	log.Info("config", "upstream", c.Upstreams[0].Headers, "key", c.Model.APIKey, "model", c.Model)
	printed := fmt.Sprintf("%v %+v %#v %s", c.Upstreams, c.Model, c.Upstreams[0].Headers, c.Model.APIKey) + logs.String()
	if strings.Contains(printed, "SECRET") {
		t.Errorf("a secret was printed: %s", printed)
	}
	if !strings.Contains(printed, "[redacted]") {
		t.Errorf("no redaction marker in %s", printed)
	}
	// An unset variable's error names the variable, not a value.
	_, err = Parse([]byte(issueExample), env(map[string]string{"EVERYTHING_TOKEN": "tok-SECRET"}))
	if err == nil || strings.Contains(err.Error(), "SECRET") || !strings.Contains(err.Error(), "OPENAI_API_KEY") {
		t.Errorf("error = %v, want it to name OPENAI_API_KEY and show no value", err)
	}
}

func TestCheckLoopback(t *testing.T) {
	for addr, ok := range map[string]bool{
		"127.0.0.1:7400": true, "localhost:1": true, "LOCALHOST:1": true, "LocalHost:7400": true, "[::1]:80": true, "127.1.2.3:0": true,
		"0.0.0.0:7400": false, ":7400": false, "[::]:1": false, "10.0.0.1:80": false, "example.com:80": false,
		"127.0.0.1": false, "127.0.0.1:99999": false,
	} {
		err := CheckLoopback(addr)
		if (err == nil) != ok {
			t.Errorf("CheckLoopback(%q) = %v, want ok=%v", addr, err, ok)
		}
	}
	// With authentication any host will do, but the address must still be
	// host:port with a real port.
	for addr, ok := range map[string]bool{"0.0.0.0:7400": true, "[::]:1": true, "nonsense": false, "0.0.0.0:99999": false, "127.0.0.1": false} {
		if err := CheckListen(addr, true); (err == nil) != ok {
			t.Errorf("CheckListen(%q, authenticated) = %v, want ok=%v", addr, err, ok)
		}
	}
	for _, tc := range []struct{ yaml, want string }{
		{"listen: nonsense\nauth: {keys: true}\n", "want host:port"},
		{"listen: 0.0.0.0:99999\nauth: {keys: true}\n", "not a number from 0 to 65535"},
		{"listen: 0.0.0.0:7400\n", "without authentication"},
	} {
		_, err := Parse([]byte(tc.yaml), nil)
		if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "line 1") {
			t.Errorf("%q: %v, want an error on line 1 saying %q", tc.yaml, err, tc.want)
		}
	}
}

func FuzzParseConfig(f *testing.F) {
	f.Add([]byte(issueExample))
	f.Add([]byte("listen: 127.0.0.1:1\ntools:\n  a: {timeout: 1s, retry: {attempts: 2, base: 1ms}}\n"))
	f.Add([]byte("upstreams: [{name: a, url: 'http://127.0.0.1:1/mcp', headers: {A: '${X}'}}]"))
	f.Add([]byte("{\"listen\": \"127.0.0.1:1\", \"budgets\": {\"default\": {\"wall\": \"1m\"}}}"))
	f.Add([]byte("&a [*a]"))
	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := Parse(data, env(map[string]string{"X": "1"}))
		if err != nil {
			if err.Error() == "" {
				t.Fatal("empty error message")
			}
			return
		}
		if c.Listen != "" && CheckListen(c.Listen, c.Authenticates()) != nil {
			t.Fatalf("accepted listen address %q (authenticates: %v)", c.Listen, c.Authenticates())
		}
	})
}

// TestConfigURLCredentialsNotQuoted: a url with credentials is refused
// without quoting them, whatever else is wrong with it.
func TestConfigURLCredentialsNotQuoted(t *testing.T) {
	for _, in := range []string{
		"model: {base_url: 'https://user:sk-secret@api.example.com/v1'}\n",
		"model: {base_url: 'ftp://user:sk-secret@api.example.com/v1'}\n",
		"upstreams:\n  - {name: a, url: 'ftp://user:sk-secret@127.0.0.1:1/mcp'}\n",
	} {
		_, err := Parse([]byte(in), nil)
		if err == nil || !strings.Contains(err.Error(), "not in the") || strings.Contains(err.Error(), "sk-secret") {
			t.Errorf("Parse(%q) = %v, want an error about credentials that does not quote them", in, err)
		}
	}
}

// TestExpandClosedAndLiteral: "$${" stays a literal "${" without its "}",
// and a value that holds "${" is not taken for an unclosed reference.
func TestExpandClosedAndLiteral(t *testing.T) {
	in := "upstreams:\n  - name: a\n    command: [x]\n    env: {A: 'x-$${Y', B: '${V}', C: '$${V}'}\n"
	c, err := Parse([]byte(in), env(map[string]string{"V": "p${q"}))
	if err != nil {
		t.Fatal(err)
	}
	for k, want := range map[string]string{"A": "x-${Y", "B": "p${q", "C": "${V}"} {
		if got := c.Upstreams[0].Env[k].Reveal(); got != want {
			t.Errorf("env %s = %q, want %q", k, got, want)
		}
	}
}

// store: is empty or a PostgreSQL URL with a host and a database; an
// error names its line and never quotes the URL (it may hold a password);
// a ${VAR} in it is a secret the redactor masks.
func TestStoreAndInstance(t *testing.T) {
	env := func(k string) (string, bool) { return map[string]string{"PGPASS": "s3cret-pw"}[k], k == "PGPASS" }
	c, err := Parse([]byte("store: postgres://reach:${PGPASS}@db.internal:5432/reach?sslmode=require\ninstance: gw-1\n"), env)
	if err != nil {
		t.Fatal(err)
	}
	if !c.Postgres() || c.Store.Reveal() != "postgres://reach:s3cret-pw@db.internal:5432/reach?sslmode=require" || c.InstanceName() != "gw-1" {
		t.Fatalf("store %q, instance %q", c.Store.Reveal(), c.InstanceName())
	}
	if !slices.Contains(c.SecretValues(), "s3cret-pw") {
		t.Errorf("the password from ${PGPASS} is not among the values masked: %v", c.SecretValues())
	}
	if def, _ := Parse([]byte("listen: 127.0.0.1:7411\nstore: postgres://db/reach\n"), nil); !strings.HasSuffix(def.InstanceName(), "-7411") {
		t.Errorf("the default instance name with PostgreSQL = %q, want the host's name and the port", def.InstanceName())
	}
	if def, _ := Parse([]byte("{}"), nil); def.InstanceName() != "reach" || def.Postgres() {
		t.Errorf("the default instance name with SQLite = %q", def.InstanceName())
	}
	for _, tt := range []struct{ yaml, want string }{
		{"listen: 127.0.0.1:7400\nstore: mysql://u:pw@db/x\n", "line 2: store: the scheme \"mysql\" is not postgres"},
		{"store: postgres://u:pw@/x\n", "line 1: store: the URL names no host"},
		{"store: postgres://u:pw@db\n", "line 1: store: the URL names no database"},
		{"instance: a/b\n", "line 1: instance \"a/b\""},
	} {
		_, err := Parse([]byte(tt.yaml), nil)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("Parse(%q) = %v, want %q", tt.yaml, err, tt.want)
		}
		if err != nil && strings.Contains(err.Error(), "pw") {
			t.Errorf("Parse(%q): the error quotes the password: %v", tt.yaml, err)
		}
	}
}

// FuzzParseBreakersAndFallbacks: whatever YAML the breaker and fallback
// keys hold, Parse does not panic, and what it accepts is usable: every
// breaker policy is in range and every fallback names a tool.
func FuzzParseBreakersAndFallbacks(f *testing.F) {
	for _, seed := range []string{
		"breaker: {failures: 3, rate: 0.2, window: 30s, min_calls: 5, open_for: 1s, disabled: false}\n",
		"tools:\n  x:\n    fallback: [a, {tool: b, args: '{\"q\": \"{args.q}\"}'}]\n    breaker: {failures: 2}\n",
		"tools:\n  x: {fallback: a}\n",
		"tools:\n  x: {fallback: [[a]]}\n",
		"tools:\n  x: {fallback: [{tool: [a]}]}\n",
		"model: {base_url: 'http://127.0.0.1:1/v1', fallbacks: [{base_url: 'http://127.0.0.1:2/v1', model: m}], breaker: {open_for: 2m}}\n",
		"upstreams:\n  - {name: a, url: 'http://127.0.0.1:1/mcp', breaker: {rate: 1.0000001}}\n",
		"breaker: &b {failures: 1}\nupstreams:\n  - {name: a, url: 'http://127.0.0.1:1/mcp', breaker: *b}\n",
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, in string) {
		c, err := Parse([]byte(in), nil)
		if err != nil {
			return
		}
		check := func(where string, p *reach.BreakerPolicy) {
			if err := p.Check(); err != nil {
				t.Errorf("%s: Parse accepted %+v: %v", where, p, err)
			}
		}
		check("breaker", c.Breaker.Policy())
		for _, u := range c.Upstreams {
			check("upstream "+u.Name, u.Breaker.Policy())
		}
		if c.Model != nil {
			check("model", c.Model.Breaker.Policy())
		}
		for name, o := range c.Tools {
			check("tool "+name, o.Breaker)
			for _, fb := range o.Fallback {
				if fb.Tool == "" {
					t.Errorf("tool %s: Parse accepted a fallback without a tool: %q", name, in)
				}
			}
		}
	})
}

// SessionsCap is the bound on a principal's MCP sessions in force: the
// default when unset.
func TestSessionsCap(t *testing.T) {
	for in, want := range map[int]int{0: DefaultSessionsPerPrincipal, 5: 5} {
		if got := (&Config{SessionsPerPrincipal: in}).SessionsCap(); got != want {
			t.Errorf("sessions_per_principal %d: SessionsCap = %d, want %d", in, got, want)
		}
	}
}

// A budgets.default that names some amounts keeps the standard bounds on
// the others: {tool_calls: 3} must not lift depth, turns and the wall
// clock. A written 0 is unlimited, and a budget built in code is whole.
func TestDefaultBudgetKeepsStandardAmountsLeftOut(t *testing.T) {
	std := reach.StandardBudget()
	cases := []struct {
		name, yaml string
		want       reach.Budget
	}{
		{"one key", "budgets:\n  default:\n    tool_calls: 3\n", reach.Budget{Turns: std.Turns, Depth: std.Depth, ToolCalls: 3, Wall: std.Wall}},
		{"a written zero is unlimited", "budgets:\n  default:\n    tool_calls: 3\n    depth: 0\n    wall: 0s\n", reach.Budget{Turns: std.Turns, ToolCalls: 3}},
		{"amounts the standard leaves unlimited", "budgets:\n  default:\n    tokens: 5000\n    cost: 1.5\n", reach.Budget{Turns: std.Turns, Depth: std.Depth, ToolCalls: std.ToolCalls, Wall: std.Wall, Tokens: 5000, Cost: 1.5}},
		{"through an alias", "budgets:\n  small: &b\n    turns: 4\n  default: *b\n", reach.Budget{Turns: 4, Depth: std.Depth, ToolCalls: std.ToolCalls, Wall: std.Wall}},
		{"empty", "budgets:\n  default: {}\n", std},
		{"null", "budgets:\n  default:\n", std},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c, err := Parse([]byte(tc.yaml), env(nil))
			if err != nil {
				t.Fatal(err)
			}
			if got := *c.DefaultBudget(); got != tc.want {
				t.Errorf("default budget = %+v, want %+v", got, tc.want)
			}
		})
	}
	// Named budgets are whole (a key left out is unlimited, bounded by the
	// parent's budget they are carved from), and none written is nil.
	c, err := Parse([]byte("budgets:\n  small:\n    tool_calls: 3\n"), env(nil))
	if err != nil {
		t.Fatal(err)
	}
	if c.DefaultBudget() != nil {
		t.Errorf("no default written: got %+v, want nil (the runtime's)", *c.DefaultBudget())
	}
	if got := c.Budgets["small"].Budget; got != (reach.Budget{ToolCalls: 3}) {
		t.Errorf("named budget = %+v", got)
	}
	// Built in code, as tests and embedders do: whole, as given.
	inCode := &Config{Budgets: map[string]Budget{"default": {Budget: reach.Budget{ToolCalls: 3}}}}
	if got := *inCode.DefaultBudget(); got != (reach.Budget{ToolCalls: 3}) {
		t.Errorf("in code = %+v, want it whole", got)
	}
}

// TestBudgetPrincipals: a budget's principals are read (BudgetPrincipals);
// one that lifts a limit of the default's and lists nobody is a warning of
// reach validate, one that only lowers limits or lists someone is not; an
// empty principal is an error.
func TestBudgetPrincipals(t *testing.T) {
	c, err := Parse([]byte(`budgets:
  default: {tool_calls: 20, tokens: 5000}
  small: {tool_calls: 5}
  research: {tokens: 0}
  wide: {turns: 31}
  team: {tool_calls: 100, principals: [alice, "*"]}
  cheap: {tokens: 10, principals: [bob]}
agents:
  - {name: worker, url: "http://127.0.0.1:9002", budget: research}
`), env(nil))
	if err != nil {
		t.Fatal(err)
	}
	got := c.BudgetPrincipals()
	if len(got) != 2 || !slices.Equal(got["team"], []BudgetPrincipal{{Principal: "alice"}, {Principal: "*"}}) || !slices.Equal(got["cheap"], []BudgetPrincipal{{Principal: "bob"}}) {
		t.Errorf("BudgetPrincipals = %v, want team's and cheap's", got)
	}
	ws := c.BudgetWarnings()
	if len(ws) != 2 || !strings.Contains(ws[0], "budget research lifts the default budget's tokens") || !strings.Contains(ws[0], "an agent's delegations use it") ||
		!strings.Contains(ws[1], "budget wide lifts the default budget's turns") || !strings.Contains(ws[1], "budgets.wide.principals") {
		t.Errorf("warnings = %q, want research (tokens, used by an agent) and wide (turns), saying where to list principals", ws)
	}
	// A budget that only lowers limits, with no default written: none.
	if c, err := Parse([]byte("budgets:\n  small: {tool_calls: 3}\n"), env(nil)); err != nil || len(c.BudgetWarnings()) != 0 {
		t.Errorf("a lowering budget: err %v, warnings %v; want none", err, c.BudgetWarnings())
	}
	for _, tc := range []struct{ doc, want string }{
		{"budgets:\n  team: {tool_calls: 1, principals: [\"\"]}\n", `budget team: principal 1 is empty`},
		{"budgets:\n  team: {tool_calls: 1, principals: alice}\n", "cannot unmarshal"},
		{"budgets:\n  team: {tool_calls: 1, principal: [alice]}\n", "did you mean principals?"},
	} {
		if _, err := Parse([]byte(tc.doc), env(nil)); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: %v, want an error containing %q", tc.doc, err, tc.want)
		}
	}
}

// TestBudgetPrincipalsOfTenant: a budget's principal is a bare name (the
// principal of no tenant) or {principal, tenant}; "*" alone or of a tenant.
// A tenant of "*", a blank tenant, a tenant without a principal or an
// unknown key is refused at load, saying how to write it.
func TestBudgetPrincipalsOfTenant(t *testing.T) {
	c, err := Parse([]byte(`budgets:
  default: {tool_calls: 20}
  team:
    tool_calls: 100
    principals:
      - alice
      - {principal: alice, tenant: acme}
      - {principal: "*", tenant: globex}
      - principal: "alice@acme"
      - "*"
`), env(nil))
	if err != nil {
		t.Fatal(err)
	}
	want := []BudgetPrincipal{{Principal: "alice"}, {"alice", "acme"}, {"*", "globex"}, {Principal: "alice@acme"}, {Principal: "*"}}
	if got := c.BudgetPrincipals()["team"]; !slices.Equal(got, want) {
		t.Errorf("team's principals = %v, want %v", got, want)
	}
	for _, tc := range []struct{ doc, want string }{
		{"budgets:\n  team: {tool_calls: 1, principals: [{principal: alice, tenant: \"*\"}]}\n", `tenant "*" is no tenant`},
		{"budgets:\n  team: {tool_calls: 1, principals: [{principal: alice, tenant: \" \"}]}\n", `tenant " " is blank`},
		{"budgets:\n  team: {tool_calls: 1, principals: [{tenant: acme}]}\n", `budgets.team.tenants`},
		{"budgets:\n  team: {tool_calls: 1, principals: [{principal: \"\"}]}\n", `{principal: NAME, tenant: TENANT}`},
		{"budgets:\n  team: {tool_calls: 1, principals: [{principal: alice, tenants: acme}]}\n", "did you mean tenant?"},
		{"budgets:\n  team: {tool_calls: 1, principals: [[alice, acme]]}\n", "principals wants a principal's name (of no tenant), or {principal: NAME, tenant: TENANT}"},
	} {
		if _, err := Parse([]byte(tc.doc), env(nil)); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: %v, want an error containing %q", tc.doc, err, tc.want)
		}
	}
}

// TestBareBudgetPrincipalWarnings: a bare principal of a lifting budget
// whose keys carry a tenant is warned of, saying how to list it of each;
// one of a tenant, "*", a principal of no tenant only, or a budget that
// only lowers limits, is not.
func TestBareBudgetPrincipalWarnings(t *testing.T) {
	c, err := Parse([]byte(`budgets:
  default: {tool_calls: 20}
  team: {tool_calls: 100, principals: [alice, bob, carol, "*", {principal: dave, tenant: acme}]}
  small: {tool_calls: 5, principals: [alice]}
`), env(nil))
	if err != nil {
		t.Fatal(err)
	}
	keys := map[string][]string{"alice": {"", "acme"}, "bob": {""}, "dave": {"globex"}, "*": {"acme"}}
	ws := c.BareBudgetPrincipalWarnings(func(p string) []string { return keys[p] })
	if len(ws) != 1 || ws[0] != `budget team lists "alice", the principal of no tenant, and API keys of "alice" are of tenant acme: those may not name it (the same name in another tenant is someone else); to let them, write {principal: "alice", tenant: "acme"} in budgets.team.principals` {
		t.Errorf("warnings = %q, want one, of alice in team", ws)
	}
}

// TestInstanceTTLBound: an instance_ttl under a second (a typo of 10ms for
// 10s) is refused at load, saying the bound; it was taken, and instances
// would take each other for dead at any pause of the store.
func TestInstanceTTLBound(t *testing.T) {
	for _, tc := range []struct {
		ttl string
		ok  bool
	}{{"10ms", false}, {"999ms", false}, {"1s", true}, {"10s", true}} {
		_, err := Parse([]byte("store: postgres://reach@127.0.0.1:5432/reach?sslmode=disable\ninstance_ttl: "+tc.ttl+"\n"), nil)
		if tc.ok != (err == nil) || (err != nil && !strings.Contains(err.Error(), "line 2: instance_ttl "+tc.ttl+": use at least 1s")) {
			t.Errorf("instance_ttl %s: %v, want ok %v", tc.ttl, err, tc.ok)
		}
	}
}

// TestBudgetTenants: a budget's tenants are read (BudgetTenants), and a
// lifting budget that lists tenants and no principals is not warned of;
// an empty tenant, or "*" (which is no tenant), is an error.
func TestBudgetTenants(t *testing.T) {
	c, err := Parse([]byte(`budgets:
  default: {tool_calls: 20}
  team: {tool_calls: 100, tenants: [acme, "Acme"]}
  research: {tool_calls: 0}
`), env(nil))
	if err != nil {
		t.Fatal(err)
	}
	if got := c.BudgetTenants(); len(got) != 1 || !slices.Equal(got["team"], []string{"acme", "Acme"}) {
		t.Errorf("BudgetTenants = %v, want team's, as written", got)
	}
	if ws := c.BudgetWarnings(); len(ws) != 1 || !strings.Contains(ws[0], "budget research") || !strings.Contains(ws[0], "budgets.research.tenants") {
		t.Errorf("warnings = %q, want research only (team lists a tenant), saying where tenants are listed", ws)
	}
	for _, tc := range []struct{ doc, want string }{
		{"budgets:\n  team: {tool_calls: 1, tenants: [\"\"]}\n", `budget team: tenant 1 is empty`},
		{"budgets:\n  team: {tool_calls: 1, tenants: [acme, \" \"]}\n", `budget team: tenant 2 is empty`},
		{"budgets:\n  team: {tool_calls: 1, tenants: [\"*\"]}\n", `principals: ["*"]`},
		{"budgets:\n  team: {tool_calls: 1, tenants: acme}\n", "cannot unmarshal"},
		{"budgets:\n  team: {tool_calls: 1, tenant: [acme]}\n", "did you mean tenants?"},
	} {
		if _, err := Parse([]byte(tc.doc), env(nil)); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: %v, want an error containing %q", tc.doc, err, tc.want)
		}
	}
}

// TestInertWarnings: instance_ttl without store: is read by nothing, and
// reach validate says so (it took it without a word); with a store, or
// left out, nothing is said.
func TestInertWarnings(t *testing.T) {
	for in, want := range map[string]bool{
		"instance_ttl: 5s\n": true,
		"instance_ttl: 5s\nstore: postgres://reach@127.0.0.1:5432/reach?sslmode=disable\n": false,
		"listen: 127.0.0.1:7400\n": false,
	} {
		c, err := Parse([]byte(in), env(nil))
		if err != nil {
			t.Fatalf("%q: %v", in, err)
		}
		w := c.InertWarnings()
		if got := len(w) == 1 && strings.Contains(w[0], "instance_ttl applies to instances that share a PostgreSQL store"); got != want || !want && len(w) > 0 {
			t.Errorf("%q: warnings %q, want one about instance_ttl: %v", in, w, want)
		}
	}
}
