package sqlite

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/agentreach/reach/internal/crashpoint"
	"github.com/agentreach/reach/internal/store"
)

// listedCrashOps is what the child of TestRequestFramesKilledAtEveryCommit
// does after Open: checkpoints written, put open again after the mark
// passed them, ended in place, and the marks moved between them. A nil
// frame moves the marks.
var listedCrashOps = []*store.Frame{
	{Request: "r1", Frame: "0000000000000001", State: "completed", Started: time.Unix(0, 1)},
	{Request: "r1", Frame: "0000000000000002", State: "executing", Started: time.Unix(0, 2)},
	{Request: "r2", Frame: "0000000000000003", State: "executing", Started: time.Unix(0, 3)},
	nil,
	{Request: "r1", Frame: "0000000000000004", State: "executing", Started: time.Unix(0, 4)},
	{Request: "r1", Frame: "0000000000000001", State: "executing", Started: time.Unix(0, 1)}, // listed, moved above the mark
	{Request: "r2", Frame: "0000000000000003", State: "completed", Started: time.Unix(0, 3), EndOnly: true},
	nil,
	{Request: "r2", Frame: "0000000000000005", State: "executing", Started: time.Unix(0, 5)},
	{Request: "r1", Frame: "0000000000000002", State: "failed", Started: time.Unix(0, 2)},
	nil,
	{Request: "r1", Frame: "0000000000000006", State: "completed", Started: time.Unix(0, 6)},
}

// listedCrashModel returns the frames the first n of listedCrashOps leave,
// each as "request/frame/state", by request, in their order.
func listedCrashModel(n int) map[string][]string {
	type fr struct {
		key, state string
		started    time.Time
	}
	byKey := map[string]*fr{}
	for _, f := range listedCrashOps[:n] {
		if f == nil {
			continue
		}
		k := f.Request + "/" + f.Frame
		if byKey[k] == nil {
			byKey[k] = &fr{key: k, started: f.Started}
		}
		byKey[k].state = f.State
	}
	out := map[string][]string{"r1": nil, "r2": nil}
	for _, req := range []string{"r1", "r2"} {
		var fs []*fr
		for k, f := range byKey {
			if strings.HasPrefix(k, req+"/") {
				fs = append(fs, f)
			}
		}
		slices.SortFunc(fs, func(a, b *fr) int { return a.started.Compare(b.started) })
		for _, f := range fs {
			out[req] = append(out[req], f.key+"/"+f.state)
		}
	}
	return out
}

// TestRequestFramesKilledAtEveryCommit: a process killed (kill -9) at each
// commit of its writer, the marks' moves and the listing with them among
// them (the point is reached with the batch's statements run, before its
// commit: the batch before it is durable, this one not), leaves every
// request's frames and the open ones as the writes that returned left
// them (or with the one in flight too), no frame at or below the mark
// unlisted, and the next life finds them before and after it moves the
// mark itself.
func TestRequestFramesKilledAtEveryCommit(t *testing.T) {
	if dir := os.Getenv("REACH_TEST_LISTED_DIR"); dir != "" { // the child, which stops at the crash point
		s, err := Open(t.Context(), dir, nil)
		if err != nil {
			t.Fatal(err)
		}
		for i, f := range listedCrashOps {
			if f == nil {
				err = s.W.Do(t.Context(), s.settleMarks())
			} else {
				err = s.PutFrame(t.Context(), f)
			}
			if err != nil {
				t.Fatal(err)
			}
			fmt.Printf("op %d done\n", i)
		}
		return
	}
	if testing.Short() {
		t.Skip("kills child processes")
	}
	for k := 1; ; k++ {
		dir := t.TempDir()
		point := fmt.Sprintf("commit#%d", k)
		cmd := exec.Command(os.Args[0], "-test.run", "^TestRequestFramesKilledAtEveryCommit$")
		cmd.Env = append(os.Environ(), "REACH_TEST_LISTED_DIR="+dir, crashpoint.Env+"="+point)
		var stdout bytes.Buffer
		cmd.Stdout = &stdout
		stderr, err := cmd.StderrPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		hit := make(chan bool, 1)
		go func() {
			sc := bufio.NewScanner(stderr)
			for sc.Scan() {
				if strings.Contains(sc.Text(), "reach: crash point "+point) {
					hit <- true
					return
				}
			}
			hit <- false
		}()
		var reached bool
		select {
		case reached = <-hit:
			cmd.Process.Kill() // SIGKILL, the child stopped at the point
		case <-time.After(2 * time.Minute):
			cmd.Process.Kill()
			cmd.Wait()
			t.Fatalf("the child never reached %s nor ended", point)
		}
		cmd.Wait()
		done := 0
		for _, line := range strings.Split(stdout.String(), "\n") {
			if n, ok := strings.CutPrefix(line, "op "); ok {
				i, _ := strconv.Atoi(strings.TrimSuffix(n, " done"))
				done = i + 1
			}
		}
		if !reached {
			if done != len(listedCrashOps) {
				t.Fatalf("the child ended at %s without reaching it, after %d of %d writes:\n%s", point, done, len(listedCrashOps), stdout.String())
			}
			if k < len(listedCrashOps) {
				t.Fatalf("the child committed %d batches, want one a write and one at Open", k-1)
			}
			t.Logf("killed at each of %d commits", k-1)
			return
		}
		checkListedAfterKill(t, dir, point, done)
	}
}

// checkListedAfterKill checks the store in dir, killed after done writes
// of listedCrashOps returned, across two lives.
func checkListedAfterKill(t *testing.T, dir, point string, done int) {
	t.Helper()
	s, err := Open(t.Context(), dir, nil)
	if err != nil {
		t.Fatalf("killed at %s: %v", point, err)
	}
	defer s.Close()
	models := []map[string][]string{listedCrashModel(done)}
	if done < len(listedCrashOps) {
		models = append(models, listedCrashModel(done+1)) // the write in flight committed
	}
	for life := range 2 {
		got := map[string][]string{}
		var open []string
		for _, req := range []string{"r1", "r2"} {
			fs, err := s.RequestFrames(t.Context(), req)
			if err != nil {
				t.Fatal(err)
			}
			got[req] = nil
			for _, f := range fs {
				got[req] = append(got[req], f.Request+"/"+f.Frame+"/"+f.State)
			}
		}
		fs, err := s.OpenFrames(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range fs {
			open = append(open, f.Request+"/"+f.Frame+"/"+f.State)
		}
		match := false
		for _, m := range models {
			var wantOpen []string
			for _, req := range []string{"r1", "r2"} {
				for _, f := range m[req] {
					if strings.HasSuffix(f, "/executing") {
						wantOpen = append(wantOpen, f)
					}
				}
			}
			slices.Sort(wantOpen)
			gotOpen := slices.Sorted(slices.Values(open))
			if slices.Equal(got["r1"], m["r1"]) && slices.Equal(got["r2"], m["r2"]) && slices.Equal(gotOpen, wantOpen) {
				match = true
			}
		}
		if !match {
			t.Fatalf("killed at %s after %d writes, life %d: frames %q, open %q; want %q", point, done, life+1, got, open, models)
		}
		var below int
		if err := s.r.QueryRow(`SELECT count(*) FROM frames WHERE NOT listed
			AND rowid <= (SELECT value FROM store_meta WHERE key = 'frames_settled')`).Scan(&below); err != nil || below != 0 {
			t.Fatalf("killed at %s: %d frames at or below the mark not listed (%v)", point, below, err)
		}
		s.Close()
		if s, err = Open(t.Context(), dir, nil); err != nil {
			t.Fatal(err)
		}
	}
}
