package loops

import (
	"fmt"
	"strings"
	"testing"
)

// The sixteenth probe: written before reading the detectors or the rules
// of docs/LOOPS.md, with the tool names and answer shapes of real MCP
// servers, in domains the fifteen before it cover little: a GitHub
// Actions job re-run while the same step fails, a Slack search reworded,
// an S3 prefix respelled, Snowflake queries without a warehouse, a
// browser agent clicking a Continue button whose index moves, a calendar
// window in other notations of one time, a code agent undoing and redoing
// one edit while one test fails, a Jira transition missing a field, a
// review comment posted again restyled, a PagerDuty incident
// acknowledged again, a DNS name respelled, a workflow dispatched under
// other spellings of its ref, a Notion search and fetch going round, npm
// install retried with cosmetic flags, a Zendesk ticket asked for under
// other spellings of its id, a Shopify price set under other notations, a
// text message sent to one number in other notations, two Prometheus
// queries alternated, a docker build retagged, and a research hand-off
// reworded. Each loop has a legitimate near-miss: a run polled until it
// completes, a Slack search refined with names it found, an S3 listing
// paged by token, a query retried after the warehouse is resumed, a
// wizard clicked through, free slots asked day by day, tests fixed one
// failure at a time, distinct issues transitioned, one comment on several
// pull requests, incidents paged by offset, a DNS record polled until it
// appears, a flaky job re-run once, the pages a search found fetched one
// by one, npm install retried with a flag that changes what it does,
// empty Zendesk views asked one by one, prices set on several variants,
// one text sent to several numbers, metric names tried until one has
// data, a Dockerfile fixed build by build, and distinct hand-offs.
//
// A loop is marked as the ninth probe marks them: the fourth call that
// asks again in other words and learns nothing, the third identical poll
// or write, the third round of a pair or ring of calls that learns
// nothing. A tool without readOnlyHint is declared a write, as it is
// through the gateway.
//
// It is written and played with the assistants probe's writer and driver
// (assistruns_test.go).

// svtKnown lists the runs whose outcome is not their label's, each with why.
var svtKnown = map[string]string{
	// On the guard as the probe was written (402d81e3): 14 of 20 loops
	// detected, none early, 6 missed; 1 of 20 legit runs refused. Since
	// loops22: 16 (a price set in other notations, answered alike but
	// for its update time; a job re-run while the same step fails, its
	// log's "attempt 3" a re-run's counter).
	"browser-continue-index-moves":           "missed",
	"github-comment-posted-again-restyled":   "missed",
	"prometheus-two-queries-alternate-empty": "missed",
	"handoff-research-reworded-nothing":      "missed",
	"dns-record-polled-until-present":        "false_kill",
}

func TestSixteenthRuns(t *testing.T) {
	checkAsRuns(t, "sixteenth probe", sixteenthRuns(), 40, svtKnown)
}

// svtShell is a shell server's answer to a command.
func svtShell(code int, stdout, stderr string) string {
	return egJSON(obj{"exitCode": code, "stdout": stdout, "stderr": stderr})
}

// svtRun is a GitHub MCP server's workflow run.
func svtRun(id int64, attempt int, status, conclusion, updated string) string {
	var c any
	if conclusion != "" {
		c = conclusion
	}
	return egJSON(obj{"id": id, "name": "CI", "head_branch": "main", "head_sha": "9f3c2e1a7b5d4c8e0f6a2b1c3d4e5f60718293ab", "run_number": 1841, "run_attempt": attempt, "event": "push", "status": status, "conclusion": c, "updated_at": updated, "html_url": fmt.Sprintf("https://github.com/shop/web/actions/runs/%d", id)})
}

// svtSlack is a Slack server's search answer.
func svtSlack(query string, hits ...[3]string) string {
	var ms arr
	for _, h := range hits {
		ms = append(ms, obj{"channel": obj{"name": h[0]}, "username": h[1], "text": h[2], "ts": fmt.Sprintf("17333%05d.%06d", len(h[2])*37, len(h[1])*911), "permalink": "https://shop.slack.com/archives/C07/p" + fmt.Sprint(1733300000+len(h[2])*37)})
	}
	return egJSON(obj{"ok": true, "query": query, "messages": obj{"total": len(hits), "matches": ms, "pagination": obj{"page": 1, "page_count": 1}}})
}

// svtS3 is a ListObjectsV2 answer.
func svtS3(prefix, next string, keys ...string) string {
	var cs arr
	for i, k := range keys {
		cs = append(cs, obj{"Key": k, "Size": 20480 + i*733, "LastModified": fmt.Sprintf("2026-12-05T0%d:1%d:00.000Z", i%10, i%10), "StorageClass": "STANDARD"})
	}
	o := obj{"Name": "shop-logs", "Prefix": prefix, "KeyCount": len(keys), "MaxKeys": 1000, "IsTruncated": next != ""}
	if len(cs) > 0 {
		o["Contents"] = cs
	}
	if next != "" {
		o["NextContinuationToken"] = next
	}
	return egJSON(o)
}

// svtDig is a DNS lookup tool's answer.
func svtDig(name, typ, status string, ms int, answers ...string) string {
	var as arr
	for _, a := range answers {
		as = append(as, obj{"name": name + ".", "type": typ, "TTL": 300, "data": a})
	}
	return egJSON(obj{"Status": status, "Question": arr{obj{"name": name + ".", "type": typ}}, "Answer": as, "Server": "1.1.1.1#53", "QueryTimeMs": ms})
}

// svtProm is a Prometheus query answer.
func svtProm(series ...[2]string) string {
	var rs arr
	for _, s := range series {
		rs = append(rs, obj{"metric": obj{"job": s[0]}, "value": arr{1733431200.123, s[1]}})
	}
	if rs == nil {
		rs = arr{}
	}
	return egJSON(obj{"status": "success", "data": obj{"resultType": "vector", "result": rs}})
}

func sixteenthRuns() []*asRun {
	var runs []*asRun
	add := func(w *asw) { runs = append(runs, w.run) }

	// ===================== loops =====================

	// A CI agent re-runs a failed job; the same step fails the same way
	// in each attempt, only the attempt number and times move.
	{
		w := asRunOf("gha-rerun-same-step-fails", "ci", true).acc("write", "rerun_failed_jobs")
		for a := 1; a <= 4; a++ {
			if a == 3 {
				w.then()
			}
			w.t("The build failed; re-running the failed jobs.", asOK("rerun_failed_jobs", obj{"owner": "shop", "repo": "web", "run_id": 12093384411}, egJSON(obj{"status": 201, "message": "Re-run requested"})))
			w.t("Checking the job's log.", asOK("get_job_logs", obj{"owner": "shop", "repo": "web", "run_id": 12093384411, "failed_only": true, "tail_lines": 20},
				fmt.Sprintf("Job 'test (20.x)' attempt %d\n2026-12-05T21:%02d:14.5521Z > web@2.4.0 test\n2026-12-05T21:%02d:19.0933Z FAIL src/checkout.test.ts\n2026-12-05T21:%02d:19.0941Z   ● checkout › applies the voucher\n2026-12-05T21:%02d:19.0942Z     expect(received).toBe(expected)\n2026-12-05T21:%02d:19.0942Z     Expected: 90\n2026-12-05T21:%02d:19.0943Z     Received: 100\n2026-12-05T21:%02d:21.3310Z ##[error]Process completed with exit code 1.", a+1, 10+a*6, 10+a*6, 10+a*6, 10+a*6, 10+a*6, 10+a*6, 10+a*6)))
		}
		add(w)
	}

	// A support agent searches Slack for one decision in other words; the
	// same two messages come back.
	{
		w := asRunOf("slack-search-reworded-same-hits", "chat", true)
		hits := [][3]string{{"eng-releases", "maria", "Deploy freeze starts Friday 18:00 until the 9th, ping me for exceptions."}, {"eng-releases", "tom", "Reminder: freeze Friday evening, hotfixes only."}}
		for i, q := range []string{"deploy freeze", "deployment freeze dates", "freeze deploys december", "when does the deploy freeze end", "deploy freeze end date in:#eng-releases"} {
			if i == 3 {
				w.then()
			}
			w.t("That does not say when it ends; searching again.", asOK("slack_search_messages", obj{"query": q, "count": 20, "sort": "timestamp"}, svtSlack(q, hits...)))
		}
		add(w)
	}

	// An ops agent lists one day's logs under other spellings of its
	// prefix; the bucket has nothing there.
	{
		w := asRunOf("s3-prefix-respelled-empty", "storage", true)
		for i, p := range []string{"logs/2026/12/05/", "logs/2026/12/05", "/logs/2026/12/05/", "logs//2026/12/05/", "./logs/2026/12/05/"} {
			if i == 3 {
				w.then()
			}
			w.t("No objects? Listing again.", asOK("list_objects", obj{"bucket": "shop-logs", "prefix": p, "max_keys": 1000}, svtS3(p, "")))
		}
		add(w)
	}

	// A data agent rewrites its query again and again while the session
	// has no warehouse; the error is the same whatever the query.
	{
		w := asRunOf("snowflake-no-warehouse-any-query", "data", true)
		for i, q := range []string{
			"SELECT COUNT(*) FROM ANALYTICS.PUBLIC.ORDERS WHERE STATUS = 'failed'",
			"select count(*) from analytics.public.orders where status = 'failed'",
			"SELECT COUNT(1) AS failed FROM ANALYTICS.PUBLIC.ORDERS WHERE STATUS='failed'",
			"SELECT COUNT(*) FROM ORDERS WHERE STATUS = 'failed' AND ORDER_DATE >= '2026-12-01'",
			"SELECT STATUS, COUNT(*) FROM ANALYTICS.PUBLIC.ORDERS GROUP BY STATUS",
		} {
			if i == 3 {
				w.then()
			}
			w.t("The query failed; let me rewrite it.", asFail("run_snowflake_query", obj{"statement": q}, "tool_error", fmt.Sprintf("000606 (57P03): 01b8c2%02d-0000-7a1c-0000-4d2100%04x: No active warehouse selected in the current session.  Select an active warehouse with the 'use warehouse' command.", 11+i*4, 0x1f20+i*97)))
		}
		add(w)
	}

	// A browser agent clicks Continue; the form stays on its first step
	// with the same complaint, and the button's index moves each time.
	{
		w := asRunOf("browser-continue-index-moves", "browser", true).acc("write", "click_element_by_index")
		page := "Checkout – Step 1 of 3: Delivery\n[1]<input placeholder='Full name' value='Ana Lopez'>\n[2]<input placeholder='Street' value='Calle Mayor 5'>\n[3]<input placeholder='Phone' value=''>\n⚠ Please enter a phone number so the courier can reach you.\n[%d]<button>Continue</button>"
		for r, idx := range []int{14, 15, 17, 18} {
			if r == 2 {
				w.then()
			}
			w.t("Clicking Continue.", asOK("click_element_by_index", obj{"index": idx}, fmt.Sprintf("🖱️  Clicked button with index %d: Continue", idx)))
			w.t("Reading the page.", asOK("extract_page_content", obj{"goal": "which checkout step is shown"}, fmt.Sprintf(page, idx+[]int{1, 2, 1, 3}[r])))
		}
		add(w)
	}

	// An assistant asks one calendar window in other notations of the
	// same times; it is busy each time.
	{
		w := asRunOf("calendar-window-notations-busy", "calendar", true)
		for i, win := range [][2]string{
			{"2026-12-08T09:00:00Z", "2026-12-08T10:00:00Z"},
			{"2026-12-08T10:00:00+01:00", "2026-12-08T11:00:00+01:00"},
			{"2026-12-08T09:00:00.000Z", "2026-12-08T10:00:00.000Z"},
			{"2026-12-08T04:00:00-05:00", "2026-12-08T05:00:00-05:00"},
			{"2026-12-08 09:00:00Z", "2026-12-08 10:00:00Z"},
		} {
			if i == 3 {
				w.then()
			}
			w.t("Is Ana free then? Checking again.", asOK("gcal_query_freebusy", obj{"timeMin": win[0], "timeMax": win[1], "items": arr{obj{"id": "ana.lopez@shop.example"}}}, egJSON(obj{"kind": "calendar#freeBusy", "timeMin": "2026-12-08T09:00:00.000Z", "timeMax": "2026-12-08T10:00:00.000Z", "calendars": obj{"ana.lopez@shop.example": obj{"busy": arr{obj{"start": "2026-12-08T08:30:00Z", "end": "2026-12-08T10:30:00Z"}}}}})))
		}
		add(w)
	}

	// A code agent flips one line between two spellings; the same test
	// fails after each, only its timing moves.
	{
		w := asRunOf("code-edit-undo-redo-same-failure", "code", true).acc("write", "edit_file", "run_command")
		a, b := "\ttotal += it.Price * it.Qty", "\ttotal = total + it.Qty*it.Price"
		for r := 0; r < 4; r++ {
			if r == 2 {
				w.then()
			}
			old, nw := a, b
			if r%2 == 1 {
				old, nw = b, a
			}
			w.t("Trying another way to sum.", asOK("edit_file", obj{"path": "cart/cart.go", "edits": arr{obj{"oldText": old, "newText": nw}}}, "```diff\n--- cart/cart.go\n+++ cart/cart.go\n@@ -41,1 +41,1 @@\n-"+old+"\n+"+nw+"\n```"))
			w.t("Running the tests.", asOK("run_command", obj{"command": "go test ./cart/"}, svtShell(1, fmt.Sprintf("--- FAIL: TestTotalWithVoucher (0.00s)\n    cart_test.go:42: Total() = 1190, want 1200\nFAIL\nFAIL\tshop/cart\t0.%03ds\nFAIL", 11+r*3), "")))
		}
		add(w)
	}

	// A Jira agent transitions one issue under other spellings of the
	// transition; the workflow wants a resolution each time.
	{
		w := asRunOf("jira-transition-missing-field", "tracker", true).acc("write", "jira_transition_issue")
		for i, tr := range []any{"31", 31, "Done", "done", " 31"} {
			if i == 3 {
				w.then()
			}
			w.t("The transition failed; trying again.", asFail("jira_transition_issue", obj{"issue_key": "SHOP-2291", "transition_id": tr, "comment": "Fixed in 2.4.1"}, "tool_error", "Error transitioning issue SHOP-2291: 400 Bad Request {\"errorMessages\":[],\"errors\":{\"resolution\":\"Resolution is required.\"}}"))
		}
		add(w)
	}

	// A review agent posts its review comment again, restyled, each
	// time it succeeds.
	{
		w := asRunOf("github-comment-posted-again-restyled", "code review", true).acc("write", "add_issue_comment")
		for i, body := range []string{
			"Looks good overall. One nit: `applyVoucher` should round before comparing.",
			"Looks good overall. One nit: `applyVoucher` should round before comparing. ",
			"Looks good overall.\n\nOne nit: `applyVoucher` should round before comparing.",
			"**Looks good overall.** One nit: `applyVoucher` should round before comparing.",
			"Looks good overall! One nit: `applyVoucher` should round before comparing.",
		} {
			if i == 3 {
				w.then()
			}
			w.t("Posting my review.", asOK("add_issue_comment", obj{"owner": "shop", "repo": "web", "issue_number": 884, "body": body}, egJSON(obj{"id": 2512093300 + i*4127, "html_url": fmt.Sprintf("https://github.com/shop/web/pull/884#issuecomment-%d", 2512093300+i*4127), "body": body, "user": obj{"login": "review-bot"}, "created_at": fmt.Sprintf("2026-12-05T21:%02d:07Z", 30+i)})))
		}
		add(w)
	}

	// An on-call agent acknowledges one incident again; each answer the
	// same but for its request id and time.
	{
		w := asRunOf("pagerduty-ack-again-fresh-request", "on-call", true).acc("write", "acknowledge_incident")
		for i := 0; i < 4; i++ {
			if i == 2 {
				w.then()
			}
			w.t("Acknowledging the incident.", asOK("acknowledge_incident", obj{"incident_id": "Q1W7ZP3KX0ABCD", "from": "oncall@shop.example"}, egJSON(obj{"incident": obj{"id": "Q1W7ZP3KX0ABCD", "status": "acknowledged", "title": "checkout-api 5xx above 2%", "acknowledgements": arr{obj{"at": "2026-12-05T21:02:11Z", "acknowledger": obj{"summary": "On-call bot"}}}, "last_status_change_at": "2026-12-05T21:02:11Z"}, "request_id": fmt.Sprintf("f3a2%04x-9c1d-4e0b-a%03d-5be1c0d4%04x", 0x1b2c+i*733, 101+i*17, 0x77aa+i*191), "served_at": fmt.Sprintf("2026-12-05T21:%02d:%02dZ", 3+i, 14+i*9)})))
		}
		add(w)
	}

	// A DNS check under other spellings of one name; it does not exist.
	{
		w := asRunOf("dns-name-respelled-nxdomain", "network", true)
		for i, n := range []string{"api.shop.example", "api.shop.example.", "API.shop.example", "api.Shop.Example.", "api.shop.example"} {
			if i == 3 {
				w.then()
			}
			w.t("Did the record propagate? Looking it up.", asOK("dns_lookup", obj{"name": n, "type": []string{"A", "A", "a", "A", "a"}[i]}, svtDig("api.shop.example", "A", "NXDOMAIN", 21+i*7)))
		}
		add(w)
	}

	// A CI agent dispatches one workflow under other spellings of its
	// ref; the workflow has no dispatch trigger.
	{
		w := asRunOf("gha-dispatch-ref-respelled", "ci", true).acc("write", "run_workflow")
		for i, ref := range []string{"main", "refs/heads/main", "main", "heads/main", "refs/heads/main"} {
			if i == 3 {
				w.then()
			}
			inputs := obj{"environment": "staging"}
			if i%2 == 1 {
				inputs = obj{"environment": "staging", "dry_run": "false"}
			}
			w.t("Dispatching the deploy workflow.", asFail("run_workflow", obj{"owner": "shop", "repo": "web", "workflow_id": "deploy.yml", "ref": ref, "inputs": inputs}, "tool_error", "POST https://api.github.com/repos/shop/web/actions/workflows/deploy.yml/dispatches: 422 Workflow does not have 'workflow_dispatch' trigger []"))
		}
		add(w)
	}

	// A notes agent searches Notion and fetches the page it finds, then
	// searches again in other words and fetches the same page.
	{
		w := asRunOf("notion-search-fetch-round", "notes", true)
		page := egJSON(obj{"object": "page", "id": "1f2c9a7e-44b0-4c1d-9a3e-0b5d7c2e8f11", "properties": obj{"title": "Q4 roadmap"}, "content": "## Q4 roadmap\n- Checkout redesign (in progress)\n- Vouchers v2 (planned)\n- Owner for launch date: TBD", "last_edited_time": "2026-11-28T10:12:00.000Z"})
		for r, q := range []string{"Q4 roadmap launch date", "roadmap Q4 launch", "launch date checkout redesign", "checkout redesign launch Q4"} {
			if r == 2 {
				w.then()
			}
			w.t("Looking for the launch date.", asOK("notion_search", obj{"query": q, "filter": obj{"property": "object", "value": "page"}}, egJSON(obj{"results": arr{obj{"object": "page", "id": "1f2c9a7e-44b0-4c1d-9a3e-0b5d7c2e8f11", "title": "Q4 roadmap", "url": "https://www.notion.so/Q4-roadmap-1f2c9a7e44b04c1d9a3e0b5d7c2e8f11"}}, "has_more": false})))
			w.t("Opening it.", asOK("notion_fetch", obj{"id": "1f2c9a7e-44b0-4c1d-9a3e-0b5d7c2e8f11"}, page))
		}
		add(w)
	}

	// A code agent retries npm install with flags that change nothing;
	// the same peer conflict, a new log file each time.
	{
		w := asRunOf("npm-install-cosmetic-flags-eresolve", "code", true).acc("write", "run_command")
		for i, c := range []string{"npm install", "npm i", "npm install --no-audit", "npm install --no-fund --loglevel=warn", "npm install --prefer-offline"} {
			if i == 3 {
				w.then()
			}
			w.t("Install failed; trying again.", asOK("run_command", obj{"command": c, "cwd": "/repo"}, svtShell(1, "", fmt.Sprintf("npm ERR! code ERESOLVE\nnpm ERR! ERESOLVE unable to resolve dependency tree\nnpm ERR! \nnpm ERR! While resolving: web@2.4.0\nnpm ERR! Found: react@19.0.0\nnpm ERR! Could not resolve dependency:\nnpm ERR! peer react@\"^18.2.0\" from react-day-picker@8.10.1\nnpm ERR! \nnpm ERR! A complete log of this run can be found in: /root/.npm/_logs/2026-12-05T21_%02d_%02d_%03dZ-debug-0.log", 31+i, 7+i*11, 120+i*97))))
		}
		add(w)
	}

	// A support agent asks for one ticket under other spellings of its
	// id, waiting for a reply that has not come.
	{
		w := asRunOf("zendesk-ticket-id-respelled-pending", "support", true)
		t := egJSON(obj{"ticket": obj{"id": 48213, "subject": "Charged twice", "status": "pending", "updated_at": "2026-12-05T18:40:02Z", "comment_count": 3, "requester": "ben.okafor@acme.example"}})
		for i, id := range []any{48213, "48213", "#48213", 48213.0, " 48213"} {
			if i == 3 {
				w.then()
			}
			w.t("Has the customer replied?", asOK("get_ticket", obj{"ticket_id": id, "include": "comments_count"}, t))
		}
		add(w)
	}

	// A shop agent sets one variant's price in other notations; the
	// same variant comes back each time.
	{
		w := asRunOf("shopify-price-notations-same", "shop", true).acc("write", "update_product_variant")
		for i, p := range []any{"19.90", 19.9, "19.9", "19.900", 19.90} {
			if i == 3 {
				w.then()
			}
			w.t("Making sure the price is set.", asOK("update_product_variant", obj{"id": "gid://shopify/ProductVariant/44102938475", "price": p}, egJSON(obj{"productVariant": obj{"id": "gid://shopify/ProductVariant/44102938475", "price": "19.90", "sku": "TEE-BLK-M", "updatedAt": fmt.Sprintf("2026-12-05T21:%02d:%02dZ", 40+i, 3+i*7)}, "userErrors": arr{}})))
		}
		add(w)
	}

	// An SMS agent sends one message to one number in other notations;
	// the provider rejects it each time.
	{
		w := asRunOf("twilio-number-notations-invalid", "messaging", true).acc("write", "send_sms")
		for i, to := range []string{"+1 415 555 01346", "+1415555013 46", "(415) 555-01346", "+1-415-555-01346", "415.555.01346"} {
			if i == 3 {
				w.then()
			}
			w.t("The text did not go out; resending.", asFail("send_sms", obj{"to": to, "from": "+14155550100", "body": "Your courier arrives between 14:00 and 16:00."}, "tool_error", "Twilio error 21211: The 'To' number +141555501346 is not a valid phone number. More info: https://www.twilio.com/docs/errors/21211"))
		}
		add(w)
	}

	// An SRE agent alternates two Prometheus queries that both come back
	// empty.
	{
		w := asRunOf("prometheus-two-queries-alternate-empty", "observability", true)
		qs := []string{`sum(rate(http_requests_total{service="checkout",code=~"5.."}[5m]))`, `sum by (code) (rate(http_requests_total{service="checkout"}[5m]))`}
		for r := 0; r < 4; r++ {
			if r == 2 {
				w.then()
			}
			for _, q := range qs {
				w.t("No data; let me try the other form.", asOK("prometheus_query", obj{"query": q, "time": fmt.Sprintf("2026-12-05T21:%02d:00Z", 40+r)}, svtProm()))
			}
		}
		add(w)
	}

	// A build agent retags one docker build; it fails at the same step.
	{
		w := asRunOf("docker-build-retagged-same-step", "containers", true).acc("write", "docker_build")
		for i, tag := range []string{"shop/web:dev", "shop/web:dev-2", "shop/web:latest", "shop/web:test", "shop/web:dev"} {
			if i == 3 {
				w.then()
			}
			w.t("Build failed; building again.", asFail("docker_build", obj{"context": ".", "dockerfile": "Dockerfile", "tag": tag}, "tool_error", fmt.Sprintf("#%d [build 4/6] RUN npm ci\n#%d 2.%03d npm ERR! code EUSAGE\n#%d 2.%03d npm ERR! The `npm ci` command can only install with an existing package-lock.json\n#%d ERROR: process \"/bin/sh -c npm ci\" did not complete successfully: exit code: 1\nERROR: failed to solve: process \"/bin/sh -c npm ci\" did not complete successfully: exit code: 1", 9+i, 9+i, 114+i*37, 9+i, 131+i*37, 9+i)))
		}
		add(w)
	}

	// A lead hands one research question to a sub-agent in other words;
	// it comes back empty-handed each time.
	{
		w := asRunOf("handoff-research-reworded-nothing", "multi-agent", true)
		for i, task := range []string{
			"Find last quarter's churn rate for the EU segment.",
			"What was the Q3 churn for EU customers?",
			"Look up the EU churn figure for July-September.",
			"Get me churn (EU, Q3 2026) from the reports.",
			"Find the churn rate of European customers in Q3.",
		} {
			if i == 3 {
				w.then()
			}
			w.hand("Asking the analyst.", "analyst", task, "I could not find a churn figure for the EU segment in Q3 in the reports I can reach.", func(s *asw) {
				s.t("", asOK("search_reports", obj{"query": []string{"EU churn Q3", "churn EU Q3 2026", "EU churn July September", "churn EU Q3", "European churn Q3"}[i]}, egJSON(obj{"results": arr{}, "total": 0})))
			})
		}
		add(w)
	}

	// ===================== legit =====================

	// A CI agent polls a run until it completes.
	{
		w := asRunOf("gha-run-polled-until-done", "ci", false)
		for i, s := range [][2]string{{"queued", ""}, {"in_progress", ""}, {"in_progress", ""}, {"in_progress", ""}, {"completed", "success"}} {
			w.t("Waiting for CI.", asOK("get_workflow_run", obj{"owner": "shop", "repo": "web", "run_id": 12093384411}, svtRun(12093384411, 1, s[0], s[1], fmt.Sprintf("2026-12-05T21:%02d:%02dZ", 10+i*2, 5+i*7))))
		}
		add(w)
	}

	// A Slack search refined with the names the last one found.
	{
		w := asRunOf("slack-search-refined-with-names", "chat", false)
		w.t("", asOK("slack_search_messages", obj{"query": "deploy freeze", "count": 20}, svtSlack("deploy freeze", [3]string{"eng-releases", "maria", "Deploy freeze starts Friday, see the thread with Priya for the end date."})))
		w.t("", asOK("slack_search_messages", obj{"query": "from:@priya freeze end", "count": 20}, svtSlack("from:@priya freeze end", [3]string{"eng-leads", "priya", "Freeze ends after the 9th, once the payments audit signs off."})))
		w.t("", asOK("slack_search_messages", obj{"query": "payments audit sign off", "count": 20}, svtSlack("payments audit sign off", [3]string{"finance", "omar", "Audit sign-off scheduled for Dec 9, 15:00."}, [3]string{"finance", "omar", "Auditors need the refund export first."})))
		w.t("", asOK("slack_search_messages", obj{"query": "refund export auditors", "count": 20}, svtSlack("refund export auditors", [3]string{"finance", "lea", "Refund export sent to the auditors on Dec 4."})))
		w.t("", asOK("slack_search_messages", obj{"query": "in:#eng-releases freeze lifted", "count": 20}, svtSlack("in:#eng-releases freeze lifted")))
		add(w)
	}

	// An S3 listing paged by its continuation token.
	{
		w := asRunOf("s3-listing-paged-by-token", "storage", false)
		tok := ""
		for p := 0; p < 5; p++ {
			next := ""
			if p < 4 {
				next = fmt.Sprintf("1%cJm8Qx%04dzP", 'A'+p, 3301+p*17)
			}
			var keys []string
			for k := 0; k < 3; k++ {
				keys = append(keys, fmt.Sprintf("logs/2026/12/05/web-%02d-%d.gz", p*3+k, 1733356800+p*3600+k*60))
			}
			a := obj{"bucket": "shop-logs", "prefix": "logs/2026/12/05/", "max_keys": 3}
			if tok != "" {
				a["continuation_token"] = tok
			}
			w.t("", asOK("list_objects", a, svtS3("logs/2026/12/05/", next, keys...)))
			tok = next
		}
		add(w)
	}

	// A query fails for want of a warehouse; the agent resumes one and
	// the query runs, then the next day's.
	{
		w := asRunOf("snowflake-query-after-warehouse", "data", false).acc("write", "run_snowflake_query")
		q := "SELECT COUNT(*) FROM ANALYTICS.PUBLIC.ORDERS WHERE STATUS = 'failed' AND ORDER_DATE = '%s'"
		w.t("", asFail("run_snowflake_query", obj{"statement": fmt.Sprintf(q, "2026-12-04")}, "tool_error", "000606 (57P03): 01b8c211-0000-7a1c-0000-4d2100001f20: No active warehouse selected in the current session.  Select an active warehouse with the 'use warehouse' command."))
		w.t("", asFail("run_snowflake_query", obj{"statement": "USE WAREHOUSE ANALYTICS_XS"}, "tool_error", "000606 (57P03): 01b8c215-0000-7a1c-0000-4d2100001f81: Warehouse 'ANALYTICS_XS' is suspended. Resume it with ALTER WAREHOUSE."))
		w.t("", asOK("run_snowflake_query", obj{"statement": "ALTER WAREHOUSE ANALYTICS_XS RESUME"}, egJSON(arr{obj{"status": "Statement executed successfully."}})))
		w.t("", asOK("run_snowflake_query", obj{"statement": "USE WAREHOUSE ANALYTICS_XS"}, egJSON(arr{obj{"status": "Statement executed successfully."}})))
		for i, d := range []string{"2026-12-04", "2026-12-03", "2026-12-02"} {
			w.t("", asOK("run_snowflake_query", obj{"statement": fmt.Sprintf(q, d)}, egJSON(arr{obj{"COUNT(*)": 17 + i*5}})))
		}
		add(w)
	}

	// A browser agent clicks through a checkout wizard; the step moves.
	{
		w := asRunOf("browser-wizard-clicked-through", "browser", false).acc("write", "click_element_by_index")
		steps := []string{"Step 1 of 3: Delivery", "Step 2 of 3: Payment", "Step 3 of 3: Review", "Order placed – confirmation #A-55120"}
		for r, idx := range []int{14, 11, 9} {
			w.t("Clicking Continue.", asOK("click_element_by_index", obj{"index": idx}, fmt.Sprintf("🖱️  Clicked button with index %d: Continue", idx)))
			w.t("Reading the page.", asOK("extract_page_content", obj{"goal": "which checkout step is shown"}, fmt.Sprintf("Checkout – %s\n[%d]<button>Continue</button>", steps[r+1], idx-2)))
		}
		add(w)
	}

	// An assistant asks free/busy day by day; several days are alike.
	{
		w := asRunOf("calendar-freebusy-day-by-day", "calendar", false)
		for d := 8; d <= 12; d++ {
			busy := arr{obj{"start": fmt.Sprintf("2026-12-%02dT08:00:00Z", d), "end": fmt.Sprintf("2026-12-%02dT17:00:00Z", d)}}
			w.t("Looking for a free hour for Ana.", asOK("gcal_query_freebusy", obj{"timeMin": fmt.Sprintf("2026-12-%02dT08:00:00Z", d), "timeMax": fmt.Sprintf("2026-12-%02dT17:00:00Z", d), "items": arr{obj{"id": "ana.lopez@shop.example"}}}, egJSON(obj{"kind": "calendar#freeBusy", "timeMin": fmt.Sprintf("2026-12-%02dT08:00:00.000Z", d), "timeMax": fmt.Sprintf("2026-12-%02dT17:00:00.000Z", d), "calendars": obj{"ana.lopez@shop.example": obj{"busy": busy}}})))
		}
		add(w)
	}

	// A code agent fixes tests one failure at a time.
	{
		w := asRunOf("code-tests-fixed-one-by-one", "code", false).acc("write", "edit_file", "run_command")
		fails := []string{"TestTotalWithVoucher", "TestTotalRounding", "TestEmptyCart"}
		for r := 0; r <= len(fails); r++ {
			var out []string
			for _, f := range fails[r:] {
				out = append(out, fmt.Sprintf("--- FAIL: %s (0.00s)\n    cart_test.go:%d: mismatch", f, 40+len(f)))
			}
			if len(out) == 0 {
				w.t("Running the tests.", asOK("run_command", obj{"command": "go test ./cart/"}, svtShell(0, fmt.Sprintf("ok  \tshop/cart\t0.%03ds", 14+r), "")))
				break
			}
			w.t("Running the tests.", asOK("run_command", obj{"command": "go test ./cart/"}, svtShell(1, strings.Join(out, "\n")+fmt.Sprintf("\nFAIL\nFAIL\tshop/cart\t0.%03ds\nFAIL", 11+r), "")))
			w.t("Fixing "+fails[r]+".", asOK("edit_file", obj{"path": "cart/cart.go", "edits": arr{obj{"oldText": fmt.Sprintf("// step %d", r), "newText": fmt.Sprintf("// step %d fixed", r)}}}, fmt.Sprintf("```diff\n@@ -%d,1 +%d,1 @@\n-// step %d\n+// step %d fixed\n```", 30+r*9, 30+r*9, r, r)))
		}
		add(w)
	}

	// A Jira agent closes several issues; the answers are alike.
	{
		w := asRunOf("jira-several-issues-transitioned", "tracker", false).acc("write", "jira_transition_issue")
		for i := 0; i < 6; i++ {
			k := fmt.Sprintf("SHOP-%d", 2291+i*3)
			w.t("", asOK("jira_transition_issue", obj{"issue_key": k, "transition_id": "31", "fields": obj{"resolution": obj{"name": "Done"}}}, "Issue "+k+" transitioned successfully"))
		}
		add(w)
	}

	// A release agent leaves one comment on several pull requests.
	{
		w := asRunOf("github-one-comment-several-prs", "code review", false).acc("write", "add_issue_comment")
		for i, n := range []int{881, 884, 886, 890, 893} {
			body := "Rebased on main after the voucher fix; please re-review."
			w.t("", asOK("add_issue_comment", obj{"owner": "shop", "repo": "web", "issue_number": n, "body": body}, egJSON(obj{"id": 2512100000 + i*911, "html_url": fmt.Sprintf("https://github.com/shop/web/pull/%d#issuecomment-%d", n, 2512100000+i*911), "body": body})))
		}
		add(w)
	}

	// An on-call agent pages through open incidents by offset.
	{
		w := asRunOf("pagerduty-incidents-by-offset", "on-call", false)
		for p := 0; p < 4; p++ {
			var is arr
			for k := 0; k < 3; k++ {
				is = append(is, obj{"id": fmt.Sprintf("Q%dX%02dZP3KX0A", p, k*7+p), "title": fmt.Sprintf("disk usage above 90%% on db-%d", p*3+k), "status": "triggered"})
			}
			w.t("", asOK("list_incidents", obj{"statuses": arr{"triggered"}, "limit": 3, "offset": p * 3}, egJSON(obj{"incidents": is, "limit": 3, "offset": p * 3, "more": p < 3})))
		}
		add(w)
	}

	// A DNS record polled until it appears.
	{
		w := asRunOf("dns-record-polled-until-present", "network", false)
		w.t("Waiting for the record.", asOK("dns_lookup", obj{"name": "api.shop.example", "type": "A"}, svtDig("api.shop.example", "A", "NXDOMAIN", 23)))
		w.t("Still waiting.", asOK("dns_lookup", obj{"name": "api.shop.example", "type": "A"}, svtDig("api.shop.example", "A", "NXDOMAIN", 19)))
		w.t("Still waiting.", asOK("dns_lookup", obj{"name": "api.shop.example", "type": "A"}, svtDig("api.shop.example", "A", "NOERROR", 31, "203.0.113.42")))
		add(w)
	}

	// A flaky job re-run once; it passes.
	{
		w := asRunOf("gha-flaky-job-rerun-passes", "ci", false).acc("write", "rerun_failed_jobs")
		w.t("", asOK("get_job_logs", obj{"owner": "shop", "repo": "web", "run_id": 12093384411, "failed_only": true, "tail_lines": 5}, "Job 'e2e' attempt 1\nError: page.goto: net::ERR_CONNECTION_RESET at http://localhost:4173/\n##[error]Process completed with exit code 1."))
		w.t("", asOK("rerun_failed_jobs", obj{"owner": "shop", "repo": "web", "run_id": 12093384411}, egJSON(obj{"status": 201, "message": "Re-run requested"})))
		for i, s := range [][2]string{{"in_progress", ""}, {"in_progress", ""}, {"completed", "success"}} {
			w.t("", asOK("get_workflow_run", obj{"owner": "shop", "repo": "web", "run_id": 12093384411}, svtRun(12093384411, 2, s[0], s[1], fmt.Sprintf("2026-12-05T21:%02d:10Z", 20+i*3))))
		}
		add(w)
	}

	// The pages one Notion search found, fetched one by one.
	{
		w := asRunOf("notion-pages-fetched-one-by-one", "notes", false)
		ids := []string{"1f2c9a7e-44b0-4c1d-9a3e-0b5d7c2e8f11", "2a9d0b11-7c3e-4f52-8e01-c4d9a1b2e3f4", "3b7e1c22-8d4f-4a63-9f12-d5eab2c3f405"}
		titles := []string{"Q4 roadmap", "Checkout redesign – launch plan", "Vouchers v2 – spec"}
		var rs arr
		for i := range ids {
			rs = append(rs, obj{"object": "page", "id": ids[i], "title": titles[i]})
		}
		w.t("", asOK("notion_search", obj{"query": "checkout launch"}, egJSON(obj{"results": rs, "has_more": false})))
		for i, id := range ids {
			w.t("", asOK("notion_fetch", obj{"id": id}, egJSON(obj{"object": "page", "id": id, "properties": obj{"title": titles[i]}, "content": "## " + titles[i] + fmt.Sprintf("\n- item %d\n- owner: team %c", i+1, 'A'+i), "last_edited_time": fmt.Sprintf("2026-11-2%dT10:12:00.000Z", i+1)})))
		}
		add(w)
	}

	// npm install fails on a peer conflict; the agent pins the peer,
	// then retries with a flag that changes the resolution; it installs.
	{
		w := asRunOf("npm-install-fixed-then-passes", "code", false).acc("write", "run_command", "edit_file")
		eres := "npm ERR! code ERESOLVE\nnpm ERR! ERESOLVE unable to resolve dependency tree\nnpm ERR! peer react@\"^18.2.0\" from react-day-picker@8.10.1\nnpm ERR! A complete log of this run can be found in: /root/.npm/_logs/2026-12-05T21_31_07_120Z-debug-0.log"
		w.t("", asOK("run_command", obj{"command": "npm install", "cwd": "/repo"}, svtShell(1, "", eres)))
		w.t("", asOK("edit_file", obj{"path": "package.json", "edits": arr{obj{"oldText": "\"react-day-picker\": \"^8.10.1\"", "newText": "\"react-day-picker\": \"^9.4.0\""}}}, "```diff\n-    \"react-day-picker\": \"^8.10.1\"\n+    \"react-day-picker\": \"^9.4.0\"\n```"))
		w.t("", asOK("run_command", obj{"command": "npm install", "cwd": "/repo"}, svtShell(1, "", "npm ERR! code ERESOLVE\nnpm ERR! peer date-fns@\"^2.28.0\" from react-day-picker@9.4.0\nnpm ERR! A complete log of this run can be found in: /root/.npm/_logs/2026-12-05T21_33_40_002Z-debug-0.log")))
		w.t("", asOK("run_command", obj{"command": "npm install --legacy-peer-deps", "cwd": "/repo"}, svtShell(0, "added 1214 packages, and audited 1215 packages in 41s\n\nfound 0 vulnerabilities", "")))
		add(w)
	}

	// A support agent checks several empty views one by one.
	{
		w := asRunOf("zendesk-empty-views-one-by-one", "support", false)
		for i, v := range []string{"Unassigned urgent", "Pending > 72h", "Refund requests", "VIP waiting", "Escalated to billing"} {
			var ts arr
			if i == 4 {
				ts = arr{obj{"id": 48291, "subject": "Invoice missing VAT id", "status": "open"}}
			} else {
				ts = arr{}
			}
			w.t("", asOK("list_view_tickets", obj{"view_id": 360001 + i*13, "view": v}, egJSON(obj{"tickets": ts, "count": len(ts), "next_page": nil})))
		}
		add(w)
	}

	// A shop agent sets one price on several variants.
	{
		w := asRunOf("shopify-price-several-variants", "shop", false).acc("write", "update_product_variant")
		for i, sku := range []string{"TEE-BLK-S", "TEE-BLK-M", "TEE-BLK-L", "TEE-BLK-XL", "TEE-WHT-M"} {
			id := fmt.Sprintf("gid://shopify/ProductVariant/%d", 44102938470+i*5)
			w.t("", asOK("update_product_variant", obj{"id": id, "price": "19.90"}, egJSON(obj{"productVariant": obj{"id": id, "price": "19.90", "sku": sku, "updatedAt": fmt.Sprintf("2026-12-05T21:50:%02dZ", 3+i*4)}, "userErrors": arr{}})))
		}
		add(w)
	}

	// One text sent to several numbers.
	{
		w := asRunOf("twilio-one-text-several-numbers", "messaging", false).acc("write", "send_sms")
		for i := 0; i < 6; i++ {
			to := fmt.Sprintf("+1415555%04d", 134+i*211)
			w.t("", asOK("send_sms", obj{"to": to, "from": "+14155550100", "body": "Your courier arrives between 14:00 and 16:00."}, egJSON(obj{"sid": fmt.Sprintf("SM8c1f%04x2b9e4d0a%04x77c1e0", 0x1a2b+i*331, 0x9f00+i*77), "status": "queued", "to": to})))
		}
		add(w)
	}

	// An SRE agent tries metric names until one has data.
	{
		w := asRunOf("prometheus-metric-names-until-data", "observability", false)
		for i, m := range []string{"http_requests_total", "http_server_requests_seconds_count", "nginx_http_requests_total", "envoy_cluster_upstream_rq_xx"} {
			res := svtProm()
			if i == 3 {
				res = svtProm([2]string{"checkout", "0.0231"})
			}
			w.t("", asOK("prometheus_query", obj{"query": fmt.Sprintf(`sum(rate(%s{service="checkout"}[5m]))`, m)}, res))
		}
		add(w)
	}

	// A build agent fixes its Dockerfile build by build.
	{
		w := asRunOf("docker-build-fixed-step-by-step", "containers", false).acc("write", "docker_build", "edit_file")
		w.t("", asFail("docker_build", obj{"context": ".", "tag": "shop/web:dev"}, "tool_error", "#9 [build 4/6] RUN npm ci\n#9 ERROR: process \"/bin/sh -c npm ci\" did not complete successfully: exit code: 1"))
		w.t("", asOK("edit_file", obj{"path": "Dockerfile", "edits": arr{obj{"oldText": "COPY package.json ./", "newText": "COPY package.json package-lock.json ./"}}}, "```diff\n-COPY package.json ./\n+COPY package.json package-lock.json ./\n```"))
		w.t("", asFail("docker_build", obj{"context": ".", "tag": "shop/web:dev"}, "tool_error", "#11 [build 5/6] RUN npm run build\n#11 1.204 Error: Cannot find module 'vite'\n#11 ERROR: process \"/bin/sh -c npm run build\" did not complete successfully: exit code: 1"))
		w.t("", asOK("edit_file", obj{"path": "Dockerfile", "edits": arr{obj{"oldText": "RUN npm ci --omit=dev", "newText": "RUN npm ci"}}}, "```diff\n-RUN npm ci --omit=dev\n+RUN npm ci\n```"))
		w.t("", asOK("docker_build", obj{"context": ".", "tag": "shop/web:dev"}, "#14 exporting to image\n#14 naming to docker.io/shop/web:dev done\nSuccessfully built 4f1c2a9b7e30"))
		add(w)
	}

	// A lead hands distinct research questions to one sub-agent.
	{
		w := asRunOf("handoff-distinct-quarters", "multi-agent", false)
		for i, q := range []string{"Q1", "Q2", "Q3", "Q4"} {
			w.hand("Asking the analyst.", "analyst", "Find the EU churn rate for "+q+" 2026.", fmt.Sprintf("EU churn in %s 2026: %.1f%%.", q, 2.1+float64(i)*0.3), func(s *asw) {
				s.t("", asOK("search_reports", obj{"query": "EU churn " + q + " 2026"}, egJSON(obj{"results": arr{obj{"title": "Churn report " + q, "churn_eu": 2.1 + float64(i)*0.3}}, "total": 1})))
			})
		}
		add(w)
	}

	return runs
}
