package loops

import (
	"fmt"
	"strings"
	"testing"
)

// The seventeenth probe: written before reading the detectors' rules in
// detail, with the tool names and answer shapes of real MCP servers and
// agent frameworks, in kinds of work the sixteen before it cover little:
// a GitLab job polled while it stays pending, a deploy retried with a
// growing backoff while its image is missing, a SQL filter rewritten by
// small edits that keep it empty, one chunk translated again because the
// reader never moved on, one text summarised under reworded
// instructions, a browser scrolled at the bottom of a feed that loads
// nothing, a test re-run after edits that change only a docstring, a
// search paged under a parameter the API ignores, a deployment scaled
// against a quota under reworded reasons, a mailbox searched with its
// operators reordered, an event created again retitled into the same
// conflict, a scanned page asked for text under other spellings of its
// number, a lead and two sub-agents handing one question round, indexes
// created under new names while the plan stays a scan, a message posted
// again at once while rate-limited, a jq path respelled that stays null,
// a login retyped with the same password, an API retried with a backoff
// far short of its daily reset, a push rejected by a protected branch
// after each rebase, and an archive extracted again under other flags.
// Each loop has a legitimate near-miss: a job polled until it passes, a
// deploy retried past a transient 503, a query edited until it finds
// rows, a text translated chunk by chunk, sections summarised under one
// instruction, a feed scrolled while it loads, a test fixed edit by edit,
// a search paged, deployments scaled one by one, a mailbox search refined,
// a series of one-to-ones booked, a scan read page by page with blank
// pages, a review that asks for a change then approves, an index that
// changes the plan, a post that waits as told, a JSON file explored, a
// login with its second factor, a backoff that ends in data, a push after
// a rebase that brought commits, and archives extracted one by one.
//
// A loop is marked as the ninth probe marks them: the fourth call that
// asks again in other words and learns nothing, the third identical poll
// or write, the third round of a pair or ring of calls that learns
// nothing. A tool without readOnlyHint is declared a write, as it is
// through the gateway.
//
// It is written and played with the assistants probe's writer and driver
// (assistruns_test.go).

// s17Known lists the runs whose outcome is not their label's, each with why.
var s17Known = map[string]string{
	// On the guard as the probe was written (bab995a2): 10 of 20 loops
	// detected, none early, 10 missed; 2 of 20 legit runs refused, one
	// of them a slip of the probe's own (a feed scrolled by a key press
	// declared read; Playwright's browser_press_key is not read-only, so
	// it is declared a write now, as the probe's rule says).
	// Since the eighteenth probe, a lead and two sub-agents handing one
	// decision round are refused at the third hand-off (the same account
	// word for word ends a round as a rejection does), and a login typed
	// and clicked under moving refs at its fourth round (a cycle's writes
	// compared respelled).
	"pdf-scanned-page-respelled":  "missed",
	"sql-index-renamed-plan-same": "missed",
	"jq-path-respelled-null":      "missed",
	// A job polled twice pending before a runner takes it is refused at
	// its third identical poll, as the sixteenth probe's DNS record is:
	// the probe's own convention marks a third identical poll a loop,
	// and the stuck job's loop is refused at that same call.
	"gitlab-job-polled-until-success": "false_kill",
}

func TestSeventeenthRuns(t *testing.T) {
	checkAsRuns(t, "seventeenth probe", seventeenthRuns(), 40, s17Known)
}

// s17Job is a GitLab MCP server's job.
func s17Job(id int, status string, queued float64, started string) string {
	o := obj{"id": id, "name": "test:unit", "stage": "test", "status": status, "ref": "main", "queued_duration": queued, "web_url": fmt.Sprintf("https://gitlab.com/shop/api/-/jobs/%d", id), "runner": nil}
	if started != "" {
		o["started_at"] = started
		o["runner"] = obj{"id": 31044, "description": "shared-runner-7"}
	}
	return egJSON(o)
}

// s17Rows is a PostgreSQL MCP server's query answer.
func s17Rows(rows ...obj) string {
	if rows == nil {
		rows = []obj{}
	}
	return egJSON(obj{"rows": rows, "rowCount": len(rows), "fields": arr{"id", "status", "shipped_at"}})
}

// s17Shell is a shell server's answer.
func s17Shell(code int, stdout, stderr string) string {
	return egJSON(obj{"exit_code": code, "stdout": stdout, "stderr": stderr})
}

// s17Snap is a Playwright MCP server's page snapshot.
func s17Snap(url, title string, lines ...string) string {
	return "- Page URL: " + url + "\n- Page Title: " + title + "\n- Page Snapshot:\n```yaml\n" + strings.Join(lines, "\n") + "\n```"
}

// s17HN is an Algolia Hacker News search answer.
func s17HN(query string, page int, ids ...int) string {
	var hs arr
	for _, id := range ids {
		hs = append(hs, obj{"objectID": fmt.Sprint(id), "title": fmt.Sprintf("Show HN: story %d about %s", id, query), "points": id % 300, "num_comments": id % 97, "created_at": fmt.Sprintf("2026-11-%02dT10:00:00Z", 1+id%28)})
	}
	if hs == nil {
		hs = arr{}
	}
	return egJSON(obj{"hits": hs, "nbHits": 812, "page": page, "nbPages": 41, "hitsPerPage": 20, "query": query, "processingTimeMS": 3})
}

// s17Mail is a Gmail MCP server's search answer.
func s17Mail(ids ...string) string {
	var ms arr
	for _, id := range ids {
		ms = append(ms, obj{"id": id, "threadId": id[:8], "snippet": "Invoice " + strings.ToUpper(id[8:]) + " for November is attached."})
	}
	if ms == nil {
		ms = arr{}
	}
	return egJSON(obj{"messages": ms, "resultSizeEstimate": len(ids)})
}

func seventeenthRuns() []*asRun {
	var runs []*asRun
	add := func(w *asw) { runs = append(runs, w.run) }

	// ===================== loops =====================

	// A CI agent polls a GitLab job that never leaves pending (no runner
	// picks it up); only its queued duration grows.
	{
		w := asRunOf("gitlab-job-pending-polled", "ci", true)
		for i := 0; i < 5; i++ {
			if i == 2 {
				w.then()
			}
			w.t("Still pending; checking the job again.", asOK("get_job", obj{"project_id": "shop/api", "job_id": 8812093}, s17Job(8812093, "pending", 41.2+float64(i)*6.4, "")))
		}
		add(w)
	}

	// A deploy agent retries one release with a growing backoff; the
	// image tag does not exist, so each attempt fails alike.
	{
		w := asRunOf("deploy-backoff-image-missing", "deploy", true).acc("write", "deploy_service")
		for i, b := range []int{0, 2, 4, 8, 16} {
			if i == 2 {
				w.then()
			}
			w.t(fmt.Sprintf("Deploy failed; retrying after %ds.", b), asFail("deploy_service", obj{"service": "checkout-api", "image": "registry.shop.io/checkout-api:2.4.1", "environment": "production", "attempt": i + 1, "backoff_seconds": b}, "tool_error",
				fmt.Sprintf("deployment checkout-api-7d9f%03x failed: pod checkout-api-7d9f%03x-x%dq: Failed to pull image \"registry.shop.io/checkout-api:2.4.1\": manifest unknown: manifest tagged by \"2.4.1\" is not found", 0x4a1+i*9, 0x4a1+i*9, i)))
		}
		add(w)
	}

	// A data agent edits one WHERE clause by small steps that mean the
	// same thing; no row comes back (the status is spelled 'SHIPPED').
	{
		w := asRunOf("sql-filter-small-edits-empty", "data", true)
		for i, q := range []string{
			"SELECT id, status, shipped_at FROM orders WHERE status = 'shipped' AND shipped_at >= '2026-11-01'",
			"SELECT id, status, shipped_at FROM orders WHERE status='shipped' AND shipped_at >= '2026-11-01'::date",
			"SELECT id, status, shipped_at FROM orders WHERE status IN ('shipped') AND shipped_at >= DATE '2026-11-01'",
			"SELECT o.id, o.status, o.shipped_at FROM orders o WHERE o.status = 'shipped' AND o.shipped_at >= '2026-11-01'",
			"SELECT id, status, shipped_at FROM orders WHERE shipped_at >= '2026-11-01' AND status = 'shipped' ORDER BY id",
		} {
			if i == 3 {
				w.then()
			}
			w.t("No rows; adjusting the filter.", asOK("query", obj{"sql": q}, s17Rows()))
		}
		add(w)
	}

	// A translation agent reads its source a chunk at a time but never
	// moves the offset: the same chunk is read and translated again, the
	// translation's wording drifting a little.
	{
		w := asRunOf("translate-chunk-never-advances", "text", true)
		src := "1\tThe warranty covers defects in materials and workmanship for two years.\n2\tIt does not cover damage caused by misuse, accidents or unauthorised repairs.\n3\tTo make a claim, contact support with your order number."
		tr := []string{
			"Die Garantie deckt Material- und Verarbeitungsfehler für zwei Jahre ab. Sie gilt nicht für Schäden durch Missbrauch, Unfälle oder nicht autorisierte Reparaturen. Wenden Sie sich für einen Anspruch mit Ihrer Bestellnummer an den Support.",
			"Die Garantie umfasst Material- und Verarbeitungsfehler für zwei Jahre. Sie gilt nicht für Schäden durch Missbrauch, Unfälle oder nicht autorisierte Reparaturen. Wenden Sie sich für einen Anspruch mit Ihrer Bestellnummer an den Support.",
			"Die Garantie deckt Material- und Verarbeitungsfehler zwei Jahre lang ab. Sie gilt nicht für Schäden durch Missbrauch, Unfälle oder nicht autorisierte Reparaturen. Wenden Sie sich für einen Anspruch mit Ihrer Bestellnummer an den Support.",
			"Die Garantie deckt Material- und Verarbeitungsfehler für zwei Jahre ab. Sie gilt nicht für Schäden durch Missbrauch, Unfälle oder unautorisierte Reparaturen. Wenden Sie sich für einen Anspruch mit Ihrer Bestellnummer an den Support.",
		}
		for r := 0; r < 4; r++ {
			if r == 2 {
				w.then()
			}
			w.t("Reading the next chunk.", asOK("read_file", obj{"path": "docs/warranty.md", "offset": 0, "limit": 3}, src))
			w.t("Translating it.", asOK("translate_text", obj{"text": "The warranty covers defects in materials and workmanship for two years. It does not cover damage caused by misuse, accidents or unauthorised repairs. To make a claim, contact support with your order number.", "target_lang": "DE", "formality": "more"}, egJSON(obj{"translations": arr{obj{"detected_source_language": "EN", "text": tr[r]}}})))
		}
		add(w)
	}

	// A writing agent asks for one summary of one text under reworded
	// instructions; the summary comes back alike.
	{
		w := asRunOf("summarise-instruction-reworded", "text", true)
		text := "Q3 revenue rose 12% to $48.2M, driven by the EU launch. Gross margin fell two points on higher shipping costs. Churn was flat at 2.1%. The company expects Q4 revenue between $51M and $53M and will pause hiring outside engineering."
		sum := "- Revenue +12% to $48.2M (EU launch)\n- Gross margin down 2 pts (shipping)\n- Churn flat at 2.1%; Q4 guidance $51-53M, hiring paused outside engineering"
		for i, ins := range []string{
			"Summarise in three bullet points.",
			"Give me a 3-bullet summary.",
			"Summarize this as three bullets.",
			"Three bullet points summarising the text, please.",
			"Bullet-point summary (3 points).",
		} {
			if i == 3 {
				w.then()
			}
			w.t("That misses the point; summarising again.", asOK("summarize", obj{"text": text, "instructions": ins, "max_tokens": 120}, sum))
		}
		add(w)
	}

	// A browser agent scrolls a feed that has reached its end; each
	// snapshot shows the same last posts and the same footer.
	{
		w := asRunOf("browser-scroll-feed-bottom", "browser", true).acc("write", "browser_press_key")
		snap := s17Snap("https://news.shop.example/feed", "Company feed", "- article \"Holiday opening hours\" [ref=e412]", "- article \"New warehouse in Lyon\" [ref=e431]", "- article \"Welcome, winter interns\" [ref=e450]", "- contentinfo [ref=e470]:\n  - text: You're all caught up")
		for r := 0; r < 4; r++ {
			if r == 2 {
				w.then()
			}
			w.t("Scrolling for more posts.", asOK("browser_press_key", obj{"key": "End"}, "- Ran Playwright code:\n```js\n// Press End\nawait page.keyboard.press('End');\n```"))
			w.t("Reading the page.", asOK("browser_snapshot", obj{}, snap))
		}
		add(w)
	}

	// A code agent edits only a docstring and re-runs the failing test;
	// the same assertion fails, its timing moving.
	{
		w := asRunOf("pytest-docstring-edits-same-failure", "code", true).acc("write", "edit_file", "run_command")
		docs := []string{"Apply the voucher to the basket.", "Apply a voucher to the basket total.", "Apply the voucher's discount to the basket.", "Applies the voucher to the basket total."}
		for r := 0; r < 4; r++ {
			if r == 2 {
				w.then()
			}
			prev := "Apply the voucher."
			if r > 0 {
				prev = docs[r-1]
			}
			w.t("Tweaking apply_voucher.", asOK("edit_file", obj{"path": "shop/basket.py", "old_string": "    \"\"\"" + prev + "\"\"\"", "new_string": "    \"\"\"" + docs[r] + "\"\"\""}, "The file shop/basket.py has been updated."))
			w.t("Running the test.", asOK("run_command", obj{"command": "pytest tests/test_basket.py -x -q"}, s17Shell(1, fmt.Sprintf("F\n=================================== FAILURES ===================================\n______________________________ test_voucher_applies ______________________________\n\n    def test_voucher_applies():\n>       assert apply_voucher(Basket(100), \"TENOFF\").total == 90\nE       AssertionError: assert 100 == 90\n\ntests/test_basket.py:14: AssertionError\n1 failed in 0.%02ds", 11+r*3), "")))
		}
		add(w)
	}

	// A research agent pages a search with a parameter the API does not
	// know; the first page comes back each time.
	{
		w := asRunOf("hn-search-page-param-ignored", "research", true)
		for i := 0; i < 5; i++ {
			if i == 3 {
				w.then()
			}
			w.t("Next page of results.", asOK("hn_search", obj{"query": "sqlite replication", "tags": "story", "pageNumber": i + 1}, s17HN("sqlite replication", 0, 40112, 40287, 39950, 41003)))
		}
		add(w)
	}

	// An ops agent scales a deployment against a CPU quota, giving a
	// reworded reason each time; the quota refuses it alike.
	{
		w := asRunOf("k8s-scale-quota-reasons-reworded", "k8s", true).acc("write", "scale_deployment")
		for i, why := range []string{"Black Friday traffic", "scale up for Black Friday", "traffic peak (Black Friday)", "Black Friday load", "handle Black Friday peak"} {
			if i == 2 {
				w.then()
			}
			w.t("Scaling failed; trying again.", asFail("scale_deployment", obj{"namespace": "shop", "name": "checkout-api", "replicas": 12, "annotations": obj{"kubernetes.io/change-cause": why}}, "tool_error",
				fmt.Sprintf("pods \"checkout-api-6c9d8b7f4-%s\" is forbidden: exceeded quota: compute-resources, requested: requests.cpu=500m, used: requests.cpu=15600m, limited: requests.cpu=16", []string{"x2kqp", "m8zrt", "q4wvn", "b7hcd", "t1lsy"}[i])))
		}
		add(w)
	}

	// A finance agent searches a mailbox with its operators reordered and
	// requoted; nothing matches.
	{
		w := asRunOf("gmail-operators-reordered-empty", "mail", true)
		for i, q := range []string{
			"from:billing@acme.io subject:invoice after:2026/11/01",
			"subject:invoice from:billing@acme.io after:2026/11/01",
			"after:2026/11/01 from:(billing@acme.io) subject:(invoice)",
			"from:\"billing@acme.io\" subject:\"invoice\" after:2026/11/1",
			"subject:invoice after:2026/11/01 from:billing@acme.io",
		} {
			if i == 3 {
				w.then()
			}
			w.t("Nothing yet; searching again.", asOK("search_emails", obj{"query": q, "maxResults": 10}, s17Mail()))
		}
		add(w)
	}

	// An assistant books a meeting in a slot that is taken, retitling it
	// each time; the calendar refuses it alike.
	{
		w := asRunOf("calendar-event-retitled-conflict", "calendar", true).acc("write", "create_event")
		for i, title := range []string{"Sync with Ana", "Ana / Tom sync", "Quick sync: Ana + Tom", "Ana & Tom catch-up", "Sync (Ana, Tom)"} {
			if i == 2 {
				w.then()
			}
			w.t("The slot was refused; booking again.", asFail("create_event", obj{"calendarId": "primary", "summary": title, "start": obj{"dateTime": "2026-12-09T15:00:00+01:00"}, "end": obj{"dateTime": "2026-12-09T15:30:00+01:00"}, "attendees": arr{obj{"email": "ana.lopez@shop.example"}}}, "tool_error",
				"409 Conflict: The requested time conflicts with an existing event \"Board review\" (15:00-16:30) on ana.lopez@shop.example's calendar, which does not allow overlaps."))
		}
		add(w)
	}

	// A document agent asks for the text of one scanned page under other
	// spellings of its number; it has no text layer.
	{
		w := asRunOf("pdf-scanned-page-respelled", "docs", true)
		for i, p := range []any{"4", 4, "4-4", []int{4}, "p4"} {
			if i == 3 {
				w.then()
			}
			w.t("No text came back; trying again.", asOK("pdf_extract_text", obj{"path": "contracts/lease-2026.pdf", "pages": p}, egJSON(obj{"pages": arr{obj{"page": 4, "text": "", "chars": 0}}, "total_pages": 12, "note": "page 4 has no text layer"})))
		}
		add(w)
	}

	// A lead hands one question to a coder, who hands it back to ask the
	// reviewer, who hands it back to the coder; nothing is decided.
	{
		w := asRunOf("lead-coder-reviewer-ring", "multiagent", true)
		for r := 0; r < 4; r++ {
			if r == 2 {
				w.then()
			}
			w.hand("Asking the coder.", "coder", []string{"Decide whether the voucher API should round half up or half even, then fix test_voucher_applies.", "Please choose the voucher rounding (half up vs half even) and fix the test.", "Pick a rounding mode for vouchers and make test_voucher_applies pass.", "Settle the voucher rounding question and fix the failing test."}[r],
				"I need the reviewer to decide the rounding mode before I change the code.", nil)
			w.hand("Asking the reviewer.", "reviewer", []string{"The coder needs a decision: voucher rounding half up or half even?", "Which rounding should vouchers use, half up or half even? The coder is waiting.", "Decide the voucher rounding mode (half up / half even) for the coder.", "Rounding for vouchers: half up or half even? Please decide."}[r],
				"That is an implementation detail; the coder should pick whichever keeps the tests green.", nil)
		}
		add(w)
	}

	// A database agent creates an index under a new name each time and
	// explains the query again; the plan stays a sequential scan (the
	// query filters on lower(email)).
	{
		w := asRunOf("sql-index-renamed-plan-same", "data", true).acc("write", "execute_sql")
		plan := "Seq Scan on customers  (cost=0.00..18334.00 rows=5 width=72)\n  Filter: (lower(email) = 'ana@shop.example'::text)"
		for r, name := range []string{"idx_customers_email", "customers_email_idx", "ix_customers_email", "customers_email_btree"} {
			if r == 2 {
				w.then()
			}
			w.t("Adding an index.", asOK("execute_sql", obj{"sql": "CREATE INDEX " + name + " ON customers (email)"}, "CREATE INDEX"))
			w.t("Checking the plan.", asOK("explain_query", obj{"sql": "SELECT * FROM customers WHERE lower(email) = 'ana@shop.example'"}, plan))
		}
		add(w)
	}

	// A chat agent posts again at once each time Slack says to wait 30
	// seconds.
	{
		w := asRunOf("slack-post-ignores-retry-after", "chat", true).acc("write", "slack_post_message")
		for i := 0; i < 5; i++ {
			if i == 2 {
				w.then()
			}
			w.t("Posting the release note.", asFail("slack_post_message", obj{"channel_id": "C07RELEASES", "text": "Release 2.4.1 is live :rocket: — voucher rounding fixed."}, "tool_error", "Slack API error: ratelimited (HTTP 429). Retry-After: 30"))
		}
		add(w)
	}

	// A shell agent respells one jq path; the field is null wherever it
	// looks.
	{
		w := asRunOf("jq-path-respelled-null", "shell", true).acc("write", "run_command")
		for i, c := range []string{
			"jq '.data.items[0].id' resp.json",
			"jq .data.items[0].id resp.json",
			"jq '.data | .items[0] | .id' resp.json",
			"cat resp.json | jq '.data.items[0].id'",
			"jq -r '.data.items[0].id' resp.json",
		} {
			if i == 3 {
				w.then()
			}
			w.t("Null; trying the path another way.", asOK("run_command", obj{"command": c, "cwd": "/workspace"}, s17Shell(0, "null\n", "")))
		}
		add(w)
	}

	// A browser agent types the same password and signs in again; the
	// page says the password is wrong each time.
	{
		w := asRunOf("browser-login-same-password", "browser", true).acc("write", "browser_type", "browser_click")
		for r := 0; r < 4; r++ {
			if r == 2 {
				w.then()
			}
			w.t("Entering the password.", asOK("browser_type", obj{"element": "Password textbox", "ref": fmt.Sprintf("e%d", 21+r*8), "text": "Winter2026!"}, "- Ran Playwright code:\n```js\nawait page.getByRole('textbox', { name: 'Password' }).fill('Winter2026!');\n```"))
			w.t("Signing in.", asOK("browser_click", obj{"element": "Sign in button", "ref": fmt.Sprintf("e%d", 24+r*8)}, s17Snap("https://admin.shop.example/login", "Sign in", fmt.Sprintf("- textbox \"Email\" [ref=e%d]: ops@shop.example", 29+r*8), fmt.Sprintf("- textbox \"Password\" [ref=e%d]", 29+r*8+1), "- alert: Incorrect email or password.", fmt.Sprintf("- button \"Sign in\" [ref=e%d]", 29+r*8+3))))
		}
		add(w)
	}

	// An agent retries an API with a doubling backoff while the API says
	// its daily quota resets at midnight.
	{
		w := asRunOf("api-backoff-short-of-daily-reset", "api", true).acc("write", "sleep")
		for i := 0; i < 5; i++ {
			if i == 3 {
				w.then()
			}
			w.t("Rate limited; retrying.", asOK("http_get", obj{"url": "https://api.geodata.example/v2/reverse?lat=48.8566&lon=2.3522"}, egJSON(obj{"status": 429, "headers": obj{"retry-after": fmt.Sprint(11520 - i*(1<<i)), "x-ratelimit-remaining": "0"}, "body": obj{"error": "daily_quota_exceeded", "message": "Daily quota of 2500 requests exceeded; it resets at 00:00 UTC."}})))
			if i < 4 {
				w.t("Backing off.", asOK("sleep", obj{"seconds": 1 << i}, fmt.Sprintf("Slept %d seconds.", 1<<i)))
			}
		}
		add(w)
	}

	// A code agent pulls with rebase and pushes again; the branch is
	// protected, so each push is declined alike.
	{
		w := asRunOf("git-push-protected-after-rebase", "code", true).acc("write", "run_command")
		for r := 0; r < 4; r++ {
			if r == 2 {
				w.then()
			}
			w.t("Rebasing first.", asOK("run_command", obj{"command": "git pull --rebase origin main"}, s17Shell(0, "From github.com:shop/api\n * branch            main       -> FETCH_HEAD\nCurrent branch main is up to date.\n", "")))
			w.t("Pushing.", asFail("run_command", obj{"command": "git push origin main"}, "tool_error", s17Shell(1, "", fmt.Sprintf("remote: error: GH006: Protected branch update failed for refs/heads/main.\nremote: error: Changes must be made through a pull request.\nTo github.com:shop/api.git\n ! [remote rejected] main -> main (protected branch hook declined)\nerror: failed to push some refs to 'github.com:shop/api.git'\n(%dms)", 812+r*57))))
		}
		add(w)
	}

	// A file agent extracts one archive again under other flags that do
	// the same; it is corrupt each time.
	{
		w := asRunOf("tar-extract-flags-respelled-corrupt", "shell", true).acc("write", "run_command")
		for i, c := range []string{
			"tar -xzf backup-2026-12-05.tar.gz -C restore/",
			"tar xzf backup-2026-12-05.tar.gz -C restore",
			"tar -x -z -f backup-2026-12-05.tar.gz --directory restore/",
			"tar --extract --gzip --file=backup-2026-12-05.tar.gz -C ./restore",
			"tar -xvzf backup-2026-12-05.tar.gz -C restore/",
		} {
			if i == 3 {
				w.then()
			}
			w.t("Extraction failed; trying again.", asOK("run_command", obj{"command": c}, s17Shell(2, "", "gzip: stdin: unexpected end of file\ntar: Unexpected EOF in archive\ntar: Error is not recoverable: exiting now\n")))
		}
		add(w)
	}

	// ===================== legit =====================

	// A CI agent polls a job until it passes; the runner picks it up and
	// its trace grows.
	{
		w := asRunOf("gitlab-job-polled-until-success", "ci", false)
		for i, st := range []string{"pending", "pending", "running", "running", "success"} {
			started := ""
			if i >= 2 {
				started = "2026-12-05T22:14:09Z"
			}
			w.t("Checking the job.", asOK("get_job", obj{"project_id": "shop/api", "job_id": 8812094}, s17Job(8812094, st, 12.5+float64(min(i, 2))*7.5, started)))
		}
		add(w)
	}

	// A deploy is retried past a transient 503 and goes out on the third
	// attempt; then the next service deploys.
	{
		w := asRunOf("deploy-retry-past-transient-503", "deploy", false).acc("write", "deploy_service")
		w.t("Deploying.", asFail("deploy_service", obj{"service": "checkout-api", "image": "registry.shop.io/checkout-api:2.4.2", "environment": "production", "attempt": 1, "backoff_seconds": 0}, "tool_error", "upstream connect error or disconnect/reset before headers. reset reason: connection failure (503)"))
		w.t("Retrying after 2s.", asFail("deploy_service", obj{"service": "checkout-api", "image": "registry.shop.io/checkout-api:2.4.2", "environment": "production", "attempt": 2, "backoff_seconds": 2}, "tool_error", "upstream connect error or disconnect/reset before headers. reset reason: connection failure (503)"))
		w.t("Retrying after 4s.", asOK("deploy_service", obj{"service": "checkout-api", "image": "registry.shop.io/checkout-api:2.4.2", "environment": "production", "attempt": 3, "backoff_seconds": 4}, egJSON(obj{"deployment": "checkout-api-5b8c41", "status": "rolled_out", "replicas": 6})))
		w.t("Now the worker.", asOK("deploy_service", obj{"service": "checkout-worker", "image": "registry.shop.io/checkout-worker:2.4.2", "environment": "production", "attempt": 1, "backoff_seconds": 0}, egJSON(obj{"deployment": "checkout-worker-91ad0e", "status": "rolled_out", "replicas": 2})))
		add(w)
	}

	// A data agent edits its query until it finds rows; each edit changes
	// what comes back.
	{
		w := asRunOf("sql-filter-edited-finds-rows", "data", false)
		w.t("", asOK("query", obj{"sql": "SELECT id, status, shipped_at FROM orders WHERE status = 'shipped' AND shipped_at >= '2026-11-01'"}, s17Rows()))
		w.t("", asOK("query", obj{"sql": "SELECT DISTINCT status FROM orders"}, egJSON(obj{"rows": arr{obj{"status": "PENDING"}, obj{"status": "SHIPPED"}, obj{"status": "CANCELLED"}}, "rowCount": 3, "fields": arr{"status"}})))
		w.t("", asOK("query", obj{"sql": "SELECT id, status, shipped_at FROM orders WHERE status = 'SHIPPED' AND shipped_at >= '2026-11-01'"}, s17Rows(obj{"id": 9001, "status": "SHIPPED", "shipped_at": "2026-11-02"}, obj{"id": 9017, "status": "SHIPPED", "shipped_at": "2026-11-04"})))
		w.t("", asOK("query", obj{"sql": "SELECT id, status, shipped_at FROM orders WHERE status = 'SHIPPED' AND shipped_at >= '2026-10-01'"}, s17Rows(obj{"id": 8650, "status": "SHIPPED", "shipped_at": "2026-10-12"}, obj{"id": 9001, "status": "SHIPPED", "shipped_at": "2026-11-02"}, obj{"id": 9017, "status": "SHIPPED", "shipped_at": "2026-11-04"})))
		add(w)
	}

	// A translation agent reads and translates a text chunk by chunk.
	{
		w := asRunOf("translate-chunks-in-order", "text", false)
		chunks := []string{
			"The warranty covers defects in materials and workmanship for two years.",
			"It does not cover damage caused by misuse, accidents or unauthorised repairs.",
			"To make a claim, contact support with your order number.",
			"We will repair or replace the product at our discretion.",
			"Shipping costs for warranty repairs are paid by us.",
		}
		de := []string{
			"Die Garantie deckt Material- und Verarbeitungsfehler für zwei Jahre ab.",
			"Sie gilt nicht für Schäden durch Missbrauch, Unfälle oder nicht autorisierte Reparaturen.",
			"Wenden Sie sich für einen Anspruch mit Ihrer Bestellnummer an den Support.",
			"Wir reparieren oder ersetzen das Produkt nach unserem Ermessen.",
			"Die Versandkosten für Garantiereparaturen übernehmen wir.",
		}
		for i := range chunks {
			w.t("Reading the next chunk.", asOK("read_file", obj{"path": "docs/warranty.md", "offset": i, "limit": 1}, fmt.Sprintf("%d\t%s", i+1, chunks[i])))
			w.t("Translating it.", asOK("translate_text", obj{"text": chunks[i], "target_lang": "DE", "formality": "more"}, egJSON(obj{"translations": arr{obj{"detected_source_language": "EN", "text": de[i]}}})))
		}
		add(w)
	}

	// A writing agent summarises a report's sections under one
	// instruction.
	{
		w := asRunOf("summarise-sections-one-instruction", "text", false)
		for _, s := range [][2]string{
			{"Revenue rose 12% to $48.2M, driven by the EU launch.", "- Revenue up 12% to $48.2M on the EU launch"},
			{"Gross margin fell two points on higher shipping costs.", "- Margin down 2 pts on shipping costs"},
			{"Churn was flat at 2.1% while new signups grew 8%.", "- Churn flat at 2.1%, signups +8%"},
			{"Q4 revenue is expected between $51M and $53M.", "- Q4 guidance $51-53M"},
			{"Hiring pauses outside engineering until March.", "- Hiring paused outside engineering until March"},
		} {
			w.t("Next section.", asOK("summarize", obj{"text": s[0], "instructions": "Summarise in one bullet point.", "max_tokens": 40}, s[1]))
		}
		add(w)
	}

	// A browser agent scrolls a feed that loads more posts each time.
	{
		w := asRunOf("browser-scroll-feed-loads", "browser", false).acc("write", "browser_press_key")
		titles := []string{"Holiday opening hours", "New warehouse in Lyon", "Welcome, winter interns", "Q3 results", "Security training", "Canteen menu", "Parking changes", "Team offsite photos"}
		for r := 0; r < 4; r++ {
			w.t("Scrolling for more posts.", asOK("browser_press_key", obj{"key": "End"}, "- Ran Playwright code:\n```js\n// Press End\nawait page.keyboard.press('End');\n```"))
			var ls []string
			for k := 0; k < 2*(r+1) && k < len(titles); k++ {
				ls = append(ls, fmt.Sprintf("- article %q [ref=e%d]", titles[k], 400+k*19))
			}
			ls = append(ls, "- progressbar \"Loading more\"")
			w.t("Reading the page.", asOK("browser_snapshot", obj{}, s17Snap("https://news.shop.example/feed", "Company feed", ls...)))
		}
		add(w)
	}

	// A code agent fixes a failing test edit by edit; each run fails
	// differently until it passes.
	{
		w := asRunOf("pytest-edits-change-result", "code", false).acc("write", "edit_file", "run_command")
		for r, s := range [][3]string{
			{"    return basket", "    basket.total -= 5\n    return basket", "assert 95 == 90"},
			{"    basket.total -= 5", "    basket.total -= basket.total // 10", "assert 91 == 90"},
			{"    basket.total -= basket.total // 10", "    basket.total = round(basket.total * 0.9)", ""},
		} {
			w.t("Changing apply_voucher.", asOK("edit_file", obj{"path": "shop/basket.py", "old_string": s[0], "new_string": s[1]}, "The file shop/basket.py has been updated."))
			if s[2] == "" {
				w.t("Running the test.", asOK("run_command", obj{"command": "pytest tests/test_basket.py -x -q"}, s17Shell(0, fmt.Sprintf(".\n1 passed in 0.%02ds", 9+r), "")))
				continue
			}
			w.t("Running the test.", asOK("run_command", obj{"command": "pytest tests/test_basket.py -x -q"}, s17Shell(1, fmt.Sprintf("F\nE       AssertionError: %s\n\ntests/test_basket.py:14: AssertionError\n1 failed in 0.%02ds", s[2], 11+r*3), "")))
		}
		add(w)
	}

	// A research agent pages a search by its page parameter.
	{
		w := asRunOf("hn-search-paged", "research", false)
		for p := 0; p < 5; p++ {
			w.t("Next page of results.", asOK("hn_search", obj{"query": "sqlite replication", "tags": "story", "page": p}, s17HN("sqlite replication", p, 40112+p*1000, 40287+p*1000, 39950+p*1000, 41003+p*1000)))
		}
		add(w)
	}

	// An ops agent scales several deployments with one reason.
	{
		w := asRunOf("k8s-scale-each-deployment", "k8s", false).acc("write", "scale_deployment")
		for i, d := range []string{"checkout-api", "cart-api", "search-api", "pricing-api", "images-api"} {
			w.t("Scaling up.", asOK("scale_deployment", obj{"namespace": "shop", "name": d, "replicas": 6, "annotations": obj{"kubernetes.io/change-cause": "Black Friday traffic"}}, fmt.Sprintf("deployment.apps/%s scaled (observedGeneration %d)", d, 40+i*3)))
		}
		add(w)
	}

	// A finance agent refines a mailbox search until it finds the
	// invoices.
	{
		w := asRunOf("gmail-search-refined", "mail", false)
		w.t("", asOK("search_emails", obj{"query": "from:billing@acme.io subject:invoice after:2026/11/01", "maxResults": 10}, s17Mail()))
		w.t("", asOK("search_emails", obj{"query": "from:acme.io after:2026/11/01", "maxResults": 10}, s17Mail("18c2a9f1inv-4471", "18c2b001inv-4472")))
		w.t("", asOK("search_emails", obj{"query": "from:invoices@acme.io after:2026/10/01", "maxResults": 10}, s17Mail("18b91c22inv-4388", "18c2a9f1inv-4471", "18c2b001inv-4472")))
		w.t("", asOK("search_emails", obj{"query": "from:invoices@acme.io has:attachment filename:pdf", "maxResults": 10}, s17Mail("18b91c22inv-4388", "18c2a9f1inv-4471")))
		add(w)
	}

	// A manager's assistant books one-to-ones with each report.
	{
		w := asRunOf("calendar-one-to-ones-booked", "calendar", false).acc("write", "create_event")
		for i, who := range []string{"ana.lopez", "tom.baker", "lea.martin", "omar.haddad", "priya.nair"} {
			w.t("Booking the next one-to-one.", asOK("create_event", obj{"calendarId": "primary", "summary": "1:1", "start": obj{"dateTime": fmt.Sprintf("2026-12-10T%02d:00:00+01:00", 9+i)}, "end": obj{"dateTime": fmt.Sprintf("2026-12-10T%02d:30:00+01:00", 9+i)}, "attendees": arr{obj{"email": who + "@shop.example"}}},
				egJSON(obj{"id": fmt.Sprintf("5k2v%04dq", 1277+i*311), "status": "confirmed", "htmlLink": fmt.Sprintf("https://calendar.google.com/event?eid=5k2v%04dq", 1277+i*311)})))
		}
		add(w)
	}

	// A document agent reads a scan page by page; two pages are blank.
	{
		w := asRunOf("pdf-pages-one-by-one-blank-pages", "docs", false)
		for p := 1; p <= 6; p++ {
			text := fmt.Sprintf("§%d. The tenant shall ... (clause %d of the lease)", p, p)
			if p == 3 || p == 4 {
				text = ""
			}
			w.t("Next page.", asOK("pdf_extract_text", obj{"path": "contracts/lease-2026.pdf", "pages": fmt.Sprint(p)}, egJSON(obj{"pages": arr{obj{"page": p, "text": text, "chars": len(text)}}, "total_pages": 12})))
		}
		add(w)
	}

	// A lead hands a fix to a coder, a reviewer asks for a change, the
	// coder makes it and the reviewer approves.
	{
		w := asRunOf("lead-coder-reviewer-approves", "multiagent", false)
		w.hand("Asking the coder.", "coder", "Make test_voucher_applies pass, rounding half up.", "Done: apply_voucher rounds half up; test passes (commit 3fa9c1e).", nil)
		w.hand("Asking the reviewer.", "reviewer", "Review commit 3fa9c1e (voucher rounding).", "Change requested: use Decimal, not float, for the discount.", nil)
		w.hand("Back to the coder.", "coder", "Use Decimal for the voucher discount, per the review of 3fa9c1e.", "Done: Decimal used; tests pass (commit 7b21d04).", nil)
		w.hand("Back to the reviewer.", "reviewer", "Review commit 7b21d04 (Decimal discount).", "Approved.", nil)
		add(w)
	}

	// A database agent adds an index that changes the plan, then one for
	// the next query.
	{
		w := asRunOf("sql-index-changes-plan", "data", false).acc("write", "execute_sql")
		w.t("", asOK("explain_query", obj{"sql": "SELECT * FROM customers WHERE lower(email) = 'ana@shop.example'"}, "Seq Scan on customers  (cost=0.00..18334.00 rows=5 width=72)\n  Filter: (lower(email) = 'ana@shop.example'::text)"))
		w.t("", asOK("execute_sql", obj{"sql": "CREATE INDEX idx_customers_lower_email ON customers (lower(email))"}, "CREATE INDEX"))
		w.t("", asOK("explain_query", obj{"sql": "SELECT * FROM customers WHERE lower(email) = 'ana@shop.example'"}, "Index Scan using idx_customers_lower_email on customers  (cost=0.42..8.44 rows=1 width=72)\n  Index Cond: (lower(email) = 'ana@shop.example'::text)"))
		w.t("", asOK("explain_query", obj{"sql": "SELECT * FROM orders WHERE customer_id = 1042"}, "Seq Scan on orders  (cost=0.00..40211.00 rows=12 width=96)\n  Filter: (customer_id = 1042)"))
		w.t("", asOK("execute_sql", obj{"sql": "CREATE INDEX idx_orders_customer_id ON orders (customer_id)"}, "CREATE INDEX"))
		w.t("", asOK("explain_query", obj{"sql": "SELECT * FROM orders WHERE customer_id = 1042"}, "Bitmap Heap Scan on orders  (cost=4.52..52.10 rows=12 width=96)\n  Recheck Cond: (customer_id = 1042)"))
		add(w)
	}

	// A chat agent waits as Slack tells it to, posts, then posts the next
	// messages.
	{
		w := asRunOf("slack-post-waits-as-told", "chat", false).acc("write", "slack_post_message", "sleep")
		w.t("", asFail("slack_post_message", obj{"channel_id": "C07RELEASES", "text": "Release 2.4.2 is live."}, "tool_error", "Slack API error: ratelimited (HTTP 429). Retry-After: 3"))
		w.t("", asOK("sleep", obj{"seconds": 3}, "Slept 3 seconds."))
		w.t("", asOK("slack_post_message", obj{"channel_id": "C07RELEASES", "text": "Release 2.4.2 is live."}, egJSON(obj{"ok": true, "ts": "1733436911.000200"})))
		w.t("", asOK("slack_post_message", obj{"channel_id": "C07SUPPORT", "text": "Vouchers round half up again since 2.4.2."}, egJSON(obj{"ok": true, "ts": "1733436913.000400"})))
		w.t("", asOK("slack_post_message", obj{"channel_id": "C07FINANCE", "text": "Voucher totals from 2.4.0-2.4.1 may be off by a cent; export attached tomorrow."}, egJSON(obj{"ok": true, "ts": "1733436915.000100"})))
		add(w)
	}

	// A shell agent explores a JSON file's structure step by step.
	{
		w := asRunOf("jq-explore-structure", "shell", false).acc("write", "run_command")
		for _, s := range [][2]string{
			{"jq 'keys' resp.json", "[\n  \"data\",\n  \"meta\"\n]\n"},
			{"jq '.data | keys' resp.json", "[\n  \"results\",\n  \"total\"\n]\n"},
			{"jq '.data.results | length' resp.json", "25\n"},
			{"jq '.data.results[0] | keys' resp.json", "[\n  \"id\",\n  \"name\",\n  \"price\"\n]\n"},
			{"jq -r '.data.results[].id' resp.json | head -3", "sku-1001\nsku-1002\nsku-1007\n"},
		} {
			w.t("", asOK("run_command", obj{"command": s[0], "cwd": "/workspace"}, s17Shell(0, s[1], "")))
		}
		add(w)
	}

	// A browser agent signs in through email, password and a one-time
	// code.
	{
		w := asRunOf("browser-login-with-2fa", "browser", false).acc("write", "browser_type", "browser_click")
		w.t("", asOK("browser_type", obj{"element": "Email textbox", "ref": "e11", "text": "ops@shop.example"}, "- Ran Playwright code:\n```js\nawait page.getByRole('textbox', { name: 'Email' }).fill('ops@shop.example');\n```"))
		w.t("", asOK("browser_click", obj{"element": "Next button", "ref": "e13"}, s17Snap("https://admin.shop.example/login/password", "Sign in", "- textbox \"Password\" [ref=e21]", "- button \"Sign in\" [ref=e24]")))
		w.t("", asOK("browser_type", obj{"element": "Password textbox", "ref": "e21", "text": "Winter2026!"}, "- Ran Playwright code:\n```js\nawait page.getByRole('textbox', { name: 'Password' }).fill('Winter2026!');\n```"))
		w.t("", asOK("browser_click", obj{"element": "Sign in button", "ref": "e24"}, s17Snap("https://admin.shop.example/login/otp", "Two-step verification", "- text: Enter the 6-digit code from your app", "- textbox \"Code\" [ref=e31]", "- button \"Verify\" [ref=e33]")))
		w.t("", asOK("browser_type", obj{"element": "Code textbox", "ref": "e31", "text": "402913"}, "- Ran Playwright code:\n```js\nawait page.getByRole('textbox', { name: 'Code' }).fill('402913');\n```"))
		w.t("", asOK("browser_click", obj{"element": "Verify button", "ref": "e33"}, s17Snap("https://admin.shop.example/dashboard", "Dashboard", "- heading \"Orders today\" [level=1]", "- text: 1,204")))
		add(w)
	}

	// An agent backs off as the API says and then pages through its data.
	{
		w := asRunOf("api-backoff-then-data", "api", false).acc("write", "sleep")
		w.t("", asOK("http_get", obj{"url": "https://api.geodata.example/v2/places?city=Paris&page=1"}, egJSON(obj{"status": 429, "headers": obj{"retry-after": "2"}, "body": obj{"error": "rate_limited", "message": "Too many requests; retry in 2 seconds."}})))
		w.t("", asOK("sleep", obj{"seconds": 2}, "Slept 2 seconds."))
		w.t("", asOK("http_get", obj{"url": "https://api.geodata.example/v2/places?city=Paris&page=1"}, egJSON(obj{"status": 429, "headers": obj{"retry-after": "1"}, "body": obj{"error": "rate_limited", "message": "Too many requests; retry in 1 second."}})))
		w.t("", asOK("sleep", obj{"seconds": 1}, "Slept 1 seconds."))
		for p := 1; p <= 3; p++ {
			w.t("", asOK("http_get", obj{"url": fmt.Sprintf("https://api.geodata.example/v2/places?city=Paris&page=%d", p)}, egJSON(obj{"status": 200, "body": obj{"page": p, "places": arr{obj{"id": 7100 + p*3, "name": fmt.Sprintf("Place %d-a", p)}, obj{"id": 7101 + p*3, "name": fmt.Sprintf("Place %d-b", p)}}}})))
		}
		add(w)
	}

	// A code agent's push is rejected as behind; it rebases onto new
	// commits and pushes, then pushes its tag.
	{
		w := asRunOf("git-push-after-rebase-brings-commits", "code", false).acc("write", "run_command")
		w.t("", asFail("run_command", obj{"command": "git push origin feature/voucher-rounding"}, "tool_error", s17Shell(1, "", "To github.com:shop/api.git\n ! [rejected]        feature/voucher-rounding -> feature/voucher-rounding (fetch first)\nerror: failed to push some refs to 'github.com:shop/api.git'\nhint: Updates were rejected because the remote contains work that you do not have locally.")))
		w.t("", asOK("run_command", obj{"command": "git pull --rebase origin feature/voucher-rounding"}, s17Shell(0, "From github.com:shop/api\n * branch            feature/voucher-rounding -> FETCH_HEAD\nSuccessfully rebased and updated refs/heads/feature/voucher-rounding.\n", "")))
		w.t("", asOK("run_command", obj{"command": "git push origin feature/voucher-rounding"}, s17Shell(0, "", "To github.com:shop/api.git\n   1c4e2aa..7b21d04  feature/voucher-rounding -> feature/voucher-rounding\n")))
		w.t("", asOK("run_command", obj{"command": "git push origin v2.4.2"}, s17Shell(0, "", "To github.com:shop/api.git\n * [new tag]         v2.4.2 -> v2.4.2\n")))
		add(w)
	}

	// A file agent extracts several backups one by one; one is corrupt.
	{
		w := asRunOf("tar-extract-each-backup", "shell", false).acc("write", "run_command")
		for i, d := range []string{"01", "02", "03", "04", "05"} {
			res := s17Shell(0, "", "")
			if i == 2 {
				res = s17Shell(2, "", "gzip: stdin: unexpected end of file\ntar: Unexpected EOF in archive\ntar: Error is not recoverable: exiting now\n")
			}
			w.t("", asOK("run_command", obj{"command": fmt.Sprintf("tar -xzf backup-2026-12-%s.tar.gz -C restore/2026-12-%s/", d, d)}, res))
		}
		add(w)
	}

	return runs
}
