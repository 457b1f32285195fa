package loops

import (
	"fmt"
	"testing"
)

// TestExpressionKeyRespelled: a query respelled in case and spacing
// answers its column under the query's own spelling (COUNT(*), count(*),
// count( * )): the same answer, so its fourth asking is refused; another
// aggregate, another column, is another answer and goes on.
func TestExpressionKeyRespelled(t *testing.T) {
	run := func(qs []string, cols []string) asPlay {
		w := asRunOf("q", "database", true)
		for i, q := range qs {
			w.t("", asOK("read_query", obj{"query": q}, egJSON(arr{obj{cols[i]: 0, "status": "pending"}})))
		}
		return playAs(w.run)
	}
	qs := []string{"SELECT count(*), status FROM orders WHERE status = 'pending'", "select COUNT(*), status from orders where status='pending'", "SELECT Count(*), status FROM orders WHERE status = 'pending'", "SELECT count( * ), status FROM orders WHERE status = 'pending'", "select count(*), status from orders where status = 'pending'"}
	if p := run(qs, []string{"count(*)", "COUNT(*)", "Count(*)", "count( * )", "count(*)"}); p.refusedAt != 3 || p.v.Detector != "rephrase" {
		t.Errorf("one count respelled: refused at %d (%v), want the fourth call", p.refusedAt, p.v)
	}
	if expressionKey([]byte("COUNT(*)"), 1) != expressionKey([]byte("count( * )"), 2) {
		t.Error("COUNT(*) and count( * ): two keys, want one")
	}
	for _, k := range []string{"Status", "total"} {
		if h := hashBytes([]byte(k)); expressionKey([]byte(k), h) != h {
			t.Errorf("%s: a key that is no expression was respelled", k)
		}
	}
	if expressionKey([]byte("sum(total)"), 1) == expressionKey([]byte("count(*)"), 1) {
		t.Error("sum(total) and count(*): one key, want two")
	}
}

// TestPatternWithoutStar: a file search's pattern without a star (.env,
// env) names what *.env and **/.env* name, so the fourth search for the
// same words that found nothing is refused; patterns of other words each
// finding nothing are candidates tried one by one, and go on.
func TestPatternWithoutStar(t *testing.T) {
	run := func(ps []string) asPlay {
		w := asRunOf("p", "filesystem", true)
		for _, p := range ps {
			w.t("", asOK("search_files", obj{"path": "/workspace/app", "pattern": p}, "No matches found"))
		}
		return playAs(w.run)
	}
	if p := run([]string{".env", "*.env", "**/.env*", "env", "ENV"}); p.refusedAt != 3 || p.v.Detector != "rephrase" {
		t.Errorf("one pattern respelled: refused at %d (%v), want the fourth call", p.refusedAt, p.v)
	}
	if p := run([]string{".env", "config.yaml", "settings.json", ".env.local", "secrets.toml", "app.ini"}); p.refusedAt >= 0 {
		t.Errorf("other patterns: refused at %d: %v", p.refusedAt, p.v)
	}
	same := [][2]string{{`{"pattern":".env"}`, `{"pattern":"*.env"}`}, {`{"filePattern":"env"}`, `{"filePattern":"**/.env*"}`}, {`{"glob":"Config.yaml"}`, `{"glob":"config.yaml"}`}}
	for _, p := range same {
		if foldArgs("t", []byte(p[0])) != foldArgs("t", []byte(p[1])) {
			t.Errorf("%s and %s: two questions, want one", p[0], p[1])
		}
	}
	differ := [][2]string{{`{"pattern":".env"}`, `{"pattern":".env.local"}`}, {`{"path":".env"}`, `{"path":"env"}`}, {`{"pattern":"v2"}`, `{"pattern":"v3"}`}}
	for _, p := range differ {
		if foldArgs("t", []byte(p[0])) == foldArgs("t", []byte(p[1])) {
			t.Errorf("%s and %s: one question, want two", p[0], p[1])
		}
	}
}

// TestClickSameRefRedescribed: one button clicked under the ref the page
// gave it, described in other words each time, the page the same after
// each, is the one write made again: the fifth click is refused, as it is
// for one description under renumbered refs. Links of one page clicked one
// by one (other refs), the page the same after each, go on.
func TestClickSameRefRedescribed(t *testing.T) {
	page := twPW("await page.getByRole('button', { name: 'Place order' }).click();", "https://shop.example/checkout", "Checkout", twCheckout("Please accept the terms to continue"))
	w := asRunOf("same-ref", "browser", true).acc("write", "browser_click")
	for _, d := range []string{"Place order button", "Place order", "the Place order button at the bottom of the form", "order submit button", "Place order (primary button)", "Place order"} {
		w.t("", asOK("browser_click", obj{"element": d, "ref": "e42"}, page))
	}
	if p := playAs(w.run); p.refusedAt != 4 || p.v.Detector != "short_cycle" {
		t.Errorf("one ref described otherwise: refused at %d (%v), want the fifth click", p.refusedAt, p.v)
	}
	w = asRunOf("links", "browser", false).acc("write", "browser_click")
	for i := 0; i < 6; i++ {
		w.t("", asOK("browser_click", obj{"element": fmt.Sprintf("Download the Q%d report link", i%4+1), "ref": fmt.Sprintf("e%d", 51+i)}, page))
	}
	if p := playAs(w.run); p.refusedAt >= 0 {
		t.Errorf("other links, the page the same: refused at %d: %v", p.refusedAt, p.v)
	}
}

// FuzzTwelfth: an answer's expression key, a pattern argument and a click
// by ref, whatever their bytes, never panic and fold the same way twice;
// an expression key folded is its own fold.
func FuzzTwelfth(f *testing.F) {
	f.Add([]byte("COUNT( * )"), []byte(".env"))
	f.Add([]byte("pattern"), []byte(`**\\/.env*`))
	f.Add([]byte("x("), []byte(`e42\"`))
	f.Fuzz(func(t *testing.T, k, v []byte) {
		h := hashBytes(k)
		a := expressionKey(k, h)
		if a != expressionKey(k, h) {
			t.Fatal("expressionKey differs on the same key")
		}
		if a != h {
			var low []byte
			for _, c := range k {
				if c == ' ' || c == '\t' {
					continue
				}
				if 'A' <= c && c <= 'Z' {
					c += 'a' - 'A'
				}
				low = append(low, c)
			}
			if expressionKey(low, hashBytes(low)) != a {
				t.Fatalf("%q: its fold %q folds otherwise", k, low)
			}
		}
		res := append(append([]byte(`[{"`), k...), `":0}]`...)
		var vol keyCache
		var scratch []byte
		if scanResult(res, nil, 16, &vol, &scratch, false).digest != scanResult(res, nil, 16, &vol, &scratch, false).digest {
			t.Fatal("scanResult differs on the same bytes")
		}
		for _, key := range []string{"pattern", "filePattern", "glob", "path"} {
			args := append(append([]byte(`{"`+key+`":"`), v...), `"}`...)
			if foldArgs("t", args) != foldArgs("t", args) {
				t.Fatal("foldArgs differs on the same bytes")
			}
		}
		d := New(nil)
		args := append(append([]byte(`{"element":"Place order button","ref":"`), v...), `"}`...)
		for i := 0; i < 6; i++ {
			s := &Step{Tool: "browser_click", Args: args, Access: "write"}
			if d.Check(s) != nil {
				break
			}
			d.Done(s, Outcome{Result: res})
		}
	})
}
