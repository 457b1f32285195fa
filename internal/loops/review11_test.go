package loops

import (
	"fmt"
	"testing"
)

// The review of loops11's rules (cycles of up to 8 calls, code folded as
// its words with options left out, numbers counted in an answer's size,
// the same records tying askings that share no word): legit runs those
// rules could take for loops, played by the long-run probe's driver, and
// loops they could still miss. Legit work must never be refused.
func review11Runs() []*lrRun {
	var out []*lrRun
	add := func(b *lrb) { out = append(out, b.r) }

	// One command asked of each repository in turn, the repository in an
	// option's joined value, each answering alike: a batch.
	{
		b := longRun("prs-per-repo-eq", "coding", false)
		for i := 0; i < 8; i++ {
			b.do("Next repository.", "run_command", map[string]any{"command": fmt.Sprintf("gh pr list --repo=acme/svc-%02d --state=open", i)}, `{"exit_code":0,"output":"no open pull requests in this repository\n"}`)
		}
		add(b)
	}
	{
		b := longRun("prs-per-repo-space", "coding", false)
		for i := 0; i < 8; i++ {
			b.do("Next repository.", "run_command", map[string]any{"command": fmt.Sprintf("gh pr list --repo acme/svc-%02d --state open", i)}, `{"exit_code":0,"output":"no open pull requests in this repository\n"}`)
		}
		add(b)
	}
	{
		b := longRun("tests-one-by-one-eq", "coding", false)
		for _, t := range []string{"TestGet", "TestPut", "TestEvict", "TestExpire", "TestStats", "TestClose"} {
			b.do("Running "+t+" alone.", "run_command", map[string]any{"command": "go test ./cache -count=1 -run=^" + t + "$"}, `{"exit_code":0,"output":"PASS\nok  \texample.com/app/cache\t0.004s\n"}`)
		}
		add(b)
	}
	// Comparisons the other way round, values swapped between two
	// conditions (one multiset of words): other rows each time.
	{
		b := longRun("sql-operator-order", "sql", false)
		all := []map[string]any{}
		for i := 0; i < 8; i++ {
			all = append(all, map[string]any{"id": 100 + i, "price": 10 * (i + 1), "cost": 80 - 10*i, "x": i % 3, "y": (i / 3) % 3})
		}
		b.do("Whole table first.", "query", map[string]any{"sql": "SELECT id, price, cost, x, y FROM items"}, map[string]any{"rows": all})
		b.do("Cheaper than cost.", "query", map[string]any{"sql": "SELECT id, price, cost, x, y FROM items WHERE price < cost"}, map[string]any{"rows": all[:4]})
		b.do("Other way.", "query", map[string]any{"sql": "SELECT id, price, cost, x, y FROM items WHERE cost < price"}, map[string]any{"rows": all[4:]})
		b.do("x=1 y=2", "query", map[string]any{"sql": "SELECT id, price, cost, x, y FROM items WHERE x = 1 AND y = 2"}, map[string]any{"rows": all[7:8]})
		b.do("x=2 y=1", "query", map[string]any{"sql": "SELECT id, price, cost, x, y FROM items WHERE x = 2 AND y = 1"}, map[string]any{"rows": all[5:6]})
		b.do("x=0 y=1", "query", map[string]any{"sql": "SELECT id, price, cost, x, y FROM items WHERE x = 0 AND y = 1"}, map[string]any{"rows": all[3:4]})
		b.do("x=1 y=0", "query", map[string]any{"sql": "SELECT id, price, cost, x, y FROM items WHERE x = 1 AND y = 0"}, map[string]any{"rows": all[1:2]})
		b.do("x=0 y=2", "query", map[string]any{"sql": "SELECT id, price, cost, x, y FROM items WHERE x = 0 AND y = 2"}, map[string]any{"rows": all[6:7]})
		b.do("x=2 y=0", "query", map[string]any{"sql": "SELECT id, price, cost, x, y FROM items WHERE x = 2 AND y = 0"}, map[string]any{"rows": all[2:3]})
		add(b)
	}
	// A grid of counts, numbers only, (1, 2) and (2, 1) one set of words.
	{
		b := longRun("sql-count-grid", "sql", false)
		for s := 1; s <= 3; s++ {
			for d := 1; d <= 3; d++ {
				b.do("Counting.", "query", map[string]any{"sql": fmt.Sprintf("SELECT hour, count(*) FROM events WHERE shard = %d AND day = %d GROUP BY hour", s, d)},
					map[string]any{"rows": [][]int{{0, (s + d) % 3}, {1, (s * d) % 3}, {2, (s + 2*d) % 3}, {3, 1}, {4, 2}, {5, 0}}})
			}
		}
		add(b)
	}
	// Namespaces in turn, each answering alike.
	{
		b := longRun("kubectl-namespaces", "ops", false)
		for _, ns := range []string{"prod", "staging", "dev", "qa", "perf", "demo"} {
			b.do("Checking "+ns+".", "run_command", map[string]any{"command": "kubectl get pods --namespace=" + ns + " --field-selector=status.phase!=Running"}, `{"exit_code":0,"output":"No resources found.\nAll pods are healthy in the namespace.\n"}`)
		}
		add(b)
	}
	// A round-robin poller over six hosts whose readings move.
	{
		b := longRun("poller-6-hosts", "ops", false)
		for round := 0; round < 6; round++ {
			for h := 0; h < 6; h++ {
				cpu := 40 + ((h*7 + round*3) % 20)
				b.do("Polling.", "host_status", map[string]any{"host": fmt.Sprintf("web-%02d", h)}, map[string]any{"host": fmt.Sprintf("web-%02d", h), "status": "ok", "cpu": cpu, "mem": 50 + (h+round)%10, "disk": 70, "load": 1.5})
			}
		}
		add(b)
	}
	// Build, test and deploy over three services, to three environments:
	// a cycle of nine calls whose reads answer alike each round.
	{
		b := longRun("build-test-deploy", "ops", false).writes("deploy")
		for round := 0; round < 3; round++ {
			for _, svc := range []string{"api", "web", "worker"} {
				b.do("Build.", "run_command", map[string]any{"command": "make build SERVICE=" + svc}, `{"exit_code":0,"output":"built\n"}`)
				b.do("Test.", "run_command", map[string]any{"command": "make test SERVICE=" + svc}, `{"exit_code":0,"output":"ok all tests passed\n"}`)
				b.do("Deploy.", "deploy", map[string]any{"service": svc, "env": []string{"dev", "staging", "prod"}[round]}, `{"ok":true}`)
			}
		}
		add(b)
	}
	// Counters and epoch seconds that grow.
	{
		b := longRun("counter-poll", "ops", false)
		for i := 0; i < 12; i++ {
			b.do("Waiting for the export.", "export_status", `{"id":"exp-1"}`, map[string]any{"state": "running", "rows_done": 1000 * (i + 1), "updated": 1733212800 + 30*i})
		}
		add(b)
	}
	// Tickets handed to a tool that suggests replies, the same three for
	// each: the tickets share a word now and then with each other and with
	// the suggestions, which ties them (see review11Known).
	{
		b := longRun("support-macro-suggestions", "support", false)
		macros := map[string]any{"suggestions": []map[string]any{
			{"macro": "Refund request", "body": "We have issued your refund."},
			{"macro": "Shipping delay", "body": "Your parcel is on its way."},
			{"macro": "Order status", "body": "Here is your order status."},
		}}
		for _, tk := range []string{
			"My parcel has not arrived and I want my money back",
			"Package late again, please refund me",
			"Where is my order? It has been two weeks",
			"Delivery never came, I need a refund now",
			"The courier lost my box, send the money back",
			"Still waiting for shipment number 5521",
		} {
			b.do("Suggesting macros.", "suggest_macros", map[string]any{"ticket_text": tk}, macros)
		}
		add(b)
	}
	// Numeric dashboards polled over six hosts, readings moving in a range.
	{
		b := longRun("numeric-poller", "ops", false)
		x := 7
		rnd := func(n int) int { x = (x*1103515245 + 12345) & 0x7fffffff; return x % n }
		for round := 0; round < 8; round++ {
			for h := 0; h < 6; h++ {
				b.do("Polling.", "get_metrics", map[string]any{"host": fmt.Sprintf("web-%02d", h)}, map[string]any{"cpu": 40 + rnd(8), "mem": 60 + rnd(6), "disk": 70 + rnd(3), "load": float64(10+rnd(5)) / 10, "conns": 100 + rnd(10), "p99_ms": 200 + rnd(10)})
			}
		}
		add(b)
	}
	// One host's metrics polled, each reading within a range already shown.
	{
		b := longRun("numeric-poller-one", "ops", false)
		x := 11
		rnd := func(n int) int { x = (x*1103515245 + 12345) & 0x7fffffff; return x % n }
		for i := 0; i < 20; i++ {
			b.do("Polling.", "get_metrics", `{"host":"db-1"}`, map[string]any{"cpu": 40 + rnd(4), "mem": 60 + rnd(3), "replication_lag_s": rnd(3), "conns": 100 + rnd(4), "qps": 300 + rnd(5), "p50_ms": 120 + rnd(3), "p99_ms": 480 + rnd(4), "cache_hit_pct": 97 + rnd(2), "disk_pct": 71, "threads": 64, "open_files": 1024 + rnd(3), "queue_depth": rnd(3), "buffer_pool_mb": 4096})
		}
		add(b)
	}
	// Counts by one column after another over one small table.
	{
		b := longRun("sql-group-bys", "sql", false)
		for i, col := range []string{"region", "status", "channel", "tier", "currency", "plan", "source", "device"} {
			rows := [][]any{}
			for k := 0; k < 4; k++ {
				rows = append(rows, []any{k + 1, (i + k*3) % 7, 10 + (i*k)%5})
			}
			b.do("Grouping by "+col+".", "query", map[string]any{"sql": "SELECT " + col + "_id, count(*), avg(age) FROM customers GROUP BY " + col + "_id"}, map[string]any{"rows": rows})
		}
		add(b)
	}
	// A job polled that never moves, its answer numbered (seq): each answer
	// brings a new number (see review11Known).
	{
		b := longRun("loop-poll-counter", "ops", true)
		for i := 0; i < 12; i++ {
			if i == 3 {
				b.from()
			}
			b.do("Still pending?", "job_status", `{"id":"job-9"}`, map[string]any{"state": "pending", "message": "waiting for a worker to pick the job up", "seq": 5000 + i})
		}
		add(b)
	}
	// One directory listed under other spellings of its path.
	{
		b := longRun("loop-path-spellings", "coding", true)
		out := `{"exit_code":0,"output":"cache.go\nevict.go\nstore.go\nconfig.go\n"}`
		for i, c := range []string{"ls src", "ls src/", "ls ./src", "ls ./src/", "ls -1 src", "ls src/."} {
			if i == 3 {
				b.from()
			}
			b.do("Listing again.", "run_command", map[string]any{"command": c}, out)
		}
		add(b)
	}
	// Synonyms only, under a key that does not name a query.
	{
		b := longRun("loop-synonyms-text-key", "research", true)
		docs := map[string]any{"results": []map[string]any{
			{"title": "Account closure", "url": "https://help.example.com/a/101"},
			{"title": "Billing FAQ", "url": "https://help.example.com/a/102"},
			{"title": "Plans and pricing", "url": "https://help.example.com/a/103"},
		}}
		for i, q := range []string{"terminate membership", "end automatic renewal", "quit paid tier", "halt recurring charges", "stop auto renew", "discontinue premium"} {
			if i == 3 {
				b.from()
			}
			b.do("Trying other words.", "search_kb", map[string]any{"text": q}, docs)
		}
		add(b)
	}
	return out
}

// review11Known lists the runs whose outcome is not their label's, each with why.
var review11Known = map[string]string{
	// Tickets that share a word with each other or with the suggestions
	// ("refund", "order", "parcel") are taken for rewordings of one
	// question, as docs/LOOPS.md says of texts given to one tool that
	// answer about them; R6 allows it.
	"support-macro-suggestions": "false_kill",
	// A number that grows in each answer is news: the job's state is the
	// same, but the answer is not (R2 masks no such key either).
	"loop-poll-counter": "missed",
	// Only a search finds records: synonyms given under a key that names
	// no query ("text") are other texts.
	"loop-synonyms-text-key": "missed",
}

// TestReview11Runs plays the review's runs: legit ones go, loops are
// refused at or after their mark, but for review11Known.
func TestReview11Runs(t *testing.T) {
	for _, r := range review11Runs() {
		p := playLong(r)
		got := lrOutcome(r, p)
		msg := ""
		if p.v != nil {
			msg = fmt.Sprintf(" at call %d (mark %d) by %s: %s", p.at, p.mark, p.v.Detector, p.v.Message)
		}
		t.Logf("%-30s %3d calls %-10s%s", r.id, p.calls, got, msg)
		want := "ok"
		if r.loop {
			want = "detected"
		}
		if w, ok := review11Known[r.id]; ok {
			want = w
		}
		if got != want {
			t.Errorf("%s: %s, want %s%s", r.id, got, want, msg)
		}
	}
}
