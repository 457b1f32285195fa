package store

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"time"

	"github.com/agentreach/reach/internal/crashpoint"
	"github.com/agentreach/reach/internal/idempotency"
)

// KeptGrace is how long a stopping gateway waits for the store to take
// the completions it keeps (Drain): the HTTP lanes' shutdown grace.
const KeptGrace = 5 * time.Second

// KeptFile is the file in the data folder where a gateway that stopped
// with kept completions left them (SaveKept), for its next start
// (RestoreKept).
const KeptFile = "idempotency-kept.jsonl"

// KeptAside is the file next to path, a kept file (KeptFile, or an
// instance's on PostgreSQL), where RestoreKept moves the lines of path it
// cannot read (0600), for an operator to look at: its name with
// ".unreadable" after it. Not a name ending in ".jsonl": that of a kept
// file ("-unreadable.jsonl" was instance "INSTANCE-unreadable"'s kept
// file on PostgreSQL, and SQLite's aside file instance "unreadable"'s).
func KeptAside(path string) string {
	return path + ".unreadable"
}

// ErrKeptAside is in RestoreKept's error when it moved lines it could not
// read aside (KeptAside) and wrote the others: the file is gone, and
// KeepFile may follow.
var ErrKeptAside = errors.New("moved aside")

// keptLine is one completion in KeptFile: the claim's owner (the life that
// stopped), its key, and what Complete was given.
type keptLine struct {
	Owner   string          `json:"owner"`
	Key     string          `json:"key"`
	Args    string          `json:"args,omitempty"`
	Result  json.RawMessage `json:"result,omitempty"` // absent: a release of the key
	Expires time.Time       `json:"expires"`
	// End, on a line of its own (no key), is a call's ended checkpoint
	// with its undo (KeepEnded), written only where the checkpoint is
	// still "executing".
	End *Frame `json:"end,omitempty"`
}

// Drain writes the completions this Idempotency keeps (the store refused
// them) until none is left or ctx ends, and returns how many are left. A
// gateway calls it as it stops, before its life ends on the store: a
// completion written then answers a retry with its result, where one
// dropped would leave the claim, which recovery settles "interrupted".
// It returns once no rewrite of the kept file runs either (or ctx ended:
// the rewrite, stalled on its disk, then renames no copy over the kept
// file, which holds every line still, and none starts from then on).
func (s *Idempotency) Drain(ctx context.Context) int {
	defer s.waitRewrite(ctx)
	if s.keptLen() == 0 {
		return 0
	}
	s.log.Warn("idempotency: stopping with completions the store has not taken: writing them for up to the shutdown grace",
		"kept", s.keptLen())
	wait := keptRetry
	for {
		err := s.writeEnds(ctx) // an undo is recorded before its call's key is settled
		for _, key := range s.kept.Keys() {
			if err != nil {
				break
			}
			err = s.writeKept(ctx, key)
		}
		n := s.keptLen()
		if n == 0 {
			s.journalDone()
			s.log.Info("idempotency: the kept completions are written")
			return 0
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return n
		case <-t.C:
		}
		if err != nil {
			wait = min(2*wait, keptBackoff)
		}
	}
}

// SaveKept writes the completions still kept to path (0600), for the next
// start of this instance to write (RestoreKept), and returns how many; it
// writes no file when none is kept. Call it after Drain, once ctx ended.
func (s *Idempotency) SaveKept(path string) (int, error) {
	keys, ends := s.kept.Keys(), s.endsKept()
	if len(keys)+len(ends) == 0 {
		return 0, nil
	}
	// Read without fmu: a rewrite of the kept file that a stalled disk
	// holds in its last steps (fmu held) does not hold the stop past its
	// grace here; the kept file is whole until the rewrite renames a copy
	// holding every line over it, which it no longer does once the stop
	// has given up waiting for it (waitRewrite).
	if p := s.journaled.Load(); p != nil && *p == path {
		// Every line is in path already, written as it was kept.
		crashpoint.Reached("kept.saved")
		return len(keys) + len(ends), nil
	}
	var b bytes.Buffer
	n := 0
	for _, f := range ends { // before the completions: an undo is recorded before its call's key is settled
		line, err := json.Marshal(keptLine{Owner: s.owner, End: f})
		if err != nil {
			return 0, err
		}
		b.Write(line)
		b.WriteByte('\n')
		n++
	}
	for _, key := range keys {
		e, ok := s.kept.Get(key)
		if !ok {
			continue
		}
		line, err := json.Marshal(keptLine{Owner: s.owner, Key: key, Args: e.Args, Result: e.Result, Expires: e.Expires})
		if err != nil {
			return 0, err
		}
		b.Write(line)
		b.WriteByte('\n')
		n++
	}
	// Appended: a file an earlier stop left and the last start could not
	// write (the store was down) is kept too.
	lines := b.Bytes()
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		return 0, err
	}
	if fi, err := f.Stat(); err == nil && fi.Size() > 0 {
		// A line an earlier write left cut short (a full disk) ends
		// here: these start on their own line, not glued to it.
		last := make([]byte, 1)
		if _, err := f.ReadAt(last, fi.Size()-1); err == nil && last[0] != '\n' {
			lines = append([]byte{'\n'}, lines...)
		}
	}
	if _, err := f.Write(lines); err != nil {
		s.fmu.Lock()
		freed := errors.Is(err, syscall.ENOSPC) && s.freeReserve()
		s.fmu.Unlock()
		if !freed {
			f.Close()
			return 0, err
		}
		// What the full disk cut short ends on a line of its own.
		if _, err := f.Write(append([]byte{'\n'}, lines...)); err != nil {
			f.Close()
			return 0, err
		}
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return 0, err
	}
	if err := f.Close(); err != nil {
		return 0, err
	}
	crashpoint.Reached("kept.saved")
	return n, nil
}

// RestoreKept writes the completions a stop left in path (SaveKept) under
// the claims of the lives that stopped, then removes the file, and returns
// how many it wrote. Call it at start, before Recover (which would settle
// those claims "interrupted"). A completion whose claim is gone (another
// instance settled it meanwhile) is dropped, as Drain drops it. The file
// stays when the store refuses a write: the error says so, and the next
// start tries again. The file is read a line at a time, never whole: a
// line longer than keptLineMax is not read into memory but streamed aside.
// Lines it cannot read (one cut short, one edited by hand, one too long)
// are logged as they are met, kept in a file next to it as it reads, and
// moved aside, once the others are written, to KeptAside(path) next to it
// (appended, synced, 0600), and the file is removed all the same,
// so that KeepFile may follow: the error then says how many and where, and
// is both idempotency.ErrBadRecord and ErrKeptAside. Only if they cannot
// be moved aside do they stay in path (the error is not ErrKeptAside).
func (s *Idempotency) RestoreKept(ctx context.Context, path string) (int, error) {
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	defer f.Close()
	n := 0
	// Read a line at a time (keptLineMax at most: a longer one streams
	// aside), never the file whole. Lines it cannot read (one cut short,
	// one edited by hand) are moved aside, said in the log as they are
	// met; the others are written all the same: a later stop appends to
	// the file, and its lines must not wait behind them.
	spool := &keptSpool{path: path + keptSpoolSuffix}
	spool.remove() // one a start killed as it read the file left
	defer spool.remove()
	var badErr, werr error
	nbad, at := 0, 0
	bad := func(err error, size int) {
		nbad++
		if badErr == nil {
			badErr = err
		}
		s.log.Warn("idempotency: a line of the kept completions' file could not be read; it is moved aside",
			"file", filepath.Base(path), "line", at, "bytes", size, "err", err)
	}
	longSize := 0
	err = scanKept(f, keptLineMax, func(b []byte) error {
		at++
		if len(bytes.TrimSpace(b)) == 0 {
			return nil
		}
		var l keptLine
		if err := json.Unmarshal(b, &l); err != nil {
			bad(err, len(b))
			spool.write(b, true)
			return nil
		}
		if l.End != nil {
			landed, err := s.endExecuting(ctx, l.End)
			if err != nil {
				werr = fmt.Errorf("writing the ended checkpoints a stop left in %s: %w", filepath.Base(path), err)
				return werr
			}
			if landed {
				n++
			}
			return nil
		}
		if l.Result == nil {
			err = s.recs.ReleaseKey(ctx, l.Key, l.Owner)
		} else {
			err = s.recs.CompleteKey(ctx, l.Key, l.Owner, l.Result, l.Expires)
		}
		switch {
		case err == nil:
			n++
			crashpoint.Reached("kept.restored") // a kill here writes it again at the next start: a conflict, dropped
		case errors.Is(err, ErrConflict):
			s.log.Warn("idempotency: a completion a stop left could not be written: its claim was settled meanwhile; it is dropped", "key", l.Key)
		default:
			werr = fmt.Errorf("writing the completions a stop left in %s: %w", filepath.Base(path), err)
			return werr
		}
		return nil
	}, func(chunk []byte, end bool) error {
		if longSize == 0 {
			at++
		}
		longSize += len(chunk)
		spool.write(chunk, end)
		if end {
			bad(fmt.Errorf("a line longer than %d bytes", keptLineMax), longSize)
			longSize = 0
		}
		return nil
	})
	if werr != nil {
		return n, werr // the file stays, whole: the next start writes it again
	}
	if err != nil {
		return n, fmt.Errorf("reading the completions a stop left in %s: %w", filepath.Base(path), err)
	}
	f.Close()
	if badErr != nil {
		// Moved aside, so that this life's journal (KeepFile) may run: a
		// file that stayed would take its lines, and the next start would
		// refuse it again. Appended: an earlier start's stay; not again if
		// it ends with them (a start killed between this append and the
		// file's removal, kept.aside, read them again).
		aside := KeptAside(path)
		err = spool.moveAside(aside)
		if err == nil {
			crashpoint.Reached("kept.aside") // a kill here: the next start reads the file again
		}
		if err != nil {
			err = fmt.Errorf("reading the completions a stop left in %s: %w: %w (%d lines could not be read, nor moved aside to %s: %w; they are left in it; move the file aside to start without them; their keys' retries are then answered that they may have run)",
				filepath.Base(path), idempotency.ErrBadRecord, badErr, nbad, filepath.Base(aside), err)
			if kerr := spool.keep(path); kerr != nil {
				err = errors.Join(err, kerr)
			}
			return n, err
		}
		badErr = fmt.Errorf("reading the completions a stop left in %s: %w: %w (%d lines could not be read: %w to %s, next to it; the others are written; the calls of those lines, if they were completions, are answered on retry that they may have run (interrupted), since their results could not be read; look at the lines, then delete that file)",
			filepath.Base(path), idempotency.ErrBadRecord, badErr, nbad, ErrKeptAside, filepath.Base(aside))
	}
	if err := os.Remove(path); err != nil {
		return n, errors.Join(badErr, err)
	}
	if badErr != nil {
		return n, badErr
	}
	if n > 0 {
		s.log.Info("idempotency: the completions the last stop left are written", "written", n)
	}
	return n, nil
}
