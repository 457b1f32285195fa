package loops

import (
	"fmt"
	"strings"
)

func twelfthRuns() []*asRun {
	var runs []*asRun
	add := func(w *asw) { runs = append(runs, w.run) }
	const checkout = "https://shop.example/checkout"

	// --- legit ---

	// A browser agent walks a five-step wizard: the same Next button, a
	// new step on the page each time.
	{
		w := asRunOf("browser-wizard-next-step-by-step", "browser", false).acc("write", "browser_click")
		for i := 1; i <= 5; i++ {
			snap := fmt.Sprintf("- main [ref=e10]:\n  - heading \"Open an account\" [level=1] [ref=e11]\n  - text: Step %d of 5 — %s\n  - textbox \"%s\" [ref=e%d]\n  - button \"Next\" [ref=e%d] [cursor=pointer]", i, []string{"About you", "Address", "Identity", "Preferences", "Review"}[i-1], []string{"Full name", "Street", "ID number", "Language", "Confirm"}[i-1], 20+i*7, 24+i*7)
			if i > 1 {
				w.t("", asOK("browser_type", obj{"element": "field of step " + fmt.Sprint(i), "ref": fmt.Sprintf("e%d", 20+(i-1)*7), "text": []string{"", "Ana Ruiz", "Rua Augusta 12", "P1234567", "Portuguese"}[i-1]}, twPW(fmt.Sprintf("await page.getByRole('textbox').nth(0).fill('x%d');", i), "https://bank.example/open", "Open an account", snap)))
			}
			w.t("", asOK("browser_click", obj{"element": "Next button", "ref": fmt.Sprintf("e%d", 24+i*7)}, twPW("await page.getByRole('button', { name: 'Next' }).click();", "https://bank.example/open", "Open an account", strings.Replace(snap, fmt.Sprintf("Step %d of 5", i), fmt.Sprintf("Step %d of 5", i+1), 1))))
		}
		add(w)
	}

	// A browser agent reads the pages of a search's results, one per
	// navigation, each page new.
	{
		w := asRunOf("browser-results-page-by-page", "browser", false)
		for p := 1; p <= 8; p++ {
			var items []string
			for j := 0; j < 5; j++ {
				items = append(items, fmt.Sprintf("    - link \"Flat %d, %d m², €%d/month\" [ref=e%d]", p*10+j, 40+(p*7+j*3)%60, 900+p*35+j*20, 30+j))
			}
			u := fmt.Sprintf("https://rent.example/lisbon?page=%d", p)
			w.t("", asOK("browser_navigate", obj{"url": u}, twPW(fmt.Sprintf("await page.goto('%s');", u), u, "Flats in Lisbon", fmt.Sprintf("- main [ref=e10]:\n  - heading \"412 flats\" [level=1] [ref=e11]\n  - list [ref=e20]:\n%s\n  - text: Page %d of 83", strings.Join(items, "\n"), p))))
		}
		add(w)
	}

	// A browser agent fixes a form field by field: each submit answers
	// the next field's error, then the order is placed.
	{
		w := asRunOf("browser-form-fixed-field-by-field", "browser", false).acc("write", "browser_click", "browser_type")
		errs := []string{"Enter a phone number with its country code", "Enter a postcode in the form 0000-000", "Please accept the terms to continue"}
		fix := [][3]string{{"Phone", "e22", "+351 555 0100"}, {"Postcode", "e23", "1000-001"}, {"I accept the terms", "e30", ""}}
		w.t("", asOK("browser_click", obj{"element": "Place order button", "ref": "e42"}, twPW("await page.getByRole('button', { name: 'Place order' }).click();", checkout, "Checkout", twCheckout(errs[0]))))
		for i, f := range fix {
			if f[2] != "" {
				w.t("", asOK("browser_type", obj{"element": f[0] + " field", "ref": f[1], "text": f[2]}, twPW(fmt.Sprintf("await page.getByRole('textbox', { name: '%s' }).fill('%s');", f[0], f[2]), checkout, "Checkout", twCheckout(errs[i]))))
			} else {
				w.t("", asOK("browser_click", obj{"element": "terms checkbox", "ref": f[1]}, twPW("await page.getByRole('checkbox', { name: 'I accept the terms and conditions' }).check();", checkout, "Checkout", twCheckout(errs[i]))))
			}
			next := "- main [ref=e10]:\n  - heading \"Thank you, order SH-88123 is placed\" [level=1] [ref=e11]"
			if i+1 < len(errs) {
				next = twCheckout(errs[i+1])
			}
			w.t("", asOK("browser_click", obj{"element": "Place order button", "ref": "e42"}, twPW("await page.getByRole('button', { name: 'Place order' }).click();", checkout, "Checkout", next)))
		}
		add(w)
	}

	// A knowledge-graph agent records a team: each person once, with
	// observations alike in shape but about someone else.
	{
		w := asRunOf("memory-team-recorded", "memory", false).acc("write", "create_entities")
		for i, p := range []string{"Ana Ruiz", "Bo Lindqvist", "Chen Wei", "Dee Okafor", "Eli Haddad", "Fay Moreau", "Gus Tan"} {
			e := arr{obj{"name": p, "entityType": "person", "observations": arr{fmt.Sprintf("Engineer on the %s team", []string{"payments", "checkout", "search", "payments", "platform", "data", "mobile"}[i]), fmt.Sprintf("Joined in %d", 2019+i%5)}}}
			w.t("", asOK("create_entities", obj{"entities": e}, egJSON(e)))
		}
		add(w)
	}

	// A Slack agent asks a question, reads the channel twice with no
	// reply, and the third read has the answer.
	{
		w := asRunOf("slack-reply-arrives", "slack", false).acc("write", "slack_post_message")
		q := twSlackMsg("U07BOT", "@bo can you approve deploy #412 to production?", 1)
		w.t("", asOK("slack_post_message", obj{"channel_id": "C07Q2MB4K1D", "text": "@bo can you approve deploy #412 to production?"}, egJSON(obj{"ok": true, "channel": "C07Q2MB4K1D", "ts": q["ts"], "message": q})))
		w.t("", asOK("slack_get_channel_history", obj{"channel_id": "C07Q2MB4K1D", "limit": 5}, twSlackHistory(q)))
		w.t("Waiting for Bo.", asOK("slack_get_channel_history", obj{"channel_id": "C07Q2MB4K1D", "limit": 5}, twSlackHistory(q)))
		w.t("", asOK("slack_get_channel_history", obj{"channel_id": "C07Q2MB4K1D", "limit": 5}, twSlackHistory(q, twSlackMsg("U02BO", "Approved, go ahead", 95))))
		add(w)
	}

	// A Slack agent reads eight threads one after another.
	{
		w := asRunOf("slack-threads-one-by-one", "slack", false)
		for i := 0; i < 8; i++ {
			ts := fmt.Sprintf("1764800%03d.000%03d", i*41, i*7)
			w.t("", asOK("slack_get_thread_replies", obj{"channel_id": "C07INCIDENT", "thread_ts": ts}, egJSON(obj{"ok": true, "messages": arr{
				obj{"user": "U01ANA", "text": fmt.Sprintf("Incident %d: %s", 300+i, []string{"checkout 500s", "slow search", "login loop", "stale prices", "email delays", "cart empty", "payment declines", "map tiles"}[i]), "ts": ts},
				obj{"user": "U02BO", "text": fmt.Sprintf("Root cause: %s", []string{"pool size", "index missing", "cookie domain", "cache TTL", "SMTP quota", "session store", "3DS timeout", "CDN config"}[i]), "ts": ts[:10] + ".900001"}}})))
		}
		add(w)
	}

	// A fetch agent follows a moved page twice and lands on its content.
	{
		w := asRunOf("fetch-redirect-chain-lands", "fetch", false)
		w.t("", asOK("fetch", obj{"url": "https://docs.example/v1/auth"}, "Contents of https://docs.example/v1/auth:\nThis page has moved. Redirecting to https://docs.example/v2/auth … If you are not redirected, follow the link."))
		w.t("", asOK("fetch", obj{"url": "https://docs.example/v2/auth"}, "Contents of https://docs.example/v2/auth:\nThis page has moved. Redirecting to https://developers.example/auth/overview … If you are not redirected, follow the link."))
		w.t("", asOK("fetch", obj{"url": "https://developers.example/auth/overview"}, "Contents of https://developers.example/auth/overview:\n# Authentication\nRequests carry a bearer token from POST /oauth/token with client credentials; tokens live 3600 seconds."))
		add(w)
	}

	// A fetch agent reads a long handbook by start_index as the server
	// tells it to.
	{
		w := asRunOf("fetch-long-page-by-start-index", "fetch", false)
		u := "https://handbook.example/expenses"
		for s := 0; s < 20000; s += 5000 {
			a := obj{"url": u, "max_length": 5000}
			if s > 0 {
				a["start_index"] = s
			}
			w.t("", asOK("fetch", a, twFetchChunk(u, s, 5000, 20000)))
		}
		add(w)
	}

	// A Sentry agent looks at an issue over wider windows: each answers
	// more events.
	{
		w := asRunOf("sentry-windows-widen-new-counts", "sentry", false)
		for i, p := range []string{"1h", "24h", "7d", "14d"} {
			w.t("", asOK("get_issue_details", obj{"organizationSlug": "acme", "issueId": "CHECKOUT-WEB-3F1", "statsPeriod": p}, twSentryEvents("CHECKOUT-WEB-3F1", []int{4, 61, 388, 512}[i], "2026-12-05T03:58:10Z")))
		}
		add(w)
	}

	// A Kubernetes agent watches a rollout: the new pods under new hash
	// names, each further along.
	{
		w := asRunOf("k8s-rollout-new-pods-ready", "kubernetes", false)
		for i, n := range []string{"checkout-8a1b2c-q2x7d", "checkout-8a1b2c-r9k4m", "checkout-8a1b2c-t5w8z", "checkout-8a1b2c-v3n6p"} {
			st, re := "Running", "—"
			if i == 0 {
				st, re = "Pending", "ContainerCreating"
			}
			w.t("", asOK("kubectl_describe", obj{"resourceType": "pod", "name": n, "namespace": "shop"},
				strings.Replace(twDescribe(n, st, re, 30+i*40, fmt.Sprintf("  Normal   Pulled     %ds    kubelet            Container image pulled", 5+i), fmt.Sprintf("  Normal   Started    %ds    kubelet            Started container checkout (%d of 4 ready)", 3+i, i+1)), "Waiting", []string{"Waiting", "Running", "Running", "Running"}[i], 1)))
		}
		add(w)
	}

	// A planner delegates one chapter after another to a summariser.
	{
		w := asRunOf("planner-chapters-delegated", "delegation", false)
		for i, c := range []string{"Pricing", "Onboarding", "Support", "Security", "Roadmap"} {
			w.hand("", "summariser", fmt.Sprintf("Summarise chapter %d (%s) of the Q4 customer report in five bullets.", i+1, c), fmt.Sprintf("Chapter %d, %s: %d customers cited it; the top ask is %s.", i+1, c, 40-i*6, []string{"annual discounts", "a guided setup", "weekend hours", "SSO for the team plan", "an API for exports"}[i]), nil)
		}
		add(w)
	}

	// A git agent bisects a regression: the same two commands again and
	// again, each answer a new commit and a new verdict.
	{
		w := asRunOf("git-bisect-regression", "git", false)
		left := []int{31, 15, 7, 3, 1, 0}
		pass := []bool{true, false, true, true, false, false}
		w.t("", asOK("run_command", obj{"command": "git bisect start HEAD v1.13.0"}, elRun("Bisecting: 31 revisions left to test after this (roughly 5 steps)\n[4f1c2a9] cart: totals in decimal", "", 0)))
		for i := range left[:5] {
			out, code := "Tests: 212 passed, 212 total", 0
			if !pass[i] {
				out, code = "FAIL src/cart/total.test.ts\n  ● total › rounds half-even\nTests: 1 failed, 211 passed, 212 total", 1
			}
			w.t("", asOK("run_command", obj{"command": "npm test -- --silent"}, elRun(out, "", code)))
			verb := "good"
			if !pass[i] {
				verb = "bad"
			}
			res := fmt.Sprintf("Bisecting: %d revisions left to test after this (roughly %d steps)\n[%07x] %s", left[i+1], 4-i, 0xb2c3d4e+i*7919, []string{"api: currency", "web: price format", "cart: rounding mode", "deps: decimal 2.1", "cart: half-even"}[i])
			if left[i+1] == 0 {
				res = "9e8d7c6b5a4f3e2d1c0b9a8f7e6d5c4b3a2f1e0d is the first bad commit\ncommit 9e8d7c6\n    cart: half-even"
			}
			w.t("", asOK("run_command", obj{"command": "git bisect " + verb}, elRun(res, "", 0)))
		}
		add(w)
	}

	// A filesystem agent walks a big tree directory by directory.
	{
		w := asRunOf("fs-walk-big-tree", "filesystem", false)
		for i := 0; i < 40; i++ {
			d := fmt.Sprintf("/workspace/app/packages/pkg-%02d/src", i)
			var es []string
			for j := 0; j < 2+i%4; j++ {
				es = append(es, fmt.Sprintf("[FILE] %s_%d.ts", []string{"index", "util", "types", "api", "store"}[(i+j)%5], j))
			}
			es = append(es, "[DIR] __tests__")
			w.t("", asOK("list_directory", obj{"path": d}, strings.Join(es, "\n")))
		}
		add(w)
	}

	// A GitHub agent pages through 100 pages of commits.
	{
		w := asRunOf("github-100-pages-of-commits", "github", false)
		for p := 0; p < 100; p++ {
			w.t("", asOK("list_commits", obj{"owner": "acme", "repo": "shop", "sha": "main", "page": p + 1, "perPage": 30}, twCommits(p)))
		}
		add(w)
	}

	// A GitHub agent polls a CI run until it finishes: the steps move on
	// and the run ends green.
	{
		w := asRunOf("github-ci-run-polled-finishes", "github", false)
		for i := 0; i < 6; i++ {
			st, concl := "in_progress", any(nil)
			if i == 5 {
				st, concl = "completed", "success"
			}
			var steps arr
			for j, s := range []string{"Set up job", "Checkout", "Install", "Lint", "Test", "Build"} {
				ss := "queued"
				if j < i {
					ss = "completed"
				} else if j == i {
					ss = "in_progress"
				}
				if i == 5 {
					ss = "completed"
				}
				steps = append(steps, obj{"name": s, "status": ss, "number": j + 1})
			}
			w.t("", asOK("get_workflow_run", obj{"owner": "acme", "repo": "shop", "run_id": 11823094412}, egJSON(obj{"id": 11823094412, "status": st, "conclusion": concl, "jobs": arr{obj{"name": "ci", "steps": steps}}, "updated_at": fmt.Sprintf("2026-12-05T03:%02d:%02dZ", 40+i, i*11%60)})))
		}
		add(w)
	}

	// A fetch agent retries a page that answers 503 with back-off; the
	// third try loads.
	{
		w := asRunOf("fetch-503-backoff-succeeds", "fetch", false).retryable("fetch")
		a := obj{"url": "https://status.example/api/v2/summary.json"}
		for i := 0; i < 2; i++ {
			w.t(fmt.Sprintf("Server busy; retrying in %ds.", 2<<i), asFail("fetch", a, "upstream_unavailable", "Failed to fetch https://status.example/api/v2/summary.json - status code 503"))
		}
		w.t("", asOK("fetch", a, egJSON(obj{"status": obj{"indicator": "minor", "description": "Partially Degraded Service"}, "components": arr{obj{"name": "API", "status": "degraded_performance"}}})))
		add(w)
	}

	// An agent on the AI SDK asks one question of two tools to
	// cross-check: a web search and the database, then the same pair for
	// another city.
	{
		w := asRunOf("crosscheck-two-tools", "research", false)
		for i, c := range []string{"Lagos", "Cairo", "Kinshasa"} {
			pop := []string{"16.5 million", "22.6 million", "17.8 million"}[i]
			w.t("", asOK("brave_web_search", obj{"query": c + " metropolitan population 2026", "count": 5}, fmt.Sprintf("Title: %s population 2026\nDescription: The %s metro area has an estimated %s people in 2026.\nURL: https://population.example/%s", c, c, pop, strings.ToLower(c))))
			w.t("", asOK("read_query", obj{"query": fmt.Sprintf("SELECT city, population, year FROM cities WHERE city = '%s' ORDER BY year DESC LIMIT 1", c)}, egJSON(arr{obj{"city": c, "population": 16500000 + i*3100000, "year": 2025}})))
		}
		add(w)
	}

	// A Puppeteer agent reads a product page's fields one by one, each
	// script another selector with another value.
	{
		w := asRunOf("puppeteer-fields-read-one-by-one", "browser", false)
		for _, f := range [][2]string{{"#title", "Trail Runner 3"}, {"#price", "€129.00"}, {".stock-level", "In stock: 12"}, {"[data-testid=rating]", "4.6 (212 reviews)"}, {"#shipping", "Ships in 2 days"}} {
			w.t("", asOK("puppeteer_evaluate", obj{"script": fmt.Sprintf("document.querySelector('%s')?.innerText", f[0])}, fmt.Sprintf("Execution result:\n%q\n\nConsole output:\n", f[1])))
		}
		add(w)
	}

	// --- loops ---

	// A browser agent clicks one button under other descriptions and
	// refs; the page stays as it was, its alert unread.
	{
		w := asRunOf("browser-click-same-button-respelled", "browser", true).acc("write", "browser_click")
		snap := twCheckout("Please accept the terms to continue")
		for i, c := range [][3]string{
			{"Place order button", "e42", "await page.getByRole('button', { name: 'Place order' }).click();"},
			{"Place order", "e42", "await page.getByRole('button', { name: 'Place order' }).click();"},
			{"the Place order button at the bottom of the form", "e42", "await page.getByRole('button', { name: 'Place order' }).click();"},
			{"order submit button", "e42", "await page.getByRole('button', { name: 'Place order' }).click();"},
			{"Place order (primary button)", "e42", "await page.getByRole('button', { name: 'Place order' }).click();"},
		} {
			if i == 2 {
				w.then()
			}
			w.t("The order didn't go through; clicking again.", asOK("browser_click", obj{"element": c[0], "ref": c[1]}, twPW(c[2], checkout, "Checkout", snap)))
		}
		add(w)
	}

	// A browser agent reloads one page with cache-busting parameters; the
	// same snapshot comes back.
	{
		w := asRunOf("browser-reload-cache-busting", "browser", true)
		snap := "- main [ref=e10]:\n  - heading \"Order SH-88123\" [level=1] [ref=e11]\n  - text: \"Status: Processing\"\n  - text: Estimated dispatch 7 December"
		for i, u := range []string{"https://shop.example/orders/SH-88123", "https://shop.example/orders/SH-88123?refresh=1", "https://shop.example/orders/SH-88123?_=1764903112", "https://shop.example/orders/SH-88123?nocache=true", "https://shop.example/orders/SH-88123/?v=2"} {
			if i == 3 {
				w.then()
			}
			w.t("Still processing; reloading without cache.", asOK("browser_navigate", obj{"url": u}, twPW(fmt.Sprintf("await page.goto('%s');", u), u, "Order SH-88123", snap)))
		}
		add(w)
	}

	// A browser agent re-types the phone in other formats and submits;
	// the same error each time (the field wants its country code).
	{
		w := asRunOf("browser-phone-reformatted-same-error", "browser", true).acc("write", "browser_click", "browser_type")
		snap := twCheckout("Enter a phone number with its country code")
		for i, ph := range []string{"555 0100", "5550100", "555-0100", "(555) 0100"} {
			if i == 2 {
				w.then()
			}
			w.t("Let me fix the phone format.", asOK("browser_type", obj{"element": "Phone field", "ref": "e22", "text": ph}, twPW(fmt.Sprintf("await page.getByRole('textbox', { name: 'Phone' }).fill('%s');", ph), checkout, "Checkout", strings.Replace(snap, "555 0100", ph, 1))))
			w.t("", asOK("browser_click", obj{"element": "Place order button", "ref": "e42"}, twPW("await page.getByRole('button', { name: 'Place order' }).click();", checkout, "Checkout", strings.Replace(snap, "555 0100", ph, 1))))
		}
		add(w)
	}

	// A browser agent waits for a confirmation with a longer timeout each
	// time; it never shows.
	{
		w := asRunOf("browser-wait-stretched", "browser", true)
		for i, s := range []int{5, 10, 20, 30, 60} {
			if i == 3 {
				w.then()
			}
			w.t("Not there yet; waiting longer.", asFail("browser_wait_for", obj{"text": "Order confirmed", "time": s}, "tool_error", fmt.Sprintf("Error: page.waitForSelector: Timeout %d000ms exceeded.\nCall log:\n  - waiting for getByText('Order confirmed') to be visible", s)))
		}
		add(w)
	}

	// A Puppeteer agent reads a price under one selector after another;
	// none matches and the answer is null each time.
	{
		w := asRunOf("puppeteer-selector-respelled-null", "browser", true)
		for i, sel := range []string{"document.querySelector('#price').innerText", "document.querySelector('.price')?.textContent", "document.querySelector('[data-price]')?.innerText", "document.querySelector('span.price-value')?.innerText", "document.querySelector('div#product-price')?.textContent"} {
			if i == 3 {
				w.then()
			}
			res := "Execution result:\nnull\n\nConsole output:\n"
			if i == 0 {
				res = "Script execution failed: TypeError: Cannot read properties of null (reading 'innerText')"
			}
			w.t("The price element must have another selector.", asOK("puppeteer_evaluate", obj{"script": sel}, res))
		}
		add(w)
	}

	// A knowledge-graph agent creates one entity again and again with its
	// observations reworded; the server answers that nothing was created.
	{
		w := asRunOf("memory-entity-recreated-reworded", "memory", true).acc("write", "create_entities")
		for i, o := range []string{"Customer since 2024; renewal due March 2027", "Has been a customer since 2024, renews in March 2027", "Customer (2024–), renewal: 2027-03", "Signed in 2024. Renewal March 2027.", "Customer from 2024 with a March 2027 renewal"} {
			if i == 3 {
				w.then()
			}
			res := "[]"
			if i == 0 {
				res = egJSON(arr{obj{"name": "Globex", "entityType": "organization", "observations": arr{o}}})
			}
			w.t("Saving this to memory.", asOK("create_entities", obj{"entities": arr{obj{"name": "Globex", "entityType": []string{"organization", "organization", "company", "customer", "organization"}[i], "observations": arr{o}}}}, res))
		}
		add(w)
	}

	// A knowledge-graph agent alternates a search and an open over a graph
	// that has no such node.
	{
		w := asRunOf("memory-search-open-ring-empty", "memory", true)
		for i := 0; i < 4; i++ {
			if i == 2 {
				w.then()
			}
			w.t("Let me look it up.", asOK("search_nodes", obj{"query": "Initech"}, egJSON(obj{"entities": arr{}, "relations": arr{}})))
			w.t("", asOK("open_nodes", obj{"names": arr{"Initech"}}, egJSON(obj{"entities": arr{}, "relations": arr{}})))
		}
		add(w)
	}

	// A Slack agent nudges a channel in other words and re-reads it; only
	// its own nudges come back.
	{
		w := asRunOf("slack-nudge-reread-no-reply", "slack", true).acc("write", "slack_post_message")
		var hist []obj
		for i, txt := range []string{"@bo can you approve deploy #412 to production?", "@bo gentle ping on deploy #412 approval", "@bo still waiting on the #412 approval, can you take a look?", "@bo any update on approving #412?", "@bo need your approval for #412 please"} {
			if i == 2 {
				w.then()
			}
			m := twSlackMsg("U07BOT", txt, 1+i*60)
			hist = append(hist, m)
			w.t("No reply yet; I'll nudge.", asOK("slack_post_message", obj{"channel_id": "C07Q2MB4K1D", "text": txt}, egJSON(obj{"ok": true, "channel": "C07Q2MB4K1D", "ts": m["ts"], "message": m})))
			w.t("", asOK("slack_get_channel_history", obj{"channel_id": "C07Q2MB4K1D", "limit": 5}, twSlackHistory(hist...)))
		}
		add(w)
	}

	// A fetch agent follows a ring of redirects round and round.
	{
		w := asRunOf("fetch-redirect-ring", "fetch", true)
		ring := []string{"https://example.org/login", "https://sso.example.org/start", "https://example.org/session"}
		for i := 0; i < 8; i++ {
			if i == 6 {
				w.then()
			}
			u, next := ring[i%3], ring[(i+1)%3]
			w.t("Following the redirect.", asOK("fetch", obj{"url": u}, fmt.Sprintf("Contents of %s:\nRedirecting to %s … If you are not redirected, follow the link.", u, next)))
		}
		add(w)
	}

	// A fetch agent tries page after page of a site whose robots.txt
	// forbids it; the server refuses each the same way.
	{
		w := asRunOf("fetch-robots-refused-other-pages", "fetch", true)
		for i, u := range []string{"https://pricing.example/", "https://pricing.example/pricing", "https://pricing.example/en/pricing", "https://pricing.example/pricing?plan=team", "https://pricing.example/plans"} {
			if i == 3 {
				w.then()
			}
			w.t("Let me try another page on the site.", asFail("fetch", obj{"url": u, "max_length": 5000}, "tool_error",
				fmt.Sprintf("The sites robots.txt (https://pricing.example/robots.txt), specifies that autonomous fetching of this page is not allowed, <useragent>ModelContextProtocol/1.0 (Autonomous; +https://github.com/modelcontextprotocol/servers)</useragent>\n<url>%s</url><robots>\nUser-agent: *\nDisallow: /\n</robots>\nThe assistant must let the user know that it failed to view the page.", u)))
		}
		add(w)
	}

	// A Sentry agent asks for one issue over other windows; every window
	// holds all its events.
	{
		w := asRunOf("sentry-same-issue-other-windows", "sentry", true)
		for i, p := range []string{"24h", "7d", "14d", "30d", "90d"} {
			if i == 3 {
				w.then()
			}
			w.t("Maybe a wider window shows the first occurrence.", asOK("get_issue_details", obj{"organizationSlug": "acme", "issueId": "CHECKOUT-WEB-3F1", "statsPeriod": p}, twSentryEvents("CHECKOUT-WEB-3F1", 512, "2026-12-05T03:58:10Z")))
		}
		add(w)
	}

	// A Kubernetes agent deletes a crash-looping pod and describes its
	// successor, new hash, same image pull error, round after round.
	{
		w := asRunOf("k8s-pod-deleted-described-new-hash", "kubernetes", true).acc("write", "kubectl_delete")
		names := []string{"checkout-7d9f6c-x2k9q", "checkout-7d9f6c-m4p7z", "checkout-7d9f6c-b8r3t", "checkout-7d9f6c-w6n1d", "checkout-7d9f6c-h5j2s"}
		for i := 0; i < 4; i++ {
			if i == 2 {
				w.then()
			}
			w.t("Restarting the pod.", asOK("kubectl_delete", obj{"resourceType": "pod", "name": names[i], "namespace": "shop"}, fmt.Sprintf("pod \"%s\" deleted", names[i])))
			w.t("", asOK("kubectl_describe", obj{"resourceType": "pod", "name": names[i+1], "namespace": "shop"}, twDescribe(names[i+1], "Pending", "ImagePullBackOff", 100+i*47,
				"  Normal   Scheduled  12s   default-scheduler  Successfully assigned shop/"+names[i+1]+" to worker-2",
				"  Warning  Failed     9s    kubelet            Failed to pull image \"registry.example/shop/checkout:1.14.2\": manifest unknown",
				"  Normal   BackOff    4s    kubelet            Back-off pulling image \"registry.example/shop/checkout:1.14.2\"")))
		}
		add(w)
	}

	// A git agent asks for more and more commits of a repository that has
	// eight.
	{
		w := asRunOf("git-log-more-than-there-are", "git", true)
		var l []string
		for i := 0; i < 8; i++ {
			l = append(l, fmt.Sprintf("Commit: %040x\nAuthor: ana <ana@acme.example>\nDate: 2026-12-0%d 10:00:00+00:00\nMessage: %s\n", uint64(i+3)*0x9E3779B97F4A7C15, 1+i%4, []string{"init", "cart", "api", "docs"}[i%4]))
		}
		out := "Commit history:\n" + strings.Join(l, "\n")
		for i, n := range []int{10, 20, 50, 100, 500} {
			if i == 3 {
				w.then()
			}
			w.t("Let me see further back.", asOK("git_log", obj{"repo_path": "/workspace/shop", "max_count": n}, out))
		}
		add(w)
	}

	// A filesystem agent searches for an env file under patterns
	// respelled; there is none.
	{
		w := asRunOf("fs-search-patterns-respelled-none", "filesystem", true)
		for i, p := range []string{".env", "*.env", "**/.env*", "env", ".env.local"} {
			if i == 3 {
				w.then()
			}
			w.t("Let me search for the env file another way.", asOK("search_files", obj{"path": "/workspace/app", "pattern": p}, "No matches found"))
		}
		add(w)
	}

	// A filesystem agent reads a 30-line file under longer and longer
	// heads, then its tail; the whole file each time.
	{
		w := asRunOf("fs-short-file-longer-heads", "filesystem", true)
		var l []string
		for i := 0; i < 30; i++ {
			l = append(l, fmt.Sprintf("export const LIMIT_%02d = %d;", i, 100+i*25))
		}
		file := strings.Join(l, "\n")
		for i, a := range []obj{{"head": 50}, {"head": 100}, {"head": 200}, {"head": 500}, {"tail": 1000}} {
			if i == 3 {
				w.then()
			}
			a["path"] = "/workspace/app/src/limits.ts"
			w.t("The limit for exports must be further down.", asOK("read_text_file", a, file))
		}
		add(w)
	}

	// A SQLite agent respells one query's case and spacing; the same
	// zero comes back under the column name as written.
	{
		w := asRunOf("sqlite-query-case-respelled", "database", true)
		for i, q := range []string{"SELECT count(*) FROM orders WHERE status = 'pending'", "select COUNT(*) from orders where status='pending'", "SELECT COUNT(*)\nFROM orders\nWHERE status = 'pending';", "Select Count(*) From orders Where status = 'pending'", "SELECT count( * ) FROM orders WHERE (status = 'pending')"} {
			if i == 3 {
				w.then()
			}
			col := q[strings.Index(strings.ToLower(q), "count") : strings.Index(q, ")")+1]
			w.t("Zero seems wrong; checking again.", asOK("read_query", obj{"query": q}, egJSON(arr{obj{col: 0}})))
		}
		add(w)
	}

	// A GitHub agent files the same bug again and again under reworded
	// titles; each time a new issue is made.
	{
		w := asRunOf("github-same-issue-filed-reworded", "github", true).acc("write", "create_issue")
		for i, ti := range []string{"Checkout fails when currency is missing", "Checkout crashes without a currency", "TypeError in formatTotal when currency undefined", "Cart total breaks if currency is not set", "Checkout error: missing currency"} {
			if i == 2 {
				w.then()
			}
			n := 812 + i
			w.t("Filing the bug.", asOK("create_issue", obj{"owner": "acme", "repo": "shop", "title": ti, "body": "Sentry CHECKOUT-WEB-3F1: TypeError: Cannot read properties of undefined (reading 'currency') at formatTotal (src/cart/total.ts:41:18).", "labels": arr{"bug"}},
				egJSON(obj{"number": n, "title": ti, "state": "open", "html_url": fmt.Sprintf("https://github.com/acme/shop/issues/%d", n), "created_at": fmt.Sprintf("2026-12-05T04:%02d:00Z", 1+i)})))
		}
		add(w)
	}

	// A planner re-delegates one sub-task to its worker, the
	// instructions paraphrased, the worker's answer the same.
	{
		w := asRunOf("planner-redelegates-paraphrased", "delegation", true)
		for i, task := range []string{"Find Acme Corp's Q3 2026 revenue.", "Look up how much revenue Acme Corp reported for Q3 2026.", "What was Acme Corp's revenue in the third quarter of 2026?", "Search for Acme Corp Q3 2026 revenue figures.", "Get the Q3 2026 revenue number for Acme Corp."} {
			if i == 2 {
				w.then()
			}
			w.hand("The worker didn't find it; asking again.", "researcher", task, "I could not find Acme Corp's Q3 2026 revenue: it has not published its Q3 results yet.", nil)
		}
		add(w)
	}

	return runs
}
