package loops

import (
	"bytes"
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
	sb.WriteString("run 00000000 of the file\\n") // its number changes: the rest of the text is known
	for i := range 200 {
		fmt.Fprintf(&sb, "line %d of the file: some source code here\\n", i)
	}
	sb.WriteByte('"')
	res := []byte(sb.String())
	at := bytes.Index(res, []byte("00000000"))
	steps, _ := benchSteps(1024)
	d := New(nil)
	b.SetBytes(int64(len(res)))
	refused := 0
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		s := &steps[i%len(steps)]
		putDigits(res, at, i)
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

// putDigits writes n as 8 decimal digits at b[at:], in place.
func putDigits(b []byte, at, n int) {
	for k := at + 7; k >= at; k-- {
		b[k] = byte('0' + n%10)
		n /= 10
	}
}

// BenchmarkCheckDoneSearch measures a search with a free-text query (a new
// one each time) whose result echoes the query and carries volatile metadata
// (a request id, a latency, scores) around three documents, one of them new:
// the path of paraphrased searches.
func BenchmarkCheckDoneSearch(b *testing.B) {
	const q = "how to change the billing address on plan 00000000"
	args := fmt.Appendf(nil, `{"limit":5,"query":%q}`, q)
	res := fmt.Appendf(nil,
		`{"hits":[{"id":"KB-00000000","score":0.93,"title":"Billing settings"},{"id":"KB-1","score":0.71,"title":"Invoices"},{"id":"KB-2","score":0.52,"title":"Plans and prices"}],"query":%q,"request_id":"req_00000000","took_ms":131}`, q)
	qa := bytes.Index(args, []byte("00000000"))
	qr := bytes.Index(res, []byte("plan 00000000")) + len("plan ")
	id := bytes.Index(res, []byte("KB-00000000")) + len("KB-")
	rq := bytes.Index(res, []byte("req_00000000")) + len("req_")
	d := New(nil)
	refused := 0
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		putDigits(args, qa, i)
		putDigits(res, qr, i)
		putDigits(res, id, i)
		putDigits(res, rq, i*7919)
		s := &Step{Tool: "search_kb", Args: args, Access: "read"}
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

// BenchmarkCheckDoneError measures a call that fails with a non-transient
// error naming its arguments (new arguments each time); every second call
// of the tool succeeds, so that no streak of errors forms.
func BenchmarkCheckDoneError(b *testing.B) {
	args := []byte(`{"date":"00000000","destination":"PEK","origin":"PVG"}`)
	msg := []byte(`"date '00000000' is not in the format YYYY-MM-DD"`)
	ok := []byte(`{"flights":[{"flight":"MU00000000","price":412}]}`)
	da := bytes.Index(args, []byte("00000000"))
	dm := bytes.Index(msg, []byte("00000000"))
	fo := bytes.Index(ok, []byte("00000000"))
	d := New(nil)
	refused := 0
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		putDigits(args, da, i)
		s := &Step{Tool: "search_flights", Args: args, Access: "read"}
		if d.Check(s) != nil {
			refused++
		} else if i%2 == 0 {
			putDigits(msg, dm, i)
			d.Done(s, Outcome{Error: true, ErrorType: "invalid_args", Result: msg})
		} else {
			putDigits(ok, fo, i)
			d.Done(s, Outcome{Result: ok})
		}
		i++
	}
	if refused > 0 {
		b.Fatalf("%d of %d calls refused", refused, i)
	}
}

// BenchmarkDelegation measures a hand-off of one of 256 distinct sub-tasks
// to one of 8 agents, and its verdict.
func BenchmarkDelegation(b *testing.B) {
	const n = 256
	steps := make([]Step, n)
	for i := range steps {
		steps[i] = Step{Kind: Delegation, Agent: "lead", To: fmt.Sprintf("worker-%d", i%8),
			Task: fmt.Sprintf("Summarize section %d of the quarterly report for the board", i)}
	}
	o := Outcome{Result: []byte(`"Done: the summary is in the shared folder."`)}
	d := New(nil)
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		s := &steps[i%n]
		if d.Check(s) == nil {
			d.Done(s, o)
		}
		i++
	}
}

// BenchmarkFoldArgsQuery: the question of a read whose argument is code of
// several words (a SQL query), folded as the set of its words.
func BenchmarkFoldArgsQuery(b *testing.B) {
	args := []byte(`{"limit":50,"sql":"SELECT id, total, region FROM orders WHERE status = 'late' AND region = 'EU' ORDER BY total DESC"}`)
	var sink uint64
	for b.Loop() {
		sink += foldArgs("query", args)
	}
	_ = sink
}

// BenchmarkCheckDoneOrder is the step BenchmarkCall (root package) makes at
// each call: one read of an order whose state moves on each call.
func BenchmarkCheckDoneOrder(b *testing.B) {
	d := New(nil)
	s := &Step{Tool: "get_order", Args: []byte(`{"fields":["status","amount"],"order_id":"2025011400123"}`), Access: "read"}
	res := []byte(`{"order_id":"2025011400123","seq":00000000,"status":"SHIPPED"}`)
	at := bytes.Index(res, []byte("00000000"))
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		putDigits(res, at, i)
		if d.Check(s) != nil {
			b.Fatal("refused")
		}
		d.Done(s, Outcome{Result: res})
		i++
	}
}

// BenchmarkCheckDonePath measures Check and Done of a file read: one of
// 4096 paths, each read once, a file of about 150 bytes.
func BenchmarkCheckDonePath(b *testing.B) {
	steps, outs := benchSteps(4096)
	for i := range steps {
		steps[i].Tool = "read_text_file"
		steps[i].Args = fmt.Appendf(nil, `{"path":"/srv/app/internal/pkg%d/file%d.go"}`, i%64, i)
		outs[i].Result = fmt.Appendf(nil, `"package pkg%d\n\n// File %d.\nfunc F%d() int { return %d }\n// rev `, i%64, i, i, i*7)
	}
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
			buf = append(strconv.AppendInt(append(buf[:0], o.Result...), int64(i), 10), '"')
			o.Result = buf
			d.Done(s, o)
		}
		i++
	}
	if refused > 0 {
		b.Fatalf("%d of %d calls refused", refused, i)
	}
}

// BenchmarkCheckDoneWrites measures a write then a read of what it
// wrote, each of 4096 records, with answers of about 300 bytes: the path
// on which a cycle's answers are read as templates and counts
// (countedAnswer).
func BenchmarkCheckDoneWrites(b *testing.B) {
	steps, outs := benchSteps(4096)
	d := New(nil)
	refused := 0
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		s := &steps[i%len(steps)]
		w := Step{Agent: "main", Tool: "update_order", Args: s.Args, Access: "write"}
		if d.Check(&w) != nil {
			refused++
		} else {
			d.Done(&w, Outcome{Result: fmt.Appendf(nil, `{"ok":true,"updated_at":"2026-12-04T21:40:%02dZ","revision":%d}`, i%60, i)})
		}
		if d.Check(s) != nil {
			refused++
		} else {
			d.Done(s, outs[i%len(steps)])
		}
		i++
	}
	if refused > 0 {
		b.Fatalf("%d of %d calls refused", refused, i)
	}
}
