package loops

import (
	"runtime"
	"slices"
	"testing"
)

// BenchmarkCheckDoneServedCold is BenchmarkCheckDoneServed's cold case
// with the median of the steps' CPU times besides their mean: one at a
// time, a step's time is set by how much code and data it touches, and on
// a machine others share the mean follows the few steps they slowed.
//
//	go test -run '^$' -bench 'CheckDoneServedCold' -benchtime 3000x -count 6 ./internal/loops/
func BenchmarkCheckDoneServedCold(b *testing.B) {
	steps, res := servedRead(1 << 14)
	d := New(nil)
	evict := make([]byte, 64<<20)
	for i := range evict {
		evict[i] = byte(i)
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	took := make([]int64, 0, b.N)
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		b.StopTimer()
		var s byte
		for j := 0; j < len(evict); j += 64 {
			s += evict[j]
		}
		coldSink += s
		b.StartTimer()
		st := &steps[i%len(steps)]
		t0 := threadCPU()
		if d.Check(st) != nil {
			b.Fatal("refused")
		}
		d.Done(st, Outcome{Result: res[i%len(res)]})
		took = append(took, threadCPU()-t0)
	}
	var sum int64
	for _, x := range took {
		sum += x
	}
	slices.Sort(took)
	b.ReportMetric(float64(sum)/float64(len(took)), "cpu-ns/op")
	b.ReportMetric(float64(took[len(took)/2]), "p50-cpu-ns/op")
}
