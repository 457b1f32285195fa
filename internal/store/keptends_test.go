package store

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"
)

// downFrames is a Memory whose kept ends are refused while down says so.
type downFrames struct {
	*Memory
	down *atomic.Bool
}

func (d *downFrames) EndExecutingFrame(ctx context.Context, f *Frame) (bool, error) {
	if d.down.Load() {
		return false, errors.New("connection refused")
	}
	return d.Memory.EndExecutingFrame(ctx, f)
}

// endsDown returns a Memory and an Idempotency over it whose kept ends the
// store refuses while down says so, down at first.
func endsDown() (*Memory, *atomic.Bool, *Idempotency) {
	mem, down := NewMemory(), new(atomic.Bool)
	down.Store(true)
	return mem, down, NewIdempotency(&downFrames{Memory: mem, down: down}, nil)
}

// executing puts request r's frame id "executing", as a call's claim does,
// and returns its end with an undo, as durable.Checkpoints' Ended makes it.
func executing(t *testing.T, m *Memory, r, id string) *Frame {
	t.Helper()
	f := &Frame{Request: r, Frame: id, Kind: "tool", Name: "book", State: "executing", Args: []byte(`{"k":1}`), Owner: "a/1"}
	if err := m.PutFrame(t.Context(), f); err != nil {
		t.Fatal(err)
	}
	end := *f
	end.State, end.Undo, end.EndOnly = "completed", []byte(`{"tool":"unbook"}`), true
	return &end
}

func frameOf(t *testing.T, m *Memory, r, id string) *Frame {
	t.Helper()
	fs, err := m.RequestFrames(t.Context(), r)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range fs {
		if f.Frame == id {
			return f
		}
	}
	t.Fatalf("no frame %s in %s", id, r)
	return nil
}

// A call's ended checkpoint (with its undo) that the store refused is
// kept and written once the store answers: a recovery then finds the undo.
// Before, it was logged and lost, and the checkpoint stayed "executing".
func TestKeptEndWrittenWhenTheStoreAnswers(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		mem, down, s := endsDown()
		end := executing(t, mem, "r", "f1")
		if !s.KeepEnded(end) {
			t.Fatal("KeepEnded did not keep the end")
		}
		time.Sleep(3 * keptBackoff)
		synctest.Wait()
		if f := frameOf(t, mem, "r", "f1"); f.State != "executing" {
			t.Fatalf("the checkpoint with the store down: %s", f.State)
		}
		down.Store(false)
		time.Sleep(2 * keptBackoff)
		synctest.Wait()
		if f := frameOf(t, mem, "r", "f1"); f.State != "completed" || string(f.Undo) != `{"tool":"unbook"}` || string(f.Args) != `{"k":1}` {
			t.Fatalf("the checkpoint once the store answers: %+v; want it ended with its undo", f)
		}
		if n := s.keptLen(); n != 0 {
			t.Fatalf("%d still kept", n)
		}
	})
}

// A stop with the store down leaves the kept end in the file, before the
// completions; the next start writes it where the checkpoint is still
// "executing", and not over one a recovery marked meanwhile.
func TestKeptEndSavedAndRestored(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		mem, down, s := endsDown()
		s.KeepEnded(executing(t, mem, "r", "f1"))
		s.KeepEnded(executing(t, mem, "r", "f2"))
		ctx, cancel := context.WithTimeout(t.Context(), KeptGrace)
		defer cancel()
		if left := s.Drain(ctx); left != 2 {
			t.Fatalf("Drain left %d; want the 2 ends", left)
		}
		path := filepath.Join(t.TempDir(), KeptFile)
		if n, err := s.SaveKept(path); n != 2 || err != nil {
			t.Fatalf("SaveKept: %d, %v", n, err)
		}
		// Meanwhile a recovery marked f2 (may have run).
		f2 := frameOf(t, mem, "r", "f2")
		f2.State = "cancelled"
		if err := mem.PutFrame(t.Context(), f2); err != nil {
			t.Fatal(err)
		}
		next := NewIdempotency(mem, nil)
		if n, err := next.RestoreKept(t.Context(), path); n != 1 || err != nil {
			t.Fatalf("RestoreKept: %d, %v; want the one still executing written", n, err)
		}
		if f := frameOf(t, mem, "r", "f1"); f.State != "completed" || string(f.Undo) != `{"tool":"unbook"}` {
			t.Errorf("f1 after the start: %+v; want it ended with its undo", f)
		}
		if f := frameOf(t, mem, "r", "f2"); f.State != "cancelled" || f.Undo != nil {
			t.Errorf("f2 after the start: %+v; want it as the recovery marked it", f)
		}
		down.Store(false) // the stopped life's keeper ends
		time.Sleep(2 * keptBackoff)
		synctest.Wait()
	})
}

// With a kept file (KeepFile), an end is in the file as soon as it is
// kept, for a start after a kill; a stop then writes it no second time,
// and the file goes once everything kept is written.
func TestKeptEndInTheFileAsKept(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		mem, down, s := endsDown()
		path := filepath.Join(t.TempDir(), KeptFile)
		s.KeepFile(path)
		s.KeepEnded(executing(t, mem, "r", "f1"))
		b, err := os.ReadFile(path)
		if err != nil || len(b) == 0 {
			t.Fatalf("the file once the end is kept: %q, %v; want its line", b, err)
		}
		if n, err := s.SaveKept(path); n != 1 || err != nil {
			t.Fatalf("SaveKept: %d, %v", n, err)
		}
		if b2, _ := os.ReadFile(path); len(b2) != len(b) {
			t.Fatalf("SaveKept wrote the line again: %q", b2)
		}
		// A start after a kill here writes it (the life killed: its
		// keeper never runs again).
		next := NewIdempotency(mem, nil)
		if n, err := next.RestoreKept(t.Context(), filepath.Join(t.TempDir(), "copy")); n != 0 || err != nil {
			t.Fatalf("RestoreKept of no file: %d, %v", n, err)
		}
		cp := filepath.Join(t.TempDir(), KeptFile)
		if err := os.WriteFile(cp, b, 0o600); err != nil {
			t.Fatal(err)
		}
		if n, err := next.RestoreKept(t.Context(), cp); n != 1 || err != nil {
			t.Fatalf("RestoreKept after a kill: %d, %v", n, err)
		}
		if f := frameOf(t, mem, "r", "f1"); f.State != "completed" || string(f.Undo) != `{"tool":"unbook"}` {
			t.Errorf("f1 after the start: %+v; want it ended with its undo", f)
		}
		// The life that runs on: once its keeper has nothing left (the
		// end is dropped: not executing any more), the file goes.
		down.Store(false)
		time.Sleep(2 * keptBackoff)
		synctest.Wait()
		if _, err := os.Stat(path); !os.IsNotExist(err) {
			t.Errorf("the file once nothing is kept: %v; want it removed", err)
		}
	})
}

// A kept end holds what its write needs (its ids, state, undo and error),
// not the call's arguments: EndExecutingFrame writes only those, where the
// "executing" row has the arguments already. Kept with them, 10,000 ends
// of calls with large arguments were held in memory past the 64 MB the
// kept completions are bounded by, and each was written to the kept file.
func TestKeptEndHoldsNoArguments(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		mem, down, s := endsDown()
		path := filepath.Join(t.TempDir(), KeptFile)
		s.KeepFile(path)
		big := []byte(`{"doc":"` + strings.Repeat("x", 1<<20) + `"}`)
		f := &Frame{Request: "r", Frame: "f1", Kind: "tool", Name: "book", State: "executing", Args: big, Owner: "a/1"}
		if err := mem.PutFrame(t.Context(), f); err != nil {
			t.Fatal(err)
		}
		end := *f
		end.State, end.Undo, end.EndOnly = "completed", []byte(`{"tool":"unbook"}`), true
		if !s.KeepEnded(&end) {
			t.Fatal("KeepEnded did not keep the end")
		}
		for _, k := range s.endsKept() {
			if len(k.Args) != 0 {
				t.Errorf("the kept end holds %d bytes of arguments; want none", len(k.Args))
			}
		}
		if fi, err := os.Stat(path); err != nil {
			t.Errorf("the kept file: %v", err)
		} else if fi.Size() > 4096 {
			t.Errorf("the kept file holds %d bytes for one end; want its line without the 1 MB of arguments", fi.Size())
		}
		down.Store(false)
		time.Sleep(2 * keptBackoff)
		synctest.Wait()
		if g := frameOf(t, mem, "r", "f1"); g.State != "completed" || string(g.Undo) != `{"tool":"unbook"}` || len(g.Args) != len(big) {
			t.Errorf("the checkpoint once the store answers: state %s, undo %s, %d bytes of arguments; want it ended with its undo and its arguments",
				g.State, g.Undo, len(g.Args))
		}
	})
}
