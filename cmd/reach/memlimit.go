package main

import (
	"context"
	"os"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
)

// defaultMemoryLimit is the soft memory limit `reach serve` runs under
// unless GOMEMLIMIT is set (GOMEMLIMIT=off: none): the Go runtime's
// memory, the heap with the rest (stacks, its own bookkeeping). The GC
// runs as the runtime's memory reaches it (see limitMemory), and gives
// back what it does not use (docs/BENCHMARKS.md, "Memory"; 30 MiB, was
// 40: "Memory under the bar"; 29 MiB since idle keep-alive connections
// hold no buffers, which left the GC as often as at 30 before: "Memory,
// the thirteenth session").
const defaultMemoryLimit = 29 << 20

// limitMemory sets the soft memory limit base, unless GOMEMLIMIT is set,
// and raises it as the live heap grows (memoryLimit), after each
// collection while ctx lasts. Unless GOGC is set too, the limit alone
// paces the GC (GOGC=off): the heap grows to the limit before a
// collection, not to twice what is live (sooner, with a small live heap:
// 64 clients' calls collected a quarter less often, "A read's CPU under 64
// clients (fourteenth session)" in docs/BENCHMARKS.md), and memoryLimit
// still lets it grow by half of what is live once that outgrows base.
func limitMemory(ctx context.Context, base uint64) {
	if _, set := os.LookupEnv("GOMEMLIMIT"); set {
		return
	}
	samples := []metrics.Sample{
		{Name: "/gc/heap/live:bytes"},
		{Name: "/memory/classes/total:bytes"},
		{Name: "/memory/classes/heap/released:bytes"},
		{Name: "/memory/classes/heap/objects:bytes"},
		{Name: "/memory/classes/heap/unused:bytes"},
		{Name: "/memory/classes/heap/free:bytes"},
	}
	set := func() {
		metrics.Read(samples)
		var v [6]uint64
		for i, s := range samples {
			if s.Value.Kind() == metrics.KindUint64 {
				v[i] = s.Value.Uint64()
			}
		}
		heap := v[2] + v[3] + v[4] + v[5]
		other := v[1] - min(v[1], heap)
		debug.SetMemoryLimit(int64(memoryLimit(base, v[0], other)))
	}
	set()
	afterEachGC(ctx, set)
	if _, set := os.LookupEnv("GOGC"); !set {
		debug.SetGCPercent(-1) // once the limit is set: never without both
	}
}

// afterEachGC calls f after each collection (the live heap is known then)
// until ctx ends: from a cleanup of an object nothing keeps, made again
// each time.
func afterEachGC(ctx context.Context, f func()) {
	sentinel := new([32]byte) // not a tiny allocation: its own
	runtime.AddCleanup(sentinel, func(struct{}) {
		if ctx.Err() == nil {
			f()
			afterEachGC(ctx, f)
		}
	}, struct{}{})
}

// memoryLimit is the soft memory limit for a live heap of live bytes
// beside other bytes of the runtime's memory (stacks, metadata): base, or
// more once the heap outgrows it, so that the GC never runs more than
// half again as often as its default pace would have it (the heap may
// always grow by half of what is live). A fixed limit below a growing
// live heap would have the GC run all the time.
func memoryLimit(base, live, other uint64) uint64 {
	return max(base, live+live/2+other)
}
