package store

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"

	"github.com/agentreach/reach/internal/idempotency"
)

// keptCompactLines is how many lines the kept file (KeepFile) holds before
// it is rewritten with only what is still kept, once it holds four times
// as many lines as that: the lines of completions the store took since
// stay in it until nothing is kept (journalDone), and a store that keeps
// refusing one while it takes the others grew it with every completion it
// refused for as long as that lasted, for the next start to read.
var keptCompactLines = 2 * keptEntries

// keptCompactSuffix names the copy compact writes next to the kept file
// before renaming it over it; KeepFile removes one a kill left.
const keptCompactSuffix = ".compact"

// keptCompactStep, if not nil, is called at each step of a rewrite of the
// kept file (tests): "snapshot" (what is kept read, the file's size
// noted), "written" (the copy written and synced), with fmu not held;
// "tail" (the lines appended meanwhile copied to it and synced, not yet
// renamed) and "renamed", with fmu held; "wait" when a stop waits for a
// rewrite that runs (waitRewrite), and "waited" as it returns, having
// found none running, with fmu not held.
var keptCompactStep func(step string)

func compactStep(step string) {
	if keptCompactStep != nil {
		keptCompactStep(step)
	}
}

// keptCompaction is the state of the kept file's rewrite, under fmu.
type keptCompaction struct {
	running bool
	from    int64 // the kept file's size when the rewrite read what is kept
	void    bool  // the kept file was removed (journalDone) since: the copy is of no use
	wg      sync.WaitGroup
	// ending is closed when the running rewrite ends; read without fmu
	// (waitRewrite): a rewrite that a stalled disk holds in its last steps
	// holds fmu meanwhile.
	ending atomic.Pointer[chan struct{}]
	// givenUp is set once a stop no longer waits for a rewrite
	// (waitRewrite returned: the one it waited for ended, or its grace is
	// over): one still running then renames no copy over the kept file,
	// and none starts. The life is over: the next one in the process, or
	// in another on the data folder, may have the file.
	givenUp atomic.Bool
}

// compact starts a rewrite of the kept file with the lines of what is kept
// now, when it holds many more, unless one runs: on a goroutine of its own,
// since journal runs in the store's writer, and a rewrite of up to
// keptBytes stalled every write while it ran. Called with fmu held, after a
// line is appended; a file a line could not be written to (fileBroken) is
// left as it is.
func (s *Idempotency) compact() {
	if s.file == "" || s.fileBroken || s.fileLines < keptCompactLines || s.compaction.running || s.compaction.givenUp.Load() {
		return
	}
	if s.fileLines < 4*s.keptLen() {
		return
	}
	s.compaction.running, s.compaction.void = true, false
	done := make(chan struct{})
	s.compaction.ending.Store(&done)
	s.compaction.wg.Add(1)
	go func() {
		defer close(done) // once running is false, or a next rewrite's
		s.rewriteKept()
	}()
}

// waitRewrite waits until no rewrite of the kept file runs, or ctx ends;
// then none starts any more. A stop calls it (Drain): a rewrite left
// running past the life's end could rename its copy over the kept file of
// the next life in the process, or still write in a data folder the life
// let go of. It does not take fmu, which a rewrite holds in its last steps
// (a stalled disk holds it there); one still running when ctx ends (a
// stalled disk) is given up: it renames no copy over the kept file, which
// holds every line kept, and removes its copy.
//
// givenUp is set before it looks for the last time whether one started:
// compact reads it before it starts one, and a rewrite reads it first
// thing, so either this sees the one that started (and waits for it, given
// up, to end) or that one sees givenUp and ends at once
// (TestKeptRewriteNoneStartsAsTheStopReturns).
func (s *Idempotency) waitRewrite(ctx context.Context) {
	defer s.compaction.givenUp.Store(true)
	for {
		p := s.compaction.ending.Load()
		ended := p == nil
		if !ended {
			select {
			case <-*p:
				ended = true
			default:
			}
		}
		if ended {
			s.compaction.givenUp.Store(true)
			if s.compaction.ending.Load() == p { // none started after it
				compactStep("waited")
				return
			}
			continue
		}
		compactStep("wait")
		select {
		case <-*p:
		case <-ctx.Done():
			return
		}
	}
}

// rewriteKept rewrites the kept file: what is kept is read, with the
// file's size then, under fmu (a line is appended whole under it), and
// written to a copy next to it (keptCompactSuffix) and synced, with fmu
// not held: journal appends to the kept file meanwhile. Then, under fmu,
// what was appended to the kept file since its size was noted is copied
// to the end of the copy, synced, and the copy renamed over the kept file.
// A kill at any point leaves either file, each with every line still kept
// (the kept file until the rename; the copy, synced with the lines
// appended meanwhile, after it). A line kept while the copy was made may be
// in it twice (RestoreKept drops the second write: a conflict). A kept file
// removed meanwhile (nothing was kept any more), or one a line could not be
// written to, is left as it is, and so is one whose rewrite fails (logged).
func (s *Idempotency) rewriteKept() {
	defer s.compaction.wg.Done()
	s.fmu.Lock()
	path := s.file
	fi, err := os.Stat(path)
	if err != nil || s.fileBroken || s.compaction.givenUp.Load() { // a stop found none running: the life is over
		s.compaction.running = false
		s.fmu.Unlock()
		return
	}
	s.compaction.from, s.compaction.void = fi.Size(), false
	ends := s.endsKept()
	// Read at one moment: the writer's Drop (writeKept) does not take
	// fmu, and a key it dropped between Keys and Get was written to the
	// copy with an empty entry, as a release (TestKeptRewriteKeepsResults).
	keys, entries := s.kept.Entries()
	s.fmu.Unlock()
	compactStep("snapshot")

	tmp := path + keptCompactSuffix
	fail := func(err error) {
		os.Remove(tmp)
		s.compaction.running = false
		s.log.Warn("idempotency: the kept completions' file could not be rewritten with only what is still kept; it grows on", "lines", s.fileLines, "err", err)
	}
	n, err := writeKeptCopy(tmp, s.owner, ends, keys, entries)
	if err != nil {
		s.fmu.Lock()
		fail(err)
		s.fmu.Unlock()
		return
	}
	compactStep("written")

	s.fmu.Lock()
	defer s.fmu.Unlock()
	if s.compaction.void || s.fileBroken || s.file != path || s.compaction.givenUp.Load() {
		os.Remove(tmp)
		s.compaction.running = false
		return
	}
	tail, err := appendTail(tmp, path, s.compaction.from)
	if err != nil {
		fail(err)
		return
	}
	compactStep("tail")
	if s.compaction.givenUp.Load() { // the stop gave up waiting while the disk stalled: the life is over
		os.Remove(tmp)
		s.compaction.running = false
		return
	}
	if err := os.Rename(tmp, path); err != nil {
		fail(err)
		return
	}
	if d, err := os.Open(filepath.Dir(path)); err == nil {
		d.Sync() // the rename, durable
		d.Close()
	}
	s.fileLines = n + tail
	s.compaction.running = false
	compactStep("renamed")
	s.compact() // the lines appended meanwhile may call for another
}

// writeKeptCopy writes to path (0600, truncated) the kept file's lines of
// ends and of the completions keys (entries, in their order), and syncs
// it; it returns how many lines it wrote.
func writeKeptCopy(path, owner string, ends []*Frame, keys []string, entries []idempotency.KeptEntry) (int, error) {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return 0, err
	}
	w := bufio.NewWriterSize(f, keptReadBuffer)
	n := 0
	add := func(l keptLine) error {
		line, err := json.Marshal(l)
		if err != nil {
			return err
		}
		w.Write(line)
		n++
		return w.WriteByte('\n')
	}
	for _, e := range ends { // before the completions, as SaveKept writes them
		if err = add(keptLine{Owner: owner, End: e}); err != nil {
			break
		}
	}
	for i := 0; err == nil && i < len(keys); i++ {
		e := entries[i]
		err = add(keptLine{Owner: owner, Key: keys[i], Args: e.Args, Result: e.Result, Expires: e.Expires})
	}
	if err == nil {
		err = w.Flush()
	}
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return n, err
}

// appendTail appends to dst what src holds past from (the lines appended
// to the kept file while its copy was written), syncs dst, and returns how
// many lines that is.
func appendTail(dst, src string, from int64) (int, error) {
	in, err := os.Open(src)
	if err != nil {
		return 0, err
	}
	defer in.Close()
	if _, err := in.Seek(from, io.SeekStart); err != nil {
		return 0, err
	}
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return 0, err
	}
	lines := 0
	buf := make([]byte, keptReadBuffer)
	for {
		k, rerr := in.Read(buf)
		if k > 0 {
			for _, c := range buf[:k] {
				if c == '\n' {
					lines++
				}
			}
			if _, err := out.Write(buf[:k]); err != nil {
				out.Close()
				return 0, err
			}
		}
		if errors.Is(rerr, io.EOF) {
			break
		}
		if rerr != nil {
			out.Close()
			return 0, rerr
		}
	}
	if err := out.Sync(); err != nil {
		out.Close()
		return 0, err
	}
	return lines, out.Close()
}
