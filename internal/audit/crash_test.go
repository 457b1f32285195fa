package audit_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/agentreach/reach/internal/audit"
	"github.com/agentreach/reach/internal/store/sqlite"
)

// The child process of TestCrash reads these.
const (
	crashDirEnv  = "REACH_AUDIT_CRASH_DIR"
	crashSyncEnv = "REACH_AUDIT_CRASH_SYNC"
	crashIterEnv = "REACH_AUDIT_CRASH_ITER"
)

// TestCrashChild is not a test on its own: TestCrash runs the test binary
// again with it selected. It appends events from several goroutines as fast
// as it can and prints "ack SEQ MESSAGE" for each Append that returned,
// until it is killed.
func TestCrashChild(t *testing.T) {
	dir := os.Getenv(crashDirEnv)
	if dir == "" {
		t.Skip("the child process of TestCrash")
	}
	ctx := context.Background()
	st, err := sqlite.Open(ctx, dir, &sqlite.Options{Synchronous: os.Getenv(crashSyncEnv)})
	if err != nil {
		fmt.Fprintln(os.Stderr, "child:", err)
		os.Exit(2)
	}
	log, err := audit.New(ctx, st, &audit.Options{CheckpointEvery: 64})
	if err != nil {
		fmt.Fprintln(os.Stderr, "child:", err)
		os.Exit(2)
	}
	var mu sync.Mutex
	for w := range 8 {
		go func() {
			for n := 0; ; n++ {
				e := testEvent(n)
				e.Message = fmt.Sprintf("iter-%s-worker-%d-n-%d", os.Getenv(crashIterEnv), w, n)
				seq, err := log.Append(ctx, e)
				if err != nil {
					fmt.Fprintln(os.Stderr, "child: append:", err)
					os.Exit(2)
				}
				mu.Lock()
				// One write per line: a line in the pipe was acknowledged.
				os.Stdout.WriteString("ack " + strconv.FormatInt(seq, 10) + " " + e.Message + "\n")
				mu.Unlock()
			}
		}()
	}
	select {}
}

// TestCrash kills (SIGKILL) a process that appends to the audit log at a
// random moment, reopens the log, and checks that every append the
// process acknowledged is there, unchanged, and that the chain verifies;
// several times over the same log, with synchronous NORMAL and FULL.
func TestCrash(t *testing.T) {
	if testing.Short() {
		t.Skip("starts child processes")
	}
	const seed = 20251130
	rng := rand.New(rand.NewPCG(seed, 0))
	t.Logf("seed %d", seed)
	dir := t.TempDir()
	acked := map[int64]string{} // every acknowledged event, across iterations
	for iter := range 6 {
		syncMode := "NORMAL"
		if iter%3 == 2 {
			syncMode = "FULL"
		}
		killAfter := 1 + rng.IntN(4000)
		cmd := exec.Command(os.Args[0], "-test.run=^TestCrashChild$", "-test.count=1")
		cmd.Env = append(os.Environ(), crashDirEnv+"="+dir, crashSyncEnv+"="+syncMode, crashIterEnv+"="+strconv.Itoa(iter))
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		out, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		n, killed := 0, false
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			f := strings.Fields(sc.Text())
			if len(f) != 3 || f[0] != "ack" {
				continue // the test framework's own output
			}
			seq, err := strconv.ParseInt(f[1], 10, 64)
			if err != nil {
				t.Fatalf("child printed %q", sc.Text())
			}
			if old, dup := acked[seq]; dup {
				t.Fatalf("seq %d acknowledged twice: %s and %s", seq, old, f[2])
			}
			acked[seq] = f[2]
			if n++; n == killAfter {
				if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
					t.Fatal(err)
				}
				killed = true
			}
		}
		err = cmd.Wait()
		if !killed {
			t.Fatalf("iteration %d: the child stopped after %d acks, before the kill: %v\n%s", iter, n, err, stderr.String())
		}
		if ee, ok := errors.AsType[*exec.ExitError](err); !ok || ee.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
			t.Fatalf("iteration %d: child ended with %v, want killed\n%s", iter, err, stderr.String())
		}
		checkAcked(t, dir, acked, iter, syncMode, n)
	}
}

// checkAcked reopens the log in dir and checks it holds every event of acked.
func checkAcked(t *testing.T, dir string, acked map[int64]string, iter int, syncMode string, n int) {
	t.Helper()
	ctx := context.Background()
	st, err := sqlite.Open(ctx, dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	rep, err := audit.Verify(ctx, st)
	if err != nil {
		t.Fatalf("iteration %d (%s): after the kill: %v", iter, syncMode, err)
	}
	found := 0
	for after := int64(0); ; {
		page, err := st.ScanAudit(ctx, after, 10000)
		if err != nil {
			t.Fatal(err)
		}
		if len(page) == 0 {
			break
		}
		for _, r := range page {
			var e struct{ Message string }
			if err := json.Unmarshal(r.Data, &e); err != nil {
				t.Fatal(err)
			}
			if want, ok := acked[r.Seq]; ok {
				if e.Message != want {
					t.Fatalf("seq %d holds %q, but %q was acknowledged for it", r.Seq, e.Message, want)
				}
				found++
			}
		}
		after = page[len(page)-1].Seq
	}
	if found != len(acked) {
		for seq := range acked {
			if seq > rep.Events {
				t.Errorf("acknowledged seq %d is lost: the log ends at %d", seq, rep.Events)
			}
		}
		t.Fatalf("iteration %d (%s): %d of %d acknowledged events found", iter, syncMode, found, len(acked))
	}
	t.Logf("iteration %d (%s): killed after %d acks; %d events in the log, all %d acknowledged ones present, chain ok",
		iter, syncMode, n, rep.Events, len(acked))
}
