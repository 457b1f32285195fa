package gateway

import (
	"context"
	"iter"
	"net/http"
	"os"
	"path/filepath"
	"testing"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2aclient"
	"github.com/a2aproject/a2a-go/v2/a2asrv"
	"github.com/agentreach/reach/internal/auth"
	"github.com/agentreach/reach/internal/config"
)

// heldAgent is an A2A agent whose every task works until its caller's
// request ends (reach cancels it when the gateway closes).
type heldAgent struct{}

func (heldAgent) Execute(ctx context.Context, ec *a2asrv.ExecutorContext) iter.Seq2[a2a.Event, error] {
	return func(yield func(a2a.Event, error) bool) {
		if ec.StoredTask == nil && !yield(a2a.NewSubmittedTask(ec, ec.Message), nil) {
			return
		}
		if !yield(a2a.NewStatusUpdateEvent(ec, a2a.TaskStateWorking, nil), nil) {
			return
		}
		<-ctx.Done()
	}
}

func (heldAgent) Cancel(_ context.Context, ec *a2asrv.ExecutorContext) iter.Seq2[a2a.Event, error] {
	return func(yield func(a2a.Event, error) bool) {
		yield(a2a.NewStatusUpdateEvent(ec, a2a.TaskStateCanceled, nil), nil)
	}
}

// TestTenantAgentsLiveTasks: GET /v1/agents counts, of an agent's live
// tasks, the caller's own, its tenant's for an operator of a tenant,
// everyone's for an operator of no tenant. Before, anyone signed in was
// told every tenant's: when another tenant works with an agent, and how
// much.
func TestTenantAgentsLiveTasks(t *testing.T) {
	dir := t.TempDir()
	pol := filepath.Join(dir, "policy.cedar")
	if err := os.WriteFile(pol, []byte(`permit (principal, action, resource);`), 0o600); err != nil {
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
		"bob@globex":   {Principal: "bob", Tenant: "globex"},
		"ops@acme":     {Principal: "ops", Tenant: "acme", Roles: []string{"operator"}},
		"ops@globex":   {Principal: "ops", Tenant: "globex", Roles: []string{"operator"}},
		"root":         {Principal: "root", Roles: []string{"operator"}},
	} {
		if keys[name], _, err = ks.Create(spec); err != nil {
			t.Fatal(err)
		}
	}
	up := executorUpstream(t, "holds its tasks", heldAgent{})
	cfg, err := config.Parse([]byte("data: "+dir+"\nauth: {keys: true}\npolicy: {path: "+pol+"}\nagents:\n  - {name: executor, url: "+up.URL+"}\n"), os.LookupEnv)
	if err != nil {
		t.Fatal(err)
	}
	g := newTestGateway(t, cfg)
	srvURL := serveTest(t, g).URL
	send := func(who string) {
		t.Helper()
		cl, err := a2aclient.NewFromEndpoints(t.Context(), []*a2a.AgentInterface{a2a.NewAgentInterface(srvURL+"/a2a/executor", a2a.TransportProtocolJSONRPC)},
			a2aclient.WithJSONRPCTransport(&http.Client{Transport: bearer{keys[who], http.DefaultTransport}}))
		if err != nil {
			t.Fatal(err)
		}
		m := a2a.NewMessage(a2a.MessageRoleUser, a2a.NewTextPart("hold"))
		if _, err := cl.SendMessage(t.Context(), &a2a.SendMessageRequest{Message: m, Config: &a2a.SendMessageConfig{ReturnImmediately: true}}); err != nil {
			t.Fatal(err)
		}
	}
	live := func(who string) int {
		t.Helper()
		status, out := do(t, "GET", srvURL+"/v1/agents", "", map[string]string{"Authorization": "Bearer " + keys[who]})
		if status != 200 {
			t.Fatalf("%s: GET /v1/agents = %d %v", who, status, out)
		}
		n, _ := path(out, "agents", 0, "live_tasks").(float64)
		return int(n)
	}
	send("alice@globex")
	send("bob@globex")
	send("alice@acme")
	awaitAgents(t, "the three tasks to work", func() bool { return live("root") == 3 })
	for who, want := range map[string]int{"root": 3, "ops@globex": 2, "ops@acme": 1, "alice@globex": 1, "bob@globex": 1, "alice@acme": 1} {
		if got := live(who); got != want {
			t.Errorf("%s counts %d live tasks, want %d", who, got, want)
		}
	}
}
