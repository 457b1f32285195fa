package main

import (
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"

	"github.com/agentreach/reach/internal/auth"
	"github.com/agentreach/reach/internal/config"
	"github.com/agentreach/reach/internal/gateway"
	"github.com/agentreach/reach/internal/store"
	"github.com/agentreach/reach/internal/store/sqlite"
)

// TestTenantOperatorCLI: through a gateway with keys, an operator of
// tenant acme lists acme's requests and not globex's (reach requests
// list), cannot stop globex's (reach requests cancel: 403), and dismisses
// the dead letter of acme's earlier request but not globex's (404, the
// store unchanged); an operator of no tenant lists both tenants' requests.
func TestTenantOperatorCLI(t *testing.T) {
	dir := t.TempDir()
	st, err := sqlite.Open(t.Context(), dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	dl := map[string]string{} // tenant -> its dead letter's id
	for _, tenant := range []string{"acme", "globex"} {
		if err := st.PutRequest(t.Context(), &store.Request{ID: tenant + "-old", Principal: "alice", Tenant: tenant, Agent: "api", State: "ended"}); err != nil {
			t.Fatal(err)
		}
		id, err := st.AddDeadLetter(t.Context(), &store.DeadLetter{Request: tenant + "-old", Frame: "00000000000000ab", Tool: "cancel_hotel",
			Args: []byte(`{"ref":"R1"}`), Error: "hotel API down", Attempts: 3})
		if err != nil {
			t.Fatal(err)
		}
		dl[tenant] = strconv.FormatInt(id, 10)
	}
	st.Close()
	ks, err := auth.OpenKeys(auth.KeysPath(dir))
	if err != nil {
		t.Fatal(err)
	}
	keys := map[string]string{}
	for name, spec := range map[string]auth.KeySpec{
		"alice@acme":   {Principal: "alice", Tenant: "acme"},
		"alice@globex": {Principal: "alice", Tenant: "globex"},
		"ops@acme":     {Principal: "ops", Tenant: "acme", Roles: []string{"operator"}},
		"root":         {Principal: "root", Roles: []string{"operator"}},
	} {
		if keys[name], _, err = ks.Create(spec); err != nil {
			t.Fatal(err)
		}
	}
	cfg, err := config.Parse([]byte("examples: true\ndata: "+dir+"\nauth: {keys: true}\n"), nil)
	if err != nil {
		t.Fatal(err)
	}
	g, err := gateway.New(t.Context(), cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	srv := httptest.NewServer(g.Handler())
	defer srv.Close()
	for who, id := range map[string]string{"alice@acme": "acme-now", "alice@globex": "globex-now"} {
		req, _ := http.NewRequest("POST", srv.URL+"/v1/calls", strings.NewReader(`{"request_id":"`+id+`","tool_calls":[{"call_id":"c1","tool":"search_kb","arguments":{"query":"refund"}}]}`))
		req.Header.Set("Authorization", "Bearer "+keys[who])
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != 200 {
			t.Fatalf("%s's call = %d", who, resp.StatusCode)
		}
	}

	out, _, err := runCmd(t, newRequests, "list", "--api", srv.URL, "--key", keys["ops@acme"])
	if err != nil || !strings.Contains(out, "acme-now") || strings.Contains(out, "globex-now") {
		t.Errorf("ops@acme's requests list: %v\n%s\nwant acme-now and not globex-now", err, out)
	}
	out, _, err = runCmd(t, newRequests, "list", "--api", srv.URL, "--key", keys["root"])
	if err != nil || !strings.Contains(out, "acme-now") || !strings.Contains(out, "globex-now") {
		t.Errorf("root's requests list: %v\n%s\nwant both", err, out)
	}
	// Another tenant's request is answered as an id no request has.
	if _, _, err := runCmd(t, newRequests, "cancel", "globex-now", "--api", srv.URL, "--key", keys["ops@acme"]); err == nil || !strings.Contains(err.Error(), `There is no request "globex-now" here`) || !strings.Contains(err.Error(), "404") {
		t.Errorf("ops@acme cancelling globex-now: %v, want the gateway's 404, as for an unknown id", err)
	}
	if _, _, err := runCmd(t, newDeadLetters, "dismiss", dl["globex"], "--data", dir, "--api", srv.URL, "--key", keys["ops@acme"], "--note", "not mine"); err == nil || !strings.Contains(err.Error(), "404") {
		t.Errorf("ops@acme dismissing globex's dead letter: %v, want the gateway's 404", err)
	}
	if out, _, err := runCmd(t, newDeadLetters, "dismiss", dl["acme"], "--data", dir, "--api", srv.URL, "--key", keys["ops@acme"], "--note", "cancelled by phone"); err != nil || !strings.Contains(out, "by the gateway") {
		t.Errorf("ops@acme dismissing acme's dead letter: %v %s", err, out)
	}
	if st, err = sqlite.Open(t.Context(), dir, nil); err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	ds, err := st.ListDeadLetters(t.Context(), "")
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range ds {
		if want := map[string]string{"acme-old": store.DeadResolved, "globex-old": store.DeadOpen}[d.Request]; d.State != want {
			t.Errorf("dead letter of %s is %s, want %s", d.Request, d.State, want)
		}
	}
}
