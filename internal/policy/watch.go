package policy

import (
	"bytes"
	"cmp"
	"context"
	"crypto/sha256"
	"fmt"
	"log/slog"
	"os"
	"slices"
	"sync"
	"time"
)

// WatchOptions configure a Watcher. A nil *WatchOptions means all defaults.
type WatchOptions struct {
	// Interval between two looks at the files; if zero, 1s (a change applies
	// within two intervals at most).
	Interval time.Duration
	// OnError, if not nil, is called when changed files do not load; the
	// policies in force stay. It is called once per distinct change.
	OnError func(error)
	// OnReload, if not nil, is called after a change is put in force.
	OnReload func(*Set)
	// Logger; if nil, slog.Default().
	Logger *slog.Logger
}

// Watcher keeps an Engine's policies in step with a file or a folder of
// *.cedar files (P5): it looks at their names, sizes and modification times
// every interval, and when they change it loads them and puts the new set in
// force atomically. A change that does not load is reported and the
// previous policies stay in force. Safe for concurrent use.
type Watcher struct {
	eng  *Engine
	path string
	opts WatchOptions

	mu      sync.Mutex
	stamp   string   // names, sizes and times last seen
	digest  [32]byte // of the contents in force
	lastErr string   // the last error reported, so it is reported once
}

// NewWatcher loads the policies at path into eng and returns a Watcher for
// them; call Run to follow changes. It fails if they do not load.
func NewWatcher(eng *Engine, path string, opts *WatchOptions) (*Watcher, error) {
	w := &Watcher{eng: eng, path: path}
	if opts != nil {
		w.opts = *opts
	}
	w.opts.Interval = cmp.Or(w.opts.Interval, time.Second)
	if w.opts.Logger == nil {
		w.opts.Logger = slog.Default()
	}
	stamp, err := statPath(path)
	if err != nil {
		return nil, err
	}
	srcs, err := readSources(path)
	if err != nil {
		return nil, err
	}
	set, err := Parse(srcs...)
	if err != nil {
		return nil, err
	}
	w.stamp, w.digest = stamp, set.Digest()
	eng.Replace(set)
	w.warnEmpty(set)
	// As a reload does: a policy that can never apply, written at the start,
	// was dropped without a word (a forbid so, and the calls it names ran).
	for _, warn := range set.Warnings() {
		w.opts.Logger.Warn("policy", "warning", warn)
	}
	return w, nil
}

// Run looks for changes every interval until ctx ends. It reads changed
// files and puts them in force once two looks in a row read the same
// contents, so that a file an editor rewrites in place is read whole: read
// half written, a prefix of the policies was put in force (a forbid further
// down dropped until the next look), or, read just truncated, none. A
// change so applies within two intervals. The contents must agree, not the
// files' sizes and times: a file rewritten with the same contents every
// look (a sync job copying it, a touch), whose time never settles, kept
// every other change, a forbid added beside it, out of force for as long.
func (w *Watcher) Run(ctx context.Context) {
	t := time.NewTicker(w.opts.Interval)
	defer t.Stop()
	var last [32]byte // the digest of the contents the last look read, if it read any
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			last = w.look(last)
		}
	}
}

// look is Run's look at the files: changed contents that are not last (the
// contents the previous look read) are left for the next look; it returns
// the digest of the contents read, if any.
func (w *Watcher) look(last [32]byte) [32]byte {
	w.mu.Lock()
	defer w.mu.Unlock()
	stamp, err := statPath(w.path)
	if err == nil && stamp == w.stamp {
		return [32]byte{}
	}
	var srcs []Source
	if err == nil {
		srcs, err = readSources(w.path)
	}
	if err != nil {
		w.load(stamp, nil, err)
		return [32]byte{}
	}
	d := digestOf(srcs)
	if d != w.digest && d != last {
		return d // being written, perhaps: read again once it has settled
	}
	w.load(stamp, srcs, nil)
	return d
}

// Check looks at the files once: it returns nil when nothing changed or the
// change is in force, and the error when changed files do not load (the
// previous policies stay). Run looks every interval; call it yourself on
// a signal (SIGHUP) or in tests: it reads a change at once.
func (w *Watcher) Check() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	stamp, err := statPath(w.path)
	return w.check(stamp, err)
}

// check is Check once the files' stamp (or the error statting them) is
// known; w.mu is held.
func (w *Watcher) check(stamp string, err error) error {
	if err == nil && stamp == w.stamp {
		return nil
	}
	var srcs []Source
	if err == nil {
		srcs, err = readSources(w.path)
	}
	return w.load(stamp, srcs, err)
}

// load puts the sources read (under the files' stamp) in force, or reports
// err, or their not loading, once per distinct error; w.mu is held.
func (w *Watcher) load(stamp string, srcs []Source, err error) error {
	var set *Set
	if err == nil {
		if digestOf(srcs) == w.digest {
			w.stamp, w.lastErr = stamp, "" // touched, not changed
			return nil
		}
		set, err = Parse(srcs...)
	}
	if err != nil {
		err = fmt.Errorf("policies at %s not reloaded, the previous ones stay in force: %w", w.path, err)
		if err.Error() != w.lastErr {
			w.lastErr = err.Error()
			w.opts.Logger.Error("policy reload failed", "path", w.path, "err", err)
			if w.opts.OnError != nil {
				w.opts.OnError(err)
			}
		}
		return err
	}
	w.eng.Replace(set)
	w.stamp, w.digest, w.lastErr = stamp, set.Digest(), ""
	w.opts.Logger.Info("policies reloaded", "path", w.path, "policies", set.Len(), "warnings", len(set.Warnings()))
	w.warnEmpty(set)
	for _, warn := range set.Warnings() {
		w.opts.Logger.Warn("policy", "warning", warn)
	}
	if w.opts.OnReload != nil {
		w.opts.OnReload(set)
	}
	return nil
}

// warnEmpty says so when set holds no policy: it is in force (nothing
// permitted is denied, as with any set), but files emptied by mistake (a
// truncating save cut short, a redirect over the file, a disk full) turn
// every tool call, resource read, prompt get and completion down at once
// (model turns are not the policies' to judge), which an Info line alone
// did not say.
func (w *Watcher) warnEmpty(set *Set) {
	if set.Len() > 0 {
		return
	}
	w.opts.Logger.Warn("the policies in force hold no policy: every tool call, resource read, prompt get and completion is denied", "path", w.path,
		"next", "if that is not meant, write the policies back (the previous ones are not kept); to deny everything on purpose, write forbid (principal, action, resource); so it reads as meant")
}

// digestOf hashes sources the way Parse does.
func digestOf(srcs []Source) [32]byte {
	h := sha256.New()
	for _, src := range srcs {
		fmt.Fprintf(h, "%d:%s\x00%d:", len(src.Name), src.Name, len(src.Text))
		h.Write(src.Text)
	}
	var d [32]byte
	h.Sum(d[:0])
	return d
}

// statPath describes the policy files by name, size and modification time.
func statPath(path string) (string, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return "", loadError(path, err)
	}
	var b bytes.Buffer
	stampOf := func(name string, fi os.FileInfo) {
		fmt.Fprintf(&b, "%s\x00%d\x00%d\x00", name, fi.Size(), fi.ModTime().UnixNano())
	}
	if !fi.IsDir() {
		stampOf(path, fi)
		return b.String(), nil
	}
	names, err := policyFiles(path)
	if err != nil {
		return "", err
	}
	slices.Sort(names)
	for _, n := range names {
		fi, err := os.Stat(n)
		if err != nil {
			return "", loadError(n, err)
		}
		stampOf(n, fi)
	}
	return b.String(), nil
}
