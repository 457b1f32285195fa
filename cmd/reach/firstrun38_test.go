package main

import (
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// watchLineRE is the banner's first command to copy: reach requests list,
// with the --api it needs.
var watchLineRE = regexp.MustCompile(`\n  reach requests list( --api (\S+))?  `)

// TestBannerOnEveryAddressNamesOneToConnectTo: a gateway with auth served
// on every address (listen: 0.0.0.0:7400, as in the container image)
// prints URLs a client on this machine connects to, and the commands it
// offers run with the key. It printed http://[::]:PORT everywhere, and
// the reach requests list --api http://[::]:PORT it offered refused to
// send the key there, an address that is not loopback.
func TestBannerOnEveryAddressNamesOneToConnectTo(t *testing.T) {
	data := t.TempDir()
	var key strings.Builder
	if err := run(t.Context(), []string{"keys", "create", "--principal", "ops", "--roles", "operator", "--data", data}, &key, io.Discard); err != nil {
		t.Fatal(err)
	}
	cfg := writeConfig(t, "auth: {keys: true}\n")
	_, _, stdout := startServe(t, "--config", cfg, "--listen", "0.0.0.0:0", "--data", data)
	out := stdout.String()
	if strings.Contains(out, "http://[::]") || strings.Contains(out, "http://0.0.0.0") {
		t.Errorf("the banner names an address to connect to that is none:\n%s", out)
	}
	if !strings.Contains(out, "every address of this machine") {
		t.Errorf("the banner does not say it serves every address:\n%s", out)
	}
	m := watchLineRE.FindStringSubmatch(out)
	if m == nil || m[2] == "" {
		t.Fatalf("the banner offers no reach requests list --api URL:\n%s", out)
	}
	t.Setenv("REACH_API_KEY", strings.TrimSpace(key.String()))
	t.Setenv("REACH_API", "")
	t.Setenv("REACH_ALLOW_PLAIN_HTTP", "")
	var list strings.Builder
	if err := run(t.Context(), []string{"requests", "list", "--api", m[2]}, &list, io.Discard); err != nil {
		t.Errorf("reach requests list --api %s, as the banner offers it: %v", m[2], err)
	}
}

// TestLocalBase: the URL a client on this machine uses for a listener's
// address: the address itself, or for every address the loopback one of
// the family configured.
func TestLocalBase(t *testing.T) {
	for _, tc := range []struct {
		addr, configured, want string
		every                  bool
	}{
		{"127.0.0.1:7400", "127.0.0.1:7400", "http://127.0.0.1:7400", false},
		{"[::1]:7400", "[::1]:7400", "http://[::1]:7400", false},
		{"192.168.1.2:7400", "192.168.1.2:7400", "http://192.168.1.2:7400", false},
		{"[::]:7400", "0.0.0.0:7400", "http://127.0.0.1:7400", true},
		{"[::]:7400", ":7400", "http://127.0.0.1:7400", true},
		{"[::]:7400", "[::]:7400", "http://[::1]:7400", true},
		{"0.0.0.0:7400", "0.0.0.0:7400", "http://127.0.0.1:7400", true},
	} {
		if got, every := localBase(tc.addr, tc.configured); got != tc.want || every != tc.every {
			t.Errorf("localBase(%q, %q) = %q, %v; want %q, %v", tc.addr, tc.configured, got, every, tc.want, tc.every)
		}
	}
}

// TestDeadLettersStateHelpListsWhatItTakes: the --state flag's help names
// every state deadletters list takes, as its refusal of another does. It
// left out taken, which the command, the API and the UI all take.
func TestDeadLettersStateHelpListsWhatItTakes(t *testing.T) {
	err := run(t.Context(), []string{"deadletters", "list", "--state", "bogus", "--data", t.TempDir()}, io.Discard, io.Discard)
	if err == nil {
		t.Fatal("deadletters list --state bogus was not refused")
	}
	_, want, ok := strings.Cut(err.Error(), "want ")
	if !ok {
		t.Fatalf("the refusal names no states: %v", err)
	}
	var help strings.Builder
	if err := run(t.Context(), []string{"deadletters", "list", "--help"}, &help, io.Discard); err != nil {
		t.Fatal(err)
	}
	var flag string
	for _, line := range strings.Split(help.String(), "\n") {
		if strings.Contains(line, "--state") {
			flag = line
		}
	}
	for _, s := range strings.FieldsFunc(want, func(r rune) bool { return r == ',' || r == ' ' }) {
		if s == "or" {
			continue
		}
		if !strings.Contains(flag, s) {
			t.Errorf("deadletters list --help's --state line %q does not name %q, which it takes", flag, s)
		}
	}
}

// TestValidateAsksTheModelEndpoint: reach validate asks the model endpoint
// for its models, as the model proxy does, and warns of a base_url that
// lacks its /v1 (every turn then got the endpoint's 404, "Invalid URL (POST
// /chat/completions)", though validate said ok), of a key refused, and of an
// endpoint that does not answer; --offline asks nothing, and a right
// base_url warns of nothing.
func TestValidateAsksTheModelEndpoint(t *testing.T) {
	var asked atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		asked.Add(1)
		if r.Header.Get("Authorization") != "Bearer sk-good" {
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		if r.URL.Path != "/v1/models" {
			w.WriteHeader(http.StatusNotFound)
			io.WriteString(w, `{"error":{"message":"Invalid URL (GET `+r.URL.Path+`)"}}`)
			return
		}
		io.WriteString(w, `{"object":"list","data":[{"id":"gpt-4o-mini","object":"model"}]}`)
	}))
	defer srv.Close()
	gone := httptest.NewServer(nil)
	gone.Close()
	for _, tc := range []struct {
		name, base, key string
		offline         bool
		want            string // "" for no warning about the model
	}{
		{"without /v1", srv.URL, "sk-good", false, "answered 404 to GET models: it is not the API's base URL"},
		{"with /v1", srv.URL + "/v1", "sk-good", false, ""},
		{"key refused", srv.URL + "/v1", "sk-bad", false, "refused its api_key (401"},
		{"not answering", gone.URL + "/v1", "sk-good", false, "did not answer GET models"},
		{"offline", srv.URL, "sk-good", true, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := asked.Load()
			cfg := writeConfig(t, "model: {base_url: \""+tc.base+"\", api_key: "+tc.key+"}\ndata: "+t.TempDir()+"\n")
			args := []string{"validate", "--config", cfg}
			if tc.offline {
				args = append(args, "--offline")
			}
			var out strings.Builder
			if err := run(t.Context(), args, &out, io.Discard); err != nil {
				t.Fatalf("validate: %v", err)
			}
			got := out.String()
			if tc.want == "" {
				if strings.Contains(got, "model.base_url") {
					t.Errorf("validate warned of the model endpoint:\n%s", got)
				}
			} else if !strings.Contains(got, "warning: model.base_url") || !strings.Contains(got, tc.want) {
				t.Errorf("validate said:\n%s\nwant a warning of model.base_url saying %q", got, tc.want)
			}
			if strings.Contains(got, "sk-good") || strings.Contains(got, "sk-bad") {
				t.Errorf("validate printed the key:\n%s", got)
			}
			if tc.offline && asked.Load() != before {
				t.Errorf("validate --offline asked the model endpoint")
			}
		})
	}
}

// TestStateCommandsNeedNoUpstreamSecrets: the commands that read the
// gateway's state with --config (audit, tools, deadletters, keys) read a
// configuration whose header, env and model key name variables this shell
// does not set: they send nothing there. An operator's reach audit verify
// --config FILE was refused for the upstream token the service alone is
// given. A store: whose variable is unset is still an error: they read it.
func TestStateCommandsNeedNoUpstreamSecrets(t *testing.T) {
	data := t.TempDir()
	cfg := writeConfig(t, "data: "+data+"\n"+
		"upstreams:\n  - name: tickets\n    url: https://mcp.tickets.example/mcp\n    headers: {Authorization: \"Bearer ${REACH_T38_UNSET}\"}\n"+
		"  - name: memory\n    command: [mcp-server-memory]\n    env: {TOKEN: \"${REACH_T38_UNSET}\"}\n"+
		"model: {base_url: \"https://api.example/v1\", api_key: \"${REACH_T38_UNSET}\"}\n")
	for _, args := range [][]string{
		{"audit", "verify"}, {"tools", "list"}, {"deadletters", "list"}, {"keys", "list"},
	} {
		err := run(t.Context(), append(args, "--config", cfg), io.Discard, io.Discard)
		if err != nil && strings.Contains(err.Error(), "REACH_T38_UNSET") {
			t.Errorf("reach %s --config: %v; want it read without the upstreams' secrets", strings.Join(args, " "), err)
		}
	}
	// serve and validate still want them.
	if err := run(t.Context(), []string{"validate", "--offline", "--config", cfg}, io.Discard, io.Discard); err == nil || !strings.Contains(err.Error(), "${REACH_T38_UNSET} is not set") {
		t.Errorf("validate --offline with a header's variable unset: %v, want it refused", err)
	}
	store := writeConfig(t, "store: \"postgres://reach:${REACH_T38_UNSET}@127.0.0.1:1/reach\"\n")
	if err := run(t.Context(), []string{"audit", "verify", "--config", store}, io.Discard, io.Discard); err == nil || !strings.Contains(err.Error(), "${REACH_T38_UNSET} is not set") {
		t.Errorf("audit verify --config with store:'s variable unset: %v, want it refused", err)
	}
}

// TestRequiredFlagsSayRequired: a flag a command requires says so in its
// help, as --principal and --note do; approvals deny's --reason read
// "why (the agent is told a denial's reason)", and the user learnt it was
// required from the refusal.
func TestRequiredFlagsSayRequired(t *testing.T) {
	root := newRoot(io.Discard, io.Discard)
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		c.LocalFlags().VisitAll(func(f *pflag.Flag) {
			if _, ok := f.Annotations[cobra.BashCompOneRequiredFlag]; ok && !strings.Contains(f.Usage, "required") {
				t.Errorf("reach %s: --%s is required, and its help %q does not say so", strings.TrimPrefix(c.CommandPath(), "reach "), f.Name, f.Usage)
			}
		})
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(root)
}

// TestDemoServeSaysWhereTheScenariosAre: reach demo --serve's banner offers
// reach requests list, which lists the gateway's own requests, not the
// scenarios the UI shows; the output says so. It said nothing, and a user
// who ran the command it offered read "no requests" after seven scenarios.
func TestDemoServeSaysWhereTheScenariosAre(t *testing.T) {
	base, _, stdout := startCmd(t, "demo", "--serve", "--listen", "127.0.0.1:0", "--data", t.TempDir(), "--out", t.TempDir())
	t.Setenv("REACH_API_KEY", "")
	var list strings.Builder
	if err := run(t.Context(), []string{"requests", "list", "--api", base}, &list, io.Discard); err != nil {
		t.Fatal(err)
	}
	if strings.TrimSpace(list.String()) != "no requests" {
		return // the API lists the scenarios: nothing to explain
	}
	if out := stdout.String(); !strings.Contains(out, "shown in the web UI") || !strings.Contains(out, "reach requests") {
		t.Errorf("reach requests list says %q after demo --serve, and the output does not say the scenarios are in the UI only:\n%s", list.String(), out)
	}
}

// TestKeysRevokeUnknownSaysWhatAnIdIs: reach keys revoke of an id the
// folder does not hold names the file and the command that lists the
// ids; given the key itself (rk_...), it says that is no id, and prints
// nothing of the key. It said "revoking ID: no such key", and echoed a key
// given in place of its id.
func TestKeysRevokeUnknownSaysWhatAnIdIs(t *testing.T) {
	data := t.TempDir()
	var key strings.Builder
	if err := run(t.Context(), []string{"keys", "create", "--principal", "me", "--data", data}, &key, io.Discard); err != nil {
		t.Fatal(err)
	}
	err := run(t.Context(), []string{"keys", "revoke", "key_nope", "--data", data}, io.Discard, io.Discard)
	if err == nil || !strings.Contains(err.Error(), "keys.json") || !strings.Contains(err.Error(), "reach keys list") {
		t.Errorf("keys revoke key_nope: %v, want the file and reach keys list named", err)
	}
	secret := strings.TrimSpace(key.String())
	err = run(t.Context(), []string{"keys", "revoke", secret, "--data", data}, io.Discard, io.Discard)
	if err == nil || !strings.Contains(err.Error(), "not its id") || strings.Contains(err.Error(), secret[3:]) {
		t.Errorf("keys revoke with the key itself: %v, want it told that is no id, the key not echoed", err)
	}
}

// TestBenchLoopsNamesAFolderThatIsNone: reach bench loops of a folder that
// does not exist, or of a trace file, says it is not a folder of traces;
// it said "no *.json traces in DIR", as of an empty folder.
func TestBenchLoopsNamesAFolderThatIsNone(t *testing.T) {
	file := writeConfig(t, "{}\n")
	for _, dir := range []string{"/nonexistent-traces", file} {
		err := run(t.Context(), []string{"bench", "loops", dir}, io.Discard, io.Discard)
		if err == nil || !strings.Contains(err.Error(), "is not a folder of traces") {
			t.Errorf("bench loops %s: %v, want it told it is not a folder", dir, err)
		}
	}
}

// TestUnknownFlagSaysTheOneMeant: an unknown flag close to one the command
// takes (its own or its group's) is named; one close to none is not.
func TestUnknownFlagSaysTheOneMeant(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"requests", "list", "--limt", "3"}, "did you mean --limit?"},
		{[]string{"requests", "list", "--ap", "http://127.0.0.1:1"}, "did you mean --api?"},
		{[]string{"serve", "--lisen", "127.0.0.1:0"}, "did you mean --listen?"},
		{[]string{"audit", "verify", "--dta", "x"}, "did you mean --data?"},
	} {
		err := run(t.Context(), tc.args, io.Discard, io.Discard)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("reach %s: %v, want %q", strings.Join(tc.args, " "), err, tc.want)
		}
	}
	err := run(t.Context(), []string{"requests", "list", "--zzzzzzzzzz"}, io.Discard, io.Discard)
	if err == nil || strings.Contains(err.Error(), "did you mean") || !strings.Contains(err.Error(), "unknown flag") {
		t.Errorf("reach requests list --zzzzzzzzzz: %v, want unknown flag with no suggestion", err)
	}
}
