package loops

import (
	"fmt"
	"runtime"
	"strconv"
	"strings"
	"testing"

	"github.com/agentreach/reach/internal/fault"
	"github.com/agentreach/reach/internal/records"
)

// guardStream is a stream of tool calls as the runtime's loop guard sees
// them (loopguard.go: Check before dispatch, DoneTool with what the call's
// path returned): kind "echo" is the served benchmark's read (new text,
// its answer that text as a JSON string); "kib" a read whose answer is a
// JSON object of about 3 KiB with new ids and values; "mixed" both and,
// one call in eight, a tool's failure with its own message.
func guardStream(kind string, n int) ([]Step, []records.Result) {
	steps := make([]Step, n)
	res := make([]records.Result, n)
	for i := range steps {
		k := kind
		if k == "mixed" {
			switch {
			case i%8 == 7:
				k = "error"
			case i%2 == 0:
				k = "kib"
			default:
				k = "echo"
			}
		}
		switch k {
		case "echo":
			t := "call " + strconv.Itoa(i+1)
			steps[i] = Step{Tool: "up__echo_read", Args: []byte(`{"text":"` + t + `"}`), Access: "read"}
			res[i] = records.Result{Status: records.StatusSuccess, Data: []byte(`"` + t + `"`)}
		case "kib":
			var sb strings.Builder
			fmt.Fprintf(&sb, `{"order_id":"ord-%08d","status":"shipped","items":[`, i)
			for j := range 16 {
				if j > 0 {
					sb.WriteByte(',')
				}
				fmt.Fprintf(&sb, `{"sku":"SKU-%d-%d","title":"Item %d of order %d","qty":%d,"price":%d.%02d}`,
					i, j, j, i, 1+j%3, 10+(i*7+j)%90, (i+j)%100)
			}
			fmt.Fprintf(&sb, `],"customer":{"id":"cus-%06d","name":"Customer %d","email":"c%d@example.com"},"total":%d.50}`, i, i, i, 100+i%900)
			steps[i] = Step{Tool: "get_order", Args: []byte(`{"order_id":"ord-` + fmt.Sprintf("%08d", i) + `"}`), Access: "read"}
			res[i] = records.Result{Status: records.StatusSuccess, Data: []byte(sb.String())}
		case "error":
			steps[i] = Step{Tool: "lookup_invoice", Args: []byte(`{"invoice":"inv-` + strconv.Itoa(i) + `"}`), Access: "read"}
			res[i] = records.Result{Status: records.StatusError, Error: &fault.Error{Code: "not_found", Type: fault.TypeTool,
				Message: "invoice inv-" + strconv.Itoa(i) + " was not found"}}
		}
	}
	return steps, res
}

// BenchmarkGuardTool measures the runtime's loop guard on a call's path,
// Check and DoneTool apart (check-cpu-ns/op, done-cpu-ns/op: the thread's
// CPU time around each), for each stream of guardStream, in a fresh
// request (a Detector that saw nothing) and one with a long history (4096
// calls of the same stream before), warm (back to back) and cold (64 MiB
// read between calls, outside the timer, as a gateway's next call one at a
// time finds its data and code out of the caches):
//
//	go test -run '^$' -bench 'GuardTool' -benchmem -benchtime 3000x -count 6 ./internal/loops/
func BenchmarkGuardTool(b *testing.B) {
	for _, kind := range []string{"echo", "kib", "mixed"} {
		for _, hist := range []string{"fresh", "history"} {
			for _, mode := range []string{"warm", "cold"} {
				b.Run(kind+"/"+hist+"/"+mode, func(b *testing.B) { benchGuardTool(b, kind, hist == "history", mode == "cold") })
			}
		}
	}
}

func benchGuardTool(b *testing.B, kind string, history, cold bool) {
	const pre = 4096
	steps, res := guardStream(kind, pre+(1<<13))
	d := New(nil)
	at := 0
	if history {
		for ; at < pre; at++ {
			if d.Check(&steps[at]) == nil {
				d.DoneTool(&steps[at], &res[at], nil)
			}
		}
	}
	var evict []byte
	if cold {
		evict = make([]byte, 64<<20)
		for i := range evict {
			evict[i] = byte(i)
		}
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	var check, done int64
	refused := 0
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		j := at + i%(len(steps)-at)
		if !history || cold {
			b.StopTimer()
			if !history {
				d = New(nil)
			}
			if cold {
				var s byte
				for k := 0; k < len(evict); k += 64 {
					s += evict[k]
				}
				coldSink += s
			}
			b.StartTimer()
		}
		s := &steps[j]
		t0 := threadCPU()
		v := d.Check(s)
		t1 := threadCPU()
		if v != nil {
			refused++
			continue
		}
		d.DoneTool(s, &res[j], nil)
		t2 := threadCPU()
		check += t1 - t0
		done += t2 - t1
	}
	if refused > 0 {
		b.Fatalf("%d of %d calls refused", refused, b.N)
	}
	b.ReportMetric(float64(check)/float64(b.N), "check-cpu-ns/op")
	b.ReportMetric(float64(done)/float64(b.N), "done-cpu-ns/op")
}
