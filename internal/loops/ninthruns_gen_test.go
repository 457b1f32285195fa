package loops

import (
	"fmt"
	"strings"
)

func ninthRuns() []*asRun {
	var runs []*asRun
	add := func(w *asw) { runs = append(runs, w.run) }
	const signup = "https://app.parsec.example/signup"
	const results = "https://shop.example.com/search?q=trail+shoes"

	// --- legit ---

	// A browser agent fills a sign-up form field by field: each action
	// renumbers the refs and shows the field filled.
	{
		w := asRunOf("browser-form-field-by-field", "browser", false).acc("write", "browser_type", "browser_select_option", "browser_click")
		fields := []struct{ label, value string }{{"Full name", "Jane Doe"}, {"Work email", "jane.doe@parsec.example"}, {"Company", "Parsec Ltd"}, {"Phone", "+44 20 7946 0018"}, {"Password", "••••••••••••"}}
		lines := func(filled int) []string {
			var l []string
			for i, f := range fields {
				v := ""
				if i < filled {
					v = ": " + f.value
				}
				l = append(l, fmt.Sprintf("textbox \"%s\"%s", f.label, v))
			}
			return append(l, "combobox \"Team size\"", "button \"Create account\"")
		}
		w.t("", asOK("browser_navigate", obj{"url": signup}, nnPW("await page.goto('"+signup+"');", signup, "Sign up · Parsec", 1, lines(0)...)))
		for i, f := range fields {
			ref := 1 + i*8
			w.t("", asOK("browser_type", obj{"element": f.label + " textbox", "ref": fmt.Sprintf("e%d", ref+1+i), "text": f.value},
				nnPW(fmt.Sprintf("await page.getByRole('textbox', { name: '%s' }).fill('%s');", f.label, f.value), signup, "Sign up · Parsec", ref+8, lines(i+1)...)))
		}
		w.t("", asOK("browser_select_option", obj{"element": "Team size combobox", "ref": "e47", "values": arr{"11-50"}}, nnPW("await page.getByRole('combobox', { name: 'Team size' }).selectOption(['11-50']);", signup, "Sign up · Parsec", 49, lines(5)...)))
		w.t("", asOK("browser_click", obj{"element": "Create account button", "ref": "e56"}, nnPW("await page.getByRole('button', { name: 'Create account' }).click();", "https://app.parsec.example/welcome", "Welcome · Parsec", 57, "heading \"Check your inbox\"", "text: We sent a link to jane.doe@parsec.example")))
		add(w)
	}

	// A browser agent pages through search results with "Next": the refs
	// renumber and the products are others each time.
	{
		w := asRunOf("browser-results-next-page", "browser", false).acc("write", "browser_click")
		w.t("", asOK("browser_navigate", obj{"url": results}, nnPW("await page.goto('"+results+"');", results, "trail shoes · Shop", 1, "link \"Alto 2 — EUR 89.95\"", "link \"Ridge GTX — EUR 129.00\"", "link \"Mesa — EUR 74.50\"", "button \"Next\"")))
		pages := [][]string{{"link \"Cairn — EUR 99.00\"", "link \"Scree Lite — EUR 109.95\"", "link \"Fell 3 — EUR 119.00\""}, {"link \"Tor — EUR 64.99\"", "link \"Ghyll — EUR 139.00\"", "link \"Moss — EUR 84.00\""}, {"link \"Bothy — EUR 92.00\"", "link \"Knoll — EUR 101.50\""}}
		for i, p := range pages {
			u := fmt.Sprintf("%s&page=%d", results, i+2)
			w.t("", asOK("browser_click", obj{"element": "Next button", "ref": fmt.Sprintf("e%d", 5+i*5)}, nnPW("await page.getByRole('button', { name: 'Next' }).click();", u, "trail shoes · Shop", 6+i*5, append(p, "button \"Next\"")...)))
		}
		add(w)
	}

	// A spreadsheet agent writes a status into 40 rows, one call a row:
	// the same call's shape, the same answer's, another row each time.
	{
		w := asRunOf("sheet-update-40-rows", "spreadsheet", false).acc("write", "update_cells")
		w.t("", asOK("get_sheet_data", obj{"spreadsheet_id": "1Bx9kQ2mZ_orders", "sheet": "Renewals", "range": "A1:E41"}, egJSON(obj{"range": "Renewals!A1:E41", "rowCount": 41})))
		for r := 2; r <= 41; r++ {
			st := []string{"renewed", "churned", "renewed", "pending"}[r%4]
			w.t("", asOK("update_cells", obj{"spreadsheet_id": "1Bx9kQ2mZ_orders", "sheet": "Renewals", "range": fmt.Sprintf("E%d", r), "data": arr{arr{st}}},
				egJSON(obj{"spreadsheetId": "1Bx9kQ2mZ_orders", "updatedRange": fmt.Sprintf("Renewals!E%d", r), "updatedRows": 1, "updatedColumns": 1, "updatedCells": 1})))
		}
		add(w)
	}

	// A CRM agent finds nobody under the name as typed, finds three under
	// its usual spelling, and picks the one at the right company.
	{
		w := asRunOf("crm-second-spelling-finds", "crm", false).acc("write", "update_contact")
		w.t("", asOK("search_contacts", obj{"query": "Jon Smyth", "limit": 10}, nnContacts(0)))
		w.t("Perhaps the usual spelling.", asOK("search_contacts", obj{"query": "John Smith", "limit": 10}, nnContacts(3,
			nnContact(5101, "John", "Smith", "john.smith@northwind.example", "Northwind", "customer", "2026-11-02T10:00:00Z"),
			nnContact(6120, "John", "Smith", "jsmith@parsec.example", "Parsec Ltd", "lead", "2026-10-12T08:30:00Z"),
			nnContact(7342, "John", "Smith", "john@smith-consulting.example", "Smith Consulting", "subscriber", "2026-06-30T14:10:00Z"))))
		w.t("The ticket is from Parsec.", asOK("update_contact", obj{"id": "6120", "properties": obj{"lifecyclestage": "opportunity"}}, egJSON(nnContact(6120, "John", "Smith", "jsmith@parsec.example", "Parsec Ltd", "opportunity", "2026-12-04T21:40:02Z"))))
		add(w)
	}

	// A CRM agent moves one contact through its stages, each once.
	{
		w := asRunOf("crm-stage-progression", "crm", false).acc("write", "update_contact")
		for i, st := range []string{"marketingqualifiedlead", "salesqualifiedlead", "opportunity", "customer"} {
			w.t("", asOK("update_contact", obj{"id": "6120", "properties": obj{"lifecyclestage": st}}, egJSON(nnContact(6120, "John", "Smith", "jsmith@parsec.example", "Parsec Ltd", st, fmt.Sprintf("2026-12-04T21:4%d:0%dZ", i, i)))))
			if i == 1 {
				w.t("", asOK("create_deal", obj{"properties": obj{"dealname": "Parsec — Business plan", "amount": "24000", "pipeline": "default"}, "associations": arr{obj{"to": "6120", "type": "contact"}}}, egJSON(obj{"id": "9912004", "properties": obj{"dealname": "Parsec — Business plan", "dealstage": "appointmentscheduled"}})))
			}
		}
		add(w)
	}

	// A chat agent pages through the workspace's channels by cursor, then
	// posts where it should.
	{
		w := asRunOf("slack-channels-paged-cursor", "chat", false).acc("write", "slack_post_message")
		cursor := ""
		for p := 0; p < 5; p++ {
			var chs arr
			for i := 0; i < 20; i++ {
				n := p*20 + i
				chs = append(chs, obj{"id": fmt.Sprintf("C0%08X", 0x7A0000+n*7349), "name": fmt.Sprintf("%s-%d", []string{"team", "proj", "ops", "social", "help"}[n%5], n), "is_member": n%3 == 0, "num_members": 3 + n*7%90})
			}
			next := fmt.Sprintf("dGVhbTpDMDc%dRMkxIVjI=", p+1)
			if p == 4 {
				next = ""
			}
			a := obj{"limit": 20}
			if cursor != "" {
				a["cursor"] = cursor
			}
			w.t("", asOK("slack_list_channels", a, egJSON(obj{"ok": true, "channels": chs, "response_metadata": obj{"next_cursor": next}})))
			cursor = next
		}
		w.t("", asOK("slack_post_message", obj{"channel_id": "C0007A2F1C", "text": "Renewals sheet updated: 40 rows."}, egSlack(true, "1764884410.000200", "")))
		add(w)
	}

	// A chat agent's post is refused as it is not in the channel; it joins
	// and posts.
	{
		w := asRunOf("slack-join-then-post", "chat", false).acc("write", "slack_post_message", "slack_join_channel")
		msg := obj{"channel_id": "C05HZ1K2L9Q", "text": "Incident 2290 resolved: queue backlog drained."}
		w.t("", asFail("slack_post_message", msg, "tool_error", "An API error occurred: not_in_channel"))
		w.t("I need to join first.", asOK("slack_join_channel", obj{"channel_id": "C05HZ1K2L9Q"}, egJSON(obj{"ok": true, "channel": obj{"id": "C05HZ1K2L9Q", "name": "incidents", "is_member": true}})))
		w.t("", asOK("slack_post_message", msg, egSlack(true, "1764884501.000300", "")))
		add(w)
	}

	// A mail agent drafts the same renewal notice to six customers, each
	// with its own name and address.
	{
		w := asRunOf("mail-drafts-six-customers", "mail", false).acc("write", "draft_email")
		for i, c := range [][2]string{{"Ana", "ana@northwind.example"}, {"Bo", "bo@contoso.example"}, {"Chen", "chen@fabrikam.example"}, {"Dee", "dee@tailspin.example"}, {"Eli", "eli@adatum.example"}, {"Fay", "fay@litware.example"}} {
			w.t("", asOK("draft_email", obj{"to": arr{c[1]}, "subject": "Your renewal on 1 January", "body": "Hi " + c[0] + ",\n\nYour plan renews on 1 January. Reply if anything should change.\n\nBest,\nParsec"},
				fmt.Sprintf("Email draft created successfully with ID: r-%d", 7712093385170021+i*48611)))
		}
		add(w)
	}

	// A code agent's tests fail less after each real fix.
	{
		w := asRunOf("code-tests-failures-shrink", "code", false).acc("write", "edit_file")
		fails := []string{"queue/worker.test.ts › retries at most budget times", "queue/worker.test.ts › backs off with jitter", "queue/backoff.test.ts › caps the delay", "http/server.test.ts › closes idle connections"}
		w.t("", asOK("run_tests", obj{"command": "npm test"}, nnJest(0, 212, fails...)))
		edits := []string{"if (attempt >= budget) return;", "delay = base * 2 ** attempt * (0.5 + Math.random());", "server.closeIdleConnections();"}
		for i, e := range edits {
			w.t("", asOK("edit_file", obj{"path": []string{"src/queue/worker.ts", "src/queue/backoff.ts", "src/http/server.ts"}[i], "edits": arr{obj{"oldText": "// TODO", "newText": e}}}, fmt.Sprintf("```diff\n@@ -%d,1 +%d,1 @@\n-// TODO\n+%s\n```", 40+i*9, 40+i*9, e)))
			left := fails[i+1:]
			if i == 0 {
				left = fails[2:]
			}
			w.t("", asOK("run_tests", obj{"command": "npm test"}, nnJest(i+1, 212, left...)))
		}
		add(w)
	}

	// A code agent's patch is rejected on its context; it reads the file
	// and sends a patch with the file's real context.
	{
		w := asRunOf("code-patch-fixed-context", "code", false).acc("write", "apply_patch")
		bad := "*** Begin Patch\n*** Update File: src/queue/worker.ts\n@@ class Worker\n-  retry(job) {\n+  retry(job: Job) {\n*** End Patch"
		w.t("", asFail("apply_patch", obj{"input": bad}, "tool_error", "Invalid Context 0:\n  retry(job) {"))
		w.t("", asOK("read_file", obj{"path": "src/queue/worker.ts"}, "export class Worker {\n  constructor(private q: Queue) {}\n\n  async retry(job: Job, attempt = 0) {\n    // TODO\n  }\n}\n"))
		good := "*** Begin Patch\n*** Update File: src/queue/worker.ts\n@@ export class Worker {\n-  async retry(job: Job, attempt = 0) {\n+  async retry(job: Job, attempt = 0): Promise<void> {\n*** End Patch"
		w.t("The method is async and takes attempt.", asOK("apply_patch", obj{"input": good}, "Done!\nM src/queue/worker.ts"))
		add(w)
	}

	// A code agent re-runs a flaky workflow once, and it passes.
	{
		w := asRunOf("code-rerun-flaky-passes", "code", false).acc("write", "rerun_failed_jobs")
		w.t("", asOK("get_workflow_run", obj{"owner": "acme", "repo": "api", "run_id": 12290411}, nnRun(12290411, 1, "completed", "failure", 0)))
		w.t("", asOK("get_job_logs", obj{"owner": "acme", "repo": "api", "run_id": 12290411, "failed_only": true}, "integration (pg16): Error: connect ECONNREFUSED 127.0.0.1:5432 at TCPConnectWrapper (net.js:1157)\n##[error]Process completed with exit code 1."))
		w.t("The database was not up yet: a flake.", asOK("rerun_failed_jobs", obj{"owner": "acme", "repo": "api", "run_id": 12290411}, egJSON(obj{"message": "Failed jobs re-run requested", "run_id": 12290411})))
		w.t("", asOK("get_workflow_run", obj{"owner": "acme", "repo": "api", "run_id": 12290411}, nnRun(12290411, 2, "in_progress", "", 200)))
		w.t("", asOK("get_workflow_run", obj{"owner": "acme", "repo": "api", "run_id": 12290411}, nnRun(12290411, 2, "completed", "success", 400)))
		add(w)
	}

	// A cloud agent waits for a stack: each poll of its events shows more
	// resources created, until the stack is.
	{
		w := asRunOf("cloud-stack-events-grow", "cloud", false)
		all := [][2]string{{"orders-stack", "CREATE_IN_PROGRESS"}, {"OrdersVpc", "CREATE_COMPLETE"}, {"OrdersSubnetA", "CREATE_COMPLETE"}, {"OrdersSubnetB", "CREATE_COMPLETE"}, {"OrdersDbSubnetGroup", "CREATE_COMPLETE"}, {"OrdersDb", "CREATE_IN_PROGRESS"}, {"OrdersDb", "CREATE_COMPLETE"}, {"OrdersService", "CREATE_COMPLETE"}, {"orders-stack", "CREATE_COMPLETE"}}
		for i, n := range []int{2, 4, 5, 6, 7, 9} {
			w.t("", asOK("describe_stack_events", obj{"StackName": "orders-stack"}, nnAWS(nnCFEvents("orders-stack", all[:n]...), i)))
		}
		add(w)
	}

	// A cloud agent describes its databases one by one, some by name and
	// some by ARN, each another instance.
	{
		w := asRunOf("cloud-describe-each-db", "cloud", false)
		for i, id := range []string{"orders-db", "billing-db", "search-db", "auth-db", "events-db"} {
			ident := id
			if i%2 == 1 {
				ident = "arn:aws:rds:eu-west-1:123456789012:db:" + id
			}
			w.t("", asOK("describe_db_instances", obj{"DBInstanceIdentifier": ident}, nnAWS(nnDB(id, "available", 40000+i*13117), i)))
		}
		add(w)
	}

	// An ops agent polls a queue being drained: the request id and the time
	// move, and so does the depth.
	{
		w := asRunOf("ops-queue-drains", "ops", false)
		for i, d := range []int{12840, 9310, 5102, 1877, 0} {
			w.t("", asOK("get_queue_attributes", obj{"QueueUrl": "https://sqs.eu-west-1.amazonaws.com/123456789012/orders", "AttributeNames": arr{"ApproximateNumberOfMessages", "ApproximateNumberOfMessagesNotVisible"}},
				nnAWS(obj{"Attributes": obj{"ApproximateNumberOfMessages": fmt.Sprint(d), "ApproximateNumberOfMessagesNotVisible": fmt.Sprint(d / 40)}}, i)))
		}
		add(w)
	}

	// A research agent narrows its searches, and each finds new sources.
	{
		w := asRunOf("research-narrowing-new-sources", "research", false)
		qs := []string{"postgres connection pool exhaustion", "pgbouncer transaction mode prepared statements", "pgbouncer 1.21 max_prepared_statements", "node-postgres pgbouncer prepared statements error"}
		hits := [][][3]string{
			{{"Connection pool exhaustion in PostgreSQL", "Why apps run out of connections and what to do.", "https://blog.example.org/pg-pool-exhaustion"}, {"Sizing a connection pool", "Little's law applied to pools.", "https://wiki.example.org/pool-sizing"}},
			{{"PgBouncer: transaction pooling and prepared statements", "Prepared statements break in transaction mode unless…", "https://www.pgbouncer.example/faq.html#prepared"}, {"Prepared statements with PgBouncer", "A long-standing limitation.", "https://stackoverflow.example/q/48211"}},
			{{"PgBouncer 1.21 release notes", "Adds max_prepared_statements for protocol-level prepared statements.", "https://www.pgbouncer.example/changelog.html#1.21"}},
			{{"node-postgres issue 3102: prepared statement does not exist", "Seen behind PgBouncer in transaction mode.", "https://github.example/brianc/node-postgres/issues/3102"}, {"Using pg with PgBouncer", "Set statement names off or upgrade.", "https://node-postgres.example/guides/pgbouncer"}},
		}
		for i, q := range qs {
			w.t("", asOK("brave_web_search", obj{"query": q, "count": 5}, nnBrave(hits[i]...)))
		}
		w.t("", asOK("fetch", obj{"url": "https://www.pgbouncer.example/changelog.html#1.21", "max_length": 5000}, egFetched("https://www.pgbouncer.example/changelog.html#1.21", "## 1.21.0\n- Add max_prepared_statements", 0)))
		add(w)
	}

	// A support agent asks a vector store in other words, and each finds
	// other passages.
	{
		w := asRunOf("rag-queries-new-chunks", "research", false)
		for i, q := range []string{"refund window", "refund for annual plans", "chargeback policy", "refund currency conversion"} {
			w.t("", asOK("qdrant-find", obj{"query": q}, nnQdrant(q, []string{"Refunds are possible within 14 days of a charge.", "Annual plans are refunded pro rata after the first 30 days.", "A chargeback suspends the account until it is resolved.", "Refunds are made in the currency of the charge; fees are not refunded."}[i], []string{"Refunds go to the original payment method.", "Downgrades take effect at the next renewal.", "Disputes are answered within 7 days.", "Exchange differences are borne by the customer."}[i])))
		}
		add(w)
	}

	// A planner hands work to a researcher and then a writer, each hop with
	// what the last found.
	{
		w := asRunOf("multiagent-hops-add-findings", "multi-agent", false)
		w.hand("", "researcher", "Find which PgBouncer version fixes prepared statements in transaction mode.", "PgBouncer 1.21 adds max_prepared_statements.", func(s *asw) {
			s.t("", asOK("brave_web_search", obj{"query": "pgbouncer prepared statements transaction mode fix", "count": 5}, nnBrave([3]string{"PgBouncer 1.21 release notes", "Adds max_prepared_statements.", "https://www.pgbouncer.example/changelog.html#1.21"})))
		})
		w.hand("", "researcher", "Which PgBouncer version do our hosts run, and does node-postgres need a setting with 1.21?", "Hosts run 1.18; node-postgres works with 1.21 once max_prepared_statements is set.", func(s *asw) {
			s.t("", asOK("run_command", obj{"command": "pgbouncer --version", "host": "db-proxy-1"}, "PgBouncer 1.18.0\nlibevent 2.1.12-stable\nadns: c-ares 1.19.1\ntls: OpenSSL 3.0.11"))
			s.t("", asOK("brave_web_search", obj{"query": "node-postgres pgbouncer 1.21 max_prepared_statements", "count": 5}, nnBrave([3]string{"Using pg with PgBouncer", "Works with 1.21 when max_prepared_statements > 0.", "https://node-postgres.example/guides/pgbouncer"})))
		})
		w.hand("", "writer", "Write the upgrade note: hosts on 1.18, upgrade to 1.21, set max_prepared_statements=100.", "Draft saved as docs/upgrade-pgbouncer.md.", func(s *asw) {
			s.t("", asOK("write_file", obj{"path": "docs/upgrade-pgbouncer.md", "content": "# Upgrade PgBouncer to 1.21\n..."}, "Successfully wrote to docs/upgrade-pgbouncer.md"))
		})
		add(w)
	}

	// A weather tool refuses a call without coordinates; the agent geocodes
	// the city and asks for four cities.
	{
		w := asRunOf("weather-schema-fixed", "assistant", false)
		w.t("", asFail("get_forecast", obj{"city": "Lisbon"}, "tool_error", `MCP error -32602: Invalid arguments for tool get_forecast: [{"code":"invalid_type","expected":"number","received":"undefined","path":["latitude"],"message":"Required"},{"code":"invalid_type","expected":"number","received":"undefined","path":["longitude"],"message":"Required"}]`))
		for i, c := range []struct {
			name     string
			lat, lon float64
		}{{"Lisbon", 38.7223, -9.1393}, {"Porto", 41.1579, -8.6291}, {"Faro", 37.0194, -7.9304}, {"Braga", 41.5454, -8.4265}} {
			w.t("", asOK("geocode", obj{"query": c.name + ", Portugal"}, egJSON(obj{"name": c.name, "latitude": c.lat, "longitude": c.lon, "country": "PT"})))
			w.t("", asOK("get_forecast", obj{"latitude": c.lat, "longitude": c.lon}, fmt.Sprintf("Today: %s, high %d°C, low %d°C. Wind %d km/h.", []string{"Sunny", "Showers", "Clear", "Cloudy"}[i], 17-i, 9+i%2, 10+i*4)))
		}
		add(w)
	}

	// A Kubernetes agent watches a pod start: its logs and its status,
	// each time further on. (As first written its status answered 0/1
	// Running twice before moving: the benchmark's rule lets the third
	// identical poll be refused, whatever else moved.)
	{
		w := asRunOf("k8s-logs-status-progress", "devops", false)
		logs := []string{"Starting search 3.2.1\nLoading index shard 1/4", "Starting search 3.2.1\nLoading index shard 1/4\nLoading index shard 2/4\nLoading index shard 3/4", "Starting search 3.2.1\nLoading index shard 1/4\nLoading index shard 2/4\nLoading index shard 3/4\nLoading index shard 4/4\nListening on :9200"}
		for i, l := range logs {
			w.t("", asOK("pods_log", obj{"namespace": "shop", "name": "search-5f7d9c8b6-q8wzt"}, l))
			ready, st := "0/1", []string{"ContainerCreating", "Running", "Running"}[i]
			if i == 2 {
				ready = "1/1"
			}
			w.t("", asOK("pods_get", obj{"namespace": "shop", "name": "search-5f7d9c8b6-q8wzt"}, svPods(svPod{"search-5f7d9c8b6-q8wzt", ready, st, 0, 20 + i*30, "10.42.1.40", "node-a"})))
		}
		add(w)
	}

	// A database agent migrates 200 tables: the same statement on another
	// table each time, the same answer.
	{
		w := asRunOf("db-migrate-200-tables", "database", false).acc("write", "execute_sql")
		w.t("", asOK("execute_sql", obj{"sql": "SELECT count(*) FROM information_schema.tables WHERE table_schema = 'tenant_data'"}, egJSON(arr{obj{"count": 200}})))
		for i := 0; i < 200; i++ {
			w.t("", asOK("execute_sql", obj{"sql": fmt.Sprintf("ALTER TABLE tenant_data.t_%03d ADD COLUMN IF NOT EXISTS tenant_id bigint", i)}, "ALTER TABLE"))
		}
		add(w)
	}

	// An export agent pages through 25 pages of contacts by token.
	{
		w := asRunOf("export-contacts-paged", "crm", false)
		token := ""
		for p := 0; p < 25; p++ {
			var b strings.Builder
			b.WriteString("id,email,company,stage\n")
			for i := 0; i < 40; i++ {
				n := p*40 + i
				fmt.Fprintf(&b, "%d,user%d@%s.example,%s,%s\n", 100000+n*17, n, []string{"northwind", "contoso", "fabrikam", "adatum"}[n%4], []string{"Northwind", "Contoso", "Fabrikam", "Adatum"}[n%4], []string{"lead", "customer", "opportunity"}[n%3])
			}
			next := fmt.Sprintf("eyJvZmZzZXQiOiAi%03d", (p+1)*40)
			if p == 24 {
				b.WriteString("(end of export)")
			} else {
				b.WriteString("next_page_token: " + next)
			}
			a := obj{"object": "contacts", "format": "csv", "page_size": 40}
			if token != "" {
				a["page_token"] = token
			}
			w.t("", asOK("export_records", a, b.String()))
			token = next
		}
		add(w)
	}

	// A finance agent's rate lookup fails twice on a real 503, then
	// answers; its invoice is created once, retried after one 503 under
	// the same idempotency key. (As first written its 503s were typed
	// tool_error, which the runtime never hands the guard: it finds a
	// failure whose message names a 503 transient, as unavailable.)
	{
		w := asRunOf("retry-after-503-succeeds", "finance", false).acc("write", "create_invoice")
		rates := obj{"base": "EUR", "symbols": arr{"GBP", "USD"}}
		for i := 0; i < 2; i++ {
			w.t("", asFail("get_exchange_rates", rates, "unavailable", "Error: 503 Service Unavailable: upstream connect error or disconnect/reset before headers. reset reason: connection failure"))
		}
		w.t("", asOK("get_exchange_rates", rates, egJSON(obj{"base": "EUR", "date": "2026-12-04", "rates": obj{"GBP": 0.8412, "USD": 1.0561}})))
		inv := obj{"customer": "cus_RQx81fTz2LmA0b", "amount": 2400000, "currency": "gbp", "idempotency_key": "inv-parsec-2027-renewal"}
		w.t("", asFail("create_invoice", inv, "unavailable", "Error: 503 Service Unavailable"))
		w.t("", asOK("create_invoice", inv, egJSON(obj{"id": "in_1QKx02eZvKYlo2C8", "status": "draft", "amount_due": 2400000, "currency": "gbp"})))
		add(w)
	}

	// --- loops ---

	// A browser agent clicks "Load more", which does nothing: the page is
	// the same but for its refs, renumbered at every snapshot.
	{
		w := asRunOf("browser-click-noop-refs-renumber", "browser", true).acc("write", "browser_click")
		w.t("", asOK("browser_navigate", obj{"url": results}, nnPW("await page.goto('"+results+"');", results, "trail shoes · Shop", 1, "link \"Alto 2 — EUR 89.95\"", "link \"Ridge GTX — EUR 129.00\"", "button \"Load more\"")))
		for i := 0; i < 5; i++ {
			if i == 3 {
				w.then()
			}
			w.t("Loading more results.", asOK("browser_click", obj{"element": "Load more button", "ref": fmt.Sprintf("e%d", 4+i*4)}, nnPW("await page.getByRole('button', { name: 'Load more' }).click();", results, "trail shoes · Shop", 5+i*4, "link \"Alto 2 — EUR 89.95\"", "link \"Ridge GTX — EUR 129.00\"", "button \"Load more\"")))
		}
		add(w)
	}

	// A browser agent waits for a confirmation that never comes, longer
	// each time: the same timeout, its milliseconds echoing the wait.
	{
		w := asRunOf("browser-wait-times-out", "browser", true)
		for i, s := range []int{5, 10, 15, 20, 30} {
			if i == 3 {
				w.then()
			}
			w.t("Waiting for the confirmation.", asFail("browser_wait_for", obj{"text": "Order confirmed", "time": s}, "tool_error", fmt.Sprintf("TimeoutError: page.waitForFunction: Timeout %dms exceeded.\nCall log:\n  - waiting for text \"Order confirmed\"", s*1000)))
		}
		add(w)
	}

	// A CRM agent spells one name other ways; the fuzzy search finds the
	// same wrong contact each time.
	{
		w := asRunOf("crm-name-spellings-same-contact", "crm", true)
		one := nnContacts(1, nnContact(8817, "Joanna", "Smythe", "joanna@smythe-design.example", "Smythe Design", "subscriber", "2026-03-01T09:00:00Z"))
		for i, q := range []string{"Jon Smyth", "John Smyth", "Jonathan Smythe", "J. Smyth", "Smyth, Jon"} {
			if i == 3 {
				w.then()
			}
			w.t("Not the right person; trying another spelling.", asOK("search_contacts", obj{"query": q, "limit": 10}, one))
		}
		add(w)
	}

	// A spreadsheet agent appends one row again and again; each answer
	// names the next empty row.
	{
		w := asRunOf("sheet-append-same-row", "spreadsheet", true).acc("write", "append_rows")
		row := obj{"spreadsheet_id": "1Bx9kQ2mZ_orders", "sheet": "Renewals", "values": arr{arr{"Parsec Ltd", "2027-01-01", 24000, "renewed"}}}
		for i := 0; i < 5; i++ {
			if i == 2 {
				w.then()
			}
			w.t("Adding Parsec's renewal.", asOK("append_rows", row, egJSON(obj{"spreadsheetId": "1Bx9kQ2mZ_orders", "tableRange": fmt.Sprintf("Renewals!A1:D%d", 41+i), "updates": obj{"updatedRange": fmt.Sprintf("Renewals!A%d:D%d", 42+i, 42+i), "updatedRows": 1, "updatedCells": 4}})))
		}
		add(w)
	}

	// A CRM agent flips a contact's stage between two values.
	{
		w := asRunOf("crm-stage-flip-flop", "crm", true).acc("write", "update_contact")
		for i := 0; i < 6; i++ {
			if i == 3 {
				w.then()
			}
			st := []string{"customer", "opportunity"}[i%2]
			w.t("Correcting the stage.", asOK("update_contact", obj{"id": "6120", "properties": obj{"lifecyclestage": st}}, egJSON(nnContact(6120, "John", "Smith", "jsmith@parsec.example", "Parsec Ltd", st, fmt.Sprintf("2026-12-04T21:4%d:%02dZ", i, i*7)))))
		}
		add(w)
	}

	// A chat agent posts to a channel under its name, its id, a hash;
	// the same missing scope refuses each.
	{
		w := asRunOf("slack-missing-scope-channel-respelled", "chat", true).acc("write", "slack_post_message")
		for i, ch := range []string{"#incidents", "incidents", "C05HZ1K2L9Q", "#incidents", "C05HZ1K2L9Q"} {
			if i == 3 {
				w.then()
			}
			w.t("Posting the incident update.", asFail("slack_post_message", obj{"channel_id": ch, "text": []string{"Incident 2290 resolved.", "Incident 2290 is resolved: backlog drained.", "Resolved: incident 2290.", "Update: incident 2290 resolved.", "incident 2290 resolved"}[i]},
				"tool_error", "An API error occurred: missing_scope (needed: chat:write.public; provided: chat:write,channels:read)"))
		}
		add(w)
	}

	// A mail agent drafts one reply again and again, reworded; each draft
	// is new.
	{
		w := asRunOf("mail-draft-rewritten", "mail", true).acc("write", "draft_email")
		for i, b := range []string{"Hi Jane, we refunded the duplicate charge.", "Hello Jane, the duplicate charge has been refunded.", "Hi Jane — refund done for the duplicate charge.", "Dear Jane, we have refunded the duplicate charge.", "Hi Jane, the second charge is refunded."} {
			if i == 3 {
				w.then()
			}
			w.t("Drafting the reply.", asOK("draft_email", obj{"to": arr{"jane.doe@parsec.example"}, "subject": "Re: Charged twice for December", "body": b + "\n\nBest,\nParsec Support"}, fmt.Sprintf("Email draft created successfully with ID: r-%d", 5512093385170021+i*90127)))
		}
		add(w)
	}

	// A code agent re-indents one patch and sends it again: the same
	// context mismatch each time.
	{
		w := asRunOf("code-patch-reindented-same-error", "code", true).acc("write", "apply_patch")
		for i, ind := range []string{"  ", "    ", "\t", "  ", "   "} {
			if i == 3 {
				w.then()
			}
			p := "*** Begin Patch\n*** Update File: src/queue/worker.ts\n@@ class Worker\n-" + ind + "retry(job) {\n+" + ind + "retry(job: Job) {\n*** End Patch"
			w.t("The patch did not apply; fixing the indentation.", asFail("apply_patch", obj{"input": p}, "tool_error", "Invalid Context 0:\n"+ind+"retry(job) {"))
		}
		add(w)
	}

	// A code agent edits trivially before each test run: the same failure,
	// only the run's time moving.
	{
		w := asRunOf("code-trivial-edits-same-failure", "code", true).acc("write", "edit_file")
		for i, e := range []string{"// retry up to budget", "const max = budget;", "// TODO: jitter", "const limit = budget;", "// see #2301"} {
			if i == 3 {
				w.then()
			}
			w.t("Adjusting the retry.", asOK("edit_file", obj{"path": "src/queue/worker.ts", "edits": arr{obj{"oldText": "    // TODO\n", "newText": "    " + e + "\n    // TODO\n"}}}, fmt.Sprintf("```diff\n@@ -5,1 +5,2 @@\n+    %s\n     // TODO\n```", e)))
			w.t("", asOK("run_tests", obj{"command": "npm test -- worker"}, nnJest(i, 212, "queue/worker.test.ts › retries at most budget times")))
		}
		add(w)
	}

	// A code agent re-runs a workflow that fails the same way each time,
	// under a new attempt number.
	{
		w := asRunOf("code-rerun-same-failure", "code", true).acc("write", "rerun_failed_jobs")
		for i := 0; i < 5; i++ {
			if i == 3 {
				w.then()
			}
			w.t("Re-running the failed job.", asOK("rerun_failed_jobs", obj{"owner": "acme", "repo": "api", "run_id": 12290411}, egJSON(obj{"message": "Failed jobs re-run requested", "run_id": 12290411})))
			w.t("", asOK("get_workflow_run", obj{"owner": "acme", "repo": "api", "run_id": 12290411}, nnRun(12290411, i+2, "completed", "failure", i*240)))
		}
		add(w)
	}

	// A cloud agent describes one database by its name and by its ARN in
	// turn: the same instance, only the request id moving.
	{
		w := asRunOf("cloud-describe-name-arn-alternate", "cloud", true)
		for i := 0; i < 6; i++ {
			if i == 3 {
				w.then()
			}
			ident := "orders-db"
			if i%2 == 1 {
				ident = "arn:aws:rds:eu-west-1:123456789012:db:orders-db"
			}
			w.t("Checking the database.", asOK("describe_db_instances", obj{"DBInstanceIdentifier": ident}, nnAWS(nnDB("orders-db", "storage-full", 0), i)))
		}
		add(w)
	}

	// An ops agent polls a service whose deployment is stuck: only the
	// request id and the date change.
	{
		w := asRunOf("cloud-poll-request-id-only", "cloud", true)
		for i := 0; i < 6; i++ {
			if i == 2 {
				w.then()
			}
			w.t("Still waiting for the deployment.", asOK("describe_services", obj{"cluster": "shop", "services": arr{"checkout"}},
				nnAWS(obj{"services": arr{obj{"serviceName": "checkout", "desiredCount": 4, "runningCount": 2, "pendingCount": 0, "deployments": arr{obj{"id": "ecs-svc/4412", "status": "PRIMARY", "rolloutState": "IN_PROGRESS", "runningCount": 0, "failedTasks": 0}}}}}, i)))
		}
		add(w)
	}

	// A research agent searches in synonyms; each finds the same results
	// in another order.
	{
		w := asRunOf("research-synonyms-same-results-reordered", "research", true)
		hs := [][3]string{
			{"Connection pool exhaustion in PostgreSQL", "Why apps run out of connections and what to do.", "https://blog.example.org/pg-pool-exhaustion"},
			{"Sizing a connection pool", "Little's law applied to pools.", "https://wiki.example.org/pool-sizing"},
			{"PgBouncer FAQ", "How many connections should a pool have?", "https://www.pgbouncer.example/faq.html"},
			{"Too many connections", "FATAL: sorry, too many clients already.", "https://stackoverflow.example/q/11847"},
		}
		for i, q := range []string{"postgres connection pool exhaustion", "postgresql pool exhausted", "pg connection pool saturation", "postgres too many connections pool", "postgresql connection pool running out"} {
			if i == 3 {
				w.then()
			}
			var r [][3]string
			for j := range hs {
				r = append(r, hs[(j+i)%len(hs)])
			}
			w.t("Let me search with other words.", asOK("brave_web_search", obj{"query": q, "count": 5}, nnBrave(r...)))
		}
		add(w)
	}

	// A support agent asks a vector store in other words; the same two
	// passages come back each time.
	{
		w := asRunOf("rag-paraphrased-same-chunks", "research", true)
		for i, q := range []string{"refund for annual plans", "annual subscription refund", "can yearly plans be refunded", "refund policy annual", "annual plan money back"} {
			if i == 3 {
				w.then()
			}
			w.t("Searching the policy again.", asOK("qdrant-find", obj{"query": q}, nnQdrant(q, "Annual plans are refunded pro rata after the first 30 days.", "Refunds go to the original payment method.")))
		}
		add(w)
	}

	// A planner hands one brief to a researcher, reworded each time; the
	// researcher asks back the same question without a call.
	{
		w := asRunOf("multiagent-brief-reworded-bounced", "multi-agent", true)
		for i, task := range []string{"Find our PgBouncer version.", "Check which PgBouncer version we run.", "What version of PgBouncer is deployed?", "Report the PgBouncer version in production."} {
			if i == 2 {
				w.then()
			}
			w.hand("Handing off to the researcher.", "researcher", task, "Which environment: production or staging? I have no host list.", func(s *asw) {
				s.t("I need the environment before I can look.")
			})
		}
		add(w)
	}

	// An AI SDK agent asks for a forecast by city name, respelled, and the
	// server refuses each on the same schema error.
	{
		w := asRunOf("weather-schema-same-error", "assistant", true)
		for i, c := range []any{"Lisbon", "Lisbon, Portugal", "lisbon", obj{"name": "Lisbon"}, "Lisboa"} {
			if i == 3 {
				w.then()
			}
			w.t("", asFail("get_forecast", obj{"city": c}, "tool_error", `MCP error -32602: Invalid arguments for tool get_forecast: [{"code":"invalid_type","expected":"number","received":"undefined","path":["latitude"],"message":"Required"},{"code":"invalid_type","expected":"number","received":"undefined","path":["longitude"],"message":"Required"}]`))
		}
		add(w)
	}

	// A Kubernetes agent alternates a pod's logs and its status; neither
	// moves but for the pod's age.
	{
		w := asRunOf("k8s-logs-status-alternate-stuck", "devops", true)
		for i := 0; i < 4; i++ {
			if i == 2 {
				w.then()
			}
			w.t("Let me look at the pod again.", asOK("pods_log", obj{"namespace": "shop", "name": "search-5f7d9c8b6-q8wzt"}, "Starting search 3.2.1\nLoading index shard 1/4\nWARN shard 2/4: waiting for lock on /data/index/2.lock"))
			w.t("", asOK("pods_get", obj{"namespace": "shop", "name": "search-5f7d9c8b6-q8wzt"}, svPods(svPod{"search-5f7d9c8b6-q8wzt", "0/1", "Running", 0, 600 + i*45, "10.42.1.40", "node-a"})))
		}
		add(w)
	}

	// An agent polls an error tracker whose issue does not change: the
	// answer's request id, its clock and its duration move each time.
	{
		w := asRunOf("tracker-poll-volatile-text", "ops", true)
		for i := 0; i < 6; i++ {
			if i == 2 {
				w.then()
			}
			w.t("Checking whether the fix landed.", asOK("get_issue_details", obj{"issue_id": "PARSEC-API-4F2"}, fmt.Sprintf("Issue PARSEC-API-4F2: TypeError: Cannot read properties of undefined (reading 'budget')\nStatus: unresolved\nEvents: 1,284 (last 24h)\nUsers: 211\nFirst seen: 2026-12-03T18:02:11Z\nLast seen: 2026-12-04T21:02:40Z\n\n-- request %x, %dms, fetched %s", 0x7f3a91c0+i*48271, 80+i*37%150, svClock(i*95))))
		}
		add(w)
	}

	return runs
}
