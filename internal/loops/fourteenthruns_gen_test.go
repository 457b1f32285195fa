package loops

import (
	"fmt"
	"strings"
)

func fourteenthRuns() []*asRun {
	var runs []*asRun
	add := func(w *asw) { runs = append(runs, w.run) }

	dates := [][4]string{
		{"date-fns", "4.1.0", "Modern JavaScript date utility library", "28,114,502"},
		{"dayjs", "1.11.13", "2KB immutable date time library alternative to Moment.js", "21,903,117"},
		{"luxon", "3.5.0", "Immutable date wrapper", "9,452,880"},
		{"moment", "2.30.1", "Parse, validate, manipulate, and display dates", "24,610,034"},
		{"@js-joda/core", "5.6.3", "a date and time library for javascript", "1,204,771"},
	}

	// --- legit ---

	// A package-registry agent looks for a library for each need and
	// reads the one it picks.
	{
		w := asRunOf("npm-search-each-need-finds-new", "registry", false)
		w.t("", asOK("search_packages", obj{"query": "date formatting timezone", "size": 5}, ftNpm(dates...)))
		w.t("", asOK("search_packages", obj{"query": "csv parser streaming", "size": 5}, ftNpm([4]string{"csv-parse", "5.6.0", "CSV parsing implementing the Node.js stream.Transform API", "6,980,110"}, [4]string{"papaparse", "5.4.1", "Fast and powerful CSV parser for the browser", "3,512,004"}, [4]string{"fast-csv", "5.0.2", "CSV parser and writer", "1,801,965"})))
		w.t("", asOK("search_packages", obj{"query": "retry with exponential backoff", "size": 5}, ftNpm([4]string{"p-retry", "6.2.1", "Retry a promise-returning or async function", "12,307,446"}, [4]string{"async-retry", "1.3.3", "Retrying made simple, easy and async", "5,006,318"}, [4]string{"exponential-backoff", "3.1.1", "A utility that allows retrying a function with an exponential delay", "4,110,972"})))
		w.t("", asOK("get_package_info", obj{"name": "date-fns"}, egJSON(obj{"name": "date-fns", "version": "4.1.0", "license": "MIT", "dependencies": obj{}, "repository": "https://github.com/date-fns/date-fns", "unpackedSize": 22341201})))
		w.t("", asOK("get_package_info", obj{"name": "p-retry"}, egJSON(obj{"name": "p-retry", "version": "6.2.1", "license": "MIT", "dependencies": obj{"retry": "^0.13.1", "is-network-error": "^1.0.0"}, "repository": "https://github.com/sindresorhus/p-retry", "unpackedSize": 18004})))
		add(w)
	}

	// A Notion agent pages a tasks database by its cursor; two pages hold
	// as many rows and answer alike but for their rows.
	{
		w := asRunOf("notion-database-paged-cursor", "notes", false)
		cur := ""
		for p := 0; p < 5; p++ {
			var pages arr
			for i := 0; i < 25; i++ {
				n := p*25 + i
				pages = append(pages, obj{"object": "page", "id": fmt.Sprintf("1c9e%04x-2b7d-81aa-9e0f-%012x", n*97, 0xa17d3e00+n), "properties": obj{"Name": obj{"title": arr{obj{"plain_text": fmt.Sprintf("Task %d", n+1)}}}, "Status": obj{"status": obj{"name": []string{"Not started", "In progress", "Done"}[n%3]}}}})
			}
			a := obj{"database_id": "1c9e0a4b2b7d80f3a1e2c9d7f0b3a611", "page_size": 25}
			if cur != "" {
				a["start_cursor"] = cur
			}
			next := ""
			if p < 4 {
				next = fmt.Sprintf("1c9e%04x-2b7d-81aa-9e0f-%012x", (p*25+25)*97, 0xa17d3e00+p*25+25)
			}
			w.t("", asOK("API-post-database-query", a, ftNotion(pages, next)))
			cur = next
		}
		add(w)
	}

	// A triage agent files one Linear issue a bug; the titles share a
	// template.
	{
		w := asRunOf("linear-issue-each-bug", "tracker", false).acc("write", "create_issue")
		bugs := [][2]string{
			{"Checkout: coupon field accepts expired codes", "Expired coupons (e.g. WINTER25) are applied at checkout; the discount shows in the summary."},
			{"Checkout: address autocomplete drops the flat number", "Selecting a suggestion fills street and city but leaves 'Flat 4B' out."},
			{"Checkout: Apple Pay sheet shows the wrong currency", "On the UK store the sheet shows USD while the cart is in GBP."},
			{"Search: typing fast returns results for an earlier query", "Results for 'sho' replace those for 'shoes' when the first request is slower."},
			{"Search: filters reset when going back from a product", "Brand and size filters are lost after the back button."},
		}
		for i, b := range bugs {
			w.t("Filing the next bug from the QA sheet.", asOK("create_issue", obj{"teamId": "ENG", "title": b[0], "description": b[1], "priority": 2}, egJSON(obj{"id": fmt.Sprintf("4f1c2e%02x-8b0a-4d52-a1f3-0c9e7d%06x", i*17, 0x3a11f0+i*977), "identifier": fmt.Sprintf("ENG-%d", 1841+i), "title": b[0], "url": fmt.Sprintf("https://linear.app/shop/issue/ENG-%d", 1841+i), "state": obj{"name": "Triage"}})))
		}
		add(w)
	}

	// A log agent pages Elasticsearch hits with search_after.
	{
		w := asRunOf("es-search-after-pages", "search", false)
		var after arr
		for p := 0; p < 4; p++ {
			var hits []obj
			for i := 0; i < 5; i++ {
				n := p*5 + i
				hits = append(hits, obj{"order_id": fmt.Sprintf("ord_%06d", 880100+n), "ts": 1764910000000 - int64(n)*61000, "status": "payment_failed", "reason": []string{"card_declined", "insufficient_funds", "expired_card"}[n%3]})
			}
			q := obj{"index": "orders-*", "query": obj{"bool": obj{"filter": arr{obj{"term": obj{"status": "payment_failed"}}, obj{"range": obj{"ts": obj{"gte": "now-1h"}}}}}}, "sort": arr{obj{"ts": "desc"}, obj{"order_id": "asc"}}, "size": 5}
			if after != nil {
				q["search_after"] = after
			}
			w.t("", asOK("search", q, ftES(4+p, hits...)))
			after = arr{hits[4]["ts"], hits[4]["order_id"]}
		}
		add(w)
	}

	// A storage agent lists a bucket's prefix page by page.
	{
		w := asRunOf("s3-list-continuation-token", "storage", false)
		tok := ""
		for p := 0; p < 4; p++ {
			var keys arr
			for i := 0; i < 8; i++ {
				n := p*8 + i
				keys = append(keys, obj{"Key": fmt.Sprintf("exports/2026/12/04/part-%05d.parquet", n), "Size": 4190000 + n*7717, "LastModified": fmt.Sprintf("2026-12-04T23:%02d:%02d.000Z", n/6, n*7%60)})
			}
			a := obj{"Bucket": "shop-analytics", "Prefix": "exports/2026/12/04/", "MaxKeys": 8}
			if tok != "" {
				a["ContinuationToken"] = tok
			}
			out := obj{"Contents": keys, "KeyCount": 8, "IsTruncated": p < 3, "Name": "shop-analytics", "Prefix": "exports/2026/12/04/"}
			next := fmt.Sprintf("1%sUpcjVgcGFydC0w%05d", strings.Repeat("w", p+1), p*8+8)
			if p < 3 {
				out["NextContinuationToken"] = next
			}
			w.t("", asOK("list_objects_v2", a, egJSON(out)))
			tok = next
		}
		add(w)
	}

	// A worker agent polls a Redis job hash while its progress moves.
	{
		w := asRunOf("redis-job-progress-moves", "queue", false)
		for i, st := range [][2]string{{"queued", "0"}, {"running", "12"}, {"running", "47"}, {"running", "83"}, {"done", "100"}} {
			w.t("Checking the export job.", asOK("hgetall", obj{"key": "job:export:7f3a"}, egJSON(obj{"status": st[0], "progress": st[1], "worker": "w-3", "heartbeat": fmt.Sprint(1764921000 + i*30)})))
		}
		add(w)
	}

	// A stream agent consumes a topic; its offsets advance.
	{
		w := asRunOf("kafka-consume-offsets-advance", "stream", false)
		for p := 0; p < 4; p++ {
			var msgs arr
			for i := 0; i < 3; i++ {
				n := p*3 + i
				msgs = append(msgs, obj{"partition": 0, "offset": 55120 + n, "key": fmt.Sprintf("ord_%06d", 880200+n), "value": fmt.Sprintf("{\"event\":\"order.paid\",\"amount\":%d}", 1800+n*230)})
			}
			w.t("", asOK("consume_messages", obj{"topic": "orders.events", "group_id": "reconciler", "max_messages": 3}, egJSON(obj{"messages": msgs, "committed": 55123 + p*3})))
		}
		add(w)
	}

	// A reminders agent sends one template to several customers, each
	// delivered.
	{
		w := asRunOf("sms-template-several-customers", "messaging", false).acc("write", "send_sms")
		for i, c := range [][2]string{{"Ana", "+351912000101"}, {"Bruno", "+351912000202"}, {"Carla", "+351912000303"}, {"Duarte", "+351912000404"}, {"Eva", "+351912000505"}, {"Filipe", "+351912000606"}} {
			sid := fmt.Sprintf("SM%032x", 0x9a1c0000+i*7919)
			w.t("", asOK("send_sms", obj{"to": c[1], "body": fmt.Sprintf("Hi %s, your order is ready for pick-up at Rua Augusta 12 until Friday. Reply STOP to opt out.", c[0])}, egJSON(obj{"sid": sid, "status": "queued", "to": c[1], "date_created": fmt.Sprintf("Sat, 05 Dec 2026 09:%02d:%02d +0000", 10+i, i*13%60)})))
		}
		add(w)
	}

	// A DNS agent creates a record, fixes its invalid content, then
	// creates another.
	{
		w := asRunOf("dns-record-fixed-then-another", "dns", false).acc("write", "create_dns_record")
		w.t("", asFail("create_dns_record", obj{"zone_id": "9a7c2e11f0b34d5e", "type": "A", "name": "api", "content": "203.0.113.300", "ttl": 300}, "tool_error", "Cloudflare API error 9005: Content for A record is invalid. Must be a valid IPv4 address."))
		w.t("Typo in the address; fixing it.", asOK("create_dns_record", obj{"zone_id": "9a7c2e11f0b34d5e", "type": "A", "name": "api", "content": "203.0.113.30", "ttl": 300}, egJSON(obj{"success": true, "result": obj{"id": "372e67954025e0ba6aaa6d586b9e0b59", "name": "api.shop.example", "type": "A", "content": "203.0.113.30", "ttl": 300, "proxied": false}})))
		w.t("", asOK("create_dns_record", obj{"zone_id": "9a7c2e11f0b34d5e", "type": "CNAME", "name": "www", "content": "shop.example", "ttl": 1, "proxied": true}, egJSON(obj{"success": true, "result": obj{"id": "61f0a1b2c3d4e5f60718293a4b5c6d7e", "name": "www.shop.example", "type": "CNAME", "content": "shop.example", "ttl": 1, "proxied": true}})))
		add(w)
	}

	// A research agent reads the transcripts of a playlist's videos.
	{
		w := asRunOf("youtube-transcripts-playlist", "video", false)
		for i, v := range []string{"dQ4kL0x9aZs", "Hn2pR7tYw3E", "k8VbM1qZc5U", "Xp0oL3nRf2A"} {
			w.t("", asOK("get_transcript", obj{"url": "https://www.youtube.com/watch?v=" + v, "lang": "en"}, fmt.Sprintf("[00:00] Welcome back to part %d of the Postgres internals series.\n[00:06] Today we look at %s.\n[00:14] %s", i+1, []string{"the buffer manager", "WAL and checkpoints", "vacuum and freezing", "the planner's cost model"}[i], []string{"Shared buffers are a clock-sweep cache.", "Every change is written to the log first.", "Dead tuples stay until vacuum removes them.", "Costs are estimates in arbitrary units."}[i])))
		}
		add(w)
	}

	// An ops agent over SSH: nginx failed, the config fixed and tested,
	// the service restarted, its status now active.
	{
		w := asRunOf("ssh-nginx-fixed-restarted", "ops", false).acc("write", "ssh_exec")
		w.t("", asOK("ssh_exec", obj{"host": "web-2", "command": "systemctl status nginx --no-pager"}, ftSSH(3, ftSystemctl("2min", 88121))))
		w.t("", asOK("ssh_exec", obj{"host": "web-2", "command": "sed -i 's/proxy_buffering_size/proxy_buffer_size/' /etc/nginx/sites-enabled/shop"}, ftSSH(0, "")))
		w.t("", asOK("ssh_exec", obj{"host": "web-2", "command": "nginx -t"}, ftSSH(0, "nginx: the configuration file /etc/nginx/nginx.conf syntax is ok\nnginx: configuration file /etc/nginx/nginx.conf test is successful")))
		w.t("", asOK("ssh_exec", obj{"host": "web-2", "command": "systemctl restart nginx"}, ftSSH(0, "")))
		w.t("", asOK("ssh_exec", obj{"host": "web-2", "command": "systemctl status nginx --no-pager"}, ftSSH(0, "● nginx.service - A high performance web server and a reverse proxy server\n     Loaded: loaded (/lib/systemd/system/nginx.service; enabled; vendor preset: enabled)\n     Active: active (running) since Sat 2026-12-05 08:46:52 UTC; 3s ago\n   Main PID: 88410 (nginx)\n      Tasks: 3 (limit: 4557)")))
		add(w)
	}

	// A trading agent polls a ticker while the price moves, then places
	// one order.
	{
		w := asRunOf("exchange-ticker-moves-then-order", "trading", false).acc("write", "create_order")
		for i, px := range []string{"97412.10", "97388.55", "97301.00", "97254.20", "97190.75"} {
			w.t("Waiting for BTC under 97,200.", asOK("get_ticker", obj{"symbol": "BTC/EUR"}, egJSON(obj{"symbol": "BTC/EUR", "last": px, "bid": px, "timestamp": 1764925200000 + i*15000})))
		}
		w.t("", asOK("create_order", obj{"symbol": "BTC/EUR", "side": "buy", "type": "limit", "amount": "0.05", "price": "97190.00"}, egJSON(obj{"id": "OQX4L2-7ZK1A-9PDBM3", "status": "open", "filled": "0", "amount": "0.05"})))
		add(w)
	}

	// A travel agent searches routes one by one; each answers its own
	// offers.
	{
		w := asRunOf("flights-routes-one-by-one", "travel", false)
		for i, r := range [][3]string{{"LIS", "AMS", "KL1692"}, {"AMS", "CPH", "SK552"}, {"CPH", "LIS", "TP753"}} {
			w.t("", asOK("search_flights", obj{"origin": r[0], "destination": r[1], "departure_date": fmt.Sprintf("2026-12-%02d", 14+i*3), "adults": 1}, egJSON(obj{"data": arr{obj{"id": "1", "itineraries": arr{obj{"duration": []string{"PT2H55M", "PT1H25M", "PT4H0M"}[i], "segments": arr{obj{"carrierCode": r[2][:2], "number": r[2][2:], "departure": obj{"iataCode": r[0]}, "arrival": obj{"iataCode": r[1]}}}}}, "price": obj{"currency": "EUR", "total": []string{"142.30", "88.10", "201.45"}[i]}}}})))
		}
		add(w)
	}

	// A knowledge agent queries Wikidata for other properties of one
	// item.
	{
		w := asRunOf("wikidata-other-properties", "knowledge", false)
		for _, p := range [][3]string{{"P1082", "population", "545923"}, {"P2046", "area", "100.05"}, {"P571", "inception", "-0195-01-01T00:00:00Z"}, {"P6", "headOfGovernment", "Q116845502"}} {
			q := fmt.Sprintf("SELECT ?%s WHERE { wd:Q597 wdt:%s ?%s . }", p[1], p[0], p[1])
			w.t("", asOK("execute_sparql", obj{"sparql_query": q}, egJSON(obj{"head": obj{"vars": arr{p[1]}}, "results": obj{"bindings": arr{obj{p[1]: obj{"type": "literal", "value": p[2]}}}}})))
		}
		add(w)
	}

	// A journaling agent appends a day's log to a note, entry by entry.
	{
		w := asRunOf("obsidian-daily-log-entries", "notes", false).acc("write", "obsidian_append_content")
		for _, e := range []string{"09:05 standup: release train moved to Thursday", "10:40 paired with Rui on the refunds migration", "12:15 reviewed ENG-1841 and ENG-1843", "14:30 incident P-2231 acknowledged, root cause DNS", "16:50 wrote the Q1 hiring plan draft"} {
			w.t("", asOK("obsidian_append_content", obj{"filepath": "Daily/2026-12-05.md", "content": "- " + e + "\n"}, "Successfully appended content to Daily/2026-12-05.md"))
		}
		add(w)
	}

	// A GraphQL agent pages a connection by its end cursor.
	{
		w := asRunOf("graphql-connection-paged", "api", false)
		cur := ""
		for p := 0; p < 4; p++ {
			var edges arr
			for i := 0; i < 10; i++ {
				n := p*10 + i
				edges = append(edges, obj{"node": obj{"id": fmt.Sprintf("gid://shop/Product/%d", 81000+n), "title": fmt.Sprintf("Product %d", n), "totalInventory": (n * 37) % 90}})
			}
			end := fmt.Sprintf("eyJsYXN0X2lkIjo4%04d", 1000+p*10+9)
			q := "query($after: String) { products(first: 10, after: $after) { edges { node { id title totalInventory } } pageInfo { hasNextPage endCursor } } }"
			vars := obj{}
			if cur != "" {
				vars["after"] = cur
			}
			w.t("", asOK("graphql_query", obj{"query": q, "variables": vars}, egJSON(obj{"data": obj{"products": obj{"edges": edges, "pageInfo": obj{"hasNextPage": p < 3, "endCursor": end}}}})))
			cur = end
		}
		add(w)
	}

	// A lead hands each failing module's fix to a coder; each comes back
	// fixed.
	{
		w := asRunOf("lead-modules-handed-one-by-one", "delegation", false).acc("write", "run_tests", "edit_file")
		for _, m := range [][3]string{{"billing", "test_prorate_mid_cycle", "expected 15.48, got 15.49"}, {"shipping", "test_free_over_threshold", "expected 0.00, got 4.90"}, {"tax", "test_reverse_charge_b2b", "KeyError: 'vat_id'"}} {
			w.hand("Next failing module: "+m[0]+".", "coder", "Make tests/"+m[0]+" pass; the failing test is "+m[1]+".", "Fixed "+m[0]+": "+m[1]+" passes.", func(s *asw) {
				s.t("", asOK("run_tests", obj{"path": "tests/" + m[0]}, "FAILED tests/"+m[0]+"/test_"+m[0]+".py::"+m[1]+" - AssertionError: "+m[2]+"\n1 failed, 14 passed in 1.92s"))
				s.t("", asOK("edit_file", obj{"path": "src/" + m[0] + ".py", "old": "round(", "new": "quantize_half_even("}, "Applied 1 edit to src/"+m[0]+".py"))
				s.t("", asOK("run_tests", obj{"path": "tests/" + m[0]}, "15 passed in 1.88s"))
			})
		}
		add(w)
	}

	// A finance agent fans out exchange rates for each month end.
	{
		w := asRunOf("fx-rates-month-ends-parallel", "finance", false)
		for i, d := range []string{"2026-08-31", "2026-09-30", "2026-10-30", "2026-11-30"} {
			var calls []asCall
			for j, c := range []string{"USD", "GBP", "JPY"} {
				rate := []float64{1.0832, 0.8411, 161.22}[j] + float64(i)*[]float64{0.0041, -0.0017, 0.87}[j]
				calls = append(calls, asOK("get_exchange_rate", obj{"base": "EUR", "target": c, "date": d}, egJSON(obj{"base": "EUR", "target": c, "date": d, "rate": rate, "source": "ECB"})))
			}
			w.t("Month-end rates for the report.", calls...)
		}
		add(w)
	}

	// A scheduling agent proposes times until one is accepted.
	{
		w := asRunOf("meeting-times-until-accepted", "scheduling", false).acc("write", "propose_meeting")
		for i, s := range []string{"2026-12-08T15:00:00Z", "2026-12-09T10:00:00Z", "2026-12-09T16:30:00Z"} {
			res := "Declined by jordan@partner.example: \"busy then, sorry\""
			if i == 2 {
				res = "Accepted by jordan@partner.example. Event created: evt_9Qk2Lm7"
			}
			w.t("", asOK("propose_meeting", obj{"attendee": "jordan@partner.example", "start": s, "duration_minutes": 30, "title": "Integration kickoff"}, res))
		}
		add(w)
	}

	// A design agent reads a frame's nodes one by one.
	{
		w := asRunOf("figma-nodes-one-by-one", "design", false)
		for i, n := range []string{"12:34", "12:35", "12:41", "14:2"} {
			w.t("", asOK("get_figma_data", obj{"fileKey": "Qx7hT2mZp9LrC", "nodeId": n}, egJSON(obj{"name": []string{"Header", "Hero", "Pricing table", "Footer"}[i], "nodes": arr{obj{"id": n, "type": "FRAME", "layout": obj{"mode": "column", "gap": 8 * (i + 1)}, "fills": arr{[]string{"#FFFFFF", "#0B1F3A", "#F5F7FA", "#0B1F3A"}[i]}}}})))
		}
		add(w)
	}

	// A task agent completes today's tasks one by one; the list shrinks.
	{
		w := asRunOf("todoist-tasks-completed-shrinks", "tasks", false).acc("write", "complete_task")
		tasks := [][3]string{{"8741021", "Send invoice to Acme", "today"}, {"8741022", "Review Q1 budget", "today"}, {"8741030", "Book dentist", "yesterday"}}
		for i := 0; i <= len(tasks); i++ {
			w.t("", asOK("get_tasks", obj{"filter": "today | overdue"}, ftTodo(tasks[i:]...)))
			if i < len(tasks) {
				w.t("", asOK("complete_task", obj{"task_id": tasks[i][0]}, "Task "+tasks[i][0]+" marked complete"))
			}
		}
		add(w)
	}

	// An on-call agent acknowledges each open incident once.
	{
		w := asRunOf("pagerduty-ack-each-incident", "oncall", false).acc("write", "acknowledge_incident")
		for i, id := range []string{"Q1ZK8P2XW", "Q3MB0L7TA", "Q0RT5N1VD"} {
			w.t("", asOK("acknowledge_incident", obj{"incident_id": id, "note": "Looking into it."}, egJSON(obj{"incident": obj{"id": id, "status": "acknowledged", "incident_number": 2231 + i, "title": []string{"API 5xx rate high", "DNS resolution failures", "Checkout latency p99 > 2s"}[i]}})))
		}
		add(w)
	}

	// An install fails twice on the dpkg lock; the agent retries with a
	// lock timeout and it passes.
	{
		w := asRunOf("apt-lock-retried-with-timeout", "ops", false).acc("write", "ssh_exec")
		lock := "E: Could not get lock /var/lib/dpkg/lock-frontend. It is held by process 90112 (unattended-upgr)\nE: Unable to acquire the dpkg frontend lock (/var/lib/dpkg/lock-frontend), is another process using it?"
		w.t("", asOK("ssh_exec", obj{"host": "web-2", "command": "sudo apt-get install -y redis-tools"}, ftSSH(100, lock)))
		w.t("Another process holds the lock; trying once more.", asOK("ssh_exec", obj{"host": "web-2", "command": "sudo apt-get install -y redis-tools"}, ftSSH(100, lock)))
		w.t("Waiting for the lock this time.", asOK("ssh_exec", obj{"host": "web-2", "command": "sudo apt-get -o DPkg::Lock::Timeout=120 install -y redis-tools"}, ftSSH(0, "Setting up redis-tools (5:7.0.15-1) ...\nProcessing triggers for man-db (2.12.0-4) ...")))
		add(w)
	}

	// --- loops ---

	// A registry agent rewords one search; the same packages come back in
	// another order.
	{
		w := asRunOf("npm-search-reworded-same-packages", "registry", true)
		orders := [][]int{{0, 1, 2, 3, 4}, {1, 0, 3, 2, 4}, {0, 3, 1, 2, 4}, {3, 0, 1, 4, 2}, {1, 3, 0, 2, 4}}
		for i, q := range []string{"date library timezone", "timezone aware date utils", "javascript dates with time zones", "date manipulation tz support", "lightweight date time zone library"} {
			if i == 3 {
				w.then()
			}
			var ps [][4]string
			for _, k := range orders[i] {
				ps = append(ps, dates[k])
			}
			w.t("None of these look right; searching again.", asOK("search_packages", obj{"query": q, "size": 5}, ftNpm(ps...)))
		}
		add(w)
	}

	// A Notion agent restructures one filter; the same empty answer.
	{
		w := asRunOf("notion-filter-restructured-empty", "notes", true)
		fs := []obj{
			{"and": arr{obj{"property": "Status", "status": obj{"equals": "Blocked"}}, obj{"property": "Owner", "people": obj{"contains": "u-71c2"}}}},
			{"and": arr{obj{"property": "Owner", "people": obj{"contains": "u-71c2"}}, obj{"property": "Status", "status": obj{"equals": "Blocked"}}}},
			{"property": "Status", "status": obj{"equals": "Blocked"}},
			{"and": arr{obj{"property": "status", "status": obj{"equals": "blocked"}}, obj{"property": "owner", "people": obj{"contains": "u-71c2"}}}},
			{"or": arr{obj{"and": arr{obj{"property": "Status", "status": obj{"equals": "Blocked"}}, obj{"property": "Owner", "people": obj{"contains": "u-71c2"}}}}}},
		}
		for i, f := range fs {
			if i == 3 {
				w.then()
			}
			w.t("Nothing; maybe the filter shape is off.", asOK("API-post-database-query", obj{"database_id": "1c9e0a4b2b7d80f3a1e2c9d7f0b3a611", "filter": f, "page_size": 100}, ftNotion(arr{}, "")))
		}
		add(w)
	}

	// A triage agent files one bug again and again in other words; each
	// makes a new issue.
	{
		w := asRunOf("linear-same-bug-refiled-reworded", "tracker", true).acc("write", "create_issue")
		for i, t := range []string{"Checkout: coupon field accepts expired codes", "Expired coupon codes are accepted at checkout", "Coupon validation ignores expiry date", "Checkout applies discount for expired coupons", "Bug: expired coupons still work in checkout"} {
			if i == 3 {
				w.then()
			}
			w.t("Let me make sure the bug is filed.", asOK("create_issue", obj{"teamId": "ENG", "title": t, "description": "Expired coupons (e.g. WINTER25) are applied at checkout.", "priority": 2}, egJSON(obj{"id": fmt.Sprintf("4f1c2e%02x-8b0a-4d52-a1f3-0c9e7d%06x", 0x40+i*17, 0x3a91f0+i*977), "identifier": fmt.Sprintf("ENG-%d", 1850+i*3), "title": t, "url": fmt.Sprintf("https://linear.app/shop/issue/ENG-%d", 1850+i*3), "state": obj{"name": "Triage"}})))
		}
		add(w)
	}

	// A log agent asks Elasticsearch one question with its clauses
	// reordered and respelled; the same hits, another "took".
	{
		w := asRunOf("es-query-clauses-reordered-same-hits", "search", true)
		hits := []obj{{"order_id": "ord_880100", "ts": 1764910000000, "status": "payment_failed", "reason": "card_declined"}, {"order_id": "ord_880101", "ts": 1764909939000, "status": "payment_failed", "reason": "card_declined"}}
		qs := []obj{
			{"bool": obj{"filter": arr{obj{"term": obj{"status": "payment_failed"}}, obj{"term": obj{"reason": "card_declined"}}}}},
			{"bool": obj{"filter": arr{obj{"term": obj{"reason": "card_declined"}}, obj{"term": obj{"status": "payment_failed"}}}}},
			{"bool": obj{"must": arr{obj{"match": obj{"status": "payment_failed"}}, obj{"match": obj{"reason": "card_declined"}}}}},
			{"query_string": obj{"query": "status:payment_failed AND reason:card_declined"}},
			{"bool": obj{"filter": arr{obj{"terms": obj{"status": arr{"payment_failed"}}}, obj{"terms": obj{"reason": arr{"card_declined"}}}}}},
		}
		for i, q := range qs {
			if i == 3 {
				w.then()
			}
			w.t("Only two? There should be more declines; querying differently.", asOK("search", obj{"index": "orders-*", "query": q, "size": 50}, ftES(3+i*2, hits...)))
		}
		add(w)
	}

	// A storage agent respells one prefix; nothing under it each time.
	{
		w := asRunOf("s3-prefix-respelled-empty", "storage", true)
		for i, p := range []string{"exports/2026/12/05/", "exports/2026/12/05", "/exports/2026/12/05/", "exports/2026-12-05/", "./exports/2026/12/05/"} {
			if i == 3 {
				w.then()
			}
			w.t("Today's export should be there.", asOK("list_objects_v2", obj{"Bucket": "shop-analytics", "Prefix": p, "MaxKeys": 100}, egJSON(obj{"KeyCount": 0, "IsTruncated": false, "Name": "shop-analytics", "Prefix": p, "MaxKeys": 100})))
		}
		add(w)
	}

	// A worker agent polls a job hash stuck in queued: only its
	// heartbeat moves.
	{
		w := asRunOf("redis-job-stuck-heartbeat-only", "queue", true)
		for i := 0; i < 5; i++ {
			if i == 2 {
				w.then()
			}
			w.t("Still queued; checking again.", asOK("hgetall", obj{"key": "job:export:9c1e"}, egJSON(obj{"status": "queued", "progress": "0", "worker": "", "heartbeat": fmt.Sprint(1764921000 + i*30), "enqueued_at": "1764920400"})))
		}
		add(w)
	}

	// A stream agent consumes without committing: the same messages come
	// back each time.
	{
		w := asRunOf("kafka-uncommitted-same-messages", "stream", true)
		msgs := arr{obj{"partition": 0, "offset": 55120, "key": "ord_880200", "value": "{\"event\":\"order.paid\",\"amount\":1800}"}, obj{"partition": 0, "offset": 55121, "key": "ord_880201", "value": "{\"event\":\"order.paid\",\"amount\":2030}"}}
		for i := 0; i < 5; i++ {
			if i == 2 {
				w.then()
			}
			w.t("Processing the next batch.", asOK("consume_messages", obj{"topic": "orders.events", "group_id": "reconciler", "max_messages": 2}, egJSON(obj{"messages": msgs, "committed": 55120})))
		}
		add(w)
	}

	// A reminders agent resends one SMS reworded after each comes back
	// undelivered: a new SID each round.
	{
		w := asRunOf("sms-resent-reworded-undelivered", "messaging", true).acc("write", "send_sms")
		for i, b := range []string{"Hi Ana, your order is ready for pick-up at Rua Augusta 12.", "Ana, your order can be picked up at Rua Augusta 12.", "Reminder: order ready at Rua Augusta 12 for pick-up.", "Hello Ana! Pick up your order at Rua Augusta 12."} {
			if i == 2 {
				w.then()
			}
			sid := fmt.Sprintf("SM%032x", 0x7b2d0000+i*104729)
			w.t("It wasn't delivered; sending again.", asOK("send_sms", obj{"to": "+351912000101", "body": b}, egJSON(obj{"sid": sid, "status": "queued", "to": "+351912000101", "date_created": fmt.Sprintf("Sat, 05 Dec 2026 09:%02d:%02d +0000", 20+i*2, i*17%60)})))
			w.t("", asOK("get_message", obj{"sid": sid}, egJSON(obj{"sid": sid, "status": "undelivered", "error_code": 30003, "error_message": "Unreachable destination handset", "to": "+351912000101"})))
		}
		add(w)
	}

	// A DNS agent creates one record again with its name and TTL
	// respelled; it already exists each time.
	{
		w := asRunOf("dns-record-recreated-respelled-exists", "dns", true).acc("write", "create_dns_record")
		for i, a := range []obj{
			{"zone_id": "9a7c2e11f0b34d5e", "type": "A", "name": "api", "content": "203.0.113.30", "ttl": 300},
			{"zone_id": "9a7c2e11f0b34d5e", "type": "A", "name": "api.shop.example", "content": "203.0.113.30", "ttl": 300},
			{"zone_id": "9a7c2e11f0b34d5e", "type": "A", "name": "api", "content": "203.0.113.30", "ttl": 1},
			{"zone_id": "9a7c2e11f0b34d5e", "type": "a", "name": "API.shop.example.", "content": "203.0.113.30", "ttl": "300"},
			{"zone_id": "9a7c2e11f0b34d5e", "type": "A", "name": "api", "content": "203.0.113.30", "ttl": 300, "proxied": false},
		} {
			if i == 3 {
				w.then()
			}
			w.t("Making sure the record is there.", asFail("create_dns_record", a, "tool_error", "Cloudflare API error 81057: An identical record already exists."))
		}
		add(w)
	}

	// A research agent fetches one video's transcript under other
	// spellings of its URL.
	{
		w := asRunOf("youtube-url-respelled-same-transcript", "video", true)
		tr := "[00:00] Welcome back to part 2 of the Postgres internals series.\n[00:06] Today we look at WAL and checkpoints.\n[00:14] Every change is written to the log first."
		for i, u := range []string{"https://www.youtube.com/watch?v=Hn2pR7tYw3E", "https://youtu.be/Hn2pR7tYw3E", "https://www.youtube.com/watch?v=Hn2pR7tYw3E&t=42s", "https://m.youtube.com/watch?v=Hn2pR7tYw3E&feature=share", "youtube.com/embed/Hn2pR7tYw3E"} {
			if i == 3 {
				w.then()
			}
			w.t("The transcript seems short; fetching it again.", asOK("get_transcript", obj{"url": u, "lang": "en"}, tr))
		}
		add(w)
	}

	// An ops agent asks nginx's status over SSH in other commands; the
	// same failure, its age growing.
	{
		w := asRunOf("ssh-status-respelled-same-failure", "ops", true).acc("write", "ssh_exec")
		for i, c := range []string{"systemctl status nginx --no-pager", "systemctl status nginx.service --no-pager", "sudo systemctl status nginx -l --no-pager", "SYSTEMD_PAGER= systemctl status nginx", "systemctl --no-pager status nginx.service"} {
			if i == 3 {
				w.then()
			}
			w.t("Let me check nginx again.", asOK("ssh_exec", obj{"host": "web-2", "command": c}, ftSSH(3, ftSystemctl(fmt.Sprintf("%dmin %ds", 2+i, i*19%60), 88121))))
		}
		add(w)
	}

	// A trading agent re-places one order with its amount written
	// otherwise; the same rejection.
	{
		w := asRunOf("exchange-order-amount-respelled-rejected", "trading", true).acc("write", "create_order")
		for i, amt := range []any{"0.5", 0.5, "0.50", "0.500", 0.50000} {
			if i == 3 {
				w.then()
			}
			w.t("Retrying the order.", asFail("create_order", obj{"symbol": "BTC/EUR", "side": "buy", "type": "market", "amount": amt}, "tool_error", "InsufficientFunds: kraken {\"error\":[\"EOrder:Insufficient funds\"]}"))
		}
		add(w)
	}

	// A travel agent searches one route by code, city and ICAO code; the
	// same offers.
	{
		w := asRunOf("flights-route-respelled-same-offers", "travel", true)
		off := egJSON(obj{"data": arr{obj{"id": "1", "itineraries": arr{obj{"duration": "PT2H55M", "segments": arr{obj{"carrierCode": "KL", "number": "1692", "departure": obj{"iataCode": "LIS"}, "arrival": obj{"iataCode": "AMS"}}}}}, "price": obj{"currency": "EUR", "total": "412.30"}}}})
		for i, r := range [][2]string{{"LIS", "AMS"}, {"Lisbon", "Amsterdam"}, {"LPPT", "EHAM"}, {"lis", "ams"}, {"Lisboa", "AMS"}} {
			if i == 3 {
				w.then()
			}
			w.t("Too expensive; let me search again.", asOK("search_flights", obj{"origin": r[0], "destination": r[1], "departure_date": "2026-12-14", "adults": 1}, off))
		}
		add(w)
	}

	// A knowledge agent renames a query's variables; the same empty
	// bindings.
	{
		w := asRunOf("wikidata-vars-renamed-empty", "knowledge", true)
		for i, q := range []string{
			"SELECT ?mayor WHERE { wd:Q597 wdt:P6 ?mayor . ?mayor wdt:P102 wd:Q847263 . }",
			"SELECT ?x WHERE { wd:Q597 wdt:P6 ?x . ?x wdt:P102 wd:Q847263 . }",
			"SELECT ?person WHERE { wd:Q597 wdt:P6 ?person. ?person wdt:P102 wd:Q847263. }",
			"PREFIX wd: <http://www.wikidata.org/entity/>\nPREFIX wdt: <http://www.wikidata.org/prop/direct/>\nSELECT ?head WHERE { wd:Q597 wdt:P6 ?head . ?head wdt:P102 wd:Q847263 . }",
			"SELECT DISTINCT ?m WHERE { wd:Q597 wdt:P6 ?m . ?m wdt:P102 wd:Q847263 . } LIMIT 10",
		} {
			if i == 3 {
				w.then()
			}
			vars := strings.TrimPrefix(strings.Fields(q[strings.Index(q, "SELECT"):])[1], "?")
			if vars == "DISTINCT" {
				vars = "m"
			}
			w.t("No result; adjusting the query.", asOK("execute_sparql", obj{"sparql_query": q}, egJSON(obj{"head": obj{"vars": arr{vars}}, "results": obj{"bindings": arr{}}})))
		}
		add(w)
	}

	// A journaling agent appends one to-do again and again in other
	// words.
	{
		w := asRunOf("obsidian-same-todo-reworded", "notes", true).acc("write", "obsidian_append_content")
		for i, e := range []string{"- [ ] Send the Q1 hiring plan to Marta\n", "- [ ] Q1 hiring plan → Marta\n", "- [ ] Email Marta the Q1 hiring plan\n", "- [ ] TODO: share hiring plan (Q1) with Marta\n", "- [ ] Marta: send her the Q1 hiring plan\n"} {
			if i == 3 {
				w.then()
			}
			w.t("Adding the follow-up to today's note.", asOK("obsidian_append_content", obj{"filepath": "Daily/2026-12-05.md", "content": e}, "Successfully appended content to Daily/2026-12-05.md"))
		}
		add(w)
	}

	// A GraphQL agent reorders and aliases one query's fields; the same
	// data.
	{
		w := asRunOf("graphql-fields-reordered-same-data", "api", true)
		for i, q := range []string{
			"{ order(id: \"gid://shop/Order/5521\") { id displayFinancialStatus refunds { id totalRefunded { amount } } } }",
			"{ order(id: \"gid://shop/Order/5521\") { refunds { totalRefunded { amount } id } displayFinancialStatus id } }",
			"query GetOrder { order(id: \"gid://shop/Order/5521\") { id displayFinancialStatus refunds { id totalRefunded { amount } } } }",
			"query { o: order(id: \"gid://shop/Order/5521\") { id status: displayFinancialStatus refunds { id totalRefunded { amount } } } }",
			"query($id: ID!) { order(id: $id) { id displayFinancialStatus refunds { id totalRefunded { amount } } } }",
		} {
			if i == 3 {
				w.then()
			}
			data := obj{"id": "gid://shop/Order/5521", "displayFinancialStatus": "PAID", "refunds": arr{}}
			key := "order"
			if i == 3 {
				key = "o"
				data = obj{"id": "gid://shop/Order/5521", "status": "PAID", "refunds": arr{}}
			}
			a := obj{"query": q}
			if i == 4 {
				a["variables"] = obj{"id": "gid://shop/Order/5521"}
			}
			w.t("The refund should show; asking again.", asOK("graphql_query", a, egJSON(obj{"data": obj{key: data}})))
		}
		add(w)
	}

	// A lead hands one failing fix to a coder in other words; each time
	// the coder runs the same test to the same failure and gives up.
	{
		w := asRunOf("lead-same-fix-rehanded-reworded", "delegation", true).acc("write", "run_tests")
		for i, task := range []string{
			"Make tests/tax pass; the failing test is test_reverse_charge_b2b.",
			"Fix test_reverse_charge_b2b in tests/tax.",
			"The reverse-charge B2B tax test is failing; please get it green.",
			"Please resolve the failure in tests/tax (reverse charge for B2B).",
		} {
			if i == 2 {
				w.then()
			}
			w.hand("The tax fix didn't land; handing it back.", "coder", task, "Could not fix: test_reverse_charge_b2b fails with KeyError: 'vat_id'; the fixture has no VAT id.", func(s *asw) {
				s.t("", asOK("run_tests", obj{"path": "tests/tax"}, "FAILED tests/tax/test_tax.py::test_reverse_charge_b2b - KeyError: 'vat_id'\n1 failed, 14 passed in 1.9s"))
			})
		}
		add(w)
	}

	// A finance agent fans out the same rates again with the currencies
	// respelled; the same rates.
	{
		w := asRunOf("fx-rates-respelled-parallel-same", "finance", true)
		spell := [][3]string{{"USD", "GBP", "JPY"}, {"usd", "gbp", "jpy"}, {"US$", "£", "¥"}, {"US Dollar", "Pound Sterling", "Japanese Yen"}, {"USD", "GBP", "JPY"}}
		for i, sp := range spell {
			if i == 3 {
				w.then()
			}
			var calls []asCall
			for j, c := range sp {
				canon := []string{"USD", "GBP", "JPY"}[j]
				calls = append(calls, asOK("get_exchange_rate", obj{"base": []string{"EUR", "eur", "€", "Euro", "EUR"}[i], "target": c}, egJSON(obj{"base": "EUR", "target": canon, "date": "2026-12-04", "rate": []float64{1.0955, 0.8360, 163.83}[j], "source": "ECB"})))
			}
			w.t("Those rates look stale; fetching them again.", calls...)
		}
		add(w)
	}

	// A scheduling agent proposes the same declined instant written in
	// other zones.
	{
		w := asRunOf("meeting-declined-instant-other-zones", "scheduling", true).acc("write", "propose_meeting")
		for i, s := range []string{"2026-12-08T15:00:00Z", "2026-12-08T10:00:00-05:00", "2026-12-08T16:00:00+01:00", "2026-12-08T15:00:00+00:00", "2026-12-09T00:00:00+09:00"} {
			if i == 3 {
				w.then()
			}
			w.t("Maybe a slot in their time zone works.", asOK("propose_meeting", obj{"attendee": "jordan@partner.example", "start": s, "duration_minutes": 30, "title": "Integration kickoff"}, "Declined by jordan@partner.example: \"busy then, sorry\""))
		}
		add(w)
	}

	// A design agent asks one node by its id in URL and API notation.
	{
		w := asRunOf("figma-node-id-notations", "design", true)
		node := egJSON(obj{"name": "Pricing table", "nodes": arr{obj{"id": "12:41", "type": "FRAME", "layout": obj{"mode": "column", "gap": 24}, "fills": arr{"#F5F7FA"}}}})
		for i, n := range []string{"12:41", "12-41", "12%3A41", "12:41", "node-id=12-41"} {
			if i == 3 {
				w.then()
			}
			w.t("The table's styles are missing; fetching the node again.", asOK("get_figma_data", obj{"fileKey": "Qx7hT2mZp9LrC", "nodeId": n}, node))
		}
		add(w)
	}

	// A task agent respells one filter; the same tasks each time.
	{
		w := asRunOf("todoist-filter-respelled-same", "tasks", true)
		tasks := [][3]string{{"8741021", "Send invoice to Acme", "today"}, {"8741030", "Book dentist", "yesterday"}}
		for i, f := range []string{"today | overdue", "overdue | today", "(today | overdue)", "today|overdue", "due before: tomorrow"} {
			if i == 3 {
				w.then()
			}
			w.t("Where is the budget review? Filtering again.", asOK("get_tasks", obj{"filter": f}, ftTodo(tasks...)))
		}
		add(w)
	}

	// An on-call agent acknowledges one incident again with reworded
	// notes.
	{
		w := asRunOf("pagerduty-reack-reworded-notes", "oncall", true).acc("write", "acknowledge_incident")
		for i, n := range []string{"Looking into it.", "On it, investigating.", "Investigating now.", "Acknowledged, checking DNS.", "Still on it."} {
			if i == 3 {
				w.then()
			}
			w.t("Acknowledging the incident.", asFail("acknowledge_incident", obj{"incident_id": "Q3MB0L7TA", "note": n}, "tool_error", "PagerDuty API error 400: Incident Already Acknowledged (code 2001): the incident Q3MB0L7TA is already acknowledged by you."))
		}
		add(w)
	}

	return runs
}
