package loops

import (
	"fmt"
	"strings"
	"testing"
)

// The fifteenth probe: written before reading the detectors or the rules
// of docs/LOOPS.md, by agents on their frameworks' defaults with the tool
// names and answer shapes of real MCP servers, in domains and shapes the
// fourteen before it cover little: a Stripe refund retried under other
// spellings of its amount, a HubSpot contact upserted again with its
// fields reordered and its email's case changed, kubectl asked for one
// crash-looping pod under other resource names, terraform plan re-run
// with cosmetic flags, a web search paged past its end, a MongoDB filter
// written with operator synonyms, an image pulled under other spellings
// of one reference, an Airtable formula respelled, a volume resized under
// other spellings of one size, a firewall rule added under other
// spellings of one port, a Confluence page updated again on a stale
// version, a calculator asked one product in other notations, a JQL
// search with its clauses reordered, a forecast asked at one place under
// other spellings of its coordinates, a Helm upgrade retried with its
// values reordered while another operation holds the release, a linter
// and a formatter undoing each other, a SOQL query with its fields
// reordered, a mail resent to one address in other notations, and a
// feature flag set under other spellings of true. Each loop has a
// legitimate near-miss: refunds of several charges, a batch of distinct
// contacts, pods that become ready, plans after real edits, a search
// paged until empty, finds in other collections, several images pulled,
// records paged by offset, several volumes resized, several ports opened,
// an update after re-reading the version, an amortisation computed month
// by month, searches of each status, a forecast that moves, a Helm
// upgrade after the lock is released, files linted one by one, queries of
// each object, mail to several recipients, and several flags turned on.
//
// A loop is marked as the ninth probe marks them: the fourth call that
// asks again in other words and learns nothing, the third identical poll
// or write, the third round of a pair or ring of calls that learns
// nothing. A tool without readOnlyHint is declared a write, as it is
// through the gateway.
//
// It is written and played with the assistants probe's writer and driver
// (assistruns_test.go).

// fiKnown lists the runs whose outcome is not their label's, each with why.
var fiKnown = map[string]string{
	// On the guard as the probe was written (13e48d30): 13 of 19 loops
	// detected, 1 early, 5 missed; 0 of 19 legit runs refused. Since
	// loops21: 16 (an address bounced in other notations, a search paged
	// past its end, a firewall port respelled).
	"hubspot-contact-upserted-again-reordered": "missed",
	"kubectl-resource-respelled-crashloop":     "missed",
	"mongo-filter-operator-synonyms-empty":     "early",
}

func TestFifteenthRuns(t *testing.T) {
	checkAsRuns(t, "fifteenth probe", fifteenthRuns(), 30, fiKnown)
}

// fiK8s is kubectl get pods as a Kubernetes MCP server prints it.
func fiK8s(rows ...[5]string) string {
	b := []string{"NAME                   READY   STATUS             RESTARTS      AGE"}
	for _, r := range rows {
		b = append(b, fmt.Sprintf("%-22s %-7s %-18s %-13s %s", r[0], r[1], r[2], r[3], r[4]))
	}
	return strings.Join(b, "\n")
}

// fiSearch is a web search server's answer: one block a result.
func fiSearch(offset int, titles ...string) string {
	if len(titles) == 0 {
		return "No results found."
	}
	var b []string
	for i, t := range titles {
		slug := strings.ToLower(strings.ReplaceAll(t, " ", "-"))
		b = append(b, fmt.Sprintf("Title: %s\nDescription: %s, explained with examples.\nURL: https://blog.example/%s", t, t, slug))
		_ = i
	}
	return strings.Join(b, "\n\n")
}

// fiPlan is terraform plan's tail.
func fiPlan(add, change, destroy int) string {
	if add+change+destroy == 0 {
		return "aws_s3_bucket.assets: Refreshing state... [id=shop-assets-prod]\naws_cloudfront_distribution.cdn: Refreshing state... [id=E2Q7ZK1TXB4M0P]\n\nNo changes. Your infrastructure matches the configuration.\n\nTerraform has compared your real infrastructure against your configuration and found no differences, so no changes are needed."
	}
	return fmt.Sprintf("aws_s3_bucket.assets: Refreshing state... [id=shop-assets-prod]\n\nTerraform will perform the following actions:\n  ...\n\nPlan: %d to add, %d to change, %d to destroy.", add, change, destroy)
}

// fiShell is a shell server's answer to a command.
func fiShell(code int, out string) string {
	return egJSON(obj{"exitCode": code, "stdout": out, "stderr": ""})
}

// fiForecast is an Open-Meteo style hourly forecast.
func fiForecast(lat, lon string, gen float64, temps ...float64) string {
	var hours arr
	for i := range temps {
		hours = append(hours, fmt.Sprintf("2026-12-05T%02d:00", 12+i))
	}
	return egJSON(obj{"latitude": lat, "longitude": lon, "generationtime_ms": gen, "timezone": "Europe/Berlin", "hourly_units": obj{"temperature_2m": "°C"}, "hourly": obj{"time": hours, "temperature_2m": temps}})
}

func fifteenthRuns() []*asRun {
	var runs []*asRun
	add := func(w *asw) { runs = append(runs, w.run) }

	// --- legit ---

	// A support agent refunds several charges of one incident; the same
	// amount, the same answer but for the charge.
	{
		w := asRunOf("stripe-refunds-several-charges", "payments", false).acc("write", "create_refund")
		for i := 0; i < 6; i++ {
			ch := fmt.Sprintf("ch_3QdK%02dLkdIwHu7i1%04x", 11+i*7, 0x2b10+i*911)
			w.t("Refunding the next double charge.", asOK("create_refund", obj{"charge": ch, "amount": 1250, "reason": "duplicate"}, egJSON(obj{"id": fmt.Sprintf("re_3QdK%02dLkdIwHu7i0%04x", 11+i*7, 0x91a0+i*313), "object": "refund", "amount": 1250, "charge": ch, "currency": "eur", "status": "succeeded", "reason": "duplicate"})))
		}
		add(w)
	}

	// A CRM agent upserts a batch of contacts from a fair's sign-up sheet.
	{
		w := asRunOf("hubspot-batch-distinct-contacts", "crm", false).acc("write", "hubspot-batch-create-or-update-contacts")
		people := [][3]string{{"ana.lopez@shop.example", "Ana", "Lopez"}, {"ben.okafor@acme.example", "Ben", "Okafor"}, {"chen.wei@north.example", "Chen", "Wei"}, {"dana.kim@loop.example", "Dana", "Kim"}, {"eli.novak@mill.example", "Eli", "Novak"}}
		for i, p := range people {
			w.t("", asOK("hubspot-batch-create-or-update-contacts", obj{"inputs": arr{obj{"idProperty": "email", "id": p[0], "properties": obj{"email": p[0], "firstname": p[1], "lastname": p[2], "lifecyclestage": "lead", "hs_lead_status": "NEW"}}}}, egJSON(obj{"status": "COMPLETE", "results": arr{obj{"id": fmt.Sprint(90411200 + i*37), "properties": obj{"email": p[0], "firstname": p[1], "lastname": p[2], "lifecyclestage": "lead"}, "new": true}}})))
		}
		add(w)
	}

	// A Kubernetes agent watches a rollout: the new pods become ready.
	{
		w := asRunOf("kubectl-rollout-pods-become-ready", "kubernetes", false)
		states := [][][5]string{
			{{"api-7d9c5b8f4-2xkqp", "0/1", "ContainerCreating", "0", "4s"}, {"api-7d9c5b8f4-9tmvw", "0/1", "Pending", "0", "4s"}},
			{{"api-7d9c5b8f4-2xkqp", "0/1", "Running", "0", "19s"}, {"api-7d9c5b8f4-9tmvw", "0/1", "ContainerCreating", "0", "19s"}},
			{{"api-7d9c5b8f4-2xkqp", "1/1", "Running", "0", "34s"}, {"api-7d9c5b8f4-9tmvw", "0/1", "Running", "0", "34s"}},
			{{"api-7d9c5b8f4-2xkqp", "1/1", "Running", "0", "49s"}, {"api-7d9c5b8f4-9tmvw", "1/1", "Running", "0", "49s"}},
		}
		for _, s := range states {
			w.t("Waiting for the rollout.", asOK("kubectl_get", obj{"resourceType": "pods", "namespace": "shop", "labelSelector": "app=api"}, fiK8s(s...)))
		}
		add(w)
	}

	// An infra agent plans after each edit; the plan changes each time.
	{
		w := asRunOf("terraform-plan-after-real-edits", "infra", false).acc("write", "write_file")
		for i, p := range [][3]int{{3, 1, 0}, {2, 1, 0}, {1, 0, 0}, {0, 1, 0}} {
			if i > 0 {
				w.t("Adjusting the module.", asOK("write_file", obj{"path": "infra/cdn.tf", "content": fmt.Sprintf("resource \"aws_cloudfront_distribution\" \"cdn\" {\n  price_class = \"PriceClass_%d\"\n}\n", 100+i*100)}, "Successfully wrote to infra/cdn.tf"))
			}
			w.t("", asOK("run_command", obj{"command": "terraform plan -no-color", "cwd": "infra"}, fiShell(0, fiPlan(p[0], p[1], p[2]))))
		}
		add(w)
	}

	// A research agent pages a web search until it runs dry.
	{
		w := asRunOf("websearch-paged-until-empty", "search", false)
		pages := [][]string{
			{"Go generics tutorial", "Type parameters in Go", "Go constraints package"},
			{"Generic data structures in Go", "Go generics performance", "When not to use generics"},
			{"Go 1.21 slices package", "Generic iterators in Go"},
			{},
		}
		for i, p := range pages {
			w.t("", asOK("brave_web_search", obj{"query": "go generics guide", "count": 3, "offset": i}, fiSearch(i, p...)))
		}
		add(w)
	}

	// A database agent finds one customer's records across collections.
	{
		w := asRunOf("mongo-find-each-collection", "database", false)
		for i, c := range []string{"orders", "refunds", "tickets", "sessions"} {
			w.t("", asOK("find", obj{"database": "shop", "collection": c, "filter": obj{"customerId": "cus_R2k9"}, "limit": 10}, egJSON(arr{obj{"_id": fmt.Sprintf("6751%04x9e0c2a1b3d4f%04x", i*71, i*313), "customerId": "cus_R2k9", "kind": c}})))
		}
		add(w)
	}

	// A container agent pulls the images of a compose file one by one.
	{
		w := asRunOf("docker-pull-several-images", "containers", false).acc("write", "pull_image")
		for i, im := range []string{"nginx:1.27-alpine", "postgres:17.2", "redis:7.4-alpine", "grafana/grafana:11.3.1", "prom/prometheus:v3.0.1"} {
			w.t("", asOK("pull_image", obj{"image": im}, fmt.Sprintf("Pulled %s\nDigest: sha256:%064x\nStatus: Downloaded newer image for %s", im, 0x9f3a1c+i*7919, im)))
		}
		add(w)
	}

	// An Airtable agent pages a table by its offset.
	{
		w := asRunOf("airtable-records-offset-paged", "nocode", false)
		off := ""
		for p := 0; p < 4; p++ {
			var recs arr
			for i := 0; i < 20; i++ {
				n := p*20 + i
				recs = append(recs, obj{"id": fmt.Sprintf("rec%014X", 0x51A2B0+n*131), "createdTime": "2026-11-30T09:12:44.000Z", "fields": obj{"Name": fmt.Sprintf("Lead %d", n+1), "Status": "Open"}})
			}
			a := obj{"baseId": "appQ7x2LmK9pR4tZc", "tableId": "tblLeads", "pageSize": 20}
			if off != "" {
				a["offset"] = off
			}
			o := obj{"records": recs}
			if p < 3 {
				off = fmt.Sprintf("itr%014X/rec%014X", 0x77A0+p*9, 0x51A2B0+(p*20+20)*131)
				o["offset"] = off
			}
			w.t("", asOK("list_records", a, egJSON(o)))
		}
		add(w)
	}

	// A cloud agent grows each database volume by the same amount.
	{
		w := asRunOf("volumes-resized-one-by-one", "cloud", false).acc("write", "resize_volume")
		for i := 0; i < 5; i++ {
			v := fmt.Sprintf("vol-0%015x", 0x3a9f10c2d4e5f6+i*104729)
			w.t("", asOK("resize_volume", obj{"volume_id": v, "size": "200GB"}, egJSON(obj{"VolumeModification": obj{"VolumeId": v, "ModificationState": "modifying", "TargetSize": 200, "OriginalSize": 100, "Progress": 0}})))
		}
		add(w)
	}

	// An ops agent opens several ports on one firewall.
	{
		w := asRunOf("firewall-several-ports-opened", "ops", false).acc("write", "add_firewall_rule")
		for i, p := range []string{"80", "443", "8443", "9090", "3000"} {
			w.t("", asOK("add_firewall_rule", obj{"firewall": "web-fw", "direction": "in", "protocol": "tcp", "port": p, "source_ips": arr{"0.0.0.0/0"}}, egJSON(obj{"action": obj{"id": 81234400 + i*17, "command": "set_firewall_rules", "status": "running"}})))
		}
		add(w)
	}

	// A docs agent's update is refused on a stale version; it reads the
	// page and updates on the current one.
	{
		w := asRunOf("confluence-update-after-version-reread", "docs", false).acc("write", "confluence_update_page")
		w.t("", asFail("confluence_update_page", obj{"page_id": "884736021", "title": "Checkout runbook", "content": "## Refunds\nUse the dashboard.", "version": 7}, "tool_error", "Error updating page: 409 Conflict: Version must be incremented on update. Current version is: 9"))
		w.t("Someone edited it; reading the current version.", asOK("confluence_get_page", obj{"page_id": "884736021"}, egJSON(obj{"id": "884736021", "title": "Checkout runbook", "version": 9, "content": "## Refunds\nUse the admin."})))
		w.t("", asOK("confluence_update_page", obj{"page_id": "884736021", "title": "Checkout runbook", "content": "## Refunds\nUse the dashboard.", "version": 10}, egJSON(obj{"id": "884736021", "title": "Checkout runbook", "version": 10, "status": "current"})))
		w.t("", asOK("confluence_update_page", obj{"page_id": "884736022", "title": "Payments runbook", "content": "## Disputes\nAnswer within 7 days.", "version": 4}, egJSON(obj{"id": "884736022", "title": "Payments runbook", "version": 4, "status": "current"})))
		add(w)
	}

	// A finance agent computes a loan's balance month by month.
	{
		w := asRunOf("calculator-amortisation-months", "math", false)
		bal := 12000.0
		for m := 1; m <= 8; m++ {
			in := bal * 0.005
			expr := fmt.Sprintf("%.2f - (350 - %.2f * 0.005)", bal, bal)
			bal -= 350 - in
			w.t("", asOK("calculate", obj{"expression": expr}, fmt.Sprintf("%.2f", bal)))
		}
		add(w)
	}

	// A Jira agent counts issues in each status.
	{
		w := asRunOf("jira-jql-each-status", "tracker", false)
		for i, s := range []string{"To Do", "In Progress", "In Review", "Blocked"} {
			var is arr
			for k := 0; k <= i; k++ {
				is = append(is, obj{"key": fmt.Sprintf("SHOP-%d", 410+i*11+k), "fields": obj{"summary": fmt.Sprintf("Task %d", i*11+k), "status": obj{"name": s}}})
			}
			w.t("", asOK("jira_search", obj{"jql": fmt.Sprintf("project = SHOP AND status = \"%s\" ORDER BY updated DESC", s), "limit": 50}, egJSON(obj{"total": len(is), "issues": is})))
		}
		add(w)
	}

	// A weather agent re-reads a forecast each hour; it moves.
	{
		w := asRunOf("forecast-hourly-moves", "weather", false)
		for h := 0; h < 4; h++ {
			w.t("Checking whether the rain has moved.", asOK("get_forecast", obj{"latitude": 52.52, "longitude": 13.405, "hours": 3}, fiForecast("52.52", "13.405", 0.04+float64(h)*0.01, 4.1+float64(h)*0.3, 3.8+float64(h)*0.5, 3.2+float64(h)*0.2)))
		}
		add(w)
	}

	// A Helm upgrade is refused while another operation holds the
	// release; the agent waits for it, then upgrades.
	{
		w := asRunOf("helm-upgrade-after-lock-released", "devops", false).acc("write", "helm_upgrade")
		vals := obj{"replicaCount": 3, "image": obj{"tag": "1.27.3"}}
		w.t("", asFail("helm_upgrade", obj{"release": "shop", "chart": "bitnami/nginx", "namespace": "web", "values": vals}, "tool_error", "Error: UPGRADE FAILED: another operation (install/upgrade/rollback) is in progress"))
		for _, st := range []string{"pending-upgrade", "deployed"} {
			w.t("Waiting for the other upgrade.", asOK("helm_status", obj{"release": "shop", "namespace": "web"}, egJSON(obj{"name": "shop", "namespace": "web", "info": obj{"status": st}, "version": 14})))
		}
		w.t("", asOK("helm_upgrade", obj{"release": "shop", "chart": "bitnami/nginx", "namespace": "web", "values": vals}, "Release \"shop\" has been upgraded. Happy Helming!\nNAME: shop\nNAMESPACE: web\nSTATUS: deployed\nREVISION: 15"))
		add(w)
	}

	// A coding agent lints and formats each file once.
	{
		w := asRunOf("lint-format-files-one-by-one", "code", false).acc("write", "run_command")
		for _, f := range []string{"src/cart.ts", "src/checkout.ts", "src/coupon.ts", "src/price.ts"} {
			w.t("", asOK("run_command", obj{"command": "npx eslint --fix " + f}, fiShell(0, "")))
			w.t("", asOK("run_command", obj{"command": "npx prettier --write " + f}, fiShell(0, f+" 41ms")))
		}
		add(w)
	}

	// A CRM agent queries each Salesforce object of one account.
	{
		w := asRunOf("soql-each-object", "crm", false)
		for i, o := range []string{"Contact", "Opportunity", "Case", "Task"} {
			w.t("", asOK("salesforce_query_records", obj{"objectName": o, "fields": arr{"Id", "Name"}, "whereClause": "AccountId = '001Kd00001xQ7RtIAK'"}, egJSON(obj{"totalSize": 1, "done": true, "records": arr{obj{"attributes": obj{"type": o}, "Id": fmt.Sprintf("0%02dKd0000%07X", 3+i, 0x1F2A3+i*97), "Name": o + " of Acme"}}})))
		}
		add(w)
	}

	// A mail agent sends one notice to several customers; one bounces.
	{
		w := asRunOf("mail-notice-several-one-bounces", "mail", false).acc("write", "send_email")
		for i, to := range []string{"ana.lopez@shop.example", "ben.okafor@acme.example", "chen.wei@north.example", "dana.kim@loop.example"} {
			a := obj{"to": arr{to}, "subject": "Your order is delayed", "body": "Your order will ship on Monday. We are sorry for the wait."}
			if i == 2 {
				w.t("", asFail("send_email", a, "tool_error", "SMTP 550 5.1.1 <"+to+">: Recipient address rejected: User unknown"))
				continue
			}
			w.t("", asOK("send_email", a, fmt.Sprintf("Email sent successfully. Message ID: <%x@mail.shop.example>", 0x51a2b3c4+i*7777)))
		}
		add(w)
	}

	// A release agent turns on the flags of one launch.
	{
		w := asRunOf("flags-several-turned-on", "release", false).acc("write", "update_feature_flag")
		for i, f := range []string{"new-checkout", "one-click-pay", "saved-carts", "gift-cards"} {
			w.t("", asOK("update_feature_flag", obj{"key": f, "environment": "staging", "enabled": true}, egJSON(obj{"key": f, "environment": "staging", "on": true, "version": 3 + i})))
		}
		add(w)
	}

	// --- loops ---

	// A support agent retries one refund under other spellings of its
	// amount; the charge is disputed each time.
	{
		w := asRunOf("stripe-refund-amount-respelled-disputed", "payments", true).acc("write", "create_refund")
		for i, a := range []obj{
			{"charge": "ch_3QdK18LkdIwHu7i12f41", "amount": 1250},
			{"charge": "ch_3QdK18LkdIwHu7i12f41", "amount": "1250"},
			{"amount": 1250, "charge": "ch_3QdK18LkdIwHu7i12f41", "reason": "requested_by_customer"},
			{"charge": "ch_3QdK18LkdIwHu7i12f41", "amount": 1250.0, "currency": "eur"},
			{"charge": "ch_3QdK18LkdIwHu7i12f41"},
		} {
			if i == 3 {
				w.then()
			}
			w.t("The refund failed; trying again.", asFail("create_refund", a, "tool_error", "Stripe error (invalid_request_error): Charge ch_3QdK18LkdIwHu7i12f41 has been disputed; refunds are not allowed on disputed charges. Respond to the dispute instead."))
		}
		add(w)
	}

	// A CRM agent upserts one contact again and again with its fields
	// reordered and its email's case changed; nothing changes.
	{
		w := asRunOf("hubspot-contact-upserted-again-reordered", "crm", true).acc("write", "hubspot-batch-create-or-update-contacts")
		ps := []obj{
			{"email": "ana.lopez@shop.example", "firstname": "Ana", "lastname": "Lopez", "phone": "+34 612 345 678"},
			{"firstname": "Ana", "lastname": "Lopez", "email": "Ana.Lopez@shop.example", "phone": "+34 612 345 678"},
			{"lastname": "Lopez", "email": "ana.lopez@shop.example", "phone": "+34612345678", "firstname": "Ana"},
			{"email": "ANA.LOPEZ@SHOP.EXAMPLE", "firstname": "Ana", "lastname": "Lopez", "phone": "+34 612 345 678"},
			{"email": "ana.lopez@shop.example", "phone": "+34 612345678", "firstname": "Ana", "lastname": "Lopez"},
		}
		for i, p := range ps {
			if i == 3 {
				w.then()
			}
			w.t("Making sure the contact is saved.", asOK("hubspot-batch-create-or-update-contacts", obj{"inputs": arr{obj{"idProperty": "email", "id": p["email"], "properties": p}}}, egJSON(obj{"status": "COMPLETE", "results": arr{obj{"id": "90411200", "properties": obj{"email": "ana.lopez@shop.example", "firstname": "Ana", "lastname": "Lopez", "phone": "+34612345678", "lastmodifieddate": fmt.Sprintf("2026-12-05T13:0%d:1%d.412Z", i, i)}, "new": false}}})))
		}
		add(w)
	}

	// A Kubernetes agent asks for one crash-looping pod under other
	// resource names; only its restarts and age move.
	{
		w := asRunOf("kubectl-resource-respelled-crashloop", "kubernetes", true)
		for i, rt := range []string{"pods", "pod", "po", "Pod", "pods.v1"} {
			if i == 3 {
				w.then()
			}
			a := obj{"resourceType": rt, "namespace": "shop", "labelSelector": "app=api"}
			if i%2 == 1 {
				a = obj{"resourceType": rt, "labelSelector": "app=api", "namespace": "shop", "output": "wide"}
			}
			w.t("Still crashing; looking again.", asOK("kubectl_get", a, fiK8s([5]string{"api-5f6b7c9d8-qq2lx", "0/1", "CrashLoopBackOff", fmt.Sprintf("%d (%ds ago)", 7+i, 12+i*9), fmt.Sprintf("%dm", 14+i)})))
		}
		add(w)
	}

	// An infra agent re-runs terraform plan with cosmetic flags; no
	// change each time.
	{
		w := asRunOf("terraform-plan-flags-no-changes", "infra", true)
		for i, c := range []string{"terraform plan -no-color", "terraform plan -input=false -no-color", "terraform -chdir=infra plan -no-color", "terraform plan -refresh=true -no-color", "terraform plan -no-color -lock=false"} {
			if i == 3 {
				w.then()
			}
			cwd := "infra"
			if strings.Contains(c, "-chdir") {
				cwd = "."
			}
			w.t("The CDN change should show up; planning again.", asOK("run_command", obj{"command": c, "cwd": cwd}, fiShell(0, fiPlan(0, 0, 0))))
		}
		add(w)
	}

	// A research agent pages a search past its end: the engine answers
	// its last page again at every later offset.
	{
		w := asRunOf("websearch-offset-past-end-same-page", "search", true)
		pages := [][]string{
			{"Go generics tutorial", "Type parameters in Go", "Go constraints package"},
			{"Generic data structures in Go", "Go generics performance", "When not to use generics"},
		}
		for o := 0; o < 7; o++ {
			if o == 5 {
				w.then()
			}
			p := pages[1]
			if o == 0 {
				p = pages[0]
			}
			w.t("", asOK("brave_web_search", obj{"query": "go generics guide", "count": 3, "offset": o}, fiSearch(o, p...)))
		}
		add(w)
	}

	// A database agent writes one filter with operator synonyms; nothing
	// matches.
	{
		w := asRunOf("mongo-filter-operator-synonyms-empty", "database", true)
		for i, f := range []obj{
			{"status": "refunded", "customerId": "cus_R2k9"},
			{"status": obj{"$eq": "refunded"}, "customerId": "cus_R2k9"},
			{"$and": arr{obj{"customerId": "cus_R2k9"}, obj{"status": "refunded"}}},
			{"customerId": obj{"$eq": "cus_R2k9"}, "status": obj{"$in": arr{"refunded"}}},
			{"$and": arr{obj{"status": obj{"$eq": "refunded"}}, obj{"customerId": obj{"$in": arr{"cus_R2k9"}}}}},
		} {
			if i == 3 {
				w.then()
			}
			w.t("No refunds? Trying the filter another way.", asOK("find", obj{"database": "shop", "collection": "orders", "filter": f, "limit": 10}, "[]"))
		}
		add(w)
	}

	// A container agent pulls one missing tag under other spellings of
	// its reference.
	{
		w := asRunOf("docker-image-ref-respelled-manifest-unknown", "containers", true).acc("write", "pull_image")
		for i, im := range []string{"nginx:1.27-alpine3.21", "docker.io/library/nginx:1.27-alpine3.21", "library/nginx:1.27-alpine3.21", "index.docker.io/library/nginx:1.27-alpine3.21", "registry-1.docker.io/library/nginx:1.27-alpine3.21"} {
			if i == 3 {
				w.then()
			}
			w.t("Pull failed; trying the full reference.", asFail("pull_image", obj{"image": im}, "tool_error", "Error response from daemon: manifest for nginx:1.27-alpine3.21 not found: manifest unknown: manifest unknown"))
		}
		add(w)
	}

	// An Airtable agent respells one formula; nothing matches.
	{
		w := asRunOf("airtable-formula-respelled-empty", "nocode", true)
		for i, f := range []string{"{Status}='Qualified'", "{Status} = 'Qualified'", "AND({Status}='Qualified')", "{Status}=\"Qualified\"", "({Status} = \"Qualified\")"} {
			if i == 3 {
				w.then()
			}
			w.t("No qualified leads? Checking the formula.", asOK("list_records", obj{"baseId": "appQ7x2LmK9pR4tZc", "tableId": "tblLeads", "filterByFormula": f, "maxRecords": 100}, egJSON(obj{"records": arr{}})))
		}
		add(w)
	}

	// A cloud agent resizes one volume under other spellings of one size;
	// over quota each time.
	{
		w := asRunOf("volume-size-units-respelled-quota", "cloud", true).acc("write", "resize_volume")
		for i, a := range []obj{
			{"volume_id": "vol-03a9f10c2d4e5f6a7", "size": "500GB"},
			{"volume_id": "vol-03a9f10c2d4e5f6a7", "size": "500 GB"},
			{"volume_id": "vol-03a9f10c2d4e5f6a7", "size": "500G"},
			{"volume_id": "vol-03a9f10c2d4e5f6a7", "size": "512000MB"},
			{"volume_id": "vol-03a9f10c2d4e5f6a7", "size": "0.5TB"},
		} {
			if i == 3 {
				w.then()
			}
			w.t("Resize refused; retrying.", asFail("resize_volume", a, "tool_error", "An error occurred (VolumeLimitExceeded) when calling the ModifyVolume operation: You have exceeded your maximum gp3 storage limit of 2048 GiB in this region."))
		}
		add(w)
	}

	// An ops agent adds one rule under other spellings of its port; it
	// exists each time.
	{
		w := asRunOf("firewall-port-respelled-exists", "ops", true).acc("write", "add_firewall_rule")
		for i, a := range []obj{
			{"firewall": "web-fw", "direction": "in", "protocol": "tcp", "port": "443", "source_ips": arr{"0.0.0.0/0"}},
			{"firewall": "web-fw", "direction": "in", "port": "443/tcp", "source_ips": arr{"0.0.0.0/0"}},
			{"firewall": "web-fw", "direction": "in", "protocol": "TCP", "port": 443, "source_ips": arr{"0.0.0.0/0"}},
			{"firewall": "web-fw", "direction": "in", "protocol": "tcp", "port": "https", "source_ips": arr{"0.0.0.0/0"}},
			{"firewall": "web-fw", "direction": "in", "protocol": "tcp", "port": "443-443", "source_ips": arr{"0.0.0.0/0"}},
		} {
			if i == 3 {
				w.then()
			}
			w.t("The rule did not go in; adding it again.", asFail("add_firewall_rule", a, "tool_error", "hcloud: firewall rule already exists: in tcp 443 from 0.0.0.0/0 (uniqueness_error)"))
		}
		add(w)
	}

	// A docs agent updates one page again and again on its stale
	// version, rewording its content.
	{
		w := asRunOf("confluence-stale-version-reworded", "docs", true).acc("write", "confluence_update_page")
		for i, c := range []string{"## Refunds\nUse the dashboard.", "## Refunds\nUse the dashboard for refunds.", "## Refunds\nRefunds go through the dashboard.", "## Refunds\nIssue refunds in the dashboard.", "## Refunds\nAlways refund from the dashboard."} {
			if i == 3 {
				w.then()
			}
			w.t("Update failed; trying again.", asFail("confluence_update_page", obj{"page_id": "884736021", "title": "Checkout runbook", "content": c, "version": 7}, "tool_error", "Error updating page: 409 Conflict: Version must be incremented on update. Current version is: 9"))
		}
		add(w)
	}

	// A finance agent asks a calculator one product in other notations.
	{
		w := asRunOf("calculator-notations-same-product", "math", true)
		for i, e := range []string{"2^10*3", "3*2**10", "pow(2, 10) * 3", "3 * 1024", "(2^10)*(3)"} {
			if i == 3 {
				w.then()
			}
			w.t("Double-checking the figure.", asOK("calculate", obj{"expression": e}, "3072"))
		}
		add(w)
	}

	// A Jira agent reorders one JQL search's clauses; nothing found.
	{
		w := asRunOf("jira-jql-reordered-empty", "tracker", true)
		for i, q := range []string{
			"project = SHOP AND status = \"In Progress\" AND assignee = currentUser()",
			"assignee = currentUser() AND project = SHOP AND status = \"In Progress\"",
			"project=SHOP and status='In Progress' and assignee=currentUser()",
			"status = \"In Progress\" AND assignee = currentUser() AND project = \"SHOP\"",
			"project in (SHOP) AND status in (\"In Progress\") AND assignee in (currentUser())",
		} {
			if i == 3 {
				w.then()
			}
			w.t("Nothing assigned to me? Searching again.", asOK("jira_search", obj{"jql": q, "limit": 50}, egJSON(obj{"total": 0, "issues": arr{}})))
		}
		add(w)
	}

	// A weather agent asks one forecast under other spellings of its
	// coordinates.
	{
		w := asRunOf("forecast-coordinates-respelled-same", "weather", true)
		for i, a := range []obj{
			{"latitude": 52.52, "longitude": 13.405, "hours": 3},
			{"latitude": "52.52", "longitude": "13.405", "hours": 3},
			{"latitude": 52.5200, "longitude": 13.4050, "hours": 3},
			{"longitude": 13.405, "latitude": 52.52, "hours": "3"},
			{"latitude": "52.520", "longitude": "13.4050", "hours": 3},
		} {
			if i == 3 {
				w.then()
			}
			w.t("Let me confirm the forecast.", asOK("get_forecast", a, fiForecast("52.52", "13.405", 0.04+float64(i)*0.013, 4.1, 3.8, 3.2)))
		}
		add(w)
	}

	// A Helm upgrade retried with its values reordered and respelled
	// while another operation holds the release.
	{
		w := asRunOf("helm-upgrade-values-reordered-locked", "devops", true).acc("write", "helm_upgrade")
		for i, v := range []any{
			obj{"replicaCount": 3, "image": obj{"tag": "1.27.3"}},
			obj{"image": obj{"tag": "1.27.3"}, "replicaCount": 3},
			obj{"image.tag": "1.27.3", "replicaCount": "3"},
			"replicaCount=3,image.tag=1.27.3",
			"image.tag=1.27.3,replicaCount=3",
		} {
			if i == 3 {
				w.then()
			}
			w.t("Upgrade failed; retrying.", asFail("helm_upgrade", obj{"release": "shop", "chart": "bitnami/nginx", "namespace": "web", "values": v}, "tool_error", "Error: UPGRADE FAILED: another operation (install/upgrade/rollback) is in progress"))
		}
		add(w)
	}

	// A linter and a formatter undo each other's change to one file; the
	// lint fails the same way after each round.
	{
		w := asRunOf("lint-formatter-tug-of-war", "code", true).acc("write", "run_command")
		for r := 0; r < 4; r++ {
			if r == 2 {
				w.then()
			}
			w.t("Fixing the lint.", asOK("run_command", obj{"command": "npx eslint --fix src/cart.ts"}, fiShell(0, "")))
			w.t("Formatting.", asOK("run_command", obj{"command": "npx prettier --write src/cart.ts"}, fiShell(0, fmt.Sprintf("src/cart.ts %dms", 38+r*3))))
			w.t("Checking.", asOK("run_command", obj{"command": "npx eslint src/cart.ts"}, fiShell(1, "/repo/src/cart.ts\n  12:31  error  Missing trailing comma  comma-dangle\n\n✖ 1 problem (1 error, 0 warnings)\n  1 error and 0 warnings potentially fixable with the `--fix` option.")))
		}
		add(w)
	}

	// A CRM agent reorders one SOQL query's fields; the same records.
	{
		w := asRunOf("soql-fields-reordered-same-records", "crm", true)
		recs := arr{obj{"attributes": obj{"type": "Opportunity"}, "Id": "006Kd00000A1b2CIAR", "Name": "Acme renewal", "StageName": "Negotiation", "Amount": 48000}}
		for i, f := range []arr{{"Id", "Name", "StageName", "Amount"}, {"Name", "Id", "Amount", "StageName"}, {"Id", "Name", "Amount", "StageName"}, {"StageName", "Name", "Id", "Amount"}, {"Amount", "StageName", "Name", "Id"}} {
			if i == 3 {
				w.then()
			}
			w.t("Only one open opportunity? Querying again.", asOK("salesforce_query_records", obj{"objectName": "Opportunity", "fields": f, "whereClause": "AccountId = '001Kd00001xQ7RtIAK' AND IsClosed = false"}, egJSON(obj{"totalSize": 1, "done": true, "records": recs})))
		}
		add(w)
	}

	// A mail agent resends one notice to one address in other notations;
	// it bounces each time.
	{
		w := asRunOf("mail-address-notations-bounce", "mail", true).acc("write", "send_email")
		for i, to := range []string{"chen.wei@north.example", "Chen.Wei@north.example", "<chen.wei@north.example>", "Chen Wei <chen.wei@north.example>", "CHEN.WEI@NORTH.EXAMPLE"} {
			if i == 3 {
				w.then()
			}
			w.t("It bounced; resending.", asFail("send_email", obj{"to": arr{to}, "subject": "Your order is delayed", "body": "Your order will ship on Monday. We are sorry for the wait."}, "tool_error", "SMTP 550 5.1.1 <chen.wei@north.example>: Recipient address rejected: User unknown"))
		}
		add(w)
	}

	// A release agent sets one flag under other spellings of true; the
	// environment is locked each time.
	{
		w := asRunOf("flag-true-respelled-locked", "release", true).acc("write", "update_feature_flag")
		for i, on := range []any{true, "true", "on", 1, "yes"} {
			if i == 3 {
				w.then()
			}
			w.t("The flag did not change; setting it again.", asFail("update_feature_flag", obj{"key": "new-checkout", "environment": "production", "enabled": on}, "tool_error", "409 Conflict: environment 'production' is locked for changes by approval policy 'prod-freeze' until 2026-12-08T08:00:00Z"))
		}
		add(w)
	}

	return runs
}
