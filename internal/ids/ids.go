// Package ids makes the ids reach gives requests, frames, approvals and
// A2A tasks: in the order they were made, so that a store's index of them
// (SQLite's b-trees: the requests' primary key and their budget ledger,
// the frames' (request, frame), the idempotency keys, which name their
// request or approval, the approvals', the tasks') takes each new one at
// its end, on a page the writes just before it dirtied already, instead of
// on a random page of its own (docs/BENCHMARKS.md, "Ids in time order").
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
