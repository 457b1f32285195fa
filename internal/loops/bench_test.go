package loops

import (
	"fmt"
	"strconv"
	"strings"
	"testing"
)

// benchSteps returns n typical tool calls (distinct arguments, results of
// about 150 bytes) and their outcomes.
func benchSteps(n int) ([]Step, []Outcome) {
	steps := make([]Step, n)
	outs := make([]Outcome, n)
	tools := []string{"get_order", "search_kb", "get_customer", "list_orders"}
	for i := range steps {
		steps[i] = Step{
			Agent:  "main",
			Tool:   tools[i%len(tools)],
			Args:   fmt.Appendf(nil, `{"id":"2025%09d","limit":%d}`, i, 10+i%5),
			Access: "read",
		}
		outs[i] = Outcome{Result: fmt.Appendf(nil,
			`{"amount":%d.5,"id":"2025%09d","items":[{"sku":"SKU-%d","title":"Item %d"},{"sku":"SKU-%d","title":"Item %d"}],"status":"SHIPPED"}`,
			i%997, i, i, i, i+1, i+1)}
	}
	return steps, outs
}

// BenchmarkCheckDone measures Check and Done of one typical tool call: one of
// 4096 argument lists, a result of about 150 bytes with a fresh value.
func BenchmarkCheckDone(b *testing.B) {
	steps, outs := benchSteps(4096)
	d := New(nil)
	var buf []byte
	refused := 0
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		s := &steps[i%len(steps)]
		if d.Check(s) != nil {
			refused++
		} else {
			o := outs[i%len(steps)]
			buf = append(append(buf[:0], o.Result[:len(o.Result)-1]...), `,"seq":`...)
			buf = append(strconv.AppendInt(buf, int64(i), 10), '}')
			o.Result = buf
			d.Done(s, o)
		}
		i++
	}
	if refused > 0 {
		b.Fatalf("%d of %d calls refused", refused, i)
	}
}

// BenchmarkCheckDoneRepeat measures a call whose key is already known (a
// re-read), the path of polling.
func BenchmarkCheckDoneRepeat(b *testing.B) {
	d := New(nil)
	s := &Step{Tool: "get_job", Args: []byte(`{"job_id":"job-8220"}`), Access: "read"}
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		if d.Check(s) == nil {
			d.Done(s, Outcome{Result: fmt.Appendf(nil, `{"progress":%d,"state":"running"}`, i)})
		}
		i++
	}
}

// BenchmarkCheckDoneLargeText measures a call returning 8 KB of text.
func BenchmarkCheckDoneLargeText(b *testing.B) {
	var sb strings.Builder
	sb.WriteByte('"')
	for i := range 200 {
		fmt.Fprintf(&sb, "line %d of the file: some source code here\\n", i)
	}
	sb.WriteByte('"')
	res := []byte(sb.String())
	steps, _ := benchSteps(1024)
	d := New(nil)
	b.SetBytes(int64(len(res)))
	refused := 0
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		s := &steps[i%len(steps)]
		// A different first line each time: the rest of the text is known.
		copy(res[1:], fmt.Appendf(nil, "%08d", i))
		if d.Check(s) != nil {
			refused++
		} else {
			d.Done(s, Outcome{Result: res})
		}
		i++
	}
	if refused > 0 {
		b.Fatalf("%d of %d calls refused", refused, i)
	}
}

// BenchmarkModelCall measures Check and Done of a model call.
func BenchmarkModelCall(b *testing.B) {
	d := New(nil)
	s := &Step{Kind: ModelCall, Tokens: 1000}
	o := Outcome{Result: []byte(`"thinking"`)}
	b.ReportAllocs()
	for b.Loop() {
		d.Check(s)
		d.Done(s, o)
	}
}
