package loops

import (
	"bytes"
	"encoding/json"
	"slices"
	"strings"
	"testing"
)

// FuzzDetector feeds arbitrary sequences of steps and outcomes, completed in
// arbitrary order, and checks that nothing panics and memory stays bounded.
func FuzzDetector(f *testing.F) {
	f.Add([]byte{0, 1, 2, 3, 4, 5, 6, 7, 8, 9}, []byte(`{"a":1}`), []byte(`{"r":[1,2,"x\ny"]}`))
	f.Add([]byte{0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0}, []byte(`{"q":"error","limit":20}`), []byte(`"timeout"`))
	f.Add([]byte{7, 200, 13, 99, 255, 1, 0, 64}, []byte(`{"x":`), []byte(`{"unterminated`))
	f.Add([]byte{33, 66, 99, 132, 165, 198, 231}, []byte(`[1,[2,[3,[4]]]]`), []byte(`"a\\nb\nc\\\\n"`))
	f.Add([]byte{1, 4, 9, 16, 25, 36, 49, 64, 81, 100}, []byte(`{"message":{"role":"user","messageId":"m-1","parts":[{"kind":"text","text":"q"}]},"offset":2}`),
		[]byte(`{"jsonrpc":"2.0","id":1,"result":{"kind":"task","id":"t","contextId":"c","status":{"state":"working"},"usage":{"input_tokens":90,"output_tokens":7}}}`))
	f.Fuzz(func(t *testing.T, prog, args, result []byte) {
		d := New(&Options{MaxKeys: 64, MaxUnits: 128, MaxAgents: 4, CyclePeriod: int(len(prog) % 20)})
		tools := []string{"a", "b", "c"}
		agents := []string{"", "main", "sub", "other", "x"}
		accesses := []string{"read", "write", "high_risk", "forbidden", ""}
		errs := []string{"", "", "timeout", "unavailable", "rate_limited", "invalid_args", "not_found", "conflict", "forbidden", "weird"}
		var open []*Step
		for i, c := range prog {
			s := &Step{Kind: Kind(c % 4), Agent: agents[int(c>>2)%len(agents)], Depth: int(c >> 5)}
			switch s.Kind {
			case ToolCall, 3:
				s.Kind = ToolCall
				s.Tool = tools[int(c>>3)%len(tools)]
				s.Access = accesses[int(c>>4)%len(accesses)]
				s.Retryable = c&1 == 1
				switch c % 3 {
				case 0:
					s.Args = args
				case 1:
					s.Args = append(append([]byte{}, args...), byte(i))
				}
			case Delegation:
				s.To = agents[int(c>>3)%len(agents)]
				s.Task = string(args)
				if c&1 == 1 {
					s.Chain = agents[:int(c>>5)%len(agents)]
				}
			}
			if s.Kind == ToolCall && c&8 == 8 {
				s.Key = []string{"id", "a"}
			}
			if d.Check(s) == nil {
				open = append(open, s)
			}
			// Complete some of the open steps, in an order the program picks.
			for len(open) > 0 && (c&2 == 0 || len(open) > 3) {
				k := int(c) % len(open)
				o := Outcome{ErrorType: errs[int(c)%len(errs)], Refused: c%17 == 0}
				o.Error = o.ErrorType != ""
				switch c % 4 {
				case 0:
					o.Result = result
				case 1:
					o.Result = args
				case 2:
					o.Result = append(append([]byte{}, result...), byte(i))
				}
				d.Done(open[k], o)
				open = append(open[:k], open[k+1:]...)
			}
			if n, max := d.retained(), d.retainedBound(); n > max {
				t.Fatalf("retained %d > bound %d", n, max)
			}
		}
		for _, s := range open {
			d.Done(s, Outcome{Result: result})
		}
	})
}

// FuzzScan checks that the JSON scanner never panics and keeps its limit.
func FuzzScan(f *testing.F) {
	for _, s := range []string{`{"a":[1,2,{"b":"c\nd"}],"e":null}`, `"plain\\ntext"`, `not json`, `[[[[`, `{"a":"\"}`, `-1.5e+3`,
		`"{\"a\": \"\u00e9\ud83d\ude00\", \"request_id\": \"9f8e7d6c5b4a\"}"`, `"[\u12"`, `{"headers":{"Date":"x","Age":"1"},"checked":"2025-01-07T22:32:47Z"}`,
		`{"metadata":{"generated":1796558400000,"count":1},"retrieved":1796558400.25,"checked":17965584}`,
		`{"jsonrpc":"2.0","id":3,"result":{"kind":"task","id":"t-1","contextId":"c-1","artifacts":[{"artifactId":"a","parts":[{"kind":"text","text":"x"}]}]}}`,
		`{"jsonrpc":"2.0","result":{"result":{"kind":"message","contextId":null}},"kind":"task","contextId":"c"}`, `{"kind":1,"contextId":{}}`,
		`{"offset":16,"limit":8,"items":[{"id":"P-1"}]}`, `"Results for \"x\" (page 3):\n1. a"`, `{"page":1e308,"text":"page 9223372036854775808"}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		for _, lines := range []bool{false, true} {
			sc := scanLeaves(b, nil, 16, lines)
			if len(sc.out) > 16 {
				t.Fatalf("%d leaves, limit 16", len(sc.out))
			}
		}
		var vol keyCache
		var scratch []byte
		a := scanResult(b, nil, 16, &vol, &scratch, false)
		z := scanResult(b, nil, 16, &vol, &scratch, false)
		if len(a.out) > 16 || a.digest != z.digest {
			t.Fatalf("scanResult: %d leaves (limit 16), digests %x and %x", len(a.out), a.digest, z.digest)
		}
		// The A2A envelope's and a page's echo's readers (a2a.go, paging.go).
		if k := a2aShape(b); k != a2aShape(b) || k < 0 || k > a2aWrapped {
			t.Fatalf("a2aShape: %d", k)
		}
		for _, pos := range []float64{0, 1, 3, 16, -1, 1e19} {
			if pageAnswer(&a, pos) != pageAnswer(&z, pos) {
				t.Fatalf("pageAnswer(%v) differs on the same bytes", pos)
			}
			namesPage(b, pos)
		}
		if foldArgs("t", b) != foldArgs("t", b) {
			t.Fatal("foldArgs differs on the same bytes")
		}
	})
}

// FuzzText checks that the text normalizer and the metadata masks never
// panic, stay within their bounds and give the same answer twice.
func FuzzText(f *testing.F) {
	for _, s := range []string{
		"change the billing address", "如何修改订阅的账单地址", "ssh -p 2222 deploy@bastion-eu uptime", "requestId",
		"x-request-id", "Rejected: the root cause is not stated; add timestamps\nand owners", "审核仍未通过：控制在200字以内；引用第三季度营收数字",
		"<<<CONTENT id=\"6718e99530189f0d\">>> 2025-01-07T22:32:47Z", "\xff\xfe", "attempt 3 of 10", "",
	} {
		f.Add(s, []byte(`{"q":"`+s+`"}`))
	}
	f.Fuzz(func(t *testing.T, s string, args []byte) {
		b := []byte(s)
		if proseArg([]byte("query"), b) != proseArg([]byte("query"), b) || volatileKey(b) != volatileKey(b) {
			t.Fatal("not deterministic")
		}
		versionKey(b)
		keyKind(b)
		if ws := words(s, nil); len(ws) > maxWords || !slices.IsSorted(ws) {
			t.Fatalf("words: %d, sorted %v", len(ws), slices.IsSorted(ws))
		}
		if ns := numbers(s, nil); len(ns) > 8 {
			t.Fatalf("numbers: %d", len(ns))
		}
		if ps := pointWords(s); len(ps) > maxPoints {
			t.Fatalf("points: %d", len(ps))
		}
		items(s)
		negative(s)
		rejection(s)
		if maskedHash(b) != maskedHash(b) {
			t.Fatal("maskedHash not deterministic")
		}
		d := New(nil)
		if d.template(b, args) != d.template(b, args) {
			t.Fatal("template not deterministic")
		}
		st := &Step{Tool: "t", Args: args, Access: "write"}
		var buf [4]uint64
		d.precondition(st, buf[:0])
		st.Access = "read"
		d.question(st)
	})
}

// FuzzSeventh reads arbitrary bytes with the seventh probe's readers: an
// exception answered, a number grown in code, a query's aliases, a pid or
// a /tmp name masked. None panics; each is deterministic; a grown number
// is digits found in both strings.
func FuzzSeventh(f *testing.F) {
	for _, s := range [][3]string{
		{`"KeyError: 'Date'"`, "df.sample(1000)", "df.sample(5000)"},
		{`[{"execution_count":3,"outputs":["NameError  Traceback (most recent call last)\nCell In[3]\nNameError: x"]}]`, "LIMIT 9", "LIMIT 90"},
		{`"TypeError: x\n    at f (a.js:1:2)"`, "SELECT o.a FROM t o JOIN u AS v ON v.k = o.k", "select a from t"},
		{`"(pid 48211) WORK=/tmp/go-build2219043871 5u2k8d0q1ctg3v6hj7m9"`, "from", "FROM x AS"},
	} {
		f.Add([]byte(s[0]), s[1], s[2])
	}
	f.Fuzz(func(t *testing.T, b []byte, x, y string) {
		if exceptionAnswer(b) != exceptionAnswer(b) || maskedHash(b) != maskedHash(b) {
			t.Fatal("not deterministic")
		}
		if ox, oy, ok := grownNumber([]byte(x), []byte(y)); ok {
			if !digits(ox) || !digits(oy) || !strings.Contains(x, string(ox)) || !strings.Contains(y, string(oy)) {
				t.Fatalf("grownNumber(%q, %q) = %q, %q", x, y, ox, oy)
			}
		}
		if wordsFold([]byte(x)) != wordsFold([]byte(x)) {
			t.Fatal("not deterministic")
		}
		var buf [maxAliases]sqlAlias
		for _, a := range sqlAliases([]byte(y), buf[:0]) {
			if a.at < 0 || a.at >= len(y) || len(a.name) == 0 {
				t.Fatalf("alias %+v of %q", a, y)
			}
		}
	})
}

// FuzzEighth reads arbitrary bytes with the eighth probe's readers (an
// error's thing named, a request's id before it, a pattern's words): none
// panics, each is deterministic, a pattern's words do not depend on the
// case of its ASCII letters, and a message that names nothing hashes to 0.
func FuzzEighth(f *testing.F) {
	for _, s := range [][2]string{
		{"Error: ENOENT: no such file or directory, open '/srv/app/config/app.yml'", `**/*.PEM`},
		{"Charge ch_77 has already been refunded. (request id: req_31xQ0)", `func\\s+NewLimiter\\b`},
		{"customer not found", `\u00e9*`},
		{"RequestId 12", `\`},
		{`{"ok":false,"error":"ratelimited"}`, `*`},
		{`"{\"attempt_id\":7710,\"status\":\"FAILED\",\"wall_time_s\":14}"`, `a`},
		{"printer P4 is stopped; job 4411 not created", `b`},
		{`{"result":null,"error":"cannot create note because it is a duplicate"}`, `c`},
	} {
		f.Add([]byte(s[0]), s[1])
	}
	f.Fuzz(func(t *testing.T, msg []byte, p string) {
		h := sameThing(msg, nil)
		if h != sameThing(msg, nil) || requestIDBefore(msg) != requestIDBefore(msg) {
			t.Fatal("not deterministic")
		}
		if h != 0 && !bytes.ContainsAny(msg, "'/0123456789") {
			t.Fatalf("sameThing(%q) names a thing", msg)
		}
		for i := range len(msg) + 1 {
			if k, _ := keyBefore(msg[:i]); len(k) > i {
				t.Fatalf("keyBefore(%q) = %q", msg[:i], k)
			}
		}
		if n := kindBeforeID([]byte(p)); n > len(p) || n > 0 && !numeric([]byte(p)[n:]) {
			t.Fatalf("kindBeforeID(%q) = %d", p, n)
		}
		if c, _ := rpcErrorAnswer(msg); c != nil && !json.Valid(c) {
			t.Fatalf("rpcErrorAnswer(%q) = %q", msg, c)
		}
		up := []byte(p)
		for i, c := range up {
			if 'a' <= c && c <= 'z' {
				up[i] = c - 'a' + 'A'
			}
		}
		if patternFold([]byte(p)) != patternFold(up) {
			t.Fatalf("patternFold(%q) depends on case", p)
		}
		_ = pattern([]byte(p))
		f1, t1 := apiErrorAnswer(msg)
		if f2, t2 := apiErrorAnswer(msg); f1 != f2 || t1 != t2 || t1 && !f1 {
			t.Fatalf("apiErrorAnswer(%q) = %v, %v", msg, f1, t1)
		}
	})
}

// FuzzFilePath checks that a path's reading never panics, and that
// sameFile is reflexive for a path and symmetric.
func FuzzFilePath(f *testing.F) {
	for _, s := range [][2]string{{"config/app.yaml", "/srv/app/config/app.yaml"}, {"./a//b/../c", "a/c"}, {"../..", "/"}, {"a/b/c/d/e/f/g/h/i", "/x"}, {"\xff/\x00", "n/a"}} {
		f.Add(s[0], s[1])
	}
	f.Fuzz(func(t *testing.T, a, b string) {
		p, q := filePathOf([]byte(a)), filePathOf([]byte(b))
		if p.n > maxPathParts || q.n > maxPathParts {
			t.Fatalf("%d, %d parts", p.n, q.n)
		}
		if p.n > 0 && !sameFile(&p, &p) {
			t.Fatalf("%q is not itself", a)
		}
		if sameFile(&p, &q) != sameFile(&q, &p) {
			t.Fatalf("sameFile(%q, %q) not symmetric", a, b)
		}
	})
}
