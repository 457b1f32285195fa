package loops

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
)

// randArgs writes random tool arguments: free text and search keys,
// spans, date-times, code, ids of digits, escapes, nesting, arrays, and
// now and then more leaves than are read, or bytes that are not JSON.
func randArgs(r *rand.Rand) []byte {
	if r.IntN(20) == 0 {
		return []byte(`{"q":"unclosed`)
	}
	keys := []string{"query", "q", "text", "path", "id", "order_id", "window", "since", "where", "range", "limit", "fields", "filter", "prompt"}
	pieces := []string{"how do I", "refund", "policy", "AB-1200 ", "ab-1200", "02", "45m", "2 h", "1h30m", "PT45M",
		"2026-12-09T13:00:00+01:00", "2026-12-09T12:00:00Z", "status='open'", "id>3", "'Q4'!A1:D20", "./src/main.go/",
		"日本語のテキスト", `\n`, `\u0020`, `\"`, "x", "2025011400123", "Okta MFA zurücksetzen"}
	var b strings.Builder
	var value func(depth int)
	value = func(depth int) {
		switch n := r.IntN(10); {
		case n < 5:
			b.WriteByte('"')
			for range 1 + r.IntN(4) {
				if b.Len() > 0 && r.IntN(2) == 0 {
					b.WriteByte(' ')
				}
				b.WriteString(pieces[r.IntN(len(pieces))])
			}
			b.WriteByte('"')
		case n < 7:
			fmt.Fprintf(&b, "%d", r.IntN(1000)-10)
		case n == 7 && depth < 3:
			b.WriteByte('[')
			for i := range r.IntN(4) {
				if i > 0 {
					b.WriteByte(',')
				}
				value(depth + 1)
			}
			b.WriteByte(']')
		case n == 8 && depth < 3:
			object(&b, r, keys, depth+1, value)
		default:
			b.WriteString([]string{"true", "false", "null", "1.5e3"}[r.IntN(4)])
		}
	}
	if r.IntN(15) == 0 {
		b.WriteByte('{')
		for i := range 40 {
			if i > 0 {
				b.WriteByte(',')
			}
			fmt.Fprintf(&b, `"k%02d":%d`, i, r.IntN(3))
		}
		b.WriteByte('}')
		return []byte(b.String())
	}
	object(&b, r, keys, 0, value)
	return []byte(b.String())
}

func object(b *strings.Builder, r *rand.Rand, keys []string, depth int, value func(int)) {
	b.WriteByte('{')
	for i := range r.IntN(4) {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(b, "%q:", keys[r.IntN(len(keys))])
		value(depth)
	}
	b.WriteByte('}')
}

// The question a call asks, kept with its call from its first Check, is
// what question says afresh at every Check the detector allows, whatever
// runs before it: random arguments from a small pool (so that calls are
// made again), several tools and agents, reads and writes of one tool
// and arguments, one Step rewritten with other arguments between calls,
// results that change or do not. A differential test against the
// uncached computation, on inputs the traces do not cover.
func TestQuestionKeptRandomized(t *testing.T) {
	kept := 0
	for seed := range uint64(40) {
		r := rand.New(rand.NewPCG(seed, 13))
		pool := make([][]byte, 2+r.IntN(10))
		for i := range pool {
			pool[i] = randArgs(r)
		}
		d := New(nil)
		reused := &Step{}
		for i := range 300 {
			s := &Step{}
			if r.IntN(3) == 0 {
				s = reused // a Step made again with other arguments
			}
			s.Kind = ToolCall
			s.Tool = []string{"search", "get", "kb"}[r.IntN(3)]
			s.Args = pool[r.IntN(len(pool))]
			s.Agent = []string{"", "sub"}[r.IntN(2)]
			s.Access = "read"
			if r.IntN(8) == 0 {
				s.Access = "write"
			}
			cs, _ := d.calls.get(callKey(s.Tool, s.Args))
			cached := cs != nil && cs.qKnown && s.Access == "read"
			if d.Check(s) != nil {
				continue
			}
			if cached {
				kept++
			}
			fresh := &Step{Tool: s.Tool, Args: s.Args, Access: s.Access}
			q := d.question(fresh)
			if s.question != q || s.prose != fresh.prose || s.search != fresh.search || q != 0 && s.asking != fresh.asking {
				t.Fatalf("seed %d, step %d, %s %s %s: kept question %x asking %x prose %v search %v; afresh %x %x %v %v",
					seed, i, s.Access, s.Tool, s.Args, s.question, s.asking, s.prose, s.search, q, fresh.asking, fresh.prose, fresh.search)
			}
			res := fmt.Appendf(nil, `{"n":%d}`, r.IntN(3))
			o := Outcome{Result: res}
			switch r.IntN(12) {
			case 0:
				o = Outcome{Error: true, ErrorType: "timeout"}
			case 1:
				o = Outcome{Refused: true}
			}
			d.Done(s, o)
		}
	}
	if kept < 1000 {
		t.Errorf("%d checks read a kept question: too few to compare", kept)
	}
}

// lineEndBefore is lineEnd as it was before its one-pass rewrite.
func lineEndBefore(raw []byte) (end, next int) {
	for k := 0; k < len(raw); {
		i := bytes.IndexAny(raw[k:], "\\\n")
		if i < 0 {
			break
		}
		k += i
		if raw[k] == '\n' {
			return k, k + 1
		}
		if k+1 < len(raw) && raw[k+1] == 'n' {
			return k, k + 2
		}
		k += 2 // an escaped byte
	}
	return len(raw), len(raw)
}

// lineEnd finds what it found before its rewrite, on random bytes made of
// what it looks for (backslashes, n, newlines) and what it skips.
func TestLineEndAsBefore(t *testing.T) {
	r := rand.New(rand.NewPCG(13, 13))
	alphabet := []byte{'\\', 'n', '\n', 'a', '"', 0xe6}
	for range 20000 {
		raw := make([]byte, r.IntN(12))
		for i := range raw {
			raw[i] = alphabet[r.IntN(len(alphabet))]
		}
		e, n := lineEnd(raw)
		e0, n0 := lineEndBefore(raw)
		if e != e0 || n != n0 {
			t.Fatalf("lineEnd(%q) = %d, %d; before the rewrite %d, %d", raw, e, n, e0, n0)
		}
	}
}

// among says what recent's first n entries say: whether one of them is
// the call of a key, on rings of random calls with random ones gone.
func TestAmongAsRecent(t *testing.T) {
	r := rand.New(rand.NewPCG(13, 31))
	for range 5000 {
		a := &agentState{}
		size := 1 + r.IntN(8)
		a.ring = make([]entry, 0, size)
		for range r.IntN(20) {
			a.push(entry{seq: 1, key: uint64(r.IntN(4))})
			if len(a.ring) > 0 && r.IntN(4) == 0 {
				a.ring[r.IntN(len(a.ring))].gone = true
			}
		}
		var buf [maxPeriodCap * maxRepeatCap]*entry
		w := buf[:a.recent(buf[:])]
		for n := 1; n <= size+1; n++ {
			for key := range uint64(4) {
				want := false
				for _, e := range w[:min(n, len(w))] {
					want = want || e.key == key
				}
				if got := a.among(key, n); got != want {
					t.Fatalf("ring %+v head %d: among(%d, %d) = %v; recent's first %d say %v", a.ring, a.head, key, n, got, n, want)
				}
			}
		}
	}
}
