package traceparent

import (
	"regexp"
	"testing"
)

// TestAppend: the W3C layout (version 00, 32 lower-case hex digits of the
// trace, 16 of the span, sampled), Len long, appended after what b holds.
func TestAppend(t *testing.T) {
	trace := [16]byte{0x4b, 0xf9, 0x2f, 0x35, 0x77, 0xb3, 0x4d, 0xa6, 0xa3, 0xce, 0x92, 0x9d, 0x0e, 0x0e, 0x47, 0x36}
	if got, want := String(trace, 0xab), "00-4bf92f3577b34da6a3ce929d0e0e4736-00000000000000ab-01"; got != want {
		t.Errorf("String = %q, want %q", got, want)
	}
	got := string(Append([]byte("tp="), trace, 0xfedcba9876543210))
	if got != "tp=00-4bf92f3577b34da6a3ce929d0e0e4736-fedcba9876543210-01" {
		t.Errorf("Append = %q", got)
	}
	if !regexp.MustCompile(`^00-[0-9a-f]{32}-[0-9a-f]{16}-01$`).MatchString(got[3:]) || len(got[3:]) != Len {
		t.Errorf("Append wrote %q: not a traceparent of %d bytes", got[3:], Len)
	}
}
