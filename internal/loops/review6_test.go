package loops

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"

	"github.com/agentreach/reach/internal/fault"
	"github.com/agentreach/reach/internal/records"
)

// review6Results are results of every kind DoneTool reads: JSON (small,
// just under, at and over the detector's buffer, one whose canonical form
// is longer than itself), text that is not JSON, errors of both kinds.
func review6Results() []*records.Result {
	big := func(n int, fill string) []byte {
		// {"items":["fill…", …]} of about n bytes
		var b bytes.Buffer
		b.WriteString(`{"items":[`)
		for i := 0; b.Len() < n-40; i++ {
			if i > 0 {
				b.WriteByte(',')
			}
			fmt.Fprintf(&b, `"%s %d"`, fill, i)
		}
		b.WriteString(`]}`)
		return b.Bytes()
	}
	ok := func(d []byte) *records.Result { return &records.Result{Status: records.StatusSuccess, Data: d} }
	return []*records.Result{
		ok([]byte(`{"status": "shipped", "n": 1}`)),
		ok([]byte(`{"n": 1, "status": "shipped"}`)), // the same once canonical
		ok([]byte(`{"status": "lost", "n": 2}`)),
		ok([]byte(`[1, 2, 3]`)),
		ok([]byte(`plain text, not JSON`)),
		ok(big(maxObservation-100, "a")),
		ok(big(maxObservation, "b")),
		ok(big(maxObservation+5000, "c")),
		ok(big(3*maxObservation, "d")),
		ok([]byte(`{"s":"` + strings.Repeat(`\u00e9`, maxObservation/8) + `"}`)), // its canonical form differs in length
		{Status: records.StatusError, Error: &fault.Error{Type: "timeout", Message: "took too long"}},
		{Status: records.StatusError, Error: &fault.Error{Type: "invalid_input", Message: "date '09-10-2025' is invalid"}},
		{Status: records.StatusRefused, Error: &fault.Error{Type: "refused", Message: "no"}},
	}
}

// TestReview6DoneToolAsDone: a detector told of results with DoneTool (its
// own buffer) refuses exactly what one told with Done(ToolOutcome) (a
// copy a call) refuses, over random histories of several agents with
// steps that overlap (checked together, done in another order), results
// of every size about the buffer's, and results whose bytes the caller
// writes over once the call has returned.
func TestReview6DoneToolAsDone(t *testing.T) {
	results := review6Results()
	// get and search mostly return the same for the same arguments; flaky
	// times out, check refuses a date whatever the id.
	tools := []struct{ name, access string }{{"get", "read"}, {"search", "read"}, {"put", "write"}, {"flaky", "read"}, {"check", "read"}}
	refusals := map[string]int{}
	for seed := range uint64(12) {
		r := rand.New(rand.NewPCG(seed, 6))
		a, b := New(nil), New(nil)
		type pending struct {
			sa, sb *Step
			res    int
		}
		var open []pending
		ti := 0
		for step := range 200 {
			if len(open) > 0 && (len(open) > 3 || r.IntN(2) == 0) {
				i := r.IntN(len(open))
				p := open[i]
				open = append(open[:i], open[i+1:]...)
				ra, rb := *results[p.res], *results[p.res]
				ra.Data, rb.Data = bytes.Clone(ra.Data), bytes.Clone(rb.Data)
				a.Done(p.sa, toolOutcome(&ra, nil, nil))
				b.DoneTool(p.sb, &rb, nil)
				for k := range rb.Data { // the caller reuses its result's bytes
					rb.Data[k] = '#'
				}
				continue
			}
			if r.IntN(4) == 0 { // streaks of one tool
				ti = r.IntN(len(tools))
			}
			tl := tools[ti]
			x := r.IntN(3)
			if tl.name == "check" {
				x = r.IntN(50)
			}
			args := fmt.Sprintf(`{"id":"x%d"}`, x)
			agent := []string{"", "helper"}[r.IntN(2)]
			mk := func() *Step {
				return &Step{Kind: ToolCall, Agent: agent, Tool: tl.name, Args: []byte(args), Access: tl.access}
			}
			sa, sb := mk(), mk()
			va, vb := a.Check(sa), b.Check(sb)
			if (va == nil) != (vb == nil) || va != nil && (va.Detector != vb.Detector || va.Message != vb.Message) {
				t.Fatalf("seed %d, step %d: Done's detector says %v, DoneTool's %v", seed, step, va, vb)
			}
			if va != nil {
				refusals[va.Detector]++
				continue
			}
			res := (x + len(tl.name)) % len(results) // mostly the same result for the same call
			switch {
			case tl.name == "flaky":
				res = 10
			case tl.name == "check":
				res = 11
			case r.IntN(4) == 0:
				res = r.IntN(len(results))
			}
			open = append(open, pending{sa, sb, res})
		}
	}
	if len(refusals) < 2 {
		t.Fatalf("refusals %v: the comparison compared too little", refusals)
	}
	t.Logf("refusals, the same from both: %v", refusals)
}

// TestReview6DoneToolBuffer: the buffer a detector keeps for observations
// is at most maxObservation, however large the results it read; a large
// result after small ones is judged as a copy of it would be (the third
// identical one refused).
func TestReview6DoneToolBuffer(t *testing.T) {
	d := New(nil)
	var v *Verdict
	for _, res := range review6Results() {
		for i := range 3 {
			s := &Step{Kind: ToolCall, Tool: "get", Args: fmt.Appendf(nil, `{"id":%d}`, len(res.Data)), Access: "read"}
			if v = d.Check(s); v != nil {
				break
			}
			r := *res
			r.Data = bytes.Clone(res.Data)
			d.DoneTool(s, &r, nil)
			clear(r.Data)
			if cap(d.obs) > maxObservation {
				t.Fatalf("after a result of %d bytes (call %d) the detector keeps a buffer of %d", len(res.Data), i, cap(d.obs))
			}
		}
		if res.Status == records.StatusSuccess && (v == nil || v.Detector != "repeat") {
			t.Errorf("the third identical result of %d bytes: verdict %v, want repeat", len(res.Data), v)
		}
	}
}

// TestReview6DoneToolConcurrent: the calls of one request tree report
// their results to one detector at once (under -race: DoneTool's buffer is
// used under the detector's lock only), and the repeat each goroutine
// makes on its own arguments is refused as alone.
func TestReview6DoneToolConcurrent(t *testing.T) {
	d := New(&Options{MaxAgents: 64})
	results := review6Results()
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			res := results[g%len(results)]
			for i := range 200 {
				s := &Step{Kind: ToolCall, Agent: fmt.Sprint("agent", g), Tool: "get", Args: fmt.Appendf(nil, `{"g":%d,"i":%d}`, g, i/3), Access: "read"}
				v := d.Check(s)
				if v != nil {
					continue
				}
				r := *res
				r.Data = bytes.Clone(res.Data)
				d.DoneTool(s, &r, nil)
				clear(r.Data)
			}
		})
	}
	wg.Wait()
	// One more of a streak that got its third result refused: still refused.
	s := &Step{Kind: ToolCall, Agent: "agent0", Tool: "get", Args: []byte(`{"g":0,"i":1000}`), Access: "read"}
	for range 2 {
		if v := d.Check(s); v != nil {
			t.Fatalf("a new call refused: %v", v)
		}
		r := *results[0]
		d.DoneTool(s, &r, nil)
	}
	if v := d.Check(s); v == nil || v.Detector != "repeat" {
		t.Errorf("the third identical read after the concurrent ones: %v, want repeat", v)
	}
}
