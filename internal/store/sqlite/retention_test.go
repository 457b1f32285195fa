package sqlite

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/agentreach/reach/internal/crashpoint"

	"github.com/agentreach/reach/internal/store"
	"github.com/agentreach/reach/internal/store/sqlcore"
	"github.com/agentreach/reach/internal/store/storetest"
)

// The retention sweep removes old finished state, in whole batches, and
// keeps what runs, waits or is dead-lettered, across a restart too.
func TestSQLiteRetention(t *testing.T) {
	dir := t.TempDir()
	s := openSQLite(t, dir, nil)
	storetest.Retention(t, s, func(t *testing.T) store.Store {
		s.Close()
		return openSQLite(t, dir, nil)
	})
}

// A sweep that removed every frame (a gateway idle for longer than its
// retention) brings the frames' mark down with them: the next checkpoint,
// left open by a crash, is found open by the next life's recovery, not
// below the mark where open frames are not looked for.
func TestSQLiteRetentionLowersTheFramesMark(t *testing.T) {
	dir := t.TempDir()
	ctx := t.Context()
	s := openSQLite(t, dir, nil)
	for i := range 3 {
		if err := s.PutFrame(ctx, &store.Frame{Request: "old", Frame: fmt.Sprintf("%016x", i+1), State: "completed", Started: time.Now()}); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.PutRequest(ctx, &store.Request{ID: "old", State: "ended", Started: time.Now()}); err != nil {
		t.Fatal(err)
	}
	s.Close()
	s = openSQLite(t, dir, nil) // the mark moves to the last frame
	got, err := s.SweepFinished(ctx, time.Now().Add(time.Second), 10)
	if err != nil || got.Requests != 1 || got.Frames != 3 {
		t.Fatalf("SweepFinished = %+v, %v; want the request and its 3 frames", got, err)
	}
	if err := s.PutFrame(ctx, &store.Frame{Request: "next", Frame: "0000000000000001", State: "executing", Started: time.Now()}); err != nil {
		t.Fatal(err)
	}
	s2 := openSQLite(t, dir, nil) // a crash: s is not closed
	open, err := s2.OpenFrames(ctx)
	if err != nil || len(open) != 1 || open[0].Request != "next" {
		t.Fatalf("OpenFrames after the sweep and a crash = %d frames, %v; want the next one", len(open), err)
	}
}

// A sweep killed (kill -9) in the middle of a batch, its frames deleted and
// its requests not, leaves the batches before it removed and every other
// request whole: none without its frames, no frames without their request.
func TestSQLiteRetentionKilledMidBatch(t *testing.T) {
	if dir := os.Getenv("REACH_TEST_RETENTION_DIR"); dir != "" { // the child, which stops at the crash point
		s, err := Open(t.Context(), dir, nil)
		if err != nil {
			t.Fatal(err)
		}
		cut, err := time.Parse(time.RFC3339Nano, os.Getenv("REACH_TEST_RETENTION_CUT"))
		if err != nil {
			t.Fatal(err)
		}
		for {
			got, err := s.SweepFinished(t.Context(), cut, 2)
			if err != nil || got.Rows() == 0 {
				t.Fatalf("the sweep ended without reaching its crash point: %+v, %v", got, err)
			}
		}
	}
	dir := t.TempDir()
	s := openSQLite(t, dir, nil)
	cut := storetest.RetentionSetup(t, s)
	s.Close()
	cmd := exec.Command(os.Args[0], "-test.run", "^TestSQLiteRetentionKilledMidBatch$")
	cmd.Env = append(os.Environ(), "REACH_TEST_RETENTION_DIR="+dir, "REACH_TEST_RETENTION_CUT="+cut.Format(time.RFC3339Nano),
		crashpoint.Env+"=retention#3")
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Wait()
	hit := make(chan bool, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			if strings.Contains(sc.Text(), "reach: crash point retention#3") {
				hit <- true
				return
			}
		}
		hit <- false
	}()
	select {
	case ok := <-hit:
		cmd.Process.Kill() // SIGKILL, the child stopped at the point
		if !ok {
			t.Fatal("the child ended without reaching the crash point")
		}
	case <-time.After(time.Minute):
		cmd.Process.Kill()
		t.Fatal("the child never reached the crash point")
	}
	cmd.Wait()
	s2 := openSQLite(t, dir, nil)
	ctx := t.Context()
	gone := 0
	for _, id := range []string{"old-ended-0", "old-ended-1", "old-ended-2", "old-ended-3", "old-ended-4", "old-stopped", "old-interrupted"} {
		_, gerr := s2.GetRequest(ctx, id)
		fs, err := s2.RequestFrames(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		switch {
		case errors.Is(gerr, store.ErrNotFound) && len(fs) == 0:
			gone++
		case gerr == nil && len(fs) > 0:
		default:
			t.Errorf("request %s after the kill: %v, with %d frames: half removed", id, gerr, len(fs))
		}
	}
	if gone != 4 { // two batches of 2 committed, the third killed
		t.Errorf("%d requests removed after the kill in the third batch, want 4", gone)
	}
	// The next sweep finishes the work.
	for {
		got, err := s2.SweepFinished(ctx, cut, 2)
		if err != nil {
			t.Fatal(err)
		}
		if got.Rows() == 0 {
			break
		}
	}
	storetest.CheckRetained(t, s2)
}

// A store of schema 12 (before the index of the tasks by their request)
// opens with its rows, and its first sweep keeps the ended request that a
// task not yet final names, and removes the one a final task names.
func TestSQLiteMigratesTasksRequestIndex(t *testing.T) {
	dir := t.TempDir()
	w := oldDatabase(t, dir, 12)
	old := time.Now().Add(-time.Hour).UnixNano()
	if _, err := w.Exec(`INSERT INTO requests (id, state, started, ended, updated) VALUES
		('of-working', 'ended', ?1, ?1, ?1), ('of-done', 'ended', ?1, ?1, ?1)`, old); err != nil {
		t.Fatal(err)
	}
	if _, err := w.Exec(`INSERT INTO tasks (agent, id, request, state, final, data, created, updated) VALUES
		('planner', 't-working', 'of-working', 'TASK_STATE_WORKING', 0, '{}', ?1, ?1),
		('planner', 't-done', 'of-done', 'TASK_STATE_COMPLETED', 1, '{}', ?1, ?1)`, old); err != nil {
		t.Fatal(err)
	}
	w.Close()

	s := openSQLite(t, dir, nil)
	var n int
	if err := s.r.QueryRow(`SELECT count(*) FROM sqlite_master WHERE type = 'index' AND name = 'tasks_request'`).Scan(&n); err != nil || n != 1 {
		t.Fatalf("the index tasks_request after the migration: %d, %v; want it", n, err)
	}
	got, err := s.SweepFinished(t.Context(), time.Now(), 10)
	if err != nil {
		t.Fatal(err)
	}
	if got.Requests != 1 || got.Tasks != 1 {
		t.Errorf("the sweep removed %+v; want the request and the task that are done", got)
	}
	if _, err := s.GetRequest(t.Context(), "of-working"); err != nil {
		t.Errorf("GetRequest(of-working) after the sweep: %v; want it kept (a task not final names it)", err)
	}
	if _, err := s.GetRequest(t.Context(), "of-done"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("GetRequest(of-done) after the sweep: %v; want it removed", err)
	}
}

// TestSQLiteRetentionUsesItsIndexes: the sweep's selection of requests
// finds the ended ones from the oldest by requests_state, with no sort (not
// reading the stopped and interrupted requests, which are never removed,
// for each batch), and checks each for a task not final that names it by
// tasks_request, rather than reading the whole table of tasks for each
// request.
func TestSQLiteRetentionUsesItsIndexes(t *testing.T) {
	s := openSQLite(t, t.TempDir(), nil)
	plan := queryPlan(t, s.wc, statementSQL[sqlcore.StRetainRequests], int64(1), int64(64))
	for _, want := range []string{"requests_state (state=? AND started<?)", "USING INDEX tasks_request"} {
		if !strings.Contains(plan, want) {
			t.Errorf("the plan of the sweep's requests is %q, want it to use %s", plan, want)
		}
	}
	if strings.Contains(plan, "TEMP B-TREE") {
		t.Errorf("the plan of the sweep's requests is %q, want no sort", plan)
	}
}
