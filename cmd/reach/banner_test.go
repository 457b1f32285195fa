package main

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/agentreach/reach"

	"github.com/agentreach/reach/internal/config"
	"github.com/agentreach/reach/internal/gateway"
)

// TestBannerRedactsModelURL: the banner shows the model's URL without
// credentials or query (which may hold a key).
func TestBannerRedactsModelURL(t *testing.T) {
	for _, tc := range []struct{ url, want string }{
		{"http://127.0.0.1:8000/v1", "to http://127.0.0.1:8000/v1)"},
		{"https://res.example.com/openai/v1?api-key=sk-secret&api-version=1", "to https://res.example.com/openai/v1?…)"},
		{"https://user:sk-secret@api.example.com/v1", "to https://xxxxx@api.example.com/v1)"},
		{"https://sk-secret@api.example.com/v1#sk-secret", "to https://xxxxx@api.example.com/v1)"},
	} {
		// Built directly, not parsed: the banner does not rely on the
		// configuration check refusing credentials.
		cfg := &config.Config{Data: t.TempDir(), Model: &config.ModelConfig{BaseURL: tc.url, Name: "m"}}
		g, err := gateway.New(t.Context(), cfg, &gateway.Options{Offline: true, Ephemeral: true})
		if err != nil {
			t.Fatal(err)
		}
		var b bytes.Buffer
		printBanner(&b, g, "127.0.0.1:7400", cfg.Data)
		g.Close()
		if out := b.String(); strings.Contains(out, "sk-secret") || !strings.Contains(out, tc.want) {
			t.Errorf("banner for model %s:\n%s\nwant %q and no secret", tc.url, out, tc.want)
		}
	}
}

var exampleCallRE = regexp.MustCompile(`curl -s (\S+) -d '([^']*)'`)

// TestBannerExampleCallRuns: the call the banner offers to copy runs, in
// front of an upstream whose tools all require arguments and whose first
// tool by name is destructive (it offered shop__drop_table with {}, which
// waited for an approval, and before that an empty object its schema
// refuses).
func TestBannerExampleCallRuns(t *testing.T) {
	up, _, _ := testUpstream(t)
	cfg := writeConfig(t, "upstreams:\n  - name: shop\n    url: "+up+"\n")
	_, _, stdout := startServe(t, "--config", cfg, "--listen", "127.0.0.1:0", "--data", t.TempDir())
	m := exampleCallRE.FindStringSubmatch(stdout.String())
	if m == nil {
		t.Fatalf("banner offers no call:\n%s", stdout.String())
	}
	_, out := postJSON(t, m[1], m[2])
	results, _ := out["results"].([]any)
	if len(results) != 1 || results[0].(map[string]any)["status"] != "success" {
		t.Errorf("the banner's call %s answered %v, want one success", m[2], out)
	}
}

// TestExampleCallReadsOnly: the example is get_order's when served, a read
// that needs no arguments before one that does, and none without a read.
func TestExampleCallReadsOnly(t *testing.T) {
	req := json.RawMessage(`{"type":"object","required":["n","k","on"],"properties":{"n":{"type":"integer","minimum":2},"k":{"enum":["a","b"]},"on":{"type":"boolean"}}}`)
	for _, tc := range []struct {
		tools []reach.Tool
		want  string
	}{
		{[]reach.Tool{{Name: "a", Access: reach.Write}, {Name: "get_order"}}, `"tool":"get_order","arguments":{"order_id":"1001"}`},
		{[]reach.Tool{{Name: "a", InputSchema: req}, {Name: "b", Access: reach.Read}}, `"tool":"b","arguments":{}`},
		{[]reach.Tool{{Name: "a", Access: reach.HighRisk}, {Name: "b", InputSchema: req}}, `"tool":"b","arguments":{"k":"a","n":2,"on":false}`},
		{[]reach.Tool{{Name: "a", Access: reach.Write}, {Name: "b", Access: reach.HighRisk}}, ""},
		// A read about the environment or a secret is never the example:
		// its answer, printed in a terminal, can show one.
		{[]reach.Tool{{Name: "ev__get-env", Access: reach.Read}, {Name: "ev__echo", Access: reach.Read, InputSchema: req}}, `"tool":"ev__echo"`},
		{[]reach.Tool{{Name: "printEnv"}, {Name: "list_api_keys"}, {Name: "getSecret"}, {Name: "read_credentials"}, {Name: "auth_token"}, {Name: "get_order_status"}}, `"tool":"get_order_status"`},
		{[]reach.Tool{{Name: "ev__get-env"}, {Name: "keys"}}, ""},
	} {
		got := exampleCall(tc.tools)
		if tc.want == "" && got != "" || !strings.Contains(got, tc.want) {
			t.Errorf("exampleCall(%v) = %s, want it to hold %s", tc.tools, got, tc.want)
		}
	}
}

// TestSensitiveName: words are split at non-letters and case changes, so
// a name that merely holds "env" or "key" inside a word is not refused.
func TestSensitiveName(t *testing.T) {
	for name, want := range map[string]bool{
		"ev__get-env": true, "printEnv": true, "get_environment": true, "list_api_keys": true, "getAPIKey": true,
		"show-secrets": true, "refresh_token": true, "oauth_credentials": true, "auth": true,
		"echo": false, "get_order": false, "monkey_list": false, "keyboard_layout": false, "envelope_size": false,
		"seven": false, "ev__get-tiny-image": false,
	} {
		if got := sensitiveName(name); got != want {
			t.Errorf("sensitiveName(%q) = %v, want %v", name, got, want)
		}
	}
}

// TestBannerWithNoTools: with every upstream out of reach, the banner's
// tools line says why it names none (it was "tools" and nothing).
func TestBannerWithNoTools(t *testing.T) {
	cfg := writeConfig(t, "upstreams:\n  - {name: gone, url: 'http://127.0.0.1:1/mcp', timeout: 1s}\n")
	_, _, stdout := startServe(t, "--config", cfg, "--listen", "127.0.0.1:0", "--data", t.TempDir())
	if out := stdout.String(); !strings.Contains(out, "reach is serving 0 tools") || !strings.Contains(out, "  tools     none yet: an upstream's tools are served once it is reached\n") {
		t.Errorf("banner:\n%s", out)
	}
}

// TestBannerSaysNoKeyYet: a gateway that asks for API keys, takes no JWT
// and has no key yet refuses every client; its banner says so and how to
// make the first key in its data folder (it said nothing).
func TestBannerSaysNoKeyYet(t *testing.T) {
	data := t.TempDir()
	cfg := writeConfig(t, "auth: {keys: true}\n")
	_, stop, stdout := startServe(t, "--config", cfg, "--listen", "127.0.0.1:0", "--data", data)
	stop()
	if want := "reach keys create --principal NAME --roles operator --data " + data + "\n"; !strings.Contains(stdout.String(), want) {
		t.Errorf("banner:\n%s\nwant %q", stdout.String(), want)
	}
	var out strings.Builder
	if err := run(t.Context(), []string{"keys", "create", "--principal", "me", "--data", data}, &out, io.Discard); err != nil {
		t.Fatal(err)
	}
	_, _, stdout = startServe(t, "--config", cfg, "--listen", "127.0.0.1:0", "--data", data)
	if strings.Contains(stdout.String(), "no API key exists yet") {
		t.Errorf("banner with a key:\n%s", stdout.String())
	}
}

var authedCallRE = regexp.MustCompile(`curl -s (\S+) -H "Authorization: Bearer \$REACH_API_KEY" -d '([^']*)'`)

// TestBannerLinesCarryTheKey: with auth, the lines the banner offers to
// copy send the key from $REACH_API_KEY, and its call runs with one (they
// sent none: each, copied, was refused 401 unauthenticated).
func TestBannerLinesCarryTheKey(t *testing.T) {
	data := t.TempDir()
	var key strings.Builder
	if err := run(t.Context(), []string{"keys", "create", "--principal", "me", "--data", data}, &key, io.Discard); err != nil {
		t.Fatal(err)
	}
	cfg := writeConfig(t, "auth: {keys: true}\n")
	_, _, stdout := startServe(t, "--config", cfg, "--listen", "127.0.0.1:0", "--data", data)
	out := stdout.String()
	if !regexp.MustCompile(`claude mcp add --transport http reach \S+/mcp --header "Authorization: Bearer \$REACH_API_KEY"\n`).MatchString(out) {
		t.Errorf("banner's claude line sends no key:\n%s", out)
	}
	m := authedCallRE.FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("banner offers no call with the key:\n%s", out)
	}
	req, err := http.NewRequestWithContext(t.Context(), "POST", m[1], strings.NewReader(m[2]))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+strings.TrimSpace(key.String()))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var body struct {
		Results []struct{ Status string } `json:"results"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil || resp.StatusCode != 200 || len(body.Results) != 1 || body.Results[0].Status != "success" {
		t.Errorf("the banner's call with the key: %d %+v %v, want one success", resp.StatusCode, body, err)
	}
}

// TestIsGoRunBinary: the binary go run builds is told apart from an
// installed one, whose banner names reach itself.
func TestIsGoRunBinary(t *testing.T) {
	for exe, want := range map[string]bool{
		"/tmp/go-build443331351/b001/exe/reach":      true,
		"/var/tmp/x/go-build1/b001/exe/reach":        true,
		`C:\Temp\go-build42\b001\exe\reach.exe`:      filepath.Separator == '\\',
		"/home/me/go/bin/reach":                      false,
		"/usr/local/bin/reach":                       false,
		"/tmp/go-build443331351/b001/exe/reach.test": false,
		"/tmp/go-build443331351/b001/reach":          false,
		"/home/me/src/go-builder/bin/exe/other":      false,
	} {
		if got := isGoRunBinary(exe); got != want {
			t.Errorf("isGoRunBinary(%q) = %v, want %v", exe, got, want)
		}
	}
}
