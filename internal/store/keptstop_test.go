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

	"github.com/agentreach/reach"
	"github.com/agentreach/reach/internal/idempotency"
)

// downRecs is a Memory whose completions are refused while refuse says so
// (the store is down), counting the refusals.
type downRecs struct {
	*Memory
	refuse  func(n int) bool
	refused atomic.Int32
}

func (d *downRecs) CompleteKey(ctx context.Context, key, owner string, result []byte, expires time.Time) error {
	if d.refuse(int(d.refused.Load())) {
		d.refused.Add(1)
		return errors.New("connection refused")
	}
	return d.Memory.CompleteKey(ctx, key, owner, result, expires)
}

// recsDown returns a Memory and an Idempotency over it whose completions
// the store refuses while down says so, down at first.
func recsDown() (*Memory, *atomic.Bool, *Idempotency) {
	mem, down := NewMemory(), new(atomic.Bool)
	down.Store(true)
	return mem, down, NewIdempotency(&downRecs{Memory: mem, refuse: func(int) bool { return down.Load() }}, nil)
}

// keptCall claims key on s and keeps its completion (res), as the store's
// writer does when it refuses it.
func keptCall(t *testing.T, s *Idempotency, key string, res *reach.Result) {
	t.Helper()
	if _, claimed, err := s.Claim(t.Context(), &reach.IdemClaim{Key: key, Args: "a"}); err != nil || !claimed {
		t.Fatalf("claim %s: %v %v", key, claimed, err)
	}
	b, err := encodeResult(res)
	if err != nil {
		t.Fatal(err)
	}
	s.keep(key, idempotency.KeptEntry{Args: "a", Result: b, Expires: time.Now().Add(time.Hour)})
	s.hold(key, -1, "")
}

// A stop while the store refuses completions writes them once it answers
// again, within the grace: Drain returns with none left, and the key
// answers the call's result.
func TestDrainWritesKept(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		recs := &downRecs{Memory: NewMemory()}
		recs.refuse = func(n int) bool { return n < 3 } // three refusals, then the store is back
		s := NewIdempotency(recs, nil)
		keptCall(t, s, "k", &reach.Result{Status: reach.StatusSuccess, Data: []byte(`"done"`)})
		ctx, cancel := context.WithTimeout(t.Context(), KeptGrace)
		defer cancel()
		if left := s.Drain(ctx); left != 0 {
			t.Fatalf("Drain left %d completions; want none once the store answers", left)
		}
		rec, claimed, err := NewIdempotency(recs.Memory, nil).Claim(t.Context(), &reach.IdemClaim{Key: "k", Args: "a"})
		if err != nil || claimed || rec == nil || string(rec.Data) != `"done"` {
			t.Fatalf("the key after Drain: %v claimed %v err %v; want its result", rec, claimed, err)
		}
	})
}

// A stop whose grace ends with the store still down leaves the kept
// completions in a file; the next life writes them under the stopped
// life's claims before anything settles those (RestoreKept), and removes
// the file. Without the file the claim would be settled "interrupted".
func TestSaveRestoreKept(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		mem, down, s := recsDown()
		keptCall(t, s, "k", &reach.Result{Status: reach.StatusSuccess, Data: []byte(`"done"`)})
		keptCall(t, s, "gone", &reach.Result{Status: reach.StatusSuccess, Data: []byte(`"x"`)})
		ctx, cancel := context.WithTimeout(t.Context(), KeptGrace)
		defer cancel()
		if left := s.Drain(ctx); left != 2 {
			t.Fatalf("Drain left %d completions with the store down; want 2", left)
		}
		path := filepath.Join(t.TempDir(), KeptFile)
		if n, err := s.SaveKept(path); n != 2 || err != nil {
			t.Fatalf("SaveKept: %d, %v; want 2 saved", n, err)
		}
		if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != 0o600 {
			t.Fatalf("the file: %v %v; want mode 0600", fi, err)
		}
		// Meanwhile another instance settled one of the claims.
		if err := mem.SettleKey(t.Context(), "gone", []byte(`{"status":"error"}`), time.Now().Add(time.Hour)); err != nil {
			t.Fatal(err)
		}
		next := NewIdempotency(mem, nil)
		if n, err := next.RestoreKept(t.Context(), path); n != 1 || err != nil {
			t.Fatalf("RestoreKept: %d, %v; want 1 written (the other's claim was settled)", n, err)
		}
		if _, err := os.Stat(path); !os.IsNotExist(err) {
			t.Fatalf("the file after RestoreKept: %v; want it removed", err)
		}
		if settled, err := next.Recover(t.Context()); err != nil || len(settled) != 0 {
			t.Fatalf("Recover after RestoreKept settled %v (%v); want nothing left to settle", settled, err)
		}
		rec, claimed, err := next.Claim(t.Context(), &reach.IdemClaim{Key: "k", Args: "a"})
		if err != nil || claimed || rec == nil || string(rec.Data) != `"done"` {
			t.Fatalf("the key after the restart: %v claimed %v err %v; want its result", rec, claimed, err)
		}
		if n, err := next.RestoreKept(t.Context(), path); n != 0 || err != nil {
			t.Fatalf("RestoreKept without a file: %d, %v; want nothing", n, err)
		}
		// The stopped life's keeper, once the store answers, finds its
		// claims gone and drops what it kept.
		down.Store(false)
		time.Sleep(2 * keptBackoff)
		synctest.Wait()
		if n := s.kept.Len(); n != 0 {
			t.Fatalf("the stopped life still keeps %d completions", n)
		}
	})
}

// FuzzRestoreKept: whatever the file a stop left holds (cut, edited by
// hand, another version's), a start neither panics nor writes a key that
// no line names; a line it cannot read is an error that says so, and is
// moved aside (KeptAside), the file removed: no line is lost either way.
func FuzzRestoreKept(f *testing.F) {
	f.Add([]byte(`{"owner":"reach/1","key":"k","args":"a","result":{"status":"success"},"expires":"2030-01-01T00:00:00Z"}` + "\n"))
	f.Add([]byte(`{"owner":"reach/1","key":"k"}` + "\n\n" + `{"key":`))
	f.Add([]byte("\x00\xff"))
	f.Add([]byte(`{"owner":"reach/1","end":{"Request":"r","Frame":"f","State":"completed","Undo":"e30="}}` + "\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		path := filepath.Join(t.TempDir(), KeptFile)
		if err := os.WriteFile(path, b, 0o600); err != nil {
			t.Fatal(err)
		}
		mem := NewMemory()
		s := NewIdempotency(mem, nil)
		n, err := s.RestoreKept(context.Background(), path)
		if n < 0 {
			t.Fatalf("RestoreKept wrote %d", n)
		}
		_, statErr := os.Stat(path)
		aside, asideErr := os.ReadFile(KeptAside(path))
		switch {
		case errors.Is(err, ErrKeptAside):
			if statErr == nil || asideErr != nil || len(aside) == 0 {
				t.Fatalf("RestoreKept moved lines aside (%v), yet the file is there (%v) or the lines not (%q, %v)", err, statErr, aside, asideErr)
			}
		case err != nil && statErr != nil:
			t.Fatalf("RestoreKept failed (%v) and removed the file", err)
		case err == nil && statErr == nil:
			t.Fatal("RestoreKept succeeded and left the file")
		case err == nil && asideErr == nil:
			t.Fatalf("RestoreKept succeeded and moved %q aside", aside)
		}
	})
}

// A file an earlier stop left torn (its write cut short: the disk full, the
// machine down) does not take the completions later stops append to it:
// they are written at the next start, and only the torn line stays, in the
// file moved aside (KeptAside), with an error that names it. Before, the next stop's line was
// appended to the torn one and every start refused the file from there on.
func TestRestoreKeptPastTornLine(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		mem, down, s := recsDown()
		keptCall(t, s, "k", &reach.Result{Status: reach.StatusSuccess, Data: []byte(`"done"`)})
		ctx, cancel := context.WithTimeout(t.Context(), KeptGrace)
		defer cancel()
		if left := s.Drain(ctx); left != 1 {
			t.Fatalf("Drain left %d; want 1 with the store down", left)
		}
		path := filepath.Join(t.TempDir(), KeptFile)
		torn := `{"owner":"reach/old","key":"old","res`
		if err := os.WriteFile(path, []byte(torn), 0o600); err != nil {
			t.Fatal(err)
		}
		if n, err := s.SaveKept(path); n != 1 || err != nil {
			t.Fatalf("SaveKept: %d, %v; want 1 saved", n, err)
		}
		next := NewIdempotency(mem, nil)
		n, err := next.RestoreKept(t.Context(), path)
		if n != 1 || !errors.Is(err, idempotency.ErrBadRecord) || !errors.Is(err, ErrKeptAside) {
			t.Fatalf("RestoreKept: %d, %v; want 1 written and the torn line said, moved aside", n, err)
		}
		rec, claimed, err := next.Claim(t.Context(), &reach.IdemClaim{Key: "k", Args: "a"})
		if err != nil || claimed || rec == nil || string(rec.Data) != `"done"` {
			t.Fatalf("the key after the restart: %v claimed %v err %v; want its result", rec, claimed, err)
		}
		if _, err := os.Stat(path); !os.IsNotExist(err) {
			t.Fatalf("the file after RestoreKept: %v; want it removed (its torn line moved aside)", err)
		}
		b, err := os.ReadFile(KeptAside(path))
		if err != nil || string(b) != torn+"\n" {
			t.Fatalf("the file of the lines moved aside: %q, %v; want the torn line", b, err)
		}
		down.Store(false) // the stopped life's keeper ends
		time.Sleep(2 * keptBackoff)
		synctest.Wait()
	})
}

// A completion kept while the store refuses it answers a retry until its
// result's expiry, as a stored one does, and no longer: past it, a retry
// through this instance is not given the result (an error while the store
// is down, then its key claimed anew once it answers).
func TestKeptExpires(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		_, down, s := recsDown()
		keptCall(t, s, "k", &reach.Result{Status: reach.StatusSuccess, Data: []byte(`"done"`)}) // expires in an hour
		if res, claimed, err := s.Claim(t.Context(), &reach.IdemClaim{Key: "k", Args: "a"}); err != nil || claimed || res == nil || string(res.Data) != `"done"` {
			t.Fatalf("a retry within the hour: %v claimed %v err %v; want the kept result", res, claimed, err)
		}
		time.Sleep(2 * time.Hour)
		if res, claimed, err := s.Claim(t.Context(), &reach.IdemClaim{Key: "k", Args: "a"}); err == nil || claimed || res != nil {
			t.Fatalf("a retry past the expiry, the store down: %v claimed %v err %v; want an error, no result", res, claimed, err)
		}
		down.Store(false)
		res, claimed, err := s.Claim(t.Context(), &reach.IdemClaim{Key: "k", Args: "a"})
		if err != nil || !claimed || res != nil {
			t.Fatalf("a retry past the expiry, the store back: %v claimed %v err %v; want the key claimed anew", res, claimed, err)
		}
		s.Complete("k", &reach.Result{Status: reach.StatusSuccess, Data: []byte(`"again"`)})
		time.Sleep(2 * keptBackoff) // the keeper finds nothing left, and leaves
		if s.kept.Len() != 0 {
			t.Errorf("%d completions still kept; want none", s.kept.Len())
		}
	})
}

// Lines of the kept file that cannot be read, in the middle and at the end
// (cut short), are moved aside (KeptAside, 0600, appended to what an
// earlier start moved there), the readable ones around them are written,
// and the file is removed, so that the start's journal may run. Where they
// cannot be moved aside (KeptAside is a folder here), they stay in the
// file, alone, and the error is not ErrKeptAside. Before, they stayed in
// the file, which kept the start from journalling what it kept.
func TestRestoreKeptMovesUnreadableAside(t *testing.T) {
	for _, blocked := range []bool{false, true} {
		mem := NewMemory()
		s := NewIdempotency(mem, nil)
		var lines []string
		for _, key := range []string{"k1", "k2"} {
			if _, claimed, err := s.Claim(t.Context(), &reach.IdemClaim{Key: key, Args: "a"}); err != nil || !claimed {
				t.Fatalf("claim %s: %v %v", key, claimed, err)
			}
			lines = append(lines, `{"owner":"`+s.owner+`","key":"`+key+`","args":"a","result":{"status":"success","data":"done"},"expires":"`+time.Now().Add(time.Hour).UTC().Format(time.RFC3339)+`"}`)
		}
		dir := t.TempDir()
		path := filepath.Join(dir, KeptFile)
		middle, end := `{"owner":"x","key":"k9",result}`, `{"owner":"x","key":"k8","res`
		if err := os.WriteFile(path, []byte(lines[0]+"\n"+middle+"\n"+lines[1]+"\n"+end), 0o600); err != nil {
			t.Fatal(err)
		}
		aside := KeptAside(path)
		earlier := "an earlier start's\n"
		if blocked {
			if err := os.Mkdir(aside, 0o700); err != nil {
				t.Fatal(err)
			}
		} else if err := os.WriteFile(aside, []byte(earlier), 0o600); err != nil {
			t.Fatal(err)
		}
		next := NewIdempotency(mem, nil)
		n, err := next.RestoreKept(t.Context(), path)
		if n != 2 || !errors.Is(err, idempotency.ErrBadRecord) || errors.Is(err, ErrKeptAside) == blocked {
			t.Fatalf("blocked %v: RestoreKept: %d, %v; want 2 written, the 2 unreadable lines said", blocked, n, err)
		}
		for _, key := range []string{"k1", "k2"} {
			if rec, claimed, err := next.Claim(t.Context(), &reach.IdemClaim{Key: key, Args: "a"}); err != nil || claimed || rec == nil {
				t.Fatalf("blocked %v: %s after RestoreKept: %v claimed %v err %v; want its result", blocked, key, rec, claimed, err)
			}
		}
		if blocked {
			b, err := os.ReadFile(path)
			if err != nil || string(b) != middle+"\n"+end+"\n" {
				t.Fatalf("the file, its unreadable lines not moved aside: %q %v; want them alone in it", b, err)
			}
			continue
		}
		if !strings.Contains(err.Error(), "2 lines") || !strings.Contains(err.Error(), filepath.Base(KeptAside(path))) {
			t.Fatalf("RestoreKept's error %q does not say how many lines went where", err)
		}
		if _, err := os.Stat(path); !os.IsNotExist(err) {
			t.Fatalf("the kept file after RestoreKept: %v; want it removed", err)
		}
		fi, err := os.Stat(aside)
		if err != nil || fi.Mode().Perm() != 0o600 {
			t.Fatalf("the file of the lines moved aside: %v %v; want 0600", fi, err)
		}
		if b, _ := os.ReadFile(aside); string(b) != earlier+middle+"\n"+end+"\n" {
			t.Fatalf("the file of the lines moved aside: %q; want the earlier lines, then both", b)
		}
	}
}

// The reserve file a full disk used is made again once the store has
// taken what was kept (the kept file removed): the next full disk of a
// long life finds one. Before, only the next start made it again.
func TestKeptReserveMadeAgain(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		_, down, s := recsDown()
		path := filepath.Join(t.TempDir(), KeptFile)
		s.KeepFile(path)
		reserve := KeptReserve(path)
		if fi, err := os.Stat(reserve); err != nil || fi.Size() != KeptReserveSize {
			t.Fatalf("the reserve file after KeepFile: %v %v", fi, err)
		}
		s.fmu.Lock()
		freed := s.freeReserve() // a full disk refused the kept file's write
		s.fmu.Unlock()
		if _, err := os.Stat(reserve); !freed || !os.IsNotExist(err) {
			t.Fatalf("freeReserve = %v, the reserve file: %v; want it removed", freed, err)
		}
		keptCall(t, s, "k", &reach.Result{Status: reach.StatusSuccess, Data: []byte(`"done"`)})
		down.Store(false) // room again, and the store takes the completion
		ctx, cancel := context.WithTimeout(t.Context(), KeptGrace)
		defer cancel()
		if left := s.Drain(ctx); left != 0 {
			t.Fatalf("Drain left %d completions; want none once the store answers", left)
		}
		time.Sleep(time.Minute) // the keeper finds nothing left, and returns
		synctest.Wait()
		if _, err := os.Stat(path); !os.IsNotExist(err) {
			t.Fatalf("the kept file once the store took its lines: %v; want it removed", err)
		}
		if fi, err := os.Stat(reserve); err != nil || fi.Size() != KeptReserveSize {
			t.Fatalf("the reserve file once the store took what was kept: %v %v; want it made again", fi, err)
		}
	})
}

// The file the unreadable lines of a kept file are moved to is no kept
// file: not another instance's on PostgreSQL (idempotency-kept-NAME.jsonl,
// the gateway's keptPath, in one data folder), nor SQLite's. Before,
// instance a's went to instance "a-unreadable"'s kept file, which that
// instance's journal removes once the store takes what it kept.
func TestKeptAsideIsNoKeptFile(t *testing.T) {
	dir := t.TempDir()
	kept := func(instance string) string {
		if instance == "" {
			return filepath.Join(dir, KeptFile)
		}
		return filepath.Join(dir, strings.TrimSuffix(KeptFile, ".jsonl")+"-"+instance+".jsonl")
	}
	for _, name := range []string{"", "a", "a-unreadable", "unreadable"} {
		aside := KeptAside(kept(name))
		if strings.HasSuffix(aside, ".jsonl") {
			for _, other := range []string{"", "a", "a-unreadable", "unreadable", "a-unreadable-unreadable"} {
				if aside == kept(other) {
					t.Errorf("KeptAside(%s) = %s: the kept file of instance %q", filepath.Base(kept(name)), filepath.Base(aside), other)
				}
			}
		}
		if aside == kept(name) || filepath.Dir(aside) != dir {
			t.Errorf("KeptAside(%s) = %s; want another file next to it", kept(name), aside)
		}
	}
}

// The reserve is made again too when the write it was removed for failed
// all the same (nothing reached the kept file: a disk that filled past
// the reserve, here a kept file that cannot be written).
func TestKeptReserveMadeAgainAfterFailedWrite(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		_, down, s := recsDown()
		path := filepath.Join(t.TempDir(), KeptFile)
		if err := os.Mkdir(path, 0o700); err != nil { // no line reaches it
			t.Fatal(err)
		}
		s.KeepFile(path)
		s.fmu.Lock()
		freed := s.freeReserve()
		s.fmu.Unlock()
		if !freed {
			t.Fatal("no reserve file to remove after KeepFile")
		}
		keptCall(t, s, "k", &reach.Result{Status: reach.StatusSuccess, Data: []byte(`"done"`)})
		down.Store(false)
		ctx, cancel := context.WithTimeout(t.Context(), KeptGrace)
		defer cancel()
		if left := s.Drain(ctx); left != 0 {
			t.Fatalf("Drain left %d completions; want none once the store answers", left)
		}
		time.Sleep(time.Minute)
		synctest.Wait()
		if fi, err := os.Stat(KeptReserve(path)); err != nil || fi.Size() != KeptReserveSize {
			t.Fatalf("the reserve file once the store took what was kept: %v %v; want it made again", fi, err)
		}
	})
}
