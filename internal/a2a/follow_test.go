package a2a

import (
	"context"
	"strings"
	"testing"

	"github.com/a2aproject/a2a-go/v2/a2a"
)

// TestA2AFollowersBoundedPerPrincipal: nothing bounded how many streams
// of its tasks (SubscribeToTask) one principal held open: each holds a
// connection and a goroutine for as long as the task runs, so one key
// could open them by the hundred thousand on one slow task. Past
// MaxLiveTasks such streams, a principal's next one is refused with an
// error that says so and what to do; another principal's goes on, and
// once one of the principal's streams ends, it may open another.
func TestA2AFollowersBoundedPerPrincipal(t *testing.T) {
	h := newHarnessWith(t, func(o *Options) { o.MaxLiveTasks = 2 }, nil, "worker")
	bobs := h.sendMsg("worker", "bob", a2a.NewMessage(a2a.MessageRoleUser, a2a.NewTextPart("slow")), true)
	h.working("worker")
	alices := h.sendMsg("worker", "alice", a2a.NewMessage(a2a.MessageRoleUser, a2a.NewTextPart("slow")), true)
	h.working("worker")

	// follow opens a stream of who's task id and returns what its first
	// answer was, and how to close it.
	follow := func(who string, id a2a.TaskID) (context.CancelFunc, error) {
		t.Helper()
		ctx, cancel := context.WithCancel(t.Context())
		first := make(chan error, 1)
		go func() {
			n := 0
			for _, err := range h.client("worker", who, false).SubscribeToTask(ctx, &a2a.SubscribeToTaskRequest{ID: id}) {
				if n++; n == 1 {
					first <- err
				}
				if err != nil {
					return
				}
			}
			if n == 0 {
				first <- nil
			}
		}()
		return cancel, <-first
	}
	var open []context.CancelFunc
	for i := range 2 {
		cancel, err := follow("bob", bobs.ID)
		if err != nil {
			t.Fatalf("bob's stream %d: %v", i+1, err)
		}
		open = append(open, cancel)
	}
	cancel, err := follow("bob", bobs.ID)
	cancel()
	if err == nil || !strings.Contains(err.Error(), "2 streams") {
		t.Fatalf("bob's third stream: %v, want refused, saying how many he holds", err)
	}
	cancel, err = follow("alice", alices.ID)
	if err != nil {
		t.Errorf("alice's stream after bob's: %v", err)
	}
	cancel()
	open[0]()
	eventually(t, "bob's closed stream let go, and a new one taken", func() bool {
		cancel, err := follow("bob", bobs.ID)
		if err == nil {
			open[0] = cancel
			return true
		}
		cancel()
		return false
	})
	for _, c := range open {
		c()
	}
}
