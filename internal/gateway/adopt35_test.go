package gateway

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/agentreach/reach/internal/config"
	"github.com/agentreach/reach/internal/pgtest"
	"github.com/agentreach/reach/internal/store/postgres"
)

// TestInstancesForgottenLifeAdopted: an approval's denial that instance
// "gone" stored and did not audit (killed between the two), its life
// forgotten since (no life of its name is listed any more, as after the
// recovery that found it dead), is audited by the next instance that
// starts on the store, saying for which instance. Before, adoption ran
// only while the store listed a dead life: once the life was forgotten
// (even when adopting had failed), nothing audited the denial.
func TestInstancesForgottenLifeAdopted(t *testing.T) {
	url := pgtest.Database(t)
	p := newUpstreamProbe()
	up := serveUpstream(t, p)
	parse := func(name string) *config.Config {
		cfg, err := config.Parse([]byte(fmt.Sprintf("store: %s\ninstance: %s\ninstance_ttl: 2s\nupstreams:\n  - name: up\n    url: %s\n",
			url, name, up.URL)), os.LookupEnv)
		if err != nil {
			t.Fatal(err)
		}
		return cfg
	}
	gone := newTestGateway(t, parse("gone"))
	srv := serveTest(t, gone)
	if r := callOn(t, srv.URL, "rq35", "d", "up__delete_all", `{}`); r["status"] != "pending" {
		t.Fatalf("a high-risk call: %v", r)
	}
	_, list := do(t, "GET", srv.URL+"/v1/approvals?status=pending", "", nil)
	id, _ := path(list, "approvals", 0, "id").(string)
	if id == "" {
		t.Fatalf("no pending approval: %v", list)
	}
	srv.Close()
	gone.Close() // departs: no life of "gone" is listed

	// Its denial, stored marked unaudited by "gone", as a kill between
	// the decision's write and its audit leaves it.
	ctx := context.Background()
	st, err := postgres.Open(ctx, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	ar, err := st.GetApproval(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	var data map[string]any
	if err := json.Unmarshal(ar.Data, &data); err != nil {
		t.Fatal(err)
	}
	data["status"], data["unaudited"], data["instance"] = "denied", true, "gone"
	data["denial"] = map[string]any{"by": "alice", "as": "user", "at": time.Now().UTC(), "reason": "not this one"}
	if ar.Data, err = json.Marshal(data); err != nil {
		t.Fatal(err)
	}
	ar.Status = "denied"
	if err := st.PutApproval(ctx, ar); err != nil {
		t.Fatal(err)
	}
	if ls, err := st.Lives(ctx, 2*time.Second); err != nil || len(ls) != 0 {
		t.Fatalf("lives listed: %+v %v; want none", ls, err)
	}

	b := newTestGateway(t, parse("b"))
	var found string
	for end := time.Now().Add(20 * time.Second); found == "" && time.Now().Before(end); time.Sleep(100 * time.Millisecond) {
		if err := b.audit.Flush(ctx); err != nil {
			t.Fatal(err)
		}
		evs, err := b.audit.Show(ctx, "rq35")
		if err != nil {
			t.Fatal(err)
		}
		for _, ev := range evs {
			if ev.Kind == "approval" && ev.Decision == "denied" && strings.Contains(ev.Message, id) {
				found = ev.Message
			}
		}
	}
	if found == "" || !strings.Contains(found, "not this one") || !strings.Contains(found, "instance gone") {
		t.Fatalf("the denial of forgotten instance gone was audited as %q; want it audited by b, its reason and for which instance", found)
	}
	ar, err = st.GetApproval(ctx, id)
	if err != nil || strings.Contains(string(ar.Data), `"unaudited"`) {
		t.Errorf("the adopted denial is still marked: %v %s", err, ar.Data)
	}
}
