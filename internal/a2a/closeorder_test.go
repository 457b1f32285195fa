package a2a

import (
	"context"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/a2aproject/a2a-go/v2/a2a"

	"github.com/agentreach/reach"
	"github.com/agentreach/reach/internal/store"
)

// closeStore is a task store that holds the first write of a canceled
// state until release, and counts the writes begun once its owner closed
// it (closed), as a store closed under the gateway would refuse them.
type closeStore struct {
	*store.Memory
	held    chan struct{} // a write of a canceled state waits (told once)
	release chan struct{}
	once    sync.Once
	closed  atomic.Bool
	after   atomic.Int32 // writes begun once closed
}

func (s *closeStore) PutTask(ctx context.Context, rec *store.TaskRecord) (bool, error) {
	if s.closed.Load() {
		s.after.Add(1)
		return false, store.ErrClosed
	}
	if rec.State == string(a2a.TaskStateCanceled) {
		hold := false
		s.once.Do(func() { hold = true })
		if hold {
			s.held <- struct{}{}
			<-s.release
		}
	}
	return s.Memory.PutTask(ctx, rec)
}

// TestCloseWaitsForAStopBegunBeforeIt: a stop of a task's hand-off (a
// task waiting for its caller, no stream of it read any more) that
// began before the gateway's Close (the gateway's own close ends every
// request just before it closes the A2A gateway), whose store write of
// the canceled state is under way, is waited for: Close returns once the
// task is stored canceled and audited, and the store may then be closed.
// A stop that comes after Close writes nothing to the store and is not
// audited (the log says so). Before, the stop ran on a goroutine nothing
// counted: Close returned while it wrote, and its store write and audit
// came after the store and the audit log were closed.
func TestCloseWaitsForAStopBegunBeforeIt(t *testing.T) {
	st := &closeStore{Memory: store.NewMemory(), held: make(chan struct{}, 1), release: make(chan struct{})}
	released := false
	defer func() {
		if !released {
			close(st.release)
		}
	}()
	h := newHarnessWith(t, func(o *Options) { o.Tasks = st }, nil, "executor")
	// Tasks waiting for their caller: their streams have ended, nothing
	// of them runs in the background.
	ids := make([]a2a.TaskID, 2)
	tasks := make([]*task, 2)
	for i := range ids {
		v := h.send("executor", "alice", "input", nil)
		if v.Status.State != a2a.TaskStateInputRequired {
			t.Fatalf("task %s is %s; want input required", v.ID, v.Status.State)
		}
		ids[i] = v.ID
		if tasks[i] = h.g.tasks.get("executor", v.ID, Owner{"alice", ""}); tasks[i] == nil {
			t.Fatalf("no task %s at reach", v.ID)
		}
		eventually(t, "the task's stream to end", func() bool {
			tasks[i].mu.Lock()
			defer tasks[i].mu.Unlock()
			return tasks[i].pumps == 0
		})
	}

	tasks[0].req.Stop(reach.Isolate, "operator", "enough")
	<-st.held // the stop's write of the canceled state is under way
	waiting := make(chan struct{})
	closeWaits = sync.OnceFunc(func() { close(waiting) })
	defer func() { closeWaits = nil }()
	closed := make(chan struct{})
	go func() {
		h.g.Close()
		st.closed.Store(true) // as the gateway closes its store next
		close(closed)
	}()
	select {
	case <-closed:
		t.Fatal("Close returned while a stop begun before it was storing the task's canceled state")
	case <-waiting:
	}
	close(st.release)
	released = true
	<-closed
	rec, err := st.GetTask(t.Context(), "executor", string(ids[0]))
	if err != nil || rec.State != string(a2a.TaskStateCanceled) {
		t.Errorf("the stopped task as stored: %+v, %v; want canceled", rec, err)
	}
	if kinds := h.audit.kinds(ids[0]); !slices.Contains(kinds, "state:"+string(a2a.TaskStateCanceled)) {
		t.Errorf("the stopped task's audit: %v; want its canceled state", kinds)
	}

	// A message after Close is refused, saying why.
	resp, err := http.Post(h.srv.URL+"/a2a/executor", "application/json", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{}}`))
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusServiceUnavailable || !strings.Contains(string(body), "shutting_down") {
		t.Errorf("a message after Close: %d %s; want 503 shutting_down", resp.StatusCode, body)
	}

	// A stop after Close: nothing written, nothing audited.
	before := len(h.audit.kinds(ids[1]))
	tasks[1].req.Stop(reach.Isolate, "operator", "enough")
	eventually(t, "the stop after Close to return", func() bool {
		h.g.stops.mu.Lock()
		defer h.g.stops.mu.Unlock()
		_, armed := h.g.stops.m[tasks[1]]
		return !armed
	})
	if n := st.after.Load(); n != 0 {
		t.Errorf("%d store writes began after Close returned", n)
	}
	if kinds := h.audit.kinds(ids[1]); len(kinds) != before {
		t.Errorf("events audited after Close returned: %v", kinds[before:])
	}
}
