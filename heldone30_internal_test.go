package reach

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"testing"

	"github.com/agentreach/reach/internal/loops"
	"github.com/agentreach/reach/internal/records"
)

// holdDones keeps the goroutine that applies held outcomes (heldDones)
// from applying those of d until the test ends: only d's own next step can
// apply them. entered, if not nil, hears of each detector the goroutine
// comes to, before it applies its outcomes.
func holdDones(t *testing.T, d *loops.Detector, entered chan<- *loops.Detector) (release func()) {
	t.Helper()
	gate := make(chan struct{})
	h := func(x *loops.Detector) {
		if entered != nil {
			select {
			case entered <- x:
			default: // (never blocks the goroutine once the test is over)
			}
		}
		if x == d {
			<-gate
		}
	}
	heldDones.hook.Store(&h)
	var once sync.Once
	release = func() { once.Do(func() { close(gate) }) }
	t.Cleanup(func() {
		release()
		heldDones.hook.Store(nil)
	})
	return release
}

// reusedAnswer is a read tool whose answer is a buffer of its own, which
// the test overwrites as soon as each call returns: an answer's buffer
// given back to a pool and reused.
type reusedAnswer struct {
	mu  sync.Mutex
	buf map[string][]byte
}

func (r *reusedAnswer) tool(gate func()) Tool {
	return Tool{Name: "look", Access: Read, Reentrancy: Reentrant, Func: func(_ context.Context, args json.RawMessage) (json.RawMessage, error) {
		if gate != nil {
			gate()
		}
		r.mu.Lock()
		defer r.mu.Unlock()
		b := r.buf[string(args)]
		if b == nil {
			b = make([]byte, 6)
			r.buf[string(args)] = b
		}
		copy(b, `"same"`)
		return b, nil
	}}
}

// scribble overwrites every answer's buffer with n, six bytes.
func (r *reusedAnswer) scribble(n int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, b := range r.buf {
		copy(b, fmt.Sprintf(`"x%03d"`, n%1000))
	}
}

// TestLoopDoneAfterTheAnswer: a call's outcome reaches the loop guard
// after its result is returned, and the request's next call finds it
// applied though the goroutine that applies held outcomes has not come
// to it: the third identical call that returned the same is refused, as
// when the guard read each outcome before the call returned. Each
// answer's buffer is overwritten as soon as its call returns: what the
// guard reads of it is its own copy.
func TestLoopDoneAfterTheAnswer(t *testing.T) {
	rt := New(nil)
	ans := &reusedAnswer{buf: map[string][]byte{}}
	rt.MustRegister(ans.tool(nil))
	ctx, r, err := rt.Begin(context.Background(), &RequestOptions{ID: "held"})
	if err != nil {
		t.Fatal(err)
	}
	holdDones(t, rt.detector(r), nil)
	var got []string
	for i := range 4 {
		res := rt.Call(ctx, &Call{ID: fmt.Sprint("c", i), Tool: "look", Arguments: json.RawMessage(`{"q":1}`)})
		ans.scribble(i)
		got = append(got, string(res.Status)+" "+codeOf(res))
	}
	want := []string{"success ", "success ", "refused loop_repeat", "refused loop_repeat"}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("calls: %q, want %q", got, want)
	}
}

func codeOf(res *Result) string {
	if res.Error == nil {
		return ""
	}
	return res.Error.Code
}

// TestLoopDoneHeldInParallel: four calls of one request in flight at once
// each hold their outcome as they return (their answers' buffers
// overwritten at once); the request's next calls find the four applied.
// q=0 ran once among the four and once after: its third run is refused.
func TestLoopDoneHeldInParallel(t *testing.T) {
	rt := New(nil)
	ans := &reusedAnswer{buf: map[string][]byte{}}
	const n = 4
	var arrived sync.WaitGroup
	arrived.Add(n)
	all := make(chan struct{})
	go func() { arrived.Wait(); close(all) }()
	parallel := true
	var pmu sync.Mutex
	rt.MustRegister(ans.tool(func() {
		pmu.Lock()
		p := parallel
		pmu.Unlock()
		if p {
			arrived.Done()
			<-all // every call in flight before any returns
		}
	}))
	ctx, r, err := rt.Begin(context.Background(), &RequestOptions{ID: "parallel"})
	if err != nil {
		t.Fatal(err)
	}
	holdDones(t, rt.detector(r), nil)
	var wg sync.WaitGroup
	statuses := make([]string, n)
	for i := range n {
		wg.Go(func() {
			res := rt.Call(ctx, &Call{ID: fmt.Sprint("p", i), Tool: "look", Arguments: json.RawMessage(fmt.Sprintf(`{"q":%d}`, i))})
			statuses[i] = string(res.Status)
		})
	}
	wg.Wait()
	ans.scribble(1)
	pmu.Lock()
	parallel = false
	pmu.Unlock()
	if fmt.Sprint(statuses) != "[success success success success]" {
		t.Fatalf("the calls in parallel: %v", statuses)
	}
	var got []string
	for i := range 2 {
		res := rt.Call(ctx, &Call{ID: fmt.Sprint("s", i), Tool: "look", Arguments: json.RawMessage(`{"q":0}`)})
		ans.scribble(2 + i)
		got = append(got, string(res.Status)+" "+codeOf(res))
	}
	if want := []string{"success ", "refused loop_repeat"}; fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("after them: %q, want %q", got, want)
	}
}

// TestLoopDoneHeldAtTheEnd: a request that ends, or is stopped, with an
// outcome held ends without waiting for it; the goroutine applies it to
// the detector the request let go, and goes on to the next.
func TestLoopDoneHeldAtTheEnd(t *testing.T) {
	for _, stop := range []bool{false, true} {
		t.Run(fmt.Sprint("stop=", stop), func(t *testing.T) {
			rt := New(nil)
			ans := &reusedAnswer{buf: map[string][]byte{}}
			rt.MustRegister(ans.tool(nil))
			ctx, r, err := rt.Begin(context.Background(), &RequestOptions{ID: "ends"})
			if err != nil {
				t.Fatal(err)
			}
			d := rt.detector(r)
			entered := make(chan *loops.Detector, 8)
			release := holdDones(t, d, entered)
			if res := rt.Call(ctx, &Call{ID: "c", Tool: "look", Arguments: json.RawMessage(`{"q":1}`)}); res.Status != StatusSuccess {
				t.Fatal(res.Status, res.Error)
			}
			ans.scribble(0)
			for x := <-entered; x != d; x = <-entered {
			}
			// The goroutine holds d's outcome; the request ends.
			if stop {
				r.Stop(Cancel, "test", "stopped with an outcome held")
			}
			r.End()
			if !r.loops.Released() {
				t.Fatal("the ended request kept its detector")
			}
			// Another detector's outcome, queued after d's: the
			// goroutine comes to it once d's are applied.
			other := loops.New(nil)
			s := &loops.Step{Kind: loops.ToolCall, Tool: "look", Args: []byte(`{}`), Access: "read"}
			if v := other.Check(s); v != nil {
				t.Fatal(v)
			}
			if other.HoldTool(s, &records.Result{Status: records.StatusSuccess, Data: []byte(`"x"`)}, nil) {
				heldDones.add(other)
			}
			release()
			for x := <-entered; x != other; x = <-entered {
			}
		})
	}
}
