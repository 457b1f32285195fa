package loops

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"strings"
	"time"
)

var opBase = time.Date(2026, 12, 3, 9, 14, 2, 0, time.UTC)

// opAt is a time stamp sec seconds into the run.
func opAt(sec int) string { return opBase.Add(time.Duration(sec) * time.Second).Format(time.RFC3339) }

// opHex is n hex digits that look random and are the same for the same seed.
func opHex(seed string, n int) string {
	h := sha256.Sum256([]byte(seed))
	return hex.EncodeToString(h[:])[:n]
}

// opToken is an opaque pagination token.
func opToken(seed string) string {
	h := sha256.Sum256([]byte(seed))
	return base64.RawURLEncoding.EncodeToString(h[:24])
}

// opAge is kubectl's age of something sec seconds old.
func opAge(sec int) string {
	switch {
	case sec < 120:
		return fmt.Sprintf("%ds", sec)
	case sec < 600:
		return fmt.Sprintf("%dm%ds", sec/60, sec%60)
	case sec < 3600:
		return fmt.Sprintf("%dm", sec/60)
	}
	return fmt.Sprintf("%dh%dm", sec/3600, sec%3600/60)
}

func opPods(app string, ready []string, status []string, restarts []string, age int) string {
	var b strings.Builder
	b.WriteString("NAME                      READY   STATUS             RESTARTS      AGE\n")
	for i := range ready {
		fmt.Fprintf(&b, "%s-%s-%s   %s     %-18s %-13s %s\n", app, opHex(app, 10), opHex(fmt.Sprint(app, i), 5), ready[i], status[i], restarts[i], opAge(age+i*3))
	}
	return b.String()
}

func opObjects(prefix string, page, n int) []map[string]any {
	var out []map[string]any
	for i := 0; i < n; i++ {
		k := page*n + i
		out = append(out, map[string]any{
			"Key":          fmt.Sprintf("%sdt=2026-11-%02d/part-%05d.snappy.parquet", prefix, 1+k/8, k%8),
			"Size":         48_000_000 + k*7919,
			"ETag":         `"` + opHex(fmt.Sprint(prefix, k), 32) + `"`,
			"LastModified": opBase.Add(-time.Duration(900-k) * time.Hour).Format(time.RFC3339),
			"StorageClass": "STANDARD",
		})
	}
	return out
}

func opMailThread(i int, from, subject, body string) map[string]any {
	return map[string]any{
		"id": "18c" + opHex(fmt.Sprint("thread", i), 13),
		"messages": []map[string]any{{
			"id":      "18c" + opHex(fmt.Sprint("msg", i), 13),
			"headers": map[string]any{"From": from, "To": "ops@acme.io", "Subject": subject, "Date": opBase.Add(-time.Duration(i*53) * time.Minute).Format(time.RFC1123Z)},
			"body":    body + "\n\n--\nYou are receiving this email because you are subscribed to updates from this sender.\nManage your preferences or unsubscribe: https://lists.example.com/u/manage\nExample Corp, 500 Market St, San Francisco, CA 94105",
		}},
	}
}

func opDiff(path string, n int) string {
	var b strings.Builder
	fmt.Fprintf(&b, "diff --git a/%s b/%s\nindex %s..%s 100644\n--- a/%s\n+++ b/%s\n", path, path, opHex(path, 7), opHex(path+"'", 7), path, path)
	b.WriteString("@@ -1,6 +1,7 @@\n // Copyright 2026 Acme Inc. All rights reserved.\n // Use of this source code is governed by the LICENSE file.\n \n")
	fmt.Fprintf(&b, " package %s\n", strings.TrimSuffix(path[strings.LastIndex(path, "/")+1:], ".go"))
	for i := 0; i < n; i++ {
		fmt.Fprintf(&b, "+\t// %s: handle case %d before the lock is taken\n+\tif v%d := load(%q); v%d != nil {\n+\t\treturn v%d\n+\t}\n", path, i, i, fmt.Sprint(path, i), i, i)
	}
	return b.String()
}

func opSnapshot(title string, fields []string, values map[string]string, alert string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "- main\n  - heading \"%s\" [level=1]\n  - form \"application\"\n", title)
	for i, f := range fields {
		fmt.Fprintf(&b, "    - textbox \"%s\" [ref=e%d]: %s\n", f, 20+i, values[f])
	}
	if alert != "" {
		fmt.Fprintf(&b, "    - alert: %s\n", alert)
	}
	b.WriteString("    - button \"Back\" [ref=e40]\n    - button \"Next\" [ref=e41]\n  - contentinfo: © 2026 Example Registry. Privacy · Terms · Accessibility\n")
	return b.String()
}

func opsRuns() []*opRun {
	var out []*opRun
	add := func(b *opb) { out = append(out, b.r) }

	// --- a data-pipeline agent ----------------------------------------------

	// Twelve daily partitions backfilled one after another: each triggered
	// (a write answered alike), then polled until it moves to success.
	{
		b := opRunOf("etl-backfill-twelve-partitions", "data-pipeline", false).writes("etl_trigger_backfill")
		b.do("Which partitions of events_daily are missing?", "warehouse_partitions", map[string]any{"table": "analytics.events_daily", "missing_only": true},
			map[string]any{"missing": []string{"2026-11-01", "2026-11-02", "2026-11-03", "2026-11-04", "2026-11-05", "2026-11-06", "2026-11-07", "2026-11-08", "2026-11-09", "2026-11-10", "2026-11-11", "2026-11-12"}})
		for d := 1; d <= 12; d++ {
			part := fmt.Sprintf("2026-11-%02d", d)
			run := "bf_" + opHex(part, 12)
			b.do("Backfilling "+part+".", "etl_trigger_backfill", map[string]any{"table": "analytics.events_daily", "partition": part}, map[string]any{"run_id": run, "state": "queued"})
			rows := 0
			for poll, st := range []string{"queued", "running", "running", "success"} {
				if st == "running" {
					rows += 410_000 + d*1337 + poll*97
				}
				res := map[string]any{"run_id": run, "state": st, "rows_written": rows, "partition": part}
				if st == "success" {
					res["rows_written"] = rows + 52_000
					res["duration_s"] = 180 + d*7
				}
				b.do(fmt.Sprintf("Checking %s (poll %d).", run, poll+1), "etl_run_state", map[string]any{"run_id": run}, res)
			}
		}
		b.do("Verifying the row counts.", "warehouse_partitions", map[string]any{"table": "analytics.events_daily", "missing_only": true}, map[string]any{"missing": []string{}})
		add(b)
	}

	// A bucket listed page by page with continuation tokens, 14 pages.
	{
		b := opRunOf("etl-bucket-listing-continuation", "data-pipeline", false)
		tok := ""
		for page := 0; page < 14; page++ {
			args := map[string]any{"bucket": "acme-raw-events", "prefix": "events/", "max_keys": 8}
			if tok != "" {
				args["continuation_token"] = tok
			}
			next := opToken(fmt.Sprint("page", page+1))
			res := map[string]any{"Contents": opObjects("events/", page, 8), "IsTruncated": page < 13, "KeyCount": 8}
			if page < 13 {
				res["NextContinuationToken"] = next
			}
			b.do(fmt.Sprintf("Listing page %d.", page+1), "s3_list_objects_v2", args, res)
			tok = next
		}
		add(b)
	}

	// A job that fails on a warehouse that is resuming (an untyped 503),
	// retried three times, then it runs; a read that timed out twice.
	{
		b := opRunOf("etl-retries-then-succeed", "data-pipeline", false).writes("etl_start_job").retryable("etl_start_job", "s3_get_object")
		for i := 0; i < 3; i++ {
			b.fail("Starting the load job.", "etl_start_job", map[string]any{"job": "load_orders_to_warehouse", "params": map[string]any{"date": "2026-12-02"}}, "tool_error",
				"HTTP 503 Service Unavailable: warehouse WH_LOAD is resuming, retry in 30s")
		}
		b.do("Starting the load job again.", "etl_start_job", map[string]any{"job": "load_orders_to_warehouse", "params": map[string]any{"date": "2026-12-02"}}, map[string]any{"run_id": "r-55103", "state": "running"})
		for i := 0; i < 2; i++ {
			b.fail("Reading the manifest.", "s3_get_object", map[string]any{"bucket": "acme-raw-events", "key": "manifests/2026-12-02.json"}, "timeout", "upstream timed out after 10s")
		}
		b.do("Reading the manifest.", "s3_get_object", map[string]any{"bucket": "acme-raw-events", "key": "manifests/2026-12-02.json"}, map[string]any{"files": 42, "bytes": 2_015_553_102, "schema_version": 7})
		for i, st := range []string{"running", "running", "running", "success"} {
			b.do("Polling the load.", "etl_run_state", map[string]any{"run_id": "r-55103"}, map[string]any{"run_id": "r-55103", "state": st, "files_loaded": []int{9, 23, 38, 42}[i]})
		}
		add(b)
	}

	// A load polled while nothing moves: the state, the task and the rows
	// stay, only the moment of the answer changes.
	{
		b := opRunOf("etl-poll-stuck-run", "data-pipeline", true)
		b.do("Started; now waiting.", "etl_run_state", map[string]any{"run_id": "r-77120"}, map[string]any{"run_id": "r-77120", "state": "running", "task": "merge_into_fact_orders", "rows_written": 0, "queried_at": opAt(0)})
		b.do("Still going, checking again.", "etl_run_state", map[string]any{"run_id": "r-77120"}, map[string]any{"run_id": "r-77120", "state": "running", "task": "merge_into_fact_orders", "rows_written": 1_204_332, "queried_at": opAt(60)})
		for i := 2; i < 9; i++ {
			if i == 3 {
				b.from()
			}
			b.do("Checking again.", "etl_run_state", map[string]any{"run_id": "r-77120"}, map[string]any{"run_id": "r-77120", "state": "running", "task": "merge_into_fact_orders", "rows_written": 1_204_332, "queried_at": opAt(60 * i)})
		}
		add(b)
	}

	// A listing whose continuation token comes back to the first page's:
	// the same three pages again and again.
	{
		b := opRunOf("etl-continuation-token-resets", "data-pipeline", true)
		toks := []string{"", opToken("p1"), opToken("p2")}
		for round := 0; round < 4; round++ {
			for page := 0; page < 3; page++ {
				if round == 1 && page == 2 {
					b.from()
				}
				args := map[string]any{"bucket": "acme-exports", "prefix": "daily/", "max_keys": 8}
				if toks[page] != "" {
					args["continuation_token"] = toks[page]
				}
				next := toks[(page+1)%3]
				if next == "" {
					next = opToken("p0") // the server hands back a token that starts over
				}
				b.do(fmt.Sprintf("Next page (%d).", round*3+page+1), "s3_list_objects_v2", args, map[string]any{"Contents": opObjects("daily/", page, 8), "IsTruncated": true, "KeyCount": 8, "NextContinuationToken": next})
				if page == 2 {
					toks[0] = opToken("p0")
				}
			}
		}
		add(b)
	}

	// Counts compared over and over, the filter respelled and renamed.
	{
		b := opRunOf("etl-row-count-renamed-filter", "data-pipeline", true)
		asks := []map[string]any{
			{"table": "fact_orders", "where": "order_date = '2026-12-01'"},
			{"table": "fact_orders", "filter": "order_date='2026-12-01'"},
			{"table": "FACT_ORDERS", "where": "order_date = DATE '2026-12-01'"},
			{"table": "fact_orders", "condition": "order_date = '2026-12-01'"},
			{"table": "fact_orders", "predicate": "order_date='2026-12-01'"},
			{"table": "fact_orders", "where": "'2026-12-01' = order_date"},
		}
		b.do("Source side first.", "source_row_count", map[string]any{"table": "orders", "where": "created_at::date = '2026-12-01'"}, map[string]any{"count": 48213, "table": "orders", "database": "oltp-primary"})
		for i, a := range asks {
			if i == 3 {
				b.from()
			}
			b.do("The warehouse count again, written another way.", "warehouse_row_count", a, map[string]any{"count": 47960, "table": "fact_orders", "warehouse": "WH_ANALYTICS"})
		}
		add(b)
	}

	// A run whose state flaps between two values, its attempt the same.
	{
		b := opRunOf("etl-state-flaps", "data-pipeline", true)
		for i := 0; i < 8; i++ {
			if i == 4 {
				b.from()
			}
			st := map[string]any{"run_id": "r-90411", "task": "dedupe_sessions", "attempt": 2, "state": "up_for_retry", "message": "Task failed with exit code 137; scheduled for retry"}
			if i%2 == 1 {
				st = map[string]any{"run_id": "r-90411", "task": "dedupe_sessions", "attempt": 2, "state": "running", "message": "Task is running on worker celery@etl-worker-3"}
			}
			b.do("Polling the retry.", "etl_run_state", map[string]any{"run_id": "r-90411"}, st)
		}
		add(b)
	}

	// --- a scheduling agent -------------------------------------------------

	// Eight attendees' free/busy, then five days searched one by one; four
	// answer the same "no slot".
	{
		b := opRunOf("cal-find-slot-week", "scheduling", false)
		people := []string{"ana.sousa@acme.io", "li.wei@acme.io", "mara.ilic@acme.io", "priya.n@acme.io", "tom.berg@acme.io", "ines.roy@acme.io", "kofi.mensah@acme.io", "sara.kim@acme.io"}
		for i, p := range people {
			busy := []map[string]any{{"start": "2026-12-08T09:00:00+01:00", "end": "2026-12-08T10:00:00+01:00"}}
			if i%3 == 0 {
				busy = append(busy, map[string]any{"start": fmt.Sprintf("2026-12-%02dT%02d:00:00+01:00", 8+i%5, 11+i%4), "end": fmt.Sprintf("2026-12-%02dT%02d:30:00+01:00", 8+i%5, 11+i%4)})
			}
			b.do("Free/busy of "+p+".", "gcal_freebusy", map[string]any{"calendar": p, "time_min": "2026-12-08T00:00:00+01:00", "time_max": "2026-12-13T00:00:00+01:00"}, map[string]any{"calendar": p, "busy": busy})
		}
		for d := 8; d <= 12; d++ {
			res := map[string]any{"slots": []any{}, "reason": "no common free 60-minute window between 09:00 and 17:00 Europe/Berlin"}
			if d == 12 {
				res = map[string]any{"slots": []map[string]any{{"start": "2026-12-12T15:00:00+01:00", "end": "2026-12-12T16:00:00+01:00"}}}
			}
			b.do(fmt.Sprintf("Trying December %d.", d), "gcal_find_slots", map[string]any{"attendees": people, "duration_minutes": 60, "day": fmt.Sprintf("2026-12-%02d", d)}, res)
		}
		b.writes("gcal_insert_event").do("Booking Friday 15:00.", "gcal_insert_event", map[string]any{"summary": "Q1 planning", "start": "2026-12-12T15:00:00+01:00", "end": "2026-12-12T16:00:00+01:00", "attendees": people}, map[string]any{"id": "evt_" + opHex("q1", 16), "status": "confirmed"})
		add(b)
	}

	// Twelve one-on-ones booked: free/busy and an insert each, answered alike.
	{
		b := opRunOf("cal-book-one-on-ones", "scheduling", false).writes("gcal_insert_event")
		for i := 0; i < 12; i++ {
			who := fmt.Sprintf("report%02d@acme.io", i+1)
			day := fmt.Sprintf("2026-12-%02d", 8+i%5)
			b.do("Checking "+who+".", "gcal_freebusy", map[string]any{"calendar": who, "time_min": day + "T09:00:00+01:00", "time_max": day + "T17:00:00+01:00"}, map[string]any{"calendar": who, "busy": []any{}})
			b.do("Booking "+who+".", "gcal_insert_event", map[string]any{"summary": "1:1", "attendees": []string{"lead@acme.io", who}, "start": fmt.Sprintf("%sT%02d:00:00+01:00", day, 9+i/5), "end": fmt.Sprintf("%sT%02d:30:00+01:00", day, 9+i/5)},
				map[string]any{"id": "evt_" + opHex(who, 16), "status": "confirmed", "htmlLink": "https://calendar.example.com/event?eid=" + opHex(who+"l", 20)})
		}
		add(b)
	}

	// The same afternoon asked again and again, its window written in
	// another zone, its length in other units.
	{
		b := opRunOf("cal-same-window-respelled", "scheduling", true)
		asks := []map[string]any{
			{"attendees": []string{"ana.sousa@acme.io", "li.wei@acme.io"}, "start": "2026-12-09T13:00:00+01:00", "end": "2026-12-09T18:00:00+01:00", "duration": "45m"},
			{"attendees": []string{"li.wei@acme.io", "ana.sousa@acme.io"}, "start": "2026-12-09T12:00:00Z", "end": "2026-12-09T17:00:00Z", "duration": "45 minutes"},
			{"attendees": []string{"ana.sousa@acme.io", "li.wei@acme.io"}, "start": "2026-12-09T13:00:00+01:00", "end": "2026-12-09T18:00:00+01:00", "duration": "PT45M"},
			{"attendees": []string{"ana.sousa@acme.io", "li.wei@acme.io"}, "start": "2026-12-09T07:00:00-05:00", "end": "2026-12-09T12:00:00-05:00", "duration": "0.75h"},
			{"attendees": []string{"ANA.SOUSA@acme.io", "li.wei@acme.io"}, "start": "2026-12-09T13:00:00+01:00", "end": "2026-12-09T18:00:00+01:00", "duration": "45"},
		}
		for i, a := range asks {
			if i == 3 {
				b.from()
			}
			b.do("Maybe I asked it wrong; trying the window again.", "gcal_find_slots", a, map[string]any{"slots": []any{}, "reason": "no common free 45-minute window; li.wei@acme.io is out of office 2026-12-09"})
		}
		add(b)
	}

	// An event moved between two times, each conflicting with someone:
	// the same two moves again and again.
	{
		b := opRunOf("cal-reschedule-oscillates", "scheduling", true).writes("gcal_patch_event")
		for round := 0; round < 4; round++ {
			for half, at := range []string{"10:00", "14:00"} {
				if round == 3 && half == 0 {
					b.from()
				}
				b.do("Moving the review to "+at+".", "gcal_patch_event", map[string]any{"event_id": "evt_7f3a2c", "start": "2026-12-10T" + at + ":00+01:00"}, map[string]any{"id": "evt_7f3a2c", "status": "confirmed", "updated": "ok"})
				who := []string{"tom.berg@acme.io has 'Board prep' 10:00-11:00", "sara.kim@acme.io has 'Dentist' 13:30-15:00"}[half]
				b.do("Any conflicts now?", "gcal_conflicts", map[string]any{"event_id": "evt_7f3a2c"}, map[string]any{"conflicts": []string{who}})
			}
		}
		add(b)
	}

	// --- an infrastructure agent -----------------------------------------------

	// A rollout watched until every pod is ready; their ages grow.
	{
		b := opRunOf("k8s-rollout-becomes-ready", "infra", false).writes("kubectl_apply")
		b.do("Applying the new image.", "kubectl_apply", map[string]any{"manifest": "deploy/api.yaml", "namespace": "prod"}, "deployment.apps/api configured")
		states := [][]string{{"0/1", "0/1", "0/1"}, {"1/1", "0/1", "0/1"}, {"1/1", "1/1", "0/1"}, {"1/1", "1/1", "0/1"}, {"1/1", "1/1", "1/1"}}
		st := [][]string{{"ContainerCreating", "ContainerCreating", "Pending"}, {"Running", "ContainerCreating", "Pending"}, {"Running", "Running", "ContainerCreating"}, {"Running", "Running", "Running"}, {"Running", "Running", "Running"}}
		for i := range states {
			b.do("Watching the pods.", "kubectl", map[string]any{"command": "get pods -n prod -l app=api"}, opPods("api", states[i], st[i], []string{"0", "0", "0"}, 5+i*20))
		}
		b.do("Rollout status.", "kubectl", map[string]any{"command": "rollout status deployment/api -n prod"}, "deployment \"api\" successfully rolled out")
		add(b)
	}

	// A batch CLI asked about ten job ids, each COMPLETED alike.
	{
		b := opRunOf("cli-batch-status-by-id", "infra", false)
		for i := 0; i < 10; i++ {
			id := 55120 + i*7
			b.do(fmt.Sprintf("Status of job %d.", id), "shell", map[string]any{"command": fmt.Sprintf("batchctl describe --job-id=%d --output=text", id)},
				"state: COMPLETED\nexit_code: 0\nattempts: 1\nqueue: nightly-etl\nowner: data-platform")
		}
		add(b)
	}

	// A terraform plan in eight workspaces, each "No changes" with its time.
	{
		b := opRunOf("terraform-drift-scan", "infra", false)
		for i, ws := range []string{"eu-west-1", "eu-central-1", "us-east-1", "us-west-2", "ap-south-1", "ap-northeast-1", "sa-east-1", "ca-central-1"} {
			b.do("Plan in "+ws+".", "terraform", map[string]any{"args": "plan -no-color -input=false -detailed-exitcode", "chdir": "envs/" + ws},
				fmt.Sprintf("Refreshing state... [id=vpc-%s]\nRefreshing state... [id=sg-%s]\n\nNo changes. Your infrastructure matches the configuration.\n\nTerraform has compared your real infrastructure against your configuration\nand found no differences, so no changes are needed.\n\nexit status 0 (plan took %.1fs)", opHex(ws, 17), opHex(ws+"sg", 17), 9.3+float64(i)*1.7))
		}
		add(b)
	}

	// An autoscaler watched while the load test runs: replicas move.
	{
		b := opRunOf("k8s-hpa-scales", "infra", false).writes("kubectl_scale")
		b.do("Scaling the load generator.", "kubectl_scale", map[string]any{"resource": "deployment/loadgen", "namespace": "perf", "replicas": 20}, "deployment.apps/loadgen scaled")
		for i, rep := range []int{3, 3, 5, 8, 8, 12, 12, 12, 14, 14} {
			cpu := []int{41, 88, 92, 81, 77, 73, 69, 70, 62, 60}[i]
			b.do("HPA now?", "kubectl", map[string]any{"command": "get hpa api -n prod"},
				fmt.Sprintf("NAME   REFERENCE        TARGETS     MINPODS   MAXPODS   REPLICAS   AGE\napi    Deployment/api   %d%%/60%%     3         20        %d         %s\n", cpu, rep, opAge(86400+i*45)))
		}
		for i := 0; i < 6; i++ {
			pod := fmt.Sprintf("api-%s-%s", opHex("api", 10), opHex(fmt.Sprint("p", i), 5))
			b.do("Logs of "+pod+".", "kubectl", map[string]any{"command": "logs " + pod + " -n prod --tail=5"},
				fmt.Sprintf("%s INFO listening on :8080\n%s INFO warmed cache (1200 keys)\n%s WARN slow request /v1/orders took 812ms\n", opAt(i*60), opAt(i*60+4), opAt(i*60+31)))
		}
		add(b)
	}

	// A pod in CrashLoopBackOff polled: nothing changes but the ages.
	{
		b := opRunOf("k8s-crashloop-only-ages-move", "infra", true)
		for i := 0; i < 7; i++ {
			if i == 2 {
				b.from()
			}
			b.do("Is the worker up yet?", "kubectl", map[string]any{"command": "get pods -n jobs -l app=worker"},
				opPods("worker", []string{"0/1"}, []string{"CrashLoopBackOff"}, []string{fmt.Sprintf("7 (%s ago)", opAge(20+i*35))}, 1500+i*35))
		}
		add(b)
	}

	// The same plan again and again with other flags; only its time moves.
	{
		b := opRunOf("terraform-plan-again-timed", "infra", true)
		flags := []string{"plan -no-color -input=false", "plan -no-color -input=false -refresh=true", "plan -input=false -no-color -lock=false", "plan -no-color -input=false -parallelism=20", "plan -no-color -input=false -refresh=true -lock-timeout=60s", "plan -no-color -input=false"}
		for i, f := range flags {
			if i == 3 {
				b.from()
			}
			b.do("The drift must be there; planning again.", "terraform", map[string]any{"args": f, "chdir": "envs/prod"},
				fmt.Sprintf("Refreshing state... [id=vpc-0a1b2c3d4e5f60718]\nRefreshing state... [id=sg-0f9e8d7c6b5a43210]\n\nNo changes. Your infrastructure matches the configuration.\n\nexit status 0 (plan took %.1fs)", 11.2+float64(i*i)*0.9))
		}
		add(b)
	}

	// One pod described again and again, its words reordered, its events'
	// ages moving.
	{
		b := opRunOf("k8s-describe-reordered", "infra", true)
		cmds := []string{"describe pod api-6c9f-x2k4 -n prod", "-n prod describe pod api-6c9f-x2k4", "describe pods/api-6c9f-x2k4 --namespace prod", "describe pod/api-6c9f-x2k4 -n prod", "describe pod api-6c9f-x2k4 --namespace=prod", "-n=prod describe pod api-6c9f-x2k4"}
		for i, c := range cmds {
			if i == 3 {
				b.from()
			}
			b.do("Looking at the pod's events once more.", "kubectl", map[string]any{"command": c},
				fmt.Sprintf("Name:         api-6c9f-x2k4\nNamespace:    prod\nStatus:       Pending\nEvents:\n  Type     Reason            Age   From               Message\n  ----     ------            ----  ----               -------\n  Warning  FailedScheduling  %s   default-scheduler  0/6 nodes are available: 3 Insufficient memory, 3 node(s) had untolerated taint {dedicated: gpu}.\n", opAge(300+i*40)))
		}
		add(b)
	}

	// --- a spreadsheet agent ----------------------------------------------------

	// Rows read in ranges of fifty, then a status written into each row.
	{
		b := opRunOf("sheets-status-per-row", "spreadsheet", false).writes("sheets_update_values")
		for blk := 0; blk < 4; blk++ {
			var rows [][]any
			for i := 0; i < 10; i++ {
				r := 2 + blk*10 + i
				rows = append(rows, []any{fmt.Sprintf("INV-%05d", 30000+r*3), fmt.Sprintf("%d.%02d", 100+r*13, r%100), []string{"EUR", "USD", "GBP"}[r%3], ""})
			}
			rng := fmt.Sprintf("Invoices!A%d:D%d", 2+blk*10, 11+blk*10)
			b.do("Reading "+rng+".", "sheets_get_values", map[string]any{"spreadsheet_id": "1xQ" + opHex("inv", 30), "range": rng}, map[string]any{"range": rng, "majorDimension": "ROWS", "values": rows})
			for i := 0; i < 10; i++ {
				r := 2 + blk*10 + i
				cell := fmt.Sprintf("Invoices!D%d", r)
				b.do("Marking row "+fmt.Sprint(r)+".", "sheets_update_values", map[string]any{"spreadsheet_id": "1xQ" + opHex("inv", 30), "range": cell, "values": [][]string{{"reconciled"}}},
					map[string]any{"spreadsheetId": "1xQ" + opHex("inv", 30), "updatedRange": cell, "updatedRows": 1, "updatedColumns": 1, "updatedCells": 1})
			}
		}
		add(b)
	}

	// Fifteen customers looked up by name; most are not in the sheet.
	{
		b := opRunOf("sheets-lookup-customers", "spreadsheet", false)
		names := []string{"Müller GmbH", "Schmidt GmbH", "Brightline Ltd", "Nordwind AG", "Harbor Freight Co", "Kaito Shoji KK", "Lumen SARL", "Vega Partners", "Orbit Labs GmbH", "Cobalt Systems", "Quercus BV", "Atlas Logistics", "Pine & Oak LLC", "Tessera SpA", "Helios Energy AG"}
		for i, n := range names {
			res := map[string]any{"matches": []any{}, "searched": "Customers!A2:A5000", "sheet": "Customers"}
			if i%4 == 2 {
				res = map[string]any{"matches": []map[string]any{{"cell": fmt.Sprintf("Customers!A%d", 100+i*17), "value": n}}, "searched": "Customers!A2:A5000", "sheet": "Customers"}
			}
			b.do("Is "+n+" a customer?", "sheets_find", map[string]any{"spreadsheet_id": "1Cu" + opHex("cust", 30), "query": n}, res)
		}
		add(b)
	}

	// One range asked for in other spellings and under other names.
	{
		b := opRunOf("sheets-range-respelled", "spreadsheet", true)
		id := "1Fc" + opHex("fc", 30)
		asks := []map[string]any{
			{"spreadsheet_id": id, "range": "Q4!A1:D20"},
			{"spreadsheet_id": id, "range": "'Q4'!A1:D20"},
			{"spreadsheet_id": id, "sheet": "Q4", "range": "A1:D20"},
			{"spreadsheetId": id, "range": "Q4!A1:D20"},
			{"spreadsheet_id": id, "range": "q4!a1:d20"},
			{"spreadsheet_id": id, "range": "Q4!A1:D20", "value_render": "FORMATTED_VALUE"},
		}
		vals := [][]string{{"Region", "Oct", "Nov", "Dec"}, {"EU", "412,300", "398,120", ""}, {"US", "1,022,900", "1,104,350", ""}, {"APAC", "287,400", "301,050", ""}}
		for i, a := range asks {
			if i == 3 {
				b.from()
			}
			b.do("December is still empty; reading the range again.", "sheets_get_values", a, map[string]any{"range": "Q4!A1:D20", "values": vals})
		}
		add(b)
	}

	// A range that does not parse, tried with cosmetic changes.
	{
		b := opRunOf("sheets-bad-range-storm", "spreadsheet", true)
		for i, rng := range []string{"Sheet 1!A:Z", "'Sheet 1!A:Z'", "Sheet 1 !A:Z", "Sheet 1!A1:Z", "Sheet 1!a:z", "Sheet 1 ! A:Z"} {
			if i == 3 {
				b.from()
			}
			b.fail("Reading the data.", "sheets_get_values", map[string]any{"spreadsheet_id": "1Da" + opHex("d", 30), "range": rng}, "invalid_args", "Unable to parse range: "+rng)
		}
		add(b)
	}

	// --- a mail-triage agent ----------------------------------------------------

	// Forty threads listed in pages, each read and labelled; every
	// newsletter ends in the same footer.
	{
		b := opRunOf("mail-triage-forty-threads", "mail", false).writes("mail_modify_labels")
		tok := ""
		for page := 0; page < 4; page++ {
			args := map[string]any{"label": "INBOX", "max_results": 10}
			if tok != "" {
				args["page_token"] = tok
			}
			var ids []map[string]any
			for i := 0; i < 10; i++ {
				ids = append(ids, map[string]any{"id": "18c" + opHex(fmt.Sprint("thread", page*10+i), 13), "snippet": fmt.Sprintf("Weekly digest #%d ...", 300+page*10+i)})
			}
			tok = fmt.Sprint(9_811_000_000 + page*37)
			b.do("Listing the inbox.", "mail_list_threads", args, map[string]any{"threads": ids, "nextPageToken": tok, "resultSizeEstimate": 40})
			for i := 0; i < 10; i++ {
				n := page*10 + i
				th := opMailThread(n, []string{"news@vendor-a.com", "digest@vendor-b.io", "alerts@monitoring.example.com"}[n%3], fmt.Sprintf("Weekly digest #%d", 300+n), fmt.Sprintf("This week: %d new releases and %d incidents resolved.", n%7+1, n%3))
				b.do("Reading it.", "mail_get_thread", map[string]any{"thread_id": th["id"]}, th)
				b.do("Labelling it.", "mail_modify_labels", map[string]any{"thread_id": th["id"], "add": []string{"Newsletters"}, "remove": []string{"INBOX"}}, map[string]any{"id": th["id"], "labelIds": []string{"Newsletters"}})
			}
		}
		add(b)
	}

	// Five e-mails looked up in a help centre that finds nothing and offers
	// the same three popular articles every time, then answered.
	{
		b := opRunOf("mail-helpcenter-popular-articles", "mail", false).writes("mail_draft_reply")
		popular := []map[string]any{
			{"title": "Getting started with Acme", "url": "https://help.acme.io/articles/100-getting-started"},
			{"title": "Managing your account", "url": "https://help.acme.io/articles/101-account"},
			{"title": "Contact support", "url": "https://help.acme.io/articles/102-contact"},
		}
		asks := []string{"invoice shows wrong VAT number", "cannot export data to parquet", "SSO login loops back to start page", "delete workspace permanently", "webhook retries too aggressive"}
		for _, q := range asks {
			b.do("Looking up an article for this e-mail.", "helpcenter_search", map[string]any{"query": q, "locale": "en"}, map[string]any{"results": popular})
		}
		for i := range asks {
			b.do("Drafting the reply.", "mail_draft_reply", map[string]any{"thread_id": "18c" + opHex(fmt.Sprint("hc", i), 13), "body": "Thanks for writing in; a colleague will follow up shortly."}, map[string]any{"draft_id": "r" + opHex(fmt.Sprint("d", i), 16)})
		}
		add(b)
	}

	// The same search in mail syntax, reworded each time, the same two threads.
	{
		b := opRunOf("mail-search-respelled", "mail", true)
		hits := []map[string]any{
			{"id": "18c" + opHex("inv-a", 13), "snippet": "Your November invoice INV-88213 is attached", "from": "billing@acme-cloud.io"},
			{"id": "18c" + opHex("inv-b", 13), "snippet": "Reminder: invoice INV-88213 is due on 2026-12-15", "from": "billing@acme-cloud.io"},
		}
		for i, q := range []string{"from:billing@acme-cloud.io invoice november", "invoice from:billing@acme-cloud.io after:2026/11/01", "subject:(invoice) from:(billing@acme-cloud.io)", "from:billing@acme-cloud.io subject:invoice newer_than:60d", "invoice november from:billing@acme-cloud.io has:attachment", "from:(billing@acme-cloud.io) invoice"} {
			if i == 3 {
				b.from()
			}
			b.do("The credit note must be there too; searching again.", "mail_search", map[string]any{"q": q}, map[string]any{"threads": hits, "resultSizeEstimate": 2})
		}
		add(b)
	}

	// A reply sent to an address that is refused, retried with the
	// address respelled.
	{
		b := opRunOf("mail-send-rejected-respelled", "mail", true).writes("mail_send")
		for i, to := range []string{"j.doe@acme", "J.Doe@acme", " j.doe@acme", "<j.doe@acme>", "j.doe@acme.", "John Doe <j.doe@acme>"} {
			if i == 3 {
				b.from()
			}
			b.fail("Sending the reply.", "mail_send", map[string]any{"to": to, "subject": "Re: your export", "body": "The export is ready."}, "invalid_args",
				"550 5.1.3 Recipient address rejected: 'j.doe@acme' is not a valid RFC 5321 address")
		}
		add(b)
	}

	// --- a translation agent -----------------------------------------------------

	// Twenty UI strings translated; short strings that share words, some
	// answered alike; the glossary knows few of them.
	{
		b := opRunOf("translate-ui-strings", "translation", false)
		segs := [][2]string{{"Save", "Speichern"}, {"Save changes", "Änderungen speichern"}, {"Save draft", "Entwurf speichern"}, {"Discard changes", "Änderungen verwerfen"}, {"Cancel", "Abbrechen"}, {"Cancel order", "Bestellung stornieren"}, {"Cancel subscription", "Abonnement kündigen"}, {"Your order has shipped", "Ihre Bestellung wurde versandt"}, {"Your order has been delivered", "Ihre Bestellung wurde zugestellt"}, {"Your order was cancelled", "Ihre Bestellung wurde storniert"},
			{"Order details", "Bestelldetails"}, {"Order history", "Bestellverlauf"}, {"Track your order", "Sendung verfolgen"}, {"Sign in", "Anmelden"}, {"Sign out", "Abmelden"}, {"Sign in with SSO", "Mit SSO anmelden"}, {"Close", "Schließen"}, {"Close account", "Konto schließen"}, {"Are you sure you want to close your account?", "Möchten Sie Ihr Konto wirklich schließen?"}, {"Are you sure you want to cancel your order?", "Möchten Sie Ihre Bestellung wirklich stornieren?"}}
		for i, s := range segs {
			if i%5 == 0 {
				b.fail("Glossary entry for "+s[0]+"?", "glossary_lookup", map[string]any{"term": s[0], "source": "en", "target": "de"}, "not_found", "no glossary entry for '"+s[0]+"' (en→de)")
			}
			b.do("Translating.", "mt_translate", map[string]any{"text": s[0], "source_lang": "en", "target_lang": "de", "formality": "more"}, map[string]any{"translation": s[1], "detected_source_lang": "EN", "billed_characters": len(s[0])})
		}
		add(b)
	}

	// One sentence translated again and again, its punctuation and case
	// changed, its formality option renamed: the same German each time.
	{
		b := opRunOf("translate-same-sentence-respelled", "translation", true)
		asks := []map[string]any{
			{"text": "Your payment could not be processed, please update your card details.", "source_lang": "en", "target_lang": "de", "formality": "more"},
			{"text": "Your payment could not be processed. Please update your card details.", "source_lang": "en", "target_lang": "de", "formality": "prefer_more"},
			{"text": "your payment could not be processed - please update your card details", "source_lang": "EN", "target_lang": "DE", "formality": "more"},
			{"text": "Your payment could not be processed; please update your card details!", "target_lang": "de", "formal": true},
			{"text": "Your payment could not be processed, please update your card details.", "source_lang": "en", "target_lang": "de-DE", "formality": "more"},
		}
		for i, a := range asks {
			if i == 3 {
				b.from()
			}
			b.do("It should say 'Zahlungsdaten', not 'Kartendaten'; trying again.", "mt_translate", a, map[string]any{"translation": "Ihre Zahlung konnte nicht verarbeitet werden. Bitte aktualisieren Sie Ihre Kartendaten.", "detected_source_lang": "EN", "billed_characters": 71})
		}
		add(b)
	}

	// A segment written and checked, the same two versions in turn.
	{
		b := opRunOf("translate-qa-edit-oscillates", "translation", true).writes("tm_update_segment")
		vs := []string{"Bitte aktualisieren Sie Ihre Zahlungsdaten.", "Bitte aktualisiere deine Zahlungsdaten."}
		issues := []string{"style: formal 'Sie' in a project that uses informal 'du' (styleguide §2.1)", "terminology: 'Zahlungsdaten' must be 'Zahlungsinformationen' (glossary) and informal 'du' is not allowed in billing (§4.3)"}
		for round := 0; round < 4; round++ {
			for h := 0; h < 2; h++ {
				if round == 3 && h == 0 {
					b.from()
				}
				b.do("Updating the segment.", "tm_update_segment", map[string]any{"segment_id": "seg-48812", "target": vs[h]}, map[string]any{"segment_id": "seg-48812", "saved": true})
				b.do("QA check.", "qa_check_segment", map[string]any{"segment_id": "seg-48812"}, map[string]any{"segment_id": "seg-48812", "issues": []string{issues[h]}, "passed": false})
			}
		}
		add(b)
	}

	// --- a code reviewer on a pull request ------------------------------------

	// Forty files listed in pages, twelve diffs read (each with the same
	// license header), comments posted.
	{
		b := opRunOf("pr-review-many-files", "code-review", false).writes("pr_create_review_comment")
		var files []string
		for i := 0; i < 40; i++ {
			files = append(files, fmt.Sprintf("internal/%s/%s.go", []string{"store", "api", "auth", "billing"}[i%4], []string{"handler", "cache", "model", "sql", "util"}[i/8]+fmt.Sprint(i%8)))
		}
		for page := 1; page <= 2; page++ {
			var fs []map[string]any
			for _, f := range files[(page-1)*20 : page*20] {
				fs = append(fs, map[string]any{"filename": f, "status": "modified", "additions": 12 + len(f), "deletions": 3})
			}
			b.do(fmt.Sprintf("Files, page %d.", page), "pr_list_files", map[string]any{"repo": "acme/platform", "pull_number": 4821, "per_page": 20, "page": page}, fs)
		}
		for i := 0; i < 12; i++ {
			f := files[i*3]
			b.do("Diff of "+f+".", "pr_get_file_diff", map[string]any{"repo": "acme/platform", "pull_number": 4821, "path": f}, opDiff(f, 2))
			if i%3 == 0 {
				b.do("Commenting.", "pr_create_review_comment", map[string]any{"repo": "acme/platform", "pull_number": 4821, "path": f, "line": 6, "body": "This check runs before the lock is taken; can load() race with the writer?"},
					map[string]any{"id": 1_700_000_000 + i, "html_url": fmt.Sprintf("https://github.example.com/acme/platform/pull/4821#discussion_r%d", 1_700_000_000+i)})
			}
		}
		add(b)
	}

	// Review threads paged by a GraphQL cursor that comes back to the start.
	{
		b := opRunOf("pr-threads-cursor-comes-back", "code-review", true)
		cur := []any{nil, "Y3Vyc29yOnYyOpK5MjAyNi0xMi0wMVQxMDowMDowMFo=", "Y3Vyc29yOnYyOpK5MjAyNi0xMi0wMlQxMTozMDowMFo="}
		for round := 0; round < 3; round++ {
			for p := 0; p < 3; p++ {
				if round == 1 && p == 2 {
					b.from()
				}
				var nodes []map[string]any
				for i := 0; i < 5; i++ {
					nodes = append(nodes, map[string]any{"id": "PRRT_" + opHex(fmt.Sprint("t", p, i), 14), "isResolved": i%2 == 0, "path": fmt.Sprintf("internal/api/handler%d.go", p*5+i), "comments": map[string]any{"totalCount": 1 + i%3}})
				}
				end := cur[(p+1)%3]
				if end == nil {
					end = "Y3Vyc29yOnYyOpK5MjAyNi0xMS0zMFQwOTowMDowMFo="
				}
				args := map[string]any{"repo": "acme/platform", "pull_number": 4821, "first": 5}
				if cur[p] != nil {
					args["after"] = cur[p]
				}
				b.do("Next page of review threads.", "pr_review_threads", args, map[string]any{"nodes": nodes, "pageInfo": map[string]any{"hasNextPage": true, "endCursor": end}})
				if p == 2 {
					cur[0] = "Y3Vyc29yOnYyOpK5MjAyNi0xMS0zMFQwOTowMDowMFo="
				}
			}
		}
		add(b)
	}

	// One file's diff asked for under other spellings and other names.
	{
		b := opRunOf("pr-diff-renamed-args", "code-review", true)
		asks := []map[string]any{
			{"repo": "acme/platform", "pull_number": 4821, "path": "internal/api/handler.go"},
			{"repo": "acme/platform", "pull_number": 4821, "path": "./internal/api/handler.go"},
			{"repo": "acme/platform", "pull_number": "4821", "file": "internal/api/handler.go"},
			{"repo": "acme/platform", "pr": 4821, "path": "internal/api/handler.go"},
			{"repository": "acme/platform", "pull_number": 4821, "path": "internal/api/handler.go", "context_lines": 3},
		}
		for i, a := range asks {
			if i == 3 {
				b.from()
			}
			b.do("Let me look at that handler diff again.", "pr_get_file_diff", a, opDiff("internal/api/handler.go", 3))
		}
		add(b)
	}

	// --- a CI fixer -------------------------------------------------------------

	// A pipeline polled while its jobs finish; it fails; a fix is committed;
	// the new pipeline is polled until it passes.
	{
		b := opRunOf("ci-pipeline-fixed-and-green", "ci", false).writes("repo_commit_file")
		jobs := []string{"lint", "unit", "integration", "build-image", "deploy-staging"}
		poll := func(id int, fail bool) {
			for k := 0; k <= len(jobs); k++ {
				var js []map[string]any
				for j, n := range jobs {
					st := "pending"
					switch {
					case j < k:
						st = "success"
						if fail && n == "integration" {
							st = "failed"
						}
					case j == k:
						st = "running"
					}
					js = append(js, map[string]any{"name": n, "status": st, "id": id*10 + j})
				}
				status := "running"
				if k == len(jobs) {
					status = "success"
					if fail {
						status = "failed"
					}
				}
				b.do("Pipeline status.", "pipeline_get", map[string]any{"project": "acme/api", "pipeline_id": id}, map[string]any{"id": id, "status": status, "jobs": js, "updated_at": opAt(id%100*60 + k*90)})
			}
		}
		poll(88120, true)
		b.do("The integration log.", "pipeline_job_log", map[string]any{"project": "acme/api", "job_id": 881202},
			fmt.Sprintf("%s $ go test ./integration/...\n%s --- FAIL: TestOrderExport (2.31s)\n%s     export_test.go:88: want 3 rows, got 2: missing column 'channel'\n%s FAIL\n", opAt(0), opAt(1), opAt(3), opAt(3)))
		b.do("Fixing the migration.", "repo_commit_file", map[string]any{"project": "acme/api", "branch": "fix/export", "path": "migrations/0042_channel.sql", "content": "ALTER TABLE orders ADD COLUMN channel text NOT NULL DEFAULT 'web';\n"}, map[string]any{"commit": opHex("fix", 40), "pipeline_id": 88131})
		poll(88131, false)
		add(b)
	}

	// A pipeline stuck pending: polled, only its queued duration grows.
	{
		b := opRunOf("ci-pipeline-stuck-pending", "ci", true)
		for i := 0; i < 8; i++ {
			if i == 2 {
				b.from()
			}
			b.do("Waiting for a runner.", "pipeline_get", map[string]any{"project": "acme/api", "pipeline_id": 88190},
				map[string]any{"id": 88190, "status": "pending", "jobs": []map[string]any{{"name": "build", "status": "pending", "runner": nil}}, "queued_duration": 312.4 + float64(i)*61.7, "updated_at": opAt(0)})
		}
		add(b)
	}

	// A CI file linted again and again with cosmetic changes, the same error.
	{
		b := opRunOf("ci-lint-cosmetic-storm", "ci", true)
		base := "stages: [build, test]\nbuild:\n  stage: build\n  script:\n    - make build\n    - - make image\n"
		variants := []string{base, strings.ReplaceAll(base, "  ", "    "), base + "\n", strings.Replace(base, "stages: [build, test]", "stages:\n  - build\n  - test", 1), "# lint again\n" + base, strings.ReplaceAll(base, "make", "  make")}
		for i, v := range variants {
			if i == 3 {
				b.from()
			}
			b.fail("Linting the CI config.", "ci_lint", map[string]any{"project": "acme/api", "content": v}, "invalid_args",
				"jobs:build:script config should be a string or a nested array of strings up to 10 levels deep")
		}
		add(b)
	}

	// --- a web-form filler --------------------------------------------------------

	// A six-page wizard: fields typed, Next clicked, each page a new snapshot.
	{
		b := opRunOf("form-wizard-six-pages", "web-form", false).writes("form_fill", "form_click")
		pages := [][]string{{"Company name", "Registration number"}, {"Street", "City", "Postcode"}, {"Director first name", "Director last name"}, {"VAT number"}, {"IBAN", "BIC"}, {"Contact e-mail", "Phone"}}
		vals := map[string]string{}
		for i, fs := range pages {
			title := fmt.Sprintf("Step %d of 6", i+1)
			b.do("What is on this page?", "form_snapshot", map[string]any{}, opSnapshot(title, fs, vals, ""))
			for j, f := range fs {
				v := fmt.Sprintf("value-%d-%d", i, j)
				vals[f] = v
				b.do("Typing "+f+".", "form_fill", map[string]any{"ref": fmt.Sprintf("e%d", 20+j), "element": f, "text": v}, "ok")
			}
			b.do("Next.", "form_click", map[string]any{"ref": "e41", "element": "Next"}, "ok")
		}
		b.do("Done?", "form_snapshot", map[string]any{}, opSnapshot("Thank you, your application was submitted (ref APP-20261203-4471)", nil, nil, ""))
		add(b)
	}

	// A 25-row expense table filled in; a snapshot every five rows shows it grow.
	{
		b := opRunOf("form-expense-rows", "web-form", false).writes("form_fill", "form_click")
		var rows []string
		for i := 0; i < 25; i++ {
			b.do("Adding a row.", "form_click", map[string]any{"ref": "e90", "element": "Add expense"}, "ok")
			b.do("Amount.", "form_fill", map[string]any{"ref": fmt.Sprintf("row%d-amount", i), "element": "Amount", "text": fmt.Sprintf("%d.%02d", 12+i*3, i*7%100)}, "ok")
			b.do("Category.", "form_fill", map[string]any{"ref": fmt.Sprintf("row%d-cat", i), "element": "Category", "text": []string{"Travel", "Meals", "Lodging"}[i%3]}, "ok")
			rows = append(rows, fmt.Sprintf("Row %d: %d.%02d %s", i+1, 12+i*3, i*7%100, []string{"Travel", "Meals", "Lodging"}[i%3]))
			if i%5 == 4 {
				b.do("Checking the table.", "form_snapshot", map[string]any{}, opSnapshot("Expense report", rows, nil, ""))
			}
		}
		add(b)
	}

	// Next does not advance: a field is refused; the click is described in
	// other words each time, the page the same after each.
	{
		b := opRunOf("form-next-does-not-advance", "web-form", true).writes("form_click")
		vals := map[string]string{"VAT number": "DE 123 456 789"}
		snap := opSnapshot("Step 4 of 6", []string{"VAT number"}, vals, "Please enter a valid VAT number (e.g. DE123456789)")
		b.do("What is on this page?", "form_snapshot", map[string]any{}, opSnapshot("Step 4 of 6", []string{"VAT number"}, vals, ""))
		clicks := []map[string]any{
			{"ref": "e41", "element": "Next"},
			{"ref": "e41", "element": "Next button"},
			{"ref": "e41", "element": "the Next button at the bottom of the form"},
			{"ref": "e41", "element": "Continue to step 5"},
			{"ref": "e41", "element": "Next", "double_click": false},
			{"ref": "e41", "element": "Next →"},
		}
		for i, c := range clicks {
			if i == 2 {
				b.from()
			}
			b.do("Clicking Next.", "form_click", c, "ok")
			b.do("Did it move on?", "form_snapshot", map[string]any{}, snap)
		}
		add(b)
	}

	// --- delegation chains --------------------------------------------------------

	// A localisation lead hands the release notes to four translators, each
	// of whom hands a review to a reviewer; every review says Approved.
	{
		b := opRunOf("deleg-localisation-fanout", "delegation", false).as("l10n-lead").writes("tm_update_segment")
		for _, lang := range []string{"German", "French", "Japanese", "Spanish"} {
			tr := "translator-" + strings.ToLower(lang[:2])
			b.hand("Handing "+lang+" out.", tr, "Translate the v4.2 release notes into "+lang+" and get them reviewed", "Done: "+lang+" release notes translated (38 segments) and approved by review", func(in *opb) {
				for s := 0; s < 3; s++ {
					in.do("Segment.", "tm_update_segment", map[string]any{"segment_id": fmt.Sprintf("rn42-%s-%d", lang[:2], s), "target": fmt.Sprintf("%s text %d", lang, s)}, map[string]any{"saved": true})
				}
				in.hand("Review please.", "l10n-reviewer", "Review the "+lang+" translation of the v4.2 release notes", "Approved. No terminology or style issues found.", func(rv *opb) {
					rv.do("Reading.", "qa_check_segment", map[string]any{"segment_id": fmt.Sprintf("rn42-%s-0", lang[:2])}, map[string]any{"issues": []string{}, "passed": true})
				})
			})
		}
		add(b)
	}

	// An incident commander hands three incidents to the infra agent, which
	// hands the database part to the database agent each time.
	{
		b := opRunOf("deleg-incident-chain", "delegation", false).as("incident-commander").writes("kubectl_rollout_restart", "db_kill_query")
		for i, inc := range []string{"INC-4410 checkout latency", "INC-4417 search 5xx", "INC-4423 export timeouts"} {
			svc := []string{"checkout", "search", "export"}[i]
			b.hand("Over to infra.", "infra-agent", "Mitigate "+inc+" and report", "Mitigated "+inc+": restarted "+svc+", killed a long-running query", func(in *opb) {
				in.do("Pods.", "kubectl", map[string]any{"command": "get pods -n prod -l app=" + svc}, opPods(svc, []string{"1/1", "1/1"}, []string{"Running", "Running"}, []string{"0", "0"}, 9000+i*400))
				in.do("Restarting.", "kubectl_rollout_restart", map[string]any{"deployment": svc, "namespace": "prod"}, "deployment.apps/"+svc+" restarted")
				in.hand("DB side.", "db-agent", "Find and stop what blocks "+svc+"'s queries", "Killed pid "+fmt.Sprint(41000+i*13)+"; no other blockers.", func(db *opb) {
					db.do("Blockers.", "db_blocking_queries", map[string]any{"database": svc}, []map[string]any{{"pid": 41000 + i*13, "duration_s": 1800 + i*60, "query": "SELECT ... FOR UPDATE"}})
					db.do("Stopping it.", "db_kill_query", map[string]any{"database": svc, "pid": 41000 + i*13}, map[string]any{"terminated": true})
				})
			})
		}
		add(b)
	}

	// A runbook handed back to the writer in other words after each review,
	// the reviewer rejecting it for the same two reasons every time.
	{
		b := opRunOf("deleg-runbook-rejected-reworded", "delegation", true).as("ops-lead")
		tasks := []string{"Write the runbook for the Q4 database migration", "Please redo the Q4 database migration runbook", "Rewrite the runbook for migrating the database in Q4, addressing the review", "The Q4 database migration runbook needs another pass", "Write the Q4 DB migration runbook again, carefully this time"}
		for i, task := range tasks {
			if i == 2 {
				b.from()
			}
			b.hand("To the writer.", "runbook-writer", task, "Runbook drafted: 14 steps, rollback included.", nil)
			b.hand("To review.", "runbook-reviewer", "Review the Q4 database migration runbook", "REJECT: 1) no step verifies replication lag before the cut-over; 2) the rollback does not restore the old connection string.", nil)
		}
		add(b)
	}

	// Scheduling through a chain that comes back to its start.
	{
		b := opRunOf("deleg-scheduling-cycle", "delegation", true).as("assistant")
		b.hand("Find a room.", "room-booker", "Book a room for the Q1 planning on Friday afternoon", "", func(rb *opb) {
			rb.do("Rooms.", "rooms_available", map[string]any{"building": "HQ", "date": "2026-12-12", "from": "13:00", "to": "17:00"}, []map[string]any{{"room": "Atlas", "seats": 12}})
			rb.hand("Need the attendees' time.", "calendar-agent", "Confirm when the Q1 planning attendees are free on Friday", "", func(ca *opb) {
				ca.do("Free/busy.", "gcal_freebusy", map[string]any{"calendar": "team-q1@acme.io", "time_min": "2026-12-12T13:00:00+01:00", "time_max": "2026-12-12T17:00:00+01:00"}, map[string]any{"busy": []any{}})
				ca.from()
				ca.hand("The assistant knows the preferences.", "assistant", "Which afternoon slot does the organiser prefer for Q1 planning?", "", nil)
			})
		})
		add(b)
	}

	return out
}
