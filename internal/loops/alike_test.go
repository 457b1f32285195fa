package loops

import (
	"bytes"
	"testing"
)

// playCalls plays one agent's reads of tool, each with its answer, a
// write to edit_file wherever a call's args are nil.
func playCalls(tool string, calls ...[2]any) asPlay {
	w := asRunOf("alike", "shell", false).acc("write", "edit_file")
	for _, c := range calls {
		if c[0] == nil {
			w.t("", asOK("edit_file", obj{"path": "src/cart.ts", "content": "fixed"}, "ok"))
			continue
		}
		w.t("", asOK(tool, c[0], c[1]))
	}
	return playAs(w.run)
}

// TestRespelledAnsweredAlike: a read's code written again in other words,
// each spelling answered as the one before it, is one question; the
// fourth spelling in words the streak already used is refused.
func TestRespelledAnsweredAlike(t *testing.T) {
	out := obj{"exitCode": 0, "stdout": "cart.ts\ncheckout.ts\n"}
	cmd := func(c string) obj { return obj{"command": c} }
	if p := playCalls("run_command",
		[2]any{cmd("ls -la src/lib"), out},
		[2]any{cmd("ls -la /home/dev/shop/src/lib"), out},
		[2]any{cmd("find src/lib -maxdepth 1"), out},
		[2]any{cmd("ls src/lib -l"), out},
	); p.refusedAt != 3 || p.v == nil || p.v.Detector != "rephrase" {
		t.Errorf("one directory respelled: refused at %d (%v), want the fourth call", p.refusedAt, p.v)
	}
	empty := arr{}
	sql := func(q string) obj { return obj{"sql": q} }
	if p := playCalls("query",
		[2]any{sql("SELECT id FROM orders WHERE status = 'late' LIMIT 50"), empty},
		[2]any{sql("select id from orders where status='late' limit 100"), empty},
		[2]any{sql("SELECT o.id FROM orders o WHERE o.status = 'late' ORDER BY id"), empty},
		[2]any{sql("select id from orders where status = 'late'"), empty},
	); p.refusedAt != 3 {
		t.Errorf("a query respelled over the same empty answer: refused at %d (%v), want the fourth", p.refusedAt, p.v)
	}
	if p := playCalls("query",
		[2]any{sql("SELECT id FROM orders WHERE status = 'late' LIMIT 50"), empty},
		[2]any{sql("select id from orders where status='late' limit 100"), empty},
		[2]any{sql("SELECT o.id FROM orders o WHERE o.status = 'late' ORDER BY id"), empty},
		[2]any{sql("SELECT o.id FROM public.orders AS o WHERE o.status = 'late'"), empty},
	); p.refusedAt != 3 {
		t.Errorf("a query with its default schema: refused at %d (%v), want the fourth", p.refusedAt, p.v)
	}
	for _, c := range []struct{ in, want string }{
		{"SELECT * FROM public.orders", "SELECT * FROM orders"},
		{"select * from PUBLIC.t join public.u on t.id = u.id", "select * from t join u on t.id = u.id"},
		{"SELECT republic.x FROM republic", "SELECT republic.x FROM republic"},
		{"SELECT 'public.'", "SELECT 'public.'"},
	} {
		if got := string(defaultSchema([]byte(c.in), make([]byte, 0, 512))); got != c.want {
			t.Errorf("defaultSchema(%q) = %q, want %q", c.in, got, c.want)
		}
	}
	// An instruction reworded over one input, answered alike; the same
	// instruction over other inputs, or a classifier's texts, go on.
	tr := func(ctx, text string) obj {
		return obj{"context": ctx, "target_lang": "DE", "text": text}
	}
	de := obj{"translations": arr{obj{"text": "Bewahren Sie den Beleg auf."}}}
	if p := playCalls("translate_text",
		[2]any{tr("Make it more formal.", "Keep the receipt."), de},
		[2]any{tr("Use a formal register.", "Keep the receipt."), de},
		[2]any{tr("Formal, please: this is for customers.", "Keep the receipt."), de},
		[2]any{tr("More polite, formal German.", "Keep the receipt."), de},
	); p.refusedAt != 3 {
		t.Errorf("an instruction reworded: refused at %d (%v), want the fourth", p.refusedAt, p.v)
	}
	var reviews [][2]any
	for _, r := range []string{"Great phone, battery lasts days", "Screen cracked in a week, awful", "Fine value for the money overall", "Shipping slow but item is good", "Would buy this again for sure"} {
		reviews = append(reviews, [2]any{obj{"instructions": "Label the review's sentiment.", "text": r}, obj{"label": "mixed", "confidence": "high"}})
	}
	if p := playCalls("classify", reviews...); p.refusedAt >= 0 {
		t.Errorf("a classifier's reviews: refused at %d: %v", p.refusedAt, p.v)
	}
	prom := func(e string) obj { return obj{"expr": e, "start": "now-1h"} }
	noData := obj{"result": arr{}, "resultType": "matrix"}
	if p := playCalls("query_prometheus",
		[2]any{prom(`up{job="api"}`), noData},
		[2]any{prom(`up{job='api'}`), noData},
		[2]any{prom(`sum(up{job="api"})`), noData},
		[2]any{prom(`up{job=~"api"}`), noData},
	); p.refusedAt != 3 {
		t.Errorf("a selector respelled with =~: refused at %d (%v), want the fourth", p.refusedAt, p.v)
	}
	var jobs [][2]any
	for _, j := range []string{"api", "web", "worker", "cron", "api-canary"} {
		jobs = append(jobs, [2]any{prom(`up{job=~"` + j + `"}`), noData})
	}
	if p := playCalls("query_prometheus", jobs...); p.refusedAt >= 0 {
		t.Errorf("other jobs, no data: refused at %d: %v", p.refusedAt, p.v)
	}
	// Values, each bound to its key: a search whose spellings are each
	// one asked before, answered alike (two rooms full whatever the
	// guests or the rate).
	full := obj{"rooms": arr{obj{"type": "double", "available": 0}, obj{"type": "twin", "available": 0}}}
	stay := func(guests int, flex bool) obj {
		o := obj{"hotel_id": "HTL-LIS-0412", "checkin": "2026-12-18", "checkout": "2026-12-20", "guests": guests}
		if flex {
			o["flexible_rate"] = true
		}
		return o
	}
	if p := playCalls("check_availability",
		[2]any{stay(2, false), full}, [2]any{stay(3, true), full}, [2]any{stay(2, false), full}, [2]any{stay(3, false), full},
	); p.refusedAt != 3 {
		t.Errorf("a stay asked again in spellings used: refused at %d (%v), want the fourth", p.refusedAt, p.v)
	}
	// Legit: a grid, row by seat, each seat answered alike.
	var seats [][2]any
	for r := 1; r <= 3; r++ {
		for c := 1; c <= 3; c++ {
			seats = append(seats, [2]any{obj{"row": r, "seat": c}, obj{"class": "standard", "taken": true}})
		}
	}
	if p := playCalls("seat_status", seats...); p.refusedAt >= 0 {
		t.Errorf("a grid of seats: refused at %d: %v", p.refusedAt, p.v)
	}

	// Legit: the same file of several sites, answering alike.
	conf := "server:\n  port: 8080\n  workers: 4\n"
	var sites [][2]any
	for _, s := range []string{"shop", "blog", "docs", "api", "admin", "status"} {
		sites = append(sites, [2]any{cmd("cat /srv/" + s + "/current/config.yaml"), conf})
	}
	if p := playCalls("run_command", sites...); p.refusedAt >= 0 {
		t.Errorf("one file of several sites: refused at %d: %v", p.refusedAt, p.v)
	}
	// Legit: a product of two batches, all empty: each call pairs a
	// table and a value no earlier call paired.
	if p := playCalls("query",
		[2]any{sql("SELECT * FROM invoices WHERE customer = 'acme'"), empty},
		[2]any{sql("SELECT * FROM refunds WHERE customer = 'globex'"), empty},
		[2]any{sql("SELECT * FROM invoices WHERE customer = 'globex'"), empty},
		[2]any{sql("SELECT * FROM refunds WHERE customer = 'acme'"), empty},
	); p.refusedAt >= 0 {
		t.Errorf("two batches crossed: refused at %d: %v", p.refusedAt, p.v)
	}
	// Legit: many files, all empty.
	var files [][2]any
	for _, f := range []string{"a.log", "b.log", "c.log", "d.log", "e.log"} {
		files = append(files, [2]any{obj{"path": "logs/" + f}, ""})
	}
	if p := playCalls("read_file", files...); p.refusedAt >= 0 {
		t.Errorf("empty files: refused at %d: %v", p.refusedAt, p.v)
	}
	// Legit: a test run respelled after a real edit.
	fail := obj{"exitCode": 1, "stderr": "FAIL cart.test.ts\nExpected: 90\nReceived: 100"}
	if p := playCalls("run_command",
		[2]any{cmd("npm test"), fail},
		[2]any{cmd("npm run test"), fail},
		[2]any{cmd("npx jest"), fail},
		[2]any{nil, nil},
		[2]any{cmd("npm test -- --silent"), fail},
	); p.refusedAt >= 0 {
		t.Errorf("a test run after an edit: refused at %d: %v", p.refusedAt, p.v)
	}
	// Legit: the same spelling again is repeat's to judge (two
	// answers alike, then another): a poll that finishes.
	if p := playCalls("run_command",
		[2]any{cmd("kubectl get pods -l app=api"), "api-1 Pending"},
		[2]any{cmd("kubectl get pods -l app=api -o wide"), "api-1 Pending"},
		[2]any{cmd("kubectl get pods --selector app=api"), "api-1 Pending"},
		[2]any{cmd("kubectl get pods -l app=api"), "api-1 Running"},
	); p.refusedAt >= 0 {
		t.Errorf("a poll asked again in a spelling used: refused at %d: %v", p.refusedAt, p.v)
	}
}

// TestSecondsAfterASpace: a time with a fraction and a space before its
// unit of seconds ("Time: 2.341 s", a test runner's) is said anew at each
// run, as "2.341s" is; a count before a unit that is no time, or without
// a fraction, stays.
func TestSecondsAfterASpace(t *testing.T) {
	run := func(d string) string { return "Tests: 1 failed, 23 passed, 24 total\nTime:        " + d }
	for _, c := range []struct {
		a, b string
		same bool
	}{
		{run("2.341 s"), run("3.438 s"), true},
		{run("0.52 ms"), run("0.61 ms"), true},
		{run("2.341 s, estimated 3 s"), run("3.438 s, estimated 3 s"), true},
		{"length 2.5 m", "length 3.5 m", false},
		{"moved 3 s", "moved 4 s", false},
		{"grade 2.5 stars", "grade 3.5 stars", false},
	} {
		if got := maskedHash([]byte(c.a)) == maskedHash([]byte(c.b)); got != c.same {
			t.Errorf("%q and %q alike: %v, want %v", c.a, c.b, got, c.same)
		}
	}
}

// BenchmarkCheckDoneAlike measures Check and Done of a batch whose every
// call is answered alike (health checks of 4096 hosts, each "healthy"):
// the alike streak stays on, and each call's words are read. A request
// checks each host once.
func BenchmarkCheckDoneAlike(b *testing.B) {
	steps := make([]Step, 4096)
	for i := range steps {
		steps[i] = Step{Agent: "main", Tool: "check_host", Access: "read",
			Args: []byte(`{"host":"web-` + itoa(int64(i)) + `.internal","port":443}`)}
	}
	res := []byte(`{"status":"healthy","checks":["tcp","tls","http"],"note":"all probes passed"}`)
	d := New(nil)
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		if i%len(steps) == 0 && i > 0 {
			d = New(nil) // a host checked again is no_progress's to judge
		}
		s := &steps[i%len(steps)]
		if v := d.Check(s); v != nil {
			b.Fatalf("call %d refused: %s %s", i, v.Detector, v.Message)
		}
		d.Done(s, Outcome{Result: res})
		i++
	}
}

// FuzzDefaultSchema: the cut never grows code, leaves code without
// "public." as it is, and leaves nothing of a "public." it cut.
func FuzzDefaultSchema(f *testing.F) {
	f.Add([]byte("SELECT * FROM public.orders o JOIN PUBLIC.u ON o.id = u.id"))
	f.Add([]byte("public."))
	f.Add([]byte("(public.a,public.b)"))
	f.Fuzz(func(t *testing.T, v []byte) {
		out := defaultSchema(v, nil)
		if len(out) > len(v) {
			t.Fatalf("%q grew to %q", v, out)
		}
		if !bytes.Contains(bytes.ToLower(v), []byte("public.")) && !bytes.Equal(out, v) {
			t.Fatalf("%q changed to %q", v, out)
		}
	})
}
