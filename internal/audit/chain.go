package audit

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"math"
	"time"

	"github.com/agentreach/reach/internal/store"
)

// HashSize is the size of an event's hash.
const HashSize = sha256.Size

// encodingVersion is the first byte hashed after the prev hash. A change
// of the encoding gets a new version.
const encodingVersion = 1

// chainHash computes a record's hash:
//
//	SHA-256( prev_hash (32 bytes)
//	      || version (1 byte, = 1)
//	      || seq (8 bytes, big-endian)
//	      || time (8 bytes: Unix nanoseconds, big-endian)
//	      || length of request (4 bytes, big-endian) || request
//	      || event (the JSON document, as stored) )
//
// h is reset and reused; the sum is appended to dst.
func chainHash(h *hasher, dst, prev []byte, seq int64, t time.Time, request string, data []byte) []byte {
	h.Reset()
	// The fixed fields and the request in one write, from h's buffer: the
	// hash takes a string only as a copy of its own.
	b := append(h.buf[:0], prev...)
	b = append(b, encodingVersion)
	b = binary.BigEndian.AppendUint64(b, uint64(seq))
	b = binary.BigEndian.AppendUint64(b, uint64(unixNano(t)))
	b = binary.BigEndian.AppendUint32(b, uint32(len(request)))
	b = append(b, request...)
	h.Write(b)
	if cap(b) <= maxHasherBuf {
		h.buf = b
	}
	h.Write(data)
	return h.Sum(dst)
}

// hasher is the SHA-256 of the chain with a buffer for the fields of a
// record before its event (chainHash).
type hasher struct {
	hash.Hash
	buf []byte
}

func newHasher() *hasher { return &hasher{Hash: sha256.New()} }

// maxHasherBuf bounds the buffer a hasher keeps (a request id is at most
// 128 bytes where reach makes or takes one).
const maxHasherBuf = 1024

func unixNano(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixNano()
}

// Hash returns the hash r should carry given its PrevHash, Seq, Time,
// Request and Data.
func Hash(r *store.AuditRecord) []byte {
	return chainHash(newHasher(), nil, r.PrevHash, r.Seq, r.Time, r.Request, r.Data)
}

// ErrTampered matches every *ChainError.
var ErrTampered = errors.New("audit chain broken")

// Problems a ChainError names.
const (
	Edited     = "edited"     // an event's contents do not match its hash
	Inserted   = "inserted"   // an event that the chain skips over
	Missing    = "missing"    // a sequence number is absent
	Moved      = "moved"      // an event sits at a sequence number it was not written at
	Unlinked   = "unlinked"   // an event does not follow the one before it
	Replaced   = "replaced"   // neither contents nor link match: inserted or rewritten
	Checkpoint = "checkpoint" // an event's hash differs from a checkpoint
	Truncated  = "truncated"  // a checkpoint lies beyond the last event
)

// ChainError is the first place where the audit chain does not hold: the
// sequence number of the first bad event, what is wrong with it, and the
// details. It matches ErrTampered.
type ChainError struct {
	Seq     int64
	Problem string // one of the Problem constants
	Detail  string
}

func (e *ChainError) Error() string {
	return fmt.Sprintf("audit chain broken at seq %d (%s): %s", e.Seq, e.Problem, e.Detail)
}

// Is makes a ChainError match ErrTampered.
func (e *ChainError) Is(target error) bool { return target == ErrTampered }

// Report is what Verify found in an intact chain.
type Report struct {
	Events      int64  // events verified
	Head        []byte // the last event's hash (nil for an empty log)
	Checkpoints int    // checkpoints that matched
	// Lost is how many recorded events the log's loss notes say were
	// never written (dropped because its queue was full, or lost to a
	// failed commit), and LossNotes how many notes say so. The chain
	// verifies with them: what was never written was never chained.
	Lost      int64
	LossNotes int
}

func short(b []byte) string {
	if len(b) > 8 {
		return hex.EncodeToString(b[:8]) + "…"
	}
	return hex.EncodeToString(b)
}

// moveWindow is how far from its place Verify looks for the sequence number
// a misplaced event was written at.
const moveWindow = 64

// verifyPage is how many events Verify reads at a time.
const verifyPage = 4096

// Verify walks the whole chain of src in sequence order and checks every
// event: the sequence numbers run 1, 2, 3 ... without a gap; each event's
// prev_hash is the hash of the event before it (zeros for the first); each
// event's hash is the hash of its own contents; and every checkpoint's hash
// is the hash of the event at its seq. It returns a *ChainError for the
// first event that fails, or a Report. Events appended while it runs are
// verified too, until it reaches the end.
func Verify(ctx context.Context, src store.AuditLog) (*Report, error) {
	cps, err := src.AuditCheckpoints(ctx)
	if err != nil {
		return nil, err
	}
	want := make(map[int64][]byte, len(cps))
	for _, cp := range cps {
		want[cp.Seq] = cp.Hash
	}
	h := newHasher()
	var (
		rep  Report
		prev = make([]byte, HashSize) // the hash the next event must link to
		next = int64(1)               // the seq the next event must have
		sum  []byte
	)
	// Seqs start at 1: a row at 0 or below was put there by hand.
	if low, err := src.ScanAudit(ctx, math.MinInt64, 1); err != nil {
		return nil, err
	} else if len(low) > 0 && low[0].Seq < 1 {
		return nil, &ChainError{Seq: low[0].Seq, Problem: Inserted,
			Detail: fmt.Sprintf("an event with seq %d, before the first one the log writes (seq 1): inserted", low[0].Seq)}
	}
	for {
		page, err := src.ScanAudit(ctx, next-1, verifyPage)
		if err != nil {
			return nil, err
		}
		if len(page) == 0 {
			break
		}
		for i, e := range page {
			if e.Seq != next {
				d := fmt.Sprintf("no event with seq %d: the log goes from seq %d to seq %d (deleted)", next, next-1, e.Seq)
				if next == 1 {
					d = fmt.Sprintf("no event with seq 1: the log starts at seq %d (deleted)", e.Seq)
				}
				return nil, &ChainError{Seq: next, Problem: Missing, Detail: d}
			}
			sum = chainHash(h, sum[:0], e.PrevHash, e.Seq, e.Time, e.Request, e.Data)
			contentOK := bytes.Equal(sum, e.Hash)
			linkOK := bytes.Equal(e.PrevHash, prev)
			if !contentOK || !linkOK {
				return nil, diagnose(ctx, src, h, e, prev, contentOK, page[i+1:])
			}
			if cp, ok := want[e.Seq]; ok {
				if !bytes.Equal(cp, e.Hash) {
					return nil, &ChainError{Seq: e.Seq, Problem: Checkpoint,
						Detail: fmt.Sprintf("the event hashes to %s but the checkpoint at seq %d recorded %s: the chain up to here was rewritten (hashes recomputed), or the checkpoint was edited",
							short(e.Hash), e.Seq, short(cp))}
				}
				rep.Checkpoints++
			}
			if n, ok := lossOf(e.Data); ok && e.Request == "" {
				rep.Lost += n
				rep.LossNotes++
			}
			prev = append(prev[:0], e.Hash...)
			next++
		}
	}
	rep.Events = next - 1
	if rep.Events > 0 {
		rep.Head = prev
	}
	for _, cp := range cps {
		if cp.Seq > rep.Events {
			return nil, &ChainError{Seq: rep.Events + 1, Problem: Truncated,
				Detail: fmt.Sprintf("the log ends at seq %d but a checkpoint records seq %d (hash %s): events from seq %d on were deleted",
					rep.Events, cp.Seq, short(cp.Hash), rep.Events+1)}
		}
	}
	return &rep, nil
}

// diagnose explains why e failed: edited in place, moved from another
// sequence number, inserted, not linked to its predecessor, or replaced.
// after holds the records read after e, if any.
func diagnose(ctx context.Context, src store.AuditLog, h *hasher, e *store.AuditRecord, prev []byte, contentOK bool, after []*store.AuditRecord) *ChainError {
	linkOK := bytes.Equal(e.PrevHash, prev)
	if !contentOK {
		// Written at another seq? Then rows were renumbered or reordered.
		for d := int64(1); d <= moveWindow; d++ {
			for _, s := range [2]int64{e.Seq - d, e.Seq + d} {
				if s < 1 {
					continue
				}
				if bytes.Equal(chainHash(h, nil, e.PrevHash, s, e.Time, e.Request, e.Data), e.Hash) {
					how := "an event before it was deleted and the rest renumbered, or rows were reordered"
					if s < e.Seq {
						how = "an event was inserted before it, or rows were reordered"
					}
					return &ChainError{Seq: e.Seq, Problem: Moved,
						Detail: fmt.Sprintf("this event was written as seq %d: %s", s, how)}
				}
			}
		}
		if linkOK {
			// Does the next record link past this one, to the same predecessor?
			var next *store.AuditRecord
			if len(after) > 0 {
				next = after[0]
			} else if more, err := src.ScanAudit(ctx, e.Seq, 1); err == nil && len(more) > 0 {
				next = more[0]
			}
			if next != nil && next.Seq == e.Seq+1 && bytes.Equal(next.PrevHash, e.PrevHash) {
				return &ChainError{Seq: e.Seq, Problem: Inserted,
					Detail: fmt.Sprintf("the event does not match its hash %s and the next event links past it, to seq %d: the row was inserted",
						short(e.Hash), e.Seq-1)}
			}
			return &ChainError{Seq: e.Seq, Problem: Edited,
				Detail: fmt.Sprintf("the event's contents do not match its hash %s: the row was edited (or forged)", short(e.Hash))}
		}
		return &ChainError{Seq: e.Seq, Problem: Replaced,
			Detail: fmt.Sprintf("neither its contents nor its prev_hash %s match (the previous event hashes to %s): the row was inserted or rewritten",
				short(e.PrevHash), short(prev))}
	}
	detail := fmt.Sprintf("its prev_hash %s is not the hash of seq %d (%s): ", short(e.PrevHash), e.Seq-1, short(prev))
	if e.Seq == 1 {
		detail = fmt.Sprintf("its prev_hash %s is not zero, as the first event's must be: ", short(e.PrevHash))
	}
	detail += "the event before it was rewritten with a recomputed hash, or events were inserted or deleted between them"
	return &ChainError{Seq: e.Seq, Problem: Unlinked, Detail: detail}
}
