package loops

import (
	"fmt"
	"strings"
)

func thirteenthRuns() []*asRun {
	var runs []*asRun
	add := func(w *asw) { runs = append(runs, w.run) }

	invoices := [][4]string{
		{"193a1f0c2b7e4d11", "Invoice INV-2026-118 from Acme Hosting", "Acme Billing <billing@acme.example>", "Mon, 30 Nov 2026 08:14:02 +0000"},
		{"193a0d77e1c94b02", "Re: Invoice INV-2026-118 — card declined", "Acme Billing <billing@acme.example>", "Tue, 01 Dec 2026 10:40:55 +0000"},
		{"1939c2a04f1b8e33", "Invoice INV-2026-097 from Acme Hosting", "Acme Billing <billing@acme.example>", "Sun, 01 Nov 2026 08:12:48 +0000"},
	}

	// --- legit ---

	// An email agent narrows a search: each query finds fewer messages,
	// then it reads the one it wants.
	{
		w := asRunOf("gmail-search-narrowed-then-read", "email", false)
		w.t("", asOK("search_emails", obj{"query": "from:billing@acme.example", "maxResults": 10}, thMail(invoices...)))
		w.t("", asOK("search_emails", obj{"query": "from:billing@acme.example after:2026/11/15", "maxResults": 10}, thMail(invoices[:2]...)))
		w.t("", asOK("search_emails", obj{"query": "from:billing@acme.example after:2026/11/15 declined", "maxResults": 10}, thMail(invoices[1])))
		w.t("", asOK("read_email", obj{"messageId": "193a0d77e1c94b02"}, "Thread ID: 193a0c11aa0e9f01\nSubject: Re: Invoice INV-2026-118 — card declined\nFrom: Acme Billing <billing@acme.example>\nTo: ops@shop.example\nDate: Tue, 01 Dec 2026 10:40:55 +0000\n\nYour card ending 4242 was declined for €312.40. Update it within 7 days to avoid suspension."))
		add(w)
	}

	// A smart-home agent steps a thermostat up and reads the room warming.
	{
		w := asRunOf("hass-thermostat-stepped-warms", "smart-home", false).acc("write", "HassClimateSetTemperature")
		for i, tmp := range []int{19, 20, 21, 22} {
			w.t("", asOK("HassClimateSetTemperature", obj{"name": "Living room thermostat", "temperature": tmp}, thHassDone("Living room thermostat", "climate.living_room")))
			w.t("", asOK("GetLiveContext", obj{}, thHassContext("on", "heat", 17.5+float64(i)*1.1)))
		}
		add(w)
	}

	// A payments agent pages through a customer's payment intents.
	{
		w := asRunOf("stripe-intents-paged", "payments", false)
		after := ""
		for p := 0; p < 6; p++ {
			var data arr
			for i := 0; i < 10; i++ {
				n := p*10 + i
				data = append(data, obj{"id": fmt.Sprintf("pi_3Q%08dAbc", 7310000-n*13), "amount": 1900 + n*150, "currency": "eur", "status": []string{"succeeded", "succeeded", "requires_payment_method", "canceled"}[n%4], "created": 1764900000 - n*86400})
			}
			a := obj{"customer": "cus_R8kQ2vXw1", "limit": 10}
			if after != "" {
				a["starting_after"] = after
			}
			w.t("", asOK("list_payment_intents", a, egJSON(obj{"object": "list", "data": data, "has_more": p < 5, "url": "/v1/payment_intents"})))
			after = data[len(data)-1].(obj)["id"].(string)
		}
		add(w)
	}

	// An issue-tracker agent walks an issue through its workflow, reading
	// its transitions at each state.
	{
		w := asRunOf("jira-issue-through-workflow", "tracker", false).acc("write", "jira_transition_issue")
		states := []string{"To Do", "In Progress", "In Review", "Done"}
		for i := 0; i < 3; i++ {
			w.t("", asOK("jira_get_transitions", obj{"issue_key": "SHOP-412"}, egJSON(arr{obj{"id": fmt.Sprint(11 + i*10), "name": "Move to " + states[i+1], "to_status": states[i+1]}, obj{"id": "2", "name": "Close Issue", "to_status": "Closed"}})))
			w.t("", asOK("jira_transition_issue", obj{"issue_key": "SHOP-412", "transition_id": fmt.Sprint(11 + i*10)}, egJSON(obj{"success": true, "message": fmt.Sprintf("Issue SHOP-412 transitioned successfully to %s", states[i+1]), "issue": obj{"key": "SHOP-412", "status": states[i+1]}})))
		}
		add(w)
	}

	// An infrastructure agent fixes a Terraform plan error by error.
	{
		w := asRunOf("terraform-plan-fixed-error-by-error", "infra", false).acc("write", "start_process", "edit_block")
		errs := []string{
			"Error: Missing required argument\n\n  on main.tf line 12, in resource \"aws_s3_bucket\" \"logs\":\n  12: resource \"aws_s3_bucket\" \"logs\" {\n\nThe argument \"bucket\" is required, but no definition was found.",
			"Error: Reference to undeclared input variable\n\n  on main.tf line 31, in resource \"aws_db_instance\" \"orders\":\n  31:   instance_class = var.db_class\n\nAn input variable with the name \"db_class\" has not been declared.",
			"Error: Unsupported argument\n\n  on network.tf line 8, in resource \"aws_subnet\" \"private\":\n   8:   availability_zones = [\"eu-west-1a\"]\n\nAn argument named \"availability_zones\" is not expected here. Did you mean \"availability_zone\"?",
		}
		fixes := [][3]string{{"main.tf", "resource \"aws_s3_bucket\" \"logs\" {", "resource \"aws_s3_bucket\" \"logs\" {\n  bucket = \"shop-logs-prod\""}, {"variables.tf", "variable \"region\" {", "variable \"db_class\" {\n  default = \"db.t4g.medium\"\n}\n\nvariable \"region\" {"}, {"network.tf", "availability_zones = [\"eu-west-1a\"]", "availability_zone = \"eu-west-1a\""}}
		for i, e := range errs {
			w.t("", asOK("start_process", obj{"command": "terraform plan -no-color -var-file=prod.tfvars", "timeout_ms": 60000}, thProc(4100+i*37, "Refreshing state...\n\n"+e)))
			w.t("", asOK("edit_block", obj{"file_path": "/srv/infra/" + fixes[i][0], "old_string": fixes[i][1], "new_string": fixes[i][2]}, "Successfully applied 1 edit to /srv/infra/"+fixes[i][0]))
		}
		w.t("", asOK("start_process", obj{"command": "terraform plan -no-color -var-file=prod.tfvars", "timeout_ms": 60000}, thProc(4250, "Refreshing state...\n\nPlan: 7 to add, 0 to change, 0 to destroy.")))
		add(w)
	}

	// A Docker agent restarts a container after fixing its secret and
	// reads its logs as it migrates and comes up.
	{
		w := asRunOf("docker-restart-logs-progress", "containers", false).acc("write", "start_container", "recreate_container")
		w.t("", asOK("fetch_container_logs", obj{"container_id": "orders-api", "tail": 20}, thDockerLogs(600)))
		w.t("", asOK("recreate_container", obj{"container_id": "orders-api", "environment": obj{"PGPASSWORD_FILE": "/run/secrets/orders_db"}}, egJSON(obj{"id": "9f3ab2c17e", "name": "orders-api", "status": "running"})))
		for i, l := range []string{"[info] running migrations 0041..0047", "[info] migration 0045_add_refunds applied (3/7)", "[info] all migrations applied; listening on :8080", "[info] GET /healthz 200 2ms"} {
			w.t("", asOK("fetch_container_logs", obj{"container_id": "orders-api", "tail": 20}, fmt.Sprintf("2026-12-05T05:20:%02d.%06dZ %s", 10+i*9, i*104729%1000000, l)))
		}
		add(w)
	}

	// A cloud agent describes each of a service's instances once.
	{
		w := asRunOf("aws-describe-each-instance", "cloud", false)
		for i := 0; i < 6; i++ {
			id := fmt.Sprintf("i-0%x", 0x5a1c9e30b7+i*0x1f3)
			w.t("", asOK("call_aws", obj{"cli_command": "aws ec2 describe-instances --instance-ids " + id + " --region eu-west-1"}, egJSON(obj{"response": obj{"status_code": 200, "json": egJSON(obj{"Reservations": arr{obj{"Instances": arr{obj{"InstanceId": id, "InstanceType": []string{"m6i.large", "m6i.large", "c6i.xlarge"}[i%3], "State": obj{"Name": []string{"running", "running", "stopped"}[i%3]}, "PrivateIpAddress": fmt.Sprintf("10.0.%d.%d", i, 20+i*11)}}}}})}})))
		}
		add(w)
	}

	// A places agent pages nearby results with a token that advances.
	{
		w := asRunOf("places-token-advances", "maps", false)
		tok := ""
		for p := 0; p < 3; p++ {
			var res arr
			for i := 0; i < 20; i++ {
				res = append(res, obj{"name": fmt.Sprintf("Café %d", p*20+i), "place_id": fmt.Sprintf("ChIJ%05dxq", p*20+i), "rating": 3.5 + float64((p*20+i)%15)/10, "vicinity": fmt.Sprintf("Rua %d, Lisboa", p*20+i)})
			}
			a := obj{"location": "38.7223,-9.1393", "radius": 800, "type": "cafe"}
			if tok != "" {
				a["pagetoken"] = tok
			}
			next := fmt.Sprintf("AW30NDx%d_k9pQ", p+1)
			out := obj{"results": res, "status": "OK"}
			if p < 2 {
				out["next_page_token"] = next
			}
			w.t("", asOK("maps_places_nearby", a, egJSON(out)))
			tok = next
		}
		add(w)
	}

	// A translation agent translates a notice paragraph by paragraph and
	// checks each by translating it back once.
	{
		w := asRunOf("translate-paragraphs-checked-once", "translation", false)
		paras := [][3]string{
			{"Our office closes on 24 December at noon.", "Notre bureau ferme le 24 décembre à midi.", "Our office closes on December 24 at noon."},
			{"Orders placed after 20 December ship in January.", "Les commandes passées après le 20 décembre seront expédiées en janvier.", "Orders placed after December 20 will be shipped in January."},
			{"Returns are accepted until 31 January.", "Les retours sont acceptés jusqu'au 31 janvier.", "Returns are accepted until January 31."},
		}
		for _, p := range paras {
			w.t("", asOK("translate-text", obj{"text": p[0], "sourceLangCode": "en", "targetLangCode": "fr"}, "Translation: "+p[1]+"\nDetected source language: en"))
			w.t("", asOK("translate-text", obj{"text": p[1], "sourceLangCode": "fr", "targetLangCode": "en-GB"}, "Translation: "+p[2]+"\nDetected source language: fr"))
		}
		add(w)
	}

	// An agent sends a task to another over A2A and polls it until it
	// completes.
	{
		w := asRunOf("a2a-task-polled-completes", "a2a", false).acc("write", "send_message")
		id := "task-7c1e9a40-5b2d-4f0e-9d33-1a2b3c4d5e6f"
		w.t("", asOK("send_message", obj{"agent_url": "http://billing-agent.internal", "message": "Reconcile November's refunds against the ledger and list mismatches."}, thA2ATask(id, "submitted", "", 1)))
		for i, st := range []string{"working", "working", "completed"} {
			txt := []string{"Loaded 412 refunds; matching against ledger entries (120/412).", "Matching refunds (388/412).", "3 mismatches: RF-2211 (€12.00 vs €21.00), RF-2290 (missing in ledger), RF-2304 (duplicate)."}[i]
			w.t("", asOK("get_task", obj{"task_id": id}, thA2ATask(id, st, txt, 20+i*30)))
		}
		add(w)
	}

	// A search agent refines its query; each search brings new results.
	{
		w := asRunOf("brave-search-refined-new-results", "search", false)
		qs := []string{"postgres logical replication lag", "postgres logical replication lag wal_sender_timeout", "pg_stat_replication replay_lag spikes after vacuum", "logical decoding large transactions streaming=on postgres 16"}
		for i, q := range qs {
			var rs [][3]string
			for j := 0; j < 4; j++ {
				rs = append(rs, [3]string{fmt.Sprintf("Result %d.%d on %s", i, j, q), fmt.Sprintf("Notes %d about %s", i*4+j, strings.Fields(q)[i%3]), fmt.Sprintf("https://site%d.example/post/%d", (i*4+j)%7, 1000+i*4+j)})
			}
			w.t("", asOK("brave_web_search", obj{"query": q, "count": 4}, thBrave(rs...)))
		}
		add(w)
	}

	// A spreadsheet agent reads a budget's sheets one after another.
	{
		w := asRunOf("sheets-ranges-one-after-another", "spreadsheet", false)
		for i, s := range []string{"Q1", "Q2", "Q3", "Q4"} {
			w.t("", asOK("get_sheet_data", obj{"spreadsheet_id": "1qZ8mB2xK7", "sheet": s, "range": "A1:D9"}, thRows("'"+s+"'!A1:D9", 4+i)))
		}
		add(w)
	}

	// A shell agent greps a tree for one pattern after another.
	{
		w := asRunOf("grep-new-patterns-find-new", "shell", false).acc("write", "execute_command")
		for i, p := range []string{"TODO", "FIXME", "XXX", "HACK"} {
			var lines []string
			for j := 0; j < 2+i; j++ {
				lines = append(lines, fmt.Sprintf("src/%s/%s.py:%d:    # %s: %s", []string{"cart", "tax", "api"}[j%3], []string{"totals", "rules", "views", "forms"}[(i+j)%4], 10+j*17+i, p, []string{"handle empty cart", "rounding mode", "pagination", "retry"}[(i+j)%4]))
			}
			w.t("", asOK("execute_command", obj{"command": "grep -rn " + p + " src"}, egJSON(obj{"stdout": strings.Join(lines, "\n"), "stderr": "", "exit_code": 0})))
		}
		add(w)
	}

	// A coding agent installs missing modules one by one; each run fails
	// on the next one until the script runs.
	{
		w := asRunOf("pip-install-missing-one-by-one", "code", false).acc("write", "execute_command")
		for _, m := range []string{"requests", "yaml", "dateutil"} {
			w.t("", asOK("execute_command", obj{"command": "python scripts/sync_rates.py"}, egJSON(obj{"stdout": "", "stderr": fmt.Sprintf("Traceback (most recent call last):\n  File \"/app/scripts/sync_rates.py\", line 3, in <module>\n    import %s\nModuleNotFoundError: No module named '%s'", m, m), "exit_code": 1})))
			pkg := map[string]string{"requests": "requests", "yaml": "pyyaml", "dateutil": "python-dateutil"}[m]
			w.t("", asOK("execute_command", obj{"command": "pip install " + pkg}, egJSON(obj{"stdout": fmt.Sprintf("Collecting %s\nInstalling collected packages: %s\nSuccessfully installed %s-2.9.0", pkg, pkg, pkg), "stderr": "", "exit_code": 0})))
		}
		w.t("", asOK("execute_command", obj{"command": "python scripts/sync_rates.py"}, egJSON(obj{"stdout": "synced 168 rates (EUR base) at 2026-12-05T06:31:04Z", "stderr": "", "exit_code": 0})))
		add(w)
	}

	// An image agent generates pictures of other subjects for a page.
	{
		w := asRunOf("images-other-subjects", "images", false).acc("write", "generate_image")
		for i, p := range []string{"a ceramic coffee cup on a wooden table, morning light", "a bag of roasted coffee beans, studio photo", "a barista pouring latte art, close-up", "a café storefront in Lisbon at dusk", "a pour-over kettle and filter, flat lay"} {
			w.t("", asOK("generate_image", obj{"prompt": p, "model": "flux-pro", "size": "1024x1024"}, fmt.Sprintf("Image generated successfully.\nURL: https://images.example/gen/%08x.png\nPrompt: %s", 0x3fa21c00+i*7919, p)))
		}
		add(w)
	}

	// A document agent extracts a contract's pages one by one.
	{
		w := asRunOf("pdf-pages-one-by-one", "document", false)
		for p := 1; p <= 6; p++ {
			w.t("", asOK("read_pdf", obj{"path": "/docs/lease-2027.pdf", "pages": fmt.Sprint(p)}, egJSON(obj{"page": p, "total_pages": 6, "text": fmt.Sprintf("%d. %s\nThe tenant shall %s within %d days of notice.", p, []string{"Term", "Rent", "Deposit", "Repairs", "Termination", "Signatures"}[p-1], []string{"occupy", "pay", "lodge", "report", "vacate", "sign"}[p-1], 7*p)})))
		}
		add(w)
	}

	// A git agent's push is rejected; it pulls with rebase and pushes.
	{
		w := asRunOf("git-push-after-pull", "git", false).acc("write", "execute_command")
		rej := " ! [rejected]        main -> main (fetch first)\nerror: failed to push some refs to 'github.com:shop/infra.git'\nhint: Updates were rejected because the remote contains work that you do not\nhint: have locally."
		w.t("", asOK("execute_command", obj{"command": "git push origin main"}, egJSON(obj{"stdout": "", "stderr": rej, "exit_code": 1})))
		w.t("", asOK("execute_command", obj{"command": "git pull --rebase origin main"}, egJSON(obj{"stdout": "Successfully rebased and updated refs/heads/main.", "stderr": "From github.com:shop/infra\n * branch            main       -> FETCH_HEAD\n   4e1a2b3..9c8d7e6  main       -> origin/main", "exit_code": 0})))
		w.t("", asOK("execute_command", obj{"command": "git push origin main"}, egJSON(obj{"stdout": "", "stderr": "To github.com:shop/infra.git\n   9c8d7e6..a1b2c3d  main -> main", "exit_code": 0})))
		add(w)
	}

	// An HTTP agent pages an API by its Link header.
	{
		w := asRunOf("http-api-link-pages", "http", false)
		for p := 1; p <= 5; p++ {
			var items arr
			for i := 0; i < 25; i++ {
				items = append(items, obj{"id": p*100 + i, "sku": fmt.Sprintf("SKU-%04d", p*25+i), "stock": (p*25 + i) % 40})
			}
			link := fmt.Sprintf("<https://api.shop.example/v2/products?page=%d>; rel=\"next\"", p+1)
			if p == 5 {
				link = ""
			}
			w.t("", asOK("http_request", obj{"method": "GET", "url": fmt.Sprintf("https://api.shop.example/v2/products?page=%d", p), "headers": obj{"Authorization": "Bearer ${SHOP_TOKEN}"}}, egJSON(obj{"status": 200, "headers": obj{"link": link, "x-ratelimit-remaining": fmt.Sprint(4990 - p)}, "body": egJSON(items)})))
		}
		add(w)
	}

	// A coding agent edits and re-runs a test; the failure changes each
	// time until it passes.
	{
		w := asRunOf("code-edits-failure-changes", "code", false).acc("write", "edit_file", "execute_command")
		fails := []string{"FAILED tests/test_tax.py::test_vat_rounding - assert Decimal('10.00') == Decimal('10.01')", "FAILED tests/test_tax.py::test_vat_rounding - TypeError: unsupported operand type(s) for *: 'Decimal' and 'float'", "FAILED tests/test_tax.py::test_vat_exempt - assert Decimal('2.30') == Decimal('0.00')"}
		edits := [][2]string{{"return round(net * rate, 2)", "return (net * rate).quantize(Decimal('0.01'), ROUND_HALF_UP)"}, {"rate = 0.23", "rate = Decimal('0.23')"}, {"if item.category == 'books':", "if item.category in EXEMPT:"}}
		for i, f := range fails {
			w.t("", asOK("execute_command", obj{"command": "pytest tests/test_tax.py -x -q"}, egJSON(obj{"stdout": f + "\n1 failed, " + fmt.Sprint(11+i) + " passed in 0.41s", "stderr": "", "exit_code": 1})))
			w.t("", asOK("edit_file", obj{"path": "/app/shop/tax.py", "edits": arr{obj{"oldText": edits[i][0], "newText": edits[i][1]}}}, fmt.Sprintf("```diff\n--- /app/shop/tax.py\n+++ /app/shop/tax.py\n@@ -%d,1 +%d,1 @@\n-    %s\n+    %s\n```", 20+i*6, 20+i*6, edits[i][0], edits[i][1])))
		}
		w.t("", asOK("execute_command", obj{"command": "pytest tests/test_tax.py -x -q"}, egJSON(obj{"stdout": "14 passed in 0.39s", "stderr": "", "exit_code": 0})))
		add(w)
	}

	// A CI agent re-runs a flaky job; the third run passes.
	{
		w := asRunOf("ci-flaky-job-rerun-passes", "ci", false).acc("write", "rerun_failed_jobs")
		for i := 0; i < 3; i++ {
			run := 9120455 + i
			w.t("", asOK("rerun_failed_jobs", obj{"owner": "shop", "repo": "orders", "run_id": 9120455}, egJSON(obj{"message": "Failed jobs have been queued for re-run", "run_id": 9120455, "status_code": 201})))
			logs := fmt.Sprintf("##[group]Run go test ./...\nok  \tshop/orders/cart\t0.412s\n--- FAIL: TestRedisLock (5.01s)\n    lock_test.go:41: dial tcp 127.0.0.1:6379: i/o timeout\nFAIL\nshop/orders/lock\t5.118s\n##[error]Process completed with exit code 1.\n(attempt %d, job %d)", i+2, run)
			if i == 2 {
				logs = fmt.Sprintf("##[group]Run go test ./...\nok  \tshop/orders/cart\t0.398s\nok  \tshop/orders/lock\t1.204s\n(attempt %d, job %d)", i+2, run)
			}
			w.t("", asOK("get_job_logs", obj{"owner": "shop", "repo": "orders", "run_id": 9120455, "failed_only": true}, logs))
		}
		add(w)
	}

	// A support agent looks a customer up by email, then opens its
	// payments once.
	{
		w := asRunOf("stripe-customer-then-payments-once", "payments", false)
		w.t("", asOK("list_customers", obj{"email": "ana.ruiz@mail.example", "limit": 3}, egJSON(obj{"object": "list", "data": arr{obj{"id": "cus_R8kQ2vXw1", "email": "ana.ruiz@mail.example", "name": "Ana Ruiz"}}, "has_more": false})))
		w.t("", asOK("list_payment_intents", obj{"customer": "cus_R8kQ2vXw1", "limit": 5}, egJSON(obj{"object": "list", "data": arr{obj{"id": "pi_3Q7310000Abc", "amount": 31240, "currency": "eur", "status": "requires_payment_method", "last_payment_error": obj{"code": "card_declined", "decline_code": "insufficient_funds"}}}, "has_more": false})))
		w.t("", asOK("list_refunds", obj{"payment_intent": "pi_3Q7310000Abc"}, egJSON(obj{"object": "list", "data": arr{}, "has_more": false})))
		add(w)
	}

	// --- loops ---

	// An email agent searches again with its operators reordered and
	// requoted; the same three messages each time.
	{
		w := asRunOf("gmail-operators-reordered-same-messages", "email", true)
		for i, q := range []string{"from:billing@acme.example subject:invoice", "subject:invoice from:billing@acme.example", "from:(billing@acme.example) subject:(invoice)", "subject:\"invoice\" from:\"billing@acme.example\"", "in:inbox from:billing@acme.example subject:invoice"} {
			if i == 3 {
				w.then()
			}
			w.t("I need the latest invoice; searching again.", asOK("search_emails", obj{"query": q, "maxResults": 10}, thMail(invoices...)))
		}
		add(w)
	}

	// A smart-home agent turns on a light under other names; the intent
	// says done, the light stays unavailable.
	{
		w := asRunOf("hass-light-on-stays-unavailable", "smart-home", true).acc("write", "HassTurnOn")
		for i, n := range []string{"Kitchen light", "kitchen light", "Kitchen Light", "the kitchen light", "Kitchen lights"} {
			if i == 2 {
				w.then()
			}
			w.t("The light still isn't on; trying again.", asOK("HassTurnOn", obj{"name": n, "domain": arr{"light"}}, thHassDone("Kitchen light", "light.kitchen")))
			w.t("", asOK("GetLiveContext", obj{}, thHassContext("unavailable", "heat", 20.4)))
		}
		add(w)
	}

	// A payments support agent asks for one customer's failed payment by
	// email, by id and by its payments, round after round; none is there.
	{
		w := asRunOf("stripe-customer-email-id-ring", "payments", true)
		cust := obj{"id": "cus_R8kQ2vXw1", "object": "customer", "email": "ana.ruiz@mail.example", "name": "Ana Ruiz", "created": 1731000000, "delinquent": false}
		for i, e := range []string{"ana.ruiz@mail.example", "Ana.Ruiz@mail.example", "ana.ruiz@mail.example"} {
			if i == 2 {
				w.then()
			}
			w.t("The customer says a payment failed; let me look again.", asOK("list_customers", obj{"email": e}, egJSON(obj{"object": "list", "data": arr{cust}, "has_more": false})))
			w.t("", asOK("retrieve_customer", obj{"customer": "cus_R8kQ2vXw1"}, egJSON(cust)))
			w.t("", asOK("list_payment_intents", obj{"customer": "cus_R8kQ2vXw1", "limit": []int{10, 20, 50}[i]}, egJSON(obj{"object": "list", "data": arr{obj{"id": "pi_3Q7305511Abc", "amount": 4900, "currency": "eur", "status": "succeeded"}}, "has_more": false})))
		}
		add(w)
	}

	// An issue-tracker agent tries one transition under other names and
	// ids; the same refusal each time.
	{
		w := asRunOf("jira-transition-respelled-refused", "tracker", true).acc("write", "jira_transition_issue")
		for i, tr := range []string{"31", "Done", "done", "41", "Resolve Issue"} {
			if i == 3 {
				w.then()
			}
			w.t("Trying to close the issue.", asFail("jira_transition_issue", obj{"issue_key": "SHOP-412", "transition_id": tr}, "tool_error", fmt.Sprintf("Error transitioning issue SHOP-412: Transition '%s' is not valid for issue SHOP-412 in status 'In Review'. Use jira_get_transitions to list the valid transitions.", tr)))
		}
		add(w)
	}

	// An infrastructure agent re-plans with its -var flags reordered; the
	// same error under a new PID each time.
	{
		w := asRunOf("terraform-vars-reordered-same-error", "infra", true).acc("write", "start_process")
		e := "Refreshing state...\n\nError: creating S3 Bucket (shop-logs-prod): BucketAlreadyExists: The requested bucket name is not available.\n\tstatus code: 409, request id: 8KQ2V1XW"
		for i, c := range []string{
			"terraform plan -no-color -var env=prod -var region=eu-west-1",
			"terraform plan -no-color -var region=eu-west-1 -var env=prod",
			"terraform plan -var 'env=prod' -var 'region=eu-west-1' -no-color",
			"terraform plan -no-color -var=\"region=eu-west-1\" -var=\"env=prod\"",
			"terraform plan -var env=prod -no-color -var region=eu-west-1",
		} {
			if i == 3 {
				w.then()
			}
			w.t("Let me re-run the plan.", asOK("start_process", obj{"command": c, "timeout_ms": 60000}, thProc(5120+i*211, e)))
		}
		add(w)
	}

	// A Docker agent restarts a container and reads its logs, round after
	// round: the same crash under new timestamps.
	{
		w := asRunOf("docker-restart-same-crash", "containers", true).acc("write", "start_container")
		for i := 0; i < 4; i++ {
			if i == 2 {
				w.then()
			}
			w.t("It crashed again; restarting.", asOK("start_container", obj{"container_id": "orders-api"}, egJSON(obj{"id": "4c2e81d9a0", "name": "orders-api", "status": "running"})))
			w.t("", asOK("fetch_container_logs", obj{"container_id": "orders-api", "tail": 20}, thDockerLogs(900+i*47)))
		}
		add(w)
	}

	// A cloud agent describes one instance in one output format after
	// another; the same instance each time.
	{
		w := asRunOf("aws-describe-output-formats", "cloud", true)
		id := "i-05a1c9e30b7"
		js := egJSON(obj{"Reservations": arr{obj{"Instances": arr{obj{"InstanceId": id, "InstanceType": "m6i.large", "State": obj{"Name": "stopped"}, "StateReason": obj{"Message": "Client.InstanceInitiatedShutdown: Instance initiated shutdown"}}}}}})
		tab := "-----------------------------------------------------------\n|                    DescribeInstances                    |\n+---------------------------------------------------------+\n||                     Instances                         ||\n|+----------------+--------------------------------------+|\n||  InstanceId    |  " + id + "                       ||\n||  InstanceType  |  m6i.large                           ||\n|||                        State                        |||\n|||  Name  |  stopped                                    |||\n|||                     StateReason                     |||\n|||  Message |  Client.InstanceInitiatedShutdown: Instance initiated shutdown |||"
		txt := "RESERVATIONS\nINSTANCES\t" + id + "\tm6i.large\nSTATE\tstopped\nSTATEREASON\tClient.InstanceInitiatedShutdown: Instance initiated shutdown"
		yml := "Reservations:\n- Instances:\n  - InstanceId: " + id + "\n    InstanceType: m6i.large\n    State:\n      Name: stopped\n    StateReason:\n      Message: 'Client.InstanceInitiatedShutdown: Instance initiated shutdown'"
		for i, f := range [][2]string{{"json", js}, {"table", tab}, {"text", txt}, {"yaml", yml}, {"json", js}} {
			if i == 3 {
				w.then()
			}
			w.t("Why did it stop? Let me look at it another way.", asOK("call_aws", obj{"cli_command": "aws ec2 describe-instances --instance-ids " + id + " --region eu-west-1 --output " + f[0]}, egJSON(obj{"response": obj{"status_code": 200, "output": f[1]}})))
		}
		add(w)
	}

	// A places agent pages with a token that never advances: the same
	// second page each time.
	{
		w := asRunOf("places-token-stuck", "maps", true)
		page := func(p int) string {
			var res arr
			for i := 0; i < 20; i++ {
				res = append(res, obj{"name": fmt.Sprintf("Café %d", p*20+i), "place_id": fmt.Sprintf("ChIJ%05dxq", p*20+i), "vicinity": fmt.Sprintf("Rua %d, Lisboa", p*20+i)})
			}
			return egJSON(obj{"results": res, "next_page_token": "AW30NDx1_k9pQ", "status": "OK"})
		}
		a := obj{"location": "38.7223,-9.1393", "radius": 800, "type": "cafe"}
		w.t("", asOK("maps_places_nearby", a, page(0)))
		for i := 0; i < 4; i++ {
			if i == 2 {
				w.then()
			}
			w.t("Next page.", asOK("maps_places_nearby", obj{"location": "38.7223,-9.1393", "radius": 800, "type": "cafe", "pagetoken": "AW30NDx1_k9pQ"}, page(1)))
		}
		add(w)
	}

	// A translation agent round-trips one sentence, hoping for a better
	// French, round after round: the same two texts each way.
	{
		w := asRunOf("translate-round-trip-ring", "translation", true)
		en := []string{"Orders placed after 20 December ship in January.", "Orders placed after December 20 will be shipped in January."}
		fr := "Les commandes passées après le 20 décembre seront expédiées en janvier."
		for i := 0; i < 4; i++ {
			if i == 2 {
				w.then()
			}
			src := en[1]
			if i == 0 {
				src = en[0]
			}
			w.t("Checking the translation reads naturally.", asOK("translate-text", obj{"text": src, "sourceLangCode": "en", "targetLangCode": "fr", "formality": []string{"default", "more", "prefer_more", "default"}[i]}, "Translation: "+fr+"\nDetected source language: en"))
			w.t("", asOK("translate-text", obj{"text": fr, "sourceLangCode": "fr", "targetLangCode": "en-GB"}, "Translation: "+en[1]+"\nDetected source language: fr"))
		}
		add(w)
	}

	// An agent asks another over A2A the same thing in other words; each
	// task completes with the same refusal under a new id.
	{
		w := asRunOf("a2a-same-ask-reworded", "a2a", true).acc("write", "send_message")
		for i, q := range []string{
			"What is the outstanding balance on account ACME-7731?",
			"Please tell me account ACME-7731's outstanding balance.",
			"How much does ACME-7731 owe right now?",
			"Balance due for account ACME-7731?",
			"I need the current amount outstanding for ACME-7731.",
		} {
			if i == 3 {
				w.then()
			}
			id := fmt.Sprintf("task-%08x-5b2d-4f0e-9d33-%012x", 0x1c2e9a40+i*7919, 0xa1b2c3d4e5+i*104729)
			w.t("The billing agent should know; asking it.", asOK("send_message", obj{"agent_url": "http://billing-agent.internal", "message": q}, thA2ATask(id, "completed", "I can only answer questions about invoices issued by this shop. Account balances live in the ledger service, which I cannot reach.", 5+i*11)))
		}
		add(w)
	}

	// A search agent rewords one query; the same results come back in
	// another order.
	{
		w := asRunOf("brave-reworded-same-results-reordered", "search", true)
		rs := [][3]string{
			{"Logical replication lag – PostgreSQL wiki", "Why a logical replication slot falls behind and how to measure it.", "https://wiki.example/pg/logical-lag"},
			{"Tuning wal_sender_timeout", "When senders time out under load.", "https://blog.example/wal-sender-timeout"},
			{"pg_stat_replication explained", "replay_lag, write_lag and flush_lag columns.", "https://docs.example/pg/stat-replication"},
			{"Streaming large transactions in PG 16", "streaming = on for subscriptions.", "https://news.example/pg16-streaming"},
		}
		for i, q := range []string{"postgres logical replication lag", "postgresql logical replication lagging", "why is postgres logical replication slow", "logical replication lag postgres fix", "postgres subscriber replication delay"} {
			if i == 3 {
				w.then()
			}
			o := make([][3]string, len(rs))
			for j := range rs {
				o[j] = rs[(j+i)%len(rs)]
			}
			w.t("Not quite what I need; searching differently.", asOK("brave_web_search", obj{"query": q, "count": 4}, thBrave(o...)))
		}
		add(w)
	}

	// A spreadsheet agent reads one range under other spellings; the same
	// values each time.
	{
		w := asRunOf("sheets-range-respelled-same-values", "spreadsheet", true)
		for i, r := range [][2]string{{"Q4", "A1:D9"}, {"Q4", "a1:d9"}, {"Q4", "A1:D"}, {"Q4", "$A$1:$D$9"}, {"Q4", "A:D"}} {
			if i == 3 {
				w.then()
			}
			w.t("The totals don't add up; reading the budget again.", asOK("get_sheet_data", obj{"spreadsheet_id": "1qZ8mB2xK7", "sheet": r[0], "range": r[1]}, thRows("'Q4'!A1:D9", 8)))
		}
		add(w)
	}

	// A shell agent greps with its flags reordered; the same lines each
	// time.
	{
		w := asRunOf("grep-flags-reordered-same-lines", "shell", true).acc("write", "execute_command")
		out := egJSON(obj{"stdout": "src/cart/totals.py:27:    # TODO: handle empty cart\nsrc/tax/rules.py:44:    # TODO: rounding mode", "stderr": "", "exit_code": 0})
		for i, c := range []string{"grep -rn TODO src", "grep -nr TODO src/", "grep -r -n 'TODO' ./src", "grep --recursive --line-number TODO src", "grep -n -r \"TODO\" src"} {
			if i == 3 {
				w.then()
			}
			w.t("There should be more TODOs than that.", asOK("execute_command", obj{"command": c}, out))
		}
		add(w)
	}

	// A coding agent installs a package under other version specifiers
	// and re-runs its script, round after round: the same
	// ModuleNotFoundError (another interpreter runs it).
	{
		w := asRunOf("pip-reinstall-same-modulenotfound", "code", true).acc("write", "execute_command")
		fail := egJSON(obj{"stdout": "", "stderr": "Traceback (most recent call last):\n  File \"/app/scripts/sync_rates.py\", line 3, in <module>\n    import yaml\nModuleNotFoundError: No module named 'yaml'", "exit_code": 1})
		for i, c := range []string{"pip install pyyaml", "pip install PyYAML==6.0.2", "pip install 'pyyaml>=6'", "pip3 install --upgrade pyyaml"} {
			if i == 2 {
				w.then()
			}
			w.t("Installing PyYAML.", asOK("execute_command", obj{"command": c}, egJSON(obj{"stdout": "Requirement already satisfied: pyyaml in /usr/local/lib/python3.12/site-packages (6.0.2)", "stderr": "", "exit_code": 0})))
			w.t("", asOK("execute_command", obj{"command": "python scripts/sync_rates.py"}, fail))
		}
		add(w)
	}

	// An image agent rewords a refused prompt; the same refusal each time.
	{
		w := asRunOf("image-prompt-reworded-refused", "images", true).acc("write", "generate_image")
		for i, p := range []string{
			"the Starbucks logo on a coffee cup, photorealistic",
			"a coffee cup with the famous green mermaid logo",
			"coffee cup branded like Starbucks, studio photo",
			"a green siren coffee logo on a white paper cup",
			"photorealistic cup from the Seattle coffee chain with its logo",
		} {
			if i == 3 {
				w.then()
			}
			w.t("Let me phrase the prompt differently.", asFail("generate_image", obj{"prompt": p, "model": "flux-pro", "size": "1024x1024"}, "tool_error", "Error generating image: 400 Your request was rejected by the safety system: it may depict a trademarked logo. Please modify your prompt and try again."))
		}
		add(w)
	}

	// A document agent extracts one page again at other resolutions and
	// with OCR; the same text each time.
	{
		w := asRunOf("pdf-page-reextracted-same-text", "document", true)
		txt := egJSON(obj{"page": 3, "total_pages": 6, "text": "3. Deposit\nThe tenant shall lodge a deposit of two months' rent within 21 days of notice. [signature illegible]"})
		for i, a := range []obj{{"path": "/docs/lease-2027.pdf", "pages": "3"}, {"path": "/docs/lease-2027.pdf", "pages": "3", "dpi": 300}, {"path": "/docs/lease-2027.pdf", "pages": "3-3", "ocr": true}, {"path": "/docs/lease-2027.pdf", "pages": "3", "dpi": 600, "ocr": true}, {"path": "/docs/lease-2027.pdf", "pages": "3", "ocr": true, "language": "eng"}} {
			if i == 3 {
				w.then()
			}
			w.t("The signature line is unreadable; extracting again.", asOK("read_pdf", a, txt))
		}
		add(w)
	}

	// A git agent pushes under respelled commands; the same rejection.
	{
		w := asRunOf("git-push-respelled-rejected", "git", true).acc("write", "execute_command")
		rej := egJSON(obj{"stdout": "", "stderr": " ! [rejected]        main -> main (fetch first)\nerror: failed to push some refs to 'github.com:shop/infra.git'\nhint: Updates were rejected because the remote contains work that you do not\nhint: have locally.", "exit_code": 1})
		for i, c := range []string{"git push", "git push origin main", "git push -u origin main", "git push --set-upstream origin HEAD", "git push origin HEAD:main"} {
			if i == 3 {
				w.then()
			}
			w.t("Pushing the fix.", asOK("execute_command", obj{"command": c}, rej))
		}
		add(w)
	}

	// An HTTP agent asks an API again with its headers respelled; the same
	// 401 each time.
	{
		w := asRunOf("http-headers-respelled-401", "http", true)
		for i, h := range []obj{
			{"Authorization": "Bearer ${SHOP_TOKEN}"},
			{"authorization": "Bearer ${SHOP_TOKEN}"},
			{"Authorization": "bearer ${SHOP_TOKEN}", "Accept": "application/json"},
			{"Accept": "application/json", "Authorization": "Bearer ${SHOP_TOKEN}", "User-Agent": "agent/1.0"},
			{"X-Api-Key": "${SHOP_TOKEN}", "Accept": "*/*"},
		} {
			if i == 3 {
				w.then()
			}
			w.t("Maybe the header is wrong; trying again.", asOK("http_request", obj{"method": "GET", "url": "https://api.shop.example/v2/products?page=1", "headers": h}, egJSON(obj{"status": 401, "headers": obj{"www-authenticate": "Bearer error=\"invalid_token\", error_description=\"token expired\"", "x-request-id": fmt.Sprintf("req_%06x", 0xa11c0+i*4099)}, "body": "{\"error\":\"invalid_token\",\"message\":\"The access token expired\"}"})))
		}
		add(w)
	}

	// A coding agent's edits undo each other; the same failing test
	// comes back after each.
	{
		w := asRunOf("code-edits-undo-same-failure", "code", true).acc("write", "edit_file", "execute_command")
		fail := egJSON(obj{"stdout": "FAILED tests/test_tax.py::test_vat_rounding - assert Decimal('10.00') == Decimal('10.01')\n1 failed, 11 passed in 0.41s", "stderr": "", "exit_code": 1})
		a, b := "return round(net * rate, 2)", "return round(net * rate + Decimal('0'), 2)"
		for i := 0; i < 4; i++ {
			if i == 2 {
				w.then()
			}
			from, to := a, b
			if i%2 == 1 {
				from, to = b, a
			}
			w.t("Adjusting the rounding.", asOK("edit_file", obj{"path": "/app/shop/tax.py", "edits": arr{obj{"oldText": from, "newText": to}}}, fmt.Sprintf("```diff\n--- /app/shop/tax.py\n+++ /app/shop/tax.py\n@@ -20,1 +20,1 @@\n-    %s\n+    %s\n```", from, to)))
			w.t("", asOK("execute_command", obj{"command": "pytest tests/test_tax.py -x -q"}, fail))
		}
		add(w)
	}

	// A CI agent re-runs a job whose lint failure is the same every time.
	{
		w := asRunOf("ci-rerun-same-lint-failure", "ci", true).acc("write", "rerun_failed_jobs")
		for i := 0; i < 4; i++ {
			if i == 2 {
				w.then()
			}
			w.t("Re-running the failed job.", asOK("rerun_failed_jobs", obj{"owner": "shop", "repo": "orders", "run_id": 9120455}, egJSON(obj{"message": "Failed jobs have been queued for re-run", "run_id": 9120455, "status_code": 201})))
			w.t("", asOK("get_job_logs", obj{"owner": "shop", "repo": "orders", "run_id": 9120455, "failed_only": true}, fmt.Sprintf("##[group]Run golangci-lint run\ncart/totals.go:41:2: ineffectual assignment to sum (ineffassign)\n\tsum := 0\n\t^\n##[error]Process completed with exit code 1.\n(attempt %d, job %d)", i+2, 9120455+i)))
		}
		add(w)
	}

	return runs
}
