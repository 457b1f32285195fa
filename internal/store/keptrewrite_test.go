package store

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/agentreach/reach"
	"github.com/agentreach/reach/internal/idempotency"
)

// keptRewriteFixture is an Idempotency with a kept file whose store
// refuses the completion of key "stuck" while stuck is set, and takes the
// others: completions kept and then written (keptThenWritten) grow its
// kept file, which is rewritten past keptCompactLines (set low).
type keptRewriteFixture struct {
	s     *Idempotency
	mem   *Memory
	path  string
	stuck atomic.Bool
}

func newKeptRewrite(t *testing.T) *keptRewriteFixture {
	t.Helper()
	old := keptCompactLines
	keptCompactLines = 8
	f := &keptRewriteFixture{mem: NewMemory(), path: filepath.Join(t.TempDir(), KeptFile)}
	f.stuck.Store(true)
	f.s = NewIdempotency(&stuckRecs{Memory: f.mem, key: "stuck", stuck: f.stuck.Load}, nil)
	f.s.KeepFile(f.path)
	t.Cleanup(func() {
		// The keeper writes "stuck" once the store takes it, and ends.
		f.stuck.Store(false)
		for f.s.keptLen() > 0 {
			time.Sleep(10 * time.Millisecond)
		}
		f.s.compaction.wg.Wait()
		keptCompactLines = old
	})
	if err := f.keep("stuck"); err != nil {
		t.Fatal(err)
	}
	return f
}

// keep claims key and keeps its completion, as the store's writer does
// when the store refuses it (keep, its journal line appended).
func (f *keptRewriteFixture) keep(key string) error {
	if _, claimed, err := f.s.Claim(context.Background(), &reach.IdemClaim{Key: key, Args: "a"}); err != nil || !claimed {
		return fmt.Errorf("claim %s: %v %v", key, claimed, err)
	}
	b, err := encodeResult(&reach.Result{Status: reach.StatusSuccess, Data: []byte(`"` + key + `"`)})
	if err != nil {
		return err
	}
	f.s.keep(key, idempotency.KeptEntry{Args: "a", Result: b, Expires: time.Now().Add(time.Hour)})
	f.s.hold(key, -1, "")
	return nil
}

// keptThenWritten keeps key's completion, then writes it to the store (a
// line in the kept file of a completion no longer kept).
func (f *keptRewriteFixture) keptThenWritten(key string) error {
	if err := f.keep(key); err != nil {
		return err
	}
	return f.s.writeKept(context.Background(), key)
}

// keptKeys reads the keys of the completion lines of the kept file path.
func keptKeys(t *testing.T, path string) map[string]int {
	t.Helper()
	fh, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer fh.Close()
	keys := map[string]int{}
	sc := bufio.NewScanner(fh)
	for sc.Scan() {
		var l keptLine
		if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
			t.Fatalf("a line of the kept file that cannot be read: %q", sc.Bytes())
		}
		keys[l.Key]++
	}
	return keys
}

// The kept file's rewrite runs off the store's writer: while the copy it
// writes cannot be written (here a named pipe no one reads, as a slow disk
// would hold it), completions the store refuses are still kept and
// appended to the kept file, each returning to the writer. Before, the
// rewrite ran in journal, in the writer, and the writer waited for it:
// every write of the store stalled for as long as it took.
func TestKeptRewriteOffTheWritersPath(t *testing.T) {
	f := newKeptRewrite(t)
	tmp := f.path + keptCompactSuffix
	if err := syscall.Mkfifo(tmp, 0o600); err != nil {
		t.Skip("no named pipes here:", err)
	}
	// drain reads the pipe, once the rewrite opens it: what it wrote, or
	// waits for, goes on (the rewrite then fails: a pipe cannot be synced).
	drain := func() {
		if p, err := os.Open(tmp); err == nil { // waits for the writer
			io.Copy(io.Discard, p)
			p.Close()
		}
	}
	done := make(chan error, 1)
	go func() {
		for i := range 40 {
			if err := f.keptThenWritten(fmt.Sprintf("k%02d", i)); err != nil {
				done <- err
				return
			}
		}
		done <- nil
	}()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(30 * time.Second):
		go drain()
		<-done
		t.Fatal("the kept file's appends waited for its rewrite, which was stuck writing its copy")
	}
	f.s.fmu.Lock()
	running := f.s.compaction.running
	f.s.fmu.Unlock()
	if !running {
		t.Fatal("no rewrite of the kept file is running, yet its copy could not have been written")
	}
	drain()
	f.s.compaction.wg.Wait()
	// The failed rewrite removed its copy (the pipe); the next goes through.
	if err := f.keptThenWritten("last"); err != nil {
		t.Fatal(err)
	}
	f.s.compaction.wg.Wait()
	keys := keptKeys(t, f.path)
	if keys["stuck"] == 0 || len(keys) > keptCompactLines {
		t.Fatalf("the kept file after its rewrite holds %v; want the completion still kept among at most %d lines", keys, keptCompactLines)
	}
}

// A kill at any step of the kept file's rewrite, with a completion kept
// (and its line appended) while it ran, leaves what the next start reads
// (the kept file, once KeepFile removed a copy the kill left) with every
// completion kept at that moment.
func TestKeptRewriteKilledAtEveryStep(t *testing.T) {
	f := newKeptRewrite(t)
	defer func() { keptCompactStep = nil }()
	type killed struct {
		step string
		dir  string
		kept []string
	}
	var kills []killed
	seen := map[string]bool{}
	keptMeanwhile := 0
	keptCompactStep = func(step string) {
		if seen[step] {
			return
		}
		seen[step] = true
		if step == "snapshot" || step == "written" { // fmu not held: the writer appends meanwhile
			keptMeanwhile++
			if err := f.keep(fmt.Sprintf("meanwhile%d", keptMeanwhile)); err != nil {
				t.Error(err)
			}
		}
		// The kill: what the data folder holds now, as a start finds it.
		dir := t.TempDir()
		for _, name := range []string{KeptFile, KeptFile + keptCompactSuffix} {
			if b, err := os.ReadFile(filepath.Join(filepath.Dir(f.path), name)); err == nil {
				if err := os.WriteFile(filepath.Join(dir, name), b, 0o600); err != nil {
					t.Error(err)
				}
			}
		}
		kills = append(kills, killed{step, dir, f.s.kept.Keys()})
	}
	for i := 0; len(seen) < 4 && i < 400; i++ {
		if err := f.keptThenWritten(fmt.Sprintf("k%03d", i)); err != nil {
			t.Fatal(err)
		}
		f.s.compaction.wg.Wait()
	}
	if len(kills) != 4 {
		t.Fatalf("the rewrite went through steps %v; want snapshot, written, tail, renamed", seen)
	}
	for _, k := range kills {
		next := NewIdempotency(NewMemory(), nil)
		path := filepath.Join(k.dir, KeptFile)
		next.KeepFile(path) // removes the copy a kill left
		keys := keptKeys(t, path)
		for _, key := range k.kept {
			if keys[key] == 0 {
				t.Errorf("killed at %q: the kept file lacks %s, kept then (it holds %v)", k.step, key, keys)
			}
		}
		if _, err := os.Stat(path + keptCompactSuffix); err == nil {
			t.Errorf("killed at %q: the copy is still there after KeepFile", k.step)
		}
	}
	keys := keptKeys(t, f.path)
	for _, key := range f.s.kept.Keys() {
		if keys[key] == 0 {
			t.Errorf("after the rewrite: the kept file lacks %s, kept (it holds %v)", key, keys)
		}
	}
	if keys["meanwhile1"] == 0 || keys["meanwhile2"] == 0 {
		t.Errorf("after the rewrite: the kept file lacks the completions kept while it ran: %v", keys)
	}
}

// The rewrite reads what is kept while the store's writer drops what the
// store took or refused for good (writeKept, which does not take fmu):
// every completion line of its copy carries the result kept. Before, it
// read the keys, then each key's completion: a key dropped between the two
// was written to the copy with an empty completion, a release (the next
// start counted it written: TestKeptFileCompacted's second completion
// restored, one run in about 100). Here a goroutine keeps 1,000 completions
// and writes them, over and over, while the test rewrites the file.
func TestKeptRewriteKeepsResults(t *testing.T) {
	f := newKeptRewrite(t)
	stop, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		b, _ := encodeResult(&reach.Result{Status: reach.StatusSuccess, Data: []byte(`"ok"`)})
		e := idempotency.KeptEntry{Args: "a", Result: b, Expires: time.Now().Add(time.Hour)}
		keys := make([]string, 1000)
		for i := range keys {
			keys[i] = fmt.Sprintf("k%03d", i)
		}
		for {
			select {
			case <-stop:
				return
			default:
			}
			for _, key := range keys {
				f.s.kept.Keep(key, e)
			}
			for _, key := range keys {
				// Never claimed here: the store refuses it for good (a
				// conflict), and writeKept drops it, as one it took.
				f.s.writeKept(context.Background(), key)
			}
		}
	}()
	defer func() { close(stop); <-done }()
	for range 100 {
		// One rewrite at a time: the one this starts may start the next
		// (compact, at its end), on a goroutine of its own.
		f.s.compaction.wg.Wait()
		f.s.fmu.Lock()
		start := !f.s.compaction.running
		if start {
			f.s.compaction.running = true
			f.s.compaction.wg.Add(1)
		}
		f.s.fmu.Unlock()
		if start {
			f.s.rewriteKept()
		}
		f.s.compaction.wg.Wait()
		fh, err := os.Open(f.path)
		if err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(fh)
		for sc.Scan() {
			var l keptLine
			if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
				t.Fatalf("a line of the kept file that cannot be read: %q", sc.Bytes())
			}
			if l.End == nil && l.Result == nil {
				fh.Close()
				t.Fatalf("the rewritten kept file holds %s as a release; every completion kept had a result: %q", l.Key, sc.Bytes())
			}
		}
		fh.Close()
	}
}

// A stop (Drain) returns once the kept file's rewrite that runs has ended:
// it went on past the stop, on a goroutine of its own, and could rename
// its copy over the kept file of the next life in the process, or write in
// a data folder the stopped life had let go of. Here the rewrite is held
// after writing its copy until the stop waits for it (or has returned,
// which it did before: then the rewrite was still running).
func TestKeptRewriteEndsBeforeDrainReturns(t *testing.T) {
	f := newKeptRewrite(t)
	defer func() { keptCompactStep = nil }()
	waiting := make(chan struct{})    // closed at the stop's "wait" step, or once Drain returned
	blocked := make(chan struct{}, 1) // the rewrite reached "written" and is held
	var once sync.Once
	release := func() { once.Do(func() { close(waiting) }) }
	keptCompactStep = func(step string) {
		switch step {
		case "written":
			select {
			case blocked <- struct{}{}:
				<-waiting
			default: // a later rewrite: not held
			}
		case "wait":
			release()
		}
	}
	for i := 0; ; i++ { // until a rewrite starts
		if err := f.keptThenWritten(fmt.Sprintf("k%03d", i)); err != nil {
			release()
			t.Fatal(err)
		}
		f.s.fmu.Lock()
		running := f.s.compaction.running
		f.s.fmu.Unlock()
		if running {
			break
		}
	}
	<-blocked            // it wrote its copy, and is held
	f.stuck.Store(false) // the store takes "stuck": Drain writes it
	left := f.s.Drain(context.Background())
	f.s.fmu.Lock()
	running := f.s.compaction.running
	f.s.fmu.Unlock()
	_, copyErr := os.Stat(f.path + keptCompactSuffix)
	release()
	if left != 0 {
		t.Errorf("Drain left %d completions", left)
	}
	if running || copyErr == nil {
		t.Errorf("Drain returned while the kept file's rewrite ran (running %v, its copy there: %v)", running, copyErr == nil)
	}
}

// A stop whose grace ends while the kept file's rewrite is stalled (a
// disk that does not answer) returns at its grace, and the rewrite, once
// its disk answers, renames no copy over the kept file: the life is over,
// and the file, which holds every line still kept, may be the next
// life's. Stalled before its last steps ("written"), the rewrite renamed
// its copy over the kept file after the stop; stalled in them ("tail",
// fmu held), the stop's wait (and SaveKept) waited for the disk past the
// grace.
func TestKeptRewriteStalledPastTheStop(t *testing.T) {
	for _, at := range []string{"written", "tail"} {
		t.Run(at, func(t *testing.T) {
			f := newKeptRewrite(t)
			defer func() { keptCompactStep = nil }()
			held := make(chan struct{}, 1) // the rewrite reached at, and is held
			disk := make(chan struct{})    // closed: the disk answers
			var once sync.Once
			answer := func() { once.Do(func() { close(disk) }) }
			defer answer()
			keptCompactStep = func(step string) {
				if step == at {
					select {
					case held <- struct{}{}:
						<-disk
					default: // a later rewrite: not held
					}
				}
			}
			for i := 0; ; i++ { // until a rewrite starts
				if err := f.keptThenWritten(fmt.Sprintf("k%03d", i)); err != nil {
					t.Fatal(err)
				}
				f.s.fmu.Lock()
				running := f.s.compaction.running
				f.s.fmu.Unlock()
				if running {
					break
				}
			}
			<-held
			before, err := os.ReadFile(f.path)
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithCancel(context.Background())
			cancel() // the grace is over
			stopped := make(chan [2]int, 1)
			go func() {
				left := f.s.Drain(ctx)
				saved, err := f.s.SaveKept(f.path)
				if err != nil {
					t.Error(err)
				}
				stopped <- [2]int{left, saved}
			}()
			select {
			case got := <-stopped:
				if got != [2]int{1, 1} {
					t.Errorf("Drain left %d, SaveKept saved %d; want stuck's completion, in the kept file", got[0], got[1])
				}
			case <-time.After(time.Minute): // a deadlock, not a slow machine: nothing but the held rewrite holds the stop
				answer()
				<-stopped
				t.Fatal("the stop waited for the stalled rewrite past its grace")
			}
			answer()
			f.s.compaction.wg.Wait()
			after, err := os.ReadFile(f.path)
			if err != nil {
				t.Fatal(err)
			}
			if string(after) != string(before) {
				t.Errorf("the rewrite changed the kept file after the stop gave it up (%d bytes, then %d)", len(before), len(after))
			}
			if _, err := os.Stat(f.path + keptCompactSuffix); err == nil {
				t.Error("the rewrite given up left its copy")
			}
			if keys := keptKeys(t, f.path); keys["stuck"] == 0 {
				t.Errorf("the kept file lacks stuck's completion: %v", keys)
			}
		})
	}
}

// A stop that finds no rewrite of the kept file running (waitRewrite)
// lets none start from then on, though a completion kept as it returns
// calls for one: a rewrite started then would run past the life, writing
// its copy in a data folder the life let go of. Before, the stop said none
// would start only after it returned (a deferred flag), and one started
// in between ran on. Here lines are kept right as the stop returns, enough
// to call for a rewrite, and a rewrite that starts is held at its first
// step.
func TestKeptRewriteNoneStartsAsTheStopReturns(t *testing.T) {
	f := newKeptRewrite(t)
	defer func() { keptCompactStep = nil }()
	release := make(chan struct{})
	var once sync.Once
	let := func() { once.Do(func() { close(release) }) }
	defer let()
	var keepErr error
	keptCompactStep = func(step string) {
		switch step {
		case "waited":
			for i := range 4 * keptCompactLines {
				if err := f.keptThenWritten(fmt.Sprintf("late%03d", i)); err != nil {
					keepErr = err
					return
				}
			}
		case "snapshot":
			<-release
		}
	}
	f.stuck.Store(false) // the store takes "stuck": Drain writes it
	f.s.Drain(context.Background())
	f.s.fmu.Lock()
	running := f.s.compaction.running
	lines := f.s.fileLines
	f.s.fmu.Unlock()
	let()
	if keepErr != nil {
		t.Fatal(keepErr)
	}
	if lines < keptCompactLines {
		t.Fatalf("the kept file has %d lines as the stop returned, too few to call for a rewrite (%d)", lines, keptCompactLines)
	}
	if running {
		t.Error("a rewrite of the kept file started as the stop returned, and ran past it")
	}
}
