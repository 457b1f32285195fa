package reach

import (
	"testing"
	"unsafe"
)

// TestCallSizeClass: a Call, allocated for every tool call (served, and by
// BenchmarkCall's callers), fits the 768-byte size class of Go's
// allocator with the 8-byte header the allocator puts before an object
// over 512 bytes that holds pointers. One field too many, or a pointer
// between two bools, moves it to the 896-byte class: 128 bytes more a
// call (1,996 against 1,868 a call in BenchmarkCall when cutRun was added).
func TestCallSizeClass(t *testing.T) {
	if n := unsafe.Sizeof(Call{}); n+8 > 768 {
		t.Errorf("a Call is %d bytes, want at most 760 (its size class, less its header); keep its bools side by side", n)
	}
	// A Request, begun for each sessionless call, in the 704-byte class
	// (768 when its audit count and a flag were added).
	if n := unsafe.Sizeof(Request{}); n+8 > 704 {
		t.Errorf("a Request is %d bytes, want at most 696 (its size class, less its header); keep its small fields side by side", n)
	}
}
