package store

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"syscall"

	"github.com/agentreach/reach/internal/crashpoint"
)

// FrameEnder writes the end of a call's checkpoint that a store refused
// when the call ended (it was down), once it answers again: only where
// the checkpoint is still "executing" of the life that wrote it, since a
// recovery may have marked it meanwhile (cancelled: the call may have
// run), and a mark is never overwritten. The SQL stores and Memory
// implement it.
type FrameEnder interface {
	// EndExecutingFrame writes f's state, undo and error where the
	// checkpoint of (f.Request, f.Frame) is "executing" (and, where the
	// store keeps owners, of f.Owner), and reports whether it was.
	EndExecutingFrame(ctx context.Context, f *Frame) (bool, error)
}

// EndExecutingFrame implements FrameEnder.
func (m *Memory) EndExecutingFrame(ctx context.Context, f *Frame) (bool, error) {
	if err := m.lock(ctx); err != nil {
		return false, err
	}
	defer m.mu.Unlock()
	old := m.frames[f.Request][f.Frame]
	if old == nil || old.State != "executing" || (f.Owner != "" && old.Owner != "" && old.Owner != f.Owner) {
		return false, nil
	}
	c := *old
	c.State, c.Undo, c.Error = f.State, f.Undo, f.Error
	m.putFrame(&c)
	f.Updated = c.Updated
	return true, nil
}

// KeepEnded keeps f, the end of a call's checkpoint with the undo it
// registered, which the store refused (it was down), and writes it again
// until the store takes it, as the call's completion is (see Complete):
// before it, since Ended comes first, so that a recovery after both finds
// the undo. It reports whether it kept f: false when the store cannot end
// a checkpoint only where it is "executing" (no FrameEnder) or too many
// are kept. With a kept file (KeepFile), f is in it when KeepEnded
// returns, for a start after a kill.
func (s *Idempotency) KeepEnded(f *Frame) bool {
	if _, ok := s.recs.(FrameEnder); !ok {
		return false
	}
	c := *f
	// Its write needs its ids, state, undo and error (EndExecutingFrame),
	// not its arguments: the "executing" row has them, and kept here they
	// would be held unbounded in bytes, and written to the kept file.
	c.Args, c.Undo, c.Error, c.Stack = nil, bytes_(f.Undo), bytes_(f.Error), nil
	c.EndOnly = false
	k := c.Request + "\x00" + c.Frame
	s.mu.Lock()
	if s.ends == nil {
		s.ends = map[string]*Frame{}
	}
	if _, had := s.ends[k]; !had && len(s.ends) >= keptEntries {
		s.mu.Unlock()
		s.log.Error("idempotency: a call's ended checkpoint could not be written and too many are kept already: it is lost, and its undo will not run if its request is interrupted",
			"request", c.Request, "frame", c.Frame)
		return false
	}
	s.ends[k] = &c
	start := !s.keeping
	s.keeping = true
	s.mu.Unlock()
	s.journal(keptLine{Owner: s.owner, End: &c})
	crashpoint.Reached("kept.ended") // a kill here: the next start writes it from the file
	if start {
		s.log.Warn("idempotency: the store did not take a call's ended checkpoint; it is kept in memory and written once the store answers again",
			"request", c.Request, "frame", c.Frame)
		go s.keeper()
	}
	return true
}

func bytes_(b []byte) []byte {
	if b == nil {
		return nil
	}
	return append([]byte(nil), b...)
}

// endsKept returns the ended checkpoints kept.
func (s *Idempotency) endsKept() []*Frame {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]*Frame, 0, len(s.ends))
	for _, f := range s.ends {
		out = append(out, f)
	}
	return out
}

// keptLen is how many completions and ended checkpoints are kept.
func (s *Idempotency) keptLen() int {
	s.mu.Lock()
	n := len(s.ends)
	s.mu.Unlock()
	return n + s.kept.Len()
}

// writeEnds writes the kept ended checkpoints, until the store refuses
// one (its error).
func (s *Idempotency) writeEnds(ctx context.Context) error {
	for _, f := range s.endsKept() {
		if err := s.writeEnd(ctx, f); err != nil {
			return err
		}
	}
	return nil
}

// writeEnd writes f, a kept ended checkpoint, and forgets it once
// written, or once the store says its checkpoint is not "executing" of
// this life any more.
func (s *Idempotency) writeEnd(ctx context.Context, f *Frame) error {
	landed, err := s.endExecuting(ctx, f)
	if err != nil {
		// ErrClosed too: the gateway is stopping, and the end is in the
		// data folder's file for the next start (SaveKept).
		return err
	}
	s.mu.Lock()
	if s.ends[f.Request+"\x00"+f.Frame] == f {
		delete(s.ends, f.Request+"\x00"+f.Frame)
	}
	s.mu.Unlock()
	_ = landed
	return nil
}

// endExecuting writes f where its checkpoint is still "executing", and
// logs when it is not (a recovery marked it: its undo is not there).
func (s *Idempotency) endExecuting(ctx context.Context, f *Frame) (bool, error) {
	e, ok := s.recs.(FrameEnder)
	if !ok {
		return false, nil
	}
	c := *f // the store dates it
	landed, err := e.EndExecutingFrame(ctx, &c)
	if err == nil && !landed {
		s.log.Warn("idempotency: a kept ended checkpoint was not written: its checkpoint is no longer executing (a recovery marked it may have run); its undo is not recorded",
			"request", f.Request, "frame", f.Frame)
	}
	return landed, err
}

// KeepFile has every completion and ended checkpoint kept from now on
// written to path (RestoreKept's file) as it is kept, synced, so that a
// start after a kill (kill -9, a crash) writes them before its recovery,
// as a start after a stop does (SaveKept, which then writes nothing more
// to path). Call it at start, after RestoreKept took the file (if it
// could not, do not: the file's lines would be removed with these).
func (s *Idempotency) KeepFile(path string) {
	s.fmu.Lock()
	s.file = path
	s.journaled.Store(&path)
	// A rewrite (compact) a kill cut off before its rename left its copy:
	// the kept file, never renamed over, still holds every line.
	if err := os.Remove(path + keptCompactSuffix); err != nil && !errors.Is(err, os.ErrNotExist) {
		s.log.Warn("idempotency: the copy of the kept completions' file a cut-off rewrite left could not be removed", "err", err)
	}
	s.fmu.Unlock()
	s.reserveSpace()
}

// KeptReserveSize is the size of the file KeepFile reserves next to the
// kept file (KeptReserve), on the same disk: when the disk is full, it is
// removed so that what is kept still reaches the kept file.
const KeptReserveSize = 1 << 20

// KeptReserve is the reserve file of the kept file path: hidden, named
// after it.
func KeptReserve(path string) string {
	return filepath.Join(filepath.Dir(path), "."+filepath.Base(path)+".reserve")
}

// reserveSpace writes the reserve file (KeptReserveSize bytes of zeros,
// synced, not sparse), unless it is there; a disk too full for it leaves
// none, logged.
func (s *Idempotency) reserveSpace() {
	s.fmu.Lock()
	defer s.fmu.Unlock()
	s.makeReserve()
}

// makeReserve is reserveSpace with fmu held.
func (s *Idempotency) makeReserve() {
	if s.file == "" || s.reserve != "" {
		return
	}
	path := KeptReserve(s.file)
	if fi, err := os.Stat(path); err == nil && fi.Size() >= KeptReserveSize {
		s.reserve = path
		return
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err == nil {
		_, err = f.Write(make([]byte, KeptReserveSize))
		if err == nil {
			err = f.Sync()
		}
		if cerr := f.Close(); err == nil {
			err = cerr
		}
	}
	if err != nil {
		os.Remove(path)
		s.log.Warn("idempotency: no room reserved for the kept completions' file: on a full disk, a kill before the store takes them loses them", "err", err)
		return
	}
	s.reserve = path
}

// freeReserve removes the reserve file, if there is one, and reports
// whether it did: the kept file's write that the full disk refused may
// then be tried again. Called with fmu held.
func (s *Idempotency) freeReserve() bool {
	if s.reserve == "" {
		return false
	}
	err := os.Remove(s.reserve)
	s.reserve = ""
	if err != nil {
		return false
	}
	s.log.Warn("idempotency: the data folder's disk is full: its reserve file was removed so that the kept completions reach the kept file (a stop or a kill before the store takes them keeps them); free space on the disk")
	return true
}

// journal appends l to the kept file, if there is one. A line it cannot
// write is written by SaveKept at the stop (it is still kept).
func (s *Idempotency) journal(l keptLine) {
	s.fmu.Lock()
	defer s.fmu.Unlock()
	if s.file == "" {
		return
	}
	b, err := json.Marshal(l)
	if err == nil {
		err = AppendSynced(s.file, append(b, '\n'))
		if errors.Is(err, syscall.ENOSPC) && s.freeReserve() {
			// A line the full disk cut short ends where this one began:
			// RestoreKept moves it aside, and reads this one.
			err = AppendSynced(s.file, append([]byte{'\n'}, append(b, '\n')...))
			if err == nil {
				crashpoint.Reached("kept.reserve") // a kill here: the next start writes the line, and makes the reserve again
			}
		}
	}
	if err != nil {
		s.fileBroken = true
		s.journaled.Store(nil)
		what := []any{"err", err}
		if l.End != nil {
			what = append(what, "request", l.End.Request, "frame", l.End.Frame)
		} else {
			what = append(what, "key", l.Key)
		}
		s.log.Error("idempotency: a kept completion could not be written to the data folder: a stop or a kill before the store takes it loses it (a retry of its key is then answered interrupted: it may have run)", what...)
		return
	}
	s.fileLines++
	s.compact()
}

// journalDone removes the kept file once nothing is kept: every line in
// it is written to the store.
func (s *Idempotency) journalDone() {
	s.fmu.Lock()
	defer s.fmu.Unlock()
	if s.file == "" || s.keptLen() > 0 {
		return
	}
	if s.fileLines > 0 {
		if err := os.Remove(s.file); err != nil && !errors.Is(err, os.ErrNotExist) {
			s.log.Warn("idempotency: the kept completions' file could not be removed; the next start writes its lines again (they are dropped)", "err", err)
			return
		}
		s.fileLines, s.fileBroken = 0, false
		file := s.file
		s.journaled.Store(&file)
		s.compaction.void = true // a rewrite running is of no use: its copy is not renamed
	}
	// The store took what was kept: a reserve a full disk used (even if
	// the write it made room for failed all the same) is made again, for
	// the next time (else only the next start would).
	s.makeReserve()
}

// AppendSynced appends b to the file at path (0600, created if missing)
// and syncs it: a line a kill must not lose (the kept file's, the
// cluster's kept stops).
func AppendSynced(path string, b []byte) error { return fileSynced(path, os.O_APPEND, b) }

// fileSynced writes b to path (0600, created if missing) opened with
// flag besides (os.O_APPEND or os.O_TRUNC), and syncs it.
func fileSynced(path string, flag int, b []byte) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|flag, 0o600)
	if err != nil {
		return err
	}
	if _, err := f.Write(b); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
