package main

import (
	"context"
	"math"
	"os"
	"runtime"
	"runtime/debug"
	"testing"
	"time"
)

// The limit is the base while the live heap is small, and grows with it
// so that the heap may always grow by half of what is live.
func TestMemoryLimitGrowsWithTheLiveHeap(t *testing.T) {
	const mb = 1 << 20
	for _, c := range []struct{ live, other, want uint64 }{
		{10 * mb, 8 * mb, 40 * mb},
		{20 * mb, 8 * mb, 40 * mb},
		{30 * mb, 8 * mb, 53 * mb},
		{200 * mb, 20 * mb, 320 * mb},
	} {
		if got := memoryLimit(40*mb, c.live, c.other); got != c.want {
			t.Errorf("memoryLimit(40 MiB, live %d MiB, other %d MiB) = %d MiB, want %d", c.live/mb, c.other/mb, got/mb, c.want/mb)
		}
	}
}

// reach serve sets the default limit, unless GOMEMLIMIT says otherwise.
func TestLimitMemoryLeavesGOMEMLIMIT(t *testing.T) {
	old := debug.SetMemoryLimit(-1)
	t.Cleanup(func() { debug.SetMemoryLimit(old) })

	debug.SetMemoryLimit(math.MaxInt64)
	t.Setenv("GOMEMLIMIT", "off")
	limitMemory(t.Context(), 64<<20)
	if got := debug.SetMemoryLimit(-1); got != math.MaxInt64 {
		t.Errorf("with GOMEMLIMIT=off the limit became %d", got)
	}

	t.Setenv("GOMEMLIMIT", "") // set, even if empty: the runtime's to read
	limitMemory(t.Context(), 64<<20)
	if got := debug.SetMemoryLimit(-1); got != math.MaxInt64 {
		t.Errorf("with GOMEMLIMIT set the limit became %d", got)
	}

	os.Unsetenv("GOMEMLIMIT") // restored by t.Setenv's cleanup
	limitMemory(t.Context(), 64<<20)
	if got := debug.SetMemoryLimit(-1); got < 64<<20 || got == math.MaxInt64 {
		t.Errorf("without GOMEMLIMIT the limit is %d, want 64 MiB or more", got)
	}
}

// afterEachGC calls its function after each collection, until ctx ends.
// The function is armed again only once a call returned, so a collection
// that ends before that (here: the next runtime.GC, as soon as the call was
// seen) calls nothing: each round collects until a call comes.
func TestAfterEachGC(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	calls := make(chan struct{}, 100)
	afterEachGC(ctx, func() { calls <- struct{}{} })
	for i := range 3 {
		deadline := time.After(10 * time.Second)
	collect:
		for {
			runtime.GC()
			select {
			case <-calls:
				break collect
			case <-time.After(10 * time.Millisecond):
			case <-deadline:
				t.Fatalf("no call after the collections of round %d", i+1)
			}
		}
	}
	cancel()
	for len(calls) > 0 { // of collections the runtime started on its own
		<-calls
	}
	runtime.GC() // runs the armed cleanup, which sees ctx ended
	runtime.GC()
	time.Sleep(100 * time.Millisecond)
	if n := len(calls); n > 0 {
		t.Errorf("%d calls after ctx ended", n)
	}
}

// Unless GOGC is set, the soft limit alone paces the GC: limitMemory turns
// the GC's percentage off once it set the limit, and leaves it as it is
// when GOGC or GOMEMLIMIT is set (GOMEMLIMIT=off with GOGC=off would
// never collect).
func TestLimitMemoryPacesTheGC(t *testing.T) {
	oldLimit := debug.SetMemoryLimit(-1)
	oldPercent := debug.SetGCPercent(100)
	t.Cleanup(func() { debug.SetMemoryLimit(oldLimit); debug.SetGCPercent(oldPercent) })
	for _, k := range []string{"GOGC", "GOMEMLIMIT"} {
		t.Setenv(k, "") // restored after the test
		os.Unsetenv(k)
	}

	limitMemory(t.Context(), 64<<20)
	if got := debug.SetGCPercent(100); got != -1 {
		t.Errorf("without GOGC the GC's percentage is %d after limitMemory, want -1 (off: the limit paces it)", got)
	}
	if got := debug.SetMemoryLimit(-1); got < 64<<20 || got == math.MaxInt64 {
		t.Errorf("without GOMEMLIMIT the limit is %d, want 64 MiB or more", got)
	}

	t.Setenv("GOGC", "100")
	debug.SetGCPercent(100)
	limitMemory(t.Context(), 64<<20)
	if got := debug.SetGCPercent(100); got != 100 {
		t.Errorf("with GOGC set the GC's percentage became %d", got)
	}

	os.Unsetenv("GOGC")
	t.Setenv("GOMEMLIMIT", "off")
	debug.SetMemoryLimit(math.MaxInt64)
	limitMemory(t.Context(), 64<<20)
	if got := debug.SetGCPercent(100); got != 100 {
		t.Errorf("with GOMEMLIMIT set the GC's percentage became %d", got)
	}
}
