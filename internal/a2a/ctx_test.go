package a2a

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"

	"github.com/agentreach/reach"
	"github.com/agentreach/reach/internal/pgtest"
	"github.com/agentreach/reach/internal/store/postgres"
	"github.com/agentreach/reach/internal/store/sqlite"
)

// peerGateway is another gateway in front of h's agents on the store st:
// another instance, or h's after a restart.
func peerGateway(t *testing.T, h *harness, st TaskStore) *harness {
	t.Helper()
	p := &harness{t: t, rt: reach.New(nil), agents: h.agents, audit: &memAudit{}}
	var agents []Agent
	for n, f := range h.agents {
		agents = append(agents, Agent{Name: n, URL: f.srv.URL})
	}
	g, err := New(t.Context(), &Options{Agents: agents, Runtime: p.rt, Link: testLinker{p.rt}, Identity: testIdentity{},
		Audit: p.audit, CancelTimeout: time.Second, Tasks: st})
	if err != nil {
		t.Fatal(err)
	}
	p.g = g
	p.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p.g.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), whoKey{}, r.Header.Get("X-Who"))))
	}))
	t.Cleanup(func() { p.srv.Close(); p.g.Close() })
	return p
}

// TestA2AContextsPerPrincipal: each principal's context ids are its own
// at the agent, which sees every caller as reach. Bob naming alice's
// context id (or the agent's id for it, had he learned it) reaches the
// agent in a context of his own, never in hers, and his task at reach
// still shows the id he named; alice naming hers again continues her
// conversation at the agent: on another instance on the same store, and
// after a restart. What the agent says of the context (its events, its
// GetTask answer) reaches the caller under the caller's id. Reach passed
// contextId on as sent: bob's message went into alice's conversation
// (a refusal by the tasks one instance held missed a context of ended
// tasks, or another instance's).
func TestA2AContextsPerPrincipal(t *testing.T) {
	t.Run("sqlite", func(t *testing.T) {
		st, err := sqlite.Open(t.Context(), t.TempDir(), &sqlite.Options{})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { st.Close() })
		contextsPerPrincipal(t, st)
	})
	t.Run("postgres", func(t *testing.T) {
		if testing.Short() {
			t.Skip("starts PostgreSQL")
		}
		pg := pgtest.Own(t)
		url, err := pg.CreateDatabase(t.Context(), "contexts")
		if err != nil {
			t.Fatal(err)
		}
		st, err := postgres.Open(t.Context(), url, &postgres.Options{})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { st.Close() })
		contextsPerPrincipal(t, st)
	})
}

func contextsPerPrincipal(t *testing.T, st TaskStore) {
	a := newHarnessWith(t, func(o *Options) { o.Tasks = st }, nil, "executor")
	f := a.agents["executor"]
	last := func() seen {
		s := f.seen()
		return s[len(s)-1]
	}
	msg := func(text, ctxID string) *a2a.Message {
		m := a2a.NewMessage(a2a.MessageRoleUser, a2a.NewTextPart(text))
		m.ContextID = ctxID
		return m
	}
	alice := a.sendMsg("executor", "alice", msg("input", "session-1"), false)
	if alice.Status.State != a2a.TaskStateInputRequired || alice.ContextID != "session-1" {
		t.Fatalf("alice's task: %s in %q, want input required in session-1", alice.Status.State, alice.ContextID)
	}
	up := last().ctx
	if up == "" || up == "session-1" {
		t.Errorf("the agent got alice's context as %q, want reach's id for it", up)
	}
	// The agent's view of her task (GetTask), under her id.
	got, err := a.client("executor", "alice", false).GetTask(t.Context(), &a2a.GetTaskRequest{ID: alice.ID})
	if err != nil {
		t.Fatal(err)
	}
	if got.ContextID != "session-1" {
		t.Errorf("GetTask: context %q, want session-1", got.ContextID)
	}
	for _, m := range got.History {
		if m.ContextID != "session-1" && m.ContextID != "" {
			t.Errorf("GetTask's history has a message in context %q, want session-1", m.ContextID)
		}
	}
	// Bob names her context, then the agent's id for it: each time his own.
	var bob string
	for _, name := range []string{"session-1", up} {
		n := len(f.seen())
		tk := a.sendMsg("executor", "bob", msg("echo what did alice say?", name), false)
		if tk.Status.State != a2a.TaskStateCompleted || tk.ContextID != name || len(f.seen()) == n {
			t.Errorf("bob naming %q: %s in %q, want completed at the agent in the context he named", name, tk.Status.State, tk.ContextID)
			continue
		}
		if c := last().ctx; c == up || c == name {
			t.Errorf("bob naming %q reached the agent in context %q (alice's is %q)", name, c, up)
		} else if bob == "" {
			bob = c
		}
	}
	// Her task at reach is untouched, and she goes on in her context.
	if s := a.state("executor", "alice", alice.ID); s != a2a.TaskStateInputRequired {
		t.Errorf("alice's task after bob's: %s", s)
	}
	// Another instance on the store, then a restart: the same contexts.
	b := peerGateway(t, a, st)
	a.srv.Close()
	a.g.Close()
	c := peerGateway(t, a, st)
	type caller struct{ name, up string }
	for i, h := range []*harness{b, c} {
		order := []caller{{"alice", up}, {"bob", bob}}
		if h == c {
			order[0], order[1] = order[1], order[0] // bob first after the restart: no task of alice's held there
		}
		for _, who := range order {
			tk := h.sendMsg("executor", who.name, msg("echo more", "session-1"), false)
			if tk.Status.State != a2a.TaskStateCompleted || tk.ContextID != "session-1" {
				t.Errorf("%s on gateway %d: %s in %q", who.name, i, tk.Status.State, tk.ContextID)
			}
			if c := last().ctx; who.name == "bob" && c == up {
				t.Errorf("bob naming session-1 on gateway %d reached the agent in alice's context %q", i, c)
			} else if c != who.up {
				t.Errorf("%s naming session-1 on gateway %d reached the agent in context %q, want %q, as before", who.name, i, c, who.up)
			}
		}
	}
	// A new message without a context id gets one of its own at reach,
	// and the agent a new one for it.
	tk := c.sendMsg("executor", "alice", a2a.NewMessage(a2a.MessageRoleUser, a2a.NewTextPart("echo new")), false)
	if c := last().ctx; tk.ContextID == "" || c == up || c == tk.ContextID || c != upContext(Owner{"alice", ""}, tk.ContextID) {
		t.Errorf("a message without contextId: %q at reach, %q at the agent", tk.ContextID, c)
	}
}

// TestUpContextSeparates: the agent's context id is one per owner and
// caller's id, length-prefixed so that no split of the same bytes meets
// another owner's.
func TestUpContextSeparates(t *testing.T) {
	ids := map[string]string{}
	for _, c := range []struct {
		o   Owner
		ctx string
	}{{Owner{"alice", ""}, "s"}, {Owner{"bob", ""}, "s"}, {Owner{"alice", "t"}, "s"}, {Owner{"ali", ""}, "ces"},
		{Owner{"", "alice"}, "s"}, {Owner{"alice", ""}, ""}, {Owner{"alice", ""}, "s2"}} {
		u := upContext(c.o, c.ctx)
		if prev, ok := ids[u]; ok {
			t.Errorf("%v %q and %s share %s", c.o, c.ctx, prev, u)
		}
		ids[u] = c.o.Principal + "/" + c.o.Tenant + "/" + c.ctx
		if upContext(c.o, c.ctx) != u {
			t.Errorf("%v %q: not the same twice", c.o, c.ctx)
		}
	}
}
