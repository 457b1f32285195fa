// Package ids makes the ids reach gives requests, frames, approvals, A2A
// tasks and the calls the gateway numbers: in the order they were made, so
// that a store's index of them (SQLite's b-trees: the requests' primary key
// and their budget ledger, the frames' (request, frame), the idempotency
// keys, which name their request, approval or numbered call, the
// approvals', the tasks') takes each new one at its end, on a page the
// writes just before it dirtied already, instead of on a random page of its
// own (docs/BENCHMARKS.md, "Ids in time order").
package ids

import (
	"crypto/rand"
	mrand "math/rand/v2"
	"sync/atomic"
	"time"
)

// latest is the latest millisecond an id was made in: a clock stepped back
// does not take the ids back with it.
var latest atomic.Int64

// now returns the Unix time in milliseconds, never less than it returned
// before. It writes latest once a millisecond, not once an id.
func now() int64 {
	ms := time.Now().UnixMilli()
	for {
		l := latest.Load()
		if ms <= l {
			return l
		}
		if latest.CompareAndSwap(l, ms) {
			return ms
		}
	}
}

const hexDigits = "0123456789abcdef"

// TextLen is the number of hex digits of a Text id after its prefix.
const TextLen = 32

// Text returns prefix and 32 hex digits: 48 bits of the Unix time in
// milliseconds, then 80 bits from crypto/rand. Ids made in later
// milliseconds sort after (as strings, under one prefix); those of one
// millisecond, among themselves, at random. The 80 random bits keep an id
// unguessable though its time is known (a request id is not a capability,
// its owner is checked, but it is named in URLs and logs) and unique across
// the instances that share a store (a request id reach made is written
// without checking that it is new: Request.Fresh): never drop them to
// shorten the id.
func Text(prefix string) string {
	var b [48 + TextLen]byte // the prefix, up to 48 bytes, and the digits
	n := copy(b[:48], prefix)
	ms := uint64(now())
	for i := 11; i >= 0; i-- {
		b[n+i] = hexDigits[ms&15]
		ms >>= 4
	}
	var r [10]byte
	rand.Read(r[:]) // never fails
	for i, c := range r {
		b[n+12+2*i] = hexDigits[c>>4]
		b[n+12+2*i+1] = hexDigits[c&15]
	}
	return string(b[:n+12+2*len(r)])
}

// frameSeq numbers the frames of this process from a random start.
var frameSeq atomic.Uint32

func init() { frameSeq.Store(mrand.Uint32()) }

// Frame returns a frame id: the Unix time in seconds in its high 32 bits
// (until 2106), a number in its low 32 that one process counts up from a
// random start. A process's ids grow one after the other (until its count
// wraps, after 4 billion frames), so that a request's frames follow each
// other in the store's (request, frame) index; two processes (instances on
// one store) draw them from random places of the count. A frame id is 64
// bits, the W3C span id it also is, so it has no room for a random part
// that would make it unguessable: it is not a capability (a call that
// names a frame as its parent names it in a request its principal owns).
// It is never 0.
func Frame() uint64 {
	s := uint64(now() / 1000)
	return s<<32 | uint64(frameSeq.Add(1))
}

// callDraw is the number of hex digits a process draws once for the
// prefix of the call ids it numbers (CallPrefix).
const callDraw = 8

// callCount is the number of hex digits of a numbered call id's count.
const callCount = 16

// AppendCall appends to b the id of a call that a gateway numbered because
// its client named none: prefix (the lead, 8 hex digits a process draws
// once, and "_", as CallPrefix makes it) and n, the process's count of such
// calls, in 16 hex digits. The width is fixed, so that the ids of one
// process sort as text in the order they were numbered: a write's key
// derived from such an id leads with it (Numbered), and the store's index
// of the keys takes a batch of them, from any sessions, at its end.
func AppendCall(b []byte, prefix string, n uint64) []byte {
	b = append(b, prefix...)
	for i := callCount - 1; i >= 0; i-- {
		b = append(b, hexDigits[(n>>(4*uint(i)))&15])
	}
	return b
}

// CallPrefix draws the prefix of a process's numbered call ids: lead
// (lower-case letters and digits, then "_"), 8 hex digits, "_".
// Two processes (instances on one store) number from prefixes of their
// own, so that two calls of one request never get one id.
func CallPrefix(lead string) string {
	var r [callDraw / 2]byte
	rand.Read(r[:]) // never fails
	b := append(make([]byte, 0, len(lead)+callDraw+1), lead...)
	for _, c := range r {
		b = append(b, hexDigits[c>>4], hexDigits[c&15])
	}
	return string(append(b, '_'))
}

// Numbered reports whether id has the form of a numbered call id
// (AppendCall): a lead of letters and digits ending in "_", 8 lower-case
// hex digits, "_", 16 lower-case hex digits. A client that sends back such
// an id as its own is told apart by nothing, and needs not be: its key is
// spelled as the gateway's was (call.go, idemKeys), so it finds the same
// record. Ids of the decimal count numbered before are not of this form.
func Numbered(id string) bool {
	n := len(id) - callCount - 1 - callDraw // the lead's length
	if n < 2 || id[n-1] != '_' || id[n+callDraw] != '_' {
		return false
	}
	for i := 0; i < n-1; i++ {
		if c := id[i]; !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9') {
			return false
		}
	}
	return hexOnly(id[n:n+callDraw]) && hexOnly(id[n+callDraw+1:])
}

func hexOnly(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return false
		}
	}
	return true
}
