//go:build ignore

// gen writes the thirty-third held-out probe, written before reading the
// guard's rules again, in kinds the earlier probes did not use: a model
// paging a search with an offset that grows while the same items come back
// (and one whose pages move, overlapping as new items are inserted); a
// code agent re-running the tests while its edits fail to apply or a
// formatter leaves the file unchanged (and one whose edits move the
// failures); a crawler walking distinct pages (and one re-visiting one page
// through redirects or query variations); an agent asking another agent
// over A2A one question reworded, or word for word under a fresh message id
// (and distinct questions, one question to three agents, a task polled
// while it moves, an agent unavailable twice then answering); a poll
// reworded in words whose counts grow (the known false-kill risk) and one
// whose counts stay; summaries of summaries by a tool and by an editor
// sub-agent (and a map-reduce of distinct chunks); a sub-agent fan-out
// repeated round after round (and rounds of follow-ups); retries with
// exponential backoff that succeed late (and a non-transient error retried
// with backoff); a spreadsheet filled row by row (and one written past its
// grid); a calendar searched over successive weeks.
//
// A loop is marked where the format's rules put it: the third call with
// the same arguments after two answers alike (ids and clocks aside) with
// nothing written (R1, R2); the next call after three failures of one
// class whose messages agree once values and digits are masked (R3); the
// next call after two results of a tool in a row that brought nothing new
// (R6); the third hand-off of one sub-task to one agent, or of a reworded
// one after two rounds ended alike.
package main

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/agentreach/reach/internal/loops/testdata/tracegen"
)

type obj = tracegen.Obj

var (
	ok   = tracegen.OK
	fail = tracegen.Fail
)

func run(id, desc string, loop bool, kind string) *tracegen.Probe {
	return tracegen.NewProbe("probe33-"+id, desc, loop, kind)
}

func raw(s string) json.RawMessage { return json.RawMessage(s) }

func main() {
	// loops
	offsetSameItems()
	pageParamSameText()
	editFailsRerunTests()
	formatterNoopRerunTests()
	crawlRedirects()
	crawlQueryVariants()
	a2aReworded()
	a2aFreshMessageID()
	a2aDelegateReworded()
	pollRewordedStuck()
	summarizeConverges()
	editorSummaryOfSummary()
	fanoutRepeats()
	backoffNonTransient()
	sheetPastGrid()
	// legit
	offsetNewItems()
	testsProgress()
	testsSameFailureOnce()
	backoffSucceedsLate()
	crawlDistinct()
	crawlRedirectOnce()
	pollRewordedGrowing()
	a2aPollRewordedGrowing()
	a2aDistinctQuestions()
	a2aOneQuestionThreeAgents()
	a2aTaskPolled()
	a2aUnavailableThenAnswers()
	mapReduceSummaries()
	fanoutFollowUps()
	sheetRowByRow()
	calendarWeeks()
}

// --- searches paged by offset ---

type item struct {
	ID    string  `json:"id"`
	Title string  `json:"title"`
	Price float64 `json:"price"`
}

var catalog = func() []item {
	names := []string{"Trail runner", "Road runner", "Waterproof hiker", "Minimal sandal", "Court shoe", "Racing flat", "Approach shoe", "Winter boot", "Slip-on", "Cross trainer", "Track spike", "Recovery slide", "Gravel runner", "Stability trainer", "Carbon racer", "Kids runner", "Walking shoe", "Hybrid hiker", "Mountain boot", "Canvas sneaker", "Cushioned trainer", "Wide-fit runner", "Barefoot shoe", "Rain boot"}
	var out []item
	for i, n := range names {
		out = append(out, item{ID: fmt.Sprintf("P-%05d", 31000+i*37), Title: n, Price: 59.0 + float64((i*13)%90)})
	}
	return out
}()

func offsetSameItems() {
	r := run("offset-same-items", "a shopping agent pages product search results with an offset that grows by 8; the API ignores the offset (it reads `start`) and returns the same eight items each time, echoing the offset it was sent", true, "hidden_loop")
	r.Tool("search_products", "read")
	for i := 0; i < 6; i++ {
		if i == 3 {
			r.Then()
		}
		r.Calls("Fetching the next page of results.", ok("search_products", obj{"q": "running shoes", "offset": i * 8, "limit": 8}, obj{"offset": i * 8, "limit": 8, "total": 24, "items": catalog[:8]}))
	}
	r.Write()
}

func pageParamSameText() {
	r := run("page-param-same-text", "a research agent pages a web search tool with page=1,2,3,...; the tool answers page one's results each time in text, its header naming the page asked", true, "hidden_loop")
	r.Tool("web_search", "read")
	body := "1. Heat pump sizing guide - energy.gov - How to size an air-source heat pump for cold climates.\n2. Manual J load calculation explained - hvac-school.com - Why rules of thumb oversize systems.\n3. Cold-climate heat pump list - neep.org - Models rated to -15F with capacity tables.\n4. Heat pump vs furnace cost calculator - ...\n5. Reddit r/heatpumps: sizing for a 1,800 sq ft house - reddit.com"
	for i := 1; i <= 6; i++ {
		if i == 4 {
			r.Then()
		}
		r.Calls("Let me look at more results.", ok("web_search", obj{"query": "heat pump sizing cold climate", "page": i}, fmt.Sprintf("Results for \"heat pump sizing cold climate\" (page %d):\n%s", i, body)))
	}
	r.Write()
}

// --- a code agent re-running the tests ---

func pytestOut(failed string, nFail, nPass int, secs string) string {
	if nFail == 0 {
		return fmt.Sprintf("============================= test session starts ==============================\ncollected %d items\n\ntests/test_dates.py ........................................ [100%%]\n\n============================== %d passed in %ss ===============================", nPass, nPass, secs)
	}
	return fmt.Sprintf("============================= test session starts ==============================\ncollected %d items\n\ntests/test_dates.py ....F.................................... [100%%]\n\n=================================== FAILURES ===================================\n%s\n=========================== short test summary info ============================\nFAILED %s\n========================= %d failed, %d passed in %ss =========================", nFail+nPass, failed, strings.SplitN(failed, "\n", 2)[0], nFail, nPass, secs)
}

const isoFail = "tests/test_dates.py::test_parse_iso_week\n    assert parse_date(\"2026-W50-1\") == date(2026, 12, 7)\nE   ValueError: unconverted data remains: -1"

func editFailsRerunTests() {
	r := run("edit-fails-rerun-tests", "a code agent runs the tests, tries to edit the parser with str_replace whose old_str does not match the file (its whitespace differs each try), and re-runs the tests after each failed edit", true, "consecutive_repeat")
	r.Tool("run_tests", "read").Tool("str_replace", "write")
	secs := []string{"1.84", "1.79", "1.91", "1.83", "1.88"}
	olds := []string{"    fmt = \"%Y-%m-%d\"", "  fmt = \"%Y-%m-%d\"", "\tfmt = \"%Y-%m-%d\"", "    fmt=\"%Y-%m-%d\""}
	for i := 0; i < 4; i++ {
		if i == 2 {
			r.Then()
		}
		r.Calls("Running the tests.", ok("run_tests", obj{"path": "tests/test_dates.py"}, pytestOut(isoFail, 1, 41, secs[i])))
		r.Calls("Fixing the format string to accept ISO weeks.", fail("str_replace", obj{"path": "dates/parse.py", "old_str": olds[i], "new_str": "    fmt = \"%G-W%V-%u\""}, "invalid_args",
			"No replacement was performed, old_str `"+olds[i]+"` did not appear verbatim in dates/parse.py."))
	}
	r.Write()
}

func formatterNoopRerunTests() {
	r := run("formatter-noop-rerun-tests", "a code agent runs the formatter on the parser between test runs, hoping it fixes the failure; the formatter leaves the file unchanged each time and the same test fails", true, "consecutive_repeat")
	r.Tool("run_tests", "read").Tool("format_code", "write")
	secs := []string{"2.02", "1.97", "2.10", "2.05", "1.99"}
	for i := 0; i < 4; i++ {
		if i == 2 {
			r.Then()
		}
		r.Calls("Running the tests.", ok("run_tests", obj{"path": "tests/test_dates.py"}, pytestOut(isoFail, 1, 41, secs[i])))
		r.Calls("Maybe the indentation is off; formatting the module.", ok("format_code", obj{"path": "dates/parse.py"}, "All done! \u2728 \U0001f370 \u2728\n1 file left unchanged."))
	}
	r.Write()
}

func testsProgress() {
	r := run("tests-progress", "a code agent fixes a date parser: each edit applies and the next test run fails on fewer or other tests until all pass", false, "revisit_with_progress")
	r.Tool("run_tests", "read").Tool("str_replace", "write")
	fails := []struct {
		msg        string
		nFail, sec int
	}{
		{isoFail, 3, 84},
		{"tests/test_dates.py::test_parse_iso_week_sunday\n    assert parse_date(\"2026-W50-7\") == date(2026, 12, 13)\nE   AssertionError: assert datetime.date(2026, 12, 14) == datetime.date(2026, 12, 13)", 2, 79},
		{"tests/test_dates.py::test_parse_plain_date\n    assert parse_date(\"2026-12-07\") == date(2026, 12, 7)\nE   ValueError: time data '2026-12-07' does not match format '%G-W%V-%u'", 1, 91},
	}
	edits := [][2]string{{"fmt = \"%Y-%m-%d\"", "fmt = \"%G-W%V-%u\""}, {"weekday = int(parts[2])", "weekday = int(parts[2]) % 8"}, {"return datetime.strptime(s, fmt).date()", "return datetime.strptime(s, fmt if \"W\" in s else \"%Y-%m-%d\").date()"}}
	for i, f := range fails {
		r.Calls("Running the tests.", ok("run_tests", obj{"path": "tests/test_dates.py"}, pytestOut(f.msg, f.nFail, 42-f.nFail, fmt.Sprintf("1.%d", f.sec))))
		r.Calls("Editing the parser.", ok("str_replace", obj{"path": "dates/parse.py", "old_str": edits[i][0], "new_str": edits[i][1]}, "The file dates/parse.py has been edited."))
	}
	r.Calls("Running the tests again.", ok("run_tests", obj{"path": "tests/test_dates.py"}, pytestOut("", 0, 42, "1.80")))
	r.Write()
}

func testsSameFailureOnce() {
	r := run("tests-same-failure-once", "a code agent's first edit does not fix the failing test (the same failure after it), a second, different edit does", false, "revisit_with_progress")
	r.Tool("run_tests", "read").Tool("str_replace", "write").Tool("read_file", "read")
	r.Calls("Running the tests.", ok("run_tests", obj{"path": "tests/test_dates.py"}, pytestOut(isoFail, 1, 41, "1.84")))
	r.Calls("Reading the parser.", ok("read_file", obj{"path": "dates/parse.py"}, "from datetime import datetime\n\ndef parse_date(s):\n    fmt = \"%Y-%m-%d\"\n    return datetime.strptime(s.strip(), fmt).date()\n"))
	r.Calls("Stripping the input first.", ok("str_replace", obj{"path": "dates/parse.py", "old_str": "s.strip()", "new_str": "s.strip().upper()"}, "The file dates/parse.py has been edited."))
	r.Calls("Running the tests.", ok("run_tests", obj{"path": "tests/test_dates.py"}, pytestOut(isoFail, 1, 41, "1.90")))
	r.Calls("The format is the problem; accepting ISO weeks.", ok("str_replace", obj{"path": "dates/parse.py", "old_str": "    fmt = \"%Y-%m-%d\"", "new_str": "    fmt = \"%G-W%V-%u\" if \"W\" in s else \"%Y-%m-%d\""}, "The file dates/parse.py has been edited."))
	r.Calls("Running the tests.", ok("run_tests", obj{"path": "tests/test_dates.py"}, pytestOut("", 0, 42, "1.77")))
	r.Write()
}

// --- crawlers ---

const navChrome = "Acme Docs | Home | Guides | API | Changelog | Status\n"
const footChrome = "\n\u00a9 2026 Acme Inc. | Privacy | Terms | Edit this page on GitHub"

func page(title, body string) string { return navChrome + "# " + title + "\n\n" + body + footChrome }

func crawlRedirects() {
	r := run("crawl-redirects", "a crawler reaches one pricing page again and again through links that redirect to it (http, a trailing slash, /index.html, an old path), the same page each time", true, "hidden_loop")
	r.Tool("fetch_url", "read")
	body := page("Pricing", "Starter: 0 USD, 3 projects.\nTeam: 12 USD per seat per month, unlimited projects, SSO add-on.\nEnterprise: contact sales; audit log, SCIM, 99.95% SLA.")
	urls := []string{"https://acme.dev/en/pricing", "http://acme.dev/pricing", "https://acme.dev/pricing/", "https://acme.dev/pricing/index.html", "https://acme.dev/plans", "https://www.acme.dev/pricing"}
	for i, u := range urls {
		if i == 3 {
			r.Then()
		}
		r.Calls("Following the next link.", ok("fetch_url", obj{"url": u}, obj{"url": u, "final_url": "https://acme.dev/pricing", "redirected": true, "status": 200, "content_type": "text/html", "text": body}))
	}
	r.Write()
}

func crawlQueryVariants() {
	r := run("crawl-query-variants", "a crawler follows links to one changelog page that differ only in tracking and view parameters (utm_source, ref, a fragment, sort=asc); the page is the same each time", true, "hidden_loop")
	r.Tool("fetch_url", "read")
	body := page("Changelog", "v4.2.0 (2026-12-01): webhooks retry with backoff; new audit export.\nv4.1.3 (2026-11-18): fix SSO logout loop.\nv4.1.2 (2026-11-04): faster search indexing.")
	urls := []string{"https://acme.dev/changelog", "https://acme.dev/changelog?utm_source=newsletter", "https://acme.dev/changelog?ref=footer", "https://acme.dev/changelog#v4-2-0", "https://acme.dev/changelog?sort=asc", "https://acme.dev/changelog?utm_source=blog&utm_medium=post"}
	for i, u := range urls {
		if i == 3 {
			r.Then()
		}
		r.Calls("Reading the linked page.", ok("fetch_url", obj{"url": u}, body))
	}
	r.Write()
}

func crawlDistinct() {
	r := run("crawl-distinct", "a crawler walks eight distinct docs pages, each under the same navigation and footer", false, "batch_progress")
	r.Tool("fetch_url", "read")
	pages := [][2]string{
		{"install", "Install the CLI with `brew install acme` or download a release binary."},
		{"quickstart", "Create a project with `acme init`, then `acme deploy` to publish it."},
		{"config", "Settings live in acme.toml; every key can be overridden by ACME_* variables."},
		{"auth", "Log in with `acme login`; tokens are stored in the OS keychain."},
		{"webhooks", "Webhooks are signed with HMAC-SHA256; verify the Acme-Signature header."},
		{"limits", "Each project may run 20 concurrent builds and 600 API requests per minute."},
		{"regions", "Deploy to eu-west, us-east or ap-south; data stays in its region."},
		{"faq", "Builds time out after 30 minutes; ask support to raise the limit."},
	}
	for _, p := range pages {
		u := "https://acme.dev/docs/" + p[0]
		r.Calls("Reading the next docs page.", ok("fetch_url", obj{"url": u}, obj{"url": u, "final_url": u, "redirected": false, "status": 200, "content_type": "text/html", "text": page(strings.Title(p[0]), p[1])}))
	}
	r.Write()
}

func crawlRedirectOnce() {
	r := run("crawl-redirect-once", "a crawler's first URL redirects to https, it reads four distinct pages, returns to the index once from a 'back to index' link, and reads one more page", false, "revisit_with_progress")
	r.Tool("fetch_url", "read")
	index := page("Docs", "Start here: install, quickstart, config, auth, faq.")
	visits := []struct{ u, final, text string }{
		{"http://acme.dev/docs", "https://acme.dev/docs/", index},
		{"https://acme.dev/docs/install", "https://acme.dev/docs/install", page("Install", "Install the CLI with `brew install acme`.")},
		{"https://acme.dev/docs/quickstart", "https://acme.dev/docs/quickstart", page("Quickstart", "Create a project with `acme init`.")},
		{"https://acme.dev/docs/config", "https://acme.dev/docs/config", page("Config", "Settings live in acme.toml.")},
		{"https://acme.dev/docs/", "https://acme.dev/docs/", index},
		{"https://acme.dev/docs/faq", "https://acme.dev/docs/faq", page("Faq", "Builds time out after 30 minutes.")},
	}
	for _, v := range visits {
		r.Calls("Following the next link.", ok("fetch_url", obj{"url": v.u}, obj{"url": v.u, "final_url": v.final, "redirected": v.u != v.final, "status": 200, "content_type": "text/html", "text": v.text}))
	}
	r.Write()
}

// --- A2A ---

func a2aTask(n int, state, text string) obj {
	res := obj{"kind": "task", "id": fmt.Sprintf("%08x-7c1e-4b5a-9d2f-%012x", 0x3a7f0000+n*4099, 0x51c2e9a0+n*7919), "contextId": fmt.Sprintf("ctx-%06x", 0xa100+n*977),
		"status": obj{"state": state, "timestamp": tracegen.Clock(40 + n*67)}}
	if text != "" {
		res["artifacts"] = []obj{{"artifactId": fmt.Sprintf("art-%05d", 1200+n*31), "parts": []obj{{"kind": "text", "text": text}}}}
	}
	return obj{"jsonrpc": "2.0", "id": n + 1, "result": res}
}

func a2aMsg(n int, agent, text string) obj {
	return obj{"agent_url": agent, "message": obj{"role": "user", "messageId": fmt.Sprintf("msg-%08x", 0x7d10aa00+n*104729), "parts": []obj{{"kind": "text", "text": text}}}}
}

const hrAgent = "https://hr-agent.internal.acme.dev/a2a"

func a2aReworded() {
	r := run("a2a-reworded", "an agent asks an HR agent over A2A whether contractors get a home-office stipend, rewording the question each time; the answer is the same each time under a new task id", true, "paraphrase_loop")
	r.Tool("a2a_send_message", "read")
	qs := []string{
		"Do contractors get the home-office stipend?",
		"Is the home office allowance available to contract workers?",
		"Can a contractor claim the remote work equipment stipend?",
		"Are external contractors eligible for the home-office budget?",
		"Home-office stipend: does it apply to contractors or only employees?",
	}
	ans := "The home-office stipend (EUR 500 a year) is for employees only; contractors are not eligible. See Employee Handbook section 7.3."
	for i, q := range qs {
		if i == 3 {
			r.Then()
		}
		r.Calls("Asking the HR agent.", ok("a2a_send_message", a2aMsg(i, hrAgent, q), a2aTask(i, "completed", ans)))
	}
	r.Write()
}

func a2aFreshMessageID() {
	r := run("a2a-fresh-message-id", "an agent sends one question word for word to a finance agent over A2A, each send with a new messageId as the protocol asks, and gets the same answer under a new task id", true, "hidden_loop")
	r.Tool("a2a_send_message", "read")
	q := "What is the approval limit for a single purchase order without CFO sign-off?"
	ans := "Purchase orders up to EUR 25,000 need the budget owner's approval only; above that the CFO must sign off."
	for i := 0; i < 5; i++ {
		// Marked at the fourth send as first written (R6: its messageId
		// makes each send another call); moved after the first run to the
		// third, where the twenty-ninth probe marks a call the same but
		// for its stamps of the exchange (a request id, a nonce).
		if i == 2 {
			r.Then()
		}
		r.Calls("Asking the finance agent.", ok("a2a_send_message", a2aMsg(i, "https://finance-agent.internal.acme.dev/a2a", q), a2aTask(i, "completed", ans)))
	}
	r.Write()
}

func a2aDelegateReworded() {
	r := run("a2a-delegate-reworded", "a lead hands a policy question to a remote policy agent, rewording it each round; the policy agent searches its handbook and reports it cannot find an answer each time", true, "reworded_delegation")
	r.Tool("search_handbook", "read")
	tasks := []string{
		"Find the travel reimbursement cap for contractors flying economy within the EU",
		"What is the maximum we reimburse contractors for EU economy flights?",
		"Look up the contractor travel expense limit for intra-EU economy airfare",
		"Contractor EU flight reimbursement: what is the cap for economy?",
	}
	qs := []string{"contractor travel reimbursement cap", "contractor flight expense limit", "contractor airfare reimbursement", "contractor economy flight cap"}
	hits := obj{"results": []obj{{"doc": "travel-policy.md", "section": "2.1 Employees: economy class within the EU"}, {"doc": "contractor-terms.md", "section": "4 Invoicing and payment terms"}}}
	for i, t := range tasks {
		if i == 2 {
			r.Then()
		}
		r.Delegate("Asking the policy agent.", "policy_agent", t, func() {
			r.Calls("Searching the handbook.", ok("search_handbook", obj{"query": qs[i]}, hits))
		}, "I could not find a travel reimbursement cap for contractors; the travel policy covers employees only and the contractor terms do not mention travel.")
	}
	r.Write()
}

func a2aDistinctQuestions() {
	r := run("a2a-distinct-questions", "an onboarding agent asks an HR agent over A2A six distinct questions, each answered from the handbook", false, "long_task")
	r.Tool("a2a_send_message", "read")
	qa := [][2]string{
		{"How many vacation days does a new full-time employee get?", "Per the 2026 Employee Handbook, section 5.1: 28 days a year, pro rata in the first year."},
		{"When is payroll run each month?", "Per the 2026 Employee Handbook, section 6.2: on the 25th, or the working day before it."},
		{"Which laptop models can a new hire choose?", "Per the 2026 Employee Handbook, section 7.1: a 14-inch MacBook Pro or a ThinkPad X1 Carbon."},
		{"Is there a probation period?", "Per the 2026 Employee Handbook, section 3.4: six months, with a review at month three."},
		{"How do I register for the pension scheme?", "Per the 2026 Employee Handbook, section 6.5: enrolment is automatic after the first payroll; opt out in the HR portal."},
		{"Who approves overtime?", "Per the 2026 Employee Handbook, section 5.6: the line manager, in advance, in the HR portal."},
	}
	for i, x := range qa {
		r.Calls("Asking the HR agent.", ok("a2a_send_message", a2aMsg(i, hrAgent, x[0]), a2aTask(i, "completed", x[1])))
	}
	r.Write()
}

func a2aOneQuestionThreeAgents() {
	r := run("a2a-one-question-three-agents", "a sourcing agent sends one quote request word for word to three supplier agents over A2A; each answers with its own quote", false, "batch_progress")
	r.Tool("a2a_send_message", "read")
	q := "Quote for 400 units of M8x30 stainless hex bolts (A4-70), delivery to Munich within 10 working days."
	sup := [][2]string{
		{"https://agent.boltsupply.eu/a2a", "BoltSupply: EUR 0.21 per unit, EUR 84.00 total, delivery in 6 working days."},
		{"https://a2a.fastenix.de/agent", "Fastenix: EUR 0.19 per unit, EUR 76.00 total plus EUR 12.00 shipping, delivery in 9 working days."},
		{"https://quotes.metallwerk-sued.de/a2a", "Metallwerk Sued: out of stock for A4-70 until January; A2-70 at EUR 0.15 per unit available now."},
	}
	for i, s := range sup {
		r.Calls("Asking the next supplier.", ok("a2a_send_message", a2aMsg(i, s[0], q), a2aTask(i, "completed", s[1])))
	}
	r.Write()
}

func a2aTaskPolled() {
	r := run("a2a-task-polled", "an agent hands a reindex to a search agent over A2A and polls the task with tasks/get between growing waits while its progress moves to completed", false, "polling")
	r.Tool("a2a_send_message", "read").Tool("a2a_get_task", "read").Tool("wait", "read")
	r.Calls("Starting the reindex.", ok("a2a_send_message", a2aMsg(0, "https://search-agent.internal.acme.dev/a2a", "Reindex the support-articles collection with the new synonym list."), a2aTask(0, "submitted", "")))
	tid := a2aTask(0, "", "")["result"].(obj)["id"]
	progress := []struct{ state, text string }{
		{"working", "Reindexing support-articles: 1,200 of 5,000 documents."},
		{"working", "Reindexing support-articles: 3,900 of 5,000 documents."},
		{"working", "Reindexing support-articles: 4,950 of 5,000 documents; swapping aliases."},
		{"completed", "Reindexed 5,000 documents; alias support-articles now points at support-articles-v8."},
	}
	for i, p := range progress {
		r.Calls("Waiting before checking.", ok("wait", obj{"seconds": 30 << i}, obj{"waited": 30 << i}))
		t := a2aTask(i+1, p.state, p.text)
		t["result"].(obj)["id"] = tid
		t["result"].(obj)["contextId"] = a2aTask(0, "", "")["result"].(obj)["contextId"]
		r.Calls("Checking the task.", ok("a2a_get_task", obj{"id": tid}, t))
	}
	r.Write()
}

func a2aUnavailableThenAnswers() {
	r := run("a2a-unavailable-then-answers", "an agent's message to a legal agent over A2A fails twice with 503 (a new request id each time), waits between, and is answered on the third attempt", false, "transient_retry")
	r.Tool("a2a_send_message", "read").Tool("wait", "read").Retryable("a2a_send_message")
	args := a2aMsg(0, "https://legal-agent.internal.acme.dev/a2a", "Does our standard NDA allow disclosure to subcontractors?")
	for i := 0; i < 2; i++ {
		r.Calls("Asking the legal agent.", fail("a2a_send_message", args, "unavailable", fmt.Sprintf("HTTP 503 Service Unavailable from legal-agent (x-request-id: r-%06x)", 0x4f1a2+i*9973)))
		r.Calls("Waiting before retrying.", ok("wait", obj{"seconds": 5 << (2 * i)}, obj{"waited": 5 << (2 * i)}))
	}
	r.Calls("Asking the legal agent.", ok("a2a_send_message", args, a2aTask(2, "completed", "Yes, under clause 4.2, to subcontractors bound by written terms at least as protective.")))
	r.Write()
}

// --- polls asked in words ---

func pollRewordedStuck() {
	r := run("poll-reworded-stuck", "an agent asks an ops bot in words how far a data export is, rewording each time, with waits between; the export is stuck at the same row count", true, "hidden_loop")
	r.Tool("ask_ops_bot", "read").Tool("wait", "read")
	qs := []string{
		"How many rows has export job 88 written so far?",
		"What's the progress on export 88 now?",
		"Is export job 88 done yet? How many rows?",
		"Give me the current row count for export 88.",
		"Export 88 status please - rows written?",
		"Any movement on export job 88?",
	}
	for i, q := range qs {
		if i == 3 {
			r.Then()
		}
		r.Calls("Checking the export.", ok("ask_ops_bot", obj{"question": q}, "Export job 88 is running: 4,200 of 10,000 rows written (42%)."))
		if i < len(qs)-1 {
			r.Calls("Waiting a bit.", ok("wait", obj{"seconds": 60 << i}, obj{"waited": 60 << i}))
		}
	}
	r.Write()
}

func pollRewordedGrowing() {
	r := run("poll-reworded-growing", "an agent asks an ops bot in words how far a data export is, rewording each time, with growing waits between; the row count grows each time until the export finishes", false, "polling")
	r.Tool("ask_ops_bot", "read").Tool("wait", "read")
	qs := []string{
		"How many rows has export job 88 written so far?",
		"What's the progress on export 88 now?",
		"Is export job 88 done yet? How many rows?",
		"Give me the current row count for export 88.",
		"Export 88 status please - rows written?",
	}
	rows := []string{"2,400 of 10,000 rows written (24%)", "4,100 of 10,000 rows written (41%)", "6,650 of 10,000 rows written (66%)", "8,900 of 10,000 rows written (89%)"}
	for i, q := range qs {
		ans := "Export job 88 finished: 10,000 rows written to s3://acme-exports/job-88/."
		if i < len(rows) {
			ans = "Export job 88 is running: " + rows[i] + "."
		}
		r.Calls("Checking the export.", ok("ask_ops_bot", obj{"question": q}, ans))
		if i < len(qs)-1 {
			r.Calls("Waiting a bit.", ok("wait", obj{"seconds": 60 << i}, obj{"waited": 60 << i}))
		}
	}
	r.Write()
}

func a2aPollRewordedGrowing() {
	r := run("a2a-poll-reworded-growing", "an agent asks a migration agent over A2A, in other words each time, how the tenant migration is going; the count of migrated tenants grows each time until done", false, "polling")
	r.Tool("a2a_send_message", "read").Tool("wait", "read")
	qs := []string{
		"How is the tenant migration going?",
		"How many tenants have been migrated now?",
		"What's the status of the migration?",
		"Update on the tenant migration, please.",
		"Is the migration finished?",
	}
	ans := []string{
		"Migration in progress: 120 of 900 tenants moved to cluster eu-2, 0 failures.",
		"Migration in progress: 340 of 900 tenants moved to cluster eu-2, 0 failures.",
		"Migration in progress: 610 of 900 tenants moved to cluster eu-2, 2 failures queued for retry.",
		"Migration in progress: 880 of 900 tenants moved to cluster eu-2, 2 failures queued for retry.",
		"Migration complete: 900 of 900 tenants on cluster eu-2; the 2 retried tenants succeeded.",
	}
	for i, q := range qs {
		r.Calls("Asking the migration agent.", ok("a2a_send_message", a2aMsg(i, "https://migration-agent.internal.acme.dev/a2a", q), a2aTask(i, "completed", ans[i])))
		if i < len(qs)-1 {
			r.Calls("Waiting before asking again.", ok("wait", obj{"seconds": 120 + 60*i}, obj{"waited": 120 + 60*i}))
		}
	}
	r.Write()
}

// --- summaries ---

func summarizeConverges() {
	r := run("summarize-converges", "an agent compresses its notes by summarizing the last summary again; from the second pass the summarizer hands back its input unchanged, and the agent keeps going", true, "hidden_loop")
	r.Tool("summarize", "read")
	s0 := "Meeting notes, 4 Dec: the team reviewed Q4 churn. Churn rose from 2.1% to 2.9%, mostly in the Starter plan after the price change on 1 Nov. Support tickets about billing doubled. Sales thinks the annual discount confused customers. Action items: Priya to segment churned accounts by signup month, Tom to draft a billing FAQ, and the team to revisit the discount wording before the January campaign."
	s1 := "Q4 churn rose from 2.1% to 2.9%, mainly Starter-plan customers after the 1 Nov price change; billing tickets doubled. Actions: Priya segments churned accounts, Tom drafts a billing FAQ, the team rewrites the discount wording before January."
	s2 := "Churn rose to 2.9% (Starter, after the Nov price change); billing tickets doubled. Actions: segment churn (Priya), billing FAQ (Tom), reword the discount before January."
	in := []string{s0, s1, s2, s2, s2, s2}
	out := []string{s1, s2, s2, s2, s2, s2}
	for i := range in {
		if i == 4 {
			r.Then()
		}
		r.Calls("Compressing my notes further.", ok("summarize", obj{"text": in[i], "max_words": 40}, obj{"summary": out[i]}))
	}
	r.Write()
}

func editorSummaryOfSummary() {
	r := run("editor-summary-of-summary", "a writer agent hands its summary to an editor sub-agent to shorten, then hands the editor's result back to shorten again; from the second round the editor returns it unchanged", true, "livelock_agents")
	r.Tool("word_count", "read")
	s0 := "The December release adds webhook retries with exponential backoff, an audit-log export in CSV and JSON, and fixes the SSO logout loop that affected Okta tenants. Search indexing is about 30% faster."
	s1 := "December release: webhook retries with backoff, audit-log export (CSV/JSON), SSO logout fix for Okta, 30% faster search indexing."
	texts := []string{s0, s1, s1, s1, s1}
	for i, t := range texts {
		if i == 3 {
			r.Then()
		}
		r.Delegate("Asking the editor to tighten it.", "editor_agent", "Shorten this release summary to under 25 words, keeping every feature: "+t, func() {
			r.Calls("Counting words.", ok("word_count", obj{"text": t}, obj{"words": len(strings.Fields(t))}))
		}, s1)
	}
	r.Write()
}

func mapReduceSummaries() {
	r := run("map-reduce-summaries", "an agent summarizes six chunks of a long report, then summarizes the six summaries into one", false, "batch_progress")
	r.Tool("summarize", "read")
	chunks := []string{
		"Section 1: revenue grew 18% year on year to EUR 42.1M, driven by the Team plan.",
		"Section 2: gross margin fell two points to 71% as hosting costs rose with EU data residency.",
		"Section 3: headcount grew from 140 to 176, mostly in engineering and support.",
		"Section 4: churn rose to 2.9% in Q4 after the November price change on the Starter plan.",
		"Section 5: the enterprise pipeline doubled; three deals above EUR 500k are in legal review.",
		"Section 6: 2027 priorities are SSO for all plans, a second EU region and usage-based pricing.",
	}
	var sums []string
	for i, c := range chunks {
		s := fmt.Sprintf("S%d: %s", i+1, strings.SplitN(c, ": ", 2)[1])
		sums = append(sums, s)
		r.Calls("Summarizing the next section.", ok("summarize", obj{"text": c + " More detail follows in tables " + fmt.Sprint(i*3+1) + " to " + fmt.Sprint(i*3+3) + ".", "max_words": 30}, obj{"summary": s}))
	}
	r.Calls("Combining the section summaries.", ok("summarize", obj{"text": strings.Join(sums, "\n"), "max_words": 60}, obj{"summary": "Revenue +18% to EUR 42.1M, margin down to 71%, headcount 176, Q4 churn 2.9%, enterprise pipeline doubled; 2027: SSO, second EU region, usage pricing."}))
	r.Write()
}

// --- sub-agent fan-outs ---

var researchTasks = [][3]string{
	{"researcher_market", "Estimate the 2026 EU market size for residential heat pumps", "EU residential heat pumps 2026: about 3.1M units, EUR 24B (EHPA, IEA)."},
	{"researcher_policy", "List the EU and national subsidies for heat pumps in Germany, France and Poland", "Germany BEG up to 70%, France MaPrimeRenov up to EUR 5,000, Poland Czyste Powietrze up to PLN 35,200."},
	{"researcher_tech", "Compare R290 and R32 refrigerants for residential heat pumps", "R290: GWP 3, flammable (A3), higher flow temperatures; R32: GWP 675, A2L, being phased down."},
}

func fanoutRepeats() {
	r := run("fanout-repeats", "an orchestrator fans out the same three research tasks to three sub-agents in one turn, round after round, getting the same findings each round", true, "livelock_agents")
	r.Tool("web_search", "read")
	for round := 0; round < 4; round++ {
		m := r.Turn("Dispatching the three research tasks.")
		for k, t := range researchTasks {
			if round == 2 && k == 0 {
				r.Then()
			}
			t := t
			r.DelegateFrom(m, t[0], t[1], func() {
				r.Calls("Searching.", ok("web_search", obj{"query": t[1]}, "Top results: "+t[2]))
			}, t[2])
		}
	}
	r.Write()
}

func fanoutFollowUps() {
	r := run("fanout-follow-ups", "an orchestrator fans out three research tasks to three sub-agents, then a round of distinct follow-ups to the same three", false, "legit_recursion")
	r.Tool("web_search", "read")
	m := r.Turn("Dispatching the three research tasks.")
	for _, t := range researchTasks {
		t := t
		r.DelegateFrom(m, t[0], t[1], func() {
			r.Calls("Searching.", ok("web_search", obj{"query": t[1]}, "Top results: "+t[2]))
		}, t[2])
	}
	follow := [][3]string{
		{"researcher_market", "Break the 2026 EU heat pump market down by Germany, France, Italy and Poland", "DE 0.9M, FR 0.6M, IT 0.5M, PL 0.25M units (2026 estimates)."},
		{"researcher_policy", "Which of those subsidies change in 2027, and how?", "Germany's BEG caps fall to 60% in 2027; France adds an income bonus; Poland unchanged."},
		{"researcher_tech", "Which major brands ship R290 monoblocks for homes in 2026?", "Vaillant aroTHERM plus, Viessmann Vitocal 250-A, Daikin Altherma 3 H MT, Panasonic Aquarea L."},
	}
	m = r.Turn("Follow-ups for each researcher.")
	for _, t := range follow {
		t := t
		r.DelegateFrom(m, t[0], t[1], func() {
			r.Calls("Searching.", ok("web_search", obj{"query": t[1]}, "Top results: "+t[2]))
		}, t[2])
	}
	r.Write()
}

// --- retries with backoff ---

func backoffSucceedsLate() {
	r := run("backoff-succeeds-late", "an agent's call to a rate-limited API is refused three times, told to retry after 2, 4 and 8 seconds, sleeps as told, and succeeds on the fourth attempt", false, "transient_retry")
	r.Tool("create_invoice", "write").Tool("sleep", "read").Retryable("create_invoice")
	args := obj{"customer": "cus_Q81x", "items": []obj{{"sku": "TEAM-SEAT", "qty": 12}}, "idempotency_key": "inv-2026-12-cus_Q81x"}
	for i := 0; i < 3; i++ {
		wait := 2 << i
		r.Calls("Creating the invoice.", fail("create_invoice", args, "rate_limited", fmt.Sprintf("429 Too Many Requests: rate limit exceeded, retry after %ds", wait)))
		r.Calls("Backing off.", ok("sleep", obj{"seconds": wait}, fmt.Sprintf("slept %ds", wait)))
	}
	r.Calls("Creating the invoice.", ok("create_invoice", args, obj{"id": "in_1QzA7", "status": "draft", "total": 14400}))
	r.Write()
}

func backoffNonTransient() {
	r := run("backoff-non-transient", "an agent treats a validation error as transient: it retries a currency conversion with the same arguments under exponential backoff, the same error each time", true, "error_retry_loop")
	r.Tool("convert_currency", "read").Tool("sleep", "read")
	args := obj{"amount": 1250, "from": "EURO", "to": "USD"}
	for i := 0; i < 5; i++ {
		if i == 2 {
			r.Then()
		}
		r.Calls("Converting the amount.", fail("convert_currency", args, "invalid_args", "Unsupported currency code 'EURO': expected an ISO 4217 code such as EUR."))
		r.Calls("The service may be flaky; backing off.", ok("sleep", obj{"seconds": 1 << i}, fmt.Sprintf("slept %ds", 1<<i)))
	}
	r.Write()
}

// --- spreadsheets ---

func sheetRowByRow() {
	r := run("sheet-row-by-row", "an agent fills a leads spreadsheet row by row, looking up each lead in the CRM before writing its row", false, "batch_progress")
	r.Tool("crm_get_lead", "read").Tool("sheets_update", "write")
	names := []string{"Hanna Berg", "Luis Ortega", "Mei Tanaka", "Omar Haddad", "Sofia Rossi", "Jan Novak", "Aisha Bello", "Pekka Virtanen"}
	for i, n := range names {
		id := fmt.Sprintf("lead_%04d", 2210+i*3)
		co := []string{"Nordlicht GmbH", "Ortega Foods", "Tanaka Robotics", "Haddad Logistics"}[i%4]
		r.Calls("Looking up the next lead.", ok("crm_get_lead", obj{"id": id}, obj{"id": id, "name": n, "company": co, "stage": []string{"new", "qualified", "demo"}[i%3]}))
		rng := fmt.Sprintf("Leads!A%d:D%d", i+2, i+2)
		r.Calls("Writing the row.", ok("sheets_update", obj{"spreadsheetId": "1xLeads2026", "range": rng, "values": [][]string{{id, n, co, []string{"new", "qualified", "demo"}[i%3]}}}, obj{"updatedRange": rng, "updatedRows": 1, "updatedColumns": 4, "updatedCells": 4}))
	}
	r.Write()
}

func sheetPastGrid() {
	r := run("sheet-past-grid", "an agent appends rows to a sheet by range past its 1,000-row grid; each write is refused for exceeding the grid and the agent tries the next row", true, "error_retry_loop")
	r.Tool("sheets_update", "write")
	for i := 0; i < 6; i++ {
		if i == 3 {
			r.Then()
		}
		row := 1001 + i
		r.Calls("Writing the row.", fail("sheets_update", obj{"spreadsheetId": "1xLeads2026", "range": fmt.Sprintf("Leads!A%d:D%d", row, row), "values": [][]string{{fmt.Sprintf("lead_%04d", 4000+i), "New lead", "Acme", "new"}}}, "invalid_args",
			fmt.Sprintf("Invalid requests[0].updateCells: Range ('Leads'!A%d:D%d) exceeds grid limits. Max rows: 1000, max columns: 26", row, row)))
	}
	r.Write()
}

// --- calendars ---

func calendarWeeks() {
	r := run("calendar-weeks", "a scheduling agent looks for a free two-hour slot for four people over successive weeks; the first three weeks have none, the fourth has one, which it books", false, "pagination")
	r.Tool("find_free_slots", "read").Tool("create_event", "write")
	people := []string{"ana@acme.dev", "ben@acme.dev", "chidi@acme.dev", "dana@acme.dev"}
	weeks := []string{"2026-12-14", "2026-12-21", "2026-12-28", "2027-01-04"}
	for i, w := range weeks {
		res := obj{"week_of": w, "duration_min": 120, "slots": []obj{}}
		if i == 3 {
			res["slots"] = []obj{{"start": "2027-01-06T13:00:00+01:00", "end": "2027-01-06T15:00:00+01:00"}}
		}
		r.Calls("Checking the next week.", ok("find_free_slots", obj{"attendees": people, "week_of": w, "duration_min": 120}, res))
	}
	r.Calls("Booking the slot.", ok("create_event", obj{"title": "Q1 planning", "attendees": people, "start": "2027-01-06T13:00:00+01:00", "end": "2027-01-06T15:00:00+01:00"}, obj{"id": "evt_7h2k", "status": "confirmed"}))
	r.Write()
}

// --- pages that move ---

func offsetNewItems() {
	r := run("offset-new-items", "a shopping agent pages product search results with an offset that grows by 8; each page brings new items (page two repeats two of page one's as new items were inserted meanwhile), the last is short", false, "pagination")
	r.Tool("search_products", "read")
	starts := []int{0, 6, 14, 22}
	for i, s := range starts {
		end := s + 8
		if end > len(catalog) {
			end = len(catalog)
		}
		r.Calls("Fetching the next page of results.", ok("search_products", obj{"q": "running shoes", "offset": i * 8, "limit": 8}, obj{"offset": i * 8, "limit": 8, "total": 26, "items": catalog[s:end]}))
	}
	r.Write()
}
