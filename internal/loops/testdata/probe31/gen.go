//go:build ignore

// gen writes the thirty-first held-out probe, written before reading the
// guard's rules again, in kinds no earlier probe uses, as agents built on
// OpenAI-style tool calls produce them: arguments in natural language (a
// browser driven by instructions, a model asked through a tool, a user
// asked a clarifying question), parallel calls in one turn, and sub-agents
// handed work and handing it back. The kinds: a job polled between waits
// (frozen, or moving), a model re-asked one question reworded (and a long
// chat of distinct questions), edits that revert each other (A->B->A) and
// a text translated back and forth, a crawl whose cursor cycles between
// two pages (and one that moves), two searches alternated across tools,
// writes that each succeed while the read after each shows nothing new (or
// the old value), a ticket bounced between two teams, a browser clicking
// "next" on a page that does not change (and on one that does), a rate
// limit retried past four attempts (and one that clears), a map-reduce over
// distinct items by one tool and by one sub-agent (and the same chapter
// handed again reworded), incremental builds (and a build re-run with only
// its timing moving), a log tailed for a line that never comes (and a
// migration's progress in it), meeting slots tried in rotation, and two
// researchers reading one document once each.
//
// A loop is marked where the probes before it mark one: the third call
// asking the same thing after two answers alike (its substance, fetch
// metadata aside) with nothing written; the fourth asking in other words
// or with other arguments that learns nothing; the next call after three
// failures alike; the third hand-off of one sub-task to one agent (the
// fourth when reworded); the fourth write after three that each left the
// same thing to read.
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
	return tracegen.NewProbe("probe31-"+id, desc, loop, kind)
}

func main() {
	jobPollFrozen()
	jobPollMoves()
	modelReaskReworded()
	modelChatDistinct()
	editRevertsABA()
	translateRoundTrip()
	cursorCyclesTwo()
	cursorMoves()
	searchAlternatesTools()
	writeOkReadEmpty()
	setConfigReadsOld()
	ticketBounced()
	browserNextFrozen()
	browserNextMoves()
	rateLimitForever()
	rateLimitClears()
	mapReduceTool()
	mapReduceSubagent()
	chapterHandedAgain()
	incrementalBuild()
	buildTimingOnly()
	tailLogNeverComes()
	tailLogMigration()
	meetingSlotsRotate()
	meetingSlotFound()
	askUserReworded()
	twoResearchersOneDoc()
	consultExpertReworded()
	kbChatLong()
	deployAskedTwice()
}

// --- a job polled between waits ---

func jobPollFrozen() {
	r := run("job-poll-frozen", "an agent polls a render job's status, calling wait(30s) between polls; the job stays queued at position 4 each time, only checked_at moving", true, "noisy_repeat")
	r.Tool("get_job_status", "read").Tool("wait", "read")
	for i := 0; i < 5; i++ {
		if i == 2 {
			r.Then()
		}
		r.Calls("Checking the render job.", ok("get_job_status", obj{"job_id": "render-88213"}, obj{"job_id": "render-88213", "state": "queued", "queue_position": 4, "checked_at": clock(30 * i)}))
		r.Calls("Still queued; waiting 30 seconds.", ok("wait", obj{"seconds": 30}, obj{"waited": 30}))
	}
	r.Write()
}

func jobPollMoves() {
	r := run("job-poll-moves", "an agent polls a render job between waits; it moves from queued to running with progress, then succeeds", false, "polling")
	r.Tool("get_job_status", "read").Tool("wait", "read")
	states := []obj{{"state": "queued", "queue_position": 2}, {"state": "queued", "queue_position": 1}, {"state": "running", "progress": 0.35}, {"state": "running", "progress": 0.8}, {"state": "succeeded", "output": "s3://renders/88213.mp4"}}
	for i, s := range states {
		s["job_id"], s["checked_at"] = "render-88213", clock(30*i)
		r.Calls("Checking the render job.", ok("get_job_status", obj{"job_id": "render-88213"}, s))
		if i < len(states)-1 {
			r.Calls("Waiting 30 seconds.", ok("wait", obj{"seconds": 30}, obj{"waited": 30}))
		}
	}
	r.Write()
}

// --- a model asked through a tool ---

func modelReaskReworded() {
	r := run("model-reask-reworded", "an agent asks a model, through an ask_llm tool, the same tax question reworded each turn, and gets the same answer each time", true, "paraphrase_loop")
	r.Tool("ask_llm", "read")
	qs := []string{
		"What is the VAT rate on e-books sold to consumers in Germany?",
		"Which VAT percentage applies to ebooks sold to German consumers?",
		"For a German private customer buying an e-book, what VAT rate do I charge?",
		"Germany: VAT on electronic books for B2C sales, what's the rate?",
		"What rate of Umsatzsteuer applies to e-books sold to consumers in Germany?",
	}
	ans := "E-books sold to consumers in Germany are taxed at the reduced VAT rate of 7% since 18 December 2019."
	for i, q := range qs {
		if i == 2 {
			r.Then()
		}
		r.Calls("I'm not sure the answer is right; asking again.", ok("ask_llm", obj{"model": "gpt-4o-mini", "prompt": q}, obj{"answer": ans, "usage": obj{"prompt_tokens": 20 + i*3, "completion_tokens": 31}}))
	}
	r.Write()
}

func modelChatDistinct() {
	r := run("model-chat-distinct", "an agent asks a model, through an ask_llm tool, seven distinct questions about one invoice run, each answered differently", false, "long_task")
	r.Tool("ask_llm", "read")
	qa := [][2]string{
		{"What is the VAT rate on e-books sold to consumers in Germany?", "7%, the reduced rate."},
		{"What is the VAT rate on printed books in Austria?", "10%, the reduced rate."},
		{"Does the reverse charge apply to B2B e-book sales from Ireland to France?", "Yes: the French buyer accounts for the VAT."},
		{"Which invoice fields are mandatory under the EU VAT directive?", "Date, number, VAT ids, names and addresses, quantities, rates, amounts."},
		{"How long must invoices be kept in Germany?", "Ten years (eight since 2025 for some records)."},
		{"Is an invoice number allowed to contain letters?", "Yes, as long as it is unique and sequential."},
		{"What is the OSS threshold for distance sales in the EU?", "EUR 10,000 a year across the EU."},
	}
	for i, x := range qa {
		r.Calls("Next question.", ok("ask_llm", obj{"model": "gpt-4o-mini", "prompt": x[0]}, obj{"answer": x[1], "usage": obj{"prompt_tokens": 18 + i, "completion_tokens": 12 + i}}))
	}
	r.Write()
}

// --- edits that revert each other ---

func editRevertsABA() {
	r := run("edit-reverts-aba", "a code agent toggles one line between two versions (timeout=30 and timeout=60), running the tests after each; the failures alternate between two tests", true, "ping_pong")
	r.Tool("edit_file", "write").Tool("run_tests", "read")
	a := obj{"path": "svc/client.py", "old_str": "timeout=30", "new_str": "timeout=60"}
	bb := obj{"path": "svc/client.py", "new_str": "timeout=30", "old_str": "timeout=60"}
	fa := "FAILED tests/test_client.py::test_slow_upstream - ReadTimeout\n===== 1 failed, 62 passed in 4.10s ====="
	fb := "FAILED tests/test_client.py::test_fail_fast - AssertionError: took 60.0s, limit 45s\n===== 1 failed, 62 passed in 64.22s ====="
	r.Calls("Running the tests.", ok("run_tests", obj{"path": "tests/"}, fa))
	for i := 0; i < 6; i++ {
		e, out := a, fb
		if i%2 == 1 {
			e, out = bb, fa
		}
		if i == 4 {
			r.Then()
		}
		r.Calls("Adjusting the timeout.", ok("edit_file", e, obj{"ok": true}))
		r.Calls("Running the tests.", ok("run_tests", obj{"path": "tests/"}, out))
	}
	r.Write()
}

func translateRoundTrip() {
	r := run("translate-round-trip", "a localisation agent translates a string to German, back to English to check it, to German again, and back again, the same two strings each time", true, "ping_pong")
	r.Tool("translate", "read")
	en, de := "Your order has shipped and will arrive within three business days.", "Ihre Bestellung wurde versandt und trifft innerhalb von drei Werktagen ein."
	for i := 0; i < 6; i++ {
		if i == 4 {
			r.Then()
		}
		if i%2 == 0 {
			r.Calls("Translating to German.", ok("translate", obj{"text": en, "target_lang": "de"}, obj{"translation": de, "detected_source_lang": "en"}))
		} else {
			r.Calls("Back-translating to check.", ok("translate", obj{"text": de, "target_lang": "en"}, obj{"translation": en, "detected_source_lang": "de"}))
		}
	}
	r.Write()
}

// --- a crawl through cursors ---

func ticketsPage(ids []int, next string) obj {
	var ts []obj
	for _, id := range ids {
		ts = append(ts, obj{"id": id, "subject": fmt.Sprintf("Ticket %d", id), "status": "open"})
	}
	return obj{"tickets": ts, "next_page_token": next}
}

func cursorCyclesTwo() {
	r := run("cursor-cycles-two", "an agent exports tickets page by page; page 3's token points back to page 2, whose token points to page 3, and the agent follows them", true, "hidden_loop")
	r.Tool("list_tickets", "read")
	pages := []struct {
		tok  string
		ids  []int
		next string
	}{
		{"", []int{101, 102, 103}, "tok_B"},
		{"tok_B", []int{104, 105, 106}, "tok_C"},
		{"tok_C", []int{107, 108, 109}, "tok_B"},
		{"tok_B", []int{104, 105, 106}, "tok_C"},
		{"tok_C", []int{107, 108, 109}, "tok_B"},
		{"tok_B", []int{104, 105, 106}, "tok_C"},
	}
	for i, p := range pages {
		if i == 5 {
			r.Then()
		}
		args := obj{"status": "open", "page_size": 3}
		if p.tok != "" {
			args["page_token"] = p.tok
		}
		r.Calls("Next page.", ok("list_tickets", args, ticketsPage(p.ids, p.next)))
	}
	r.Write()
}

func cursorMoves() {
	r := run("cursor-moves", "an agent exports tickets page by page through six tokens to the end", false, "pagination")
	r.Tool("list_tickets", "read")
	tok := ""
	for i := 0; i < 6; i++ {
		args := obj{"status": "open", "page_size": 3}
		if tok != "" {
			args["page_token"] = tok
		}
		next := fmt.Sprintf("tok_%c", 'B'+i)
		if i == 5 {
			next = ""
		}
		r.Calls("Next page.", ok("list_tickets", args, ticketsPage([]int{101 + 3*i, 102 + 3*i, 103 + 3*i}, next)))
		tok = next
	}
	r.Write()
}

// --- two searches alternated across tools ---

func searchAlternatesTools() {
	r := run("search-alternates-tools", "a research agent alternates a web search and a knowledge-base search for the same outage, each answering as before", true, "ping_pong")
	r.Tool("web_search", "read").Tool("kb_search", "read")
	web := obj{"results": []obj{{"title": "Status: elevated errors in eu-west-1", "url": "https://status.example/incidents/7781"}}}
	kb := obj{"articles": []obj{{"id": "KB-2210", "title": "Runbook: eu-west-1 failover"}}}
	for i := 0; i < 6; i++ {
		if i == 4 {
			r.Then()
		}
		if i%2 == 0 {
			r.Calls("Searching the web.", ok("web_search", obj{"query": "eu-west-1 elevated error rate December 7"}, web))
		} else {
			r.Calls("Checking the knowledge base.", ok("kb_search", obj{"query": "eu-west-1 failover runbook"}, kb))
		}
	}
	r.Write()
}

// --- writes that succeed, reads that show nothing new ---

func writeOkReadEmpty() {
	r := run("write-ok-read-empty", "an agent adds a contact to a CRM list, each add answered ok with a new id, and lists the segment after each: empty every time (the segment filters on a field the agent never sets)", true, "hidden_loop")
	r.Tool("add_contact", "write").Tool("list_segment", "read")
	for i := 0; i < 5; i++ {
		if i == 3 {
			r.Then()
		}
		r.Calls("Adding the contact.", ok("add_contact", obj{"email": "mara.lind@example.org", "name": "Mara Lind", "list": "newsletter-eu"}, obj{"ok": true, "contact_id": fmt.Sprintf("c_%d", 88120+i*7)}))
		r.Calls("Checking the segment.", ok("list_segment", obj{"segment": "newsletter-eu-active"}, obj{"contacts": []obj{}, "count": 0}))
	}
	r.Write()
}

func setConfigReadsOld() {
	r := run("set-config-reads-old", "an agent sets a feature flag's rollout to 50 percent, answered ok, and reads it back: 10 each time (it writes to staging, reads production)", true, "hidden_loop")
	r.Tool("set_flag", "write").Tool("get_flag", "read")
	for i := 0; i < 5; i++ {
		if i == 3 {
			r.Then()
		}
		r.Calls("Setting the rollout.", ok("set_flag", obj{"flag": "new-checkout", "rollout_percent": 50, "env": "staging"}, obj{"updated": true}))
		r.Calls("Verifying.", ok("get_flag", obj{"flag": "new-checkout"}, obj{"flag": "new-checkout", "env": "production", "rollout_percent": 10}))
	}
	r.Write()
}

// --- a ticket bounced between teams ---

func ticketBounced() {
	r := run("ticket-bounced", "a triage agent hands a double charge to billing, which says it is technical; to support, which says it is billing; and so on", true, "livelock_agents")
	r.Tool("lookup_charge", "read")
	task := "Customer #4471 was charged twice for order 99120; resolve it"
	for i := 0; i < 5; i++ {
		to, v := "billing_agent", "Not a billing issue: the duplicate comes from a payment retry bug. Route to support."
		if i%2 == 1 {
			to, v = "support_agent", "Not a technical issue: refunds are billing's. Route to billing."
		}
		r.Delegate("Routing the ticket.", to, task, func() {
			if i == 2 {
				r.Then()
			}
			r.Calls("Looking up the charge.", ok("lookup_charge", obj{"order": 99120}, obj{"charges": []obj{{"id": "ch_1", "eur": 59.9}, {"id": "ch_2", "eur": 59.9}}}))
		}, v)
	}
	r.Write()
}

// --- a browser driven by instructions ---

const pageResults = "Search results for 'standing desk' — page 2 of 2\n1. FlexiDesk Pro, 399 EUR\n2. UpLift V2, 549 EUR\n[Next] (disabled)"

func browserNextFrozen() {
	r := run("browser-next-frozen", "a browsing agent asks a browser tool, in words, to go to the next page of results; the next button is disabled and the page stays the same", true, "paraphrase_loop")
	r.Tool("browser", "read")
	ins := []string{"Click the 'Next' button below the results", "Press Next to see more results", "Go to the next page of results", "Scroll down and click the next-page arrow", "Navigate to page 3 of the results"}
	for i, s := range ins {
		if i == 2 {
			r.Then()
		}
		r.Calls("There may be more desks.", ok("browser", obj{"instruction": s}, obj{"url": "https://shop.example/search?q=standing+desk&page=2", "snapshot": pageResults}))
	}
	r.Write()
}

func browserNextMoves() {
	r := run("browser-next-moves", "a browsing agent clicks 'Next' with the same instruction on five pages of results, each new", false, "pagination")
	r.Tool("browser", "read")
	for i := 1; i <= 5; i++ {
		snap := fmt.Sprintf("Search results for 'standing desk' — page %d of 6\n1. Desk model %d-A, %d EUR\n2. Desk model %d-B, %d EUR\n[Next]", i, i, 300+i*20, i, 420+i*15)
		r.Calls("Next page.", ok("browser", obj{"instruction": "Click the 'Next' button below the results"}, obj{"url": fmt.Sprintf("https://shop.example/search?q=standing+desk&page=%d", i), "snapshot": snap}))
	}
	r.Write()
}

// --- a rate limit ---

func rateLimitForever() {
	r := run("rate-limit-forever", "an agent retries a geocoding call that keeps answering 429 with the same retry-after, seven times, no success", true, "error_retry_loop")
	r.Tool("geocode", "read").Retryable("geocode")
	for i := 0; i < 7; i++ {
		if i == 4 {
			r.Then()
		}
		r.Calls("Rate limited; retrying.", fail("geocode", obj{"address": "Rua Augusta 24, Lisboa"}, "rate_limited", obj{"status": 429, "error": "quota exceeded for project geo-prod", "retry_after_s": 3600}))
	}
	r.Write()
}

func rateLimitClears() {
	r := run("rate-limit-clears", "an agent geocodes three addresses in one turn; one answers 429, is retried twice after waits and succeeds", false, "transient_retry")
	r.Tool("geocode", "read").Tool("wait", "read").Retryable("geocode")
	r.Calls("Geocoding the three stops.",
		ok("geocode", obj{"address": "Praça do Comércio, Lisboa"}, obj{"lat": 38.7075, "lon": -9.1364}),
		fail("geocode", obj{"address": "Rua Augusta 24, Lisboa"}, "rate_limited", obj{"status": 429, "retry_after_s": 2}),
		ok("geocode", obj{"address": "Largo do Carmo, Lisboa"}, obj{"lat": 38.7119, "lon": -9.1405}))
	r.Calls("Waiting 2 seconds.", ok("wait", obj{"seconds": 2}, obj{"waited": 2}))
	r.Calls("Retrying.", fail("geocode", obj{"address": "Rua Augusta 24, Lisboa"}, "rate_limited", obj{"status": 429, "retry_after_s": 4}))
	r.Calls("Waiting 4 seconds.", ok("wait", obj{"seconds": 4}, obj{"waited": 4}))
	r.Calls("Retrying.", ok("geocode", obj{"address": "Rua Augusta 24, Lisboa"}, obj{"lat": 38.7101, "lon": -9.1374}))
	r.Write()
}

// --- a map-reduce ---

func mapReduceTool() {
	r := run("map-reduce-tool", "an agent summarizes twelve meeting transcripts four at a time with one tool; most summaries say there are no action items", false, "batch_progress")
	r.Tool("summarize_doc", "read").Tool("write_report", "write")
	for batch := 0; batch < 3; batch++ {
		var cs []tracegen.C
		for j := 0; j < 4; j++ {
			n := batch*4 + j + 1
			sum := "Status update only. No action items."
			if n%5 == 0 {
				sum = fmt.Sprintf("Action item: %s to send the Q1 budget by Friday.", []string{"Ana", "Ben", "Chen"}[n%3])
			}
			cs = append(cs, ok("summarize_doc", obj{"doc_id": fmt.Sprintf("mtg-2026-11-%02d", n)}, obj{"doc_id": fmt.Sprintf("mtg-2026-11-%02d", n), "summary": sum}))
		}
		r.Calls(fmt.Sprintf("Summarizing transcripts %d-%d.", batch*4+1, batch*4+4), cs...)
	}
	r.Calls("Writing the report.", ok("write_report", obj{"title": "November action items", "items": []string{"Ana: Q1 budget", "Chen: Q1 budget"}}, obj{"ok": true}))
	r.Write()
}

func mapReduceSubagent() {
	r := run("map-reduce-subagent", "a report agent hands 'Summarize chapter N of the annual report' to one summarizer for eight chapters, then merges", false, "batch_progress")
	r.Tool("read_chapter", "read")
	for n := 1; n <= 8; n++ {
		r.Delegate(fmt.Sprintf("Chapter %d next.", n), "summarizer", fmt.Sprintf("Summarize chapter %d of the 2026 annual report in five bullet points", n), func() {
			r.Calls("Reading.", ok("read_chapter", obj{"report": "annual-2026", "chapter": n}, obj{"chapter": n, "words": 2100 + n*130, "text": fmt.Sprintf("Chapter %d ...", n)}))
		}, fmt.Sprintf("Chapter %d: five bullets.", n))
	}
	r.Write()
}

func chapterHandedAgain() {
	r := run("chapter-handed-again", "a report agent hands chapter 3 to a summarizer, and hands it again reworded each time the summary comes back, four times", true, "reworded_delegation")
	r.Tool("read_chapter", "read")
	tasks := []string{
		"Summarize chapter 3 of the 2026 annual report in five bullet points",
		"Give me five bullet points summarizing the annual report's chapter 3 (2026)",
		"Chapter 3 of the 2026 annual report: a five-bullet summary, please",
		"Please summarize the third chapter of the 2026 annual report as five bullets",
		"Summarise chapter three of annual report 2026, five bullets",
	}
	for i, t := range tasks {
		if i == 2 {
			r.Then()
		}
		r.Delegate("The summary is not what I need; asking again.", "summarizer", t, func() {
			r.Calls("Reading.", ok("read_chapter", obj{"report": "annual-2026", "chapter": 3}, obj{"chapter": 3, "words": 2490, "text": "Chapter 3 ..."}))
		}, "Chapter 3: revenue up 12%; margin flat; two acquisitions; headcount 4,100; outlook cautious.")
	}
	r.Write()
}

// --- builds ---

func incrementalBuild() {
	r := run("incremental-build", "a code agent builds, fixes the first compile error, builds again, five times, each build reporting another error, then success, then one no-op build", false, "revisit_with_progress")
	r.Tool("build", "read").Tool("edit_file", "write")
	errs := []string{
		"src/main.rs:14:5: error[E0425]: cannot find value `cfg` in this scope",
		"src/net.rs:88:17: error[E0308]: mismatched types: expected `u16`, found `u32`",
		"src/net.rs:102:9: error[E0599]: no method named `set_nodelay` found for `TcpListener`",
		"src/db.rs:41:22: error[E0382]: borrow of moved value: `pool`",
	}
	for i, e := range errs {
		r.Calls("Building.", fail("build", obj{"target": "release"}, "invalid_args", fmt.Sprintf("   Compiling server v0.4.1\n%s\nerror: could not compile `server` (1 error) in %d.%02ds", e, 3+i, 17*i%100)))
		r.Calls("Fixing.", ok("edit_file", obj{"path": strings.SplitN(e, ":", 2)[0], "line": 10 + i, "replacement": fmt.Sprintf("fix %d", i)}, obj{"ok": true}))
	}
	r.Calls("Building.", ok("build", obj{"target": "release"}, "   Compiling server v0.4.1\n    Finished release [optimized] target(s) in 41.20s"))
	r.Calls("Building once more to be sure.", ok("build", obj{"target": "release"}, "    Finished release [optimized] target(s) in 0.31s"))
	r.Write()
}

func buildTimingOnly() {
	r := run("build-timing-only", "a code agent re-runs the same failing build without editing anything, the output moving only in its timing", true, "noisy_repeat")
	r.Tool("build", "read")
	for i := 0; i < 5; i++ {
		if i == 2 {
			r.Then()
		}
		r.Calls("Building again.", fail("build", obj{"target": "release"}, "invalid_args", fmt.Sprintf("   Compiling server v0.4.1\nsrc/db.rs:41:22: error[E0382]: borrow of moved value: `pool`\nerror: could not compile `server` (1 error) in %d.%02ds", 2+i%2, 31+i*7)))
	}
	r.Write()
}

// --- a log tailed ---

func tailLogNeverComes() {
	r := run("tail-log-never-comes", "an agent tails a service's log waiting for 'ready'; only heartbeat lines with new timestamps come", true, "noisy_repeat")
	r.Tool("tail_log", "read")
	for i := 0; i < 5; i++ {
		if i == 2 {
			r.Then()
		}
		var lines []string
		for j := 0; j < 3; j++ {
			lines = append(lines, clock(60*i+20*j)+" INFO heartbeat pid=4121 waiting for upstream db:5432")
		}
		r.Calls("Waiting for 'ready'.", ok("tail_log", obj{"service": "ledger-api", "lines": 3}, strings.Join(lines, "\n")))
	}
	r.Write()
}

func tailLogMigration() {
	r := run("tail-log-migration", "an agent tails a migration's log; each tail shows more rows migrated, then done", false, "polling")
	r.Tool("tail_log", "read")
	for i := 0; i < 5; i++ {
		line := fmt.Sprintf("%s INFO migrated %d/50000 rows", clock(60*i), 10000*(i+1))
		if i == 4 {
			line += "\n" + clock(60*i+1) + " INFO migration 0042 done"
		}
		r.Calls("Checking the migration.", ok("tail_log", obj{"service": "ledger-migrate", "lines": 3}, line))
	}
	r.Write()
}

// --- meeting slots ---

func meetingSlotsRotate() {
	r := run("meeting-slots-rotate", "a scheduling agent tries three slots in rotation, each refused as overlapping the same standing meeting", true, "error_retry_loop")
	r.Tool("create_event", "write")
	slots := []string{"2027-01-12T10:00", "2027-01-12T10:30", "2027-01-12T11:00"}
	for i := 0; i < 6; i++ {
		s := slots[i%3]
		if i == 3 {
			r.Then()
		}
		r.Calls("Trying a slot.", fail("create_event", obj{"title": "Design review", "start": s, "minutes": 45, "attendees": []string{"ana@example.org", "ben@example.org"}}, "conflict", obj{"error": fmt.Sprintf("Slot %s overlaps 'Team standup (recurring)' for ben@example.org", s)}))
	}
	r.Write()
}

func meetingSlotFound() {
	r := run("meeting-slot-found", "a scheduling agent tries two slots that overlap other meetings, then a third that is free", false, "search_until_found")
	r.Tool("create_event", "write")
	r.Calls("Trying a slot.", fail("create_event", obj{"title": "Design review", "start": "2027-01-12T10:00", "minutes": 45}, "conflict", obj{"error": "Slot 2027-01-12T10:00 overlaps 'Team standup (recurring)' for ben@example.org"}))
	r.Calls("Trying a slot.", fail("create_event", obj{"title": "Design review", "start": "2027-01-12T14:00", "minutes": 45}, "conflict", obj{"error": "Slot 2027-01-12T14:00 overlaps '1:1 Ana/Chen' for ana@example.org"}))
	r.Calls("Trying a slot.", ok("create_event", obj{"title": "Design review", "start": "2027-01-12T16:00", "minutes": 45}, obj{"event_id": "evt_5521", "status": "confirmed"}))
	r.Write()
}

// --- a user asked again ---

func askUserReworded() {
	r := run("ask-user-reworded", "an assistant asks the user which office a booking is for, reworded each time, and is told the same each time", true, "paraphrase_loop")
	r.Tool("ask_user", "read")
	qs := []string{"Which office should I book the room in?", "Just to confirm, which office location is this for?", "Could you tell me the office for the meeting room?", "Sorry, which of our offices do you mean?", "Which site should the room be at?"}
	for i, q := range qs {
		if i == 2 {
			r.Then()
		}
		r.Calls("Asking the user.", ok("ask_user", obj{"question": q}, obj{"reply": "The Berlin office, as I said."}))
	}
	r.Write()
}

// --- two researchers, one document ---

func twoResearchersOneDoc() {
	r := run("two-researchers-one-doc", "a lead hands two researchers distinct questions; each reads the same paper once, and one other source", false, "deep_delegation")
	r.Tool("fetch_url", "read")
	paper := ok("fetch_url", obj{"url": "https://arxiv.example/abs/2611.04411"}, "Title: Sparse Mixtures at Scale\nAbstract: We train ...")
	r.Delegate("Two questions in parallel.", "researcher_a", "What training compute did the Sparse Mixtures at Scale paper report, and how does it compare to dense baselines?", func() {
		r.Calls("Reading the paper.", paper)
		r.Calls("A baseline.", ok("fetch_url", obj{"url": "https://arxiv.example/abs/2203.15556"}, "Title: Training Compute-Optimal ..."))
	}, "3.1e23 FLOPs, about 40% of the dense baseline.")
	r.Delegate("Second question.", "researcher_b", "Which evaluation benchmarks did the Sparse Mixtures at Scale paper use, and where did it underperform?", func() {
		r.Calls("Reading the paper.", paper)
		r.Calls("The leaderboard.", ok("fetch_url", obj{"url": "https://leaderboard.example/mmlu"}, "MMLU leaderboard ..."))
	}, "MMLU, GSM8K, HumanEval; weaker on GSM8K.")
	r.Write()
}

// --- an expert consulted again ---

func consultExpertReworded() {
	r := run("consult-expert-reworded", "an agent hands a DBA sub-agent the same index question reworded each time, and the DBA answers alike, reading the same plan", true, "reworded_delegation")
	r.Tool("explain_query", "read")
	qs := []string{
		"Which index should the orders-by-customer query use?",
		"What index would speed up the query listing orders for one customer?",
		"Recommend an index for SELECT * FROM orders WHERE customer_id = $1 ORDER BY created_at",
		"For the customer's order list query, which index do you suggest?",
		"Index advice for orders filtered by customer_id and sorted by created_at?",
	}
	for i, q := range qs {
		if i == 2 {
			r.Then()
		}
		r.Delegate("Asking the DBA.", "dba_agent", q, func() {
			r.Calls("Explaining.", ok("explain_query", obj{"sql": "SELECT * FROM orders WHERE customer_id = $1 ORDER BY created_at"}, "Seq Scan on orders (cost=0.00..48211.00 rows=52 width=212)\n  Filter: (customer_id = $1)"))
		}, "Create an index on orders (customer_id, created_at).")
	}
	r.Write()
}

// --- a long chat ---

func kbChatLong() {
	r := run("kb-chat-long", "a support chat of ten distinct user questions, each answered from a knowledge-base lookup and an order lookup in one turn", false, "long_task")
	r.Tool("kb_search", "read").Tool("get_order", "read")
	topics := []string{"return window", "exchange sizes", "gift wrapping", "delivery to Switzerland", "invoice with VAT id", "lost parcel", "cancel before shipping", "student discount", "warranty on zips", "change address"}
	for i, t := range topics {
		r.Calls("Looking that up.",
			ok("kb_search", obj{"query": t}, obj{"articles": []obj{{"id": fmt.Sprintf("KB-%d", 300+i), "title": strings.ToUpper(t[:1]) + t[1:]}}}),
			ok("get_order", obj{"order_id": fmt.Sprintf("A-%d", 7001+i)}, obj{"order_id": fmt.Sprintf("A-%d", 7001+i), "status": []string{"shipped", "delivered", "processing"}[i%3]}))
	}
	r.Write()
}

func deployAskedTwice() {
	r := run("deploy-asked-twice", "a chat where the user asks whether the deploy is done early and again much later, other questions between; it moved", false, "revisit_with_progress")
	r.Tool("deploy_status", "read").Tool("kb_search", "read")
	r.Calls("Checking.", ok("deploy_status", obj{"service": "web", "env": "prod"}, obj{"state": "in_progress", "version": "v2.14.0"}))
	for i, q := range []string{"canary metrics", "rollback procedure", "feature flags in v2.14", "release notes v2.14"} {
		r.Calls("Looking that up.", ok("kb_search", obj{"query": q}, obj{"articles": []obj{{"id": fmt.Sprintf("KB-%d", 900+i)}}}))
	}
	r.Calls("Checking.", ok("deploy_status", obj{"service": "web", "env": "prod"}, obj{"state": "succeeded", "version": "v2.14.0"}))
	r.Write()
}
