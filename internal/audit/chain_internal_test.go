package audit

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"strings"
	"testing"
	"time"
)

// TestChainHashAllocations: a record's hash is computed without an
// allocation when its sum has room (a log's batch appends every sum to one
// slice), the request id included, and it is the chain's hash as
// specified: SHA-256 of the previous hash, the version, seq, time, the
// request's length and the request, and the event, whatever the hasher
// hashed before.
func TestChainHashAllocations(t *testing.T) {
	prev := bytes.Repeat([]byte{7}, HashSize)
	at := time.Unix(1_700_000_000, 5)
	data := []byte(`{"kind":"tool","name":"get"}`)
	h := newHasher()
	dst := make([]byte, 0, HashSize)
	for _, req := range []string{"", "req_0123456789abcdef", strings.Repeat("r", 128), strings.Repeat("x", 2*maxHasherBuf)} {
		var ref []byte
		ref = append(ref, prev...)
		ref = append(ref, encodingVersion)
		ref = binary.BigEndian.AppendUint64(ref, 42)
		ref = binary.BigEndian.AppendUint64(ref, uint64(at.UnixNano()))
		ref = binary.BigEndian.AppendUint32(ref, uint32(len(req)))
		ref = append(ref, req...)
		ref = append(ref, data...)
		want := sha256.Sum256(ref)
		if got := chainHash(h, dst[:0], prev, 42, at, req, data); !bytes.Equal(got, want[:]) {
			t.Errorf("request of %d bytes: hash %x, want %x", len(req), got, want)
		}
	}
	req := "req_0123456789abcdef"
	if n := testing.AllocsPerRun(100, func() { chainHash(h, dst[:0], prev, 42, at, req, data) }); n != 0 {
		t.Errorf("chainHash: %v allocations, want 0", n)
	}
}
