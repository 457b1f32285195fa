package loops

import (
	"runtime"
	"strconv"
	"syscall"
	"testing"
	"unsafe"
)

// threadCPU is the CPU time this thread has run, in nanoseconds: what a
// step costs, whatever else the machine's cores run while it waits.
func threadCPU() int64 {
	var ts syscall.Timespec
	const clockThreadCPUTime = 3 // CLOCK_THREAD_CPUTIME_ID
	syscall.RawSyscall(syscall.SYS_CLOCK_GETTIME, clockThreadCPUTime, uintptr(unsafe.Pointer(&ts)), 0)
	return ts.Nano()
}

// servedRead is the step a served read makes (internal/servebench's
// reach-read): a read-only echo tool of one session, each call with new
// text, its answer that text as a JSON string.
func servedRead(n int) ([]Step, [][]byte) {
	steps := make([]Step, n)
	res := make([][]byte, n)
	for i := range steps {
		t := "call " + strconv.Itoa(i+1)
		steps[i] = Step{Tool: "up__echo_read", Args: []byte(`{"text":"` + t + `"}`), Access: "read"}
		res[i] = []byte(`"` + t + `"`)
	}
	return steps, res
}

var coldSink byte

// BenchmarkCheckDoneServed measures Check and Done of a served read
// (servedRead), warm (back to back) and cold (64 MiB read between calls,
// outside the timer, as a gateway's next call one at a time finds its
// data and code out of the caches). cpu-ns/op is the thread's CPU time
// around each step (its clock read included), which a loaded machine's
// waits do not inflate as they do ns/op:
//
//	go test -run '^$' -bench 'CheckDoneServed' -benchmem -count 6 ./internal/loops/
func BenchmarkCheckDoneServed(b *testing.B) {
	for _, mode := range []string{"warm", "cold"} {
		b.Run(mode, func(b *testing.B) {
			steps, res := servedRead(1 << 14)
			d := New(nil)
			var evict []byte
			if mode == "cold" {
				evict = make([]byte, 64<<20)
				for i := range evict {
					evict[i] = byte(i)
				}
			}
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			var cpu int64
			b.ReportAllocs()
			b.ResetTimer()
			for i := range b.N {
				if evict != nil {
					b.StopTimer()
					var s byte
					for j := 0; j < len(evict); j += 64 {
						s += evict[j]
					}
					coldSink += s
					b.StartTimer()
				}
				s := &steps[i%len(steps)]
				t0 := threadCPU()
				if d.Check(s) != nil {
					b.Fatal("refused")
				}
				d.Done(s, Outcome{Result: res[i%len(res)]})
				cpu += threadCPU() - t0
			}
			b.ReportMetric(float64(cpu)/float64(b.N), "cpu-ns/op")
		})
	}
}
