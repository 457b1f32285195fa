package loops

import (
	"fmt"
	"strings"
)

func seventhRuns() []*svRun {
	var runs []*svRun
	add := func(w *svw) { runs = append(runs, w.run) }

	// --- legit ---

	// A coding agent narrows a search: each pattern finds other files, it
	// reads them, edits, and the tests fail another way, then pass.
	{
		w := svRunOf("coding-grep-narrows", "coding", false).acc("write", "Bash", "Edit")
		w.t("Let me find where retries are configured.", svOK("Grep", obj{"pattern": "retry", "path": "/repo", "output_mode": "files_with_matches"},
			"Found 9 files\n/repo/internal/http/client.go\n/repo/internal/http/client_test.go\n/repo/internal/queue/worker.go\n/repo/internal/queue/worker_test.go\n/repo/cmd/api/main.go\n/repo/docs/config.md\n/repo/config/default.yaml\n/repo/CHANGELOG.md\n/repo/go.sum"))
		w.t("", svOK("Grep", obj{"pattern": "MaxRetries", "path": "/repo", "glob": "*.go", "output_mode": "files_with_matches"}, "Found 3 files\n/repo/internal/http/client.go\n/repo/internal/queue/worker.go\n/repo/cmd/api/main.go"))
		w.t("", svOK("Grep", obj{"pattern": "MaxRetries\\s*=", "path": "/repo/internal", "output_mode": "content", "-n": true}, "/repo/internal/http/client.go:31:\tMaxRetries = 3\n/repo/internal/queue/worker.go:58:\t\tMaxRetries = cfg.Retries"))
		w.t("", svOK("Read", obj{"file_path": "/repo/internal/queue/worker.go", "offset": 50, "limit": 20}, "    50\tfunc (w *Worker) Run(ctx context.Context) error {\n    51\t\tcfg := w.cfg\n    ...\n    58\t\t\tMaxRetries = cfg.Retries\n    59\t\tfor attempt := 0; attempt <= MaxRetries; attempt++ {"))
		w.t("Off by one: <= makes four attempts.", svOK("Edit", obj{"file_path": "/repo/internal/queue/worker.go", "old_string": "for attempt := 0; attempt <= MaxRetries; attempt++ {", "new_string": "for attempt := 0; attempt < MaxRetries; attempt++ {"},
			"The file /repo/internal/queue/worker.go has been updated."))
		w.t("", svOK("Bash", obj{"command": "go test ./internal/queue/...", "description": "Run queue tests"}, "--- FAIL: TestWorkerGivesUp (0.01s)\n    worker_test.go:88: attempts = 2, want 3\nFAIL\nFAIL\tgithub.com/acme/api/internal/queue\t0.214s"))
		w.t("", svOK("Grep", obj{"pattern": "Retries:", "path": "/repo/internal/queue/worker_test.go", "output_mode": "content", "-n": true}, "/repo/internal/queue/worker_test.go:71:\tw := New(Config{Retries: 3})"))
		w.t("", svOK("Read", obj{"file_path": "/repo/internal/queue/worker.go", "offset": 52, "limit": 8}, "    52\t\tif cfg.Retries == 0 {\n    53\t\t\tcfg.Retries = 1\n    54\t\t}\n    55\t\tMaxRetries := cfg.Retries - 1"))
		w.t("The -1 compensates the old <=; dropping it.", svOK("Edit", obj{"file_path": "/repo/internal/queue/worker.go", "old_string": "MaxRetries := cfg.Retries - 1", "new_string": "MaxRetries := cfg.Retries"}, "The file /repo/internal/queue/worker.go has been updated."))
		w.t("", svOK("Bash", obj{"command": "go test ./internal/queue/...", "description": "Run queue tests"}, "ok  \tgithub.com/acme/api/internal/queue\t0.198s"))
		w.t("", svOK("Bash", obj{"command": "go test ./...", "description": "Run all tests"}, "ok  \tgithub.com/acme/api/cmd/api\t0.051s\nok  \tgithub.com/acme/api/internal/http\t0.402s\nok  \tgithub.com/acme/api/internal/queue\t0.201s"))
		add(w)
	}

	// A build fixed error by error: the log's timestamps and PID move, and
	// its errors change between builds.
	{
		w := svRunOf("build-errors-shrink", "coding", false).acc("write", "Bash", "Edit")
		errs := []string{"internal/store/pg.go:41:15: undefined: pgx.ConnConfig", "internal/store/pg.go:88:2: too many return values\n\thave (*Row, error)\n\twant (error)", "internal/store/cache.go:19:9: cannot use ttl (variable of type int) as time.Duration value in argument to c.Set"}
		fixes := [][2]string{{"pgx.ConnConfig", "pgxpool.Config"}, {"return row, nil", "return nil"}, {"c.Set(k, v, ttl)", "c.Set(k, v, time.Duration(ttl)*time.Second)"}}
		files := []string{"/repo/internal/store/pg.go", "/repo/internal/store/pg.go", "/repo/internal/store/cache.go"}
		for i := 0; i <= 3; i++ {
			w.t("", svOK("Bash", obj{"command": "make build", "description": "Build the API"}, svGoBuild(i, errs[min(i, 3):]...)))
			if i < 3 {
				w.t("", svOK("Edit", obj{"file_path": files[i], "old_string": fixes[i][0], "new_string": fixes[i][1]}, "The file "+files[i]+" has been updated."))
			}
		}
		add(w)
	}

	// A Kubernetes agent watches a rollout: two polls while the new pod
	// pulls its image (only ages move), then pods replaced one by one.
	{
		w := svRunOf("k8s-rollout-progresses", "devops", false).acc("write", "resources_create_or_update")
		get := obj{"apiVersion": "apps/v1", "kind": "Deployment", "namespace": "shop", "name": "checkout"}
		pods := obj{"namespace": "shop", "labelSelector": "app=checkout"}
		old := func(n, age int) svPod {
			return svPod{fmt.Sprintf("checkout-6d8f7c9b5-%s", []string{"x2kpl", "mq7rt", "z9wfd", "b4hns"}[n]), "1/1", "Running", 0, age, fmt.Sprintf("10.42.1.%d", 17+n), "node-a"}
		}
		nw := func(n int, status, ready string, age int) svPod {
			return svPod{fmt.Sprintf("checkout-7b5c4d8f9-%s", []string{"kq2lm", "tt8vx", "p0snc", "hh3zd"}[n]), ready, status, 0, age, fmt.Sprintf("10.42.2.%d", 30+n), "node-b"}
		}
		w.t("Applying the new image.", svOK("resources_create_or_update", obj{"resource": "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: checkout, namespace: shop}\nspec:\n  template:\n    spec:\n      containers: [{name: checkout, image: registry.example.com/shop/checkout:2.14.0}]"},
			"# The following resources (YAML) have been created or updated successfully\n- apiVersion: apps/v1\n  kind: Deployment\n  metadata: {name: checkout, namespace: shop, generation: 42}"))
		w.t("", svOK("pods_list_in_namespace", pods, svPods(old(0, 86400), old(1, 86400), old(2, 86390), old(3, 86380), nw(0, "ContainerCreating", "0/1", 4))))
		w.t("Still pulling; waiting.", svOK("pods_list_in_namespace", pods, svPods(old(0, 86431), old(1, 86431), old(2, 86421), old(3, 86411), nw(0, "ContainerCreating", "0/1", 35))))
		w.t("", svOK("resources_get", get, svDeploy(42, 42, 4, 1, 4, 4, "True", "ReplicaSetUpdated", `ReplicaSet "checkout-7b5c4d8f9" is progressing.`, "14:03:12")))
		w.t("", svOK("pods_list_in_namespace", pods, svPods(old(1, 86490), old(2, 86480), old(3, 86470), nw(0, "Running", "1/1", 94), nw(1, "Running", "0/1", 12))))
		w.t("", svOK("resources_get", get, svDeploy(42, 42, 4, 2, 4, 4, "True", "ReplicaSetUpdated", `ReplicaSet "checkout-7b5c4d8f9" is progressing.`, "14:04:20")))
		w.t("", svOK("pods_list_in_namespace", pods, svPods(old(3, 86530), nw(0, "Running", "1/1", 134), nw(1, "Running", "1/1", 52), nw(2, "Running", "1/1", 30), nw(3, "Running", "0/1", 6))))
		w.t("", svOK("resources_get", get, svDeploy(42, 42, 4, 4, 4, 4, "True", "NewReplicaSetAvailable", `ReplicaSet "checkout-7b5c4d8f9" has successfully progressed.`, "14:05:41")))
		w.t("Rolled out.", svOK("pods_list_in_namespace", pods, svPods(nw(0, "Running", "1/1", 171), nw(1, "Running", "1/1", 89), nw(2, "Running", "1/1", 67), nw(3, "Running", "1/1", 43))))
		add(w)
	}

	// A data agent pages through a table by its offset: pages alike in
	// shape, each its own records.
	{
		w := svRunOf("airtable-pages-by-offset", "data", false)
		offs := []string{"", "itrA1b2C3d4/rec00000000000100", "itrA1b2C3d4/rec00000000000200", "itrA1b2C3d4/rec00000000000300", "itrA1b2C3d4/rec00000000000400", "itrA1b2C3d4/rec00000000000500", ""}
		for p := 0; p < 6; p++ {
			a := obj{"baseId": "appQ3x8Lm2Kd", "tableId": "tblOrders", "pageSize": 100, "view": "Grid view"}
			if offs[p] != "" {
				a["offset"] = offs[p]
			}
			n := 100
			if p == 5 {
				n = 37
			}
			w.t("", svOK("list_records", a, svRecords(p*100, n, offs[p+1])))
		}
		w.t("537 orders; summing refunds.", svOK("list_records", obj{"baseId": "appQ3x8Lm2Kd", "tableId": "tblOrders", "pageSize": 100, "filterByFormula": "{Status}='Refunded'"}, svRecords(2, 12, "")))
		add(w)
	}

	// A calendar assistant looks for a free hour across four days (each
	// day busy otherwise), then books it and invites.
	{
		w := svRunOf("calendar-find-slot", "calendar", false).acc("write", "create-event")
		busy := [][]string{{"09:00", "12:30", "13:00", "18:00"}, {"08:30", "17:30"}, {"09:00", "11:00", "11:30", "18:00"}, {"10:00", "11:00"}}
		for d, b := range busy {
			day := fmt.Sprintf("2026-12-%02d", 7+d)
			var bs arr
			for i := 0; i+1 < len(b); i += 2 {
				bs = append(bs, obj{"start": day + "T" + b[i] + ":00+01:00", "end": day + "T" + b[i+1] + ":00+01:00"})
			}
			w.t("", svOK("get-freebusy", obj{"calendars": arr{obj{"id": "primary"}, obj{"id": "maria@acme.example"}}, "timeMin": day + "T09:00:00+01:00", "timeMax": day + "T18:00:00+01:00", "timeZone": "Europe/Berlin"},
				obj{"kind": "calendar#freeBusy", "timeMin": day + "T08:00:00.000Z", "calendars": obj{"primary": obj{"busy": bs}, "maria@acme.example": obj{"busy": arr{obj{"start": day + "T16:00:00+01:00", "end": day + "T17:00:00+01:00"}}}}}))
		}
		w.t("Thursday 11:00 works for both.", svOK("create-event", obj{"calendarId": "primary", "summary": "Quarterly plan review", "start": "2026-12-10T11:00:00", "end": "2026-12-10T12:00:00", "timeZone": "Europe/Berlin", "attendees": arr{obj{"email": "maria@acme.example"}}},
			"Event created: Quarterly plan review (5u2k8d0q1ctg3v6hj7m9) 2026-12-10T11:00:00+01:00 - 2026-12-10T12:00:00+01:00"))
		add(w)
	}

	// A mail assistant searches for three threads in other words, finds
	// each, reads it and replies.
	{
		w := svRunOf("mail-triage-replies", "mail", false).acc("write", "send_email")
		threads := []struct{ q, id, subj, from string }{
			{"from:billing@vendor.example invoice newer_than:14d", "193a8f2c0d1e7b44", "Invoice INV-2291 overdue", "billing@vendor.example"},
			{"subject:(contract renewal) from:legal", "193a91e5b77c0a12", "Contract renewal: redlines attached", "legal@acme.example"},
			{"from:maria has:attachment offsite", "193a9c03f14d2e80", "Offsite agenda v3", "maria@acme.example"},
		}
		for i, th := range threads {
			w.t("", svOK("search_emails", obj{"query": th.q, "maxResults": 10}, svMail(th.id, th.subj, th.from, fmt.Sprintf("Wed, 3 Dec 2026 %02d:14:09 +0100", 9+i))))
			w.t("", svOK("read_email", obj{"messageId": th.id}, "Thread ID: "+th.id+"\nSubject: "+th.subj+"\nFrom: "+th.from+"\n\n"+[]string{"Our records show INV-2291 (EUR 4,180.00) is 12 days overdue.", "Please find our redlines on clauses 4.2 and 9.", "Agenda attached; please confirm the Thursday dinner count."}[i]))
			w.t("Replying.", svOK("send_email", obj{"to": arr{th.from}, "subject": "Re: " + th.subj, "body": []string{"Paid today, remittance to follow.", "Thanks, we will review by Friday.", "Count me in for dinner."}[i], "inReplyTo": th.id},
				"Email sent successfully with ID: "+fmt.Sprintf("193aa%011x", 0x4f21c9+i*977)))
		}
		add(w)
	}

	// A browser agent fills a four-step wizard: the same "Next" button
	// clicked under new refs, the page moving to the next step each time.
	{
		w := svRunOf("browser-wizard-next", "browser", false).acc("write", "browser_navigate", "browser_click", "browser_type", "browser_select_option")
		url := "https://portal.example.com/onboarding"
		w.t("", svOK("browser_navigate", obj{"url": url}, svSnap(url+"?step=1", "Onboarding: company (1 of 4)", 1, `heading "Your company" [level=1]`, `textbox "Company name"`, `textbox "VAT number"`, `button "Next"`)))
		w.t("", svOK("browser_type", obj{"element": "Company name", "ref": "e3", "text": "Acme GmbH"}, "### Ran Playwright code\nawait page.getByRole('textbox', { name: 'Company name' }).fill('Acme GmbH');"))
		w.t("", svOK("browser_type", obj{"element": "VAT number", "ref": "e4", "text": "DE811907980"}, "### Ran Playwright code\nawait page.getByRole('textbox', { name: 'VAT number' }).fill('DE811907980');"))
		steps := []struct{ title, h string }{{"Onboarding: billing (2 of 4)", "Billing address"}, {"Onboarding: team (3 of 4)", "Invite your team"}, {"Onboarding: plan (4 of 4)", "Choose a plan"}, {"Onboarding: done", "You're all set"}}
		ref := 5
		for i, s := range steps {
			w.t("Next.", svOK("browser_click", obj{"element": "Next button", "ref": fmt.Sprintf("e%d", ref)},
				"### Ran Playwright code\nawait page.getByRole('button', { name: 'Next' }).click();\n"+svSnap(fmt.Sprintf("%s?step=%d", url, i+2), s.title, ref+6, `heading "`+s.h+`" [level=1]`, `textbox "Line 1"`, `combobox "Country"`, `button "Back"`, `button "Next"`)))
			ref += 6 + 5
			if i < 2 {
				w.t("", svOK("browser_type", obj{"element": "Line 1", "ref": fmt.Sprintf("e%d", ref-3), "text": []string{"Hauptstr. 5, 10115 Berlin", "ops@acme.example"}[i]}, "### Ran Playwright code\nawait page.getByRole('textbox', { name: 'Line 1' }).fill('...');"))
			}
		}
		add(w)
	}

	// A research agent searches in other words and each search finds
	// sources the others did not.
	{
		w := svRunOf("research-searches-find-new", "research", false)
		qs := []string{"pgvector HNSW recall vs ivfflat benchmark", "qdrant filtered search performance payload index", "milvus disk index DiskANN memory footprint", "weaviate hybrid search BM25 fusion ranking"}
		for i, q := range qs {
			var hits []obj
			for j := 0; j < 3; j++ {
				hits = append(hits, svHit(fmt.Sprintf("%s: notes %d", strings.Fields(q)[0], j+1), fmt.Sprintf("https://%s.example.org/blog/%d", strings.Fields(q)[0], 400+i*10+j), fmt.Sprintf("%s finding %d of %s", strings.Fields(q)[1], j, q), 0.81-float64(j)*0.07))
			}
			w.t("", svOK("tavily-search", obj{"query": q, "search_depth": "advanced", "max_results": 3}, svResults(q, 1.1+float64(i)*0.31, hits...)))
		}
		w.t("", svOK("tavily-extract", obj{"urls": arr{"https://pgvector.example.org/blog/401"}}, obj{"results": arr{obj{"url": "https://pgvector.example.org/blog/401", "raw_content": "HNSW reached 0.98 recall at ef_search=100, ivfflat 0.91 at probes=10."}}}))
		add(w)
	}

	// A database agent asks different questions of one table, each with an
	// alias, each answer new.
	{
		w := svRunOf("sql-aliased-questions", "database", false)
		qs := []struct{ sql, res string }{
			{"SELECT o.status, count(*) AS n FROM orders o GROUP BY o.status", `[{"status":"paid","n":4102},{"status":"refunded","n":211},{"status":"failed","n":97}]`},
			{"SELECT date_trunc('day', o.created_at) AS day, count(*) AS n FROM orders o WHERE o.status = 'failed' GROUP BY 1 ORDER BY 1", `[{"day":"2026-12-01","n":12},{"day":"2026-12-02","n":71},{"day":"2026-12-03","n":14}]`},
			{"SELECT o.payment_provider AS p, count(*) AS n FROM orders o WHERE o.status = 'failed' AND o.created_at::date = '2026-12-02' GROUP BY 1", `[{"p":"stripe","n":66},{"p":"paypal","n":5}]`},
			{"SELECT o.error_code AS code, count(*) AS n FROM orders o WHERE o.status = 'failed' AND o.payment_provider = 'stripe' AND o.created_at::date = '2026-12-02' GROUP BY 1", `[{"code":"card_declined","n":7},{"code":"api_connection_error","n":59}]`},
			{"SELECT min(o.created_at) AS first, max(o.created_at) AS last FROM orders o WHERE o.error_code = 'api_connection_error'", `[{"first":"2026-12-02T13:41:07Z","last":"2026-12-02T14:02:55Z"}]`},
		}
		for _, q := range qs {
			w.t("", svOK("query", obj{"sql": q.sql}, q.res))
		}
		add(w)
	}

	// A notebook agent profiles a column on a growing sample; each answer
	// echoes its size and finds more.
	{
		w := svRunOf("notebook-sample-grows-finds", "data", false)
		for i, n := range []int{1000, 10000, 100000, 1000000} {
			w.t("A bigger sample.", svOK("append_execute_code_cell", obj{"cell_source": fmt.Sprintf("s = df.sample(%d, random_state=0); (s.amount < 0).sum(), len(s)", n)}, svCell(14+i, fmt.Sprintf("(%d, %d)", []int{0, 3, 41, 388}[i], n))))
		}
		w.t("", svOK("append_execute_code_cell", obj{"cell_source": "df[df.amount < 0].merchant.value_counts().head(3)"}, svCell(18, "merchant\nacme-pay      301\nfastcart       64\nshopz          23\nName: count, dtype: int64")))
		add(w)
	}

	// A notebook agent whose answers are short, each a new fact; one
	// exception, fixed by the next cell.
	{
		w := svRunOf("notebook-short-answers", "data", false)
		cells := []struct{ src, out string }{{"df.shape", "(48211, 9)"}, {"df.isna().sum().sum()", "0"}, {"df.amount.dtype", "dtype('float64')"}, {"df.currency.nunique()", "3"},
			{"df.created.min()", "Timestamp('2026-01-01 00:00:04')"}, {"df.created.max()", "Timestamp('2026-12-03 23:59:41')"}, {"df.amount.median()", "42.5"}}
		for i, c := range cells {
			w.t("", svOK("append_execute_code_cell", obj{"cell_source": c.src}, svCell(3+i, c.out)))
		}
		w.t("", svOK("append_execute_code_cell", obj{"cell_source": "df.Amount.mean()"}, svCell(10, svTrace(10, "df.Amount.mean()", "AttributeError: 'DataFrame' object has no attribute 'Amount'"))))
		w.t("Lower case.", svOK("append_execute_code_cell", obj{"cell_source": "df.amount.mean()"}, svCell(11, "57.31928")))
		add(w)
	}

	// A mail assistant toggles one option that changes the answer: the
	// message was in spam.
	{
		w := svRunOf("mail-option-reveals", "mail", false)
		w.t("", svOK("search_emails", obj{"query": "from:noreply@bank.example statement", "maxResults": 5}, "No messages found."))
		w.t("It may have been filtered.", svOK("search_emails", obj{"query": "from:noreply@bank.example statement", "maxResults": 5, "includeSpamTrash": true}, svMail("193a77b0e2c4d901", "Your November statement", "noreply@bank.example", "Mon, 1 Dec 2026 06:02:11 +0100")))
		w.t("", svOK("read_email", obj{"messageId": "193a77b0e2c4d901"}, "Subject: Your November statement\n\nYour statement is ready: closing balance EUR 3,412.90."))
		add(w)
	}

	// A Kubernetes agent scales a deployment to zero for a migration, runs
	// it, and scales back: one round there and back.
	{
		w := svRunOf("k8s-scale-for-migration", "devops", false).acc("write", "resources_scale", "resources_create_or_update")
		w.t("", svOK("resources_scale", obj{"apiVersion": "apps/v1", "kind": "Deployment", "namespace": "shop", "name": "checkout", "scale": 0}, "Deployment shop/checkout scaled to 0 replicas (was 4)"))
		w.t("", svOK("pods_list_in_namespace", obj{"namespace": "shop", "labelSelector": "app=checkout"}, "No resources found in shop namespace."))
		w.t("", svOK("resources_create_or_update", obj{"resource": "apiVersion: batch/v1\nkind: Job\nmetadata: {name: migrate-0042, namespace: shop}\nspec: {template: {spec: {containers: [{name: m, image: registry.example.com/shop/migrate:0042}], restartPolicy: Never}}}"}, "# The following resources (YAML) have been created or updated successfully\n- kind: Job\n  metadata: {name: migrate-0042}"))
		for i, st := range []string{"active: 1", "active: 1", "succeeded: 1\n  completionTime: \"2026-12-04T14:09:51Z\""} {
			w.t("", svOK("resources_get", obj{"apiVersion": "batch/v1", "kind": "Job", "namespace": "shop", "name": "migrate-0042"}, fmt.Sprintf("kind: Job\nmetadata: {name: migrate-0042, resourceVersion: \"%d\"}\nstatus:\n  startTime: \"2026-12-04T14:08:02Z\"\n  %s\n  ready: %d", 88121000+i*40, st, 1-i/2)))
		}
		w.t("", svOK("resources_scale", obj{"apiVersion": "apps/v1", "kind": "Deployment", "namespace": "shop", "name": "checkout", "scale": 4}, "Deployment shop/checkout scaled to 4 replicas (was 0)"))
		add(w)
	}

	// A CI agent re-runs a flaky job once; it passes.
	{
		w := svRunOf("ci-rerun-flaky-once", "ci", false).acc("write", "rerun_failed_jobs")
		run := obj{"owner": "acme", "repo": "api", "run_id": 12830551907}
		w.t("", svOK("get_workflow_run", run, obj{"id": 12830551907, "status": "completed", "conclusion": "failure", "run_attempt": 1, "updated_at": "2026-12-04T13:51:40Z"}))
		w.t("", svOK("get_job_logs", obj{"owner": "acme", "repo": "api", "run_id": 12830551907, "failed_only": true, "tail_lines": 5}, "2026-12-04T13:51:31.0812Z --- FAIL: TestPubSubDelivery (5.00s)\n2026-12-04T13:51:31.0813Z     pubsub_test.go:62: timed out waiting for message\n2026-12-04T13:51:31.2290Z FAIL\tgithub.com/acme/api/internal/pubsub\t5.118s"))
		w.t("A known flake; one re-run.", svOK("rerun_failed_jobs", run, "Successfully triggered rerun of failed jobs for run 12830551907"))
		for i, st := range []obj{{"status": "queued", "conclusion": nil}, {"status": "in_progress", "conclusion": nil}, {"status": "completed", "conclusion": "success"}} {
			st["id"], st["run_attempt"], st["updated_at"] = 12830551907, 2, fmt.Sprintf("2026-12-04T13:5%d:%02dZ", 2+i*2, 10+i*13)
			w.t("", svOK("get_workflow_run", run, st))
		}
		add(w)
	}

	// A Jira agent moves six tickets to Done: the same transition, the
	// same answer, another ticket each time.
	{
		w := svRunOf("jira-bulk-transition", "jira", false).acc("write", "jira_transition_issue")
		w.t("", svOK("jira_search", obj{"jql": "project = OPS AND sprint in closedSprints() AND status = \"In Review\"", "fields": "summary,status", "limit": 10}, obj{"total": 6, "issues": arr{"OPS-311", "OPS-314", "OPS-320", "OPS-322", "OPS-329", "OPS-330"}}))
		for _, k := range []string{"OPS-311", "OPS-314", "OPS-320", "OPS-322", "OPS-329", "OPS-330"} {
			w.t("", svOK("jira_transition_issue", obj{"issue_key": k, "transition_id": "31", "comment": "Closed with the sprint."}, obj{"success": true, "message": "Issue " + k + " transitioned successfully", "issue": obj{"key": k, "status": "Done"}}))
		}
		add(w)
	}

	// A lead hands two distinct questions to a researcher, then a third
	// built on their answers.
	{
		w := svRunOf("lead-three-questions", "multi-agent", false)
		for i, q := range []struct{ task, verdict, q string }{
			{"Find the EU data-residency terms of vendor Lumo", "Lumo: EU region in Frankfurt, DPA with SCCs, sub-processors listed.", "Lumo data residency EU DPA"},
			{"Find the EU data-residency terms of vendor Parsec", "Parsec: US only; EU region planned for Q3.", "Parsec data residency EU region"},
			{"Compare Lumo's Frankfurt region pricing with its US pricing", "Frankfurt is 18% more than us-east for the same tier.", "Lumo Frankfurt region pricing"},
		} {
			w.hand("Delegating.", "researcher", q.task, q.verdict, func(s *svw) {
				s.t("", svOK("tavily-search", obj{"query": q.q, "max_results": 3}, svResults(q.q, 0.9+float64(i)*0.2, svHit(q.q+" docs", fmt.Sprintf("https://docs%d.example.com/%d", i, i*7), q.verdict, 0.77))))
			})
		}
		add(w)
	}

	// --- loops ---

	// A coding agent edits cosmetically (a log line, a rename, a comment)
	// and the same test fails the same way after each edit.
	{
		w := svRunOf("coding-edits-same-failure", "coding", true).acc("write", "Bash", "Edit")
		fail := func(ms int) string {
			return fmt.Sprintf("--- FAIL: TestParseDuration (0.00s)\n    parse_test.go:22: Parse(\"1h30m\") = 1h0m0s, want 1h30m0s\nFAIL\nFAIL\tgithub.com/acme/api/internal/timeutil\t0.%03ds", ms)
		}
		edits := [][2]string{{"\tn, unit := split(s)", "\tn, unit := split(s)\n\tlog.Printf(\"parse %q -> %d %s\", s, n, unit)"}, {"n, unit := split(s)", "num, unit := split(s)"}, {"\treturn total, nil", "\t// total is the sum of all units\n\treturn total, nil"}, {"num, unit := split(s)", "n, unit := split(s)"}, {"\t// total is the sum of all units\n", ""}, {"log.Printf(", "log.Println("}}
		w.t("", svOK("Bash", obj{"command": "go test ./internal/timeutil/ -run TestParseDuration", "description": "Run the failing test"}, fail(104)))
		for i, e := range edits {
			if i == 3 {
				w.then()
			}
			w.t("Trying this.", svOK("Edit", obj{"file_path": "/repo/internal/timeutil/parse.go", "old_string": e[0], "new_string": e[1]}, "The file /repo/internal/timeutil/parse.go has been updated."))
			w.t("", svOK("Bash", obj{"command": "go test ./internal/timeutil/ -run TestParseDuration", "description": "Run the failing test"}, fail(101+i*3)))
		}
		add(w)
	}

	// A coding agent respells one ripgrep pattern, and every spelling finds
	// nothing.
	{
		w := svRunOf("coding-grep-respelled", "coding", true)
		for i, p := range []string{"func NewRateLimiter", "func\\s+NewRateLimiter", "NewRateLimiter\\(", "func NewRateLimiter\\(", "func  *NewRateLimiter", "NewRateLimiter\\s*\\("} {
			if i == 3 {
				w.then()
			}
			w.t("Not found; another pattern.", svOK("Grep", obj{"pattern": p, "path": "/repo", "glob": "*.go", "output_mode": "files_with_matches"}, "No files found"))
		}
		add(w)
	}

	// A build re-run with nothing changed: the log differs only in its
	// timestamps, PID and work directory.
	{
		w := svRunOf("build-rerun-unchanged", "coding", true).acc("write", "Bash")
		e := "internal/store/pg.go:41:15: undefined: pgx.ConnConfig"
		for i := 0; i < 6; i++ {
			if i == 3 {
				w.then()
			}
			w.t("Let me build again.", svOK("Bash", obj{"command": "make build", "description": "Build the API"}, svGoBuild(i, e)))
		}
		add(w)
	}

	// A rollout stuck: the new pod never pulls its image; the same pods,
	// their ages growing, the Deployment's condition's time moving.
	{
		w := svRunOf("k8s-rollout-stuck", "devops", true)
		pods := obj{"namespace": "shop", "labelSelector": "app=checkout"}
		for i := 0; i < 6; i++ {
			if i == 2 {
				w.then() // the third identical poll, two alike before it
			}
			t := i * 30
			w.t("Waiting for the rollout.", svOK("pods_list_in_namespace", pods, svPods(
				svPod{"checkout-6d8f7c9b5-x2kpl", "1/1", "Running", 0, 86400 + t, "10.42.1.17", "node-a"},
				svPod{"checkout-6d8f7c9b5-mq7rt", "1/1", "Running", 0, 86400 + t, "10.42.1.18", "node-a"},
				svPod{"checkout-6d8f7c9b5-z9wfd", "1/1", "Running", 0, 86390 + t, "10.42.1.19", "node-a"},
				svPod{"checkout-7b5c4d8f9-kq2lm", "0/1", "ImagePullBackOff", 0, 40 + t, "10.42.2.30", "node-b"})))
		}
		add(w)
	}

	// A data agent wants the next page but sends no offset: the first page
	// again, under another page size each time.
	{
		w := svRunOf("airtable-first-page-resized", "data", true)
		for i, n := range []int{100, 50, 100, 25, 100, 75} {
			if i == 3 {
				w.then()
			}
			w.t("Next page.", svOK("list_records", obj{"baseId": "appQ3x8Lm2Kd", "tableId": "tblOrders", "pageSize": n, "view": "Grid view"}, svRecords(0, n, fmt.Sprintf("itrA1b2C3d4/rec%014d", n))))
		}
		add(w)
	}

	// A calendar assistant creates one event, then creates it again to be
	// sure, each time under a new id.
	{
		w := svRunOf("calendar-event-recreated", "calendar", true).acc("write", "create-event")
		for i := 0; i < 5; i++ {
			if i == 3 {
				w.then()
			}
			w.t("Creating the review.", svOK("create-event", obj{"calendarId": "primary", "summary": "Quarterly plan review", "start": "2026-12-10T11:00:00", "end": "2026-12-10T12:00:00", "timeZone": "Europe/Berlin", "attendees": arr{obj{"email": "maria@acme.example"}}},
				fmt.Sprintf("Event created: Quarterly plan review (%s) 2026-12-10T11:00:00+01:00 - 2026-12-10T12:00:00+01:00", []string{"5u2k8d0q1ctg3v6hj7m9", "0b9r1m4kqe8s7ud2lp3a", "7hq0t2c5nd1vjl8k4m6e", "9c3e6d0f2a1b8h7k5j4g", "3m1p0q9r8s7t6u5v4w2x"}[i])))
		}
		add(w)
	}

	// A mail assistant respells a Gmail query; every spelling finds the
	// same two messages.
	{
		w := svRunOf("mail-query-respelled", "mail", true)
		two := svMail("193a8f2c0d1e7b44", "Invoice INV-2291 overdue", "billing@vendor.example", "Wed, 3 Dec 2026 09:14:09 +0100") + "\n" + svMail("1938c0a7e52d1f09", "Invoice INV-2291", "billing@vendor.example", "Mon, 17 Nov 2026 08:00:52 +0100")
		for i, q := range []string{"from:billing@vendor.example invoice 2291", "invoice 2291 from:billing@vendor.example", "from:(billing@vendor.example) INV-2291", "INV-2291 from:billing@vendor.example", "\"INV-2291\" from:billing@vendor.example newer_than:60d"} {
			if i == 3 {
				w.then()
			}
			w.t("Let me search for the original invoice.", svOK("search_emails", obj{"query": q, "maxResults": 10}, two))
		}
		add(w)
	}

	// A browser agent submits a form whose validation error stays, typing
	// the same phone in other formats; the refs renumber each snapshot.
	{
		w := svRunOf("browser-submit-invalid", "browser", true).acc("write", "browser_click", "browser_type")
		url := "https://portal.example.com/account/phone"
		for i, ph := range []string{"+49 30 1234567", "030 1234567", "+49301234567", "0049 30 1234567", "(030) 123 4567"} {
			ref := 40 + i*9
			w.t("", svOK("browser_type", obj{"element": "Phone", "ref": fmt.Sprintf("e%d", ref+2), "text": ph}, "### Ran Playwright code\nawait page.getByRole('textbox', { name: 'Phone' }).fill('"+ph+"');"))
			if i == 3 {
				w.then()
			}
			w.t("Submitting.", svOK("browser_click", obj{"element": "Save button", "ref": fmt.Sprintf("e%d", ref+3)},
				"### Ran Playwright code\nawait page.getByRole('button', { name: 'Save' }).click();\n"+svSnap(url, "Phone number", ref+9, `heading "Phone number" [level=1]`, `textbox "Phone": `+ph, `alert: "Enter a valid mobile number"`, `button "Save"`)))
		}
		add(w)
	}

	// A research agent rewords one question; every wording finds the same
	// three sources (only the scores and the timing move).
	{
		w := svRunOf("research-synonyms-same-sources", "research", true)
		for i, q := range []string{"best vector database for production 2026", "top production-ready vector databases 2026", "which vector DB to use in production", "most reliable vector database for prod workloads", "recommended vector store for production use"} {
			if i == 3 {
				w.then()
			}
			s := float64(i%3) * 0.01
			w.t("Let me search differently.", svOK("tavily-search", obj{"query": q, "search_depth": "basic", "max_results": 3}, svResults(q, 0.8+float64(i)*0.17,
				svHit("Vector databases compared (2026)", "https://benchmarks.example.org/vector-db-2026", "We compare pgvector, Qdrant, Milvus and Weaviate on recall, latency and cost.", 0.84-s),
				svHit("Choosing a vector store for production", "https://blog.example.com/choosing-vector-store", "Operational concerns dominate: backups, filtering, multi-tenancy.", 0.79-s),
				svHit("r/MachineLearning: what vector DB do you run in prod?", "https://forum.example.net/t/vector-db-prod", "Most answers: pgvector until 50M vectors, then Qdrant.", 0.71+s))))
		}
		add(w)
	}

	// A database agent respells one count with an alias, a cast, a limit:
	// the same number under another column name.
	{
		w := svRunOf("sql-count-respelled", "database", true)
		qs := []struct{ sql, col string }{
			{"SELECT count(*) FROM orders WHERE status = 'failed' AND created_at >= '2026-12-02'", "count"},
			{"SELECT COUNT(*) AS n FROM orders o WHERE o.status = 'failed' AND o.created_at >= '2026-12-02'", "n"},
			{"SELECT count(o.id) AS failed FROM orders AS o WHERE o.status='failed' AND o.created_at >= DATE '2026-12-02'", "failed"},
			{"select count(1) as total from orders o where o.status = 'failed' and o.created_at >= '2026-12-02'::date limit 1", "total"},
			{"SELECT count(*) AS failed_orders FROM public.orders o WHERE o.status IN ('failed') AND o.created_at >= '2026-12-02'", "failed_orders"},
		}
		for i, q := range qs {
			if i == 3 {
				w.then()
			}
			w.t("Double-checking the count.", svOK("query", obj{"sql": q.sql}, fmt.Sprintf(`[{"%s":85}]`, q.col)))
		}
		add(w)
	}

	// A profiler widened on a sample whose one-line answer echoes its size
	// and finds nothing each time.
	{
		w := svRunOf("profile-sample-widened", "data", true)
		for i, n := range []int{1000, 5000, 25000, 100000, 500000} {
			if i == 3 {
				w.then()
			}
			w.t("Check a larger sample.", svOK("append_execute_code_cell", obj{"cell_source": fmt.Sprintf("s = df.sample(%d); print(f'{len(s)} rows sampled, {s.email.str.contains(\"@@\").sum()} malformed')", n)}, svCell(20+i, fmt.Sprintf("%d rows sampled, 0 malformed", n))))
		}
		add(w)
	}

	// A notebook agent whose frame was never loaded: each cell answers the
	// same NameError as its output, under its own cell number.
	{
		w := svRunOf("notebook-nameerror-as-output", "data", true)
		for i, src := range []string{"df.head()", "df.describe()", "df.columns", "df.groupby('region').amount.sum()", "df.info()", "len(df)"} {
			if i == 3 {
				w.then()
			}
			w.t("", svOK("append_execute_code_cell", obj{"cell_source": src}, svCell(31+i, svTrace(31+i, src, "NameError: name 'df' is not defined"))))
		}
		add(w)
	}

	// A REPL whose exception comes back as a short success, the same for
	// each expression.
	{
		w := svRunOf("repl-short-error-as-success", "data", true)
		for i, src := range []string{"orders.total.sum()", "orders.total.mean()", "orders.groupby('day').total.sum()", "orders.total.max()", "orders.total.describe()"} {
			if i == 3 {
				w.then()
			}
			w.t("", svOK("run_python", obj{"code": src}, "KeyError: 'total'"))
		}
		add(w)
	}

	// A mail assistant toggles one option on and off: the same empty
	// answer each time.
	{
		w := svRunOf("mail-option-toggled", "mail", true)
		for i := 0; i < 6; i++ {
			if i == 3 {
				w.then()
			}
			a := obj{"query": "from:hr@acme.example subject:payslip november", "maxResults": 5}
			if i%2 == 1 {
				a["includeSpamTrash"] = true
			}
			w.t("Searching again.", svOK("search_emails", a, "No messages found."))
		}
		add(w)
	}

	// A Kubernetes agent scales a deployment up while an autoscaler scales
	// it back: up, read, up, read.
	{
		w := svRunOf("k8s-scale-fights-hpa", "devops", true).acc("write", "resources_scale")
		for r := 0; r < 4; r++ {
			if r == 2 {
				w.then()
			}
			w.t("Scaling to 8.", svOK("resources_scale", obj{"apiVersion": "apps/v1", "kind": "Deployment", "namespace": "shop", "name": "checkout", "scale": 8}, "Deployment shop/checkout scaled to 8 replicas (was 4)"))
			w.t("", svOK("resources_get", obj{"apiVersion": "apps/v1", "kind": "Deployment", "namespace": "shop", "name": "checkout"}, svDeploy(44+r, 44+r, 4, 4, 4, 4, "True", "NewReplicaSetAvailable", `ReplicaSet "checkout-7b5c4d8f9" has successfully progressed.`, svClock(r*50))))
		}
		add(w)
	}

	// A CI agent re-runs a job that fails the same way each time, only
	// its log's timestamps and runner moving.
	{
		w := svRunOf("ci-rerun-same-failure", "ci", true).acc("write", "rerun_failed_jobs")
		run := obj{"owner": "acme", "repo": "api", "run_id": 12830551907}
		for i := 0; i < 5; i++ {
			if i == 3 {
				w.then()
			}
			w.t("Re-running.", svOK("rerun_failed_jobs", run, "Successfully triggered rerun of failed jobs for run 12830551907"))
			w.t("", svOK("get_job_logs", obj{"owner": "acme", "repo": "api", "run_id": 12830551907, "failed_only": true, "tail_lines": 4},
				fmt.Sprintf("2026-12-04T14:%02d:31.0812Z Runner: GitHub Actions %d\n2026-12-04T14:%02d:40.1130Z --- FAIL: TestMigrations (0.41s)\n2026-12-04T14:%02d:40.1131Z     migrate_test.go:30: column \"tenant_id\" does not exist\n2026-12-04T14:%02d:40.2290Z FAIL\tgithub.com/acme/api/internal/store\t0.512s", 10+i*6, 100+i*17, 10+i*6, 10+i*6, 10+i*6)))
		}
		add(w)
	}

	// A Jira agent tries one transition under other names and ids, refused
	// the same way each time.
	{
		w := svRunOf("jira-transition-refused", "jira", true).acc("write", "jira_transition_issue")
		for i, tr := range []string{"31", "Done", "done", "41", "Close Issue", "Resolve"} {
			if i == 3 {
				w.then()
			}
			w.t("", svFail("jira_transition_issue", obj{"issue_key": "OPS-340", "transition_id": tr}, "invalid_args", "Error transitioning issue OPS-340: Transition id '"+tr+"' is not valid for this issue. Available transitions: 11 (To Do), 21 (In Progress)"))
		}
		add(w)
	}

	// A lead rewords one question to its researcher, which searches the
	// same way and answers the same.
	{
		w := svRunOf("lead-reworded-same-answer", "multi-agent", true)
		for i, task := range []string{"Find whether vendor Parsec offers an EU region", "Check if Parsec has EU data residency", "Does Parsec host data in the EU?", "Parsec: EU hosting available or not?"} {
			if i == 2 {
				w.then()
			}
			w.hand("Asking the researcher.", "researcher", task, "Parsec: US only; EU region planned for Q3.", func(s *svw) {
				s.t("", svOK("tavily-search", obj{"query": "Parsec EU region data residency", "max_results": 3}, svResults("Parsec EU region data residency", 0.9+float64(i)*0.1, svHit("Parsec regions", "https://docs.parsec.example.com/regions", "Regions: us-east, us-west. EU planned Q3.", 0.8))))
			})
		}
		add(w)
	}

	return runs
}
