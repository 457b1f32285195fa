package policy

import (
	"context"
	"errors"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/agentreach/reach"
)

// write writes a policy file and moves its modification time forward, so
// every write is a change whatever the file system's clock resolution.
func write(t *testing.T, path, text string, n int) {
	t.Helper()
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	mt := time.Date(2030, 1, 1, 0, 0, n, 0, time.UTC)
	if err := os.Chtimes(path, mt, mt); err != nil {
		t.Fatal(err)
	}
}

const (
	permitReads  = `@id("reads") permit (principal, action, resource) when { resource.access == "read" };`
	permitNone   = `@id("none") forbid (principal, action, resource);`
	brokenPolicy = `permit (principal, action, resource) when { context.x ==`
)

func decision(eng *Engine) reach.Decision {
	return eng.Evaluate(&Input{Principal: manager, Tool: "search"}).Decision
}

// A valid change applies within two intervals; an invalid one keeps the
// previous policies and is reported once; fixing it applies again.
func TestWatcherReload(t *testing.T) {
	for _, folder := range []bool{false, true} {
		name := "file"
		if folder {
			name = "folder"
		}
		t.Run(name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				dir := t.TempDir()
				file := filepath.Join(dir, "main.cedar")
				write(t, file, permitReads, 1)
				watched := file
				if folder {
					watched = dir
				}
				var errs []error
				reloads := 0
				eng := New(&Options{Policies: mustParse(t)})
				w, err := NewWatcher(eng, watched, &WatchOptions{
					OnError:  func(err error) { errs = append(errs, err) },
					OnReload: func(*Set) { reloads++ },
					Logger:   slog.New(slog.DiscardHandler),
				})
				if err != nil {
					t.Fatal(err)
				}
				if decision(eng) != reach.Permit {
					t.Fatal("initial policies not in force")
				}
				ctx, cancel := context.WithCancel(t.Context())
				defer cancel()
				go w.Run(ctx)

				step := func(text string, n int) {
					write(t, file, text, n)
					time.Sleep(2 * time.Second) // the bound of P5, on the bubble's clock
					synctest.Wait()
				}
				step(permitNone, 2)
				if decision(eng) != reach.Deny || reloads != 1 {
					t.Fatalf("valid change: decision %v, reloads %d", decision(eng), reloads)
				}
				step(brokenPolicy, 3)
				if decision(eng) != reach.Deny {
					t.Error("a broken file replaced the policies in force")
				}
				time.Sleep(5 * time.Second)
				synctest.Wait()
				if len(errs) != 1 || !strings.Contains(errs[0].Error(), "previous ones stay in force") {
					t.Fatalf("errors %v, want one report", errs)
				}
				step(permitReads, 4)
				if decision(eng) != reach.Permit || reloads != 2 {
					t.Fatalf("fixed: decision %v, reloads %d", decision(eng), reloads)
				}
				// Touched without a change: nothing reloads.
				step(permitReads, 5)
				if reloads != 2 {
					t.Errorf("a touch reloaded: %d", reloads)
				}
				// Removed: reported, the policies in force stay.
				if err := os.Remove(file); err != nil {
					t.Fatal(err)
				}
				time.Sleep(2 * time.Second)
				synctest.Wait()
				if decision(eng) != reach.Permit || len(errs) != 2 {
					t.Errorf("removed: decision %v, errors %v", decision(eng), errs)
				}
			})
		})
	}
}

func TestWatcherCheck(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "p.cedar")
	write(t, file, brokenPolicy, 1)
	eng := New(nil)
	if _, err := NewWatcher(eng, file, nil); err == nil {
		t.Fatal("NewWatcher accepted a broken file")
	}
	write(t, file, permitNone, 2)
	w, err := NewWatcher(eng, file, &WatchOptions{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	write(t, file, permitReads, 3)
	if err := w.Check(); err != nil || decision(eng) != reach.Permit {
		t.Errorf("Check: %v, decision %v", err, decision(eng))
	}
	write(t, file, brokenPolicy, 4)
	if err := w.Check(); err == nil || decision(eng) != reach.Permit {
		t.Errorf("Check of a broken file: %v, decision %v", err, decision(eng))
	}
}

// TestWatcherWarnsAtStart: a policy that can never apply is logged when
// the policies are first loaded, as on a reload; it was dropped without a
// word then (a forbid without the Reach namespace, and the calls it names
// ran).
func TestWatcherWarnsAtStart(t *testing.T) {
	file := filepath.Join(t.TempDir(), "p.cedar")
	write(t, file, permitReads+"\nforbid (principal, action == Action::\"call\", resource);", 1)
	var log strings.Builder
	if _, err := NewWatcher(New(nil), file, &WatchOptions{Logger: slog.New(slog.NewTextHandler(&log, nil))}); err != nil {
		t.Fatal(err)
	}
	if want := file + ":2 can never apply: its action is Action::"; !strings.Contains(log.String(), "level=WARN") || !strings.Contains(log.String(), want) {
		t.Errorf("log at start:\n%s\nwant a warning %q", log.String(), want)
	}
}

// TestParseErrorNamesFile: a policy file Cedar cannot parse is named, with
// the line and column, in the error at startup (NewWatcher, as reach serve
// loads its policy folder) and in the reload's report: Cedar's own error
// said "<input>:3:34", and in a folder of files nobody could tell which.
func TestParseErrorNamesFile(t *testing.T) {
	dir := t.TempDir()
	good, bad := filepath.Join(dir, "a.cedar"), filepath.Join(dir, "b.cedar")
	write(t, good, permitReads, 1)
	write(t, bad, "permit (principal, action, resource);\n\npermit (principal, action resource);\n", 1)
	_, err := NewWatcher(New(nil), dir, &WatchOptions{Logger: slog.New(slog.DiscardHandler)})
	if err == nil || !strings.HasPrefix(err.Error(), bad+":3:") || strings.Contains(err.Error(), "<input>") {
		t.Fatalf("at startup: %v, want it to begin %s:3: and not say <input>", err, bad)
	}

	synctest.Test(t, func(t *testing.T) {
		write(t, bad, permitNone, 2)
		var errs []error
		w, err := NewWatcher(New(nil), dir, &WatchOptions{OnError: func(err error) { errs = append(errs, err) }, Logger: slog.New(slog.DiscardHandler)})
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(t.Context())
		defer cancel()
		go w.Run(ctx)
		write(t, bad, "permit (principal, action, resource);\n"+brokenPolicy, 3)
		time.Sleep(2 * time.Second)
		synctest.Wait()
		if len(errs) != 1 || !strings.Contains(errs[0].Error(), bad+":2:") || strings.Contains(errs[0].Error(), "<input>") {
			t.Errorf("at reload: %v, want one error naming %s:2:, not <input>", errs, bad)
		}
	})
}

// TestWatcherReadsAFileWrittenInPlaceWhole: an editor that saves a policy
// file in place (truncate, then write) leaves it half written for a moment;
// a look then puts nothing of it in force: the change applies once the
// file has looked the same on two looks, whole. Before, the look read the
// half (its permit, not the forbid further down) and put it in force until
// the next look, or, the file just truncated, no policy at all.
func TestWatcherReadsAFileWrittenInPlaceWhole(t *testing.T) {
	const (
		permitAll = `@id("all") permit (principal, action, resource);`
		forbidAll = `@id("none") forbid (principal, action, resource);`
	)
	for _, c := range []struct{ name, half string }{
		{"half written", "// saved\n" + permitAll + "\n"},
		{"truncated", ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				file := filepath.Join(t.TempDir(), "p.cedar")
				write(t, file, permitAll+"\n"+forbidAll+"\n", 1)
				eng := New(nil)
				reloads := 0
				w, err := NewWatcher(eng, file, &WatchOptions{OnReload: func(*Set) { reloads++ }, Logger: slog.New(slog.DiscardHandler)})
				if err != nil {
					t.Fatal(err)
				}
				ctx, cancel := context.WithCancel(t.Context())
				defer cancel()
				go w.Run(ctx)
				time.Sleep(500 * time.Millisecond)
				write(t, file, c.half, 2) // the save under way: a look comes
				time.Sleep(900 * time.Millisecond)
				synctest.Wait()
				if d, n := eng.Evaluate(&Input{Principal: manager, Tool: "search"}).Decision, eng.Policies().Len(); d != reach.Deny || n != 2 {
					t.Fatalf("a look while the file was %s: decision %v, %d policies in force; want deny, the 2 before", c.name, d, n)
				}
				write(t, file, "// saved\n"+permitAll+"\n"+forbidAll+"\n", 3) // the save done
				time.Sleep(2 * time.Second)
				synctest.Wait()
				if d, n := eng.Evaluate(&Input{Principal: manager, Tool: "search"}).Decision, eng.Policies().Len(); d != reach.Deny || n != 2 || reloads != 1 {
					t.Fatalf("two intervals after the save: decision %v, %d policies, %d reloads; want deny, 2, 1", d, n, reloads)
				}
			})
		})
	}
}

// TestWatcherAppliesAFileRewrittenOnEveryLook: a file rewritten before
// every look (a tool that renders it each second, in place) with the same
// text still has its change put in force: two looks agree on what the file
// says, not on its modification time. Before, the change was never read
// while the rewrites went on, and SIGHUP was the only way in.
func TestWatcherAppliesAFileRewrittenOnEveryLook(t *testing.T) {
	const (
		permitAll = `@id("all") permit (principal, action, resource);`
		forbidAll = `@id("none") forbid (principal, action, resource);`
	)
	synctest.Test(t, func(t *testing.T) {
		file := filepath.Join(t.TempDir(), "p.cedar")
		write(t, file, permitAll+"\n", 1)
		eng := New(nil)
		w, err := NewWatcher(eng, file, &WatchOptions{Logger: slog.New(slog.DiscardHandler)})
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(t.Context())
		defer cancel()
		go w.Run(ctx)
		time.Sleep(500 * time.Millisecond)
		for n := 2; n < 8; n++ { // between every two looks
			write(t, file, permitAll+"\n"+forbidAll+"\n", n)
			time.Sleep(time.Second)
		}
		synctest.Wait()
		if d, n := eng.Evaluate(&Input{Principal: manager, Tool: "search"}).Decision, eng.Policies().Len(); d != reach.Deny || n != 2 {
			t.Fatalf("after 6 looks at a file rewritten, the same, before each: decision %v, %d policies in force; want deny, 2", d, n)
		}
	})
}

// A file rewritten with the same contents every look (a sync job copying
// it, a touch) never looked the same twice by its time: the watcher waited
// for it to settle, and every other change, a forbid added beside it or
// written into it by the job, stayed out of force for as long as the job
// ran. The contents settle: the change applies within two intervals.
func TestWatcherAppliesBesideAFileRewrittenEveryLook(t *testing.T) {
	const (
		permitAll = `@id("all") permit (principal, action, resource);`
		forbidAll = `@id("none") forbid (principal, action, resource);`
	)
	for _, c := range []struct {
		name   string
		folder bool
	}{{"forbid in another file", true}, {"forbid in the file", false}} {
		t.Run(c.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				dir := t.TempDir()
				synced := filepath.Join(dir, "a.cedar")
				write(t, synced, permitAll, 1)
				watched := synced
				if c.folder {
					watched = dir
				}
				eng := New(nil)
				w, err := NewWatcher(eng, watched, &WatchOptions{Logger: slog.New(slog.DiscardHandler)})
				if err != nil {
					t.Fatal(err)
				}
				ctx, cancel := context.WithCancel(t.Context())
				defer cancel()
				go w.Run(ctx)
				text := make(chan string, 1) // a new source for the job
				done := make(chan struct{})
				go func() { // the sync job: copies its source every 400 ms
					defer close(done)
					// Off the looks' beat (a look is each second): a write in
					// place at the very instant of a look may be read half
					// done, a change that must wait for the next look.
					time.Sleep(150 * time.Millisecond)
					src := permitAll
					for n := 2; ; n++ {
						select {
						case <-ctx.Done():
							return
						case <-time.After(400 * time.Millisecond):
						}
						select {
						case src = <-text:
						default:
						}
						write(t, synced, src, n)
					}
				}()
				time.Sleep(1500 * time.Millisecond)
				if c.folder {
					write(t, filepath.Join(dir, "b.cedar"), forbidAll, 1000)
				} else {
					text <- permitAll + "\n" + forbidAll + "\n"
				}
				time.Sleep(5 * time.Second)
				synctest.Wait()
				d, n := decision(eng), eng.Policies().Len()
				cancel()
				<-done
				if d != reach.Deny || n != 2 {
					t.Fatalf("5 s after the forbid was written, beside a file rewritten every 400 ms: decision %v, %d policies in force; want deny, 2", d, n)
				}
			})
		})
	}
}

// A *.cedar file of the folder that is a symbolic link (a forbid linked in
// from a shared folder, a ConfigMap's files) was left out without a word,
// and what it forbade ran; it is read as its target, and its changes
// reload. A link to nothing does not load (the policies in force stay).
func TestWatcherReadsLinkedFiles(t *testing.T) {
	const (
		permitAll = `@id("all") permit (principal, action, resource);`
		forbidAll = `@id("none") forbid (principal, action, resource);`
	)
	dir, shared := t.TempDir(), t.TempDir()
	write(t, filepath.Join(dir, "a.cedar"), permitAll, 1)
	target := filepath.Join(shared, "forbid.cedar")
	write(t, target, "// none yet\n", 1)
	if err := os.Symlink(target, filepath.Join(dir, "forbid.cedar")); err != nil {
		t.Fatal(err)
	}
	eng := New(nil)
	w, err := NewWatcher(eng, dir, &WatchOptions{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	if d := decision(eng); d != reach.Permit {
		t.Fatalf("decision %v before the linked file forbids; want permit", d)
	}
	write(t, target, forbidAll, 2)
	if err := w.Check(); err != nil {
		t.Fatal(err)
	}
	if d, n := decision(eng), eng.Policies().Len(); d != reach.Deny || n != 2 {
		t.Fatalf("the linked file forbids: decision %v, %d policies in force; want deny, 2", d, n)
	}
	if err := os.Symlink(filepath.Join(shared, "gone.cedar"), filepath.Join(dir, "gone.cedar")); err != nil {
		t.Fatal(err)
	}
	if err := w.Check(); err == nil {
		t.Fatal("a link to nothing loaded; want an error")
	}
	if _, err := Load(dir); err == nil {
		t.Fatal("Load read a folder with a link to nothing; want an error")
	}
	if d, n := decision(eng), eng.Policies().Len(); d != reach.Deny || n != 2 {
		t.Fatalf("after a link to nothing: decision %v, %d policies in force; want deny, the 2 before", d, n)
	}
}

// A *.cedar link to nothing in the policy folder, or a policy path that is
// one, fails to load naming the link and its target and saying what to do
// (remove the link or point it at a policy file), whether read (Load) or
// checked for changes (the watcher's stat): before, the error was the bare
// "stat NAME: no such file or directory".
func TestDanglingLinkErrorSaysWhatToDo(t *testing.T) {
	dir, shared := t.TempDir(), t.TempDir()
	write(t, filepath.Join(dir, "a.cedar"), `@id("all") permit (principal, action, resource);`, 1)
	eng := New(nil)
	w, err := NewWatcher(eng, dir, &WatchOptions{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	link, target := filepath.Join(dir, "gone.cedar"), filepath.Join(shared, "gone.cedar")
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
	single := filepath.Join(shared, "policy.cedar") // the policy path itself a link to nothing
	if err := os.Symlink(filepath.Join(shared, "moved.cedar"), single); err != nil {
		t.Fatal(err)
	}
	_, loadErr := Load(dir)
	_, singleErr := Load(single)
	for name, c := range map[string]struct {
		err          error
		link, target string
	}{
		"Load":             {loadErr, link, target},
		"the watcher":      {w.Check(), link, target},
		"a path of a link": {singleErr, single, filepath.Join(shared, "moved.cedar")},
	} {
		if c.err == nil {
			t.Errorf("%s: a link to nothing loaded; want an error", name)
			continue
		}
		msg := c.err.Error()
		if !strings.Contains(msg, c.link+" is a symbolic link to "+c.target+", which does not exist") || !strings.Contains(msg, "remove the link, or point it at a policy file") ||
			!errors.Is(c.err, fs.ErrNotExist) {
			t.Errorf("%s: %q; want it to name the link %s, its target %s, and say to remove the link or point it at a policy file", name, msg, c.link, c.target)
		}
	}
}
