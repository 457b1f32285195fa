// Package strview reads bytes as a string without copying them, for the
// call path's hot spots that only read (a check, an encoding, a bind).
package strview

import "unsafe"

// Of returns b as a string that shares b's memory. The caller promises
// that nothing writes to b while the string is in use: a string must not
// change. Keep the string no longer than b's contents stand.
func Of(b []byte) string { return unsafe.String(unsafe.SliceData(b), len(b)) }

// Is reports whether s is a view of b: the same bytes in memory, b's whole
// length, not equal bytes elsewhere. An empty s is a view of nothing.
func Is(s string, b []byte) bool {
	return len(s) > 0 && len(s) == len(b) && unsafe.StringData(s) == unsafe.SliceData(b)
}
