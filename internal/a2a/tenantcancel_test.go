package a2a

import (
	"context"
	"strings"
	"sync"
	"testing"

	"github.com/a2aproject/a2a-go/v2/a2a"

	"github.com/agentreach/reach/internal/store"
)

// tenantIdentity reads "principal@tenant" from the caller's name.
type tenantIdentity struct{}

func (tenantIdentity) Caller(ctx context.Context) Owner {
	who, _ := ctx.Value(whoKey{}).(string)
	p, tenant, _ := strings.Cut(who, "@")
	return Owner{Principal: p, Tenant: tenant}
}

// TestCancelTaskOfAnotherTenant: a principal of one tenant sends
// CancelTask for a running task of the principal of the same name in
// another tenant, at the instance that runs it and through the store (as
// for a task another instance runs). It is told the task is not found;
// the task still works, at reach and at the agent, which got no cancel,
// and no stop was asked of the store. The owner's CancelTask then cancels
// it.
func TestCancelTaskOfAnotherTenant(t *testing.T) {
	var mu sync.Mutex
	var stops []string
	h := newHarnessWith(t, func(o *Options) {
		o.Identity = tenantIdentity{}
		o.Tasks = store.NewMemory()
		o.Stop = func(_ context.Context, request, _ string) error {
			mu.Lock()
			stops = append(stops, request)
			mu.Unlock()
			return nil
		}
	}, nil, "executor")
	go func() {
		req := &a2a.SendMessageRequest{Message: a2a.NewMessage(a2a.MessageRoleUser, a2a.NewTextPart("slow")),
			Config: &a2a.SendMessageConfig{ReturnImmediately: true}}
		h.client("executor", "alice@a", false).SendMessage(t.Context(), req) //nolint:errcheck // the task is read below
	}()
	id := h.working("executor")
	eventually(t, "the task stored", func() bool {
		rec, err := h.g.opts.Tasks.GetTask(t.Context(), "executor", string(id))
		return err == nil && rec != nil
	})
	other := h.client("executor", "alice@b", false)
	if _, err := other.CancelTask(t.Context(), &a2a.CancelTaskRequest{ID: id}); err == nil || !strings.Contains(err.Error(), "has no task") {
		t.Errorf("another tenant's CancelTask: %v; want not found", err)
	}
	if got := h.state("executor", "alice@a", id); got != a2a.TaskStateWorking {
		t.Errorf("the task is %s after another tenant's CancelTask; want working", got)
	}
	f := h.agents["executor"]
	f.mu.Lock()
	cancels := len(f.cancels)
	f.mu.Unlock()
	mu.Lock()
	asked := len(stops)
	mu.Unlock()
	if cancels != 0 || asked != 0 {
		t.Errorf("the agent got %d cancels and the store %d stops; want none", cancels, asked)
	}
	// Through the store: as if another instance ran it.
	h.g.tasks.mu.Lock()
	live := h.g.tasks.byID[taskKey{"executor", id}]
	delete(h.g.tasks.byID, taskKey{"executor", id})
	h.g.tasks.mu.Unlock()
	if _, err := other.CancelTask(t.Context(), &a2a.CancelTaskRequest{ID: id}); err == nil || !strings.Contains(err.Error(), "has no task") {
		t.Errorf("another tenant's CancelTask through the store: %v; want not found", err)
	}
	mu.Lock()
	asked = len(stops)
	mu.Unlock()
	if asked != 0 {
		t.Errorf("the store was asked %d stops; want none", asked)
	}
	h.g.tasks.mu.Lock()
	h.g.tasks.byID[taskKey{"executor", id}] = live
	h.g.tasks.mu.Unlock()
	tk, err := h.client("executor", "alice@a", false).CancelTask(t.Context(), &a2a.CancelTaskRequest{ID: id})
	if err != nil || tk.Status.State != a2a.TaskStateCanceled {
		t.Fatalf("the owner's CancelTask: %v, %v; want canceled", tk, err)
	}
}
