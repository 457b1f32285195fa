package audit

import (
	"testing"
	"time"

	"github.com/agentreach/reach/internal/store"
)

// TestChainHeldOnRetryHasNoSeq: a batch chained once, its append
// refused (another writer appended), then chained again from the new
// head with one of its records now held (its key's event is in the log):
// the held record is not chained and keeps no seq, prev hash or hash of
// the first try, and the others follow on from the new head. Before, the
// held record kept the seq and hashes of its first try.
func TestChainHeldOnRetryHasNoSeq(t *testing.T) {
	at := time.Unix(1_700_000_000, 0)
	a := &store.AuditRecord{Time: at, Request: "r", Data: []byte(`{"kind":"approval","decision":"approved"}`), Once: "k1"}
	b := &store.AuditRecord{Time: at, Request: "r", Data: []byte(`{"kind":"tool"}`)}
	l := &Log{o: Options{CheckpointEvery: 1000}, hasher: newHasher(), head: make([]byte, HashSize), recs: []*store.AuditRecord{a, b}}
	if seq, _, _ := l.chain(); seq != 2 || a.Seq != 1 || b.Seq != 2 {
		t.Fatalf("first try: head %d, seqs %d %d; want 2, 1 2", seq, a.Seq, b.Seq)
	}
	// Another writer appended 5: the retry continues from its head, and
	// a's key is held now.
	l.seq, l.head = 5, make([]byte, HashSize)
	a.Held = true
	seq, head, _ := l.chain()
	if seq != 6 || b.Seq != 6 {
		t.Fatalf("the retry: head %d, b's seq %d; want 6, 6", seq, b.Seq)
	}
	if a.Seq != 0 || a.PrevHash != nil || a.Hash != nil {
		t.Errorf("the held record keeps seq %d, prev %x, hash %x of its first try; want none", a.Seq, a.PrevHash, a.Hash)
	}
	if string(head) != string(b.Hash) {
		t.Errorf("the head is not the last chained record's hash")
	}
}
