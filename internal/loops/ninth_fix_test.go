package loops

import (
	"fmt"
	"strings"
	"testing"
)

// The fixes the ninth probe asked for, each with a near-miss it must not
// refuse.

// A planner rewords one brief and its researcher asks the same question
// back each time, doing nothing: the third round is refused. Rewordings
// whose verdicts are the same acknowledgement ("Done."), or whose
// question changes, go on.
func TestAskedBackRounds(t *testing.T) {
	ask := "Which environment: production or staging? I have no host list."
	run := func(id string, verdicts ...string) asPlay {
		w := asRunOf(id, "multi-agent", false)
		tasks := []string{"Find our PgBouncer version.", "Check which PgBouncer version we run.", "What version of PgBouncer is deployed?", "Report the PgBouncer version in production."}
		for i, v := range verdicts {
			w.hand("", "researcher", tasks[i], v, nil)
		}
		return playAs(w.run)
	}
	if p := run("asked-back", ask, ask, ask, ask); p.refusedAt != 2 || p.v.Detector != "delegation" {
		t.Errorf("the same question asked back: refused at %d (%v), want the third hand-off", p.refusedAt, p.v)
	}
	if p := run("done", "Done.", "Done.", "Done.", "Done."); p.refusedAt >= 0 {
		t.Errorf("the same acknowledgement: refused at %d: %v", p.refusedAt, p.v)
	}
	if p := run("other-questions", ask, "Production has two proxies: which one?", "Is db-proxy-2 in scope too?", "PgBouncer 1.18.0 on db-proxy-1."); p.refusedAt >= 0 {
		t.Errorf("other questions each time: refused at %d: %v", p.refusedAt, p.v)
	}
	if p := run("url-query", "See https://docs.example.com/pgb?v=1 for it.", "See https://docs.example.com/pgb?v=1 for it.", "See https://docs.example.com/pgb?v=1 for it."); p.refusedAt >= 0 {
		t.Errorf("a verdict with a URL's query, no question: refused at %d: %v", p.refusedAt, p.v)
	}
}

// A vector store's answer names the query in its first line: the same
// passages found for a rewording are the same answer, and the fourth
// rewording is refused; rewordings that find other passages go on, and
// so does a query whose echo is the whole of a line.
func TestEchoInsideLine(t *testing.T) {
	run := func(id string, chunk func(i int) string, header string) asPlay {
		w := asRunOf(id, "research", false)
		for i, q := range []string{"refund for annual plans", "annual subscription refund", "can yearly plans be refunded", "refund policy annual", "annual plan money back"} {
			w.t("", asOK("qdrant-find", obj{"query": q}, fmt.Sprintf(header, q)+"\n<entry><content>"+chunk(i)+"</content></entry>\n<entry><content>Refunds go to the original payment method.</content></entry>"))
		}
		return playAs(w.run)
	}
	same := func(int) string { return "Annual plans are refunded pro rata after the first 30 days." }
	other := func(i int) string {
		return []string{"Annual plans are refunded pro rata.", "Yearly plans renew on the first day.", "Refund requests go through billing.", "Policy changes are announced 30 days ahead.", "Money-back guarantee: 14 days."}[i]
	}
	if p := run("same", same, "Results for the query '%s'"); p.refusedAt != 3 {
		t.Errorf("the same passages for each rewording: refused at %d (%v), want the fourth call", p.refusedAt, p.v)
	}
	if p := run("other", other, "Results for the query '%s'"); p.refusedAt >= 0 {
		t.Errorf("other passages each time: refused at %d: %v", p.refusedAt, p.v)
	}
	if p := run("alone", same, "%s"); p.refusedAt != 3 {
		t.Errorf("the query alone on its line: refused at %d (%v), want the fourth call", p.refusedAt, p.v)
	}
}

// A button described in words and clicked under the ref each snapshot
// gives it, the page the same but for its refs: the fifth click is
// refused (the fourth since loops16c: a click's page shows what it started
// only at the next call, so four answers alike see three clicks). Clicks
// whose page moves, and clicks on other elements, go on.
func TestClickUnderRenumberedRefs(t *testing.T) {
	const u = "https://shop.example.com/search?q=boots"
	run := func(id string, element func(i int) string, page func(i int) string) asPlay {
		w := asRunOf(id, "browser", false).acc("write", "browser_click")
		for i := 0; i < 5; i++ {
			w.t("", asOK("browser_click", obj{"element": element(i), "ref": fmt.Sprintf("e%d", 4+i*4)}, nnPW("await page.getByRole('button').click();", u, "boots", 5+i*4, "link \"Alto 2\"", page(i), "button \"Load more\"")))
		}
		return playAs(w.run)
	}
	same := func(int) string { return "link \"Ridge GTX\"" }
	more := func(i int) string { return fmt.Sprintf("link \"Boot %d\"", i) }
	button := func(int) string { return "Load more button" }
	others := func(i int) string {
		return []string{"Size 38 filter", "Size 39 filter", "Size 40 filter", "Size 41 filter", "Size 42 filter"}[i]
	}
	if p := run("noop", button, same); p.refusedAt != 4 || p.v.Detector != "short_cycle" {
		t.Errorf("the same click, the page unchanged: refused at %d (%v), want the fifth", p.refusedAt, p.v)
	}
	if p := run("loads", button, more); p.refusedAt >= 0 {
		t.Errorf("the same click, the page moving: refused at %d: %v", p.refusedAt, p.v)
	}
	if p := run("filters", others, same); p.refusedAt >= 0 {
		t.Errorf("other elements: refused at %d: %v", p.refusedAt, p.v)
	}
}

// The scratch buffer that cuts an echo out of a long line, or a ref out
// of long arguments, is not kept for the rest of the request.
func TestEchoScratchBounded(t *testing.T) {
	d := New(nil)
	q := "refund for annual plans"
	long := strings.Repeat("policy text ", 200)
	s := &Step{Tool: "qdrant-find", Args: []byte(canon(obj{"query": q})), Access: "read"}
	if v := d.Check(s); v != nil {
		t.Fatal(v)
	}
	d.Done(s, Outcome{Result: []byte(canon("Results for the query '" + q + "' " + long))})
	c := &Step{Tool: "browser_click", Args: []byte(canon(obj{"element": "Load more button", "ref": "e4", "note": long})), Access: "write"}
	if v := d.Check(c); v != nil {
		t.Fatal(v)
	}
	d.Done(c, Outcome{Result: []byte(canon("clicked"))})
	if n := cap(d.echoed); n > 1024 {
		t.Errorf("scratch of %d bytes kept", n)
	}
}

// One file read under its path respelled (./, //, ../, relative and
// absolute), the same content each time: the fourth read is refused.
// Files of one name in other directories, the same content in each, go
// on; so does one file read again after each edit.
func TestPathRespelled(t *testing.T) {
	const content = "queue:\n  workers: 4\n"
	run := func(id string, paths ...string) asPlay {
		w := asRunOf(id, "filesystem", false)
		for _, p := range paths {
			w.t("", asOK("read_text_file", obj{"path": p}, content))
		}
		return playAs(w.run)
	}
	if p := run("respelled", "config/app.yaml", "./config/app.yaml", "/srv/app/config/app.yaml", "/srv/app//config/app.yaml", "config/../config/app.yaml"); p.refusedAt != 3 {
		t.Errorf("one file respelled: refused at %d (%v), want the fourth read", p.refusedAt, p.v)
	}
	if p := run("services", "svc-a/config/app.yaml", "svc-b/config/app.yaml", "/srv/svc-c/config/app.yaml", "svc-d/config/app.yaml", "/srv/svc-e/config/app.yaml"); p.refusedAt >= 0 {
		t.Errorf("other directories: refused at %d: %v", p.refusedAt, p.v)
	}
	if p := run("other-roots", "/srv/a/config/app.yaml", "/srv/b/config/app.yaml", "/srv/c/config/app.yaml", "/srv/d/config/app.yaml"); p.refusedAt >= 0 {
		t.Errorf("absolute paths of other files: refused at %d: %v", p.refusedAt, p.v)
	}
}

func TestSameFile(t *testing.T) {
	for _, c := range []struct {
		a, b string
		same bool
	}{
		{"config/app.yaml", "./config/app.yaml", true},
		{"config/app.yaml", "/srv/app/config/app.yaml", true},
		{"/srv/app/config/app.yaml", "/srv/app//./config/app.yaml", true},
		{"config/../config/app.yaml", "config/app.yaml", true},
		{"deploy/", "/srv/app/deploy", true},
		{"/srv/a/app.yaml", "/srv/b/app.yaml", false},
		{"/app.yaml", "/srv/app.yaml", false},
		{"a/config/app.yaml", "b/config/app.yaml", false},
		{"../config/app.yaml", "config/app.yaml", false},
		{"https://x.example/a/b", "a/b", false},
		{"src/*.go", "/r/src/*.go", false},
	} {
		a, b := filePathOf([]byte(c.a)), filePathOf([]byte(c.b))
		if got := sameFile(&a, &b); got != c.same {
			t.Errorf("sameFile(%q, %q) = %v, want %v", c.a, c.b, got, c.same)
		}
	}
}
