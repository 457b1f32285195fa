package loops

import (
	"math/rand/v2"
	"runtime"
	"slices"
	"testing"
)

// refBounded is bounded as it was before it kept its last entry beside
// its maps: the model the cached one must agree with.
type refBounded struct {
	cur, old map[uint64]int
	half     int
}

func (m *refBounded) get(k uint64) (int, bool) {
	if v, ok := m.cur[k]; ok {
		return v, true
	}
	if v, ok := m.old[k]; ok {
		delete(m.old, k)
		m.put(k, v)
		return v, true
	}
	return 0, false
}

func (m *refBounded) put(k uint64, v int) {
	if m.cur == nil {
		m.cur = make(map[uint64]int)
	}
	if len(m.cur) >= m.half {
		if _, ok := m.cur[k]; ok {
			m.cur[k] = v
			return
		}
		m.old = m.cur
		m.cur = make(map[uint64]int)
	}
	m.cur[k] = v
}

// TestBoundedLastAgrees drives bounded and the model through the same
// random gets and puts over few keys (so that the last entry is hit, put
// again, moved from the older half and forgotten with it): every get
// answers alike, and both remember the same entries.
func TestBoundedLastAgrees(t *testing.T) {
	for seed := range uint64(20) {
		r := rand.New(rand.NewPCG(seed, 21))
		var b bounded[uint64, int]
		b.init(8)
		ref := refBounded{half: b.half}
		for i := range 5000 {
			k := uint64(r.IntN(12))
			if r.IntN(3) == 0 {
				b.put(k, i)
				ref.put(k, i)
				continue
			}
			v, ok := b.get(k)
			rv, rok := ref.get(k)
			if v != rv || ok != rok {
				t.Fatalf("seed %d step %d: get(%d) = %d, %v; the model: %d, %v", seed, i, k, v, ok, rv, rok)
			}
			if b.len() != len(ref.cur)+len(ref.old) {
				t.Fatalf("seed %d step %d: %d entries, the model %d", seed, i, b.len(), len(ref.cur)+len(ref.old))
			}
		}
	}
}

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
