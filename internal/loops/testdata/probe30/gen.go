//go:build ignore

// gen writes the thirtieth held-out probe, written before reading the
// guard's rules again, in kinds no earlier probe uses: plans re-made with
// the same steps under new numbers (in the model's text, in a plan tool,
// in the hand-offs), a failing write retried with cosmetic changes to its
// payload (and a write answered "ok" that says it was not accepted),
// answers that differ only in an etag, a Date header or an "as of" time,
// bisection and binary search (each answer alike in shape, each learned),
// crawls that page through cursors (and one whose cursors go round), a
// sub-agent handing its parent's task on under a new name, a code agent's
// run-tests/edit loop (legitimate while the failures change, a loop when
// one failure stays and the edits touch nothing it names), searches
// reworded across synonyms, and reads whose only argument is a fresh
// request id. The domains: an SRE runbook, an issue tracker, a CMS, an
// object store, a GPU batch size, a regression bisected, a chat history,
// a docs crawler, an events calendar, an offsite plan, a date parser, a
// linter, car rental, contract search, an inbox and a quota API.
//
// A loop is marked where the probes before it mark one: the third call
// asking the same thing after two answers alike (its substance, fetch
// metadata aside) with nothing written; the fourth asking in other words
// or with other arguments that learns nothing; the next call after three
// failures alike; the third hand-off of one sub-task to one agent; a
// hand-off that hands an ancestor's task on down its own chain; the
// fourth write after three that each left the same failure.
package main

import (
	"fmt"
	"strings"

	"github.com/agentreach/reach/internal/loops/testdata/tracegen"
)

type (
	obj = tracegen.Obj
	b   = tracegen.Probe
)

var (
	ok    = tracegen.OK
	fail  = tracegen.Fail
	clock = tracegen.Clock
)

func run(id, desc string, loop bool, kind string) *b {
	return tracegen.NewProbe("probe30-"+id, desc, loop, kind)
}

func reqID(n int) string {
	return fmt.Sprintf("%08x-%04x-4%03x-b%03x-%012x", 0x7c1e2a03+n*6151, (n*977)%65536, (n*23)%4096, (n*41)%4096, 0x2a3b4c5d6e+int64(n)*130363)
}

func main() {
	replanTextSame()
	replanTextMoves()
	replanTodoToolSame()
	replanHandoffNumbers()
	issueCosmeticRetry()
	issueFieldsFixed()
	cmsSoftRejectCosmetic()
	cmsStaleEtagReformatted()
	objectEtagFlaps()
	objectEtagContentMoves()
	httpDateHeaderOnly()
	quotaAsOfEpoch()
	batchSizeBinarySearch()
	batchSizeOscillates()
	regressionBisect()
	chatHistoryCursorCrawl()
	chatHistoryEmptyPages()
	docsCrawlCursorCycle()
	eventsCalendarTrap()
	offsiteDelegatedBackRenamed()
	offsiteEscalatesOnce()
	dateParserTestsMove()
	dateParserIrrelevantEdits()
	dateParserCosmeticEdits()
	lintNoqaWrongLine()
	carRentalSynonyms()
	carRentalSynonymsFind()
	contractSearchSynonymsEmpty()
	inboxFreshRequestIDs()
	jobStatusRequestIDs()
}

// --- an SRE runbook: a plan re-made with the same steps ---

func diskCalls(i int) []tracegen.C {
	return []tracegen.C{
		ok("shell", obj{"host": "db-7", "cmd": "df -h /var/lib/postgresql"}, "Filesystem      Size  Used Avail Use% Mounted on\n/dev/nvme1n1p1  1.8T  1.7T   98G  95% /var/lib/postgresql"),
		ok("shell", obj{"host": "db-7", "cmd": "du -sh /var/lib/postgresql/16/main/pg_wal"}, "412G\t/var/lib/postgresql/16/main/pg_wal"),
	}
}

func replanTextSame() {
	r := run("replan-text-same", "an SRE agent writes a numbered plan (check disk, check WAL size), runs it, then writes a new plan whose steps 4-5 and 7-8 are the same two checks, answered alike each time", true, "hidden_loop")
	r.Tool("shell", "read")
	plans := []string{
		"Plan: 1. check disk usage on db-7; 2. measure pg_wal; 3. decide.",
		"Revised plan: 4. re-check disk usage on db-7; 5. measure pg_wal again; 6. decide on archiving.",
		"Updated plan: 7. confirm disk usage; 8. confirm pg_wal size; 9. open a ticket.",
		"New plan: 10. disk usage; 11. pg_wal size.",
	}
	for i, p := range plans {
		if i == 2 {
			r.Then()
		}
		r.Calls(p, diskCalls(i)...)
	}
	r.Write()
}

func replanTextMoves() {
	r := run("replan-text-moves", "an SRE agent re-plans with new step numbers around the same two checks while a WAL archiver catches up; the WAL shrinks at each check", false, "polling")
	r.Tool("shell", "read")
	wal := []string{"412G", "301G", "188G", "64G"}
	use := []string{"95%", "89%", "83%", "76%"}
	for i := range wal {
		r.Calls(fmt.Sprintf("Plan, round %d: %d. check disk; %d. measure pg_wal.", i+1, 2*i+1, 2*i+2),
			ok("shell", obj{"host": "db-7", "cmd": "df -h /var/lib/postgresql"}, "Filesystem      Size  Used Avail Use% Mounted on\n/dev/nvme1n1p1  1.8T  1.7T   98G  "+use[i]+" /var/lib/postgresql"),
			ok("shell", obj{"host": "db-7", "cmd": "du -sh /var/lib/postgresql/16/main/pg_wal"}, wal[i]+"\t/var/lib/postgresql/16/main/pg_wal"))
	}
	r.Write()
}

func replanTodoToolSame() {
	r := run("replan-todo-tool-same", "an agent keeps its plan in a todo tool: it writes the steps, reads the replica's lag, re-writes the plan with the same steps renumbered, reads the same lag again, three times", true, "hidden_loop")
	r.Tool("todo_write", "write").Tool("replica_status", "read")
	steps := []string{"check replica lag", "check replication slot", "restart walreceiver if stuck"}
	for round := 0; round < 4; round++ {
		var todos []obj
		for j, s := range steps {
			todos = append(todos, obj{"id": fmt.Sprintf("%d", round*3+j+1), "content": s, "status": []string{"in_progress", "pending", "pending"}[j]})
		}
		r.Calls("Writing the plan.", ok("todo_write", obj{"todos": todos}, obj{"ok": true, "count": 3}))
		if round == 2 {
			r.Then()
		}
		r.Calls("Step: check replica lag.", ok("replica_status", obj{"replica": "db-7-r1"}, obj{"state": "streaming", "lag_bytes": 18874368, "replay_lsn": "3A/9F0021C8", "slot": "db7_r1", "slot_active": true}))
	}
	r.Write()
}

func replanHandoffNumbers() {
	r := run("replan-handoff-numbers", "a planner hands the same sub-task to a worker under a new step number each time ('Step 3: ...', 'Step 6: ...'), and the worker answers alike", true, "livelock_agents")
	r.Tool("invoice_list", "read")
	for i, n := range []int{3, 6, 9, 12} {
		if i == 2 {
			r.Then()
		}
		r.Delegate("Replanning; next step goes to the worker.", "ledger_worker", fmt.Sprintf("Step %d: list the unpaid invoices of ACME GmbH for November", n), func() {
			r.Calls("Listing invoices.", ok("invoice_list", obj{"customer": "ACME GmbH", "status": "unpaid", "month": "2026-11"}, obj{"invoices": []obj{{"no": "INV-20931", "eur": 4120.0}, {"no": "INV-20977", "eur": 860.5}}}))
		}, "Two unpaid invoices for ACME GmbH in November: INV-20931 (4,120.00 EUR) and INV-20977 (860.50 EUR).")
	}
	r.Write()
}

// --- a failing write retried with cosmetic changes ---

func issueCosmeticRetry() {
	r := run("issue-cosmetic-retry", "an agent files an issue whose label does not exist, and retries with the title's case, a trailing period, the body's spacing and the keys' order changed, the same label each time", true, "error_retry_loop")
	r.Tool("create_issue", "write")
	payloads := []obj{
		{"repo": "acme/web", "title": "Checkout button unresponsive on Safari", "body": "Steps: open /cart, press Checkout.", "labels": []string{"bug", "safari-ios"}},
		{"labels": []string{"bug", "safari-ios"}, "repo": "acme/web", "title": "Checkout button unresponsive on Safari.", "body": "Steps: open /cart, press Checkout."},
		{"repo": "acme/web", "title": "checkout button unresponsive on safari", "body": "Steps:\n open /cart,\n press Checkout.", "labels": []string{"bug", "safari-ios"}},
		{"repo": "acme/web", "title": "Checkout button unresponsive on Safari (iOS)", "body": "Steps: open /cart, press Checkout.  ", "labels": []string{"safari-ios", "bug"}},
		{"repo": "acme/web", "title": "Checkout button unresponsive on Safari", "body": "Steps: open /cart, press Checkout.\n", "labels": []string{"bug", "safari-ios"}},
	}
	for i, p := range payloads {
		if i == 3 {
			r.Then()
		}
		r.Calls("Filing the issue.", fail("create_issue", p, "invalid_args", obj{"message": "Validation Failed", "errors": []obj{{"resource": "Label", "field": "name", "code": "invalid", "value": "safari-ios"}}, "request_id": reqID(i)}))
	}
	r.Write()
}

func issueFieldsFixed() {
	r := run("issue-fields-fixed", "an agent files an issue, told in turn that a label, then the milestone, then the assignee is invalid, fixing each and filing it", false, "search_until_found")
	r.Tool("create_issue", "write")
	base := func() obj {
		return obj{"repo": "acme/web", "title": "Checkout button unresponsive on Safari", "body": "Steps: open /cart, press Checkout.", "labels": []string{"bug", "safari-ios"}, "milestone": "2026.12", "assignee": "jdoe"}
	}
	p := base()
	r.Calls("Filing.", fail("create_issue", p, "invalid_args", obj{"message": "Validation Failed", "errors": []obj{{"resource": "Label", "field": "name", "code": "invalid", "value": "safari-ios"}}}))
	p = base()
	p["labels"] = []string{"bug", "browser:safari"}
	r.Calls("Using the repo's label.", fail("create_issue", p, "invalid_args", obj{"message": "Validation Failed", "errors": []obj{{"resource": "Issue", "field": "milestone", "code": "invalid", "value": "2026.12"}}}))
	p["milestone"] = 14
	r.Calls("Milestone by number.", fail("create_issue", p, "invalid_args", obj{"message": "Validation Failed", "errors": []obj{{"resource": "Issue", "field": "assignee", "code": "invalid", "value": "jdoe"}}}))
	p["assignee"] = "jane-doe"
	r.Calls("The assignee's login.", ok("create_issue", p, obj{"number": 4412, "html_url": "https://tracker.example/acme/web/issues/4412"}))
	r.Write()
}

func cmsSoftRejectCosmetic() {
	r := run("cms-soft-reject-cosmetic", "an agent publishes a CMS page; the API answers 200 with accepted false (the slug is taken), and the agent retries with the same slug and cosmetic changes to the body", true, "error_retry_loop")
	r.Tool("publish_page", "write")
	bodies := []string{"<h1>Winter sale</h1><p>Up to 40% off.</p>", "<h1>Winter Sale</h1><p>Up to 40% off.</p>", "<h1>Winter sale</h1>\n<p>Up to 40% off.</p>", "<h1> Winter sale </h1><p>Up to 40 % off.</p>", "<h1>Winter sale!</h1><p>Up to 40% off.</p>"}
	for i, bd := range bodies {
		if i == 3 {
			r.Then()
		}
		r.Calls("Publishing.", ok("publish_page", obj{"site": "shop-eu", "slug": "winter-sale", "locale": "en", "html": bd}, obj{"accepted": false, "errors": []obj{{"path": "slug", "message": "slug 'winter-sale' is already used by page 8812"}}, "trace": reqID(100 + i)}))
	}
	r.Write()
}

func cmsStaleEtagReformatted() {
	r := run("cms-stale-etag-reformatted", "an agent updates a CMS entry with If-Match; told 412, it reformats the body and sends the same stale etag again, never re-reading", true, "stale_write_retry")
	r.Tool("get_entry", "read").Tool("update_entry", "write")
	r.Calls("Reading the entry.", ok("get_entry", obj{"id": "hero-banner"}, obj{"etag": "\"a41f-77\"", "fields": obj{"headline": "Winter sale", "cta": "Shop now"}}))
	heads := []string{"Winter sale: up to 40% off", "Winter sale - up to 40% off", "Winter Sale: Up To 40% Off", "Winter sale: up to 40 % off"}
	for i, h := range heads {
		if i == 2 {
			r.Then()
		}
		r.Calls("Updating.", fail("update_entry", obj{"id": "hero-banner", "if_match": "\"a41f-77\"", "fields": obj{"headline": h, "cta": "Shop now"}}, "conflict", obj{"status": 412, "error": "Precondition Failed: entry hero-banner has changed (current etag differs)"}))
	}
	r.Write()
}

// --- answers that differ only in an etag, a Date header or an "as of" time ---

func objectEtagFlaps() {
	r := run("object-etag-flaps", "an agent waits for a build to upload an artifact by reading the object's metadata; behind a load balancer each node answers its own etag for the same 0-byte placeholder", true, "noisy_repeat")
	r.Tool("head_object", "read")
	etags := []string{"\"5f2b-1a\"", "\"5f2b-3c\"", "\"5f2b-1a\"", "\"5f2b-9e\"", "\"5f2b-3c\""}
	for i, e := range etags {
		if i == 2 {
			r.Then()
		}
		r.Calls("Is the artifact there yet?", ok("head_object", obj{"bucket": "builds", "key": "web/88412/app.tar.zst"}, obj{"ETag": e, "ContentLength": 0, "ContentType": "application/octet-stream", "Metadata": obj{"state": "placeholder"}}))
	}
	r.Write()
}

func objectEtagContentMoves() {
	r := run("object-etag-content-moves", "an agent waits for a multipart upload by reading the object's metadata; its etag and its size change until it is complete", false, "polling_with_noise")
	r.Tool("head_object", "read")
	sizes := []int{0, 134217728, 268435456, 301989888}
	states := []string{"placeholder", "uploading", "uploading", "complete"}
	for i, s := range sizes {
		r.Calls("Is the artifact there yet?", ok("head_object", obj{"bucket": "builds", "key": "web/88412/app.tar.zst"}, obj{"ETag": fmt.Sprintf("\"%x-%d\"", 0x5f2b+i*77, i), "ContentLength": s, "ContentType": "application/octet-stream", "Metadata": obj{"state": states[i]}}))
	}
	r.Write()
}

func httpDateHeaderOnly() {
	r := run("http-date-header-only", "an agent polls a status page with curl -i; the answer's body stays 'degraded', only its Date and X-Request-Id headers change", true, "noisy_repeat")
	r.Tool("http_get", "read")
	for i := 0; i < 5; i++ {
		if i == 2 {
			r.Then()
		}
		t := 30 + i*45
		out := fmt.Sprintf("HTTP/1.1 200 OK\nDate: Mon, 07 Dec 2026 09:%02d:%02d GMT\nContent-Type: application/json\nX-Request-Id: %s\nCache-Control: no-store\n\n{\"status\":\"degraded\",\"component\":\"payments-api\",\"incident\":\"INC-3391\"}", t/60, t%60, reqID(200+i))
		r.Calls("Checking the status page.", ok("http_get", obj{"url": "https://status.example.com/api/v2/components/payments-api", "include_headers": true}, out))
	}
	r.Write()
}

func quotaAsOfEpoch() {
	r := run("quota-as-of-epoch", "an agent waits for a GPU quota increase by reading the quota; each answer is stamped with an epoch 'as_of' and a 'generated' counter, the limit stays 8", true, "noisy_repeat")
	r.Tool("get_quota", "read")
	for i := 0; i < 5; i++ {
		if i == 2 {
			r.Then()
		}
		r.Calls("Has the quota moved?", ok("get_quota", obj{"project": "ml-train", "region": "europe-west4", "metric": "NVIDIA_H100_GPUS"}, obj{"limit": 8, "usage": 8, "request": obj{"id": "QR-5512", "state": "PENDING"}, "as_of": 1796634000 + i*300, "generated": 88120 + i*13}))
	}
	r.Write()
}

// --- bisection and binary search ---

func batchSizeBinarySearch() {
	r := run("batch-size-binary-search", "a training agent binary-searches the largest batch size that fits in GPU memory; each answer is fits true or false, the interval narrowing", false, "revisit_with_progress")
	r.Tool("try_batch", "read")
	lo, hi := 64, 1024
	fits := func(n int) bool { return n <= 688 }
	for lo < hi-16 {
		mid := (lo + hi) / 2
		f := fits(mid)
		r.Calls(fmt.Sprintf("Interval [%d, %d]: trying %d.", lo, hi, mid), ok("try_batch", obj{"model": "vit-l16", "batch_size": mid, "precision": "bf16"}, obj{"fits": f}))
		if f {
			lo = mid
		} else {
			hi = mid
		}
	}
	r.Write()
}

func batchSizeOscillates() {
	r := run("batch-size-oscillates", "a training agent binary-searching the batch size rounds its midpoint back and forth between 688 and 689, answered fits and does not fit each time", true, "ping_pong")
	r.Tool("try_batch", "read")
	for _, n := range []int{512, 768, 640, 704, 672, 688} {
		r.Calls("Narrowing.", ok("try_batch", obj{"model": "vit-l16", "batch_size": n, "precision": "bf16"}, obj{"fits": n <= 688}))
	}
	seq := []int{689, 688, 689, 688, 689}
	for i, n := range seq {
		if i == 3 {
			r.Then()
		}
		r.Calls("Narrowing.", ok("try_batch", obj{"model": "vit-l16", "batch_size": n, "precision": "bf16"}, obj{"fits": n <= 688}))
	}
	r.Write()
}

func regressionBisect() {
	r := run("regression-bisect", "an agent bisects a latency regression over 64 commits, running the benchmark at each midpoint; good and bad answers alike in shape, each halving the range", false, "revisit_with_progress")
	r.Tool("git_checkout", "write").Tool("run_bench", "read")
	commits := []string{"9c1e0a2", "4b7d3f1", "e2a9c55", "71f0b3d", "c83d1e7", "0a5f2c9"}
	bad := []bool{true, false, true, true, false, true}
	for i, c := range commits {
		r.Calls("Next midpoint.", ok("git_checkout", obj{"ref": c}, obj{"head": c, "detached": true}))
		p99 := 41
		if bad[i] {
			p99 = 67
		}
		r.Calls("Benchmarking.", ok("run_bench", obj{"suite": "checkout_p99", "runs": 5}, obj{"p99_ms": p99, "verdict": map[bool]string{true: "regressed", false: "ok"}[bad[i]]}))
	}
	r.Write()
}

// --- crawls that page through cursors ---

func msg(i int) obj {
	return obj{"ts": fmt.Sprintf("1796%06d.%06d", 634000+i*97, i*13), "user": []string{"U02AB", "U07KX", "U11QP"}[i%3], "text": []string{"deploy is green", "rollback?", "p99 back to 40ms", "closing INC-3391", "thanks all", "postmortem tomorrow 10:00"}[i%6] + fmt.Sprintf(" (%d)", i)}
}

func chatHistoryCursorCrawl() {
	r := run("chat-history-cursor-crawl", "an agent reads a channel's history through opaque next_cursor pages until has_more is false", false, "pagination")
	r.Tool("conversations_history", "read")
	var cursor string
	for p := 0; p < 6; p++ {
		args := obj{"channel": "C04INCIDENT", "limit": 3}
		if cursor != "" {
			args["cursor"] = cursor
		}
		cursor = fmt.Sprintf("bmV4dF90czoxNzk2%06d", 634000+p*291)
		res := obj{"ok": true, "messages": []obj{msg(p * 3), msg(p*3 + 1), msg(p*3 + 2)}, "has_more": p < 5, "response_metadata": obj{"next_cursor": cursor}}
		r.Calls("Reading the channel.", ok("conversations_history", args, res))
	}
	r.Write()
}

func chatHistoryEmptyPages() {
	r := run("chat-history-empty-pages", "an agent reads a channel's history filtered to one user; the API pages by time, so three pages in a row come back empty with a new cursor before that user's messages", false, "pagination")
	r.Tool("conversations_history", "read")
	var cursor string
	for p := 0; p < 6; p++ {
		args := obj{"channel": "C04INCIDENT", "limit": 50, "user": "U07KX"}
		if cursor != "" {
			args["cursor"] = cursor
		}
		cursor = fmt.Sprintf("bmV4dF90czoxNzk2%06d", 512000+p*8640)
		var ms []obj
		if p == 0 || p >= 4 {
			ms = []obj{msg(p*3 + 1)}
		} else {
			ms = []obj{}
		}
		r.Calls("Reading the channel.", ok("conversations_history", args, obj{"ok": true, "messages": ms, "has_more": p < 5, "response_metadata": obj{"next_cursor": cursor}}))
	}
	r.Write()
}

func docsCrawlCursorCycle() {
	r := run("docs-crawl-cursor-cycle", "a docs crawler pages an API whose last page's cursor points back to the first page (under a cursor of its own): pages A, B, C, A, B, C, A, B", true, "hidden_loop")
	r.Tool("list_articles", "read")
	curs := []string{"c2VjdGlvbj0x", "c2VjdGlvbj0y", "c2VjdGlvbj0z"}
	pages := [][]string{{"Getting started", "Install"}, {"Configuration", "Auth"}, {"Webhooks", "Rate limits"}}
	for i := 0; i < 8; i++ {
		k := i % 3
		args := obj{"space": "dev-docs", "per_page": 2}
		if i > 0 {
			args["cursor"] = curs[k]
		}
		var as []obj
		for _, t := range pages[k] {
			as = append(as, obj{"title": t, "slug": strings.ToLower(strings.ReplaceAll(t, " ", "-"))})
		}
		if i == 6 {
			r.Then()
		}
		r.Calls("Next page.", ok("list_articles", args, obj{"articles": as, "next_cursor": curs[(k+1)%3], "total": 6}))
	}
	r.Write()
}

func eventsCalendarTrap() {
	r := run("events-calendar-trap", "a crawler follows an events calendar's 'next month' link past the last event: every month from March 2027 on is 'No events', its next link one month later", true, "hidden_loop")
	r.Tool("fetch_page", "read")
	months := []string{"2027-01", "2027-02", "2027-03", "2027-04", "2027-05", "2027-06", "2027-07", "2027-08"}
	for i, m := range months {
		if i == 5 {
			r.Then()
		}
		var body string
		if i < 2 {
			body = fmt.Sprintf("Events in %s\n- Jazz night, %s-14\n- Book fair, %s-22\nNext: /events?month=%s", m, m, m, months[i+1])
		} else {
			nx := "2027-09"
			if i+1 < len(months) {
				nx = months[i+1]
			}
			body = fmt.Sprintf("Events in %s\nNo events.\nNext: /events?month=%s", m, nx)
		}
		r.Calls("Following next.", ok("fetch_page", obj{"url": "https://city.example/events?month=" + m}, body))
	}
	r.Write()
}

// --- a sub-agent handing its parent's task on under a new name ---

func offsiteDelegatedBackRenamed() {
	r := run("offsite-delegated-back-renamed", "an offsite coordinator hands venue scouting to a scout; the scout hands 'plan the offsite' to an 'event_planner' (the coordinator's role under a new name), which hands venue scouting to 'venue_finder', which hands the offsite back to 'offsite_lead'", true, "delegation_cycle")
	r.Tool("venue_search", "read")
	top := "Plan the Q3 offsite for the design team (14 people, Lisbon, 2 days)"
	venue := "Find a venue in Lisbon for the design team's Q3 offsite, 14 people, 2 days"
	r.Delegate("Starting with the venue.", "venue_scout", venue, func() {
		r.Calls("Searching venues.", ok("venue_search", obj{"city": "Lisbon", "capacity_min": 14, "days": 2}, obj{"venues": []obj{{"name": "Palácio Chiado rooms", "eur_day": 2400}}}))
		r.Delegate("I need the overall plan first.", "event_planner", top, func() {
			r.Then()
			r.Delegate("Venue first.", "venue_finder", venue, func() {
				r.Delegate("Need the plan.", "offsite_lead", top, nil, "Need the venue before I can plan.")
			}, "Waiting on the plan.")
		}, "Waiting on the venue.")
	}, "No venue chosen.")
	r.Write()
}

func offsiteEscalatesOnce() {
	r := run("offsite-escalates-once", "an offsite coordinator hands venue scouting to a scout, which asks a budget approver (another role) one question about the ceiling, then books", false, "deep_delegation")
	r.Tool("venue_search", "read").Tool("hold_venue", "write").Tool("budget_lookup", "read")
	r.Delegate("Starting with the venue.", "venue_scout", "Find a venue in Lisbon for the design team's Q3 offsite, 14 people, 2 days", func() {
		r.Calls("Searching venues.", ok("venue_search", obj{"city": "Lisbon", "capacity_min": 14, "days": 2}, obj{"venues": []obj{{"name": "Palácio Chiado rooms", "eur_day": 2400}, {"name": "LX Factory loft", "eur_day": 1500}}}))
		r.Delegate("Is 2,400 a day within budget?", "budget_approver", "Approve up to 4,800 EUR for two venue days for the design team's offsite?", func() {
			r.Calls("Budget.", ok("budget_lookup", obj{"cost_center": "DESIGN", "quarter": "2027Q3"}, obj{"remaining_eur": 3500}))
		}, "No: 3,500 EUR remain; stay under that.")
		r.Calls("Holding the loft.", ok("hold_venue", obj{"venue": "LX Factory loft", "dates": []string{"2027-07-08", "2027-07-09"}}, obj{"hold": "H-2231", "expires": "2027-01-15"}))
	}, "Held LX Factory loft for 3,000 EUR.")
	r.Delegate("Now the agenda.", "agenda_writer", "Draft a two-day agenda for the design offsite at LX Factory loft", nil, "Agenda drafted: day 1 retros, day 2 roadmap.")
	r.Write()
}

// --- a code agent: run tests, edit, run tests ---

func testOut(fails ...string) string {
	if len(fails) == 0 {
		return "===== 48 passed in 2.31s ====="
	}
	var sb strings.Builder
	for _, f := range fails {
		sb.WriteString("FAILED " + f + "\n")
	}
	fmt.Fprintf(&sb, "===== %d failed, %d passed in 2.3%ds =====", len(fails), 48-len(fails), len(fails))
	return sb.String()
}

func dateParserTestsMove() {
	r := run("date-parser-tests-move", "a code agent runs the tests, edits the parser, runs them again; each run fails fewer tests, other ones, until all pass", false, "revisit_with_progress")
	r.Tool("run_tests", "read").Tool("edit_file", "write")
	runs := [][]string{
		{"tests/test_parse.py::test_day_first - AssertionError: expected 2026-12-07, got 2026-07-12", "tests/test_parse.py::test_tz_offset - ValueError: unconverted data remains: +01:00", "tests/test_parse.py::test_two_digit_year - AssertionError: expected 2026, got 1926"},
		{"tests/test_parse.py::test_tz_offset - ValueError: unconverted data remains: +01:00", "tests/test_parse.py::test_two_digit_year - AssertionError: expected 2026, got 1926"},
		{"tests/test_parse.py::test_two_digit_year - AssertionError: expected 2026, got 1926"},
		nil,
	}
	edits := []obj{
		{"path": "dateparse/parse.py", "old": "dayfirst=False", "new": "dayfirst=True"},
		{"path": "dateparse/parse.py", "old": "'%Y-%m-%dT%H:%M:%S'", "new": "'%Y-%m-%dT%H:%M:%S%z'"},
		{"path": "dateparse/parse.py", "old": "century = 1900", "new": "century = 2000 if yy < 70 else 1900"},
	}
	for i, fs := range runs {
		r.Calls("Running the tests.", ok("run_tests", obj{"path": "tests/test_parse.py"}, testOut(fs...)))
		if i < len(edits) {
			r.Calls("Fixing.", ok("edit_file", edits[i], obj{"ok": true}))
		}
	}
	r.Write()
}

const tzFail = "tests/test_parse.py::test_tz_offset - ValueError: unconverted data remains: +01:00"

func dateParserIrrelevantEdits() {
	r := run("date-parser-irrelevant-edits", "a code agent's one failing test names the format string in parse.py; it edits the README, a docstring in cli.py, the changelog and a type hint in utils.py, running the tests after each, the same failure each time", true, "error_retry_loop")
	r.Tool("run_tests", "read").Tool("edit_file", "write")
	edits := []obj{
		{"path": "README.md", "old": "Parses dates.", "new": "Parses dates, with time zones."},
		{"path": "dateparse/cli.py", "old": "\"\"\"Command line.\"\"\"", "new": "\"\"\"Command line entry point.\"\"\""},
		{"path": "CHANGELOG.md", "old": "## Unreleased", "new": "## Unreleased\n- time zone offsets"},
		{"path": "dateparse/utils.py", "old": "def norm(s):", "new": "def norm(s: str) -> str:"},
		{"path": "dateparse/__init__.py", "old": "__all__ = [\"parse\"]", "new": "__all__ = [\"parse\", \"norm\"]"},
	}
	r.Calls("Running the tests.", fail("run_tests", obj{"path": "tests/test_parse.py"}, "invalid_args", testOut(tzFail)))
	for i, e := range edits {
		if i == 3 {
			r.Then()
		}
		r.Calls("Editing.", ok("edit_file", e, obj{"ok": true}))
		r.Calls("Running the tests.", fail("run_tests", obj{"path": "tests/test_parse.py"}, "invalid_args", testOut(tzFail)))
	}
	r.Write()
}

func dateParserCosmeticEdits() {
	r := run("date-parser-cosmetic-edits", "a code agent re-writes the failing line of parse.py with cosmetic changes only (quotes, spacing, a comment), running the tests after each; the run answers ok and reports the same failure", true, "error_retry_loop")
	r.Tool("run_tests", "read").Tool("write_file", "write")
	lines := []string{
		"FMT = '%Y-%m-%dT%H:%M:%S'\n",
		"FMT = \"%Y-%m-%dT%H:%M:%S\"\n",
		"FMT = '%Y-%m-%dT%H:%M:%S'  # ISO 8601\n",
		"FMT  =  '%Y-%m-%dT%H:%M:%S'\n",
		"FMT = ('%Y-%m-%dT%H:%M:%S')\n",
	}
	r.Calls("Running the tests.", ok("run_tests", obj{"path": "tests/test_parse.py"}, testOut(tzFail)))
	for i, l := range lines {
		if i == 3 {
			r.Then()
		}
		r.Calls("Rewriting the format.", ok("write_file", obj{"path": "dateparse/fmt.py", "content": "# formats\n" + l}, obj{"bytes": 10 + len(l)}))
		r.Calls("Running the tests.", ok("run_tests", obj{"path": "tests/test_parse.py"}, testOut(tzFail)))
	}
	r.Write()
}

func lintNoqaWrongLine() {
	r := run("lint-noqa-wrong-line", "a code agent silences a linter's complaint by adding '# noqa' to a different line each time; the linter names line 88 each time", true, "error_retry_loop")
	r.Tool("lint", "read").Tool("edit_file", "write")
	out := "dateparse/parse.py:88:5: C901 'parse' is too complex (14)\nFound 1 error."
	r.Calls("Linting.", fail("lint", obj{"paths": []string{"dateparse"}}, "invalid_args", out))
	for i, ln := range []int{87, 89, 86, 90, 12} {
		if i == 3 {
			r.Then()
		}
		r.Calls("Silencing.", ok("edit_file", obj{"path": "dateparse/parse.py", "line": ln, "append": "  # noqa: C901"}, obj{"ok": true}))
		r.Calls("Linting.", fail("lint", obj{"paths": []string{"dateparse"}}, "invalid_args", out))
	}
	r.Write()
}

// --- a search reworded across synonyms ---

func rental(name string, eur float64) obj {
	return obj{"offer": name, "eur_day": eur, "pickup": "LIS T1"}
}

func carRentalSynonyms() {
	r := run("car-rental-synonyms", "a travel agent searches 'car rental Lisbon airport', 'automobile hire LIS terminal', 'vehicle lease Portela aerodrome', 'auto renting Humberto Delgado', ...; each answers the same three offers, reordered", true, "paraphrase_loop")
	r.Tool("offer_search", "read")
	qs := []string{"car rental Lisbon airport", "automobile hire LIS terminal", "vehicle lease Portela aerodrome", "auto renting Humberto Delgado", "motorcar hiring LPPT"}
	offers := []obj{rental("Fiat 500 or similar", 31), rental("VW Golf or similar", 44), rental("Renault Clio or similar", 36)}
	for i, q := range qs {
		if i == 3 {
			r.Then()
		}
		o := []obj{offers[i%3], offers[(i+1)%3], offers[(i+2)%3]}
		r.Calls("Searching offers.", ok("offer_search", obj{"q": q, "from": "2027-01-10", "to": "2027-01-14"}, obj{"offers": o}))
	}
	r.Write()
}

func carRentalSynonymsFind() {
	r := run("car-rental-synonyms-find", "a travel agent searches one rental across synonyms; each wording reaches another broker's offers", false, "query_refinement")
	r.Tool("offer_search", "read")
	qs := []string{"car rental Lisbon airport", "automobile hire LIS terminal", "vehicle lease Portela aerodrome", "van hire Lisbon"}
	for i, q := range qs {
		o := []obj{rental([]string{"Fiat 500", "Peugeot 208", "Toyota Yaris", "Ford Transit"}[i]+" or similar", 30+float64(i)*4), rental([]string{"VW Golf", "Seat Ibiza", "Kia Ceed", "Renault Trafic"}[i]+" or similar", 41+float64(i)*3)}
		r.Calls("Searching offers.", ok("offer_search", obj{"q": q, "from": "2027-01-10", "to": "2027-01-14"}, obj{"offers": o}))
	}
	r.Write()
}

func contractSearchSynonymsEmpty() {
	r := run("contract-search-synonyms-empty", "a legal agent searches a contract corpus for 'termination for convenience', 'cancel without cause', 'end agreement at will', 'discretionary exit right', 'walk-away clause'; each finds nothing", true, "paraphrase_loop")
	r.Tool("clause_search", "read")
	qs := []string{"termination for convenience", "cancel without cause", "end agreement at will", "discretionary exit right", "walk-away clause"}
	for i, q := range qs {
		if i == 3 {
			r.Then()
		}
		r.Calls("Searching the corpus.", ok("clause_search", obj{"query": q, "corpus": "supplier-msas-2026"}, obj{"hits": []obj{}, "total": 0}))
	}
	r.Write()
}

// --- reads whose only argument is a fresh request id ---

func inboxFreshRequestIDs() {
	r := run("inbox-fresh-request-ids", "an agent waits for a verification mail by checking an inbox, each call stamped only with a fresh request_id, the inbox empty each time", true, "noisy_repeat")
	r.Tool("check_inbox", "read")
	for i := 0; i < 5; i++ {
		if i == 2 {
			r.Then()
		}
		r.Calls("Any mail yet?", ok("check_inbox", obj{"request_id": reqID(300 + i)}, obj{"messages": []obj{}, "unread": 0, "request_id": reqID(300 + i)}))
	}
	r.Write()
}

func jobStatusRequestIDs() {
	r := run("job-status-request-ids", "an agent submitted three exports and asks each one's status by its request id; two are running, one is done", false, "batch_progress")
	r.Tool("export_status", "read")
	for i, st := range []string{"running", "running", "done"} {
		r.Calls("Export status.", ok("export_status", obj{"request_id": reqID(400 + i)}, obj{"state": st, "request_id": reqID(400 + i)}))
	}
	r.Calls("Status again, the first.", ok("export_status", obj{"request_id": reqID(400)}, obj{"state": "done", "request_id": reqID(400), "url": "https://exports.example/e/400.csv"}))
	r.Write()
}
