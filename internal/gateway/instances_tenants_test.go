package gateway

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentreach/reach/internal/auth"
	"github.com/agentreach/reach/internal/config"
	"github.com/agentreach/reach/internal/pgtest"
	"github.com/jackc/pgx/v5"
)

// tenantInstances builds two authenticating gateways, a and b, on one
// PostgreSQL database (whose URL it returns), with one API key each for
// alice of acme and eve of globex, and for the operators of each tenant
// (ops@acme, ops@globex).
func tenantInstances(t *testing.T) (a, b, db string, keys map[string]string) {
	t.Helper()
	db = pgtest.Database(t)
	up := serveUpstream(t, newUpstreamProbe())
	kdir := t.TempDir()
	ks, err := auth.OpenKeys(auth.KeysPath(kdir))
	if err != nil {
		t.Fatal(err)
	}
	keys = map[string]string{}
	for name, spec := range map[string]auth.KeySpec{"alice": {Principal: "alice", Tenant: "acme"}, "eve": {Principal: "eve", Tenant: "globex"},
		"ops@acme": {Principal: "ops", Tenant: "acme", Roles: []string{"operator"}}, "ops@globex": {Principal: "ops", Tenant: "globex", Roles: []string{"operator"}}} {
		if keys[name], _, err = ks.Create(spec); err != nil {
			t.Fatal(err)
		}
	}
	raw, err := os.ReadFile(auth.KeysPath(kdir))
	if err != nil {
		t.Fatal(err)
	}
	var urls []string
	for _, name := range []string{"a", "b"} {
		dir := t.TempDir()
		if err := os.MkdirAll(filepath.Dir(auth.KeysPath(dir)), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(auth.KeysPath(dir), raw, 0o600); err != nil {
			t.Fatal(err)
		}
		yaml := fmt.Sprintf("store: %s\ninstance: %s\ninstance_ttl: 2s\ndata: %s\nauth: {keys: true}\nupstreams:\n  - name: up\n    url: %s\n", db, name, dir, up.URL)
		cfg, err := config.Parse([]byte(yaml), os.LookupEnv)
		if err != nil {
			t.Fatal(err)
		}
		urls = append(urls, serveTest(t, newTestGateway(t, cfg)).URL)
	}
	return urls[0], urls[1], db, keys
}

// A principal of another tenant who names alice's running request on the
// other instance is refused, and the refusal leaves nothing behind: that
// instance does not become one of the request's replicas, so the request
// ends when alice ends it (a replica left behind kept it running, and a
// later recovery of that instance's work undid alice's finished calls).
func TestInstancesForeignJoinLeavesNothing(t *testing.T) {
	a, b, db, keys := tenantInstances(t)
	as := func(base, who, request, callID string) (int, map[string]any) {
		return do(t, "POST", base+"/v1/calls", fmt.Sprintf(`{"request_id":%q,"tool_calls":[{"call_id":%q,"tool":"up__echo","arguments":{"text":"hi"}}]}`,
			request, callID), map[string]string{"Authorization": "Bearer " + keys[who]})
	}
	if st, out := as(a, "alice", "rx", "c1"); st != 200 || path(out, "results", 0, "status") != "success" {
		t.Fatalf("alice on a: %d %v", st, out)
	}
	if st, out := as(b, "eve", "rx", "c2"); st == 200 || !strings.Contains(fmt.Sprint(out), "request_id_unavailable") {
		t.Fatalf("eve on b, naming alice's request: %d %v; want it refused as request_id_unavailable", st, out)
	}
	conn, err := pgx.Connect(context.Background(), db)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	rows, _ := conn.Query(context.Background(), `SELECT owner FROM replicas WHERE request = 'rx'`)
	owners, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range owners {
		if strings.HasPrefix(o, "b/") {
			t.Errorf("eve's refused call made b a replica of alice's request: %v", owners)
		}
	}
	var principal string
	if err := conn.QueryRow(context.Background(), `SELECT principal FROM requests WHERE id = 'rx'`).Scan(&principal); err != nil || principal != "alice" {
		t.Errorf("rx belongs to %q (%v), want alice", principal, err)
	}
	if st, out := do(t, "POST", a+"/v1/requests/rx/end", "", map[string]string{"Authorization": "Bearer " + keys["alice"]}); st != 200 {
		t.Fatalf("alice ends rx on a: %d %v", st, out)
	}
	state := "running"
	for end := time.Now().Add(10 * time.Second); state == "running" && time.Now().Before(end); time.Sleep(50 * time.Millisecond) {
		if err := conn.QueryRow(context.Background(), `SELECT state FROM requests WHERE id = 'rx'`).Scan(&state); err != nil {
			t.Fatal(err)
		}
	}
	if state == "running" {
		t.Errorf("alice ended rx on a, and the store still has it running")
	}
	// Nor can eve take over the id once it ended.
	if st, out := as(b, "eve", "rx", "c3"); st == 200 || !strings.Contains(fmt.Sprint(out), "request_id_unavailable") {
		t.Errorf("eve on b, naming alice's ended request: %d %v; want request_id_unavailable", st, out)
	}
}

// An approved call that the agent sends again to both instances at once
// runs once, on one of them, each of five times.
func TestInstancesApprovedCallRunsOnceOnBoth(t *testing.T) {
	a, b, p := twoInstances(t, "")
	runs := func() int { p.mu.Lock(); defer p.mu.Unlock(); return len(p.metas) }
	for i := range 5 {
		req := fmt.Sprintf("rr%d", i)
		before := runs()
		askOnAApproveOnB(t, a, b, req)
		res := make(chan map[string]any, 2)
		for _, base := range []string{a, b} {
			go func() {
				_, out := do(t, "POST", base+"/v1/calls", fmt.Sprintf(`{"request_id":%q,"tool_calls":[{"call_id":"d","tool":"up__delete_all","arguments":{}}]}`, req), nil)
				r, _ := path(out, "results", 0).(map[string]any)
				res <- r
			}()
		}
		r1, r2 := <-res, <-res
		if n := runs() - before; n != 1 {
			t.Errorf("try %d: the approved call ran %d times: %v / %v", i, n, r1, r2)
		}
	}
}

// A principal of another tenant cannot end alice's request through the
// instance that does not run it (nor through the one that does): the end
// is refused, and alice's next call on the request runs.
func TestInstancesForeignEndRefused(t *testing.T) {
	a, b, db, keys := tenantInstances(t)
	call := func(base, who, callID string) (int, map[string]any) {
		return do(t, "POST", base+"/v1/calls", fmt.Sprintf(`{"request_id":"re","tool_calls":[{"call_id":%q,"tool":"up__echo","arguments":{"text":"hi"}}]}`,
			callID), map[string]string{"Authorization": "Bearer " + keys[who]})
	}
	if st, out := call(a, "alice", "c1"); st != 200 || path(out, "results", 0, "status") != "success" {
		t.Fatalf("alice on a: %d %v", st, out)
	}
	for _, base := range []string{b, a} {
		if st, out := do(t, "POST", base+"/v1/requests/re/end", "", map[string]string{"Authorization": "Bearer " + keys["eve"]}); st == 200 {
			t.Fatalf("eve ended alice's request through %s: %d %v", base, st, out)
		}
	}
	conn, err := pgx.Connect(context.Background(), db)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	var state string
	if err := conn.QueryRow(context.Background(), `SELECT state FROM requests WHERE id = 're'`).Scan(&state); err != nil || state != "running" {
		t.Fatalf("after eve's ends, re is %q (%v), want running", state, err)
	}
	if st, out := call(a, "alice", "c2"); st != 200 || path(out, "results", 0, "status") != "success" {
		t.Fatalf("alice's next call after eve's ends: %d %v", st, out)
	}
}
