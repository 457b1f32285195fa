package loops

import (
	"fmt"
	"strings"
)

// lrFile is a source file's text at one version: the lines that stay and
// the one that the edits change.
func lrFile(name string, version int) string {
	var b strings.Builder
	fmt.Fprintf(&b, "package %s\n\nimport \"strings\"\n\n", strings.TrimSuffix(name, ".go"))
	for i := 0; i < 6; i++ {
		fmt.Fprintf(&b, "func helper%d(s string) string { return strings.Repeat(s, %d) }\n", i, i+1)
	}
	fmt.Fprintf(&b, "\nfunc limit() int { return %d }\n", 10+version)
	return b.String()
}

func lrTests(failing []string) string {
	var b strings.Builder
	b.WriteString("ok  \texample.com/app/store\t0.12s\nok  \texample.com/app/auth\t0.31s\n")
	for _, f := range failing {
		fmt.Fprintf(&b, "--- FAIL: %s\nFAIL\texample.com/app/cache\n", f)
	}
	if len(failing) == 0 {
		b.WriteString("ok  \texample.com/app/cache\t0.44s\n")
	}
	return b.String()
}

func lrRows(n, salt int) []map[string]any {
	var rows []map[string]any
	for i := 0; i < n; i++ {
		rows = append(rows, map[string]any{"id": 1000 + salt*37 + i, "total": float64(20+i*7+salt) + 0.5, "region": []string{"EU", "US", "APAC"}[i%3]})
	}
	return rows
}

func lrDocs(topic string, n, from int) []map[string]any {
	var docs []map[string]any
	for i := 0; i < n; i++ {
		docs = append(docs, map[string]any{"title": fmt.Sprintf("%s, part %d", topic, from+i), "url": fmt.Sprintf("https://docs.example.org/%s/%d", strings.ReplaceAll(strings.ToLower(topic), " ", "-"), from+i)})
	}
	return docs
}

func lrSnapshot(page string, items []string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "- document \"%s\"\n  - heading \"%s\" [ref=h1]\n  - navigation [ref=nav]\n", page, page)
	for i, it := range items {
		fmt.Fprintf(&b, "  - listitem \"%s\" [ref=li%d]\n", it, i)
	}
	b.WriteString("  - button \"Load more\" [ref=more]\n")
	return b.String()
}

func longRuns() []*lrRun {
	var out []*lrRun
	add := func(b *lrb) { out = append(out, b.r) }
	files := []string{"cache.go", "evict.go", "store.go", "config.go", "metrics.go", "util.go"}

	// --- a coding agent ----------------------------------------------------

	// Ten failures fixed one after another: each run of the tests fails in
	// another test; the file is re-read after each edit.
	{
		b := longRun("coder-fixes-one-by-one", "coding", false).writes("edit_file")
		b.do("Let me look at the layout.", "list_dir", `{"path":"."}`, map[string]any{"entries": files})
		for _, f := range files {
			b.do("Reading "+f+".", "read_file", map[string]any{"path": f}, lrFile(f, 0))
		}
		for _, term := range []string{"limit()", "helper3", "Evict", "TTL"} {
			b.do("Searching for "+term+".", "grep", map[string]any{"pattern": term, "path": "."}, fmt.Sprintf("cache.go:14: %s used here\nevict.go:9: %s", term, term))
		}
		for i := 0; i < 10; i++ {
			var failing []string
			for j := i; j < 10; j++ {
				failing = append(failing, fmt.Sprintf("TestCache/case_%02d (0.00s)\n    cache_test.go:%d: got %d, want %d", j, 40+j, j, j+1))
			}
			b.do("Running the tests.", "run_tests", `{"pkg":"./..."}`, lrTests(failing))
			f := files[i%len(files)]
			b.do("The failure points at "+f+".", "read_file", map[string]any{"path": f}, lrFile(f, i))
			b.do("Fixing case "+fmt.Sprint(i)+".", "edit_file", map[string]any{"path": f, "old": fmt.Sprintf("return %d", 10+i), "new": fmt.Sprintf("return %d", 11+i)}, `{"ok":true}`)
			b.do("Checking the edit.", "read_file", map[string]any{"path": f}, lrFile(f, i+1))
		}
		b.do("All green?", "run_tests", `{"pkg":"./..."}`, lrTests(nil))
		add(b)
	}

	// The same failure after edits that each taught something: the agent adds
	// logging, reads the log, edits elsewhere; the test output does not change
	// until the fourth edit.
	{
		b := longRun("coder-same-failure-while-learning", "coding", false).writes("edit_file")
		fail := lrTests([]string{"TestEvict (0.01s)\n    evict_test.go:31: 3 entries left, want 2"})
		b.do("Reproducing.", "run_tests", `{"pkg":"./cache","run":"TestEvict"}`, fail)
		for i, f := range []string{"evict.go", "cache.go", "store.go", "config.go"} {
			b.do("Reading "+f+".", "read_file", map[string]any{"path": f}, lrFile(f, 0))
			b.do("Adding a log line to "+f+".", "edit_file", map[string]any{"path": f, "old": "import \"strings\"", "new": fmt.Sprintf("import (\"log\"; \"strings\") // probe %d", i)}, `{"ok":true}`)
			out := fail
			if i == 3 {
				out = lrTests(nil)
			}
			b.do("Again.", "run_tests", `{"pkg":"./cache","run":"TestEvict"}`, out+fmt.Sprintf("\nlog: evict pass %d saw %d entries", i, 5-i))
			b.do("Reading the debug log.", "read_file", map[string]any{"path": "debug.log"}, fmt.Sprintf("evict: scanned shard %d\nevict: kept key k%d (pinned)\n", i, i*7))
		}
		add(b)
	}

	// Many greps for different terms, most finding nothing, some finding
	// lines already read.
	{
		b := longRun("coder-many-greps", "coding", false)
		for _, f := range files {
			b.do("Reading "+f+".", "read_file", map[string]any{"path": f}, lrFile(f, 0))
		}
		terms := []string{"mutex", "sync.Map", "atomic", "context.Context", "time.After", "ticker", "goroutine", "chan struct", "WaitGroup", "errgroup", "select {", "defer", "panic(", "recover()", "os.Exit", "log.Fatal", "TODO", "FIXME", "XXX", "deprecated"}
		for i, term := range terms {
			res := "no matches"
			if i%4 == 0 {
				res = fmt.Sprintf("cache.go:%d: func helper%d(s string) string { return strings.Repeat(s, %d) }", 5+i%6, i%6, i%6+1)
			}
			b.do("Is there any "+term+"?", "grep", map[string]any{"pattern": term, "path": "."}, res)
		}
		add(b)
	}

	// Two edits undone and redone, the same two failures each time.
	{
		b := longRun("coder-oscillating-edits", "coding", true).writes("edit_file")
		b.do("Reading.", "read_file", `{"path":"evict.go"}`, lrFile("evict.go", 0))
		fa := lrTests([]string{"TestEvict (0.00s)\n    evict_test.go:31: 3 entries left, want 2"})
		fb := lrTests([]string{"TestEvictPinned (0.00s)\n    evict_test.go:52: pinned key evicted"})
		for round := 0; round < 6; round++ {
			if round == 2 {
				b.from()
			}
			b.do("Use <= in the eviction check.", "edit_file", `{"path":"evict.go","old":"if n < max","new":"if n <= max"}`, `{"ok":true}`)
			b.do("Testing.", "run_tests", `{"pkg":"./cache"}`, fb)
			b.do("That broke pinned keys, going back to <.", "edit_file", `{"path":"evict.go","old":"if n <= max","new":"if n < max"}`, `{"ok":true}`)
			b.do("Testing.", "run_tests", `{"pkg":"./cache"}`, fa)
		}
		add(b)
	}

	// The same oscillation with a read of the file in each half: a period of
	// six calls.
	{
		b := longRun("coder-oscillating-edits-with-reads", "coding", true).writes("edit_file")
		fa := lrTests([]string{"TestEvict (0.00s)\n    evict_test.go:31: 3 entries left, want 2"})
		fb := lrTests([]string{"TestEvictPinned (0.00s)\n    evict_test.go:52: pinned key evicted"})
		for round := 0; round < 6; round++ {
			if round == 2 {
				b.from()
			}
			b.do("Let me look again.", "read_file", `{"path":"evict.go"}`, lrFile("evict.go", 0))
			b.do("Use <= in the eviction check.", "edit_file", `{"path":"evict.go","old":"if n < max","new":"if n <= max"}`, `{"ok":true}`)
			b.do("Testing.", "run_tests", `{"pkg":"./cache"}`, fb)
			b.do("Reading it once more.", "read_file", `{"path":"evict.go"}`, lrFile("evict.go", 1))
			b.do("Going back to <.", "edit_file", `{"path":"evict.go","old":"if n <= max","new":"if n < max"}`, `{"ok":true}`)
			b.do("Testing.", "run_tests", `{"pkg":"./cache"}`, fa)
		}
		add(b)
	}

	// A command retried with another timeout and other flags, failing the
	// same way each time.
	for _, timed := range []bool{false, true} {
		id := "coder-retry-flags-same-failure"
		if timed {
			id += "-timed"
		}
		b := longRun(id, "coding", true)
		b.do("Reading the test.", "read_file", `{"path":"evict_test.go"}`, lrFile("evict_test.go", 0))
		flags := []string{"-timeout 30s", "-timeout 60s", "-timeout 120s", "-timeout 300s", "-count=1", "-count=1 -v", "-count=1 -v -race", "-timeout 600s -count=1"}
		for i, f := range flags {
			if i == 2 {
				b.from()
			}
			out := "--- FAIL: TestEvict (0.00s)\n    evict_test.go:31: 3 entries left, want 2\nFAIL\nFAIL\texample.com/app/cache\n"
			if timed {
				out = strings.TrimSuffix(out, "\n") + fmt.Sprintf("\t0.%02ds\n", 31+i*3)
			}
			b.do("Maybe it needs more time.", "run_command", map[string]any{"command": "go test ./cache -run TestEvict " + f}, map[string]any{"exit_code": 1, "output": out})
		}
		add(b)
	}

	// A command retried with other options, none of them a widening, that
	// fails the same way each time.
	{
		b := longRun("coder-retry-options-same-failure", "coding", true)
		out := map[string]any{"exit_code": 1, "output": "--- FAIL: TestEvict (0.00s)\n    evict_test.go:31: 3 entries left, want 2\nFAIL\nFAIL\texample.com/app/cache\n"}
		for i, o := range []string{"-v", "-race", "-count=1", "-failfast", "-shuffle=on", "-v -race -count=1"} {
			if i == 2 {
				b.from()
			}
			b.do("Maybe it is flaky; trying "+o+".", "run_command", map[string]any{"command": "go test ./cache -run TestEvict " + o}, out)
		}
		add(b)
	}

	// The same health check on twelve hosts, each answering alike.
	{
		b := longRun("coder-health-checks-alike", "coding", false)
		for i := 0; i < 12; i++ {
			b.do("Next host.", "run_command", map[string]any{"command": fmt.Sprintf("curl -s --max-time 5 https://web-%02d.internal/healthz", i)}, `{"exit_code":0,"output":"status: ok\nversion: 1.4.2\nchecks: db cache queue\n"}`)
		}
		add(b)
	}

	// --- a browsing agent --------------------------------------------------

	// A screenshot after each distinct action, the page changing.
	{
		b := longRun("browser-screenshot-after-each-action", "browsing", false).writes("browser_click", "browser_navigate", "browser_type")
		b.do("Opening the shop.", "browser_navigate", `{"url":"https://shop.example.com"}`, `"Navigated to https://shop.example.com"`)
		for i := 0; i < 20; i++ {
			page := fmt.Sprintf("Product %d", i)
			b.do("Opening the next product.", "browser_click", map[string]any{"element": page, "ref": fmt.Sprintf("li%d", i)}, `"Clicked"`)
			b.do("Let me see it.", "browser_snapshot", `{}`, lrSnapshot(page, []string{fmt.Sprintf("Price %d.99", 10+i), "In stock"}))
			b.do("Taking a screenshot.", "browser_take_screenshot", `{}`, map[string]any{"image": fmt.Sprintf("data:image/png;base64,iVBORw0KGgo%08x", i*7919+13), "width": 1280, "height": 720})
			b.do("Back to the list.", "browser_navigate_back", `{}`, `"Navigated back"`)
		}
		add(b)
	}

	// A feed scrolled page after page, new items each time.
	{
		b := longRun("browser-scroll-feed", "browsing", false).writes("browser_scroll")
		for i := 0; i < 25; i++ {
			var items []string
			for j := 0; j < 4; j++ {
				items = append(items, fmt.Sprintf("Post %d by user%d", i*4+j, (i*4+j)%9))
			}
			b.do("Scrolling.", "browser_scroll", `{"direction":"down","amount":800}`, `"Scrolled"`)
			b.do("Reading.", "browser_snapshot", `{}`, lrSnapshot("Feed", items))
		}
		add(b)
	}

	// A browser tool declared read, pages read one after another, the same
	// screenshot text after each (an image it cannot see).
	{
		b := longRun("browser-read-pages-screenshot-ack", "browsing", false)
		for i := 0; i < 15; i++ {
			b.do("Reading the next result.", "fetch_page", map[string]any{"url": fmt.Sprintf("https://news.example.com/story/%d", 300+i)}, fmt.Sprintf("Story %d\nThe council voted %d to %d on the budget.", 300+i, 5+i%3, 4-i%3))
			b.do("Screenshot for the report.", "capture", map[string]any{"url": fmt.Sprintf("https://news.example.com/story/%d", 300+i)}, `"Screenshot captured and attached to the report"`)
		}
		add(b)
	}

	// A page that does not change: load more, snapshot, scroll, snapshot.
	{
		b := longRun("browser-page-does-not-change", "browsing", true).writes("browser_click", "browser_scroll")
		snap := lrSnapshot("Results", []string{"Result 1", "Result 2", "Result 3"})
		b.do("Opening.", "browser_snapshot", `{}`, snap)
		for round := 0; round < 6; round++ {
			if round == 2 {
				b.from()
			}
			b.do("Loading more.", "browser_click", `{"element":"Load more","ref":"more"}`, `"Clicked"`)
			b.do("Did it load?", "browser_snapshot", `{}`, snap)
			b.do("Scrolling down instead.", "browser_scroll", `{"direction":"down"}`, `"Scrolled"`)
			b.do("Now?", "browser_snapshot", `{}`, snap)
		}
		add(b)
	}

	// The same, with the click's element described in other words each time
	// (the model rewords what it clicks; the page stays).
	{
		b := longRun("browser-page-does-not-change-reworded-clicks", "browsing", true).writes("browser_click")
		snap := lrSnapshot("Results", []string{"Result 1", "Result 2", "Result 3"})
		b.do("Opening.", "browser_snapshot", `{}`, snap)
		for i, el := range []string{"Load more", "Load more button", "the Load more button at the bottom", "button labelled Load more", "Load more results", "more results button", "Load more (again)", "Show more"} {
			if i == 2 {
				b.from()
			}
			b.do("Trying to load more.", "browser_click", map[string]any{"element": el, "ref": "more"}, `"Clicked"`)
			b.do("Did it load?", "browser_snapshot", `{}`, snap)
		}
		add(b)
	}

	// --- a SQL agent -------------------------------------------------------

	// Schema once, queries refined with new rows each time, the schema read
	// again after a migration, quality checks of fifteen tables each 0.
	{
		b := longRun("sql-analyst", "sql", false).writes("execute")
		tables := []string{"orders", "customers", "items", "payments", "refunds", "shipments", "regions", "products", "suppliers", "invoices", "coupons", "carts", "reviews", "returns", "taxes"}
		b.do("Which tables are there?", "list_tables", `{}`, map[string]any{"tables": tables})
		for _, t := range tables[:5] {
			b.do("Schema of "+t+".", "describe_table", map[string]any{"table": t}, map[string]any{"columns": []string{"id", t[:len(t)-1] + "_total", "created_at", "region"}})
		}
		for i := 0; i < 12; i++ {
			b.do("Refining.", "query", map[string]any{"sql": fmt.Sprintf("SELECT id, total, region FROM orders WHERE total > %d ORDER BY total LIMIT 20", 20+i*15)}, map[string]any{"rows": lrRows(5, i)})
		}
		b.do("Adding the column we need.", "execute", `{"sql":"ALTER TABLE orders ADD COLUMN channel text"}`, `{"ok":true}`)
		b.do("Schema again after the migration.", "describe_table", `{"table":"orders"}`, map[string]any{"columns": []string{"id", "order_total", "created_at", "region", "channel"}})
		for _, t := range tables {
			b.do("Null ids in "+t+"?", "query", map[string]any{"sql": "SELECT count(*) AS n FROM " + t + " WHERE id IS NULL"}, `{"rows":[{"n":0}]}`)
		}
		add(b)
	}

	// A query grown a clause at a time, the same rows each time.
	{
		b := longRun("sql-growing-query", "sql", true)
		b.do("Schema.", "describe_table", `{"table":"orders"}`, `{"columns":["id","total","region","status"]}`)
		base := "SELECT id, total, region FROM orders WHERE status = 'late'"
		clauses := []string{"", " AND total > 0", " AND region IS NOT NULL", " AND id IS NOT NULL", " AND total < 100000", " AND status <> 'void'", " ORDER BY total DESC", " LIMIT 500"}
		q := base
		rows := map[string]any{"rows": lrRows(6, 1)}
		for i, c := range clauses {
			q += c
			if i == 2 {
				b.from()
			}
			b.do("Let me make sure nothing is missed.", "query", map[string]any{"sql": q}, rows)
		}
		add(b)
	}

	// The same query reshuffled: columns and conditions in another order.
	{
		b := longRun("sql-reshuffled-query", "sql", true)
		qs := []string{
			"SELECT id, total, region FROM orders WHERE status = 'late' AND region = 'EU'",
			"SELECT total, id, region FROM orders WHERE region = 'EU' AND status = 'late'",
			"SELECT region, id, total FROM orders WHERE status='late' AND region='EU'",
			"select id, region, total from orders where region = 'EU' and status = 'late'",
			"SELECT o.id, o.total, o.region FROM orders o WHERE o.status = 'late' AND o.region = 'EU'",
			"SELECT id, total, region FROM orders WHERE (status = 'late') AND (region = 'EU')",
		}
		rows := map[string]any{"rows": lrRows(6, 2)}
		for i, q := range qs {
			if i == 2 {
				b.from()
			}
			b.do("That cannot be all of them; let me write it differently.", "query", map[string]any{"sql": q}, rows)
		}
		add(b)
	}

	// The schema looked up again and again between queries that fail on a
	// column that is not there.
	{
		b := longRun("sql-schema-again", "sql", true)
		schema := `{"columns":["id","total","region","status","customer_id"]}`
		cols := []string{"customer", "customer_name", "cust_name", "client", "buyer", "name"}
		for i, c := range cols {
			if i == 2 {
				b.from()
			}
			b.do("Checking the schema.", "describe_table", `{"table":"orders"}`, schema)
			b.fail("Querying by "+c+".", "query", map[string]any{"sql": "SELECT id, " + c + " FROM orders LIMIT 10"}, "invalid_args", fmt.Sprintf("ERROR: column \"%s\" does not exist", c))
		}
		add(b)
	}

	// --- a research agent ---------------------------------------------------

	// Fifteen subtopics searched, two sources opened each, each summarised.
	{
		b := longRun("research-survey", "research", false)
		topics := []string{"battery recycling", "sodium ion cells", "solid state electrolytes", "lithium supply", "cobalt free cathodes", "grid storage", "second life packs", "thermal runaway", "fast charging", "cell to pack", "silicon anodes", "recycling policy", "hydrometallurgy", "direct recycling", "battery passports"}
		for i, t := range topics {
			docs := lrDocs(t, 3, 1)
			b.do("Searching "+t+".", "web_search", map[string]any{"query": t + " 2026 review"}, map[string]any{"results": docs})
			for j := 0; j < 2; j++ {
				b.do("Opening a source.", "fetch_url", map[string]any{"url": docs[j]["url"]}, fmt.Sprintf("%s\nFinding %d: capacity up %d%% over two years.", docs[j]["title"], i*2+j, 3+i+j))
			}
			b.do("Summarising.", "summarize", map[string]any{"text": fmt.Sprintf("notes on %s from two sources", t), "max_words": 60}, fmt.Sprintf("%s: two sources agree capacity rose %d%%.", t, 3+i))
		}
		add(b)
	}

	// Rewordings that share words, the same five documents each time, while
	// the model apologises in new words.
	{
		b := longRun("research-apology-rewordings", "research", true)
		docs := map[string]any{"results": lrDocs("Cancel a subscription", 5, 1)}
		asks := []string{"how to cancel subscription before renewal", "cancel my subscription renewal", "subscription cancellation steps", "stop subscription from renewing", "cancel subscription renewal refund", "subscription renewal cancel online"}
		says := []string{"Let me look that up.", "Sorry, that was not it; trying again.", "Apologies, let me rephrase.", "My apologies, one more try.", "I am sorry for the trouble; searching again.", "Apologies again."}
		for i, q := range asks {
			if i == 3 {
				b.from()
			}
			b.do(says[i], "search_kb", map[string]any{"query": q}, docs)
		}
		add(b)
	}

	// Synonym-only rewordings: no word in common with each other nor with
	// the documents, the same five documents each time.
	{
		b := longRun("research-synonym-rewordings", "research", true)
		docs := map[string]any{"results": []map[string]any{
			{"title": "Account closure", "url": "https://help.example.com/a/101"},
			{"title": "Billing FAQ", "url": "https://help.example.com/a/102"},
			{"title": "Plans and pricing", "url": "https://help.example.com/a/103"},
			{"title": "Data export", "url": "https://help.example.com/a/104"},
			{"title": "Contact support", "url": "https://help.example.com/a/105"},
		}}
		asks := []string{"terminate membership", "end automatic renewal", "quit paid tier", "halt recurring charges", "stop auto renew", "discontinue premium"}
		for i, q := range asks {
			if i == 3 {
				b.from()
			}
			b.do("Trying other words.", "search_kb", map[string]any{"query": q}, docs)
		}
		add(b)
	}

	// Paging with a cursor that comes back to the first page.
	{
		b := longRun("research-cursor-comes-back", "research", true)
		pages := []string{"", "c2", "c3"}
		for round := 0; round < 4; round++ {
			for p, cur := range pages {
				if round == 2 && p == 0 {
					b.from()
				}
				next := pages[(p+1)%3]
				b.do("Next page.", "list_results", map[string]any{"query": "heat pumps", "cursor": cur}, map[string]any{"items": lrDocs("Heat pumps", 3, p*3+1), "next_cursor": next})
			}
		}
		add(b)
	}

	// --- a support agent on a ticketing API ----------------------------------

	// Thirty tickets: read, commented, updated; every write answers ok.
	{
		b := longRun("support-ticket-batch", "support", false).writes("add_comment", "update_ticket")
		for i := 0; i < 30; i++ {
			id := fmt.Sprintf("T-%d", 5100+i)
			b.do("Next ticket.", "get_ticket", map[string]any{"id": id}, map[string]any{"id": id, "subject": fmt.Sprintf("Login issue %d", i), "status": "open"})
			b.do("Replying.", "add_comment", map[string]any{"id": id, "body": "We reset your session; please log in again."}, `{"ok":true}`)
			b.do("Marking pending.", "update_ticket", map[string]any{"id": id, "status": "pending"}, `{"ok":true,"status":"pending"}`)
		}
		add(b)
	}

	// Twenty-five customers looked up by e-mail, none found.
	{
		b := longRun("support-lookups-not-found", "support", false)
		for i := 0; i < 25; i++ {
			b.do("Looking the sender up.", "find_customer", map[string]any{"email": fmt.Sprintf("user%d@mail.example.net", 40+i)}, `{"customers":[],"message":"No customer matches this email address"}`)
			if i%5 == 4 {
				b.fail("By id then.", "get_customer", map[string]any{"id": fmt.Sprintf("C-%d", 900+i)}, "not_found", "customer not found")
			}
		}
		add(b)
	}

	// An export job polled: the status text stays, the progress moves (by
	// one or two points).
	{
		b := longRun("support-export-polling", "support", false)
		b.do("Starting the export.", "start_export", `{"ticket_range":"2026-11"}`, `{"job":"exp-77"}`)
		p := 0
		for i := 0; i < 40; i++ {
			p += 1 + i%2
			b.do("Still running?", "export_status", `{"job":"exp-77"}`, map[string]any{"status": "running", "message": "Export in progress, please wait", "progress": p})
		}
		add(b)
	}

	// The same reply posted again and again: it answers ok each time.
	{
		b := longRun("support-same-reply-posted", "support", true).writes("add_comment")
		b.do("Reading the ticket.", "get_ticket", `{"id":"T-88"}`, `{"id":"T-88","subject":"Refund","status":"open"}`)
		for i := 0; i < 6; i++ {
			if i == 2 {
				b.from()
			}
			b.do("Posting the reply; I am not sure it went through.", "add_comment", `{"id":"T-88","body":"Your refund was issued today."}`, `{"ok":true}`)
		}
		add(b)
	}

	// --- a planner delegating to sub-agents ----------------------------------

	// Twelve sections to a writer, a reviewer after each; verdicts differ.
	{
		b := longRun("planner-sections", "planner", false).writes("save_section")
		for i := 0; i < 12; i++ {
			sec := fmt.Sprintf("Write section %d of the report: %s.", i+1, []string{"scope", "method", "data", "results", "costs", "risks"}[i%6])
			b.hand("Next section.", "writer", sec, fmt.Sprintf("Section %d drafted, %d words.", i+1, 300+i*17), func(w *lrb) {
				w.do("Drafting.", "save_section", map[string]any{"n": i + 1, "text": fmt.Sprintf("Draft of section %d", i+1)}, `{"ok":true}`)
			})
			b.hand("Review it.", "reviewer", fmt.Sprintf("Review section %d.", i+1), fmt.Sprintf("Section %d approved; fix %d typos.", i+1, i%3), nil)
		}
		add(b)
	}

	// Two sub-agents handing a task back and forth through the planner,
	// each waiting on the other.
	{
		b := longRun("planner-agents-waiting-on-each-other", "planner", true)
		for round := 0; round < 5; round++ {
			if round == 2 {
				b.from()
			}
			b.hand("Asking the writer.", "writer", "Draft the release notes.", "I need the changelog from the researcher before I can draft the notes.", func(w *lrb) {
				w.do("Looking for a changelog.", "read_file", `{"path":"CHANGELOG.md"}`, `"# Changelog\n\n(empty)"`)
			})
			b.hand("Asking the researcher.", "researcher", "Collect the changelog for the release.", "I need the release scope from the writer before I can collect the changelog.", nil)
		}
		add(b)
	}

	// --- more legit work whose answers repeat --------------------------------

	// One reviewer, ten files, the same verdict each time.
	{
		b := longRun("planner-reviews-all-lgtm", "planner", false)
		for _, f := range append(files, "api.go", "server.go", "client.go", "main.go") {
			b.hand("Next file.", "reviewer", "Review "+f+" for concurrency bugs.", "LGTM, no issues found.", func(w *lrb) {
				w.do("Reading.", "read_file", map[string]any{"path": f}, lrFile(f, 0))
			})
		}
		add(b)
	}

	// Hosts checked one after another, each answering the same figures.
	{
		b := longRun("sql-daily-counts-and-host-stats", "sql", false)
		for i := 0; i < 20; i++ {
			b.do("Stats of the next replica.", "host_stats", map[string]any{"host": fmt.Sprintf("db-%02d", i)}, `{"connections":120,"replication_lag_s":0,"disk_used_pct":41,"cpu_pct":12,"qps":3400}`)
			b.do("Orders that day.", "query", map[string]any{"sql": fmt.Sprintf("SELECT count(*) AS n, sum(total) AS s FROM orders WHERE day = '2026-11-%02d'", i+1)}, map[string]any{"rows": []any{map[string]any{"n": 1500 + i*3, "s": 88000 + i*211}}})
		}
		add(b)
	}

	// A CI pipeline polled: the state stays running while its steps move.
	{
		b := longRun("coder-ci-polling", "coding", false)
		for i := 0; i < 30; i++ {
			b.do("Waiting for CI.", "ci_status", `{"run":"8812"}`, map[string]any{"state": "running", "message": "Pipeline is running", "steps_done": i, "steps_total": 30, "elapsed_seconds": 12 * i})
		}
		b.do("Done?", "ci_status", `{"run":"8812"}`, `{"state":"passed","message":"Pipeline passed","steps_done":30,"steps_total":30}`)
		add(b)
	}

	// The same commands in another order of their flags, each run after
	// an edit.
	{
		b := longRun("coder-flags-reordered-after-edits", "coding", false).writes("edit_file")
		cmds := []string{"go test -v -count=1 ./cache", "go test -count=1 -v ./cache", "go test ./cache -v -count=1"}
		for i := 0; i < 9; i++ {
			b.do("Editing.", "edit_file", map[string]any{"path": "evict.go", "old": fmt.Sprintf("return %d", 10+i), "new": fmt.Sprintf("return %d", 11+i)}, `{"ok":true}`)
			b.do("Testing.", "run_command", map[string]any{"command": cmds[i%3]}, map[string]any{"exit_code": 1, "output": "--- FAIL: TestEvict (0.00s)\n    evict_test.go:31: 3 entries left, want 2\nFAIL\n"})
		}
		add(b)
	}

	// Searches over related questions, each finding some new documents
	// and some known.
	{
		b := longRun("research-overlapping-searches", "research", false)
		for i := 0; i < 20; i++ {
			b.do("Searching.", "search_kb", map[string]any{"query": fmt.Sprintf("subscription billing question %d", i)}, map[string]any{"results": lrDocs("Billing", 4, i*2)})
		}
		add(b)
	}

	// A long coding session, about two hundred calls: forty tasks, each
	// read, searched, edited, re-read and tested; the suite fails a little
	// less each time and the same grep comes back between tasks.
	{
		b := longRun("coder-long-session", "coding", false).writes("edit_file", "write_file")
		for i := 0; i < 40; i++ {
			f := fmt.Sprintf("pkg%d/%s", i%8, files[i%len(files)])
			b.do("Next task.", "read_file", map[string]any{"path": f}, lrFile(f, i/8))
			b.do("Where is it used?", "grep", map[string]any{"pattern": fmt.Sprintf("helper%d", i%6), "path": "."}, fmt.Sprintf("%s:%d: helper%d(s)", f, 5+i%6, i%6))
			b.do("Editing.", "edit_file", map[string]any{"path": f, "old": fmt.Sprintf("return %d", 10+i/8), "new": fmt.Sprintf("return %d", 11+i/8)}, `{"ok":true}`)
			b.do("Re-reading.", "read_file", map[string]any{"path": f}, lrFile(f, i/8+1))
			var failing []string
			for j := i + 1; j < 40; j += 7 {
				failing = append(failing, fmt.Sprintf("TestTask%02d (0.00s)", j))
			}
			b.do("Tests.", "run_tests", `{"pkg":"./..."}`, lrTests(failing))
		}
		add(b)
	}

	// A long form-filling session in a browser: thirty pages, each opened,
	// snapshot, typed into, submitted, snapshot again.
	{
		b := longRun("browser-long-form-filling", "browsing", false).writes("browser_navigate", "browser_type", "browser_click")
		for i := 0; i < 30; i++ {
			url := fmt.Sprintf("https://forms.example.com/claim/%d", 7000+i)
			b.do("Opening the claim.", "browser_navigate", map[string]any{"url": url}, `"Navigated"`)
			b.do("What is on it?", "browser_snapshot", `{}`, lrSnapshot(fmt.Sprintf("Claim %d", 7000+i), []string{"Name", "Amount", "Submit"}))
			b.do("Filling the amount.", "browser_type", map[string]any{"ref": "li1", "text": fmt.Sprint(100 + i*13)}, `"Typed"`)
			b.do("Submitting.", "browser_click", `{"element":"Submit","ref":"li2"}`, `"Clicked"`)
			b.do("Confirmed?", "browser_snapshot", `{}`, lrSnapshot("Claim submitted", []string{fmt.Sprintf("Reference CL-%d", 7000+i)}))
		}
		add(b)
	}

	// A data agent profiling sixty columns: the same query shape, a column
	// at a time, figures that repeat.
	{
		b := longRun("sql-column-profiling", "sql", false)
		for i := 0; i < 60; i++ {
			col := fmt.Sprintf("c%02d", i)
			b.do("Profiling "+col+".", "query", map[string]any{"sql": fmt.Sprintf("SELECT min(%s), max(%s), count(DISTINCT %s) FROM events", col, col, col)}, map[string]any{"rows": []any{map[string]any{"min": 0, "max": 1, "distinct": 2}}})
		}
		add(b)
	}

	// Five different questions to a help centre that answers each with the
	// same popular articles (it found nothing).
	{
		b := longRun("research-kb-fallback-articles", "research", false)
		popular := map[string]any{"results": []map[string]any{
			{"title": "Getting started", "url": "https://help.example.com/a/1"},
			{"title": "Popular: billing basics", "url": "https://help.example.com/a/2"},
			{"title": "Popular: your account", "url": "https://help.example.com/a/3"},
		}}
		for _, q := range []string{"reset two factor device", "change invoice address", "export audit logs", "webhook retries", "delete workspace"} {
			b.do("Asking the help centre.", "search_help", map[string]any{"query": q}, popular)
		}
		add(b)
	}

	// --- more loops ----------------------------------------------------------

	// Sources re-opened after a reworded search that found them again.
	{
		b := longRun("research-reopening-sources", "research", true)
		docs := lrDocs("Heat pump efficiency", 2, 1)
		for i, q := range []string{"heat pump efficiency cold climate", "heat pump cold climate performance", "cold climate heat pump COP", "heat pump efficiency below freezing"} {
			b.do("Searching.", "web_search", map[string]any{"query": q}, map[string]any{"results": docs})
			if i == 2 {
				b.from()
			}
			for _, d := range docs {
				b.do("Opening.", "fetch_url", map[string]any{"url": d["url"]}, fmt.Sprintf("%s\nCOP falls to 2.1 at -15 C.", d["title"]))
			}
		}
		add(b)
	}

	// A tester hands the fix back to the coder who handed it the tests.
	{
		b := longRun("planner-coder-tester-hand-back", "planner", true).writes("edit_file")
		b.hand("Implement it.", "coder", "Implement the eviction fix.", "Done.", func(c *lrb) {
			c.do("Editing.", "edit_file", `{"path":"evict.go","old":"<","new":"<="}`, `{"ok":true}`)
			c.hand("Testing it.", "tester", "Run the eviction tests.", "Failing.", func(tt *lrb) {
				tt.do("Running.", "run_tests", `{"pkg":"./cache"}`, lrTests([]string{"TestEvictPinned"}))
				tt.from()
				tt.hand("Handing it back.", "coder", "Fix the failing eviction test.", "Done.", nil)
			})
		})
		add(b)
	}
	return out
}
