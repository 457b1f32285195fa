package loops

import (
	"fmt"
	"strings"
)

func tenthRuns() []*asRun {
	var runs []*asRun
	add := func(w *asw) { runs = append(runs, w.run) }
	const proj = "qxvbnmkpwzrt"

	// --- legit ---

	// A database agent explores a schema table by table: the same tool,
	// another table each time, each with its own columns.
	{
		w := asRunOf("db-schema-table-by-table", "database", false)
		tables := []string{"customers", "orders", "order_items", "products", "invoices", "payments", "refunds", "shipments", "addresses", "coupons", "reviews", "warehouses"}
		w.t("", asOK("list_tables", obj{}, strings.Join(tables, "\n")))
		for i, tb := range tables {
			cols := arr{obj{"name": "id", "type": "INTEGER", "notnull": 1, "pk": 1}}
			for j := 0; j < 3+i%4; j++ {
				cols = append(cols, obj{"name": fmt.Sprintf("%s_%s", strings.TrimSuffix(tb, "s"), []string{"ref", "status", "amount", "created_at", "note", "code"}[(i+j)%6]), "type": []string{"TEXT", "INTEGER", "REAL", "TEXT"}[j%4], "notnull": j % 2, "pk": 0})
			}
			w.t("", asOK("describe_table", obj{"table_name": tb}, egJSON(cols)))
		}
		add(w)
	}

	// A database agent finds no shipped orders under the value as typed,
	// looks up the column's real values and finds them under 'SHIPPED'.
	{
		w := asRunOf("db-value-spelling-looked-up", "database", false)
		w.t("", asOK("query", obj{"sql": "SELECT id, total FROM orders WHERE status = 'shipped' AND region = 'EMEA' LIMIT 50"}, tnPG()))
		w.t("Maybe the status is spelt otherwise.", asOK("query", obj{"sql": "SELECT DISTINCT status FROM orders"}, tnPG(obj{"status": "PENDING"}, obj{"status": "SHIPPED"}, obj{"status": "CANCELLED"})))
		w.t("", asOK("query", obj{"sql": "SELECT id, total FROM orders WHERE status = 'SHIPPED' AND region = 'EMEA' LIMIT 50"}, tnPG(obj{"id": 1042, "total": "129.00"}, obj{"id": 1077, "total": "48.50"}, obj{"id": 1103, "total": "310.20"})))
		w.t("", asOK("query", obj{"sql": "SELECT o.id, o.total, c.email FROM orders o JOIN customers c ON c.id = o.customer_id WHERE o.status = 'SHIPPED' AND o.region = 'EMEA' LIMIT 50"},
			tnPG(obj{"id": 1042, "total": "129.00", "email": "ana@northwind.example"}, obj{"id": 1077, "total": "48.50", "email": "bo@contoso.example"}, obj{"id": 1103, "total": "310.20", "email": "chen@fabrikam.example"})))
		add(w)
	}

	// A database agent on Supabase counts rows in each of eight tables:
	// the same statement's shape, another table and count each time, each
	// answer fenced by a new boundary id.
	{
		w := asRunOf("db-supabase-count-each-table", "database", false)
		for i, tb := range []string{"profiles", "teams", "memberships", "projects", "tasks", "comments", "attachments", "audit_log"} {
			w.t("", asOK("execute_sql", obj{"project_id": proj, "query": "select count(*) from public." + tb}, tnSupabase(i, arr{obj{"count": 120 + i*i*377}})))
		}
		add(w)
	}

	// A GitHub agent triages 60 issues: two pages listed, then a label set
	// on each, one call an issue.
	{
		w := asRunOf("github-triage-60-issues", "github", false).acc("write", "update_issue")
		for p := 1; p <= 2; p++ {
			var is []obj
			for i := 0; i < 30; i++ {
				n := 400 + (p-1)*30 + i
				is = append(is, tnGHIssue(n, fmt.Sprintf("%s in %s", []string{"Crash", "Timeout", "Typo", "Wrong total", "Slow page"}[n%5], []string{"checkout", "search", "billing", "docs"}[n%4]), nil, "2026-12-04T12:00:00Z"))
			}
			a := arr{}
			for _, x := range is {
				a = append(a, x)
			}
			w.t("", asOK("list_issues", obj{"owner": "acme", "repo": "api", "state": "open", "page": p, "perPage": 30}, egJSON(a)))
		}
		for i := 0; i < 60; i++ {
			n := 400 + i
			lb := []string{"bug", "performance", "docs", "bug", "performance"}[n%5]
			w.t("", asOK("update_issue", obj{"owner": "acme", "repo": "api", "issue_number": n, "labels": arr{lb, "area/" + []string{"checkout", "search", "billing", "docs"}[n%4]}},
				egJSON(tnGHIssue(n, "", []string{lb, "area/" + []string{"checkout", "search", "billing", "docs"}[n%4]}, fmt.Sprintf("2026-12-05T00:%02d:%02dZ", 20+i/30, i*2%60)))))
		}
		add(w)
	}

	// A GitHub agent searches PRs by a label that does not exist, lists
	// the repository's labels, and searches under the real one.
	{
		w := asRunOf("github-label-looked-up", "github", false)
		w.t("", asOK("search_pull_requests", obj{"query": "repo:acme/api is:pr is:open label:bug"}, egJSON(obj{"total_count": 0, "incomplete_results": false, "items": arr{}})))
		w.t("Let me check the label names.", asOK("list_labels", obj{"owner": "acme", "repo": "api"}, egJSON(arr{obj{"name": "type/bug"}, obj{"name": "type/feature"}, obj{"name": "area/checkout"}})))
		w.t("", asOK("search_pull_requests", obj{"query": "repo:acme/api is:pr is:open label:type/bug"}, egJSON(obj{"total_count": 2, "incomplete_results": false, "items": arr{
			obj{"number": 512, "title": "Fix rounding in totals", "state": "open", "draft": false, "user": obj{"login": "bo"}},
			obj{"number": 518, "title": "Retry on serialization failure", "state": "open", "draft": true, "user": obj{"login": "ana"}}}})))
		add(w)
	}

	// A GitHub agent's comment is refused on a fork; it comments on the
	// upstream pull request, where it may.
	{
		w := asRunOf("github-comment-refused-then-upstream", "github", false).acc("write", "add_issue_comment")
		body := "The rounding fix looks right; please add a test for negative totals."
		w.t("", asFail("add_issue_comment", obj{"owner": "bo-dev", "repo": "api", "issue_number": 3, "body": body}, "forbidden", "failed to create comment: POST https://api.github.com/repos/bo-dev/api/issues/3/comments: 403 Resource not accessible by personal access token []"))
		w.t("I should comment on the upstream PR instead.", asOK("add_issue_comment", obj{"owner": "acme", "repo": "api", "issue_number": 512, "body": body}, egJSON(obj{"id": 2519904411, "html_url": "https://github.com/acme/api/pull/512#issuecomment-2519904411", "body": body})))
		add(w)
	}

	// A calendar agent books eight meetings, each checked then created.
	{
		w := asRunOf("calendar-book-eight-meetings", "calendar", false).acc("write", "create-event")
		people := []string{"ana", "bo", "chen", "dee", "eli", "fay", "gus", "hal"}
		for i, p := range people {
			day := 7 + i/3
			h := 9 + i%3*2
			min, max := fmt.Sprintf("2026-12-%02dT%02d:00:00Z", day, h), fmt.Sprintf("2026-12-%02dT%02d:30:00Z", day, h)
			w.t("", asOK("get-freebusy", obj{"calendars": arr{obj{"id": p + "@acme.example"}}, "timeMin": min, "timeMax": max}, tnFreeBusy(min, max)))
			w.t("", asOK("create-event", obj{"calendarId": "primary", "summary": "1:1 with " + p, "start": min, "end": max, "attendees": arr{obj{"email": p + "@acme.example"}}},
				fmt.Sprintf("Event created: 1:1 with %s (%s)", p, []string{"k2q9", "m3r1", "p7s4", "t0v8", "w5x2", "y9z6", "b4c3", "d8e1"}[i])))
		}
		add(w)
	}

	// A calendar agent shifts its window an hour at a time; the third
	// window is free and it books it.
	{
		w := asRunOf("calendar-third-window-free", "calendar", false).acc("write", "create-event")
		busy := [][3]string{{"Standup", "2026-12-07T09:00:00Z", "2026-12-07T10:00:00Z"}, {"Design review", "2026-12-07T10:00:00Z", "2026-12-07T11:00:00Z"}}
		for i := 0; i < 3; i++ {
			min, max := fmt.Sprintf("2026-12-07T%02d:00:00Z", 9+i), fmt.Sprintf("2026-12-07T%02d:00:00Z", 10+i)
			if i < 2 {
				w.t("", asOK("list-events", obj{"calendarId": "primary", "timeMin": min, "timeMax": max}, tnCalEvents(busy[i])))
			} else {
				w.t("", asOK("list-events", obj{"calendarId": "primary", "timeMin": min, "timeMax": max}, tnCalEvents()))
			}
		}
		w.t("11:00 is free.", asOK("create-event", obj{"calendarId": "primary", "summary": "Budget sync", "start": "2026-12-07T11:00:00Z", "end": "2026-12-07T12:00:00Z"}, "Event created: Budget sync (q8w2)"))
		add(w)
	}

	// A pipeline agent's job fails on a missing column; it fixes the
	// mapping for real and the job runs through.
	{
		w := asRunOf("pipeline-real-fix-succeeds", "pipeline", false).acc("write", "trigger_dag", "write_file")
		w.t("", asOK("trigger_dag", obj{"dag_id": "orders_daily", "conf": obj{}}, tnDagRun("orders_daily", "manual__2026-12-05T00:10:00+00:00", "queued", 0, 0)))
		w.t("", asOK("get_dag_run", obj{"dag_id": "orders_daily", "dag_run_id": "manual__2026-12-05T00:10:00+00:00"}, tnDagRun("orders_daily", "manual__2026-12-05T00:10:00+00:00", "failed", 0, 62)))
		w.t("", asOK("get_task_instance_log", obj{"dag_id": "orders_daily", "dag_run_id": "manual__2026-12-05T00:10:00+00:00", "task_id": "load_orders", "try_number": 1}, "[2026-12-05, 00:11:02 UTC] {taskinstance.py:2905} ERROR - Task failed with exception\nKeyError: 'customer_id'\n  File \"/opt/airflow/dags/orders/load.py\", line 41, in map_row"))
		w.t("The source renamed the column to customerId.", asOK("write_file", obj{"path": "dags/orders/mapping.yaml", "content": "columns:\n  id: order_id\n  customerId: customer_id\n  total: total\n"}, "Successfully wrote to dags/orders/mapping.yaml"))
		w.t("", asOK("trigger_dag", obj{"dag_id": "orders_daily", "conf": obj{}}, tnDagRun("orders_daily", "manual__2026-12-05T00:14:00+00:00", "queued", 240, 0)))
		for i, st := range []string{"running", "running", "success"} {
			w.t("", asOK("get_dag_run", obj{"dag_id": "orders_daily", "dag_run_id": "manual__2026-12-05T00:14:00+00:00"}, tnDagRun("orders_daily", "manual__2026-12-05T00:14:00+00:00", st, 240, 20+i*25)))
			if st == "running" {
				w.t("", asOK("list_task_instances", obj{"dag_id": "orders_daily", "dag_run_id": "manual__2026-12-05T00:14:00+00:00"}, egJSON(obj{"task_instances": arr{obj{"task_id": "extract", "state": "success"}, obj{"task_id": "load_orders", "state": []string{"running", "success"}[i]}, obj{"task_id": "publish", "state": []string{"none", "running"}[i]}}, "total_entries": 3})))
			}
		}
		add(w)
	}

	// A support desk hands a case on once: tier 1 gathers the facts, tier
	// 2 finds the cause and answers.
	{
		w := asRunOf("support-escalated-once-resolved", "support", false)
		w.hand("", "tier1_agent", "Customer 88123 says their invoice for November is double-charged.", "Two charges of EUR 49 on 2 Nov, same card; one refund needed. Escalating: refunds need tier 2.", func(s *asw) {
			s.t("", asOK("get_customer", obj{"customer_id": "88123"}, egJSON(obj{"id": "88123", "email": "dee@tailspin.example", "plan": "team", "card_last4": "4242"})))
			s.t("", asOK("list_charges", obj{"customer_id": "88123", "created_gte": "2026-11-01"}, egJSON(arr{obj{"id": "ch_3Qa1", "amount": 4900, "created": "2026-11-02T08:00:01Z"}, obj{"id": "ch_3Qa2", "amount": 4900, "created": "2026-11-02T08:00:03Z"}})))
		})
		w.hand("", "tier2_agent", "Refund one of two duplicate November charges (ch_3Qa1, ch_3Qa2) for customer 88123.", "Refunded ch_3Qa2 (re_9Kd2); the duplicate came from a client retry without an idempotency key.", func(s *asw) {
			s.t("", asOK("create_refund", obj{"charge": "ch_3Qa2", "reason": "duplicate"}, egJSON(obj{"id": "re_9Kd2", "charge": "ch_3Qa2", "status": "succeeded", "amount": 4900})))
		})
		w.t("", asOK("reply_to_ticket", obj{"ticket_id": "T-55120", "body": "We refunded the duplicate charge of EUR 49; it will show in 5–10 days."}, egJSON(obj{"ticket_id": "T-55120", "status": "pending_customer"})))
		add(w)
	}

	// A deployment agent alternates the deployment and its events: the
	// events grow and the state moves to READY.
	{
		w := asRunOf("deploy-status-events-progress", "devops", false)
		var evs arr
		steps := []string{"Cloning github.com/acme/shop", "Installing dependencies", "Running build", "Build completed; deployed"}
		for i := 0; i < 4; i++ {
			st := []string{"QUEUED", "INITIALIZING", "BUILDING", "READY"}[i]
			w.t("", asOK("get_deployment", obj{"idOrUrl": "dpl_7Hq2kLm9"}, tnDeploy("dpl_7Hq2kLm9", st, i)))
			evs = append(evs, obj{"type": "stdout", "created": 1764893403000 + i*9000, "text": steps[i]})
			w.t("", asOK("get_deployment_events", obj{"idOrUrl": "dpl_7Hq2kLm9", "since": 1764893400000 + i*9000}, egJSON(obj{"events": evs[i:], "pagination": obj{"next": 1764893409000 + i*9000}})))
		}
		add(w)
	}

	// A GitHub agent hits the secondary rate limit on a file read, backs
	// off longer each time, and the third retry goes through.
	{
		w := asRunOf("github-backoff-then-succeeds", "github", false).retryable("get_file_contents")
		a := obj{"owner": "acme", "repo": "api", "path": "src/billing/totals.ts"}
		for i, s := range []int{60, 37, 9} {
			w.t(fmt.Sprintf("Rate limited; waiting %ds.", []int{1, 2, 4}[i]), asFail("get_file_contents", a, "rate_limited", fmt.Sprintf("failed to get file contents: GET https://api.github.com/repos/acme/api/contents/src/billing/totals.ts: 403 You have exceeded a secondary rate limit. Please wait a few minutes before you try again. [rate reset in %ds]", s)))
		}
		w.t("", asOK("get_file_contents", a, "export function total(lines: Line[]): number {\n  return lines.reduce((s, l) => s + l.qty * l.price, 0);\n}\n"))
		add(w)
	}

	// A crawler pages 40 pages of an API by opaque cursor, new items on
	// each.
	{
		w := asRunOf("crawl-40-pages-cursor", "research", false)
		cur := ""
		for p := 0; p < 40; p++ {
			var items arr
			for i := 0; i < 10; i++ {
				n := p*10 + i
				items = append(items, obj{"id": fmt.Sprintf("prod_%05d", 10007*n%99991), "name": fmt.Sprintf("%s %d", []string{"Alto", "Ridge", "Mesa", "Cairn", "Tor"}[n%5], n), "price": 40 + n*13%120})
			}
			next := fmt.Sprintf("eyJvZmZzZXQiOi%02dwfQ%c%c", p+1, 'A'+p%26, 'a'+p*7%26)
			a := obj{"limit": 10}
			if cur != "" {
				a["cursor"] = cur
			}
			w.t("", asOK("list_products", a, egJSON(obj{"data": items, "has_more": p < 39, "next_cursor": next})))
			cur = next
		}
		add(w)
	}

	// A code agent's failing tests fall 10 → 7 → 3 → 0 after each fix.
	{
		w := asRunOf("code-failures-10-7-3-0", "code", false).acc("write", "edit_file")
		var fails []string
		for i := 0; i < 10; i++ {
			fails = append(fails, fmt.Sprintf("tests/test_%s.py::test_case_%d", []string{"parser", "lexer", "eval"}[i%3], i))
		}
		w.t("", asOK("run_command", obj{"command": "pytest -q"}, tnPytest(0, 140, fails...)))
		for i, left := range []int{7, 3, 0} {
			w.t("", asOK("edit_file", obj{"path": []string{"calc/parser.py", "calc/lexer.py", "calc/eval.py"}[i], "edits": arr{obj{"oldText": []string{"tok = next(it)", "if ch.isdigit():", "return a / b"}[i], "newText": []string{"tok = next(it, None)", "if ch.isdigit() or ch == '.':", "return a / b if b else math.nan"}[i]}}},
				fmt.Sprintf("```diff\n@@ -%d +%d @@\n- old\n+ new\n```", 12+i*20, 12+i*20)))
			w.t("", asOK("run_command", obj{"command": "pytest -q"}, tnPytest(i+1, 140, fails[10-left:]...)))
		}
		add(w)
	}

	// A translation agent fixes one sentence at a time: each call another
	// sentence, one of them asked again with a glossary term.
	{
		w := asRunOf("translate-sentence-by-sentence", "translation", false)
		src := []string{"Your order has shipped.", "It will arrive in three days.", "Track it with the link below.", "Returns are free within 30 days.", "Keep the receipt.", "Questions? Reply to this email.", "Thank you for shopping with us.", "The parcel may need a signature."}
		out := []string{"Ihre Bestellung wurde versandt.", "Sie kommt in drei Tagen an.", "Verfolgen Sie sie über den Link unten.", "Rücksendungen sind innerhalb von 30 Tagen kostenlos.", "Bewahren Sie den Beleg auf.", "Fragen? Antworten Sie auf diese E-Mail.", "Danke für Ihren Einkauf.", "Für das Paket kann eine Unterschrift nötig sein."}
		for i, s := range src {
			w.t("", asOK("translate_text", obj{"text": s, "source_lang": "EN", "target_lang": "DE", "formality": "more"}, egJSON(obj{"translations": arr{obj{"detected_source_language": "EN", "text": out[i]}}})))
		}
		w.t("Use the glossary's word for receipt.", asOK("translate_text", obj{"text": src[4], "source_lang": "EN", "target_lang": "DE", "formality": "more", "glossary_id": "gls-7f2a"}, egJSON(obj{"translations": arr{obj{"detected_source_language": "EN", "text": "Bewahren Sie die Quittung auf."}}})))
		add(w)
	}

	// A database agent tunes a slow query: the plan, an index, the same
	// query again now fast.
	{
		w := asRunOf("db-index-then-same-query", "database", false).acc("write", "execute_sql")
		q := "select customer_id, sum(total) from orders where created_at >= now() - interval '30 days' group by 1 order by 2 desc limit 10"
		w.t("", asOK("execute_sql", obj{"project_id": proj, "query": "explain analyze " + q}, tnSupabase(0, arr{obj{"QUERY PLAN": "Seq Scan on orders  (cost=0.00..48211.00 rows=120344) (actual time=0.03..912.4 rows=118002 loops=1)"}, obj{"QUERY PLAN": "Execution Time: 951.310 ms"}})))
		w.t("", asOK("execute_sql", obj{"project_id": proj, "query": "create index concurrently orders_created_at_idx on orders (created_at)"}, tnSupabase(1, arr{})))
		w.t("", asOK("execute_sql", obj{"project_id": proj, "query": "explain analyze " + q}, tnSupabase(2, arr{obj{"QUERY PLAN": "Index Scan using orders_created_at_idx on orders  (cost=0.42..9120.11 rows=120344) (actual time=0.02..88.1 rows=118002 loops=1)"}, obj{"QUERY PLAN": "Execution Time: 97.904 ms"}})))
		add(w)
	}

	// A math agent runs a computation at growing precision until it
	// settles.
	{
		w := asRunOf("math-precision-grows", "math", false)
		for _, d := range []int{10, 20, 30, 40} {
			w.t("", asOK("run_python", obj{"code": fmt.Sprintf("from mpmath import mp\nmp.dps = %d\nprint(mp.zeta(3))", d)}, egJSON(obj{"stdout": "1.2020569031595942853997381615114499907649862923405"[:d+2] + "\n", "stderr": "", "exit_code": 0})))
		}
		add(w)
	}

	// A support agent searches the help centre in other words; each finds
	// other articles, and the third has the answer.
	{
		w := asRunOf("support-kb-searches-new-articles", "support", false)
		for i, q := range []string{"invoice double charge", "duplicate payment refund", "charged twice same day"} {
			w.t("", asOK("search_articles", obj{"query": q, "per_page": 3}, egJSON(obj{"count": 2, "results": arr{
				obj{"id": 3601 + i*10, "title": []string{"Reading your invoice", "Refund timelines", "Why was I charged twice?"}[i], "url": fmt.Sprintf("https://help.acme.example/hc/articles/%d", 3601+i*10)},
				obj{"id": 3602 + i*10, "title": []string{"Changing your plan", "Payment methods", "Pending authorisations"}[i], "url": fmt.Sprintf("https://help.acme.example/hc/articles/%d", 3602+i*10)}}})))
		}
		add(w)
	}

	// --- loops ---

	// A database agent re-writes one query with aliases, reordered
	// clauses and other LIMITs; each is empty.
	{
		w := asRunOf("db-sql-rewritten-same-empty", "database", true)
		for i, q := range []string{
			"SELECT id, total FROM orders WHERE status = 'shipped' AND region = 'EMEA' LIMIT 50",
			"SELECT o.id, o.total FROM orders o WHERE o.region = 'EMEA' AND o.status = 'shipped' LIMIT 100",
			"select id, total from orders where region='EMEA' and status='shipped' limit 20;",
			"SELECT ord.id, ord.total FROM public.orders AS ord WHERE ord.status = 'shipped' AND ord.region = 'EMEA'",
			"SELECT id, total FROM orders WHERE region IN ('EMEA') AND status = 'shipped' ORDER BY id LIMIT 500",
		} {
			if i == 3 {
				w.then()
			}
			w.t("No rows; let me rewrite the query.", asOK("query", obj{"sql": q}, tnPG()))
		}
		add(w)
	}

	// The same on Supabase: the query respelled, its empty answer fenced
	// by a new boundary id each time.
	{
		w := asRunOf("db-supabase-rewritten-same-empty", "database", true)
		for i, q := range []string{
			"select * from tasks where assignee = 'dee' and done = false",
			"select t.* from tasks t where t.done = false and t.assignee = 'dee' limit 100",
			"SELECT * FROM public.tasks WHERE NOT done AND assignee = 'dee'",
			"select * from tasks as t where t.assignee = 'dee' and t.done is false limit 1000",
			"select * from tasks where assignee='dee' and done=false order by id",
		} {
			if i == 3 {
				w.then()
			}
			w.t("Nothing; trying the query another way.", asOK("execute_sql", obj{"project_id": proj, "query": q}, tnSupabase(10+i, arr{})))
		}
		add(w)
	}

	// A database agent asks for more rows with a larger LIMIT; the table
	// has seven and the same seven come back.
	{
		w := asRunOf("db-limit-grown-same-rows", "database", true)
		var rows []obj
		for i := 0; i < 7; i++ {
			rows = append(rows, obj{"code": fmt.Sprintf("WELCOME%d", 10+i), "percent_off": 5 + i*5, "active": true})
		}
		for i, l := range []int{10, 50, 100, 1000, 5000} {
			if i == 3 {
				w.then()
			}
			w.t("There should be more coupons.", asOK("read_query", obj{"query": fmt.Sprintf("SELECT code, percent_off, active FROM coupons WHERE active = 1 LIMIT %d", l)}, tnPG(rows...)))
		}
		add(w)
	}

	// A GitHub agent lists issues under a label respelled; the same three
	// come back each time.
	{
		w := asRunOf("github-label-respelled-same-issues", "github", true)
		three := []obj{tnGHIssue(431, "Crash in checkout", []string{"bug"}, "2026-12-04T12:00:00Z"), tnGHIssue(437, "Wrong total in billing", []string{"bug"}, "2026-12-04T12:00:00Z"), tnGHIssue(452, "Timeout in search", []string{"bug"}, "2026-12-04T12:00:00Z")}
		for i, q := range []string{"repo:acme/api is:issue is:open label:bug", "repo:acme/api is:open is:issue label:\"bug\"", "is:issue label:bug repo:acme/api state:open", "repo:acme/api label:bug is:issue is:open sort:updated-desc", "label:bug is:open repo:acme/api is:issue"} {
			if i == 3 {
				w.then()
			}
			w.t("Looking for more bug reports.", asOK("search_issues", obj{"query": q, "perPage": 30}, egJSON(obj{"total_count": 3, "incomplete_results": false, "items": arr{three[0], three[1], three[2]}})))
		}
		add(w)
	}

	// A GitHub agent's comment is refused on the same permission; it
	// rewords the comment each time.
	{
		w := asRunOf("github-comment-refused-reworded", "github", true).acc("write", "add_issue_comment")
		for i, b := range []string{"Looks good to me.", "LGTM, thanks!", "This looks good; approving.", "Looks good — thanks for the fix.", "LGTM."} {
			if i == 3 {
				w.then()
			}
			w.t("Posting the review comment.", asFail("add_issue_comment", obj{"owner": "acme", "repo": "api", "issue_number": 512, "body": b}, "forbidden", "failed to create comment: POST https://api.github.com/repos/acme/api/issues/512/comments: 403 Resource not accessible by personal access token []"))
		}
		add(w)
	}

	// A calendar agent shifts its window an hour at a time over a day the
	// offsite fills: the same all-day event each time.
	{
		w := asRunOf("calendar-window-shifted-full-day", "calendar", true)
		for i := 0; i < 6; i++ {
			if i == 3 {
				w.then()
			}
			min, max := fmt.Sprintf("2026-12-08T%02d:00:00Z", 9+i), fmt.Sprintf("2026-12-08T%02d:00:00Z", 10+i)
			w.t("Busy; trying the next hour.", asOK("list-events", obj{"calendarId": "primary", "timeMin": min, "timeMax": max}, tnCalEvents([3]string{"Company offsite", "2026-12-08", "2026-12-09"})))
		}
		add(w)
	}

	// The same with free/busy: each answer echoes the window it was asked
	// and finds it all busy.
	{
		w := asRunOf("calendar-freebusy-window-echoed", "calendar", true)
		for i := 0; i < 6; i++ {
			if i == 3 {
				w.then()
			}
			min, max := fmt.Sprintf("2026-12-08T%02d:00:00Z", 9+i), fmt.Sprintf("2026-12-08T%02d:00:00Z", 10+i)
			w.t("No free time; next hour.", asOK("get-freebusy", obj{"calendars": arr{obj{"id": "jane@acme.example"}}, "timeMin": min, "timeMax": max}, tnFreeBusy(min, max, [2]string{min, max})))
		}
		add(w)
	}

	// A pipeline agent runs a job that fails, edits its config with no
	// real change (keys reordered, a comment), and runs it again.
	{
		w := asRunOf("pipeline-noop-edit-rerun", "pipeline", true).acc("write", "trigger_dag", "write_file")
		cfgs := []string{
			"columns:\n  id: order_id\n  customer_id: customer_id\n  total: total\n",
			"columns:\n  customer_id: customer_id\n  id: order_id\n  total: total\n",
			"# mapping for orders_daily\ncolumns:\n  id: order_id\n  customer_id: customer_id\n  total: total\n",
			"columns:\n    id: order_id\n    customer_id: customer_id\n    total: total\n",
		}
		run := func(i int) {
			id := fmt.Sprintf("manual__2026-12-05T00:%02d:00+00:00", 10+i*3)
			w.t("", asOK("trigger_dag", obj{"dag_id": "orders_daily", "conf": obj{}}, tnDagRun("orders_daily", id, "queued", i*180, 0)))
			w.t("", asOK("get_dag_run", obj{"dag_id": "orders_daily", "dag_run_id": id}, tnDagRun("orders_daily", id, "failed", i*180, 58)))
		}
		run(0)
		for i, c := range cfgs {
			if i == 2 {
				w.then()
			}
			w.t("Adjusting the mapping and running again.", asOK("write_file", obj{"path": "dags/orders/mapping.yaml", "content": c}, "Successfully wrote to dags/orders/mapping.yaml"))
			run(i + 1)
		}
		add(w)
	}

	// A support desk's hand-offs ring: tier 1 sends the case to tier 2,
	// which sends it back, the summary paraphrased each time.
	{
		w := asRunOf("support-handoff-ring-paraphrased", "support", true)
		tasks := []struct{ to, task, verdict string }{
			{"tier1_agent", "Customer 88123 wants to move from the team plan to the annual business plan mid-cycle.", "Plan changes mid-cycle need proration approval: transferring to tier 2."},
			{"tier2_agent", "Customer 88123 asks to switch team → annual business plan in the middle of the billing cycle.", "Plan switches are handled by tier 1; no refund or credit is involved. Sending back to tier 1."},
			{"tier1_agent", "88123: mid-cycle upgrade from team to business (annual) requested.", "Mid-cycle upgrades need proration approval: transferring to tier 2."},
			{"tier2_agent", "Customer 88123 would like an upgrade to business annual now, partway through the cycle.", "This is a plan switch, which tier 1 handles. Sending back to tier 1."},
			{"tier1_agent", "Upgrade request for 88123: team plan to annual business, mid-cycle.", "Proration approval needed: transferring to tier 2."},
		}
		for i, h := range tasks {
			if i == 2 {
				w.then()
			}
			w.hand("Routing the case.", h.to, h.task, h.verdict, func(s *asw) {
				s.t("", asOK("get_customer", obj{"customer_id": "88123"}, egJSON(obj{"id": "88123", "email": "dee@tailspin.example", "plan": "team", "billing_cycle_anchor": "2026-11-20"})))
			})
		}
		add(w)
	}

	// A deployment agent alternates the deployment and its events: the
	// state stays BUILDING, the events stay empty, only the etag, the
	// clock and the cursor move.
	{
		w := asRunOf("deploy-alternate-volatile-only", "devops", true)
		for i := 0; i < 5; i++ {
			if i == 2 {
				w.then()
			}
			w.t("Still building; checking again.", asOK("get_deployment", obj{"idOrUrl": "dpl_7Hq2kLm9"}, tnDeploy("dpl_7Hq2kLm9", "BUILDING", i)))
			w.t("", asOK("get_deployment_events", obj{"idOrUrl": "dpl_7Hq2kLm9", "since": 1764893400000 + i*15013}, egJSON(obj{"events": arr{}, "pagination": obj{"next": 1764893400000 + (i+1)*15013}})))
		}
		add(w)
	}

	// A crawler follows next cursors the server ignores: each cursor is
	// new, each page the first.
	{
		w := asRunOf("crawl-cursor-ignored-same-page", "research", true)
		var items arr
		for i := 0; i < 10; i++ {
			items = append(items, obj{"id": fmt.Sprintf("prod_%05d", 10007*i%99991), "name": fmt.Sprintf("Alto %d", i), "price": 40 + i*13})
		}
		cur := ""
		for p := 0; p < 6; p++ {
			if p == 3 {
				w.then()
			}
			next := fmt.Sprintf("eyJ0cyI6MTc2NDg5%04d", 3400+p*17)
			a := obj{"limit": 10}
			if cur != "" {
				a["cursor"] = cur
			}
			w.t("Next page.", asOK("list_products", a, egJSON(obj{"data": items, "has_more": true, "next_cursor": next})))
			cur = next
		}
		add(w)
	}

	// A code agent's fix oscillates: version A fixes one test and breaks
	// another, version B the reverse, and it goes back to A.
	{
		w := asRunOf("code-fix-oscillates", "code", true).acc("write", "edit_file")
		a := obj{"path": "calc/eval.py", "edits": arr{obj{"oldText": "return round(x, 2)", "newText": "return math.floor(x * 100) / 100"}}}
		b := obj{"path": "calc/eval.py", "edits": arr{obj{"oldText": "return math.floor(x * 100) / 100", "newText": "return round(x, 2)"}}}
		w.t("", asOK("run_command", obj{"command": "pytest -q"}, tnPytest(0, 140, "tests/test_eval.py::test_truncates")))
		for i := 0; i < 4; i++ {
			if i == 2 {
				w.then()
			}
			e, f := a, "tests/test_eval.py::test_rounds_half_up"
			if i%2 == 1 {
				e, f = b, "tests/test_eval.py::test_truncates"
			}
			w.t("Adjusting the rounding.", asOK("edit_file", e, "```diff\n@@ -18 +18 @@\n- old\n+ new\n```"))
			w.t("", asOK("run_command", obj{"command": "pytest -q"}, tnPytest(i+1, 140, f)))
		}
		add(w)
	}

	// A translation agent asks for one sentence again in other words; the
	// engine gives the same translation.
	{
		w := asRunOf("translate-reasked-same-output", "translation", true)
		for i, ctx := range []string{"Make it more formal.", "Use a formal register.", "Formal, please: this is for customers.", "More polite, formal German.", "Formal tone."} {
			if i == 3 {
				w.then()
			}
			w.t("Not formal enough; asking again.", asOK("translate_text", obj{"text": "Keep the receipt.", "source_lang": "EN", "target_lang": "DE", "formality": "more", "context": ctx}, egJSON(obj{"translations": arr{obj{"detected_source_language": "EN", "text": "Bewahren Sie den Beleg auf."}}})))
		}
		add(w)
	}

	// A GitHub agent backs off on a daily quota that will not reset for
	// hours: the same refusal, its request id new each time.
	{
		w := asRunOf("github-backoff-daily-quota", "github", true).retryable("get_file_contents")
		a := obj{"owner": "acme", "repo": "api", "path": "src/billing/totals.ts"}
		for i := 0; i < 6; i++ {
			if i == 3 {
				w.then()
			}
			w.t(fmt.Sprintf("Rate limited; waiting %ds.", 1<<i), asFail("get_file_contents", a, "rate_limited", fmt.Sprintf("failed to get file contents: GET https://api.github.com/repos/acme/api/contents/src/billing/totals.ts: 403 API rate limit of 5000 still exceeded until 2026-12-05 06:00:00 +0000 UTC, not making remote request. [rate reset in 5h%02dm] (request %04X:%05X)", 44-i, 0x2B1C+i*97, 0x1F00A+i*4099)))
		}
		add(w)
	}

	// A math agent runs a computation that fails, changes only a name or
	// a print each time, and gets the same error.
	{
		w := asRunOf("math-cosmetic-edits-same-error", "math", true)
		codes := []string{
			"import numpy as np\nA = np.array([[1, 2], [2, 4]])\nprint(np.linalg.inv(A))",
			"import numpy as np\nM = np.array([[1, 2], [2, 4]])\nprint(np.linalg.inv(M))",
			"import numpy as np\nA = np.array([[1, 2], [2, 4]])\ninv = np.linalg.inv(A)\nprint(inv)",
			"import numpy as np\n\nA = np.array([[1,2],[2,4]])\nprint(np.linalg.inv(A))",
			"import numpy as np\nA = np.array([[1, 2], [2, 4]], dtype=float)\nprint(np.linalg.inv(A))",
		}
		for i, c := range codes {
			if i == 3 {
				w.then()
			}
			w.t("Let me try that again.", asOK("run_python", obj{"code": c}, egJSON(obj{"stdout": "", "stderr": fmt.Sprintf("Traceback (most recent call last):\n  File \"<exec>\", line %d, in <module>\nnumpy.linalg.LinAlgError: Singular matrix", 3+i%2), "exit_code": 1})))
		}
		add(w)
	}

	// A support agent searches the help centre in other words; each time
	// the same two articles, in another order.
	{
		w := asRunOf("support-kb-reworded-same-articles", "support", true)
		arts := []obj{{"id": 3601, "title": "Reading your invoice", "url": "https://help.acme.example/hc/articles/3601"}, {"id": 3602, "title": "Changing your plan", "url": "https://help.acme.example/hc/articles/3602"}}
		for i, q := range []string{"upgrade mid cycle proration", "prorated upgrade", "change plan partway through billing period", "mid-cycle plan change cost", "proration when upgrading"} {
			if i == 3 {
				w.then()
			}
			w.t("Searching the help centre again.", asOK("search_articles", obj{"query": q, "per_page": 3}, egJSON(obj{"count": 2, "results": arr{arts[i%2], arts[(i+1)%2]}})))
		}
		add(w)
	}

	// A calendar agent creates the same meeting again each time the
	// answer comes back, its summary respelled: each a new event id.
	{
		w := asRunOf("calendar-event-created-again", "calendar", true).acc("write", "create-event")
		for i, s := range []string{"Budget sync", "Budget Sync", "Budget sync (Q1)", "Budget sync", "Budget sync — Q1"} {
			if i == 2 {
				w.then()
			}
			w.t("Creating the meeting.", asOK("create-event", obj{"calendarId": "primary", "summary": s, "start": "2026-12-07T11:00:00Z", "end": "2026-12-07T12:00:00Z", "attendees": arr{obj{"email": "bo@acme.example"}}},
				fmt.Sprintf("Event created: %s (%s)", s, []string{"q8w2", "r1t5", "u3y7", "i9o0", "p2a4"}[i])))
		}
		add(w)
	}

	// A database agent describes one table again under other spellings of
	// its name; the same columns come back.
	{
		w := asRunOf("db-table-described-respelled", "database", true)
		cols := egJSON(arr{obj{"name": "id", "type": "INTEGER", "notnull": 1, "pk": 1}, obj{"name": "customer_id", "type": "INTEGER", "notnull": 1, "pk": 0}, obj{"name": "status", "type": "TEXT", "notnull": 1, "pk": 0}, obj{"name": "total", "type": "REAL", "notnull": 0, "pk": 0}})
		for i, tb := range []string{"orders", "main.orders", "\"orders\"", "Orders", "ORDERS"} {
			if i == 3 {
				w.then()
			}
			w.t("There must be a region column; describing it again.", asOK("describe_table", obj{"table_name": tb}, cols))
		}
		add(w)
	}

	return runs
}
