package loops

import (
	"fmt"
	"testing"
)

// The review of the operations probe's rules (review12): runs written to
// attack them, played by the operations probe's driver (playOps). Legit
// runs that the new rules could refuse: a poll whose progress is a span of
// time (encoded 3m of 45m, CPU in millicores, "starts in 4m"), a key named
// duration that is what a write changed, the same values under swapped
// keys that ask another question (from/to, row/seat, base/head), writes to
// one target that each write something else while an unrelated read is
// made between them, searches that differ only in a date filter. Loops the
// new rules should catch and may not: spans and instants in other
// spellings, a clock in another format, writes to one target by two tools.

// review12Known lists the runs whose outcome is not their label's, each
// with why.
var review12Known = map[string]string{
	// On main when the review began (8f685e0): 6 of 12 loops detected (none
	// early), 11 of 20 legit runs refused; after its fixes 8 and 3. What is
	// left:
	//
	// (A CPU in millicores, 340m, is no longer read as kubectl's age, 25m,
	// past 179: TestMinutesPastThree; a time to go written "starts in 9m"
	// is told from a time taken by the verb before "in": TestStartsIn.
	// Both since the assistants probe.)
	//
	// (Posts to one channel, each saying something else, are other
	// writes since the assistants probe: free text under a key that names
	// what is written, text or message, is what the write writes,
	// TestPostsEachAnother.)
	//
	// Missed: a span in words without "ago" (1.2 seconds) is a length as
	// often as a run time: masking it would refuse progress. (A clock,
	// 00:03:10, is masked since the assistants probe when it stands alone:
	// not a part of a whole nor a time of day, TestClockMasked; a day
	// and its midnight, 2026-12-09 and 2026-12-09T00:00:00Z, are one value,
	// TestFoldMidnight; a button whose ref is renumbered in each
	// snapshot is one target, the page, when its words say what it is,
	// TestRefRenumbered.)
	"poll-took-in-words": "missed",
}

func review12Runs() []*opRun {
	var out []*opRun
	add := func(b *opb) { out = append(out, b.r) }

	// --- legit: progress written as a span of time ------------------------

	// A video transcoded: its progress is how much of it is encoded.
	{
		b := opRunOf("transcode-progress-as-span", "media", false)
		for i, done := range []string{"3m12s", "9m40s", "17m5s", "26m31s", "35m2s", "44m10s"} {
			b.do("How far is the transcode?", "media_job", map[string]any{"job_id": "tc-5521"},
				fmt.Sprintf("job tc-5521: encoding, %s of 45m0s encoded (speed 1.4x), pass %d", done, 1+i/6))
		}
		b.do("Done?", "media_job", map[string]any{"job_id": "tc-5521"}, "job tc-5521: complete, 45m0s encoded, output s3://media/out/tc-5521.mp4")
		add(b)
	}

	// A load test's pods watched until the CPU (in millicores) passes 800m.
	{
		b := opRunOf("kubectl-top-cpu-climbs", "infra", false)
		for _, cpu := range []string{"120m", "340m", "560m", "790m", "905m"} {
			b.do("Is the CPU above 800m yet?", "kubectl", map[string]any{"command": "top pod -n load -l app=api"},
				"NAME                   CPU(cores)   MEMORY(bytes)\napi-7d9f8b6c5d-x2x7q   "+cpu+"         212Mi\n")
		}
		b.do("Now the autoscaler.", "kubectl", map[string]any{"command": "get hpa -n load api"}, "NAME   REFERENCE        TARGETS    MINPODS   MAXPODS   REPLICAS\napi    Deployment/api   113%/80%   2         10        4\n")
		add(b)
	}

	// A deploy queued behind a freeze window: the only moving part is
	// when it starts, counted down, then it runs.
	{
		b := opRunOf("deploy-starts-in-countdown", "ci", false)
		for _, in := range []string{"12m", "9m", "6m", "3m", "1m"} {
			b.do("Has it started?", "deploy_status", map[string]any{"deploy_id": "dp-3381"}, "deploy dp-3381: queued behind freeze window, starts in "+in)
		}
		b.do("Has it started?", "deploy_status", map[string]any{"deploy_id": "dp-3381"}, "deploy dp-3381: running, 2 of 6 hosts updated")
		add(b)
	}

	// A download whose progress is written "Time remaining: 4m 10s".
	{
		b := opRunOf("download-time-remaining-colon", "data-pipeline", false)
		for _, left := range []string{"14m", "11m", "8m", "5m", "2m"} {
			b.do("Is the snapshot down yet?", "transfer_status", map[string]any{"transfer_id": "tr-0912"},
				map[string]any{"state": "transferring", "detail": "Time remaining: " + left})
		}
		b.do("Is the snapshot down yet?", "transfer_status", map[string]any{"transfer_id": "tr-0912"}, map[string]any{"state": "done", "detail": "Transfer complete"})
		add(b)
	}

	// A clip trimmed until it fits 30 seconds: each trim changes its
	// duration, which is what the agent reads back.
	{
		b := opRunOf("clip-trimmed-duration-read-back", "media", false).writes("clip_trim")
		b.do("How long is the clip?", "clip_get", map[string]any{"clip_id": "c-77"}, map[string]any{"clip_id": "c-77", "status": "ready", "duration": 58.4, "codec": "h264"})
		for _, end := range []float64{50, 42, 36, 30} {
			b.do("Trimming.", "clip_trim", map[string]any{"clip_id": "c-77", "end": end}, map[string]any{"ok": true})
			b.do("How long is it now?", "clip_get", map[string]any{"clip_id": "c-77"}, map[string]any{"clip_id": "c-77", "status": "ready", "duration": end, "codec": "h264"})
		}
		add(b)
	}

	// A meeting's length changed three times as attendees answer, read
	// back each time.
	{
		b := opRunOf("meeting-duration-changed-read-back", "scheduling", false).writes("calendar_update_event")
		for _, m := range []int{45, 60, 90, 75} {
			b.do("Changing the length.", "calendar_update_event", map[string]any{"event_id": "ev-9Q2", "duration_minutes": m}, map[string]any{"updated": true})
			b.do("Checking it.", "calendar_get_event", map[string]any{"event_id": "ev-9Q2"}, map[string]any{"event_id": "ev-9Q2", "title": "Design review", "start": "2026-12-09T13:00:00Z", "duration_minutes": m})
		}
		add(b)
	}

	// --- legit: the same values under swapped keys --------------------------

	// A seat map read seat by seat: row 2 seat 3 is not row 3 seat 2.
	{
		b := opRunOf("seat-map-row-seat-swapped", "booking", false)
		for r := 1; r <= 4; r++ {
			for s := 1; s <= 4; s++ {
				st := "available"
				if (r+s)%3 == 0 {
					st = "taken"
				}
				b.do("Seat?", "seat_status", map[string]any{"row": r, "seat": s}, map[string]any{"status": st, "class": "standard", "price_eur": 89, "features": []string{"aisle access", "power outlet"}, "note": "Seats are held for 15 minutes once selected"})
			}
		}
		add(b)
	}

	// A warehouse's bins checked by aisle and shelf, most of them empty.
	{
		b := opRunOf("warehouse-aisle-shelf-swapped", "inventory", false)
		for a := 1; a <= 5; a++ {
			for s := 1; s <= 5; s++ {
				res := map[string]any{"bin": "empty", "last_counted": "2026-11-30", "counted_by": "cycle count job 44", "zone": "ambient storage"}
				if a == 4 && s == 2 {
					res = map[string]any{"bin": "SKU-1182", "qty": 14}
				}
				b.do("Bin?", "bin_contents", map[string]any{"aisle": a, "shelf": s}, res)
			}
		}
		add(b)
	}

	// Travel times between four offices both ways, to pick a meeting
	// place: the roads are the same both ways.
	{
		b := opRunOf("travel-matrix-both-ways", "travel", false)
		cities := []string{"Lyon", "Geneva", "Turin", "Grenoble"}
		mins := map[string]int{"Lyon-Geneva": 115, "Lyon-Turin": 225, "Lyon-Grenoble": 70, "Geneva-Turin": 190, "Geneva-Grenoble": 110, "Turin-Grenoble": 165}
		for i, a := range cities {
			for j, c := range cities {
				if i == j {
					continue
				}
				m := mins[a+"-"+c]
				if m == 0 {
					m = mins[c+"-"+a]
				}
				b.do("How far?", "route", map[string]any{"from": a, "to": c, "mode": "car"}, map[string]any{"minutes": m, "tolls": m > 100, "summary": "fastest route, usual traffic", "warnings": []string{"Winter equipment required in mountain areas from 1 November"}})
			}
		}
		add(b)
	}

	// Currency converted both ways, then back again at another amount.
	{
		b := opRunOf("currency-both-ways", "finance", false)
		rate := map[string]float64{"USD-EUR": 0.9231, "EUR-USD": 1.0833, "USD-GBP": 0.7874, "GBP-USD": 1.27}
		for _, amt := range []int{100, 2500} {
			for _, p := range [][2]string{{"USD", "EUR"}, {"EUR", "USD"}, {"USD", "GBP"}, {"GBP", "USD"}} {
				b.do("Converting.", "fx_convert", map[string]any{"from": p[0], "to": p[1], "amount": amt}, map[string]any{"result": float64(amt) * rate[p[0]+"-"+p[1]], "as_of": "2026-12-03", "provider": "ECB reference rates", "note": "Rates are published around 16:00 CET on working days"})
			}
		}
		add(b)
	}

	// Two config files diffed both ways, then with a third.
	{
		b := opRunOf("diff-both-ways", "code-review", false)
		pairs := [][2]string{{"staging.yaml", "prod.yaml"}, {"prod.yaml", "staging.yaml"}, {"prod.yaml", "dr.yaml"}, {"dr.yaml", "prod.yaml"}}
		for _, p := range pairs {
			b.do("Diffing.", "file_diff", map[string]any{"base": p[0], "head": p[1]},
				fmt.Sprintf("--- %s\n+++ %s\n@@ -3 +3 @@\n-replicas: %d\n+replicas: %d\n", p[0], p[1], len(p[0]), len(p[1])))
		}
		add(b)
	}

	// A word translated between two languages both ways: "Gift".
	{
		b := opRunOf("translate-same-word-both-ways", "translation", false)
		b.do("en->de", "translate", map[string]any{"text": "Gift", "source": "en", "target": "de"}, map[string]any{"translation": "Geschenk", "engine": "nmt-general-v7", "glossary_applied": false, "note": "Single words are translated without context"})
		b.do("de->en", "translate", map[string]any{"text": "Gift", "source": "de", "target": "en"}, map[string]any{"translation": "poison", "engine": "nmt-general-v7", "glossary_applied": false, "note": "Single words are translated without context"})
		for _, l := range []string{"fr", "es", "it", "nl", "pt"} {
			b.do("Brand name.", "translate", map[string]any{"text": "Hotel", "source": "en", "target": l}, map[string]any{"translation": "Hotel", "engine": "nmt-general-v7", "glossary_applied": true, "note": "Single words are translated without context"})
		}
		add(b)
	}

	// --- legit: writes to one target, each another --------------------------

	// Invoices entered row by row, the VAT rate looked up before each.
	{
		b := opRunOf("rows-appended-rate-looked-up", "spreadsheet", false).writes("sheets_update")
		for i := 0; i < 6; i++ {
			b.do("The VAT rate.", "vat_rate", map[string]any{"country": "DE"}, map[string]any{"country": "DE", "standard": 19, "reduced": 7})
			b.do("Entering the invoice.", "sheets_update", map[string]any{"spreadsheet_id": "1xQ9-invoices", "range": fmt.Sprintf("Invoices!A%d:D%d", i+2, i+2), "values": [][]any{{fmt.Sprintf("INV-%d", 8800+i), 100 * (i + 1), 19, 119 * (i + 1)}}}, map[string]any{"updatedCells": 4})
		}
		add(b)
	}

	// A form filled field by field; its validation read after each field
	// still wants the signature, the last field.
	{
		b := opRunOf("form-fields-validation-same", "web-form", false).writes("form_set_field")
		fields := [][2]string{{"first_name", "Ada"}, {"last_name", "Lovelace"}, {"email", "ada@example.org"}, {"phone", "+44 20 7946 0000"}, {"country", "GB"}}
		for _, f := range fields {
			b.do("Filling "+f[0]+".", "form_set_field", map[string]any{"form_id": "visa-2291", "field": f[0], "value": f[1]}, map[string]any{"saved": true})
			b.do("Is it complete?", "form_validate", map[string]any{"form_id": "visa-2291"}, map[string]any{"valid": false, "missing": []string{"signature"}})
		}
		b.do("Signing.", "form_set_field", map[string]any{"form_id": "visa-2291", "field": "signature", "value": "Ada Lovelace"}, map[string]any{"saved": true})
		b.do("Is it complete?", "form_validate", map[string]any{"form_id": "visa-2291"}, map[string]any{"valid": true, "missing": []string{}})
		add(b)
	}

	// Messages posted to one channel, one per incident update, the
	// channel's topic read before each (it does not change).
	{
		b := opRunOf("channel-posts-topic-read", "chat", false).writes("chat_post")
		for i, u := range []string{"Investigating elevated 5xx on api", "Mitigated by rolling back deploy 4411", "Monitoring; error rate back to baseline", "Resolved; postmortem to follow"} {
			b.do("Topic?", "chat_channel_info", map[string]any{"channel_id": "C042INC"}, map[string]any{"topic": "SEV2: api 5xx", "members": 31})
			b.do("Posting update.", "chat_post", map[string]any{"channel_id": "C042INC", "text": fmt.Sprintf("Update %d: %s", i+1, u)}, map[string]any{"ok": true, "ts": fmt.Sprint(1764750000+i*600, ".000100")})
		}
		add(b)
	}

	// Next page clicked, each page another.
	{
		b := opRunOf("next-page-results-change", "web-form", false).writes("browser_click")
		for p := 1; p <= 6; p++ {
			b.do("Reading.", "browser_snapshot", map[string]any{}, fmt.Sprintf("- heading \"Orders\"\n- table: rows %d-%d of 60\n  - row: ORD-%d\n- button \"Next\" [ref=e41]\n", (p-1)*10+1, p*10, 5000+p))
			b.do("Next.", "browser_click", map[string]any{"element": "Next", "ref": "e41"}, "ok")
		}
		add(b)
	}

	// A meeting moved day by day until all can come, the week read after
	// each move.
	{
		b := opRunOf("meeting-moved-week-read", "scheduling", false).writes("calendar_move_event")
		for i, day := range []string{"2026-12-08", "2026-12-09", "2026-12-10", "2026-12-11"} {
			b.do("Moving.", "calendar_move_event", map[string]any{"event_id": "ev-7K1", "start": day + "T14:00:00Z"}, map[string]any{"ok": true})
			b.do("The week.", "calendar_list", map[string]any{"from": "2026-12-07", "to": "2026-12-13"}, map[string]any{"events": []map[string]any{{"id": "ev-7K1", "start": day + "T14:00:00Z"}}, "conflicts": 3 - i})
		}
		add(b)
	}

	// --- legit: searches that differ in a date filter ----------------------

	// A mailbox searched week by week for a supplier's invoices; most
	// weeks have none.
	{
		b := opRunOf("mail-weeks-date-filter", "mail", false)
		for w := 0; w < 6; w++ {
			q := fmt.Sprintf("from:billing@supplier.io after:2026/%02d/%02d before:2026/%02d/%02d", 10+(w*7+1)/31, 1+(w*7)%31, 10+(w*7+8)/31, 1+(w*7+7)%31)
			res := map[string]any{"threads": []any{}, "resultSizeEstimate": 0}
			if w == 4 {
				res = map[string]any{"threads": []map[string]any{{"id": "18c2a", "snippet": "Invoice S-2210"}}, "resultSizeEstimate": 1}
			}
			b.do("Searching that week.", "mail_search", map[string]any{"q": q}, res)
		}
		add(b)
	}

	// Errors in the logs hour by hour; the incident's hour has them.
	{
		b := opRunOf("logs-hours-date-filter", "infra", false)
		for h := 8; h < 14; h++ {
			q := fmt.Sprintf("service:checkout level:error after:2026-12-02T%02d:00 before:2026-12-02T%02d:00", h, h+1)
			res := map[string]any{"hits": []any{}, "total": 0}
			if h == 12 {
				res = map[string]any{"hits": []map[string]any{{"msg": "payment gateway timeout", "count": 412}}, "total": 412}
			}
			b.do("That hour.", "log_search", map[string]any{"query": q}, res)
		}
		add(b)
	}

	// Issues created each week of November, counted.
	{
		b := opRunOf("issues-weekly-created-filter", "code-review", false)
		for w, r := range []string{"2026-11-01..2026-11-07", "2026-11-08..2026-11-14", "2026-11-15..2026-11-21", "2026-11-22..2026-11-28"} {
			b.do("That week.", "issue_search", map[string]any{"q": "repo:acme/api is:issue label:bug created:" + r}, map[string]any{"total_count": []int{0, 0, 3, 0}[w], "items": []any{}})
		}
		add(b)
	}

	// --- loops the new rules should catch ----------------------------------

	// A job polled; its elapsed time written as a clock.
	{
		b := opRunOf("poll-elapsed-as-clock", "ci", true)
		for i := 0; i < 7; i++ {
			if i == 2 {
				b.from()
			}
			b.do("Still building?", "build_status", map[string]any{"build_id": "b-4410"}, fmt.Sprintf("build b-4410: waiting for executor (elapsed %02d:%02d:%02d)", 0, 3+i, 10+i*7))
		}
		add(b)
	}

	// A job polled; its time written in words.
	{
		b := opRunOf("poll-took-in-words", "ci", true)
		for i := 0; i < 7; i++ {
			if i == 2 {
				b.from()
			}
			b.do("Again.", "job_check", map[string]any{"job": "nightly-export"}, fmt.Sprintf("nightly-export: no new rows to export (checked in %d.%d seconds)", 1+i%3, 2+i))
		}
		add(b)
	}

	// A status page read; only "checked N min ago" moves.
	{
		b := opRunOf("status-min-ago", "infra", true)
		for i := 0; i < 7; i++ {
			if i == 2 {
				b.from()
			}
			b.do("Is it back?", "status_page", map[string]any{"component": "payments"}, fmt.Sprintf("payments: major outage; last checked %d min ago", 1+i*2))
		}
		add(b)
	}

	// A day's calendar read again, the day written other ways.
	{
		b := opRunOf("calendar-day-respelled", "scheduling", true)
		days := []map[string]any{
			{"date": "2026-12-09"}, {"date": "2026-12-09T00:00:00Z"}, {"day": "2026-12-09"},
			{"date": "2026-12-09", "tz": "UTC"}, {"date": "2026-12-09T00:00:00+00:00"}, {"date": " 2026-12-09"},
		}
		for i, d := range days {
			if i == 3 {
				b.from()
			}
			b.do("Any free slot?", "calendar_day", d, map[string]any{"busy": []map[string]any{{"from": "09:00", "to": "12:00", "title": "Quarterly planning"}, {"from": "13:00", "to": "18:00", "title": "Vendor onsite"}}, "free": []string{}, "calendar": "ops-team@acme.io"})
		}
		add(b)
	}

	// A metric read over the same window in other units.
	{
		b := opRunOf("metric-window-respelled", "infra", true)
		for i, w := range []string{"1h", "60m", "3600s", "PT1H", "60 minutes", "1 hour"} {
			if i == 3 {
				b.from()
			}
			b.do("Error rate?", "metric_query", map[string]any{"metric": "http_5xx_rate", "window": w, "service": "api"}, map[string]any{"value": 0.042, "unit": "ratio", "series": []map[string]any{{"t": "2026-12-03T08:00:00Z", "v": 0.039}, {"t": "2026-12-03T08:30:00Z", "v": 0.044}, {"t": "2026-12-03T09:00:00Z", "v": 0.042}}, "labels": map[string]any{"service": "api", "cluster": "prod-eu-1"}})
		}
		add(b)
	}

	// A record saved by two tools in turn, its page the same after each.
	{
		b := opRunOf("save-two-tools-nothing-changes", "web-form", true).writes("record_save", "record_update")
		b.do("Reading.", "record_get", map[string]any{"id": "cust-88"}, map[string]any{"id": "cust-88", "vat": "", "error": "VAT number required"})
		for i := 0; i < 6; i++ {
			if i == 3 {
				b.from()
			}
			t := []string{"record_save", "record_update"}[i%2]
			b.do("Saving.", t, map[string]any{"id": "cust-88", "vat": "DE 123 456 789"}, map[string]any{"ok": true})
			b.do("Did it take?", "record_get", map[string]any{"id": "cust-88"}, map[string]any{"id": "cust-88", "vat": "", "error": "VAT number required"})
		}
		add(b)
	}

	// Next clicked; the button's ref renumbered in each snapshot.
	{
		b := opRunOf("next-click-ref-renumbered", "web-form", true).writes("browser_click")
		snap := "- heading \"Step 3 of 5\"\n- alert: Please choose a delivery slot\n- button \"Next\""
		for i := 0; i < 6; i++ {
			if i == 3 {
				b.from()
			}
			b.do("Next.", "browser_click", map[string]any{"element": "Next", "ref": fmt.Sprintf("e%d", 41+i*12)}, "ok")
			b.do("Moved on?", "browser_snapshot", map[string]any{}, snap+fmt.Sprintf(" [ref=e%d]\n", 53+i*12))
		}
		add(b)
	}

	// A mail search respelled with quotes and parentheses.
	{
		b := opRunOf("mail-search-quoted-respelled", "mail", true)
		for i, q := range []string{`from:billing@acme.io subject:"overdue invoice"`, `subject:(overdue invoice) from:billing@acme.io`, `from:(billing@acme.io) subject:"overdue invoice"`, `subject:"invoice overdue" from:billing@acme.io`, `from:billing@acme.io subject:(invoice overdue)`, `from:"billing@acme.io" "overdue invoice"`} {
			if i == 3 {
				b.from()
			}
			b.do("Searching.", "mail_search", map[string]any{"q": q}, map[string]any{"threads": []map[string]any{{"id": "18c77", "snippet": "Overdue invoice INV-4410"}}, "resultSizeEstimate": 1})
		}
		add(b)
	}

	// A plan re-run with its var file respelled.
	{
		b := opRunOf("terraform-var-file-respelled", "infra", true)
		for i, a := range []string{"plan -var-file=prod.tfvars", "plan -var-file=./prod.tfvars", "plan -var-file prod.tfvars", "plan -var-file=./prod.tfvars -no-color", "plan -no-color -var-file=prod.tfvars", "plan -var-file ./prod.tfvars"} {
			if i == 3 {
				b.from()
			}
			b.do("Planning.", "terraform", map[string]any{"args": a, "chdir": "envs/prod"}, "Error: Invalid value for variable\n\n  on prod.tfvars line 4:\n   4: region = \"eu-west-9\"\n\nThe region must be one of eu-west-1, eu-west-2, eu-west-3.")
		}
		add(b)
	}

	// A queued job polled; its duration key grows and its message repeats.
	{
		b := opRunOf("poll-wait-duration-key", "ci", true)
		for i := 0; i < 7; i++ {
			if i == 2 {
				b.from()
			}
			b.do("Started?", "job_get", map[string]any{"job_id": "j-9910"}, map[string]any{"state": "queued", "wait_duration": fmt.Sprintf("%dm%ds", 4+i, 10+i*3), "position": 3})
		}
		add(b)
	}

	// A pod's logs read again; only the uptime in the line moves.
	{
		b := opRunOf("logs-uptime-moves", "infra", true)
		for i := 0; i < 7; i++ {
			if i == 2 {
				b.from()
			}
			b.do("Logs?", "kubectl", map[string]any{"command": "logs deploy/worker --tail=3"}, fmt.Sprintf("worker: waiting for leader lease (held by worker-0, up %dh%dm)\nworker: retrying in 5s\n", 3, 10+i*2))
		}
		add(b)
	}

	// An exchange rate asked again with the pair's keys renamed.
	{
		b := opRunOf("fx-rate-keys-renamed", "finance", true)
		args := []map[string]any{{"from": "USD", "to": "EUR"}, {"base": "USD", "quote": "EUR"}, {"source": "USD", "target": "EUR"}, {"from_currency": "USD", "to_currency": "EUR"}, {"pair": "USD/EUR"}, {"base": "usd", "quote": "eur"}}
		for i, a := range args {
			if i == 3 {
				b.from()
			}
			b.do("The rate is stale; again.", "fx_rate", a, map[string]any{"rate": 0.9231, "bid": 0.9229, "ask": 0.9233, "as_of": "2026-12-02", "provider": "ECB reference rates", "note": "Rates are published around 16:00 CET on working days"})
		}
		add(b)
	}
	return out
}

func TestReview12Runs(t *testing.T) {
	var sum [2][5]int
	for _, r := range review12Runs() {
		p := playOps(r)
		got := opOutcome(r, p)
		msg := ""
		if p.v != nil {
			msg = fmt.Sprintf(" at call %d (mark %d) by %s: %s", p.at, p.mark, p.v.Detector, p.v.Message)
		}
		t.Logf("%-40s %3d calls %-10s%s", r.id, p.calls, got, msg)
		want := "ok"
		i := 0
		if r.loop {
			want, i = "detected", 1
		}
		sum[i][0]++
		for j, o := range []string{"detected", "early", "missed", "false_kill"} {
			if got == o {
				sum[i][1+j]++
			}
		}
		if w, ok := review12Known[r.id]; ok {
			want = w
		}
		if got != want {
			t.Errorf("%s: %s, want %s", r.id, got, want)
		}
	}
	t.Logf("loops %d: detected %d, early %d, missed %d; legit %d: false kills %d", sum[1][0], sum[1][1], sum[1][2], sum[1][3], sum[0][0], sum[0][4])
}

// TestWritesEachAnother: writes to one target (a spreadsheet, a form by its
// id) that each write something else (another row, another field) are not
// one write made again: a read that stays the same between them (a rate
// looked up, a validation waiting for the last field) is not refused. The
// same row written again and again, its note reworded, is.
func TestWritesEachAnother(t *testing.T) {
	rate := func() op { return call("vat_rate", `{"country":"DE"}`, `{"country":"DE","reduced":7,"standard":19}`) }
	row := func(i int) op {
		return write("sheets_update", fmt.Sprintf(`{"range":"Invoices!A%d:B%d","spreadsheet_id":"1xQ9","values":[["INV-%d",%d]]}`, i, i, 8800+i, 100*i), `{"updatedCells":2}`)
	}
	field := func(f, v string) op {
		return write("form_set_field", fmt.Sprintf(`{"field":%q,"form_id":"visa-2291","value":%q}`, f, v), `{"saved":true}`)
	}
	again := func(note string) op {
		return write("sheets_update", `{"note":"`+note+`","range":"Invoices!A2:B2","spreadsheet_id":"1xQ9","values":[["INV-8802",200]]}`, `{"updatedCells":2}`)
	}
	valid := func() op {
		return call("form_validate", `{"form_id":"visa-2291"}`, `{"missing":["signature"],"valid":false}`)
	}
	runCases(t, []testCase{
		{"rows entered one by one, a rate read between", nil, []op{
			rate(), row(2), rate(), row(3), rate(), row(4), rate(), row(5), rate(), row(6), rate(),
		}},
		{"fields filled one by one, the validation the same", nil, []op{
			field("first_name", "Ada"), valid(),
			field("last_name", "Lovelace"), valid(),
			field("email", "ada@example.org"), valid(),
			field("phone", "+44 20 7946 0000"), valid(),
			field("country", "GB"), valid(),
		}},
		{"the same row written again, its note reworded", nil, []op{
			rate(), again("entering the invoice"), rate(), again("entering the invoice again"),
			rate(), again("one more time with the invoice"), refused(rate(), "repeat"),
		}},
	})
}

// TestCountdownWordBefore: a time to go whose word comes before it ("Time
// remaining: 11m", "left=3m", "ETA: 4m") is a countdown, as "11m
// remaining" is: its moving is progress.
func TestCountdownWordBefore(t *testing.T) {
	for _, c := range []struct{ a, b string }{
		{"transferring; Time remaining: 11m", "transferring; Time remaining: 8m"},
		{"copying: left=3m", "copying: left=2m"},
		{"Deploying, ETA: 4m", "Deploying, ETA: 3m"},
		{"Remaining time 5m10s (2 of 6 hosts)", "Remaining time 4m40s (2 of 6 hosts)"},
	} {
		if maskedHash([]byte(c.a)) == maskedHash([]byte(c.b)) {
			t.Errorf("%q and %q: the same, want a countdown that moves", c.a, c.b)
		}
	}
}

// TestSpanPartOfWhole: a span that is a part of a whole span ("3m12s of
// 45m0s encoded", "12s/60s") is progress, as a countdown is: it stays.
// A lone elapsed time beside a total is still masked.
func TestSpanPartOfWhole(t *testing.T) {
	for _, c := range []struct {
		a, b string
		same bool
	}{
		{"encoding, 3m12s of 45m0s encoded (speed 1.4x)", "encoding, 9m40s of 45m0s encoded (speed 1.4x)", false},
		{"warmup 12s/60s", "warmup 24s/60s", false},
		{"played 1h2m of 2h", "played 1h20m of 2h", false},
		{"exit status 0 (plan took 11.2s of CPU)", "exit status 0 (plan took 12.1s of CPU)", true},
		{"7 (55s ago)   25m", "7 (1m30s ago)   26m", true},
	} {
		if got := maskedHash([]byte(c.a)) == maskedHash([]byte(c.b)); got != c.same {
			t.Errorf("%q and %q: same %v, want %v", c.a, c.b, got, c.same)
		}
	}
}

// TestSwappedValues: the same values bound to the same keys otherwise (row
// 1 seat 3 and row 3 seat 1, Lyon to Turin and Turin to Lyon) are another
// asking, new to the agent, as they were before a question became its
// values whatever their keys: a seat map read seat by seat, most seats
// alike, is a batch, not a loop.
func TestSwappedValues(t *testing.T) {
	seat := func(r, s int) op {
		return call("seat_status", fmt.Sprintf(`{"row":%d,"seat":%d}`, r, s), `{"class":"standard","features":["aisle access","power outlet"],"note":"Seats are held for 15 minutes once selected","price_eur":89,"status":"available"}`)
	}
	var ops []op
	for r := 1; r <= 4; r++ {
		for s := 1; s <= 4; s++ {
			ops = append(ops, seat(r, s))
		}
	}
	route := func(a, b string) op {
		return call("route", fmt.Sprintf(`{"from":%q,"mode":"car","to":%q}`, a, b), `{"summary":"fastest route, usual traffic","warnings":["Winter equipment required in mountain areas from 1 November"]}`)
	}
	var routes []op
	cities := []string{"Lyon", "Geneva", "Turin", "Grenoble", "Annecy"}
	for _, a := range cities {
		for _, b := range cities {
			if a != b {
				routes = append(routes, route(a, b))
			}
		}
	}
	runCases(t, []testCase{
		{"a seat map read seat by seat", nil, ops},
		{"routes between five towns both ways", nil, routes},
		{"one seat read again with its keys renamed", nil, []op{
			call("seat_status", `{"row":2,"seat":3}`, `{"class":"standard","features":["aisle access","power outlet"],"note":"Seats are held for 15 minutes once selected","price_eur":89,"status":"taken"}`),
			call("seat_status", `{"row_number":2,"seat":3}`, `{"class":"standard","features":["aisle access","power outlet"],"note":"Seats are held for 15 minutes once selected","price_eur":89,"status":"taken"}`),
			call("seat_status", `{"row":2,"seat_number":3}`, `{"class":"standard","features":["aisle access","power outlet"],"note":"Seats are held for 15 minutes once selected","price_eur":89,"status":"taken"}`),
			refused(call("seat_status", `{"row_no":2,"seat_no":3}`, `{"class":"standard","features":["aisle access","power outlet"],"note":"Seats are held for 15 minutes once selected","price_eur":89,"status":"taken"}`), "rephrase"),
		}},
	})
}

// TestAgoAbbreviated: how long ago, its unit abbreviated ("3 min ago", "2
// hrs ago", "40 secs ago"), is masked as "3 minutes ago" is: a status page
// whose only change is when it was last checked says the same each time.
func TestAgoAbbreviated(t *testing.T) {
	for _, c := range [][2]string{
		{"payments: major outage; last checked 1 min ago", "payments: major outage; last checked 3 min ago"},
		{"synced 2 hrs ago", "synced 3 hrs ago"},
		{"heartbeat 40 secs ago", "heartbeat 1 sec ago"},
		{"last deploy 2 weeks ago", "last deploy 3 weeks ago"},
	} {
		if maskedHash([]byte(c[0])) != maskedHash([]byte(c[1])) {
			t.Errorf("%q and %q differ, want the same line", c[0], c[1])
		}
	}
	if maskedHash([]byte("3 min read")) == maskedHash([]byte("5 min read")) {
		t.Error(`"3 min read" and "5 min read" the same: only a time ago is masked`)
	}
}

// TestSearchSyntaxQuoted: a query in a search engine's syntax with a quoted
// phrase (subject:"overdue invoice", its quotes escaped in the JSON) is
// still that syntax: the escape was taken for code.
func TestSearchSyntaxQuoted(t *testing.T) {
	for _, q := range []string{`from:billing@acme.io subject:\"overdue invoice\"`, `\"overdue invoice\" is:unread`} {
		if !searchSyntax([]byte(q)) {
			t.Errorf("%s not read as a search engine's query", q)
		}
	}
	if searchSyntax([]byte(`level:error msg:a\\b`)) {
		t.Error(`a backslash escaped is still code`)
	}
}
