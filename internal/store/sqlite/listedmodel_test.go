package sqlite

import (
	"fmt"
	"math/rand/v2"
	"regexp"
	"slices"
	"testing"
	"time"

	"github.com/agentreach/reach/internal/store"
)

// modelFrame is what a test expects of a stored frame.
type modelFrame struct {
	request, frame, state string
	started, first        int64 // first: the order it was first written in
}

// TestRequestFramesAgreeWithAModel: through a random run of checkpoints
// written open, put open again (moved to the end of the table, listed or
// not), ended in place (EndOnly) or written whole, the marks moved, the
// retention sweep (which may remove the newest frames, bringing the mark
// down) and restarts, every request's frames (RequestFrames) and the open
// frames (OpenFrames) are those a plain map of the frames written holds:
// each once, in their order, whether the frames are listed, above the mark
// or moved above it since they were listed. Without the frames above the
// mark read, with a frame put again out of its place among those started
// at the same instant, a frame listed twice (listed and above the mark),
// or a mark moved past frames it did not list, the lists differ.
func TestRequestFramesAgreeWithAModel(t *testing.T) {
	for seed := range uint64(4) {
		t.Run(fmt.Sprint(seed), func(t *testing.T) { requestFramesModel(t, seed) })
	}
}

func requestFramesModel(t *testing.T, seed uint64) {
	ctx := t.Context()
	dir := t.TempDir()
	rnd := rand.New(rand.NewPCG(seed, 29))
	s := openSQLite(t, dir, nil)
	frames := map[[2]string]*modelFrame{} // by request and frame
	var live []string                     // requests not swept
	ended := map[string]bool{}
	var next int64
	newRequest := func() string {
		next++
		id := fmt.Sprintf("r%d", next)
		if err := s.PutRequest(ctx, &store.Request{ID: id, State: "running", Started: time.Unix(0, next)}); err != nil {
			t.Fatal(err)
		}
		live = append(live, id)
		return id
	}
	put := func(f *modelFrame, endOnly bool) {
		t.Helper()
		sf := &store.Frame{Request: f.request, Frame: f.frame, Kind: "tool", Name: "pay", State: f.state,
			Started: time.Unix(0, f.started), EndOnly: endOnly}
		if err := s.PutFrame(ctx, sf); err != nil {
			t.Fatal(err)
		}
	}
	check := func(when string) {
		t.Helper()
		var wantOpen []string
		for _, req := range append(slices.Clone(live), "nobody") {
			var want []*modelFrame
			for _, f := range frames {
				if f.request == req {
					want = append(want, f)
				}
			}
			slices.SortFunc(want, byStart)
			got, err := s.RequestFrames(ctx, req)
			if err != nil {
				t.Fatal(err)
			}
			var g, w []string
			for _, f := range got {
				g = append(g, f.Request+"/"+f.Frame+"/"+f.State)
			}
			for _, f := range want {
				w = append(w, f.request+"/"+f.frame+"/"+f.state)
			}
			if !slices.Equal(g, w) {
				t.Fatalf("%s: RequestFrames(%s) = %q, want %q", when, req, g, w)
			}
		}
		all := slices.Collect(func(yield func(*modelFrame) bool) {
			for _, f := range frames {
				if !store.FrameDone(f.state) && !yield(f) {
					return
				}
			}
		})
		slices.SortFunc(all, byStart)
		for _, f := range all {
			wantOpen = append(wantOpen, f.request+"/"+f.frame)
		}
		open, err := s.OpenFrames(ctx)
		if err != nil {
			t.Fatal(err)
		}
		var gotOpen []string
		for _, f := range open {
			gotOpen = append(gotOpen, f.Request+"/"+f.Frame)
		}
		if !slices.Equal(gotOpen, wantOpen) {
			t.Fatalf("%s: OpenFrames = %q, want %q", when, gotOpen, wantOpen)
		}
	}
	for range 3 {
		newRequest()
	}
	for step := range 500 {
		var when string
		switch op := rnd.IntN(100); {
		case op < 40 && len(live) > 0: // a new checkpoint, open or final
			req := live[rnd.IntN(len(live))]
			if ended[req] {
				req = newRequest()
			}
			next++
			f := &modelFrame{request: req, frame: fmt.Sprintf("%016x", next), state: "executing", started: next / 3, first: next}
			if rnd.IntN(4) == 0 {
				f.state = "completed"
			}
			frames[[2]string{f.request, f.frame}] = f
			put(f, false)
			when = "a new frame " + f.frame
		case op < 70 && len(frames) > 0: // a frame written again: ended, or put open again
			keys := slices.Collect(func(yield func([2]string) bool) {
				for k := range frames {
					if !yield(k) {
						return
					}
				}
			})
			slices.SortFunc(keys, func(a, b [2]string) int { return cmpKey(a, b) })
			f := frames[keys[rnd.IntN(len(keys))]]
			switch rnd.IntN(3) {
			case 0:
				f.state = "executing" // moved above the mark
				put(f, false)
			case 1:
				f.state = "completed"
				put(f, true) // in place, if it was open
			default:
				f.state = "failed"
				put(f, false)
			}
			when = "frame " + f.frame + " put " + f.state
		case op < 80:
			if err := s.W.Do(ctx, s.settleMarks()); err != nil {
				t.Fatal(err)
			}
			when = "the marks moved"
		case op < 83 && len(live) > 0: // a request ends, the sweep removes it
			req := live[rnd.IntN(len(live))]
			if err := s.PutRequest(ctx, &store.Request{ID: req, State: "ended", Started: time.Unix(0, 1), Ended: time.Unix(0, 2)}); err != nil {
				t.Fatal(err)
			}
			ended[req] = true
			got, err := s.SweepFinished(ctx, time.Now().Add(time.Hour), 1000)
			if err != nil || got.Requests != 1 {
				t.Fatalf("SweepFinished = %+v, %v; want request %s removed", got, err, req)
			}
			var n int64
			for k := range frames {
				if k[0] == req {
					delete(frames, k)
					n++
				}
			}
			if got.Frames != n {
				t.Fatalf("SweepFinished removed %d frames of %s, want %d", got.Frames, req, n)
			}
			live = slices.DeleteFunc(live, func(r string) bool { return r == req })
			when = "request " + req + " swept"
		case op < 88:
			s.Close()
			s = openSQLite(t, dir, nil)
			when = "a restart"
		default:
			if len(live) < 8 {
				newRequest()
			}
			continue
		}
		check(fmt.Sprintf("step %d (%s)", step, when))
	}
	var unlisted, above int64
	if err := s.r.QueryRow(`SELECT count(*) FROM frames WHERE listed AND rowid > (SELECT value FROM store_meta WHERE key = 'frames_settled')`).Scan(&above); err != nil {
		t.Fatal(err)
	}
	if err := s.W.Do(ctx, s.settleMarks()); err != nil {
		t.Fatal(err)
	}
	if err := s.r.QueryRow(`SELECT count(*) FROM frames WHERE NOT listed`).Scan(&unlisted); err != nil || unlisted != 0 {
		t.Fatalf("%d frames not listed (%v) after the marks moved, want none", unlisted, err)
	}
	check("the end")
	t.Logf("%d frames, %d listed and moved above the mark before the last move", len(frames), above)
}

// byStart orders frames as RequestFrames does: by their start, and those
// started at the same instant (here one in three) as they were first written,
// a frame put again keeping its place.
func byStart(a, b *modelFrame) int {
	if a.started != b.started {
		return int(a.started - b.started)
	}
	return int(a.first - b.first)
}

func cmpKey(a, b [2]string) int {
	if a[0] != b[0] {
		if a[0] < b[0] {
			return -1
		}
		return 1
	}
	if a[1] < b[1] {
		return -1
	}
	if a[1] > b[1] {
		return 1
	}
	return 0
}

// TestNoFrameStatementScansTheFrames: no statement of the writer that
// reads or writes frames (a checkpoint put, ended or updated, the marks
// moved and the frames listed, the retention sweep's), nor the reads of a
// request's frames and of the open ones (the call path, recovery, undo,
// history), scans the whole table of frames: each finds its rows by an
// index, a rowid or the rowids above the mark. Asked of a store holding
// frames listed and not, so that the planner sees both.
func TestNoFrameStatementScansTheFrames(t *testing.T) {
	ctx := t.Context()
	s := openSQLite(t, t.TempDir(), nil)
	for i := range 200 {
		f := &store.Frame{Request: fmt.Sprintf("r%d", i%7), Frame: fmt.Sprintf("%016x", i+1), State: "completed", Started: time.Unix(0, int64(i+1))}
		if err := s.PutFrame(ctx, f); err != nil {
			t.Fatal(err)
		}
		if i == 150 {
			if err := s.W.Do(ctx, s.settleMarks()); err != nil {
				t.Fatal(err)
			}
		}
	}
	scan := regexp.MustCompile(`SCAN (frames|f)\b($|[^_])`)
	asked := 0
	for id, q := range statementSQL {
		if !regexp.MustCompile(`\bframes\b`).MatchString(q) {
			continue
		}
		args := make([]any, numParams(q))
		for i := range args {
			args[i] = int64(1)
		}
		plan := queryPlan(t, s.wc, q, args...)
		asked++
		if scan.MatchString(plan) {
			t.Errorf("statement %d scans the frames: %q\n%s", id, plan, q)
		}
	}
	if asked < 10 {
		t.Fatalf("%d statements of the frames asked, want the ten or more the writer has", asked)
	}
	for what, q := range map[string]string{"a request's frames": requestFrames, "the open frames": openFrames} {
		q = readSQL(s.D.FrameSelect + ` WHERE ` + q + ` ORDER BY ` + s.D.FrameOrder)
		args := make([]any, numParams(q))
		for i := range args {
			args[i] = "r1"
		}
		if plan := queryPlan(t, s.wc, q, args...); scan.MatchString(plan) {
			t.Errorf("the read of %s scans the frames: %q", what, plan)
		}
	}
}
