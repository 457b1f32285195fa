package audit_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"strings"
	"testing"

	"github.com/agentreach/reach/internal/audit"
	"github.com/agentreach/reach/internal/store"
)

// specHash is a record's hash as docs/AUDIT.md specifies it, written out
// apart from the package's code: SHA-256 of prev_hash, 0x01, seq and time
// (Unix ns; 0 for no time) as 8 big-endian bytes each, the request's
// length as 4 big-endian bytes, the request, and the event as stored.
func specHash(r *store.AuditRecord) []byte {
	var b bytes.Buffer
	b.Write(r.PrevHash)
	b.WriteByte(1)
	var n [8]byte
	binary.BigEndian.PutUint64(n[:], uint64(r.Seq))
	b.Write(n[:])
	ns := int64(0)
	if !r.Time.IsZero() {
		ns = r.Time.UnixNano()
	}
	binary.BigEndian.PutUint64(n[:], uint64(ns))
	b.Write(n[:])
	binary.BigEndian.PutUint32(n[:4], uint32(len(r.Request)))
	b.Write(n[:4])
	b.WriteString(r.Request)
	b.Write(r.Data)
	s := sha256.Sum256(b.Bytes())
	return s[:]
}

// TestReview6ChainAsSpecified: a log's records, whose request ids are
// empty, short, of the longest reach takes (128), longer than the
// hasher's buffer (its buffer then not kept) and short again, with
// multi-byte characters, are hashed as docs/AUDIT.md specifies, each
// linked to the one before, and the log verifies.
func TestReview6ChainAsSpecified(t *testing.T) {
	ctx := context.Background()
	st := store.NewMemory()
	log, err := audit.New(ctx, st, &audit.Options{CheckpointEvery: 4})
	if err != nil {
		t.Fatal(err)
	}
	reqs := []string{"", "r", strings.Repeat("q", 128), "", strings.Repeat("x", 5000), "req_é✓", strings.Repeat("y", 1023), strings.Repeat("z", 1025), "", "r"}
	for i, req := range reqs {
		if _, err := log.Append(ctx, &audit.Event{Request: req, Kind: "tool", Name: "step" + string(rune('a'+i))}); err != nil {
			t.Fatal(err)
		}
	}
	if err := log.Close(); err != nil {
		t.Fatal(err)
	}
	recs, err := st.ScanAudit(ctx, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != len(reqs) {
		t.Fatalf("%d records, want %d", len(recs), len(reqs))
	}
	prev := make([]byte, sha256.Size)
	for i := range recs {
		r := recs[i]
		if r.Request != reqs[i] {
			t.Errorf("seq %d: request of %d bytes, want %d", r.Seq, len(r.Request), len(reqs[i]))
		}
		if !bytes.Equal(r.PrevHash, prev) {
			t.Errorf("seq %d: prev_hash %x, want the hash before, %x", r.Seq, r.PrevHash, prev)
		}
		if want := specHash(r); !bytes.Equal(r.Hash, want) || !bytes.Equal(audit.Hash(r), want) {
			t.Errorf("seq %d (request of %d bytes): hash %x, Hash %x, want %x as specified", r.Seq, len(r.Request), r.Hash, audit.Hash(r), want)
		}
		prev = r.Hash
	}
	if _, err := audit.Verify(ctx, st); err != nil {
		t.Errorf("verify: %v", err)
	}
}
