// Package traceparent writes the W3C traceparent (Trace Context, version
// 00) that reach sends with what a frame calls on: an upstream tool call's
// _meta, an A2A hand-off's metadata and headers, a sampling request. It is
// the one place the value is written; link.ParseTraceparent reads it.
package traceparent

import (
	"encoding/binary"
	"encoding/hex"
)

// Len is a traceparent's length: "00-", 32 hex digits of the trace id,
// "-", 16 of the parent span id, "-01" (sampled).
const Len = 55

// Append appends to b the traceparent of span in trace: version 00, the
// span as the parent id, sampled.
func Append(b []byte, trace [16]byte, span uint64) []byte {
	b = append(b, "00-"...)
	b = hex.AppendEncode(b, trace[:])
	b = append(b, '-')
	var s [8]byte
	binary.BigEndian.PutUint64(s[:], span)
	b = hex.AppendEncode(b, s[:])
	return append(b, "-01"...)
}

// String is Append's traceparent as a string.
func String(trace [16]byte, span uint64) string {
	return string(Append(make([]byte, 0, Len), trace, span))
}
