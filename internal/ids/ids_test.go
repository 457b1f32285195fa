package ids_test

import (
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentreach/reach/internal/frames"
	"github.com/agentreach/reach/internal/ids"
	"github.com/agentreach/reach/internal/link"
)

// TestUniqueConcurrently: ids made at once on many goroutines are all
// different, text and frame ids alike.
func TestUniqueConcurrently(t *testing.T) {
	const g, n = 16, 2000
	texts := make([][]string, g)
	fs := make([][]uint64, g)
	var wg sync.WaitGroup
	for i := range g {
		wg.Go(func() {
			for range n {
				texts[i] = append(texts[i], ids.Text("req_"))
				fs[i] = append(fs[i], ids.Frame())
			}
		})
	}
	wg.Wait()
	seenT, seenF := map[string]bool{}, map[uint64]bool{}
	for i := range g {
		for j := range n {
			if seenT[texts[i][j]] || seenF[fs[i][j]] {
				t.Fatalf("id made twice: %s or %016x", texts[i][j], fs[i][j])
			}
			seenT[texts[i][j]], seenF[fs[i][j]] = true, true
		}
	}
}

// TestOrderAcrossMilliseconds: an id made in a later millisecond sorts
// after, as text (request ids) and as a number (frame ids); a process's
// frame ids grow one after the other.
func TestOrderAcrossMilliseconds(t *testing.T) {
	var texts []string
	var fs []uint64
	for range 5 {
		for range 50 {
			fs = append(fs, ids.Frame())
		}
		texts = append(texts, ids.Text("req_"))
		time.Sleep(2 * time.Millisecond)
	}
	if !slices.IsSorted(texts) {
		t.Fatalf("request ids of later milliseconds sort before: %q", texts)
	}
	if !slices.IsSorted(fs) {
		t.Fatalf("frame ids do not grow: %x", fs)
	}
	a := ids.Frame()
	time.Sleep(1100 * time.Millisecond)
	if b := ids.Frame(); b>>32 <= a>>32 {
		t.Fatalf("a frame a second later, %016x, has the second of %016x", b, a)
	}
}

// TestTextFormat: prefix, 12 hex digits of the time, 20 of randomness.
func TestTextFormat(t *testing.T) {
	before := time.Now().UnixMilli()
	id := ids.Text("req_")
	after := time.Now().UnixMilli()
	if len(id) != len("req_")+ids.TextLen || !strings.HasPrefix(id, "req_") || strings.Trim(id[4:], "0123456789abcdef") != "" {
		t.Fatalf("id %q: want req_ and %d lower-case hex digits", id, ids.TextLen)
	}
	ms, _ := strconv.ParseInt(id[4:16], 16, 64)
	if ms < before || ms > after {
		t.Fatalf("id %q says %d ms, made between %d and %d", id, ms, before, after)
	}
}

// TestTextKeepsRandomBits fails if the random part is dropped or made
// smaller: ids of one millisecond differ there, in each of its 20 digits,
// and no two share it.
func TestTextKeepsRandomBits(t *testing.T) {
	const n = 4000
	tails := map[string]bool{}
	var varies [ids.TextLen - 12]map[byte]bool
	for i := range varies {
		varies[i] = map[byte]bool{}
	}
	for range n {
		tail := ids.Text("")[12:]
		if len(tail) < 20 {
			t.Fatalf("random part %q: want 20 hex digits (80 bits)", tail)
		}
		if tails[tail] {
			t.Fatalf("random part %q drawn twice in %d ids", tail, n)
		}
		tails[tail] = true
		for i := range varies {
			varies[i][tail[i]] = true
		}
	}
	for i, v := range varies {
		if len(v) < 12 { // of 16 digits, 4,000 draws see them all but by a 1e-100 chance
			t.Fatalf("digit %d of the random part took %d values in %d ids: not random", 12+i, len(v), n)
		}
	}
}

// TestIDsParse: a frame id reads back through every parser of frame ids
// (16 hex digits, not 0: W3C's span id), and a request id and a frame id
// pass as a client names them in _meta, with the compensation's id that
// reach makes of a request's (within link.MaxRequestID).
func TestIDsParse(t *testing.T) {
	req := ids.Text("req_")
	req = req + "/compensate/" + ids.Text("req_")[4:]
	f := frames.ID(ids.Frame()).String()
	m, err := link.FromMeta(map[string]any{link.MetaRequest: req, link.MetaParent: f})
	if err != nil || m.Request != req || m.Parent.String() != f {
		t.Fatalf("_meta with request %s and parent %s: %+v, %v", req, f, m, err)
	}
	for range 100 {
		f := frames.ID(ids.Frame())
		s := f.String()
		back, err := link.ParseFrameID(s)
		if err != nil || back != f {
			t.Fatalf("frame id %s read back as %v, %v", s, back, err)
		}
		tp := "00-4bf92f3577b34da6a3ce929d0e0e4736-" + s + "-01"
		if got, _, ok := link.ParseTraceparent(tp); !ok || got != f {
			t.Fatalf("traceparent %s: parent %v, %v", tp, got, ok)
		}
	}
}

// TestFrameCountStartsAtRandom: two processes count their frames from
// different places, so that two instances on one store do not make the
// same ids in the same second. The count's start is the random part of a
// frame id: this fails if it is dropped (1 in 4 billion by chance).
func TestFrameCountStartsAtRandom(t *testing.T) {
	if os.Getenv("IDS_PRINT_FRAME") != "" {
		os.Stdout.WriteString("frame=" + strconv.FormatUint(ids.Frame()&0xffffffff, 10) + "\n")
		return
	}
	var got []string
	for range 2 {
		cmd := exec.Command(os.Args[0], "-test.run", "^TestFrameCountStartsAtRandom$")
		cmd.Env = append(os.Environ(), "IDS_PRINT_FRAME=1")
		out, err := cmd.Output()
		if err != nil {
			t.Fatal(err)
		}
		_, v, ok := strings.Cut(string(out), "frame=")
		if !ok {
			t.Fatalf("no frame in %q", out)
		}
		v, _, _ = strings.Cut(v, "\n")
		got = append(got, v)
	}
	if got[0] == got[1] {
		t.Fatalf("two processes' first frames are both numbered %s: the count starts at the same place", got[0])
	}
}

// TestTextLongPrefix: Text keeps up to 48 bytes of its prefix, and then
// has room for its 32 digits (an array of 64 bytes had not: it panicked
// for a prefix longer than 32).
func TestTextLongPrefix(t *testing.T) {
	for _, n := range []int{32, 33, 48, 60} {
		prefix := strings.Repeat("p", n)
		id := ids.Text(prefix)
		kept := min(n, 48)
		if len(id) != kept+ids.TextLen || id[:kept] != prefix[:kept] {
			t.Errorf("Text of a %d-byte prefix = %q; want its first %d bytes and %d digits", n, id, kept, ids.TextLen)
		}
	}
}

// TestNumberedCallsSortInOrder: numbered call ids (AppendCall) sort as text
// in the order of their count, across the counts where a decimal one gets
// a digit more (9, 10; 99, 100) or a hex one does (15, 16), and Numbered
// knows them, and nothing else: not the decimal count numbered before
// ("mcp_1f2e3d4c_12"), not a client's id.
func TestNumberedCallsSortInOrder(t *testing.T) {
	prefix := ids.CallPrefix("mcp_")
	if len(prefix) != len("mcp_")+9 || !strings.HasPrefix(prefix, "mcp_") || !strings.HasSuffix(prefix, "_") {
		t.Fatalf("prefix %q: want mcp_, 8 hex digits, _", prefix)
	}
	var got []string
	for _, n := range []uint64{1, 9, 10, 15, 16, 99, 100, 255, 256, 1 << 32, 1<<64 - 1} {
		id := string(ids.AppendCall(nil, prefix, n))
		if len(id) != len(prefix)+16 || !ids.Numbered(id) {
			t.Fatalf("id %q of %d: want the prefix and 16 hex digits, Numbered", id, n)
		}
		got = append(got, id)
	}
	if !slices.IsSorted(got) {
		t.Fatalf("numbered ids do not sort in count order: %q", got)
	}
	for _, id := range []string{"", "mcp_1f2e3d4c_12", "mcp_1f2e3d4c_000000000000000", "mcp_1f2e3d4c_0000000000000000a",
		"mcp_1F2E3D4C_0000000000000001", "mcp_1f2e3d4c_000000000000000G", "_1f2e3d4c_0000000000000001", "mcp-1f2e3d4c_0000000000000001",
		"m/p_1f2e3d4c_0000000000000001", "call_abc", "mcp_1f2e3d4c-0000000000000001"} {
		if ids.Numbered(id) {
			t.Errorf("Numbered(%q) = true", id)
		}
	}
}
