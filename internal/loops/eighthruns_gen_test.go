package loops

import (
	"fmt"
	"strings"
)

func eighthRuns() []*asRun {
	var runs []*asRun
	add := func(w *asw) { runs = append(runs, w.run) }

	// --- legit ---

	// A support agent finds no customer under the address on the ticket,
	// then finds one under the work address the ticket's signature gives,
	// and refunds its payment.
	{
		w := asRunOf("support-second-address-found", "support", false).acc("write", "create_refund")
		w.t("", asOK("get_ticket", obj{"ticket_id": 88231}, egJSON(obj{"id": 88231, "subject": "Charged twice for December", "requester": "j.doe@gmail.example", "description": "I was charged twice. -- Jane Doe, Finance, Parsec Ltd (jane.doe@parsec.example)", "status": "open"})))
		w.t("", asOK("list_customers", obj{"email": "j.doe@gmail.example", "limit": 3}, egJSON(egCustomers())))
		w.t("The signature has a work address.", asOK("list_customers", obj{"email": "jane.doe@parsec.example", "limit": 3}, egJSON(egCustomers(egCustomer("cus_RQx81fTz2LmA0b", "jane.doe@parsec.example", "Jane Doe", 311)))))
		w.t("", asOK("list_payment_intents", obj{"customer": "cus_RQx81fTz2LmA0b", "limit": 5}, egJSON(obj{"object": "list", "data": arr{obj{"id": "pi_3QJx0a2eZvKYlo2C1", "amount": 4900, "status": "succeeded", "created": 1764801000}, obj{"id": "pi_3QJx0b2eZvKYlo2C7", "amount": 4900, "status": "succeeded", "created": 1764801004}}})))
		w.t("The second is the duplicate.", asOK("create_refund", obj{"payment_intent": "pi_3QJx0b2eZvKYlo2C7", "amount": 4900}, egJSON(egRefund("re_3QJy9c2eZvKYlo2C0", "pi_3QJx0b2eZvKYlo2C7", 4900, 12))))
		w.t("", asOK("update_ticket", obj{"ticket_id": 88231, "status": "solved", "comment": "Refunded the duplicate charge of EUR 49.00."}, egJSON(obj{"id": 88231, "status": "solved"})))
		add(w)
	}

	// A support agent refunds six duplicate charges of one batch job: the
	// same call, the same answer's shape, another payment each time.
	{
		w := asRunOf("support-batch-refunds", "support", false).acc("write", "create_refund")
		pis := []string{"pi_3QK00a2eZvKYlo2C4", "pi_3QK00f2eZvKYlo2D1", "pi_3QK01k2eZvKYlo2E9", "pi_3QK02m2eZvKYlo2F3", "pi_3QK03q2eZvKYlo2G8", "pi_3QK04t2eZvKYlo2H2"}
		w.t("", asOK("list_payment_intents", obj{"created": obj{"gte": 1764806400}, "limit": 20}, egJSON(obj{"object": "list", "data": pis})))
		for i, pi := range pis {
			w.t("", asOK("create_refund", obj{"payment_intent": pi, "reason": "duplicate"}, egJSON(egRefund(fmt.Sprintf("re_3QK1%02da2eZvKYlo%03d", i*3, 100+i*37), pi, 1900, i*2))))
		}
		add(w)
	}

	// A filesystem agent maps a repository: one directory after another,
	// each listing alike in shape, then reads the files it needs.
	{
		w := asRunOf("fs-walk-tree", "filesystem", false)
		dirs := []struct{ p, ls string }{
			{"/srv/app", egDir("[DIR] cmd", "[DIR] internal", "[DIR] config", "[FILE] go.mod", "[FILE] go.sum", "[FILE] README.md")},
			{"/srv/app/cmd", egDir("[DIR] api", "[DIR] worker", "[DIR] migrate")},
			{"/srv/app/cmd/api", egDir("[FILE] main.go", "[FILE] flags.go")},
			{"/srv/app/cmd/worker", egDir("[FILE] main.go")},
			{"/srv/app/internal", egDir("[DIR] http", "[DIR] queue", "[DIR] store")},
			{"/srv/app/internal/queue", egDir("[FILE] worker.go", "[FILE] worker_test.go", "[FILE] backoff.go")},
			{"/srv/app/config", egDir("[FILE] app.yaml", "[FILE] app.dev.yaml", "[FILE] app.prod.yaml")},
		}
		for _, d := range dirs {
			w.t("", asOK("list_directory", obj{"path": d.p}, d.ls))
		}
		for i, f := range []string{"app.yaml", "app.dev.yaml", "app.prod.yaml"} {
			w.t("", asOK("read_text_file", obj{"path": "/srv/app/config/" + f}, fmt.Sprintf("queue:\n  workers: %d\n  backoff: %ds\nhttp:\n  addr: \":%d\"\n", []int{4, 1, 16}[i], []int{5, 1, 30}[i], 8080+i)))
		}
		add(w)
	}

	// A filesystem agent reads a file, edits it, reads it again: the same
	// path read three times, changed each time.
	{
		w := asRunOf("fs-read-edit-read", "filesystem", false).acc("write", "edit_file", "write_file")
		cfg := func(workers, backoff int, jitter bool) string {
			s := fmt.Sprintf("queue:\n  workers: %d\n  backoff: %ds\n", workers, backoff)
			if jitter {
				s += "  jitter: true\n"
			}
			return s + "http:\n  addr: \":8080\"\n"
		}
		w.t("", asOK("read_text_file", obj{"path": "config/app.yaml"}, cfg(4, 5, false)))
		w.t("", asOK("edit_file", obj{"path": "config/app.yaml", "edits": arr{obj{"oldText": "workers: 4", "newText": "workers: 8"}}}, "```diff\n--- config/app.yaml\toriginal\n+++ config/app.yaml\tmodified\n@@ -1,3 +1,3 @@\n queue:\n-  workers: 4\n+  workers: 8\n```"))
		w.t("", asOK("read_text_file", obj{"path": "config/app.yaml"}, cfg(8, 5, false)))
		w.t("", asOK("edit_file", obj{"path": "config/app.yaml", "edits": arr{obj{"oldText": "  backoff: 5s\n", "newText": "  backoff: 2s\n  jitter: true\n"}}}, "```diff\n--- config/app.yaml\toriginal\n+++ config/app.yaml\tmodified\n@@ -2,2 +2,3 @@\n-  backoff: 5s\n+  backoff: 2s\n+  jitter: true\n```"))
		w.t("", asOK("read_text_file", obj{"path": "config/app.yaml"}, cfg(8, 2, true)))
		add(w)
	}

	// A filesystem agent searches for env files: the first glob finds
	// nothing, a wider one finds two.
	{
		w := asRunOf("fs-glob-widened-finds", "filesystem", false)
		w.t("", asOK("search_files", obj{"path": "/srv/app", "pattern": "*.env"}, "No matches found"))
		w.t("Dotfiles start with the dot.", asOK("search_files", obj{"path": "/srv/app", "pattern": "**/.env*"}, "/srv/app/.env.example\n/srv/app/deploy/.env.prod"))
		w.t("", asOK("read_text_file", obj{"path": "/srv/app/deploy/.env.prod"}, "DATABASE_URL=postgres://app@db:5432/app\nQUEUE_WORKERS=16\n"))
		add(w)
	}

	// A GitHub agent reads a repository's history page after page: thirty
	// commits each, alike in shape, all others.
	{
		w := asRunOf("github-commits-paged", "github", false)
		for p := 1; p <= 6; p++ {
			w.t("", asOK("list_commits", obj{"owner": "acme", "repo": "api", "sha": "main", "page": p, "perPage": 30}, egCommits(p-1, 30)))
		}
		w.t("", asOK("get_commit", obj{"owner": "acme", "repo": "api", "sha": "b3c1d9e2"}, egJSON(obj{"sha": "b3c1d9e2", "files": arr{obj{"filename": "internal/queue/worker.go", "additions": 14, "deletions": 3}}})))
		add(w)
	}

	// A GitHub agent's pull request is refused (no commits between the
	// branches); it pushes the commit and opens it.
	{
		w := asRunOf("github-pr-after-push", "github", false).acc("write", "create_pull_request", "push_files")
		pr := obj{"owner": "acme", "repo": "api", "title": "queue: bound the retry budget", "head": "fix/retry-budget", "base": "main", "body": "Caps retries at the configured budget."}
		w.t("", asFail("create_pull_request", pr, "tool_error", "failed to create pull request: POST https://api.github.com/repos/acme/api/pulls: 422 Validation Failed [{Resource:PullRequest Field: Code:custom Message:No commits between main and fix/retry-budget}]"))
		w.t("The branch has no commit yet; pushing the change.", asOK("push_files", obj{"owner": "acme", "repo": "api", "branch": "fix/retry-budget", "message": "queue: bound the retry budget", "files": arr{obj{"path": "internal/queue/worker.go", "content": "package queue\n// ..."}}},
			egJSON(obj{"ref": "refs/heads/fix/retry-budget", "object": obj{"sha": "5d41402abc4b2a76b9719d911017c592a1b2c3d4"}})))
		w.t("", asOK("create_pull_request", pr, egJSON(obj{"number": 2412, "state": "open", "html_url": "https://github.com/acme/api/pull/2412", "head": obj{"ref": "fix/retry-budget"}})))
		add(w)
	}

	// A GitHub agent looks for related issues in other words, each search
	// finding others, then comments on one.
	{
		w := asRunOf("github-search-issues-finds-new", "github", false).acc("write", "add_issue_comment")
		w.t("", asOK("search_issues", obj{"query": "repo:acme/api is:issue retry storm"}, egIssues(egIssue(2301, "Retry storm after pg failover", "open", 4, "2026-12-01T10:02:00Z"))))
		w.t("", asOK("search_issues", obj{"query": "repo:acme/api is:issue backoff jitter"}, egIssues(egIssue(1877, "Add jitter to queue backoff", "closed", 9, "2026-08-14T08:40:00Z"), egIssue(2110, "Backoff resets on restart", "open", 2, "2026-10-30T16:11:00Z"))))
		w.t("", asOK("search_issues", obj{"query": "repo:acme/api is:issue label:incident queue"}, egIssues(egIssue(2290, "Incident: queue backlog 2026-11-28", "closed", 12, "2026-11-29T09:00:00Z"))))
		w.t("", asOK("add_issue_comment", obj{"owner": "acme", "repo": "api", "issue_number": 2301, "body": "Likely the same as #2110 and #2290; fix in #2412."}, egJSON(obj{"id": 2519938811, "html_url": "https://github.com/acme/api/issues/2301#issuecomment-2519938811"})))
		add(w)
	}

	// A memory-graph agent records what it learns: eight entities alike in
	// shape, then observations added to one entity, new each time.
	{
		w := asRunOf("memory-graph-build", "memory", false).acc("write", "create_entities", "add_observations", "create_relations")
		people := []string{"Ana Ruiz", "Bo Lindqvist", "Chen Wei", "Dee Okafor", "Eli Navarro", "Fay Moreau", "Gus Tanaka", "Hal Berger"}
		for i, p := range people {
			e := obj{"name": p, "entityType": "person", "observations": arr{"works at Acme", []string{"backend", "frontend", "data", "sre"}[i%4] + " team", fmt.Sprintf("joined 20%02d", 18+i)}}
			w.t("", asOK("create_entities", obj{"entities": arr{e}}, egJSON(arr{e})))
		}
		for _, o := range []string{"prefers async standups", "on call the week of 2026-12-07", "owns the billing service", "speaks Spanish and German"} {
			w.t("", asOK("add_observations", obj{"observations": arr{obj{"entityName": "Ana Ruiz", "contents": arr{o}}}}, egJSON(arr{obj{"entityName": "Ana Ruiz", "addedObservations": arr{o}}})))
		}
		w.t("", asOK("create_relations", obj{"relations": arr{obj{"from": "Ana Ruiz", "to": "Chen Wei", "relationType": "mentors"}}}, egJSON(arr{obj{"from": "Ana Ruiz", "to": "Chen Wei", "relationType": "mentors"}})))
		add(w)
	}

	// A booking agent polls a waitlist: the same question, the position
	// falling, then a room. (As first written the position stayed at 5 for
	// two polls: the benchmark's rule lets the third identical poll be
	// refused, so that was no legit run.)
	{
		w := asRunOf("booking-waitlist-moves", "travel", false).acc("write", "book_room")
		for i, pos := range []int{5, 4, 3, 2, 1, 0} {
			rooms := []obj{{"type": "double", "available": 0, "waitlist_position": pos}}
			if pos == 0 {
				rooms = []obj{{"type": "double", "available": 1, "rate": obj{"amount": 168.0, "currency": "EUR"}, "offer_id": "OF-77Q2X9"}}
			}
			w.t("Checking the waitlist.", asOK("check_availability", obj{"hotel_id": "HTL-LIS-0412", "checkin": "2026-12-18", "checkout": "2026-12-20", "guests": 2}, egAvail("HTL-LIS-0412", fmt.Sprintf("2026-12-04T15:%02d:11Z", 2+i*10), rooms...)))
		}
		w.t("", asOK("book_room", obj{"offer_id": "OF-77Q2X9", "guest": "Jane Doe"}, egJSON(obj{"booking_id": "BK-5510902", "status": "confirmed"})))
		add(w)
	}

	// A notebook agent fixes a cell: each edit changes the error, then it
	// runs.
	{
		w := asRunOf("notebook-edit-fixes", "data", false).acc("write", "overwrite_cell_source")
		srcs := []string{"df = pd.read_csv('orders.csv')\ndf['day'] = pd.to_datetime(df.created)\ndf.groupby('day').amount.sum()",
			"df = pd.read_csv('orders.csv')\ndf['day'] = pd.to_datetime(df.created_at)\ndf.groupby('day').amount.sum()",
			"df = pd.read_csv('orders.csv')\ndf['day'] = pd.to_datetime(df.created_at).dt.date\ndf.groupby('day').amount_eur.sum()",
			"df = pd.read_csv('orders.csv')\ndf['day'] = pd.to_datetime(df.created_at).dt.date\ndf.groupby('day').total.sum()"}
		outs := []string{egPyTrace(7, []string{"File pandas/core/generic.py:6299, in NDFrame.__getattr__(self, name)"}, "AttributeError: 'DataFrame' object has no attribute 'created'"),
			egPyTrace(8, []string{"File pandas/core/groupby/generic.py:1951, in DataFrameGroupBy.__getitem__(self, key)"}, "KeyError: 'Column not found: amount'"),
			egPyTrace(9, []string{"File pandas/core/groupby/generic.py:1951, in DataFrameGroupBy.__getitem__(self, key)"}, "KeyError: 'Column not found: amount_eur'"),
			"day\n2026-12-01    41822.10\n2026-12-02    39107.55\n2026-12-03    44310.02\nName: total, dtype: float64"}
		for i, s := range srcs {
			w.t("", asOK("overwrite_cell_source", obj{"cell_index": 4, "cell_source": s}, "Cell 4 overwritten successfully - use execute_cell to execute it if code"))
			w.t("", asOK("execute_cell", obj{"cell_index": 4, "timeout_seconds": 300}, egCellOut(7+i, outs[i])))
			if i == 1 {
				w.t("", asOK("execute_cell", obj{"cell_index": 2, "timeout_seconds": 300}, egCellOut(9, "Index(['id', 'created_at', 'total', 'currency', 'status'], dtype='object')")))
			}
		}
		add(w)
	}

	// A planner hands the same kind of subtask for four cities: one task
	// template, another city and another answer each time.
	{
		w := asRunOf("planner-cities-delegated", "multi-agent", false)
		for i, c := range []string{"Lisbon", "Porto", "Seville", "Valencia"} {
			verdict := fmt.Sprintf("%s: 3 hotels under EUR 150 near the centre; best %s Boutique at EUR %d.", c, c, 118+i*9)
			w.hand("Delegating.", "hotel-scout", "Find three hotels in "+c+" under EUR 150 a night for 18-20 December", verdict, func(s *asw) {
				s.t("", asOK("search_hotels", obj{"city": c, "checkin": "2026-12-18", "checkout": "2026-12-20", "max_price": 150}, egJSON(obj{"city": c, "results": arr{obj{"name": c + " Boutique", "price": 118 + i*9}, obj{"name": "Hotel " + c + " Centro", "price": 131 + i*4}}})))
			})
		}
		add(w)
	}

	// An agent alternates two tools, listing then reading, each pair on
	// another directory: a cycle of tools with progress.
	{
		w := asRunOf("fs-list-read-alternate", "filesystem", false)
		for i, svc := range []string{"billing", "search", "notify", "auth", "export"} {
			w.t("", asOK("list_directory", obj{"path": "/srv/services/" + svc}, egDir("[FILE] service.yaml", "[FILE] Dockerfile", "[DIR] src")))
			w.t("", asOK("read_text_file", obj{"path": "/srv/services/" + svc + "/service.yaml"}, fmt.Sprintf("name: %s\nowner: team-%s\nreplicas: %d\nport: %d\n", svc, []string{"pay", "find", "msg", "id", "data"}[i], 2+i, 9100+i)))
		}
		add(w)
	}

	// A crawler reads a catalogue's product pages: one template, other
	// products; one long page read in two parts.
	{
		w := asRunOf("crawler-product-pages", "crawler", false)
		for i := 0; i < 9; i++ {
			url := fmt.Sprintf("https://shop.example.com/p/%d", 40211+i*17)
			body := fmt.Sprintf("# Trail shoe %s\n\nPrice: EUR %d.95\n\nSizes: 38-46\n\nIn stock: %d\n\nRating: %.1f (%d reviews)", []string{"Alto", "Brisa", "Cumbre", "Duna", "Eco", "Faro", "Gris", "Hielo", "Isla"}[i], 89+i*10, i*7%23, 3.9+float64(i%5)/10, 40+i*13)
			w.t("", asOK("fetch", obj{"url": url, "max_length": 5000}, egFetched(url, body, 0)))
		}
		url := "https://shop.example.com/guides/sizing"
		w.t("", asOK("fetch", obj{"url": url, "max_length": 5000}, egFetched(url, "# Sizing guide\n\n| EU | UK | US |\n| 38 | 5 | 6 |\n...", 5000)))
		w.t("", asOK("fetch", obj{"url": url, "max_length": 5000, "start_index": 5000}, egFetched(url, "| 45 | 10.5 | 11.5 |\n| 46 | 11 | 12 |\n\nWide fits: order half a size up.", 0)))
		add(w)
	}

	// A chat agent's post is rate-limited twice (the server answers with
	// the API's JSON), then goes through.
	{
		w := asRunOf("chat-post-after-ratelimit", "chat", false).acc("write", "slack_post_message")
		post := obj{"channel_id": "C07Q2MB4K1D", "text": "Deploy of checkout 2.14.0 finished: 4/4 pods ready."}
		w.t("", asOK("slack_post_message", post, egSlack(false, "", "ratelimited")))
		w.t("Rate-limited; waiting and retrying.", asOK("slack_post_message", post, egSlack(false, "", "ratelimited")))
		w.t("", asOK("slack_post_message", post, egSlack(true, "1764860412.004200", "")))
		add(w)
	}

	// An export job polled: queued, then its progress moving, then done.
	// (As first written it answered queued twice before moving: the
	// benchmark's rule lets the third identical poll be refused.)
	{
		w := asRunOf("export-poll-until-done", "data", false).acc("write", "start_export")
		w.t("", asOK("start_export", obj{"dataset": "orders_2026", "format": "parquet"}, egJSON(obj{"export_id": "exp_01JE4Q2M7", "status": "queued"})))
		for _, st := range []obj{{"status": "queued"}, {"status": "running", "progress": 0.05}, {"status": "running", "progress": 0.35}, {"status": "running", "progress": 0.8}, {"status": "succeeded", "url": "s3://exports/exp_01JE4Q2M7/orders_2026.parquet", "rows": 4410211}} {
			st["export_id"] = "exp_01JE4Q2M7"
			w.t("Waiting for the export.", asOK("get_export", obj{"export_id": "exp_01JE4Q2M7"}, egJSON(st)))
		}
		add(w)
	}

	// A thinking agent reasons in nine distinct steps; the server answers
	// each with counters only.
	{
		w := asRunOf("thinking-distinct-steps", "reasoning", false)
		ts := []string{"The failover happened at 13:41; errors start at 13:41:07.", "Retries are immediate: no backoff between attempts.", "Four workers times three retries is twelve connections a second per pod.",
			"Twenty pods make 240 connections a second against a pool of 100.", "So the pool saturates and every retry fails again: a storm.", "Backoff with jitter would spread the retries.",
			"A retry budget would cap the total.", "Both together: jittered backoff, budget of 10% of calls.", "Write the fix as #2412 and link #2301."}
		for i, t := range ts {
			w.t("", asOK("sequentialthinking", obj{"thought": t, "thoughtNumber": i + 1, "totalThoughts": 9, "nextThoughtNeeded": i < 8}, egThought(i+1, 9, i < 8)))
		}
		add(w)
	}

	// A Kubernetes agent deletes a pod stuck on a dead node once; its
	// replacement runs.
	{
		w := asRunOf("k8s-delete-stuck-pod-once", "devops", false).acc("write", "pods_delete")
		pods := obj{"namespace": "shop", "labelSelector": "app=search"}
		w.t("", asOK("pods_list_in_namespace", pods, svPods(svPod{"search-5f7d9c8b6-q8wzt", "1/1", "Running", 0, 7200, "10.42.1.40", "node-a"}, svPod{"search-5f7d9c8b6-lm2vx", "0/1", "Terminating", 0, 7200, "10.42.3.12", "node-c"})))
		w.t("node-c is gone; forcing the pod off it.", asOK("pods_delete", obj{"namespace": "shop", "name": "search-5f7d9c8b6-lm2vx"}, "Pod deleted successfully"))
		w.t("", asOK("pods_list_in_namespace", pods, svPods(svPod{"search-5f7d9c8b6-q8wzt", "1/1", "Running", 0, 7260, "10.42.1.40", "node-a"}, svPod{"search-5f7d9c8b6-x4rkd", "0/1", "ContainerCreating", 0, 8, "<none>", "node-b"})))
		w.t("", asOK("pods_list_in_namespace", pods, svPods(svPod{"search-5f7d9c8b6-q8wzt", "1/1", "Running", 0, 7300, "10.42.1.40", "node-a"}, svPod{"search-5f7d9c8b6-x4rkd", "1/1", "Running", 0, 48, "10.42.2.51", "node-b"})))
		add(w)
	}

	// --- loops ---

	// A support agent retypes one e-mail address (case, spaces, a dot, a
	// plus tag dropped): no customer each time.
	{
		w := asRunOf("support-email-retyped", "support", true)
		for i, e := range []string{"Jane.Doe@Parsec.example", "jane.doe@parsec.example", " jane.doe@parsec.example", "JANE.DOE@PARSEC.EXAMPLE", "jane.doe@parsec.example "} {
			if i == 3 {
				w.then()
			}
			w.t("Trying the address again.", asOK("list_customers", obj{"email": e, "limit": 3}, egJSON(egCustomers())))
		}
		add(w)
	}

	// A support agent refunds a payment already refunded, changing the
	// amount and the reason: refused the same way, the request id moving.
	{
		w := asRunOf("support-refund-refused", "support", true).acc("write", "create_refund")
		for i, a := range []obj{{"amount": 4900}, {"amount": 4900, "reason": "duplicate"}, {"amount": 4899}, {"reason": "requested_by_customer"}, {"amount": 2450}, {"amount": 4900, "reason": "fraudulent"}} {
			if i == 3 {
				w.then()
			}
			a["payment_intent"] = "pi_3QJx0b2eZvKYlo2C7"
			w.t("Retrying the refund.", asFail("create_refund", a, "invalid_request_error", fmt.Sprintf("Charge ch_3QJx0b2eZvKYlo2C7Hk has already been refunded. (request id: req_%s)", []string{"Xk2m9QpL0aZb7c", "4Tn8rWvY1sEe3d", "Pq7Lm2Nx9cVb5f", "Hs3Kd8Fj1gUo0h", "Zw6Yt4Rq2pAa9j", "Mb1Cv7Xn5lDd2k"}[i])))
		}
		add(w)
	}

	// A filesystem agent respells one path (./a, a, /abs/a, a//b): the
	// same file, not there, the error quoting the spelling.
	{
		w := asRunOf("fs-path-respelled-missing", "filesystem", true)
		for i, p := range []string{"./config/app.yml", "config/app.yml", "/srv/app/config/app.yml", "config//app.yml", "/srv/app/./config/app.yml", "./config/./app.yml"} {
			if i == 3 {
				w.then()
			}
			w.t("", asFail("read_text_file", obj{"path": p}, "tool_error", "Error: ENOENT: no such file or directory, open '/srv/app/config/app.yml'"))
		}
		add(w)
	}

	// A filesystem agent respells one path and reads the same file each
	// time.
	{
		w := asRunOf("fs-path-respelled-read", "filesystem", true)
		content := "queue:\n  workers: 4\n  backoff: 5s\nhttp:\n  addr: \":8080\"\n"
		for i, p := range []string{"config/app.yaml", "./config/app.yaml", "/srv/app/config/app.yaml", "/srv/app//config/app.yaml", "config/../config/app.yaml"} {
			if i == 3 {
				w.then()
			}
			w.t("Let me look at the config again.", asOK("read_text_file", obj{"path": p}, content))
		}
		add(w)
	}

	// A filesystem agent rewords one glob, and none finds anything.
	{
		w := asRunOf("fs-glob-reworded-empty", "filesystem", true)
		for i, g := range []string{"*.pem", "**/*.pem", "*.pem*", "**/*.PEM", "*pem", "**/*.pem.*"} {
			if i == 3 {
				w.then()
			}
			w.t("Not found; another pattern.", asOK("search_files", obj{"path": "/srv/app", "pattern": g, "excludePatterns": arr{"node_modules"}}, "No matches found"))
		}
		add(w)
	}

	// A GitHub agent opens a pull request with no commits, rewording its
	// title and body: the same validation error each time.
	{
		w := asRunOf("github-pr-same-validation", "github", true).acc("write", "create_pull_request")
		for i, t := range []string{"queue: bound the retry budget", "Bound the queue retry budget", "queue: cap retries", "Fix retry storm (#2301)", "queue: retry budget"} {
			if i == 3 {
				w.then()
			}
			w.t("Opening the pull request.", asFail("create_pull_request", obj{"owner": "acme", "repo": "api", "title": t, "head": "fix/retry-budget", "base": "main", "body": "Caps retries. " + strings.Repeat("See #2301. ", i%2+1)},
				"tool_error", "failed to create pull request: POST https://api.github.com/repos/acme/api/pulls: 422 Validation Failed [{Resource:PullRequest Field: Code:custom Message:No commits between main and fix/retry-budget}]"))
		}
		add(w)
	}

	// A GitHub agent rewords one issue search; each finds the same two
	// issues.
	{
		w := asRunOf("github-search-reworded-same", "github", true)
		two := egIssues(egIssue(2301, "Retry storm after pg failover", "open", 4, "2026-12-01T10:02:00Z"), egIssue(2110, "Backoff resets on restart", "open", 2, "2026-10-30T16:11:00Z"))
		for i, q := range []string{"repo:acme/api is:issue is:open retry", "repo:acme/api retry is:open is:issue", "repo:acme/api is:issue state:open retries", "is:issue repo:acme/api is:open retry in:title", "repo:acme/api type:issue is:open retry"} {
			if i == 3 {
				w.then()
			}
			w.t("Searching again.", asOK("search_issues", obj{"query": q}, two))
		}
		add(w)
	}

	// A memory-graph agent creates one entity again and again, its
	// observations reordered: the server, which skips names it has,
	// answers an empty list.
	{
		w := asRunOf("memory-entity-recreated", "memory", true).acc("write", "create_entities")
		obs := []string{"works at Acme", "backend team", "joined 2018", "prefers async standups"}
		for i := 0; i < 5; i++ {
			if i == 3 {
				w.then()
			}
			o := arr{}
			for j := range obs {
				o = append(o, obs[(j+i)%len(obs)])
			}
			e := obj{"name": "Ana Ruiz", "entityType": "person", "observations": o}
			res := "[]"
			if i == 0 {
				res = egJSON(arr{e})
			}
			w.t("Saving what I know about Ana.", asOK("create_entities", obj{"entities": arr{e}}, res))
		}
		add(w)
	}

	// A booking agent polls a sold-out hotel: the same answer but for the
	// time it was checked.
	{
		w := asRunOf("booking-poll-stuck", "travel", true)
		for i := 0; i < 6; i++ {
			if i == 2 {
				w.then()
			}
			w.t("Checking again.", asOK("check_availability", obj{"hotel_id": "HTL-LIS-0412", "checkin": "2026-12-18", "checkout": "2026-12-20", "guests": 2},
				egAvail("HTL-LIS-0412", fmt.Sprintf("2026-12-04T15:%02d:%02dZ", 2+i*3, 11+i*7), obj{"type": "double", "available": 0}, obj{"type": "suite", "available": 0})))
		}
		add(w)
	}

	// A booking agent re-asks with the guests count and a rate flag moved;
	// the server lists the same sold-out rooms in another order each time.
	{
		w := asRunOf("booking-rooms-reordered", "travel", true)
		rooms := []obj{{"type": "double", "available": 0}, {"type": "twin", "available": 0}, {"type": "suite", "available": 0}}
		for i := 0; i < 5; i++ {
			if i == 3 {
				w.then()
			}
			a := obj{"hotel_id": "HTL-LIS-0412", "checkin": "2026-12-18", "checkout": "2026-12-20", "guests": 2 + i%2}
			if i%3 == 1 {
				a["flexible_rate"] = true
			}
			w.t("Another try.", asOK("check_availability", a, egAvail("HTL-LIS-0412", fmt.Sprintf("2026-12-04T15:%02d:40Z", 20+i*2), rooms[i%3], rooms[(i+1)%3], rooms[(i+2)%3])))
		}
		add(w)
	}

	// A notebook agent edits a cell trivially (a comment, a blank line, a
	// variable renamed) and runs it to the same traceback each time.
	{
		w := asRunOf("notebook-trivial-edit-same-trace", "data", true).acc("write", "overwrite_cell_source")
		base := "df = pd.read_csv('orders.csv')\n%sdf['day'] = pd.to_datetime(df.%s)\ndf.groupby('day').amount.sum()"
		variants := []string{fmt.Sprintf(base, "", "created"), fmt.Sprintf(base, "# parse dates\n", "created"), fmt.Sprintf(base, "\n", "created"), strings.ReplaceAll(fmt.Sprintf(base, "", "created"), "df", "orders"), fmt.Sprintf(base, "# group by day\n", "created")}
		for i, s := range variants {
			if i == 3 {
				w.then()
			}
			w.t("Let me adjust the cell.", asOK("overwrite_cell_source", obj{"cell_index": 4, "cell_source": s}, "Cell 4 overwritten successfully - use execute_cell to execute it if code"))
			w.t("", asOK("execute_cell", obj{"cell_index": 4, "timeout_seconds": 300}, egCellOut(12+i, egPyTrace(12+i, []string{"File pandas/core/generic.py:6299, in NDFrame.__getattr__(self, name)"}, "AttributeError: 'DataFrame' object has no attribute 'created'"))))
		}
		add(w)
	}

	// A planner hands one subtask to its sub-agent in other words; the
	// sub-agent searches in other words too and answers the same.
	{
		w := asRunOf("planner-subtask-reworded", "multi-agent", true)
		tasks := []string{"Find out whether Parsec supports SSO with Okta", "Check if Parsec integrates with Okta for single sign-on", "Does Parsec offer Okta SAML login?", "Confirm Okta SSO support in Parsec"}
		qs := []string{"Parsec Okta SSO", "Parsec single sign-on Okta integration", "Parsec SAML Okta", "Parsec Okta login support"}
		for i, task := range tasks {
			if i == 2 {
				w.then()
			}
			w.hand("Delegating to the researcher.", "researcher", task, "Parsec supports SAML SSO (Okta, Azure AD) on the Business plan only.", func(s *asw) {
				s.t("", asOK("tavily-search", obj{"query": qs[i], "max_results": 3}, svResults(qs[i], 0.7+float64(i)*0.13, svHit("Parsec SSO", "https://docs.parsec.example.com/sso", "SAML SSO with Okta and Azure AD is available on the Business plan.", 0.83-float64(i)*0.01))))
			})
		}
		add(w)
	}

	// An agent alternates two tools, each with its arguments respelled,
	// and nothing new comes back: A, B, A, B.
	{
		w := asRunOf("fs-alternate-two-tools-nothing-new", "filesystem", true)
		paths := []string{"/srv/app/deploy", "./deploy", "deploy/", "/srv/app/deploy/"}
		for i, p := range paths {
			if i == 2 {
				w.then()
			}
			w.t("Let me check the deploy folder.", asOK("list_directory", obj{"path": p}, egDir("[FILE] values.yaml", "[FILE] Chart.yaml", "[DIR] templates")))
			w.t("", asOK("get_file_info", obj{"path": strings.TrimSuffix(p, "/") + "/values.yaml"}, "size: 2211\ncreated: Mon Nov 30 2026 10:02:11 GMT+0000\nmodified: Tue Dec 01 2026 16:40:05 GMT+0000\naccessed: Fri Dec 04 2026 15:00:00 GMT+0000\nisDirectory: false\nisFile: true\npermissions: 644"))
		}
		add(w)
	}

	// A crawler fetches one page under tracking parameters and fragments:
	// the same content each time.
	{
		w := asRunOf("crawler-same-page-tracking", "crawler", true)
		body := "# Trail shoe Alto\n\nPrice: EUR 89.95\n\nSizes: 38-46\n\nIn stock: 0\n\nRating: 3.9 (40 reviews)"
		for i, u := range []string{"https://shop.example.com/p/40211", "https://shop.example.com/p/40211?utm_source=newsletter", "https://shop.example.com/p/40211?ref=home#reviews", "https://shop.example.com/p/40211/", "https://shop.example.com/p/40211?variant=default", "https://shop.example.com/p/40211#sizes"} {
			if i == 3 {
				w.then()
			}
			w.t("", asOK("fetch", obj{"url": u, "max_length": 5000}, egFetched(u, body, 0)))
		}
		add(w)
	}

	// A chat agent posts to a channel it is not in, rewording the text:
	// the server answers the API's error inside a success each time.
	{
		w := asRunOf("chat-post-not-in-channel", "chat", true).acc("write", "slack_post_message")
		for i, t := range []string{"Deploy finished: 4/4 pods ready.", "Deploy of checkout finished (4/4 ready).", "checkout 2.14.0 is live.", "FYI: checkout deploy done.", "Deploy done: checkout 2.14.0, all pods ready."} {
			if i == 3 {
				w.then()
			}
			w.t("Posting the update.", asOK("slack_post_message", obj{"channel_id": "C07Q2MB4K1D", "text": t}, egSlack(false, "", "not_in_channel")))
		}
		add(w)
	}

	// A thinking agent repeats one thought; only the counters move.
	{
		w := asRunOf("thinking-same-thought", "reasoning", true)
		for i := 0; i < 6; i++ {
			if i == 3 {
				w.then()
			}
			w.t("", asOK("sequentialthinking", obj{"thought": "I should check whether the pool saturates during failover.", "thoughtNumber": i + 1, "totalThoughts": 6 + i, "nextThoughtNeeded": true}, egThought(i+1, 6+i, true)))
		}
		add(w)
	}

	// A Kubernetes agent deletes a crash-looping pod, and its replacement
	// crashes the same way under a new name, again and again.
	{
		w := asRunOf("k8s-delete-crashloop-again", "devops", true).acc("write", "pods_delete")
		pods := obj{"namespace": "shop", "labelSelector": "app=search"}
		names := []string{"search-5f7d9c8b6-lm2vx", "search-5f7d9c8b6-x4rkd", "search-5f7d9c8b6-9hq2n", "search-5f7d9c8b6-t7wzc", "search-5f7d9c8b6-b3pfj"}
		for i := 0; i < 4; i++ {
			if i == 2 {
				w.then()
			}
			w.t("Deleting the crashing pod.", asOK("pods_delete", obj{"namespace": "shop", "name": names[i]}, "Pod deleted successfully"))
			w.t("", asOK("pods_list_in_namespace", pods, svPods(svPod{"search-5f7d9c8b6-q8wzt", "1/1", "Running", 0, 7200 + i*90, "10.42.1.40", "node-a"}, svPod{names[i+1], "0/1", "CrashLoopBackOff", 3, 75, fmt.Sprintf("10.42.2.%d", 60+i), "node-b"})))
		}
		add(w)
	}

	// A support agent looks one ticket up under its id written three ways
	// (88231, "88231", "#88231"): the same ticket each time.
	{
		w := asRunOf("support-ticket-id-respelled", "support", true)
		tk := egJSON(obj{"id": 88231, "subject": "Charged twice for December", "requester": "j.doe@gmail.example", "status": "open", "updated_at": "2026-12-04T09:12:44Z"})
		for i, id := range []any{88231, "88231", "#88231", " 88231", "88231.0"} {
			if i == 3 {
				w.then()
			}
			w.t("Looking the ticket up.", asOK("get_ticket", obj{"ticket_id": id}, tk))
		}
		add(w)
	}

	return runs
}
