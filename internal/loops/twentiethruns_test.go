package loops

import (
	"fmt"
	"strings"
	"testing"
)

// The twentieth probe: written before reading the detectors' rules in
// detail, with the tool names and answer shapes of GitOps and
// infrastructure tools (Argo CD, Terraform, Kubernetes rollouts), schema
// migrations (Alembic, Flyway), analytics builds (dbt), translation and
// localization (DeepL, Lokalise), monitoring and alert triage (Datadog),
// browser automation (Playwright scrolling a feed), git bisect and
// rebase, calendar scheduling, travel search (Amadeus), feature flags
// (LaunchDarkly, Unleash), data-cleaning notebooks, and several agents at
// once (AutoGen group chats, a CrewAI manager, a debate with a judge, an
// A2A chain), kinds of work the nineteen before it cover little or not
// at all: an Argo CD sync re-run under respellings while the app stays
// Degraded, an Alembic upgrade respelled into the same duplicate column,
// a dbt model selected under other flags into the same compile error, a
// UI string sent to DeepL respelled into the same translation, Datadog
// monitors listed under reordered tags, an AutoGen coder rewriting a
// script its executor fails alike, a CrewAI manager rewording a task its
// researcher cannot do, an A2A task polled while it waits for input, a
// feed scrolled past its end, a deployment restarted into the same crash,
// a Terraform apply respelled into the same state lock, a rebase
// continued into the same unmerged file, free/busy asked in other time
// zones, a flight search respelled, a Flyway migrate and repair pair
// going round between two agents, two agents switching one flag on and
// off, a Lokalise upload respelled into the same skipped keys, a debate
// whose three voices say the same in other words, a Home Assistant
// service called on an unavailable entity, and a dedupe cell re-run
// respelled while nothing is removed. Each loop has a legitimate
// near-miss that repeats with progress.
//
// A loop is marked as the ninth probe marks them: the fourth call that
// asks again in other words and learns nothing, the third identical poll
// or write, the third round of a pair or ring of calls (or of hand-offs)
// that learns nothing. A tool without readOnlyHint is declared a write,
// as it is through the gateway.
//
// It is written and played with the assistants probe's writer and driver
// (assistruns_test.go).

// s20Known lists the runs whose outcome is not their label's, each with why.
var s20Known = map[string]string{
	// As written, on the guard then (f1d0b452): 8 of 20 loops detected,
	// none early, 12 missed; 2 of 22 legit runs refused. (Two marks were
	// set against the probe's own rule and corrected before any fix: the
	// CrewAI researcher's third identical fetch, refused there, had been
	// marked at the fourth hand-off, "early"; the A2A poll respelled at
	// its third call, which asks in other words, not identically.)
	// Since its fixes, 12 of 20 and none refused: a command respelled
	// whose failing output names one thing word for word (the lock's id,
	// the unmerged file, the column, the model's file, each log line's
	// time aside) is one complaint (namedThings,
	// TestComplaintNamingOneThing); 13 since an AutoGen executor's run of
	// the file its coder rewrites counts as the coder's (edits.go,
	// TestEditRunByAnotherAgent); 14 since a list written in one string
	// is read as its items (commaList, TestListInOneStringReordered).
	// Left:
	"argocd-sync-respelled-degraded":            "missed",
	"a2a-task-input-required-polled":            "missed",
	"k8s-restart-two-agents-same-crash":         "missed",
	"amadeus-search-respelled-same-offers":      "missed",
	"lokalise-upload-respelled-skipped":         "missed",
	"notebook-dedupe-respelled-nothing-removed": "missed",
	// The two legit runs refused go on since: whole days asked one by
	// one, each busy all day, had read as one window shifted with its
	// answer echoing it (the window's date, TestWindowOnOtherDays); a flag
	// switched on for each window by one agent and off by another after
	// reading the window had read as one write made again that changed
	// nothing (setOtherwise, TestWriteSetBackAfterAnotherAgentLooked).
}

func TestTwentiethRuns(t *testing.T) {
	checkAsRuns(t, "twentieth probe", twentiethRuns(), 40, s20Known)
}

// s20Argo is an Argo CD application's state.
func s20Argo(rev, sync, health, msg, reconciled string) string {
	return egJSON(obj{"metadata": obj{"name": "payments", "namespace": "argocd"},
		"status": obj{"sync": obj{"status": sync, "revision": rev}, "health": obj{"status": health, "message": msg},
			"reconciledAt": reconciled, "operationState": obj{"phase": "Succeeded", "message": "successfully synced (all tasks run)", "finishedAt": reconciled}}})
}

// s20Monitors is a Datadog monitor list.
func s20Monitors(ms ...[3]string) string {
	var v arr
	for _, m := range ms {
		v = append(v, obj{"id": m[0], "name": m[1], "overall_state": m[2], "type": "query alert", "tags": arr{"env:prod", "service:checkout", "team:payments"}})
	}
	return egJSON(v)
}

// s20A2ATask is an A2A task as tasks/get answers it.
func s20A2ATask(id, state, text, ts string, artifacts ...string) string {
	o := obj{"kind": "task", "id": id, "contextId": "ctx-7a1e", "status": obj{"state": state, "timestamp": ts, "message": obj{"role": "agent", "kind": "message", "messageId": "m-" + id, "parts": arr{obj{"kind": "text", "text": text}}}}}
	if len(artifacts) > 0 {
		var as arr
		for i, a := range artifacts {
			as = append(as, obj{"artifactId": fmt.Sprintf("art-%d", i+1), "parts": arr{obj{"kind": "text", "text": a}}})
		}
		o["artifacts"] = as
	}
	return egJSON(o)
}

// s20Feed is a Playwright snapshot of a social feed, its refs numbered
// from ref.
func s20Feed(ref int, posts ...string) string {
	var lines []string
	lines = append(lines, fmt.Sprintf("- main [ref=e%d]:", ref))
	for i, p := range posts {
		lines = append(lines, fmt.Sprintf("  - article [ref=e%d]:", ref+1+2*i), fmt.Sprintf("    - paragraph [ref=e%d]: %s", ref+2+2*i, p))
	}
	return s17Snap("https://social.example/feed", "Home / Feed", lines...)
}

// s20Offers is an Amadeus flight offers search answer.
func s20Offers(date string, prices ...string) string {
	var data arr
	for i, p := range prices {
		data = append(data, obj{"type": "flight-offer", "id": fmt.Sprint(i + 1), "source": "GDS", "lastTicketingDate": "2026-12-10",
			"itineraries": arr{obj{"duration": "PT1H35M", "segments": arr{obj{"departure": obj{"iataCode": "ZRH", "at": date + fmt.Sprintf("T%02d:10:00", 7+3*i)}, "arrival": obj{"iataCode": "LIS", "at": date + fmt.Sprintf("T%02d:45:00", 8+3*i)}, "carrierCode": "LX", "number": fmt.Sprint(2084 + i)}}}},
			"price":       obj{"currency": "CHF", "total": p, "grandTotal": p}})
	}
	if data == nil {
		data = arr{}
	}
	return egJSON(obj{"meta": obj{"count": len(prices)}, "data": data})
}

// s20Cell is a Jupyter cell's execution answer.
func s20Cell(n int, text string) string {
	return egJSON(obj{"execution_count": n, "status": "ok", "outputs": arr{obj{"output_type": "stream", "name": "stdout", "text": text}}})
}

// s20Flag is a LaunchDarkly flag as its PATCH answers it.
func s20Flag(on bool, version int) string {
	return egJSON(obj{"key": "new-checkout", "name": "New checkout", "kind": "boolean", "_version": version,
		"environments": obj{"production": obj{"on": on, "archived": false, "_environmentName": "Production", "lastModified": 1796540000000 + int64(version)*61000}}})
}

func twentiethRuns() []*asRun {
	var runs []*asRun
	add := func(w *asw) { runs = append(runs, w.run) }

	// ===================== loops =====================

	// A GitOps agent syncs an Argo CD app under respellings and reads it
	// back; it stays Degraded on the same crash, only its clock moving.
	{
		w := asRunOf("argocd-sync-respelled-degraded", "gitops", true).acc("write", "argocd_sync")
		syncs := []obj{
			{"app": "payments", "revision": "HEAD"},
			{"app": "payments", "revision": "main", "prune": false},
			{"app": "payments", "revision": "HEAD", "strategy": "apply"},
			{"app": "payments", "revision": "main", "force": false},
		}
		for r, s := range syncs {
			if r == 2 {
				w.then()
			}
			at := fmt.Sprintf("2026-12-06T09:%02d:%02dZ", 10+r*3, 7+r*11)
			w.t("Syncing.", asOK("argocd_sync", s, obj{"metadata": obj{"name": "payments"}, "operation": obj{"sync": obj{"revision": "4be1d07c2a9e"}}}))
			w.t("Checking health.", asOK("argocd_get_application", obj{"app": "payments"}, s20Argo("4be1d07c2a9e", "Synced", "Degraded", "Deployment \"payments\" exceeded its progress deadline", at)))
		}
		add(w)
	}

	// A migration agent runs Alembic under respellings; the same column
	// exists already.
	{
		w := asRunOf("alembic-upgrade-respelled-duplicate", "migrations", true).acc("write", "run_shell")
		for i, c := range []string{
			"alembic upgrade head",
			"alembic -c alembic.ini upgrade head",
			"alembic upgrade heads",
			"cd /srv/shop && alembic upgrade head",
			"python -m alembic upgrade head",
		} {
			if i == 3 {
				w.then()
			}
			w.t("Migrating.", asOK("run_shell", obj{"cmd": c}, s17Shell(1, "INFO  [alembic.runtime.migration] Context impl PostgresqlImpl.\nINFO  [alembic.runtime.migration] Will assume transactional DDL.\nINFO  [alembic.runtime.migration] Running upgrade 3c1f9a2b7d10 -> 8e4d2c6a1f53, add discount_code to orders\n",
				"sqlalchemy.exc.ProgrammingError: (psycopg2.errors.DuplicateColumn) column \"discount_code\" of relation \"orders\" already exists\n[SQL: ALTER TABLE orders ADD COLUMN discount_code VARCHAR(32)]")))
		}
		add(w)
	}

	// An analytics agent runs one dbt model under other selectors; the
	// same compile error comes back, each log line stamped anew.
	{
		w := asRunOf("dbt-select-respelled-compile-error", "analytics", true).acc("write", "run_shell")
		for i, c := range []string{"dbt run --select orders_daily", "dbt run -s orders_daily", "dbt run --models orders_daily", "dbt run --select models/marts/orders_daily.sql", "dbt run -s orders_daily --target prod"} {
			if i == 3 {
				w.then()
			}
			ts := fmt.Sprintf("09:%02d:%02d", 21+i, 4+i*7)
			w.t("Building the model.", asOK("run_shell", obj{"cmd": c, "cwd": "/srv/analytics"}, s17Shell(1,
				ts+"  Running with dbt=1.8.2\n"+ts+"  Registered adapter: snowflake=1.8.3\n"+ts+"  Found 41 models, 112 data tests, 9 sources, 577 macros\n"+ts+"  \n"+ts+"  Encountered an error:\nCompilation Error in model orders_daily (models/marts/orders_daily.sql)\n  'ref' is undefined: stg_order_items was not found",
				"")))
		}
		add(w)
	}

	// A localization agent sends one UI string to DeepL under small
	// respellings; the same translation comes back.
	{
		w := asRunOf("deepl-string-respelled-same-translation", "l10n", true)
		for i, s := range []string{"Save changes", "Save Changes", "save changes", "Save changes.", " Save changes"} {
			if i == 3 {
				w.then()
			}
			w.t("Translating the button.", asOK("deepl_translate", obj{"text": arr{s}, "target_lang": "DE", "formality": "prefer_more"},
				obj{"translations": arr{obj{"detected_source_language": "EN", "text": "Änderungen speichern"}}}))
		}
		add(w)
	}

	// An on-call agent lists Datadog monitors under reordered tags; the
	// same two monitors alert.
	{
		w := asRunOf("datadog-monitors-tags-reordered", "monitoring", true)
		res := s20Monitors([3]string{"148203391", "Checkout p99 latency > 2s", "Alert"}, [3]string{"148203402", "Checkout 5xx rate > 1%", "Alert"})
		for i, a := range []obj{
			{"monitor_tags": "service:checkout,env:prod", "group_states": "alert"},
			{"monitor_tags": "env:prod,service:checkout", "group_states": "alert"},
			{"monitor_tags": "env:prod, service:checkout", "group_states": "Alert"},
			{"monitor_tags": "service:checkout,env:prod", "group_states": "alert", "page_size": 50},
			{"monitor_tags": "service:checkout,env:prod,service:checkout", "group_states": "alert"},
		} {
			if i == 3 {
				w.then()
			}
			w.t("Listing the alerting monitors.", asOK("datadog_list_monitors", a, res))
		}
		add(w)
	}

	// An AutoGen group chat: the coder rewrites a script in other words,
	// the executor runs it, and the same KeyError comes back.
	{
		w := asRunOf("autogen-coder-executor-same-keyerror", "groupchat", true).acc("write", "write_file")
		coder, ex := s19As(w, "coder"), s19As(w, "executor")
		for r, code := range []string{
			"import pandas as pd\ndf = pd.read_csv('sales.csv')\nprint(df.groupby('region')['revenue'].sum())",
			"import pandas as pd\nsales = pd.read_csv('sales.csv')\ntotals = sales.groupby('region')['revenue'].sum()\nprint(totals)",
			"import pandas as pd\n\ndf = pd.read_csv(\"sales.csv\")\nprint(df.groupby(by='region')[\"revenue\"].sum())",
			"import pandas as pd\ndf = pd.read_csv('sales.csv', encoding='utf-8')\nprint(df.groupby('region').revenue.sum())",
		} {
			if r == 2 {
				coder.then()
			}
			coder.t("Here is the script.", asOK("write_file", obj{"path": "work/totals.py", "content": code}, "Wrote work/totals.py"))
			ex.t("Running it.", asOK("run_python", obj{"path": "work/totals.py"}, s17Shell(1, "", "Traceback (most recent call last):\n  File \"work/totals.py\", line 3, in <module>\nKeyError: 'revenue'")))
		}
		add(w)
	}

	// A CrewAI manager rewords a research task; its researcher cannot
	// reach the page and says so in other words.
	{
		w := asRunOf("crewai-manager-rewords-blocked-research", "crew", true)
		verdicts := []string{
			"I could not access acme.example/pricing: the site returned 403 Forbidden.",
			"Access to https://acme.example/pricing is forbidden (HTTP 403), so I have no pricing data.",
			"The pricing page of Acme answers 403 Forbidden; I was unable to read it.",
			"Unable to retrieve Acme pricing: 403 Forbidden from acme.example/pricing.",
			"Acme's pricing page is blocked (403). No data gathered.",
		}
		for i, task := range []string{
			"Research Acme's current pricing tiers.",
			"Find out what Acme charges for each plan.",
			"Gather Acme's plan prices from their website.",
			"Look up the pricing of Acme's plans.",
			"What are Acme's subscription prices?",
		} {
			w.hand("Delegating to the researcher.", "market_researcher", task, verdicts[i], func(s *asw) {
				if i == 2 {
					s.then() // the third identical fetch
				}
				s.t("Fetching the page.", asFail("scrape_website", obj{"website_url": "https://acme.example/pricing"}, "tool_error", "HTTP 403 Forbidden"))
			})
		}
		add(w)
	}

	// An A2A client polls a remote agent's task that waits for input; the
	// agent asks the same question each time and nobody answers it.
	{
		w := asRunOf("a2a-task-input-required-polled", "a2a", true)
		for i, hl := range []any{10, 20, "10", 5, 10} {
			if i == 3 {
				w.then()
			}
			w.t("Checking the remote task.", asOK("a2a_get_task", obj{"id": "task-9f2c41", "historyLength": hl},
				s20A2ATask("task-9f2c41", "input-required", "Which fiscal year should the expense report cover?", "2026-12-06T09:40:12Z")))
		}
		add(w)
	}

	// A browser agent scrolls a feed past its end; each snapshot renumbers
	// its refs while the same posts stay.
	{
		w := asRunOf("playwright-feed-scrolled-past-end", "browser", true)
		posts := [][]string{
			{"Launch day for v3!", "Our Q4 roadmap", "Hiring: SRE in Lisbon"},
			{"Hiring: SRE in Lisbon", "Postmortem: Nov 30 outage", "Meetup recap"},
			{"Meetup recap", "Welcome, new interns", "You're all caught up"},
		}
		for i, p := range posts {
			w.t("Scrolling.", asOK("browser_mouse_wheel", obj{"deltaX": 0, "deltaY": 900}, s20Feed(10+i*40, p...)))
		}
		for i, dy := range []int{900, 1200, 2000, 900, 1500} {
			if i == 2 {
				w.then()
			}
			w.t("Scrolling further.", asOK("browser_mouse_wheel", obj{"deltaX": 0, "deltaY": dy}, s20Feed(130+i*40, posts[2]...)))
		}
		add(w)
	}

	// Two agents: a deployer restarts a deployment, an SRE agent reads the
	// new pod's log; the same missing setting crashes each new pod.
	{
		w := asRunOf("k8s-restart-two-agents-same-crash", "kubernetes", true).acc("write", "kubectl")
		dep, sre := s19As(w, "deployer"), s19As(w, "sre")
		for r, c := range []string{
			"kubectl rollout restart deployment/payments -n pay",
			"kubectl -n pay rollout restart deploy/payments",
			"kubectl rollout restart deployment payments --namespace pay",
			"kubectl --namespace=pay rollout restart deployment/payments",
		} {
			if r == 2 {
				dep.then()
			}
			pod := fmt.Sprintf("payments-6d8f7c9b%02x-%c%c2q", 0x41+r*17, 'a'+r, 'k'+r)
			dep.t("Restarting.", asOK("kubectl", obj{"command": c}, s17Shell(0, "deployment.apps/payments restarted\n", "")))
			sre.t("Reading the new pod's log.", asOK("kubectl_logs", obj{"namespace": "pay", "pod": pod, "tail": 20},
				"2026/12/06 09:5"+fmt.Sprint(r)+":01 starting payments v1.14.2\npanic: config: STRIPE_API_KEY is not set\n\ngoroutine 1 [running]:\nmain.main()\n\t/src/cmd/payments/main.go:41 +0x1c5"))
		}
		add(w)
	}

	// An infrastructure agent applies Terraform under respellings; the
	// same state lock, held by the same run, refuses each.
	{
		w := asRunOf("terraform-apply-respelled-locked", "infra", true).acc("write", "run_shell")
		for i, c := range []string{
			"terraform apply -auto-approve",
			"terraform apply -auto-approve -input=false",
			"terraform -chdir=infra/prod apply -auto-approve",
			"terraform apply -auto-approve -lock=true",
			"TF_IN_AUTOMATION=1 terraform apply -auto-approve",
		} {
			if i == 3 {
				w.then()
			}
			w.t("Applying.", asOK("run_shell", obj{"cmd": c, "cwd": "/srv/infra/prod"}, s17Shell(1, "",
				"Error: Error acquiring the state lock\n\nError message: ConditionalCheckFailedException: The conditional request failed\nLock Info:\n  ID:        5b1e0c7a-2d4f-8e31-9a0b-77c2d1e4f6a9\n  Path:      shop-tfstate/prod/terraform.tfstate\n  Operation: OperationTypeApply\n  Who:       ci@runner-12\n  Version:   1.9.8\n  Created:   2026-12-06 08:02:41.118307 +0000 UTC\n\nTerraform acquires a state lock to protect the state from being written\nby multiple users at the same time.")))
		}
		add(w)
	}

	// A git agent continues a rebase under respellings; the same file is
	// still unmerged.
	{
		w := asRunOf("git-rebase-continue-same-unmerged", "git", true).acc("write", "git")
		for i, c := range []string{
			"git rebase --continue",
			"GIT_EDITOR=true git rebase --continue",
			"git -c core.editor=true rebase --continue",
			"git add -u && git rebase --continue",
			"git rebase --continue --no-verify",
		} {
			if i == 3 {
				w.then()
			}
			w.t("Continuing the rebase.", asOK("git", obj{"command": c, "repo": "/srv/shop"}, s17Shell(1, "",
				"src/checkout/cart.ts: needs merge\nYou must edit all merge conflicts and then\nmark them as resolved using git add")))
		}
		add(w)
	}

	// A scheduling agent asks free/busy for one window written in other
	// time zones; the same busy blocks come back.
	{
		w := asRunOf("calendar-freebusy-other-timezones", "calendar", true)
		busy := egJSON(obj{"kind": "calendar#freeBusy", "timeMin": "2026-12-08T08:00:00.000Z", "timeMax": "2026-12-08T17:00:00.000Z", "calendars": obj{
			"mia@shop.example": obj{"busy": arr{obj{"start": "2026-12-08T08:00:00Z", "end": "2026-12-08T12:00:00Z"}, obj{"start": "2026-12-08T13:00:00Z", "end": "2026-12-08T17:00:00Z"}}},
			"tom@shop.example": obj{"busy": arr{obj{"start": "2026-12-08T09:30:00Z", "end": "2026-12-08T16:00:00Z"}}}}})
		for i, win := range [][2]string{
			{"2026-12-08T08:00:00Z", "2026-12-08T17:00:00Z"},
			{"2026-12-08T09:00:00+01:00", "2026-12-08T18:00:00+01:00"},
			{"2026-12-08T03:00:00-05:00", "2026-12-08T12:00:00-05:00"},
			{"2026-12-08T08:00:00.000Z", "2026-12-08T17:00:00.000Z"},
			{"2026-12-08T10:00:00+02:00", "2026-12-08T19:00:00+02:00"},
		} {
			if i == 3 {
				w.then()
			}
			w.t("Looking for a slot.", asOK("calendar_freebusy", obj{"timeMin": win[0], "timeMax": win[1], "items": arr{obj{"id": "mia@shop.example"}, obj{"id": "tom@shop.example"}}}, busy))
		}
		add(w)
	}

	// A travel agent searches one flight under respellings of its
	// airports and options; the same three offers come back.
	{
		w := asRunOf("amadeus-search-respelled-same-offers", "travel", true)
		res := s20Offers("2026-12-20", "212.40", "238.90", "301.15")
		for i, a := range []obj{
			{"originLocationCode": "ZRH", "destinationLocationCode": "LIS", "departureDate": "2026-12-20", "adults": 1},
			{"originLocationCode": "zrh", "destinationLocationCode": "lis", "departureDate": "2026-12-20", "adults": "1"},
			{"originLocationCode": "ZRH", "destinationLocationCode": "LIS", "departureDate": "2026-12-20", "adults": 1, "currencyCode": "CHF"},
			{"originLocationCode": "ZRH", "destinationLocationCode": "LIS", "departureDate": "2026-12-20", "adults": 1, "max": 10},
			{"destinationLocationCode": "LIS", "originLocationCode": "ZRH", "departureDate": "2026-12-20", "adults": 1, "nonStop": true},
		} {
			if i == 3 {
				w.then()
			}
			w.t("Searching flights.", asOK("flight_offers_search", a, res))
		}
		add(w)
	}

	// A migrator runs Flyway, a DBA agent repairs the history table, and
	// the same checksum mismatch comes back each round.
	{
		w := asRunOf("flyway-migrate-repair-two-agents", "migrations", true).acc("write", "flyway")
		mig, dba := s19As(w, "migrator"), s19As(w, "dba")
		for r := 0; r < 4; r++ {
			if r == 2 {
				mig.then()
			}
			mig.t("Migrating.", asOK("flyway", obj{"command": "migrate", "url": "jdbc:postgresql://db:5432/shop"}, s17Shell(1, "Flyway Community Edition 10.21.0 by Redgate\n",
				"ERROR: Validate failed: Migrations have failed validation\nMigration checksum mismatch for migration version 7\n-> Applied to database : 1183462510\n-> Resolved locally    : -402117733\nEither revert the changes to the migration, or run repair to update the schema history.")))
			dba.t("Repairing.", asOK("flyway", obj{"command": "repair", "url": "jdbc:postgresql://db:5432/shop"}, s17Shell(0,
				fmt.Sprintf("Flyway Community Edition 10.21.0 by Redgate\nSuccessfully repaired schema history table \"public\".\"flyway_schema_history\" (execution time 00:00.%03ds).\n", 38+r*7), "")))
		}
		add(w)
	}

	// Two agents switch one Unleash flag: one on, one off, each for its
	// own reason, with nothing read in between.
	{
		w := asRunOf("unleash-flag-two-agents-fight", "flags", true).acc("write", "unleash_toggle")
		a, b := s19As(w, "growth_agent"), s19As(w, "reliability_agent")
		for r := 0; r < 4; r++ {
			if r == 2 {
				a.then()
			}
			a.t("The experiment needs it on.", asOK("unleash_toggle", obj{"project": "default", "feature": "new-checkout", "environment": "production", "enabled": true}, obj{"status": 200}))
			b.t("It raised errors last time; switching it off.", asOK("unleash_toggle", obj{"project": "default", "feature": "new-checkout", "environment": "production", "enabled": false}, obj{"status": 200}))
		}
		add(w)
	}

	// A localization agent uploads one file under respellings; Lokalise
	// skips the same three keys each time.
	{
		w := asRunOf("lokalise-upload-respelled-skipped", "l10n", true).acc("write", "lokalise_upload")
		for i, a := range []obj{
			{"filename": "de.json", "lang_iso": "de", "replace_modified": true},
			{"filename": "locales/de.json", "lang_iso": "de", "replace_modified": true},
			{"filename": "de.json", "lang_iso": "de_DE", "replace_modified": true},
			{"filename": "de.json", "lang_iso": "de", "replace_modified": true, "convert_placeholders": true},
			{"filename": "./de.json", "lang_iso": "DE", "replace_modified": true},
		} {
			if i == 3 {
				w.then()
			}
			a["project_id"] = "3782014565f1b0c2a7.71"
			w.t("Uploading the German file.", asOK("lokalise_upload", a, obj{"process": obj{"type": "file-import", "status": "finished", "details": obj{"files": arr{obj{"name_original": "de.json", "word_count_total": 1842, "key_count_total": 412, "key_count_inserted": 0, "key_count_updated": 0, "key_count_skipped": 3,
				"skipped_keys": arr{"cart.items_count", "checkout.total_with_tax", "orders.shipped_on"}, "skip_reason": "placeholder mismatch"}}}}}))
		}
		add(w)
	}

	// A debate: a moderator hands the question to two debaters and a
	// judge in turn; each says the same as last round in other words.
	{
		w := asRunOf("debate-three-voices-no-new-argument", "debate", true)
		pro := []string{
			"Rewriting in Rust removes the memory-safety bugs behind 60% of our incidents.",
			"Most of our incidents (about 60%) are memory bugs a Rust rewrite would remove.",
			"A Rust port eliminates the memory-safety class of bugs, which is roughly 60% of incidents.",
			"Since 60% of incidents come from memory safety, moving to Rust removes them.",
		}
		con := []string{
			"A rewrite freezes features for a year; fixing the allocator is cheaper.",
			"A year without features is too costly; patch the allocator instead.",
			"Fixing the allocator costs far less than a year-long feature freeze.",
			"Patching the allocator beats a rewrite that blocks features for twelve months.",
		}
		judge := []string{
			"Undecided: both sides repeat claims without data on allocator fixes.",
			"No ruling yet: neither side has shown what fixing the allocator would cost.",
			"Still undecided; the allocator-fix cost remains unquantified by both sides.",
			"Cannot decide: no numbers on the allocator fix from either debater.",
		}
		for r := 0; r < 4; r++ {
			if r == 2 {
				w.then()
			}
			w.hand("Affirmative's turn.", "affirmative", "Argue for rewriting the ingest service in Rust.", pro[r], nil)
			w.hand("Negative's turn.", "negative", "Argue against rewriting the ingest service in Rust.", con[r], nil)
			w.hand("Judge's turn.", "judge", "Rule on the debate so far.", judge[r], nil)
		}
		add(w)
	}

	// A home agent sets a thermostat under respellings; the entity is
	// unavailable each time.
	{
		w := asRunOf("homeassistant-unavailable-respelled", "home", true).acc("write", "call_service")
		for i, d := range []obj{
			{"entity_id": "climate.living_room", "temperature": 21},
			{"entity_id": "climate.living_room", "temperature": 21.0, "hvac_mode": "heat"},
			{"entity_id": "climate.living_room", "temperature": "21"},
			{"entity_id": "climate.living_room", "target_temp_high": 21, "temperature": 21},
			{"entity_id": "CLIMATE.LIVING_ROOM", "temperature": 21},
		} {
			if i == 3 {
				w.then()
			}
			w.t("Setting the heating.", asFail("call_service", obj{"domain": "climate", "service": "set_temperature", "service_data": d}, "tool_error",
				"Entity climate.living_room is unavailable"))
		}
		add(w)
	}

	// A data-cleaning notebook re-runs a dedupe cell respelled; nothing is
	// removed and the count is the same.
	{
		w := asRunOf("notebook-dedupe-respelled-nothing-removed", "notebook", true).acc("write", "execute_cell")
		for i, code := range []string{
			"df = df.drop_duplicates(subset=['email'])\nprint(len(df))",
			"df = df.drop_duplicates(['email'])\nprint(len(df))",
			"df = df.drop_duplicates(subset=[\"email\"], keep=\"first\")\nprint(len(df))",
			"df.drop_duplicates(subset=['email'], inplace=True)\nprint(len(df))",
			"df = df.drop_duplicates(subset='email')\nprint(df.shape[0])",
		} {
			if i == 3 {
				w.then()
			}
			w.t("Deduplicating.", asOK("execute_cell", obj{"notebook": "clean_customers.ipynb", "code": code}, s20Cell(14+i, "10482\n")))
		}
		add(w)
	}

	// ===================== legit =====================

	// Several Argo CD apps synced one by one, each read until Healthy.
	{
		w := asRunOf("argocd-apps-synced-to-healthy", "gitops", false).acc("write", "argocd_sync")
		for i, app := range []string{"payments", "orders", "catalog"} {
			w.t("Syncing "+app+".", asOK("argocd_sync", obj{"app": app, "revision": "HEAD"}, obj{"metadata": obj{"name": app}, "operation": obj{"sync": obj{"revision": "9a7e11c"}}}))
			for j, h := range []string{"Progressing", "Progressing", "Healthy"} {
				msg := fmt.Sprintf("Waiting for rollout to finish: %d of 3 updated replicas are available...", j+1)
				if h == "Healthy" {
					msg = ""
				}
				w.t("Checking.", asOK("argocd_get_application", obj{"app": app}, s20Argo("9a7e11c", "Synced", h, msg, fmt.Sprintf("2026-12-06T10:%02d:%02dZ", i*5+j, 10+j*17))))
			}
		}
		add(w)
	}

	// Alembic upgraded one revision at a time, each step another revision.
	{
		w := asRunOf("alembic-upgrade-step-by-step", "migrations", false).acc("write", "run_shell")
		revs := []string{"3c1f9a2b7d10", "8e4d2c6a1f53", "b21e77c0d9a4", "0f9c3d8e6a12", "5a6b7c8d9e0f", "d4e5f6a7b8c9"}
		names := []string{"add discount_code to orders", "backfill discount codes", "index orders by discount_code", "drop legacy coupons table", "add refunds.reason"}
		for i := 0; i < 5; i++ {
			w.t("Next revision.", asOK("run_shell", obj{"cmd": "alembic upgrade +1"}, s17Shell(0, fmt.Sprintf("INFO  [alembic.runtime.migration] Context impl PostgresqlImpl.\nINFO  [alembic.runtime.migration] Will assume transactional DDL.\nINFO  [alembic.runtime.migration] Running upgrade %s -> %s, %s\n", revs[i], revs[i+1], names[i]), "")))
		}
		w.t("Checking.", asOK("run_shell", obj{"cmd": "alembic current"}, s17Shell(0, "d4e5f6a7b8c9 (head)\n", "")))
		add(w)
	}

	// dbt run again after each fix; the failures fall until the build
	// passes.
	{
		w := asRunOf("dbt-build-fixed-model-by-model", "analytics", false).acc("write", "run_shell", "write_file")
		fails := [][2]string{
			{"ERROR=3", "Compilation Error in model orders_daily: 'ref' is undefined: stg_order_items was not found"},
			{"ERROR=2", "Database Error in model customers_ltv: invalid identifier 'LIFETIME_VALUE'"},
			{"ERROR=1", "Failure in test not_null_orders_daily_order_date: Got 4 results, configured to fail if != 0"},
			{"ERROR=0", ""},
		}
		fixes := []string{"models/staging/stg_order_items.sql", "models/marts/customers_ltv.sql", "models/marts/orders_daily.sql"}
		for i, f := range fails {
			ts := fmt.Sprintf("09:%02d:%02d", 30+i*4, 9+i)
			w.t("Building.", asOK("run_shell", obj{"cmd": "dbt build", "cwd": "/srv/analytics"}, s17Shell(map[bool]int{true: 0, false: 1}[f[1] == ""],
				ts+"  Running with dbt=1.8.2\n"+ts+"  Done. PASS=150 WARN=0 "+f[0]+" SKIP=0 TOTAL=153\n"+f[1], "")))
			if i < len(fixes) {
				w.t("Fixing.", asOK("write_file", obj{"path": fixes[i], "content": fmt.Sprintf("-- fix %d\nselect * from {{ ref('base_%d') }}", i, i)}, "ok"))
			}
		}
		add(w)
	}

	// A batch of UI strings translated into German, two of them alike in
	// the target, and one string into three languages.
	{
		w := asRunOf("deepl-batch-of-ui-strings", "l10n", false)
		for _, p := range [][2]string{{"Save changes", "Änderungen speichern"}, {"Email", "E-Mail"}, {"E-mail address", "E-Mail-Adresse"}, {"e-mail", "E-Mail"}, {"Cancel", "Abbrechen"}, {"OK", "OK"}, {"Continue", "Weiter"}, {"Next", "Weiter"}} {
			w.t("Translating.", asOK("deepl_translate", obj{"text": arr{p[0]}, "target_lang": "DE", "formality": "prefer_more"}, obj{"translations": arr{obj{"detected_source_language": "EN", "text": p[1]}}}))
		}
		for _, p := range [][2]string{{"FR", "Enregistrer les modifications"}, {"ES", "Guardar cambios"}, {"IT", "Salva modifiche"}} {
			w.t("Translating.", asOK("deepl_translate", obj{"text": arr{"Save changes"}, "target_lang": p[0]}, obj{"translations": arr{obj{"detected_source_language": "EN", "text": p[1]}}}))
		}
		add(w)
	}

	// An on-call agent watches a monitor after a mitigation: its value
	// falls until it recovers.
	{
		w := asRunOf("datadog-monitor-recovers", "monitoring", false).acc("write", "datadog_mute_monitor")
		w.t("Muting the noisy one.", asOK("datadog_mute_monitor", obj{"monitor_id": "148203402", "end": 1796543600}, obj{"id": "148203402", "overall_state": "Alert", "options": obj{"silenced": obj{"*": 1796543600}}}))
		for i, p := range [][2]string{{"Alert", "3.81"}, {"Alert", "2.64"}, {"Warn", "1.72"}, {"Warn", "1.31"}, {"OK", "0.88"}} {
			w.t("Watching p99.", asOK("datadog_get_monitor", obj{"monitor_id": "148203391", "group_states": "all"},
				obj{"id": "148203391", "name": "Checkout p99 latency > 2s", "overall_state": p[0], "state": obj{"groups": obj{"env:prod": obj{"status": p[0], "last_triggered_ts": 1796536800, "last_value": p[1]}}}, "overall_state_modified": fmt.Sprintf("2026-12-06T09:%02d:00Z", 40+i*3)}))
		}
		add(w)
	}

	// An AutoGen coder fixes a script round by round; each run fails
	// otherwise until it prints the totals.
	{
		w := asRunOf("autogen-coder-executor-fixes", "groupchat", false).acc("write", "write_file")
		coder, ex := s19As(w, "coder"), s19As(w, "executor")
		rounds := [][2]string{
			{"import pandas as pd\ndf = pd.read_csv('sales.csv')\nprint(df.groupby('region')['revenue'].sum())", "Traceback (most recent call last):\nKeyError: 'revenue'"},
			{"import pandas as pd\ndf = pd.read_csv('sales.csv')\nprint(df.columns.tolist())", "['Region', 'Net Revenue', 'Units']"},
			{"import pandas as pd\ndf = pd.read_csv('sales.csv')\nprint(df.groupby('Region')['Net Revenue'].sum())", "Traceback (most recent call last):\nTypeError: can only concatenate str (not \"int\") to str"},
			{"import pandas as pd\ndf = pd.read_csv('sales.csv', thousands=',')\nprint(df.groupby('Region')['Net Revenue'].sum())", "Region\nAPAC    1204331\nEMEA    2290418\nNA      3102774\nName: Net Revenue, dtype: int64"},
		}
		for _, rd := range rounds {
			coder.t("Here is the script.", asOK("write_file", obj{"path": "work/totals.py", "content": rd[0]}, "Wrote work/totals.py"))
			code := 0
			if strings.HasPrefix(rd[1], "Traceback") {
				code = 1
			}
			ex.t("Running it.", asOK("run_python", obj{"path": "work/totals.py"}, s17Shell(code, rd[1], "")))
		}
		add(w)
	}

	// A CrewAI manager delegates one competitor at a time; each answer is
	// of its own competitor.
	{
		w := asRunOf("crewai-manager-competitor-by-competitor", "crew", false)
		for i, c := range []string{"Acme", "Globex", "Initech", "Umbrella", "Hooli"} {
			w.hand("Delegating to the researcher.", "market_researcher", "Research "+c+"'s current pricing tiers.",
				fmt.Sprintf("%s offers Starter at $%d/mo, Team at $%d/mo and Enterprise on request.", c, 9+i*5, 29+i*11), func(s *asw) {
					s.t("Fetching the page.", asOK("scrape_website", obj{"website_url": "https://" + strings.ToLower(c) + ".example/pricing"}, fmt.Sprintf("Starter $%d per month. Team $%d per month. Enterprise: contact sales.", 9+i*5, 29+i*11)))
				})
		}
		add(w)
	}

	// An A2A chain: a task polled while its artifacts grow, then done.
	{
		w := asRunOf("a2a-task-polled-artifacts-grow", "a2a", false)
		parts := []string{"Translated 120/400 strings.", "Translated 250/400 strings.", "Translated 380/400 strings.", "Translated 400/400 strings."}
		for i := range parts {
			state := "working"
			if i == len(parts)-1 {
				state = "completed"
			}
			w.t("Checking the remote task.", asOK("a2a_get_task", obj{"id": "task-31ab07", "historyLength": 10},
				s20A2ATask("task-31ab07", state, parts[i], fmt.Sprintf("2026-12-06T09:%02d:00Z", 41+i), parts[:i+1]...)))
		}
		add(w)
	}

	// A browser agent scrolls a long feed, new posts each time.
	{
		w := asRunOf("playwright-feed-scrolled-new-posts", "browser", false)
		for i := 0; i < 9; i++ {
			w.t("Scrolling.", asOK("browser_mouse_wheel", obj{"deltaX": 0, "deltaY": 900},
				s20Feed(10+i*40, fmt.Sprintf("Post %d: release notes for build %d", 3*i, 700+3*i), fmt.Sprintf("Post %d: team update week %d", 3*i+1, 40+i), fmt.Sprintf("Post %d: customer story #%d", 3*i+2, 12+i))))
		}
		add(w)
	}

	// A rollout status polled while replicas come up.
	{
		w := asRunOf("k8s-rollout-status-progresses", "kubernetes", false).acc("write", "kubectl")
		w.t("Restarting.", asOK("kubectl", obj{"command": "kubectl rollout restart deployment/payments -n pay"}, s17Shell(0, "deployment.apps/payments restarted\n", "")))
		for i := 0; i < 3; i++ {
			w.t("Watching the rollout.", asOK("kubectl_rollout_status", obj{"namespace": "pay", "deployment": "payments", "timeout": "30s"},
				fmt.Sprintf("Waiting for deployment \"payments\" rollout to finish: %d of 3 updated replicas are available...", i)))
		}
		w.t("Watching the rollout.", asOK("kubectl_rollout_status", obj{"namespace": "pay", "deployment": "payments", "timeout": "30s"}, "deployment \"payments\" successfully rolled out"))
		add(w)
	}

	// Terraform: a stale lock released, then an apply, then a plan per
	// workspace, each answering no changes.
	{
		w := asRunOf("terraform-unlock-apply-plan-workspaces", "infra", false).acc("write", "run_shell")
		w.t("Applying.", asOK("run_shell", obj{"cmd": "terraform apply -auto-approve", "cwd": "/srv/infra/prod"}, s17Shell(1, "", "Error: Error acquiring the state lock\nLock Info:\n  ID:        5b1e0c7a-2d4f-8e31-9a0b-77c2d1e4f6a9\n  Who:       ci@runner-12")))
		w.t("Checking the runner.", asOK("ci_get_job", obj{"runner": "runner-12"}, obj{"status": "cancelled", "finished_at": "2026-12-06T08:03:10Z"}))
		w.t("Releasing the stale lock.", asOK("run_shell", obj{"cmd": "terraform force-unlock -force 5b1e0c7a-2d4f-8e31-9a0b-77c2d1e4f6a9", "cwd": "/srv/infra/prod"}, s17Shell(0, "Terraform state has been successfully unlocked!\n", "")))
		w.t("Applying.", asOK("run_shell", obj{"cmd": "terraform apply -auto-approve", "cwd": "/srv/infra/prod"}, s17Shell(0, "Apply complete! Resources: 2 added, 1 changed, 0 destroyed.\n", "")))
		for _, ws := range []string{"dev", "staging", "prod", "dr"} {
			w.t("Planning "+ws+".", asOK("run_shell", obj{"cmd": "terraform plan -detailed-exitcode", "cwd": "/srv/infra/" + ws}, s17Shell(0, "No changes. Your infrastructure matches the configuration.\n", "")))
		}
		add(w)
	}

	// git bisect: good and bad in turn, each step naming another commit;
	// the test fails alike on several commits.
	{
		w := asRunOf("git-bisect-to-first-bad", "git", false).acc("write", "git", "run_shell")
		w.t("Starting.", asOK("git", obj{"command": "git bisect start HEAD v1.13.0", "repo": "/srv/shop"}, s17Shell(0, "Bisecting: 31 revisions left to test after this (roughly 5 steps)\n[a41c9e2] checkout: inline tax rounding\n", "")))
		steps := []struct{ verdict, next string }{
			{"bad", "Bisecting: 15 revisions left to test after this (roughly 4 steps)\n[7f2d0b1] cart: cache totals\n"},
			{"bad", "Bisecting: 7 revisions left to test after this (roughly 3 steps)\n[c90e44a] deps: bump decimal.js\n"},
			{"good", "Bisecting: 3 revisions left to test after this (roughly 2 steps)\n[19be7d3] cart: round per line\n"},
			{"bad", "Bisecting: 1 revision left to test after this (roughly 1 step)\n[e03f5a8] cart: round half up\n"},
			{"bad", "e03f5a8 is the first bad commit\ncommit e03f5a8\n    cart: round half up\n"},
		}
		for _, s := range steps {
			out, code := "FAIL tests/cart.test.ts > totals round half even\n1 failed, 212 passed\n", 1
			if s.verdict == "good" {
				out, code = "213 passed\n", 0
			}
			w.t("Testing this commit.", asOK("run_shell", obj{"cmd": "npx vitest run tests/cart.test.ts", "cwd": "/srv/shop"}, s17Shell(code, out, "")))
			w.t("Marking it.", asOK("git", obj{"command": "git bisect " + s.verdict, "repo": "/srv/shop"}, s17Shell(0, s.next, "")))
		}
		add(w)
	}

	// A rebase continued through three conflicts, each in another commit
	// and file.
	{
		w := asRunOf("git-rebase-conflict-by-conflict", "git", false).acc("write", "git", "write_file")
		conf := [][2]string{{"src/checkout/cart.ts", "3fa1c2e cart: round per line"}, {"src/checkout/tax.ts", "8b20d4f tax: EU rates 2027"}, {"src/api/orders.ts", "c11e9a0 orders: expose discount"}}
		for i, c := range conf {
			w.t("Resolving.", asOK("write_file", obj{"path": "/srv/shop/" + c[0], "content": fmt.Sprintf("// resolved %d\nexport const v = %d\n", i, i)}, "ok"))
			next := fmt.Sprintf("Auto-merging %s\nCONFLICT (content): Merge conflict in %s\nerror: could not apply %s\n", conf[(i+1)%3][0], conf[(i+1)%3][0], conf[(i+1)%3][1])
			if i == len(conf)-1 {
				next = "Successfully rebased and updated refs/heads/feature/discounts.\n"
			}
			w.t("Continuing.", asOK("git", obj{"command": "git add " + c[0] + " && GIT_EDITOR=true git rebase --continue", "repo": "/srv/shop"}, s17Shell(map[bool]int{true: 0, false: 1}[i == len(conf)-1], next, "")))
		}
		add(w)
	}

	// A scheduling agent asks free/busy for several days; two are full
	// alike, the fourth has a slot, and the meeting is booked.
	{
		w := asRunOf("calendar-freebusy-day-by-day", "calendar", false).acc("write", "calendar_create_event")
		for _, d := range []string{"08", "09", "10", "11"} {
			busy := arr{obj{"start": "2026-12-" + d + "T08:00:00Z", "end": "2026-12-" + d + "T17:00:00Z"}}
			if d == "11" {
				busy = arr{obj{"start": "2026-12-11T08:00:00Z", "end": "2026-12-11T10:00:00Z"}}
			}
			w.t("Looking for a slot.", asOK("calendar_freebusy", obj{"timeMin": "2026-12-" + d + "T08:00:00Z", "timeMax": "2026-12-" + d + "T17:00:00Z", "items": arr{obj{"id": "mia@shop.example"}}},
				obj{"kind": "calendar#freeBusy", "calendars": obj{"mia@shop.example": obj{"busy": busy}}}))
		}
		w.t("Booking.", asOK("calendar_create_event", obj{"summary": "Pricing review", "start": "2026-12-11T10:00:00Z", "end": "2026-12-11T10:30:00Z", "attendees": arr{"mia@shop.example", "tom@shop.example"}}, obj{"id": "9q2kpricing", "status": "confirmed"}))
		add(w)
	}

	// Flexible dates: one flight searched for each day around the trip,
	// two days without offers alike.
	{
		w := asRunOf("amadeus-flexible-dates", "travel", false)
		for i, d := range []string{"2026-12-18", "2026-12-19", "2026-12-20", "2026-12-21", "2026-12-22"} {
			var prices []string
			switch i {
			case 0, 4:
			default:
				prices = []string{fmt.Sprintf("%d.40", 190+i*17), fmt.Sprintf("%d.90", 230+i*9)}
			}
			w.t("Searching flights.", asOK("flight_offers_search", obj{"originLocationCode": "ZRH", "destinationLocationCode": "LIS", "departureDate": d, "adults": 1}, s20Offers(d, prices...)))
		}
		add(w)
	}

	// Flyway: a checksum mismatch repaired once, then a migrate per
	// environment.
	{
		w := asRunOf("flyway-repair-then-migrate-environments", "migrations", false).acc("write", "flyway")
		mig, dba := s19As(w, "migrator"), s19As(w, "dba")
		mig.t("Migrating.", asOK("flyway", obj{"command": "migrate", "url": "jdbc:postgresql://db-dev:5432/shop"}, s17Shell(1, "", "ERROR: Validate failed: Migration checksum mismatch for migration version 7")))
		dba.t("Repairing.", asOK("flyway", obj{"command": "repair", "url": "jdbc:postgresql://db-dev:5432/shop"}, s17Shell(0, "Successfully repaired schema history table \"public\".\"flyway_schema_history\" (execution time 00:00.041s).\n", "")))
		for i, env := range []string{"dev", "staging", "prod"} {
			mig.t("Migrating "+env+".", asOK("flyway", obj{"command": "migrate", "url": "jdbc:postgresql://db-" + env + ":5432/shop"}, s17Shell(0,
				fmt.Sprintf("Successfully validated 9 migrations (execution time 00:00.0%02ds)\nCurrent version of schema \"public\": %d\nSuccessfully applied %d migrations to schema \"public\", now at version v9\n", 20+i*3, 7-i, 2+i), "")))
		}
		add(w)
	}

	// A feature-flag experiment: one agent switches the flag for each
	// window, another reads the window's conversion and switches it back.
	{
		w := asRunOf("launchdarkly-ab-windows-two-agents", "flags", false).acc("write", "ld_patch_flag")
		sched, an := s19As(w, "scheduler"), s19As(w, "analyst")
		v := 40
		for r := 0; r < 4; r++ {
			v++
			sched.t("Window on.", asOK("ld_patch_flag", obj{"project": "shop", "flag": "new-checkout", "environment": "production", "on": true}, s20Flag(true, v)))
			an.t("Reading the window.", asOK("get_conversion", obj{"flag": "new-checkout", "window": r + 1}, obj{"window": r + 1, "variant": "on", "sessions": 1200 + r*37, "conversion": fmt.Sprintf("3.%d%%", 1+r*2)}))
			v++
			an.t("Window off.", asOK("ld_patch_flag", obj{"project": "shop", "flag": "new-checkout", "environment": "production", "on": false}, s20Flag(false, v)))
		}
		add(w)
	}

	// A kill-switch drill: an SRE agent and a QA agent switch one flag in
	// turn four times; each answer carries the flag's new version.
	{
		w := asRunOf("launchdarkly-kill-switch-drill", "flags", false).acc("write", "ld_patch_flag")
		sre, qa := s19As(w, "sre_agent"), s19As(w, "qa_agent")
		v := 80
		for r := 0; r < 4; r++ {
			v++
			sre.t("Kill switch off.", asOK("ld_patch_flag", obj{"project": "shop", "flag": "new-checkout", "environment": "production", "on": false, "comment": fmt.Sprintf("drill %d: off", r+1)}, s20Flag(false, v)))
			v++
			qa.t("Back on.", asOK("ld_patch_flag", obj{"project": "shop", "flag": "new-checkout", "environment": "production", "on": true, "comment": fmt.Sprintf("drill %d: on", r+1)}, s20Flag(true, v)))
		}
		add(w)
	}

	// Lokalise: one file per locale, then the import processes polled
	// until finished.
	{
		w := asRunOf("lokalise-upload-per-locale", "l10n", false).acc("write", "lokalise_upload")
		for i, l := range []string{"de", "fr", "es", "it"} {
			w.t("Uploading "+l+".", asOK("lokalise_upload", obj{"project_id": "3782014565f1b0c2a7.71", "filename": l + ".json", "lang_iso": l}, obj{"process": obj{"process_id": fmt.Sprintf("c7b1%04x", 0x2a10+i*7), "type": "file-import", "status": "queued"}}))
		}
		for i, st := range []string{"running", "finished", "finished", "finished"} {
			w.t("Checking the import.", asOK("lokalise_get_process", obj{"project_id": "3782014565f1b0c2a7.71", "process_id": fmt.Sprintf("c7b1%04x", 0x2a10+i*7)}, obj{"process": obj{"status": st, "details": obj{"key_count_inserted": 12 + i*3}}}))
		}
		add(w)
	}

	// A debate whose voices bring new evidence each round, and a judge who
	// rules in the third.
	{
		w := asRunOf("debate-new-evidence-each-round", "debate", false)
		pro := []string{
			"Rewriting in Rust removes the memory-safety bugs behind 60% of our incidents.",
			"New data: the 14 incidents since June include 9 use-after-free in the parser alone.",
			"A prototype of the parser in Rust took 3 weeks and passed the 2,100-case corpus.",
		}
		con := []string{
			"A rewrite freezes features for a year; fixing the allocator is cheaper.",
			"The allocator patch from PR 8812 cut crashes by 40% in staging over 10 days.",
			"Porting the remaining 48k lines would still take two quarters by our velocity.",
		}
		judge := []string{
			"Undecided: both sides repeat claims without data on allocator fixes.",
			"Leaning negative: the allocator patch shows measured gains; the parser figure is noted.",
			"Ruling: port the parser only (3 weeks, proven), keep the allocator patch, no full rewrite.",
		}
		for r := 0; r < 3; r++ {
			w.hand("Affirmative's turn.", "affirmative", "Argue for rewriting the ingest service in Rust.", pro[r], nil)
			w.hand("Negative's turn.", "negative", "Argue against rewriting the ingest service in Rust.", con[r], nil)
			w.hand("Judge's turn.", "judge", "Rule on the debate so far.", judge[r], nil)
		}
		add(w)
	}

	// A home agent sets each room's thermostat; three answer alike.
	{
		w := asRunOf("homeassistant-room-by-room", "home", false).acc("write", "call_service")
		for _, room := range []string{"living_room", "kitchen", "office", "bedroom", "kids_room"} {
			w.t("Setting the heating.", asOK("call_service", obj{"domain": "climate", "service": "set_temperature", "service_data": obj{"entity_id": "climate." + room, "temperature": 21}}, arr{}))
		}
		for _, room := range []string{"living_room", "office"} {
			w.t("Checking.", asOK("get_state", obj{"entity_id": "climate." + room}, obj{"entity_id": "climate." + room, "state": "heat", "attributes": obj{"temperature": 21, "current_temperature": 19.5}}))
		}
		add(w)
	}

	// A data-cleaning notebook: cells run one after another, each
	// changing the row count; one cell re-run after an upstream fix.
	{
		w := asRunOf("notebook-cleaning-steps", "notebook", false).acc("write", "execute_cell")
		steps := [][2]string{
			{"df = pd.read_csv('customers.csv')\nprint(len(df))", "11903\n"},
			{"df = df.dropna(subset=['email'])\nprint(len(df))", "11277\n"},
			{"df['email'] = df['email'].str.strip().str.lower()\nprint(df['email'].nunique())", "10482\n"},
			{"df = df.drop_duplicates(subset=['email'])\nprint(len(df))", "10482\n"},
			{"df = pd.read_csv('customers.csv', dtype={'zip': str})\nprint(len(df))", "11903\n"},
			{"df = df.dropna(subset=['email'])\nprint(len(df))", "11277\n"},
			{"df = df[df['country'].isin(['DE', 'AT', 'CH'])]\nprint(len(df))", "6120\n"},
		}
		for i, s := range steps {
			w.t("Running the cell.", asOK("execute_cell", obj{"notebook": "clean_customers.ipynb", "code": s[0]}, s20Cell(3+i, s[1])))
		}
		add(w)
	}

	return runs
}
