package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentreach/reach"
	"github.com/agentreach/reach/internal/auth"
	"github.com/agentreach/reach/internal/config"
	"github.com/agentreach/reach/internal/pgtest"
	"github.com/agentreach/reach/internal/store"
)

// TestDeadLetterKeepsItsOwner: a dead letter is its request's owner's,
// after the request is gone too. Globex's request "trip" leaves a dead
// letter; root dismisses it and retention removes the request; after a
// restart acme's client names a request "trip" (request ids are one
// namespace, the client's choice). Acme's operator must neither list
// globex's dead letter (state all) nor, once it is open again (its request
// deleted from the store while it was open), retry or dismiss it; a
// global operator still lists it. Before, the dead letter's tenant was
// read from the request of its id: acme's, once acme took the id.
func TestDeadLetterKeepsItsOwner(t *testing.T) {
	deadLetterKeepsItsOwner(t, func(dir, instance string) string { return "data: " + dir + "\n" })
}

// TestDeadLetterKeepsItsOwnerPostgres is TestDeadLetterKeepsItsOwner on
// a shared PostgreSQL store.
func TestDeadLetterKeepsItsOwnerPostgres(t *testing.T) {
	url := pgtest.Database(t)
	deadLetterKeepsItsOwner(t, func(dir, instance string) string {
		return "data: " + dir + "\nstore: " + url + "\ninstance: " + instance + "\n"
	})
}

func deadLetterKeepsItsOwner(t *testing.T, where func(dir, instance string) string) {
	ctx := t.Context()
	dir := t.TempDir()
	pol := filepath.Join(dir, "policy.cedar")
	if err := os.WriteFile(pol, []byte(`permit (principal, action == Reach::Action::"call", resource);`), 0o600); err != nil {
		t.Fatal(err)
	}
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
	as := func(who string) map[string]string { return map[string]string{"Authorization": "Bearer " + keys[who]} }
	start := func(instance string) (*Gateway, string) {
		t.Helper()
		cfg, err := config.Parse([]byte(where(dir, instance)+"auth: {keys: true}\npolicy: {path: "+pol+"}\n"), os.LookupEnv)
		if err != nil {
			t.Fatal(err)
		}
		g := newTestGateway(t, cfg)
		echoArgs := func(_ context.Context, args json.RawMessage) (json.RawMessage, error) { return args, nil }
		g.rt.MustRegister(
			reach.Tool{Name: "reserve", Access: reach.Write, Func: echoArgs, Undo: &reach.Followup{Tool: "release", Args: `{"seat": "{args.seat}"}`}},
			reach.Tool{Name: "release", Access: reach.Write, Func: func(context.Context, json.RawMessage) (json.RawMessage, error) {
				return nil, &reach.ToolError{Type: "conflict", Message: "the seat map is locked"}
			}},
			reach.Tool{Name: "charge", Access: reach.Write, Func: func(context.Context, json.RawMessage) (json.RawMessage, error) {
				return nil, &reach.ToolError{Type: "conflict", Message: "card declined"}
			}},
		)
		return g, serveTest(t, g).URL
	}
	listed := func(url, who string) map[string]bool {
		t.Helper()
		status, out := do(t, "GET", url+"/v1/deadletters?state=all", "", as(who))
		if status != 200 {
			t.Fatalf("%s: GET /v1/deadletters?state=all = %d %v", who, status, out)
		}
		seen := map[string]bool{}
		for _, d := range out["deadletters"].([]any) {
			seen[fmt.Sprint(path(d, "id"))] = true
		}
		return seen
	}

	g1, url1 := start("one")
	for _, call := range []string{`{"call_id":"c1","tool":"reserve","arguments":{"seat":"4A"}}`, `{"call_id":"c2","tool":"charge","arguments":{"seat":"4A"}}`} {
		if status, out := do(t, "POST", url1+"/v1/calls", `{"request_id":"trip","tool_calls":[`+call+`]}`, as("alice@globex")); status != 200 {
			t.Fatalf("globex's call = %d %v", status, out)
		}
	}
	dls := openDeadLetters(t, g1)
	if len(dls) != 1 || dls[0].Request != "trip" {
		t.Fatalf("open dead letters = %+v, want globex's trip's", dls)
	}
	id := dls[0].ID
	if got := listed(url1, "ops@acme"); got[id] {
		t.Fatalf("ops@acme lists globex's dead letter %s while its request is globex's: %v", id, got)
	}
	if status, out := do(t, "POST", url1+"/v1/deadletters/"+id+"/dismiss", `{"note":"released by hand"}`, as("root")); status != 200 {
		t.Fatalf("root's dismissal of %s = %d %v", id, status, out)
	}
	if status, out := do(t, "POST", url1+"/v1/requests/trip/end", "", as("root")); status != 200 && status != 409 {
		t.Fatalf("root ending trip = %d %v", status, out)
	}
	// Retention removes the ended request; its dead letter, settled, stays.
	// A sweep may remove nothing yet: the request's end is written off the
	// answer's path, and on PostgreSQL the gateway's own sweep may hold the
	// sweep's lock (a batch then leaves everything for the next one). So
	// it sweeps until the request is gone.
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(10 * time.Millisecond) {
		if _, err := g1.store.(store.Retention).SweepFinished(ctx, time.Now().Add(time.Hour), 100); err != nil {
			t.Fatal(err)
		}
		sr, err := g1.store.GetRequest(ctx, "trip")
		if errors.Is(err, store.ErrNotFound) {
			break
		}
		if err != nil || time.Now().After(deadline) {
			t.Fatalf("trip after retention sweeps: %+v, %v; want it removed", sr, err)
		}
	}
	if err := g1.Close(); err != nil {
		t.Fatal(err)
	}

	g2, url2 := start("two")
	if status, out := do(t, "POST", url2+"/v1/calls", `{"request_id":"trip","tool_calls":[{"call_id":"c1","tool":"reserve","arguments":{"seat":"9Z"}}]}`, as("alice@acme")); status != 200 {
		t.Fatalf("acme's call on the id trip = %d %v", status, out)
	}
	if got := listed(url2, "ops@acme"); got[id] {
		t.Errorf("ops@acme lists globex's dead letter %s once acme's request took its id: %v", id, got)
	}
	if got := listed(url2, "root"); !got[id] {
		t.Errorf("root does not list globex's dead letter %s: %v", id, got)
	}

	// The dead letter open again, its request gone: acme's operator does
	// not act on it, and it is left open, not tried.
	n, _ := strings.CutPrefix(id, "dl-")
	var num int64
	if _, err := fmt.Sscan(n, &num); err != nil {
		t.Fatal(err)
	}
	if err := g2.store.UpdateDeadLetter(ctx, &store.DeadLetter{ID: num, State: store.DeadOpen, Error: "the seat map is locked", Attempts: dls[0].Attempts}); err != nil {
		t.Fatal(err)
	}
	if status, body := rawAs(t, keys["ops@acme"], "POST", url2+"/v1/deadletters/"+id+"/retry", ""); status != 404 || strings.Contains(body, "4A") {
		t.Errorf("ops@acme retrying globex's dead letter = %d %s, want 404", status, body)
	}
	if status, body := rawAs(t, keys["ops@acme"], "POST", url2+"/v1/deadletters/"+id+"/dismiss", `{"note":"mine now"}`); status != 404 || strings.Contains(body, "4A") {
		t.Errorf("ops@acme dismissing globex's dead letter = %d %s, want 404", status, body)
	}
	open := openDeadLetters(t, g2)
	if len(open) != 1 || open[0].ID != id || open[0].State != reach.DeadLetterOpen || open[0].Attempts != dls[0].Attempts {
		t.Fatalf("after ops@acme's actions the open dead letters are %+v, want %s open and not tried", open, id)
	}
	if open[0].Tenant != "globex" || open[0].Principal != "alice" {
		t.Errorf("dead letter %s is kept as %q of tenant %q, want alice of globex", id, open[0].Principal, open[0].Tenant)
	}
}
