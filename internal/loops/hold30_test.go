package loops

import (
	"bytes"
	"testing"
	"unsafe"

	"github.com/agentreach/reach/internal/fault"
	"github.com/agentreach/reach/internal/records"
)

// holdAsDone runs the calls of results (a success's data, or a failure's
// message where fail has the call's bit) through two Detectors: one told
// each outcome with DoneTool as the call returns, the other with HoldTool,
// k calls in flight at a time (checked together, held together, the next
// Check applying what is held); each held result's bytes, its message's
// too, are overwritten as soon as HoldTool returns, as a pooled answer's
// buffer is reused. Every verdict must be the same.
func holdAsDone(t *testing.T, results [][]byte, fail uint8, k int) (refusals int) {
	t.Helper()
	now, held := New(nil), New(nil)
	k = max(k, 1)
	for start := 0; start < len(results); start += k {
		end := min(start+k, len(results))
		var s1, s2 []*Step
		for i := start; i < end; i++ {
			args := []byte(`{"q":"` + string(rune('a'+i%2)) + `"}`)
			a, b := &Step{Tool: "look", Args: args, Access: "read"}, &Step{Tool: "look", Args: args, Access: "read"}
			v1, v2 := now.Check(a), held.Check(b)
			if (v1 == nil) != (v2 == nil) || v1 != nil && (v1.Detector != v2.Detector || v1.Message != v2.Message) {
				t.Fatalf("call %d: verdict %+v held, %+v at once", i, v2, v1)
			}
			if v1 != nil {
				refusals++
				a, b = nil, nil
			}
			s1, s2 = append(s1, a), append(s2, b)
		}
		for j, i := 0, start; i < end; i, j = i+1, j+1 {
			if s1[j] == nil {
				continue
			}
			buf := bytes.Clone(results[i]) // the answer's buffer, reused below
			var res records.Result
			if fail>>(i%8)&1 == 1 {
				msg := unsafe.String(unsafe.SliceData(buf), len(buf)) // a view of the buffer
				res = records.Result{Status: records.StatusError, Error: &fault.Error{Code: "bad_input", Type: fault.TypeTool, Message: msg}}
			} else {
				res = records.Result{Status: records.StatusSuccess, Data: buf}
			}
			if len(buf) == 0 {
				res.Error = nil // (an empty view is no message to overwrite)
			}
			now.DoneTool(s1[j], &res, nil)
			held.HoldTool(s2[j], &res, nil)
			for n := range buf {
				buf[n] = 'x' + byte(i%3)
			}
		}
	}
	return refusals
}

// TestHoldToolAsDoneTool: outcomes held and applied later decide as
// outcomes applied at once, with the results' buffers reused as soon as
// they are held, one call at a time and several in flight.
func TestHoldToolAsDoneTool(t *testing.T) {
	same := [][]byte{[]byte(`"call 1"`), []byte(`"call 1"`), []byte(`"call 1"`), []byte(`"call 1"`), []byte(`"call 1"`), []byte(`"call 1"`)}
	obj := [][]byte{[]byte(`{"b":1,"a":[1,2]}`), []byte(`{"a":[1,2],"b":1}`), []byte(`{"b":1,"a":[1,2]}`), []byte(`{"a":[1,2],"b":1}`), []byte(`{"a":[1,2],"b":1}`)}
	for _, k := range []int{1, 2, 3, maxHeld, maxHeld + 3} {
		if n := holdAsDone(t, same, 0, k); n == 0 && k == 1 {
			t.Fatal("the same answer again and again was never refused: the test shows nothing")
		}
		holdAsDone(t, obj, 0, k)
		if n := holdAsDone(t, same, 0xff, k); n == 0 && k == 1 {
			t.Fatal("the same failure again and again was never refused: the test shows nothing")
		}
		holdAsDone(t, same, 0x55, k)
	}
	// A result larger than the buffer for observations is applied at once.
	big := bytes.Repeat([]byte("a"), maxObservation+1)
	big = append(append([]byte(`"`), big...), '"')
	holdAsDone(t, [][]byte{big, big, big, big}, 0, 2)
}

// TestHoldToolKeepsNothingOfTheResult: a held success's data is copied,
// and its buffer is the Detector's, kept for the next outcome held.
func TestHoldToolKeepsNothingOfTheResult(t *testing.T) {
	d := New(nil)
	s := &Step{Tool: "look", Args: []byte(`{}`), Access: "read"}
	if v := d.Check(s); v != nil {
		t.Fatal(v)
	}
	data := []byte(`"an answer"`)
	if !d.HoldTool(s, &records.Result{Status: records.StatusSuccess, Data: data}, nil) {
		t.Fatal("the first outcome held does not ask for a Flush")
	}
	if len(d.held) != 1 || &d.held[0].data[0] == &data[0] || string(d.held[0].data) != `"an answer"` {
		t.Fatalf("held %+v: not a copy of the result's data", d.held)
	}
	d.Flush()
	if len(d.held) != 0 || s.seq != 0 {
		t.Fatalf("Flush left %d held, step seq %d", len(d.held), s.seq)
	}
	if d.HoldTool(s, &records.Result{Status: records.StatusSuccess, Data: data}, nil) {
		t.Error("an outcome reported already was held again")
	}
}

// FuzzHoldToolAsDoneTool is TestHoldToolAsDoneTool over any results.
func FuzzHoldToolAsDoneTool(f *testing.F) {
	f.Add([]byte(`"call 1"|"call 1"|"call 1"|"call 1"|"call 1"`), uint8(0), uint8(1))
	f.Add([]byte("\"a\\u00e9\"|\"bad \xff\"|not json|{\"b\":1,\"a\":2}|\"<x>\""), uint8(3), uint8(2))
	f.Add([]byte(`"same"|"same"|"same"|"same"|"same"|"same"`), uint8(0xff), uint8(3))
	f.Add([]byte(`"r1"|"r2"|"r3"|"r4"|"r5"|"r6"|"r7"|"r8"`), uint8(0), uint8(9))
	f.Fuzz(func(t *testing.T, data []byte, fail, k uint8) {
		parts := bytes.Split(data, []byte("|"))
		if len(parts) > 24 {
			parts = parts[:24]
		}
		holdAsDone(t, parts, fail, int(k%12))
	})
}
