package loops

import (
	"fmt"
	"strings"
)

type arr = []any

const sxLRU = "/repo/pkg/cache/lru.go"

// sxView is the editor's view of lines from..to of a file at a version.
func sxView(path string, from, to, version int) string {
	var b strings.Builder
	fmt.Fprintf(&b, "Here's the result of running `cat -n` on %s:\n", path)
	for i := from; i <= to; i++ {
		fmt.Fprintf(&b, "%6d\t%s\n", i, sxLine(i, version))
	}
	return b.String()
}

func sxLine(i, version int) string {
	switch {
	case i == 44 && version > 0:
		return "\tif c.ll.Len() >= c.max {"
	case i == 44:
		return "\tif c.ll.Len() > c.max {"
	case i == 71 && version > 1:
		return "\t\tc.ll.MoveToFront(e)"
	case i == 71:
		return "\t\t_ = e // TODO: recency"
	}
	return fmt.Sprintf("\t// line %d of the cache: entry handling step %d", i, i*3)
}

func sxGoTest(pkg string, fails ...string) string {
	if len(fails) == 0 {
		return fmt.Sprintf("ok  \t%s\t0.0%02ds", pkg, 9+len(pkg)%7)
	}
	var b strings.Builder
	for _, f := range fails {
		b.WriteString(f + "\n")
	}
	fmt.Fprintf(&b, "FAIL\nFAIL\t%s\t0.0%02ds\nFAIL", pkg, 11+len(fails))
	return b.String()
}

func sxIssue(n int, title, state string, labels ...string) obj {
	ls := arr{}
	for _, l := range labels {
		ls = append(ls, obj{"name": l})
	}
	return obj{"number": n, "title": title, "state": state, "labels": ls, "user": obj{"login": fmt.Sprintf("user%d", n%17)},
		"comments": n % 5, "created_at": sxISO(n % 300), "html_url": fmt.Sprintf("https://github.com/acme/web/issues/%d", n)}
}

func sxMsg(user, text string, min int) obj {
	return obj{"type": "message", "user": user, "text": text, "ts": sxTS(min)}
}

func sxChunk(doc, text string, score float64) obj {
	return obj{"doc_id": doc, "text": text, "score": score, "source": "docs/" + doc + ".md"}
}

func sxOffer(id, carrier, dep string, price string) obj {
	return obj{"type": "flight-offer", "id": id, "numberOfBookableSeats": 4,
		"itineraries": arr{obj{"duration": "PT11H35M", "segments": arr{obj{"departure": obj{"iataCode": "CDG", "at": dep}, "arrival": obj{"iataCode": "JFK"}, "carrierCode": carrier}}}},
		"price":       obj{"currency": "EUR", "total": price}}
}

func sxMatrix(metric obj, start, step int, vals ...string) obj {
	var vs arr
	for i, v := range vals {
		vs = append(vs, arr{start + i*step, v})
	}
	return obj{"status": "success", "data": obj{"resultType": "matrix", "result": arr{obj{"metric": metric, "values": vs}}}}
}

func sxLogs(from int, lines ...string) obj {
	var vs arr
	for i, l := range lines {
		vs = append(vs, arr{fmt.Sprintf("17332%05d000000000", 38000+from+i*3), l})
	}
	return obj{"status": "success", "data": obj{"resultType": "streams", "result": arr{obj{"stream": obj{"app": "checkout", "namespace": "prod"}, "values": vs}}}}
}

func sixthRuns() []*sxRun {
	var runs []*sxRun
	add := func(w *sxw) { runs = append(runs, w.run) }

	// --- legit ---

	// A coding agent fixes a failing test: an edit that misses its text
	// once, the file viewed wider, two fixes, the tests re-run after each,
	// committed.
	{
		w := sxRunOf("coding-fix-two-failures", "coding", false).
			acc("write", "str_replace_editor", "execute_bash", "git_add", "git_commit")
		pkg := "github.com/acme/kv/pkg/cache"
		f1 := "--- FAIL: TestLRUEvictsOldest (0.00s)\n    lru_test.go:41: Get(\"a\") = 1, true; want evicted"
		f2 := "--- FAIL: TestLRUGetRefreshes (0.00s)\n    lru_test.go:77: after Get(\"a\") and Put(\"d\"), Get(\"b\") = 2, true; want evicted"
		w.t("Let me run the tests first.", sxOK("execute_bash", obj{"command": "cd /repo && go test ./pkg/cache/..."}, sxGoTest(pkg, f1, f2)))
		w.t("", sxOK("str_replace_editor", obj{"command": "view", "path": sxLRU, "view_range": arr{36, 52}}, sxView(sxLRU, 36, 52, 0)))
		w.t("The eviction check is off by one.", sxFail("str_replace_editor", obj{"command": "str_replace", "path": sxLRU, "old_str": "if c.ll.Len() > c.max {\n", "new_str": "if c.ll.Len() >= c.max {\n"}, "tool_error",
			"No replacement was performed, old_str `if c.ll.Len() > c.max {\n` did not appear verbatim in "+sxLRU+"."))
		w.t("", sxOK("str_replace_editor", obj{"command": "view", "path": sxLRU, "view_range": arr{40, 48}}, sxView(sxLRU, 40, 48, 0)))
		w.t("It is indented with a tab.", sxOK("str_replace_editor", obj{"command": "str_replace", "path": sxLRU, "old_str": "\tif c.ll.Len() > c.max {", "new_str": "\tif c.ll.Len() >= c.max {"},
			"The file "+sxLRU+" has been edited. Here's the result of running `cat -n` on a snippet of "+sxLRU+":\n    43\t\n    44\t\tif c.ll.Len() >= c.max {\n    45\t\t\tc.evictOldest()\nReview the changes and make sure they are as expected."))
		w.t("", sxOK("execute_bash", obj{"command": "cd /repo && go test ./pkg/cache/..."}, sxGoTest(pkg, f2)))
		w.t("", sxOK("str_replace_editor", obj{"command": "view", "path": sxLRU, "view_range": arr{64, 80}}, sxView(sxLRU, 64, 80, 1)))
		w.t("Get never refreshes recency.", sxOK("str_replace_editor", obj{"command": "str_replace", "path": sxLRU, "old_str": "\t\t_ = e // TODO: recency", "new_str": "\t\tc.ll.MoveToFront(e)"},
			"The file "+sxLRU+" has been edited. Here's the result of running `cat -n` on a snippet of "+sxLRU+":\n    70\t\tif e, ok := c.items[key]; ok {\n    71\t\t\tc.ll.MoveToFront(e)\n    72\t\t\treturn e.Value.(*entry).value, true\nReview the changes and make sure they are as expected."))
		w.t("", sxOK("execute_bash", obj{"command": "cd /repo && go test ./pkg/cache/..."}, sxGoTest(pkg)))
		w.t("", sxOK("execute_bash", obj{"command": "cd /repo && go test ./... && go vet ./..."}, "ok  \tgithub.com/acme/kv\t0.031s\nok  \tgithub.com/acme/kv/pkg/cache\t0.010s\nok  \tgithub.com/acme/kv/pkg/wal\t0.412s"))
		w.t("", sxOK("git_status", obj{"repo_path": "/repo"}, "On branch fix/lru-eviction\nChanges not staged for commit:\n\tmodified:   pkg/cache/lru.go"))
		w.t("", sxOK("git_diff_unstaged", obj{"repo_path": "/repo"}, "diff --git a/pkg/cache/lru.go b/pkg/cache/lru.go\n-\tif c.ll.Len() > c.max {\n+\tif c.ll.Len() >= c.max {\n-\t\t_ = e // TODO: recency\n+\t\tc.ll.MoveToFront(e)"))
		w.t("", sxOK("git_add", obj{"repo_path": "/repo", "files": arr{"pkg/cache/lru.go"}}, "Files staged successfully"))
		w.t("Committing.", sxOK("git_commit", obj{"repo_path": "/repo", "message": "cache: evict at capacity and refresh recency on Get"}, "Changes committed successfully with hash 4e1c9a7f2b"))
		add(w)
	}

	// A GitHub triager pages through open issues, reads the unlabelled
	// ones, searches for duplicates in other words that find others, and
	// labels and comments on each.
	{
		w := sxRunOf("github-triage-pages", "triage", false).acc("write", "update_issue", "add_issue_comment")
		titles := []string{"Login page blank on Safari 17", "Export to CSV drops unicode", "Dark mode toggle resets", "Webhook retries never stop", "Avatar upload 413", "Search ignores diacritics",
			"Invite email links expire early", "Billing page shows wrong currency", "Keyboard shortcut conflicts with Firefox", "Session expires during upload", "Sidebar flickers on resize", "API docs 404 for v2"}
		for page := 1; page <= 3; page++ {
			var items arr
			for i := 0; i < 4; i++ {
				n := 1400 - (page-1)*4 - i
				items = append(items, sxIssue(n, titles[(page-1)*4+i], "open"))
			}
			w.t("", sxOK("list_issues", obj{"owner": "acme", "repo": "web", "state": "open", "perPage": 4, "page": page, "sort": "created", "direction": "desc"}, items))
		}
		for i, n := range []int{1400, 1398, 1395} {
			w.t("", sxOK("get_issue", obj{"owner": "acme", "repo": "web", "issue_number": n}, obj{"number": n, "title": titles[[]int{0, 2, 5}[i]], "body": fmt.Sprintf("Steps to reproduce: open the app on build %d and ...", 880+i), "labels": arr{}, "state": "open"}))
			q := []string{"repo:acme/web is:issue safari blank page", "repo:acme/web is:issue dark mode setting lost", "repo:acme/web is:issue search accents"}[i]
			w.t("Checking for duplicates.", sxOK("search_issues", obj{"q": q, "perPage": 5}, obj{"total_count": 1 + i, "items": arr{sxIssue(900+i*37, "Older report: "+q[22:], "closed")}}))
			w.t("", sxOK("update_issue", obj{"owner": "acme", "repo": "web", "issue_number": n, "labels": arr{"bug", "needs-triage"}}, sxIssue(n, titles[[]int{0, 2, 5}[i]], "open", "bug", "needs-triage")))
			w.t("", sxOK("add_issue_comment", obj{"owner": "acme", "repo": "web", "issue_number": n, "body": fmt.Sprintf("Thanks for the report. This looks related to #%d; labelled for triage.", 900+i*37)}, obj{"id": 2210000 + n, "html_url": fmt.Sprintf("https://github.com/acme/web/issues/%d#issuecomment-%d", n, 2210000+n)}))
		}
		add(w)
	}

	// A Slack assistant digests a channel page by page, reads the threads
	// that have replies, waits for a teammate's answer (nothing, then
	// the answer), and posts the digest.
	{
		w := sxRunOf("slack-digest-and-wait", "slack", false).acc("write", "slack_post_message")
		w.t("", sxOK("slack_get_channel_history", obj{"channel_id": "C04ENG", "limit": 3}, obj{"ok": true, "messages": arr{sxMsg("U01ANA", "deploy of api 2.14 is done", 50), sxMsg("U02BOB", "anyone seeing 502s on /checkout?", 41), sxMsg("U03CAR", "standup notes in the doc", 30)},
			"has_more": true, "response_metadata": obj{"next_cursor": "bmV4dF90czoxNzMzMjQxMDAw"}}))
		w.t("", sxOK("slack_get_channel_history", obj{"channel_id": "C04ENG", "limit": 3, "cursor": "bmV4dF90czoxNzMzMjQxMDAw"}, obj{"ok": true, "messages": arr{sxMsg("U04DAN", "reminder: freeze starts friday", 21), sxMsg("U01ANA", "PR #88 needs a second review", 12)},
			"has_more": false, "response_metadata": obj{"next_cursor": ""}}))
		w.t("", sxOK("slack_get_thread_replies", obj{"channel_id": "C04ENG", "thread_ts": sxTS(41)}, obj{"ok": true, "messages": arr{sxMsg("U02BOB", "anyone seeing 502s on /checkout?", 41), sxMsg("U01ANA", "yes, since 9:40, looking", 43)}}))
		w.t("Asking Bob whether it is resolved.", sxOK("slack_post_message", obj{"channel_id": "C04ENG", "text": "@bob are the 502s on /checkout resolved? I am writing the morning digest."}, obj{"ok": true, "channel": "C04ENG", "ts": sxTS(55)}))
		w.t("", sxOK("slack_get_thread_replies", obj{"channel_id": "C04ENG", "thread_ts": sxTS(41)}, obj{"ok": true, "messages": arr{sxMsg("U02BOB", "anyone seeing 502s on /checkout?", 41), sxMsg("U01ANA", "yes, since 9:40, looking", 43)}}))
		w.t("", sxOK("slack_get_channel_history", obj{"channel_id": "C04ENG", "limit": 5, "oldest": sxTS(55)}, obj{"ok": true, "messages": arr{}, "has_more": false}))
		w.t("", sxOK("slack_get_channel_history", obj{"channel_id": "C04ENG", "limit": 5, "oldest": sxTS(55)}, obj{"ok": true, "messages": arr{sxMsg("U02BOB", "resolved at 10:02, bad pod drained", 58)}, "has_more": false}))
		w.t("Posting the digest.", sxOK("slack_post_message", obj{"channel_id": "C04DIGEST", "text": "Morning digest: api 2.14 deployed; 502s on /checkout 9:40-10:02, resolved; freeze Friday; PR #88 needs review."}, obj{"ok": true, "channel": "C04DIGEST", "ts": sxTS(60)}))
		add(w)
	}

	// A Linear assistant moves the sprint's done work: pages of issues, and
	// the same state set on each of several issues, a comment on each.
	{
		w := sxRunOf("linear-close-sprint", "linear", false).acc("write", "update_issue", "create_comment")
		ids := []string{"ENG-412", "ENG-415", "ENG-419", "ENG-420", "ENG-431"}
		w.t("", sxOK("list_issues", obj{"teamId": "team_eng", "cycle": "current", "first": 3}, obj{"nodes": arr{obj{"identifier": ids[0], "title": "Rate limiter per org", "state": "In Review"}, obj{"identifier": ids[1], "title": "Cache warmup on boot", "state": "In Review"}, obj{"identifier": ids[2], "title": "Drop legacy v1 routes", "state": "In Progress"}},
			"pageInfo": obj{"hasNextPage": true, "endCursor": "Y3Vyc29yOjM="}}))
		w.t("", sxOK("list_issues", obj{"teamId": "team_eng", "cycle": "current", "first": 3, "after": "Y3Vyc29yOjM="}, obj{"nodes": arr{obj{"identifier": ids[3], "title": "Retry budget metrics", "state": "In Review"}, obj{"identifier": ids[4], "title": "Audit log export", "state": "Todo"}},
			"pageInfo": obj{"hasNextPage": false, "endCursor": "Y3Vyc29yOjU="}}))
		for _, id := range []string{ids[0], ids[1], ids[3]} {
			w.t("", sxOK("update_issue", obj{"id": id, "stateId": "state_done"}, obj{"success": true, "issue": obj{"identifier": id, "state": obj{"name": "Done"}, "updatedAt": sxISO(30)}}))
			w.t("", sxOK("create_comment", obj{"issueId": id, "body": "Merged and deployed; closing with the sprint."}, obj{"success": true, "comment": obj{"id": "cmt_" + strings.ToLower(strings.ReplaceAll(id, "-", "")), "createdAt": sxISO(31)}}))
		}
		w.t("", sxOK("list_issues", obj{"teamId": "team_eng", "cycle": "current", "first": 10, "filter": obj{"state": obj{"type": obj{"neq": "completed"}}}}, obj{"nodes": arr{obj{"identifier": ids[2], "title": "Drop legacy v1 routes", "state": "In Progress"}, obj{"identifier": ids[4], "title": "Audit log export", "state": "Todo"}},
			"pageInfo": obj{"hasNextPage": false}}))
		add(w)
	}

	// A docs agent with a retriever: rewordings that each find other
	// chunks, the documents read, an answer.
	{
		w := sxRunOf("docs-qa-rewordings-find-more", "docs", false)
		w.t("", sxOK("vector_search", obj{"query": "how do I rotate an API key without downtime", "top_k": 3}, arr{sxChunk("auth/keys", "API keys can be created and revoked from the dashboard.", 0.81), sxChunk("auth/overview", "Every request is authenticated with a bearer key.", 0.74), sxChunk("faq", "Keys never expire unless revoked.", 0.70)}))
		w.t("The chunks do not mention overlap; another wording.", sxOK("vector_search", obj{"query": "two active keys at once during key rotation", "top_k": 3}, arr{sxChunk("auth/keys", "API keys can be created and revoked from the dashboard.", 0.79), sxChunk("auth/rotation", "Up to two keys may be active per project, so a new key can be deployed before the old one is revoked.", 0.77), sxChunk("changelog", "2025-06: second active key per project.", 0.66)}))
		w.t("", sxOK("fetch_document", obj{"doc_id": "auth/rotation"}, obj{"doc_id": "auth/rotation", "title": "Rotating keys", "content": "Up to two keys may be active per project.\n1. Create a second key.\n2. Deploy it everywhere.\n3. Revoke the first key once traffic on it stops (see the key's last_used_at)."}))
		w.t("", sxOK("vector_search", obj{"query": "last_used_at on an API key", "top_k": 3}, arr{sxChunk("api/keys-object", "last_used_at: the time of the last request made with the key, updated every 5 minutes.", 0.83), sxChunk("auth/rotation", "Revoke the first key once traffic on it stops (see the key's last_used_at).", 0.72)}))
		w.t("You can rotate without downtime: create a second key, deploy it, revoke the old one when last_used_at stops moving.")
		add(w)
	}

	// An analyst over CSV files through a pandas REPL: a column misnamed
	// once, then a sequence of different questions.
	{
		w := sxRunOf("csv-analyst-explores", "analyst", false)
		w.t("", sxOK("python_repl_ast", obj{"query": "df.head()"}, "     order_id        date region  revenue  units\n0  A-10001  2026-10-01     EU   129.90      3\n1  A-10002  2026-10-01     NA    54.00      1\n2  A-10003  2026-10-02   APAC   310.50      7"))
		w.t("", sxOK("python_repl_ast", obj{"query": "df.groupby('Region')['revenue'].sum()"}, "KeyError: 'Region'"))
		w.t("Lower case.", sxOK("python_repl_ast", obj{"query": "df.groupby('region')['revenue'].sum()"}, "region\nAPAC    48211.70\nEU      91822.15\nNA      77310.40\nName: revenue, dtype: float64"))
		w.t("", sxOK("python_repl_ast", obj{"query": "df['date'] = pd.to_datetime(df['date']); df.set_index('date').resample('W')['revenue'].sum().tail(4)"}, "date\n2026-11-08    15110.20\n2026-11-15    16902.75\n2026-11-22    14420.05\n2026-11-29    19981.60\nFreq: W-SUN, Name: revenue, dtype: float64"))
		w.t("", sxOK("python_repl_ast", obj{"query": "df[df.units > 20].sort_values('revenue', ascending=False).head(3)[['order_id','region','revenue']]"}, "     order_id region  revenue\n812  A-10813     EU  2140.00\n455  A-10456     NA  1988.40\n1203 A-11204   APAC  1710.25"))
		w.t("", sxOK("python_repl_ast", obj{"query": "df.revenue.describe()"}, "count    2410.000000\nmean       90.094871\nstd       121.330162\nmin         4.990000\n50%        54.000000\nmax      2140.000000\nName: revenue, dtype: float64"))
		add(w)
	}

	// A travel agent sweeping flexible dates: a rate limit twice, then
	// each date's offers, then hotels near the venue.
	{
		w := sxRunOf("travel-flexible-dates", "travel", false).retryable("flight_offers_search")
		args := func(d string) obj {
			return obj{"originLocationCode": "PAR", "destinationLocationCode": "NYC", "departureDate": d, "adults": 1, "max": 3, "currencyCode": "EUR"}
		}
		w.t("", sxFail("flight_offers_search", args("2027-01-14"), "rate_limited", "429 Too Many Requests: [38194] Quota exceeded, retry after 1s"))
		w.t("", sxFail("flight_offers_search", args("2027-01-14"), "rate_limited", "429 Too Many Requests: [38194] Quota exceeded, retry after 2s"))
		prices := [][]string{{"512.40", "538.10", "601.00"}, {"488.90", "512.40", "577.30"}, {"455.00", "530.60", "533.10"}, {"612.00", "640.80", "655.20"}}
		for i, d := range []string{"2027-01-14", "2027-01-15", "2027-01-16", "2027-01-17"} {
			var offers arr
			for j, c := range []string{"AF", "DL", "UA"} {
				offers = append(offers, sxOffer(fmt.Sprint(j+1), c, fmt.Sprintf("%sT%02d:%02d:00", d, 8+j*3, 10+i*5), prices[i][j]))
			}
			w.t("", sxOK("flight_offers_search", args(d), obj{"meta": obj{"count": 3}, "data": offers}))
		}
		w.t("", sxOK("hotel_list_by_city", obj{"cityCode": "NYC", "radius": 2, "radiusUnit": "KM", "ratings": arr{"4"}}, obj{"data": arr{obj{"hotelId": "HLNYC512", "name": "Midtown Lofts"}, obj{"hotelId": "MCNYC221", "name": "Bryant Park Inn"}}, "meta": obj{"count": 2}}))
		w.t("", sxOK("hotel_offers_search", obj{"hotelIds": "HLNYC512,MCNYC221", "checkInDate": "2027-01-16", "checkOutDate": "2027-01-19", "adults": 1}, obj{"data": arr{obj{"hotel": obj{"hotelId": "HLNYC512"}, "offers": arr{obj{"id": "OF7H2K", "price": obj{"total": "861.00"}}}}}}))
		add(w)
	}

	// A devops agent on an alert: an error rate queried over moving
	// windows, logs by other filters, a restart and the rollout polled
	// until ready.
	{
		w := sxRunOf("devops-restart-and-watch", "devops", false).acc("write", "resources_restart")
		expr := `sum(rate(http_requests_total{app="checkout",code=~"5.."}[5m])) / sum(rate(http_requests_total{app="checkout"}[5m]))`
		w.t("", sxOK("query_prometheus", obj{"datasourceUid": "prom-prod", "expr": expr, "startTime": "now-30m", "endTime": "now", "stepSeconds": 300, "queryType": "range"}, sxMatrix(obj{}, 1733238000, 300, "0.002", "0.003", "0.041", "0.087", "0.091", "0.094")))
		w.t("", sxOK("query_loki_logs", obj{"datasourceUid": "loki-prod", "logql": `{app="checkout",namespace="prod"} |= "error"`, "limit": 5}, sxLogs(1500, "level=error msg=\"dial tcp 10.2.4.17:5432: connect: connection refused\" pod=checkout-7f9c-x2k", "level=error msg=\"dial tcp 10.2.4.17:5432: connect: connection refused\" pod=checkout-7f9c-x2k", "level=error msg=\"pool exhausted\" pod=checkout-7f9c-x2k")))
		w.t("", sxOK("query_loki_logs", obj{"datasourceUid": "loki-prod", "logql": `{app="checkout",namespace="prod"} |= "error" != "checkout-7f9c-x2k"`, "limit": 5}, sxLogs(1490, "level=error msg=\"upstream timeout\" pod=checkout-7f9c-q8d")))
		w.t("", sxOK("pods_list", obj{"namespace": "prod", "labelSelector": "app=checkout"}, "NAME                READY   STATUS    RESTARTS   AGE\ncheckout-7f9c-x2k   1/1     Running   0          3d\ncheckout-7f9c-q8d   1/1     Running   0          3d\ncheckout-7f9c-m1z   1/1     Running   0          3d"))
		w.t("The pod holds stale DB connections; restarting the deployment.", sxOK("resources_restart", obj{"kind": "Deployment", "namespace": "prod", "name": "checkout"}, "deployment.apps/checkout restarted"))
		for i, st := range []string{"1 out of 3 new replicas have been updated", "2 out of 3 new replicas have been updated", "2 of 3 updated replicas are available", "1 old replicas are pending termination", "successfully rolled out"} {
			_ = i
			w.t("", sxOK("rollout_status_get", obj{"kind": "Deployment", "namespace": "prod", "name": "checkout"}, "Waiting for deployment \"checkout\" rollout to finish: "+st+"..."))
		}
		w.t("", sxOK("query_prometheus", obj{"datasourceUid": "prom-prod", "expr": expr, "startTime": "now-10m", "endTime": "now", "stepSeconds": 120, "queryType": "range"}, sxMatrix(obj{}, 1733239800, 120, "0.090", "0.031", "0.004", "0.002", "0.002")))
		add(w)
	}

	// A support agent refunds two customers: a transient failure of the
	// refund, retried once with its idempotency key, a comment on each.
	{
		w := sxRunOf("support-refunds-two-customers", "support", false).acc("write", "create_refund", "create_ticket_comment")
		for i, c := range []struct{ tk, cus, pi, amt string }{{"58812", "cus_Qk2LmA9", "pi_3QK7aL2eZvKYlo2C1xq", "4900"}, {"58817", "cus_Rb7TnE1", "pi_3QK8bM3fAwLZmp3D2yr", "12900"}} {
			w.t("", sxOK("get_ticket_comments", obj{"ticket_id": c.tk}, arr{obj{"author": "customer", "body": fmt.Sprintf("I was charged twice for order #%d, please refund one.", 77100+i*13), "created_at": sxISO(10 + i)}}))
			w.t("", sxOK("list_payment_intents", obj{"customer": c.cus, "limit": 3}, obj{"data": arr{obj{"id": c.pi, "amount": c.amt, "status": "succeeded", "created": 1733200000 + i}, obj{"id": c.pi + "b", "amount": c.amt, "status": "succeeded", "created": 1733200042 + i}}, "has_more": false}))
			if i == 0 {
				w.t("", sxFail("create_refund", obj{"payment_intent": c.pi + "b", "reason": "duplicate", "idempotency_key": "tk" + c.tk}, "unavailable", "503 Service Unavailable: the API is temporarily overloaded"))
			}
			w.t("", sxOK("create_refund", obj{"payment_intent": c.pi + "b", "reason": "duplicate", "idempotency_key": "tk" + c.tk}, obj{"id": "re_" + c.pi[3:15], "amount": c.amt, "status": "succeeded"}))
			w.t("", sxOK("create_ticket_comment", obj{"ticket_id": c.tk, "public": true, "body": "We've refunded the duplicate charge; it will appear on your statement in 5-10 business days."}, obj{"id": 900100 + i, "created_at": sxISO(20 + i)}))
		}
		add(w)
	}

	// A planner hands three different sub-tasks to a researcher, then a
	// follow-up once the first answers are in; a writer drafts.
	{
		w := sxRunOf("handoff-research-then-write", "multi-agent", false)
		w.hand("", "researcher", "Find the 2026 list prices of Acme Widgets' three plans", "Starter 19 EUR, Team 49 EUR, Enterprise on request (pricing page, Nov 2026).", func(s *sxw) {
			s.t("", sxOK("web_search_brave", obj{"query": "Acme Widgets pricing plans 2026"}, arr{obj{"title": "Pricing - Acme Widgets", "url": "https://acme.example/pricing", "description": "Starter 19 EUR, Team 49 EUR per seat, Enterprise: contact us"}}))
		})
		w.hand("", "researcher", "Find Globex's prices for comparable plans", "Globex Basic 15 USD, Pro 45 USD, Scale 99 USD (pricing page).", func(s *sxw) {
			s.t("", sxOK("web_search_brave", obj{"query": "Globex plans price per seat"}, arr{obj{"title": "Globex | Plans", "url": "https://globex.example/plans", "description": "Basic 15 USD, Pro 45 USD, Scale 99 USD per seat per month"}}))
		})
		w.hand("Enterprise has no price; ask for what is public.", "researcher", "What does Acme say about Enterprise discounts or minimum seats?", "Enterprise starts at 50 seats; annual billing only (Enterprise FAQ).", func(s *sxw) {
			s.t("", sxOK("web_search_brave", obj{"query": "Acme Widgets enterprise minimum seats annual"}, arr{obj{"title": "Enterprise FAQ", "url": "https://acme.example/enterprise/faq", "description": "Enterprise plans start at 50 seats and are billed annually."}}))
		})
		w.hand("", "writer", "Write a one-paragraph comparison from these figures: ...", "Draft: Acme's Team plan at 49 EUR per seat sits just above Globex Pro ...", nil)
		add(w)
	}

	// An analyst on SQL over files: a binder error fixed, then different
	// queries.
	{
		w := sxRunOf("duckdb-analyst-fixes-column", "analyst", false)
		w.t("", sxOK("list_tables", obj{}, arr{"orders", "customers", "refunds"}))
		w.t("", sxOK("describe_table", obj{"table": "orders"}, arr{obj{"column": "order_id", "type": "VARCHAR"}, obj{"column": "customer_id", "type": "VARCHAR"}, obj{"column": "ordered_at", "type": "TIMESTAMP"}, obj{"column": "total_cents", "type": "BIGINT"}}))
		w.t("", sxFail("query", obj{"sql": "SELECT date_trunc('month', order_date) m, sum(total) FROM orders GROUP BY 1 ORDER BY 1"}, "invalid_args", "Binder Error: Referenced column \"order_date\" not found in FROM clause!\nCandidate bindings: \"orders.ordered_at\""))
		w.t("", sxOK("query", obj{"sql": "SELECT date_trunc('month', ordered_at) m, sum(total_cents)/100.0 revenue FROM orders GROUP BY 1 ORDER BY 1"}, arr{obj{"m": "2026-09-01", "revenue": 81234.5}, obj{"m": "2026-10-01", "revenue": 90412.25}, obj{"m": "2026-11-01", "revenue": 97311.0}}))
		w.t("", sxOK("query", obj{"sql": "SELECT count(*) n, sum(r.amount_cents)/100.0 refunded FROM refunds r JOIN orders o USING (order_id) WHERE o.ordered_at >= '2026-11-01'"}, arr{obj{"n": 142, "refunded": 6120.4}}))
		w.t("", sxOK("query", obj{"sql": "SELECT c.country, count(*) FROM orders o JOIN customers c USING (customer_id) GROUP BY 1 ORDER BY 2 DESC LIMIT 3"}, arr{obj{"country": "DE", "count_star()": 811}, obj{"country": "FR", "count_star()": 604}, obj{"country": "US", "count_star()": 577}}))
		add(w)
	}

	// A Slack assistant finds a person through the paged user list, then
	// writes to them.
	{
		w := sxRunOf("slack-find-user-pages", "slack", false).acc("write", "slack_post_message")
		cur := ""
		for page, names := range [][]string{{"ana", "bob", "carla"}, {"dan", "eve", "farid"}, {"gus", "hana", "ines"}} {
			var ms arr
			for i, n := range names {
				ms = append(ms, obj{"id": fmt.Sprintf("U0%d%s", page*3+i, strings.ToUpper(n)), "name": n, "real_name": strings.Title(n) + " Example", "is_bot": false})
			}
			a := obj{"limit": 3}
			if cur != "" {
				a["cursor"] = cur
			}
			cur = fmt.Sprintf("dXNlcjpVMD%dQ", page+4)
			w.t("", sxOK("slack_get_users", a, obj{"ok": true, "members": ms, "response_metadata": obj{"next_cursor": cur}}))
		}
		w.t("", sxOK("slack_get_user_profile", obj{"user_id": "U07HANA"}, obj{"ok": true, "profile": obj{"real_name": "Hana Example", "title": "SRE lead", "tz": "Europe/Berlin"}}))
		w.t("", sxOK("slack_post_message", obj{"channel_id": "U07HANA", "text": "Hi Hana, the checkout post-mortem is scheduled for Thursday 14:00 CET; could you bring the pool metrics?"}, obj{"ok": true, "channel": "D07HANA", "ts": sxTS(90)}))
		add(w)
	}

	// A travel agent prices an offer whose price moved, searches again,
	// prices the new offer and books it.
	{
		w := sxRunOf("travel-reprice-then-book", "travel", false).acc("high_risk", "create_flight_order")
		args := obj{"originLocationCode": "PAR", "destinationLocationCode": "LIS", "departureDate": "2027-02-05", "adults": 2, "max": 2, "currencyCode": "EUR"}
		w.t("", sxOK("flight_offers_search", args, obj{"meta": obj{"count": 2}, "data": arr{sxOffer("1", "TP", "2027-02-05T07:10:00", "231.80"), sxOffer("2", "AF", "2027-02-05T12:40:00", "264.00")}}))
		w.t("", sxOK("flight_offers_price", obj{"flightOffers": arr{obj{"id": "1", "carrier": "TP", "total": "231.80"}}}, obj{"warnings": arr{obj{"code": 0, "title": "PRICE HAS CHANGED", "detail": "New total 259.40"}}, "data": obj{"flightOffers": arr{obj{"id": "1", "price": obj{"total": "259.40"}}}}}))
		w.t("The price moved; searching again.", sxOK("flight_offers_search", args, obj{"meta": obj{"count": 2}, "data": arr{sxOffer("1", "TP", "2027-02-05T07:10:00", "259.40"), sxOffer("2", "AF", "2027-02-05T12:40:00", "247.10")}}))
		w.t("", sxOK("flight_offers_price", obj{"flightOffers": arr{obj{"id": "2", "carrier": "AF", "total": "247.10"}}}, obj{"data": obj{"flightOffers": arr{obj{"id": "2", "price": obj{"total": "247.10"}}}, "bookingRequirements": obj{"emailAddressRequired": true}}}))
		w.t("", sxFail("create_flight_order", obj{"offerId": "2", "travelers": arr{obj{"id": "1", "name": "ANA SILVA"}, obj{"id": "2", "name": "RUI SILVA"}}}, "invalid_args", "INVALID FORMAT: contact emailAddress is required"))
		w.t("", sxOK("create_flight_order", obj{"offerId": "2", "travelers": arr{obj{"id": "1", "name": "ANA SILVA"}, obj{"id": "2", "name": "RUI SILVA"}}, "contacts": arr{obj{"emailAddress": "ana@example.com"}}}, obj{"data": obj{"id": "eJzTd9f3NjIJdzUAAAtXAmE%3D", "associatedRecords": arr{obj{"reference": "KXR4TL"}}}}))
		add(w)
	}

	// --- loops ---

	// The edit that misses its text, tried again and again in other
	// spellings (spaces for the tab, the line's neighbour, a trailing
	// comment) without viewing the file again.
	{
		w := sxRunOf("coding-edit-misses-verbatim", "coding", true).acc("write", "str_replace_editor", "execute_bash")
		w.t("", sxOK("execute_bash", obj{"command": "cd /repo && go test ./pkg/cache/ -run TestLRUEvictsOldest"}, sxGoTest("github.com/acme/kv/pkg/cache", "--- FAIL: TestLRUEvictsOldest (0.00s)\n    lru_test.go:41: Get(\"a\") = 1, true; want evicted")))
		miss := func(old string) sxCall {
			return sxFail("str_replace_editor", obj{"command": "str_replace", "path": sxLRU, "old_str": old, "new_str": strings.Replace(old, ">", ">=", 1)}, "tool_error",
				"No replacement was performed, old_str `"+old+"` did not appear verbatim in "+sxLRU+".")
		}
		w.t("", miss("if c.ll.Len() > c.maxEntries {"))
		w.t("Maybe with its indentation.", miss("    if c.ll.Len() > c.maxEntries {"))
		w.t("Maybe the surrounding lines.", miss("    // evict\n    if c.ll.Len() > c.maxEntries {"))
		w.then().t("Trying once more with the exact line.", miss("if c.ll.Len() > c.maxEntries { // evict oldest"))
		w.t("", miss("\tif c.ll.Len() > c.maxEntries {"))
		w.t("", miss("if (c.ll.Len() > c.maxEntries) {"))
		add(w)
	}

	// Two fixes tried in turn, each edit applied and the same test
	// failing the same way, round after round.
	{
		w := sxRunOf("coding-flip-flop-fixes", "coding", true).acc("write", "str_replace_editor", "execute_bash")
		a := obj{"command": "str_replace", "path": sxLRU, "old_str": "\tif c.ll.Len() > c.max {", "new_str": "\tif c.ll.Len() >= c.max {"}
		b := obj{"command": "str_replace", "path": sxLRU, "old_str": "\tif c.ll.Len() >= c.max {", "new_str": "\tif c.ll.Len() > c.max {"}
		edited := func(line string) string {
			return "The file " + sxLRU + " has been edited. Here's the result of running `cat -n` on a snippet of " + sxLRU + ":\n    44\t" + line + "\n    45\t\t\tc.evictOldest()\nReview the changes and make sure they are as expected."
		}
		test := obj{"command": "cd /repo && go test ./pkg/cache/..."}
		fa := "--- FAIL: TestLRUGetRefreshes (0.00s)\n    lru_test.go:77: Get(\"b\") = 2, true; want evicted"
		fb := "--- FAIL: TestLRUEvictsOldest (0.00s)\n    lru_test.go:41: Get(\"a\") = 1, true; want evicted"
		for round := 0; round < 4; round++ {
			if round == 2 {
				w.then()
			}
			w.t("Trying >= instead.", sxOK("str_replace_editor", a, edited("\tif c.ll.Len() >= c.max {")))
			w.t("", sxOK("execute_bash", test, sxGoTest("github.com/acme/kv/pkg/cache", fa)))
			w.t("That broke the other test; reverting to >.", sxOK("str_replace_editor", b, edited("\tif c.ll.Len() > c.max {")))
			w.t("", sxOK("execute_bash", test, sxGoTest("github.com/acme/kv/pkg/cache", fb)))
		}
		add(w)
	}

	// A triager looking for a duplicate rewords its search, and every
	// wording finds the same three issues.
	{
		w := sxRunOf("github-dup-search-reworded", "triage", true)
		same := obj{"total_count": 3, "incomplete_results": false, "items": arr{sxIssue(1211, "Redirect loop after SSO login", "closed"), sxIssue(1302, "Login redirects to /login again", "open"), sxIssue(977, "OAuth callback drops state", "closed")}}
		w.t("", sxOK("get_issue", obj{"owner": "acme", "repo": "web", "issue_number": 1412}, obj{"number": 1412, "title": "Stuck on login after password reset", "body": "After resetting my password I am sent back to the login page forever.", "state": "open"}))
		qs := []string{"repo:acme/web is:issue login redirect loop", "repo:acme/web is:issue redirected back to login page", "repo:acme/web is:issue stuck on login after reset", "repo:acme/web is:issue endless login redirect password", "repo:acme/web is:issue sign in loops back"}
		for i, q := range qs {
			if i == 3 {
				w.then()
			}
			w.t("None is exactly this; another wording.", sxOK("search_issues", obj{"q": q, "perPage": 10}, same))
		}
		add(w)
	}

	// A Slack assistant posts one announcement, and posts it again and
	// again: the tool's answer does not say what it expects.
	{
		w := sxRunOf("slack-announcement-reposted", "slack", true).acc("write", "slack_post_message")
		text := "Reminder: the code freeze starts Friday 18:00 CET. Please merge by then."
		for i := 0; i < 6; i++ {
			if i == 3 {
				w.then()
			}
			w.t("Posting the reminder to #eng.", sxOK("slack_post_message", obj{"channel_id": "C04ENG", "text": text}, obj{"ok": true, "channel": "C04ENG", "ts": sxTS(100 + i)}))
		}
		add(w)
	}

	// A Linear assistant sets an issue In Progress; an automation puts it
	// back; it sets it again, reads it, and so on.
	{
		w := sxRunOf("linear-state-reverted", "linear", true).acc("write", "update_issue")
		for round := 0; round < 5; round++ {
			if round == 3 {
				w.then()
			}
			w.t("Moving ENG-440 to In Progress.", sxOK("update_issue", obj{"id": "ENG-440", "stateId": "state_inprogress"}, obj{"success": true, "issue": obj{"identifier": "ENG-440", "state": obj{"name": "In Progress"}}}))
			w.t("", sxOK("get_issue", obj{"id": "ENG-440"}, obj{"identifier": "ENG-440", "title": "Backfill audit events", "state": obj{"name": "Todo"}, "history": "moved to Todo by Automation: blocked by ENG-438"}))
		}
		add(w)
	}

	// A docs agent widens its retriever, which caps its answers at five:
	// every wider call returns the same five chunks.
	{
		w := sxRunOf("docs-top-k-capped", "docs", true)
		five := arr{sxChunk("sso/saml", "SAML SSO is available on the Enterprise plan.", 0.82), sxChunk("sso/oidc", "OIDC providers: Okta, Entra ID, Google.", 0.79), sxChunk("sso/scim", "SCIM provisioning syncs users hourly.", 0.71), sxChunk("faq", "SSO cannot be enforced for owners.", 0.66), sxChunk("changelog", "2025-03: SCIM groups.", 0.60)}
		w.t("", sxOK("vector_search", obj{"query": "does SSO support just-in-time provisioning", "top_k": 3}, five[:3]))
		for i, k := range []int{5, 10, 20, 40, 80} {
			if i == 3 {
				w.then()
			}
			w.t("Not there; widening.", sxOK("vector_search", obj{"query": "does SSO support just-in-time provisioning", "top_k": k}, five))
		}
		add(w)
	}

	// A pandas agent on a column that does not exist ('Date', the header
	// is 'date '): each attempt answers the same KeyError as text.
	{
		w := sxRunOf("csv-keyerror-as-text", "analyst", true)
		w.t("", sxOK("python_repl_ast", obj{"query": "df.columns.tolist()[:4]"}, "['order_id', 'date ', 'region', 'revenue']"))
		for i, q := range []string{"df['Date'].min(), df['Date'].max()", "pd.to_datetime(df['Date']).dt.month.value_counts()", "df.groupby('Date')['revenue'].sum().head()", "df.set_index('Date').resample('M')['revenue'].sum()", "df.sort_values('Date').tail()", "df['Date'].dtype"} {
			if i == 3 {
				w.then()
			}
			w.t("", sxOK("python_repl_ast", obj{"query": q}, "KeyError: 'Date'"))
		}
		add(w)
	}

	// A travel agent asks one hotel for rooms on one stay, changing only
	// options that cannot create a room (currency, rate, payment policy).
	{
		w := sxRunOf("travel-no-rooms-cosmetic", "travel", true)
		no := obj{"data": arr{}, "warnings": arr{obj{"code": 3664, "title": "NO ROOMS AVAILABLE AT REQUESTED PROPERTY", "detail": "No availability for the requested dates", "source": obj{"parameter": "hotelIds", "pointer": "MCNYC221"}}}}
		base := func(extra obj) obj {
			a := obj{"hotelIds": "MCNYC221", "checkInDate": "2027-01-16", "checkOutDate": "2027-01-19", "adults": 1}
			for k, v := range extra {
				a[k] = v
			}
			return a
		}
		for i, ex := range []obj{{}, {"currency": "USD"}, {"bestRateOnly": false}, {"paymentPolicy": "NONE"}, {"currency": "EUR", "bestRateOnly": true}, {"roomQuantity": 1}} {
			if i == 3 {
				w.then()
			}
			w.t("", sxOK("hotel_offers_search", base(ex), no))
		}
		add(w)
	}

	// A devops agent asks the same range of the same series, the label
	// matchers reordered and spaced, and gets the same matrix each time.
	{
		w := sxRunOf("devops-promql-respelled", "devops", true)
		m := sxMatrix(obj{"app": "checkout"}, 1733238000, 300, "0.41", "0.43", "0.40", "0.44")
		for i, e := range []string{`histogram_quantile(0.99, sum by (le) (rate(http_request_duration_seconds_bucket{app="checkout",route="/pay"}[5m])))`,
			`histogram_quantile(0.99, sum by (le) (rate(http_request_duration_seconds_bucket{route="/pay",app="checkout"}[5m])))`,
			`histogram_quantile(0.99, sum by(le)(rate(http_request_duration_seconds_bucket{app="checkout", route="/pay"}[5m])))`,
			`histogram_quantile(0.99,sum(rate(http_request_duration_seconds_bucket{app="checkout",route="/pay"}[5m])) by (le))`,
			`histogram_quantile(0.99, sum by (le) (rate(http_request_duration_seconds_bucket{app="checkout",route=~"/pay"}[5m])))`} {
			if i == 3 {
				w.then()
			}
			w.t("", sxOK("query_prometheus", obj{"datasourceUid": "prom-prod", "expr": e, "startTime": "2026-12-03T09:00:00Z", "endTime": "2026-12-03T09:20:00Z", "stepSeconds": 300, "queryType": "range"}, m))
		}
		add(w)
	}

	// A devops agent "pages" backwards through logs but sends an end after
	// the last line it has, so it gets the same lines each time.
	{
		w := sxRunOf("devops-logs-same-page", "devops", true)
		page := sxLogs(1800, "level=error msg=\"pool exhausted\" pod=checkout-7f9c-x2k", "level=warn msg=\"slow query 2.1s\" pod=checkout-7f9c-x2k", "level=error msg=\"dial tcp 10.2.4.17:5432: connect: connection refused\" pod=checkout-7f9c-x2k")
		for i, end := range []string{"2026-12-03T10:00:00Z", "2026-12-03T10:05:00Z", "2026-12-03T10:10:00Z", "2026-12-03T10:12:30Z", "2026-12-03T10:20:00Z"} {
			if i == 3 {
				w.then()
			}
			w.t("Next page of older lines.", sxOK("query_loki_logs", obj{"datasourceUid": "loki-prod", "logql": `{app="checkout"} |~ "error|warn"`, "limit": 3, "endRfc3339": end, "direction": "backward"}, page))
		}
		add(w)
	}

	// A support agent refunds a charge already refunded, and keeps trying
	// with the amount, the reason and the charge's other id.
	{
		w := sxRunOf("support-refund-already-refunded", "support", true).acc("write", "create_refund")
		msg := func(ch string) string {
			return "Charge " + ch + " has already been refunded. (request req_" + ch[3:11] + "x)"
		}
		for i, a := range []obj{{"payment_intent": "pi_3QK9cN4gBxMZnq4E3zs"}, {"payment_intent": "pi_3QK9cN4gBxMZnq4E3zs", "amount": 4900}, {"charge": "ch_3QK9cN4gBxMZnq4E0ab", "reason": "requested_by_customer"},
			{"payment_intent": "pi_3QK9cN4gBxMZnq4E3zs", "reason": "duplicate", "amount": 4900}, {"charge": "ch_3QK9cN4gBxMZnq4E0ab"}, {"payment_intent": "pi_3QK9cN4gBxMZnq4E3zs", "metadata": obj{"ticket": "58820"}}} {
			if i == 3 {
				w.then()
			}
			w.t("", sxFail("create_refund", a, "invalid_args", msg("ch_3QK9cN4gBxMZnq4E0ab")))
		}
		add(w)
	}

	// A triage agent hands a refund to billing, which hands it back as a
	// shipping question; the triage agent rewords and hands it over again.
	{
		w := sxRunOf("handoff-billing-bounces", "multi-agent", true)
		tasks := []string{"Customer on order 88412 wants a refund for a parcel that never arrived", "Refund order 88412: the parcel was never delivered", "Please process a refund for order 88412, not delivered", "Order 88412 was not delivered; issue the refund", "Issue a refund on 88412 (lost in delivery)"}
		for i, task := range tasks {
			if i == 2 {
				w.then()
			}
			w.hand("Transferring to billing.", "billing_agent", task, "I can't refund an undelivered order until shipping confirms the loss. Transfer to the shipping agent.", func(s *sxw) {
				s.t("", sxOK("lookup_order", obj{"order_id": "88412"}, obj{"order_id": "88412", "status": "in_transit", "carrier": "DHL", "amount": "59.90"}))
			})
		}
		add(w)
	}

	// A git agent commits: nothing staged, so it stages the same file
	// (already committed) and commits again, round after round.
	{
		w := sxRunOf("git-nothing-to-commit", "coding", true).acc("write", "git_add", "git_commit")
		for round := 0; round < 5; round++ {
			if round == 3 {
				w.then()
			}
			w.t("Staging the fix.", sxOK("git_add", obj{"repo_path": "/repo", "files": arr{"pkg/cache/lru.go"}}, "Files staged successfully"))
			w.t("", sxFail("git_commit", obj{"repo_path": "/repo", "message": "cache: evict at capacity"}, "tool_error", "On branch fix/lru-eviction\nnothing to commit, working tree clean"))
		}
		add(w)
	}

	return runs
}
