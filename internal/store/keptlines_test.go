package store

import (
	"bytes"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/agentreach/reach"
	"github.com/agentreach/reach/internal/idempotency"
)

// FuzzScanKept: whatever a kept file holds and whatever the longest line
// read whole, scanKept gives every byte once, in order: the lines (no
// '\n' in them, none longer than max) and the longer ones in chunks
// (longer than max together), each followed by the '\n' that ended it (one
// more after a last line that had none).
func FuzzScanKept(f *testing.F) {
	f.Add([]byte("a\nbb\n\nccc"), 2)
	f.Add([]byte(strings.Repeat("x", 3*keptReadBuffer)+"\nshort\n"), 10)
	f.Add([]byte("\n\n\n"), 0)
	f.Add([]byte(""), 5)
	f.Fuzz(func(t *testing.T, in []byte, max int) {
		if max < 0 || max > 4*keptReadBuffer {
			max = 5
		}
		var out bytes.Buffer
		longLen, inLong := 0, false
		err := scanKept(bytes.NewReader(in), max, func(b []byte) error {
			if inLong {
				t.Fatal("a line given while a long one was not ended")
			}
			if len(b) > max || bytes.IndexByte(b, '\n') >= 0 {
				t.Fatalf("a line of %d bytes (max %d) or with a newline: %q", len(b), max, b)
			}
			out.Write(b)
			out.WriteByte('\n')
			return nil
		}, func(chunk []byte, end bool) error {
			inLong = true
			if bytes.IndexByte(chunk, '\n') >= 0 {
				t.Fatalf("a chunk of a long line with a newline: %q", chunk)
			}
			longLen += len(chunk)
			out.Write(chunk)
			if end {
				if longLen <= max {
					t.Fatalf("a long line of %d bytes, max %d", longLen, max)
				}
				out.WriteByte('\n')
				longLen, inLong = 0, false
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		if inLong {
			t.Fatal("a long line never ended")
		}
		want := in
		if len(in) > 0 && in[len(in)-1] != '\n' {
			want = append(append([]byte(nil), in...), '\n')
		}
		if !bytes.Equal(out.Bytes(), want) {
			t.Fatalf("scanKept gave %q for %q", out.Bytes(), in)
		}
	})
}

// allocated is how many bytes the process allocated while f ran.
func allocated(f func()) uint64 {
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	f()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

// keptFileLine is a kept file's line completing key of s's claim.
func keptFileLine(t *testing.T, s *Idempotency, key string) string {
	t.Helper()
	if _, claimed, err := s.Claim(t.Context(), &reach.IdemClaim{Key: key, Args: "a"}); err != nil || !claimed {
		t.Fatalf("claim %s: %v %v", key, claimed, err)
	}
	return `{"owner":"` + s.owner + `","key":"` + key + `","args":"a","result":{"status":"success","data":"done"},"expires":"` + time.Now().Add(time.Hour).UTC().Format(time.RFC3339) + `"}`
}

// A kept file is read a line at a time, never whole: a start reads a file
// of 16 MiB (two completions among empty lines) allocating far less than
// the file. Before, it read the file whole, and its scanner a copy of it
// (32 MiB).
func TestRestoreKeptStreams(t *testing.T) {
	mem := NewMemory()
	s := NewIdempotency(mem, nil)
	path := filepath.Join(t.TempDir(), KeptFile)
	pad := strings.Repeat(strings.Repeat(" ", 1023)+"\n", 8<<10) // 8 MiB
	body := keptFileLine(t, s, "k1") + "\n" + pad + pad + keptFileLine(t, s, "k2") + "\n"
	if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	next := NewIdempotency(mem, nil)
	var n int
	var err error
	got := allocated(func() { n, err = next.RestoreKept(t.Context(), path) })
	if err != nil || n != 2 {
		t.Fatalf("RestoreKept: %d, %v; want both completions written", n, err)
	}
	if got > uint64(len(body))/8 {
		t.Fatalf("reading a kept file of %d bytes allocated %d", len(body), got)
	}
	t.Logf("reading a kept file of %d bytes allocated %d", len(body), got)
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Fatalf("the kept file after RestoreKept: %v; want it removed", err)
	}
}

// A line longer than keptLineMax (forged, or lines glued together) is not
// read whole: it streams aside (KeptAside), byte for byte, with a log
// line, and the lines around it are written. Before, the whole file was
// read, with such a line in it.
func TestRestoreKeptOverlongLineStreamsAside(t *testing.T) {
	defer func(n int) { keptLineMax = n }(keptLineMax)
	keptLineMax = 64 << 10
	mem := NewMemory()
	s := NewIdempotency(mem, nil)
	path := filepath.Join(t.TempDir(), KeptFile)
	forged := `{"owner":"x","key":"k9","result":"` + strings.Repeat("a", 8<<20) + `"}`
	body := keptFileLine(t, s, "k1") + "\n" + forged + "\n" + keptFileLine(t, s, "k2") + "\n"
	if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	var logs bytes.Buffer
	next := NewIdempotency(mem, &IdempotencyOptions{Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	var n int
	var err error
	got := allocated(func() { n, err = next.RestoreKept(t.Context(), path) })
	if n != 2 || !errors.Is(err, idempotency.ErrBadRecord) || !errors.Is(err, ErrKeptAside) || !strings.Contains(err.Error(), "1 lines") {
		t.Fatalf("RestoreKept: %d, %v; want the 2 completions written, the long line moved aside", n, err)
	}
	if got > 2<<20 {
		t.Fatalf("reading a kept file with a line of %d bytes allocated %d", len(forged), got)
	}
	b, rerr := os.ReadFile(KeptAside(path))
	if rerr != nil || string(b) != forged+"\n" {
		t.Fatalf("the lines moved aside: %d bytes (%v); want the long line, whole", len(b), rerr)
	}
	if !strings.Contains(logs.String(), "could not be read") || !strings.Contains(logs.String(), "line=2") {
		t.Fatalf("no log line names the line moved aside:\n%s", logs.String())
	}
	if _, err := os.Stat(path + keptSpoolSuffix); !os.IsNotExist(err) {
		t.Fatalf("the spool after RestoreKept: %v; want it removed", err)
	}
}
