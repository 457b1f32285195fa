package loops

import (
	"fmt"
	"strings"
	"testing"
)

// The eighteenth probe: written before reading the detectors' rules in
// detail, with the tool names and answer shapes of real MCP servers, A2A
// agents and an OpenAI-style model proxy, in kinds of work the seventeen
// before it cover little: a remote A2A agent asking for the same input
// while the lead rewords its request, a judge model asked through the
// proxy to grade one unchanged answer under reworded prompts, a git merge
// retried under other strategies into one conflict, a SQL column
// respelled while the hint names the right one, a ticket search under
// synonyms, a reply to a closed ticket reworded, a code search respelled,
// a calendar's free/busy asked in other time zones for one instant, a
// browser waiting longer and longer for a text that never comes, a commit
// reworded while its hook fails alike, a planner and a researcher handing
// back the same sources, a ticket listing whose cursor goes back and
// forth, a model call retried under aliases of one model while the
// context is too long, an event moved that never moves, a file read under
// spellings of one encoding, a git log searched under reworded patterns,
// a ticket assigned under spellings of one missing user, a form submitted
// while the one field it asks for stays empty, a query plan explained
// again in other spellings, and a directory listed under spellings of
// one path. Each loop has a legitimate near-miss: the input supplied, the
// answer revised, conflicts resolved file by file, the hint taken, a
// search refined, the ticket reopened, names tried until one is found,
// other days asked, a wait that ends, a hook fixed file by file, an A2A
// task polled while it progresses, a listing paged, the context trimmed,
// the instance moved, another encoding, the pickaxe, the user looked up,
// the fields filled as asked, an index that changes the plan, and
// directories walked one by one.
//
// A loop is marked as the ninth probe marks them: the fourth call that
// asks again in other words and learns nothing, the third identical poll
// or write, the third round of a pair or ring of calls that learns
// nothing. A tool without readOnlyHint is declared a write, as it is
// through the gateway.
//
// It is written and played with the assistants probe's writer and driver
// (assistruns_test.go).

// s18Known lists the runs whose outcome is not their label's, each with why.
var s18Known = map[string]string{
	// As written, on the guard then (1c5a7567): 10 of 20 loops detected,
	// 1 early, 9 missed; no legit run refused. The early one was a slip of
	// the probe's own: a hand-off reworded marked at the fourth, where the
	// probe's other reworded hand-off is marked, as the benchmark's rule
	// says, at the third. So was an event's end left at its start in one
	// respelling (a write of another event). Both are mended. Since its
	// fixes, 14 of 20; since the nineteenth's, 15. Left:
	// (a judge's grade the same under reworded prompts, the completion's
	// id, creation time and token counts moving with each call, is caught
	// since the nineteenth probe: a model's envelope is the exchange's);
	// a merge failing alike between aborts (each abort a write that
	// succeeds) under other strategy options, which are other arguments;
	"git-merge-strategy-respelled": "missed",
	// a column respelled whose complaint echoes it lower-cased, and the
	// query's first line;
	"sql-column-respelled-hint-ignored": "missed",
	// a search's pattern respelled as a regex, with flags added, each
	// another question;
	"ripgrep-pattern-respelled": "missed",
	// a command answering nothing with exit 0 under reworded patterns (a
	// command is a write, and a command answered alike is no failure);
	"git-log-grep-reworded-empty": "missed",
	// a plan explained again, its timings (actual time=a..b, a span with
	// a space before ms) moving.
	"sql-explain-respelled-timings-move": "missed",
}

func TestEighteenthRuns(t *testing.T) {
	checkAsRuns(t, "eighteenth probe", eighteenthRuns(), 40, s18Known)
}

// s18Chat is an OpenAI-style chat completion through the model proxy.
func s18Chat(id, model, content string, prompt, completion int) string {
	return egJSON(obj{"id": id, "object": "chat.completion", "created": 1796112000 + len(id)*7 + prompt, "model": model,
		"choices": arr{obj{"index": 0, "message": obj{"role": "assistant", "content": content}, "finish_reason": "stop"}},
		"usage":   obj{"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion}})
}

// s18Issues is a Linear MCP server's issue search answer.
func s18Issues(ids ...string) string {
	var is arr
	for _, id := range ids {
		is = append(is, obj{"identifier": id, "title": "Issue " + id, "state": "In Progress", "url": "https://linear.app/shop/issue/" + strings.ToLower(id)})
	}
	if is == nil {
		is = arr{}
	}
	return egJSON(obj{"issues": is, "pageInfo": obj{"hasNextPage": false}})
}

// s18Tickets is a helpdesk's ticket page.
func s18Tickets(from, n int, next string) string {
	var ts arr
	for i := from; i < from+n; i++ {
		ts = append(ts, obj{"id": i, "subject": fmt.Sprintf("Order %d not delivered", 70000+i*13), "status": "open", "priority": []string{"low", "normal", "high"}[i%3]})
	}
	o := obj{"tickets": ts, "count": 1243}
	if next != "" {
		o["next_cursor"] = next
	} else {
		o["next_cursor"] = nil
	}
	return egJSON(o)
}

// s18FreeBusy is a Google Calendar free/busy answer.
func s18FreeBusy(min, max string, busy ...[2]string) string {
	var bs arr
	for _, b := range busy {
		bs = append(bs, obj{"start": b[0], "end": b[1]})
	}
	if bs == nil {
		bs = arr{}
	}
	return egJSON(obj{"kind": "calendar#freeBusy", "timeMin": min, "timeMax": max, "calendars": obj{"ana.lopez@shop.example": obj{"busy": bs}}})
}

// s18Event is a Google Calendar event.
func s18Event(id, start, end string, updated string) string {
	return egJSON(obj{"id": id, "status": "confirmed", "summary": "Weekly ops review", "start": obj{"dateTime": start, "timeZone": "Europe/Paris"}, "end": obj{"dateTime": end, "timeZone": "Europe/Paris"}, "recurringEventId": "7kq3ops", "updated": updated, "etag": "\"" + updated[11:19] + "\""})
}

// s18Task is an A2A task.
func s18Task(id, state, text string) string {
	o := obj{"kind": "task", "id": id, "contextId": "ctx-" + id[:6], "status": obj{"state": state, "message": obj{"role": "agent", "parts": arr{obj{"kind": "text", "text": text}}}}}
	return egJSON(o)
}

func eighteenthRuns() []*asRun {
	var runs []*asRun
	add := func(w *asw) { runs = append(runs, w.run) }

	// ===================== loops =====================

	// A lead hands a billing report to a remote A2A agent, which asks
	// which currency to use; the lead rewords its request without saying.
	{
		w := asRunOf("a2a-input-required-reworded", "a2a", true)
		for i, task := range []string{
			"Prepare the November revenue report for the EU stores.",
			"Please build the EU stores' revenue report for November.",
			"We need November's revenue report, EU stores only.",
			"Revenue report, November, EU stores: please prepare it.",
			"Could you put together the EU revenue report for November?",
		} {
			if i == 2 {
				w.then()
			}
			w.hand("Asking the billing agent.", "billing-agent", task, "input-required: Which currency should the totals be reported in (EUR, or each store's local currency)?", nil)
		}
		add(w)
	}

	// A writing agent asks a judge model, through the proxy, to grade one
	// answer it never changes; only the grading prompt is reworded.
	{
		w := asRunOf("proxy-judge-prompt-reworded", "model", true)
		ans := "The warranty lasts two years and covers defects in materials and workmanship."
		for i, p := range []string{
			"Grade this answer from 1 to 10 for accuracy and sourcing.",
			"On a scale of 1-10, how accurate and well-sourced is this answer?",
			"Rate the answer below (1-10), considering accuracy and citations.",
			"Score 1 to 10: is this answer accurate and does it cite sources?",
			"Give this answer a 1-10 score for accuracy and sourcing.",
		} {
			if i == 3 {
				w.then()
			}
			w.t("Asking the judge again.", asOK("chat_completion", obj{"model": "gpt-4o-mini", "temperature": 0, "messages": arr{obj{"role": "system", "content": p}, obj{"role": "user", "content": ans}}},
				s18Chat(fmt.Sprintf("chatcmpl-9x%04d", 3100+i*17), "gpt-4o-mini-2024-07-18", "Score: 4/10. The answer is plausible but cites no source; add a link to the warranty policy.", 58+i*2, 24)))
		}
		add(w)
	}

	// A git agent merges a branch, aborts on the conflict and merges again
	// under another strategy option; the same hunk conflicts each time.
	{
		w := asRunOf("git-merge-strategy-respelled", "git", true).acc("write", "git_merge", "git_merge_abort")
		for r, opts := range [][]string{{"--no-ff"}, {"--no-ff", "-X", "patience"}, {"-s", "ort", "-X", "diff-algorithm=histogram"}, {"--no-edit", "-X", "ignore-space-change"}} {
			if r == 2 {
				w.then()
			}
			w.t("Merging the feature branch.", asFail("git_merge", obj{"repo_path": "/workspace/shop", "branch": "feature/vouchers", "options": opts}, "tool_error",
				"Auto-merging shop/basket.py\nCONFLICT (content): Merge conflict in shop/basket.py\nAutomatic merge failed; fix conflicts and then commit the result."))
			w.t("Aborting to try another way.", asOK("git_merge_abort", obj{"repo_path": "/workspace/shop"}, ""))
		}
		add(w)
	}

	// A data agent respells a column the table does not have; PostgreSQL
	// hints the right name each time.
	{
		w := asRunOf("sql-column-respelled-hint-ignored", "sql", true)
		for i, c := range []struct{ q, col string }{
			{"SELECT id, createdAt FROM orders ORDER BY createdAt DESC LIMIT 20", "createdat"},
			{"SELECT id, \"createdAt\" FROM orders ORDER BY \"createdAt\" DESC LIMIT 20", "createdAt"},
			{"SELECT id, CreatedAt FROM orders ORDER BY CreatedAt DESC LIMIT 20", "createdat"},
			{"SELECT o.id, o.createdat FROM orders o ORDER BY o.createdat DESC LIMIT 20", "o.createdat"},
			{"SELECT id, \"CreatedAt\" FROM orders ORDER BY 2 DESC LIMIT 20", "CreatedAt"},
		} {
			if i == 3 {
				w.then()
			}
			w.t("Fixing the column name.", asFail("query", obj{"sql": c.q}, "tool_error",
				fmt.Sprintf("ERROR:  column %q does not exist\nLINE 1: SELECT id, %s FROM orders\nHINT:  Perhaps you meant to reference the column \"orders.created_at\".", c.col, c.col)))
		}
		add(w)
	}

	// A support agent searches Linear under synonyms of one bug; the same
	// three issues come back.
	{
		w := asRunOf("linear-search-synonyms", "ticketing", true)
		for i, q := range []string{"login broken", "sign-in broken", "cannot log in", "signin failure", "login not working"} {
			if i == 3 {
				w.then()
			}
			w.t("Looking for the right issue.", asOK("linear_search_issues", obj{"query": q, "teamId": "SHOP", "limit": 10}, s18Issues("SHOP-1182", "SHOP-1190", "SHOP-1207")))
		}
		add(w)
	}

	// A support agent replies to a closed Freshdesk ticket, rewording the
	// reply; the desk refuses it alike.
	{
		w := asRunOf("freshdesk-reply-closed-reworded", "ticketing", true).acc("write", "reply_ticket")
		for i, body := range []string{
			"Hi Marta, your refund was issued today; it should reach your card within 5 business days.",
			"Hello Marta, we issued your refund today. Expect it on your card within five business days.",
			"Hi Marta! The refund went out today and should show on your card in 5 business days.",
			"Dear Marta, your refund has been processed today; please allow 5 business days.",
		} {
			if i == 2 {
				w.then()
			}
			w.t("Sending the reply.", asFail("reply_ticket", obj{"ticket_id": 48210, "body": body}, "tool_error",
				"400 Bad Request: {\"description\":\"Validation failed\",\"errors\":[{\"field\":\"ticket_id\",\"message\":\"Ticket is closed. Reopen it to add a reply.\",\"code\":\"invalid_value\"}]}"))
		}
		add(w)
	}

	// A code agent searches for a hook under respellings of one pattern;
	// ripgrep finds nothing each time.
	{
		w := asRunOf("ripgrep-pattern-respelled", "files", true)
		for i, a := range []obj{
			{"pattern": "useCheckoutForm", "path": "src"},
			{"pattern": "useCheckoutForm\\(", "path": "src/"},
			{"pattern": "useCheckoutForm", "path": "./src", "fixed_strings": true},
			{"pattern": "\\buseCheckoutForm\\b", "path": "src", "glob": "*.{ts,tsx}"},
			{"pattern": "usecheckoutform", "path": "src", "case_insensitive": true},
		} {
			if i == 3 {
				w.then()
			}
			w.t("Not found; searching again.", asOK("search_code", a, "No matches found."))
		}
		add(w)
	}

	// An assistant asks free/busy for one hour written in other time
	// zones; the answer is the same busy block each time.
	{
		w := asRunOf("freebusy-same-instant-other-zones", "calendar", true)
		for i, z := range [][2]string{
			{"2026-12-10T09:00:00Z", "2026-12-10T10:00:00Z"},
			{"2026-12-10T10:00:00+01:00", "2026-12-10T11:00:00+01:00"},
			{"2026-12-10T04:00:00-05:00", "2026-12-10T05:00:00-05:00"},
			{"2026-12-10T09:00:00+00:00", "2026-12-10T10:00:00+00:00"},
			{"2026-12-10T17:00:00+08:00", "2026-12-10T18:00:00+08:00"},
		} {
			if i == 3 {
				w.then()
			}
			w.t("Checking whether Ana is free.", asOK("calendar_freebusy", obj{"timeMin": z[0], "timeMax": z[1], "items": arr{obj{"id": "ana.lopez@shop.example"}}},
				s18FreeBusy(z[0], z[1], [2]string{"2026-12-10T08:30:00Z", "2026-12-10T10:30:00Z"})))
		}
		add(w)
	}

	// A browser agent waits for a confirmation with a longer timeout each
	// time; the page shows a payment error, never the confirmation.
	{
		w := asRunOf("browser-wait-longer-never-comes", "browser", true)
		for i, s := range []int{5, 10, 20, 30, 60} {
			if i == 3 {
				w.then()
			}
			w.t("Waiting for the confirmation.", asFail("browser_wait_for", obj{"text": "Order confirmed", "time": s}, "tool_error",
				fmt.Sprintf("TimeoutError: page.waitForSelector: Timeout %d000ms exceeded.\nCall log:\n  - waiting for get_by_text(\"Order confirmed\") to be visible", s)))
		}
		add(w)
	}

	// A code agent commits with a reworded message; the pre-commit hook
	// fails on the same lint error each time.
	{
		w := asRunOf("git-commit-reworded-hook-fails", "git", true).acc("write", "git_commit")
		for i, m := range []string{"Fix voucher rounding", "fix: voucher rounding", "Round vouchers half-even", "fix(basket): round vouchers half even"} {
			if i == 2 {
				w.then()
			}
			w.t("Committing.", asFail("git_commit", obj{"repo_path": "/workspace/shop", "message": m}, "tool_error",
				"ruff....................................................................Failed\n- hook id: ruff\n- exit code: 1\n\nshop/basket.py:41:5: F841 Local variable `rounded` is assigned to but never used\nFound 1 error."))
		}
		add(w)
	}

	// A planner asks a researcher about one question in other words; the
	// researcher hands back the same three sources each time.
	{
		w := asRunOf("planner-researcher-same-sources", "a2a", true)
		for r, task := range []string{
			"Find evidence on whether free shipping thresholds raise average order value.",
			"Look for studies showing free-shipping thresholds increase AOV.",
			"Does a free shipping threshold lift average order value? Find sources.",
			"Research the effect of free shipping minimums on basket size.",
		} {
			if r == 2 {
				w.then()
			}
			w.hand("Asking the researcher.", "researcher", task,
				"Sources: (1) Baymard Institute 2024 checkout study; (2) Lewis et al. 2006, 'Shipping fees and order size', Marketing Science; (3) Shopify blog post 'Free shipping thresholds', 2023. None measures AOV directly for our category.", nil)
		}
		add(w)
	}

	// A support agent lists tickets, going to the next page and back with
	// the previous cursor each time; the two pages alternate.
	{
		w := asRunOf("ticket-cursor-back-and-forth", "ticketing", true)
		p1 := s18Tickets(1, 25, "Y3Vyc29yOjI1")
		p2 := s18Tickets(26, 25, "Y3Vyc29yOjUw")
		for r := 0; r < 4; r++ {
			if r == 2 {
				w.then()
			}
			w.t("Listing open tickets.", asOK("list_tickets", obj{"status": "open", "limit": 25}, p1))
			w.t("Next page.", asOK("list_tickets", obj{"status": "open", "limit": 25, "cursor": "Y3Vyc29yOjI1"}, p2))
		}
		add(w)
	}

	// An agent retries a model call through the proxy under aliases of one
	// model; the messages are too long for any of them.
	{
		w := asRunOf("proxy-model-aliases-context-too-long", "model", true)
		msgs := arr{obj{"role": "system", "content": "You summarise support transcripts."}, obj{"role": "user", "content": "Summarise the attached 412 transcripts (see file transcripts-2026-11.jsonl)."}}
		for i, m := range []string{"gpt-4o", "gpt-4o-2024-08-06", "chatgpt-4o-latest", "gpt-4o-2024-11-20", "openai/gpt-4o"} {
			if i == 3 {
				w.then()
			}
			w.t("The model refused; trying another.", asFail("chat_completion", obj{"model": m, "messages": msgs, "max_tokens": 800}, "invalid_request_error",
				"400 context_length_exceeded: This model's maximum context length is 128000 tokens. However, your messages resulted in 163211 tokens. Please reduce the length of the messages."))
		}
		add(w)
	}

	// An assistant moves a recurring meeting's instance; the update answers
	// 200 but the event read back stays at its old time.
	{
		w := asRunOf("calendar-move-does-not-stick", "calendar", true).acc("write", "update_event")
		for r, se := range [][2]string{{"2026-12-11T14:00:00+01:00", "2026-12-11T15:00:00+01:00"}, {"2026-12-11T14:00:00+01:00", "2026-12-11T15:00:00+01:00"}, {"2026-12-11T13:00:00Z", "2026-12-11T14:00:00Z"}, {"2026-12-11T14:00+01:00", "2026-12-11T15:00+01:00"}} {
			if r == 2 {
				w.then()
			}
			w.t("Moving the review to 14:00.", asOK("update_event", obj{"calendarId": "primary", "eventId": "7kq3ops", "start": obj{"dateTime": se[0]}, "end": obj{"dateTime": se[1]}}, s18Event("7kq3ops", "2026-12-11T14:00:00+01:00", "2026-12-11T15:00:00+01:00", fmt.Sprintf("2026-12-06T05:%02d:11.000Z", 10+r))))
			w.t("Checking it moved.", asOK("get_event", obj{"calendarId": "primary", "eventId": "7kq3ops_20261211T100000Z"}, s18Event("7kq3ops_20261211T100000Z", "2026-12-11T11:00:00+01:00", "2026-12-11T12:00:00+01:00", "2026-11-02T09:00:00.000Z")))
		}
		add(w)
	}

	// A file agent reads a file under spellings of one encoding; it is not
	// UTF-8, so each read fails alike.
	{
		w := asRunOf("read-file-encoding-respelled", "files", true)
		for i, e := range []string{"utf-8", "utf8", "UTF-8", "utf_8", "UTF8"} {
			if i == 3 {
				w.then()
			}
			w.t("Reading the export.", asFail("read_text_file", obj{"path": "/data/exports/clients.csv", "encoding": e}, "tool_error",
				"'utf-8' codec can't decode byte 0xe9 in position 1412: invalid continuation byte"))
		}
		add(w)
	}

	// A git agent searches the log under reworded patterns; nothing
	// matches, git answers nothing with exit 0.
	{
		w := asRunOf("git-log-grep-reworded-empty", "git", true).acc("write", "run_command")
		for i, c := range []string{
			"git log --oneline --grep='voucher rounding'",
			"git log --oneline --grep='rounding of vouchers'",
			"git log --oneline -i --grep='Voucher Rounding'",
			"git log --oneline --grep=voucher --grep=rounding --all-match",
			"git log --oneline --grep='round.*voucher'",
		} {
			if i == 3 {
				w.then()
			}
			w.t("Nothing; another pattern.", asOK("run_command", obj{"command": c, "cwd": "/workspace/shop"}, s17Shell(0, "", "")))
		}
		add(w)
	}

	// A support agent assigns a ticket under spellings of one user who is
	// not in the desk; each answer names what was asked.
	{
		w := asRunOf("ticket-assign-user-respelled", "ticketing", true).acc("write", "assign_ticket")
		for i, u := range []string{"mkhan", "@mkhan", "MKhan", "m.khan", "mkhan "} {
			if i == 3 {
				w.then()
			}
			w.t("Assigning the ticket.", asFail("assign_ticket", obj{"ticket_id": 48302, "assignee": u}, "tool_error",
				fmt.Sprintf("422 Unprocessable Entity: no agent matches assignee %q", strings.TrimSpace(u))))
		}
		add(w)
	}

	// A browser agent fills the name and e-mail again and submits; the
	// form asks for a phone number each time, which it never fills.
	{
		w := asRunOf("browser-form-phone-never-filled", "browser", true).acc("write", "browser_type", "browser_click")
		for r := 0; r < 4; r++ {
			if r == 2 {
				w.then()
			}
			b := 40 + r*12
			w.t("Filling the name.", asOK("browser_type", obj{"element": "Full name textbox", "ref": fmt.Sprintf("e%d", b), "text": "Ana Lopez"}, "- Ran Playwright code:\n```js\nawait page.getByRole('textbox', { name: 'Full name' }).fill('Ana Lopez');\n```"))
			w.t("Submitting.", asOK("browser_click", obj{"element": "Place order button", "ref": fmt.Sprintf("e%d", b+5)}, s17Snap("https://shop.example/checkout", "Checkout",
				fmt.Sprintf("- textbox \"Full name\" [ref=e%d]: Ana Lopez", b+12), fmt.Sprintf("- textbox \"Phone\" [ref=e%d]", b+13), "- alert: Phone number is required.", fmt.Sprintf("- button \"Place order\" [ref=e%d]", b+17))))
		}
		add(w)
	}

	// A data agent explains one query under cosmetic respellings; the plan
	// is the same, only its timings move.
	{
		w := asRunOf("sql-explain-respelled-timings-move", "sql", true)
		for i, q := range []string{
			"EXPLAIN ANALYZE SELECT * FROM orders WHERE customer_id = 4412",
			"explain analyze select * from orders where customer_id = 4412",
			"EXPLAIN (ANALYZE) SELECT * FROM orders WHERE customer_id=4412",
			"EXPLAIN ANALYZE SELECT o.* FROM orders o WHERE o.customer_id = 4412",
			"EXPLAIN ANALYZE\nSELECT *\nFROM orders\nWHERE customer_id = 4412;",
		} {
			if i == 3 {
				w.then()
			}
			w.t("Checking the plan again.", asOK("query", obj{"sql": q}, fmt.Sprintf("Seq Scan on orders  (cost=0.00..48211.00 rows=31 width=96) (actual time=0.%03d..%d.%03d rows=29 loops=1)\n  Filter: (customer_id = 4412)\n  Rows Removed by Filter: 1999971\nPlanning Time: 0.%03d ms\nExecution Time: %d.%03d ms", 41+i*7, 612+i*23, 118+i*91, 80+i*5, 612+i*24, 301+i*77)))
		}
		add(w)
	}

	// A file agent lists one directory under spellings of its path; it is
	// empty each time.
	{
		w := asRunOf("list-dir-path-respelled-empty", "files", true)
		for i, p := range []string{"/data/inbox", "/data/inbox/", "/data//inbox", "/data/./inbox", "/data/inbox/."} {
			if i == 3 {
				w.then()
			}
			w.t("No files yet? Listing again.", asOK("list_directory", obj{"path": p}, "[]"))
		}
		add(w)
	}

	// ===================== legit =====================

	// The remote agent asks for the currency, then the date basis; the lead
	// supplies each, and the report comes back.
	{
		w := asRunOf("a2a-input-supplied", "a2a", false)
		w.hand("Asking the billing agent.", "billing-agent", "Prepare the November revenue report for the EU stores.", "input-required: Which currency should the totals be reported in (EUR, or each store's local currency)?", nil)
		w.hand("Answering.", "billing-agent", "Prepare the November revenue report for the EU stores, totals in EUR.", "input-required: Should revenue be booked by order date or by payment date?", nil)
		w.hand("Answering.", "billing-agent", "Prepare the November revenue report for the EU stores, totals in EUR, booked by payment date.", "completed: report-2026-11-eu.xlsx (EUR, payment date): total 4,812,300 EUR across 14 stores.", nil)
		w.hand("Asking for the breakdown.", "billing-agent", "Break report-2026-11-eu.xlsx down by country.", "completed: FR 1,902,100; DE 1,488,000; ES 820,200; IT 602,000 EUR.", nil)
		add(w)
	}

	// The judge grades an answer the agent revises each time.
	{
		w := asRunOf("proxy-judge-answer-revised", "model", false)
		for i, c := range []struct{ ans, grade string }{
			{"The warranty lasts two years.", "Score: 3/10. Too short; say what it covers and cite the policy."},
			{"The warranty lasts two years and covers defects in materials and workmanship.", "Score: 5/10. Plausible but cites no source."},
			{"The warranty lasts two years and covers defects in materials and workmanship (see shop.example/warranty).", "Score: 7/10. Cited; mention the exclusions."},
			{"The warranty lasts two years and covers defects in materials and workmanship, not misuse or accidents (see shop.example/warranty).", "Score: 9/10. Accurate, complete and cited."},
		} {
			w.t("Asking the judge.", asOK("chat_completion", obj{"model": "gpt-4o-mini", "temperature": 0, "messages": arr{obj{"role": "system", "content": "Grade this answer from 1 to 10 for accuracy and sourcing."}, obj{"role": "user", "content": c.ans}}},
				s18Chat(fmt.Sprintf("chatcmpl-7a%04d", 4100+i*31), "gpt-4o-mini-2024-07-18", c.grade, 40+i*9, 22)))
		}
		add(w)
	}

	// A merge conflicts in three files; each is resolved and staged, the
	// status showing one fewer conflict each time.
	{
		w := asRunOf("git-conflicts-resolved-file-by-file", "git", false).acc("write", "git_merge", "edit_file", "git_add", "git_commit")
		w.t("Merging.", asFail("git_merge", obj{"repo_path": "/workspace/shop", "branch": "feature/vouchers", "options": []string{"--no-ff"}}, "tool_error",
			"CONFLICT (content): Merge conflict in shop/basket.py\nCONFLICT (content): Merge conflict in shop/vouchers.py\nCONFLICT (content): Merge conflict in tests/test_basket.py\nAutomatic merge failed; fix conflicts and then commit the result."))
		files := []string{"shop/basket.py", "shop/vouchers.py", "tests/test_basket.py"}
		for i, f := range files {
			w.t("Resolving "+f+".", asOK("edit_file", obj{"path": f, "old_string": "<<<<<<< HEAD", "new_string": ""}, "The file "+f+" has been updated."))
			w.t("Staging it.", asOK("git_add", obj{"repo_path": "/workspace/shop", "files": []string{f}}, ""))
			var left []string
			for _, g := range files[i+1:] {
				left = append(left, "\tboth modified:   "+g)
			}
			st := "On branch main\nAll conflicts fixed but you are still merging."
			if len(left) > 0 {
				st = "On branch main\nYou have unmerged paths.\n\nUnmerged paths:\n" + strings.Join(left, "\n")
			}
			w.t("Status.", asOK("git_status", obj{"repo_path": "/workspace/shop"}, st))
		}
		w.t("Committing the merge.", asOK("git_commit", obj{"repo_path": "/workspace/shop", "message": "Merge feature/vouchers"}, "[main 5e1a9c2] Merge feature/vouchers"))
		add(w)
	}

	// The hint is taken: the column is created_at.
	{
		w := asRunOf("sql-column-hint-taken", "sql", false)
		w.t("Querying.", asFail("query", obj{"sql": "SELECT id, createdAt FROM orders ORDER BY createdAt DESC LIMIT 20"}, "tool_error",
			"ERROR:  column \"createdat\" does not exist\nLINE 1: SELECT id, createdAt FROM orders\nHINT:  Perhaps you meant to reference the column \"orders.created_at\"."))
		w.t("Using created_at.", asOK("query", obj{"sql": "SELECT id, created_at FROM orders ORDER BY created_at DESC LIMIT 20"}, s17Rows(obj{"id": 90412, "status": "paid", "shipped_at": nil})))
		w.t("And the one before.", asOK("query", obj{"sql": "SELECT id, created_at FROM orders WHERE id < 90412 ORDER BY created_at DESC LIMIT 20"}, s17Rows(obj{"id": 90399, "status": "shipped", "shipped_at": "2026-12-05"})))
		add(w)
	}

	// A search refined with what each answer showed.
	{
		w := asRunOf("linear-search-refined", "ticketing", false)
		w.t("Searching.", asOK("linear_search_issues", obj{"query": "login broken", "teamId": "SHOP", "limit": 10}, s18Issues("SHOP-1182", "SHOP-1190", "SHOP-1207")))
		w.t("Narrowing to SSO.", asOK("linear_search_issues", obj{"query": "SSO login timeout", "teamId": "SHOP", "limit": 10}, s18Issues("SHOP-1190")))
		w.t("Related SAML issues.", asOK("linear_search_issues", obj{"query": "SAML assertion expired", "teamId": "SHOP", "limit": 10}, s18Issues("SHOP-1190", "SHOP-1233")))
		w.t("Okta ones.", asOK("linear_search_issues", obj{"query": "Okta clock skew", "teamId": "SHOP", "limit": 10}, s18Issues("SHOP-1233", "SHOP-1251")))
		w.t("Reading the newest.", asOK("linear_get_issue", obj{"id": "SHOP-1251"}, egJSON(obj{"identifier": "SHOP-1251", "title": "SAML login fails when IdP clock is 3 min ahead", "state": "Todo"})))
		add(w)
	}

	// The ticket is reopened, then the reply goes through.
	{
		w := asRunOf("freshdesk-reopen-then-reply", "ticketing", false).acc("write", "reply_ticket", "update_ticket")
		w.t("Replying.", asFail("reply_ticket", obj{"ticket_id": 48210, "body": "Hi Marta, your refund was issued today."}, "tool_error",
			"400 Bad Request: {\"description\":\"Validation failed\",\"errors\":[{\"field\":\"ticket_id\",\"message\":\"Ticket is closed. Reopen it to add a reply.\",\"code\":\"invalid_value\"}]}"))
		w.t("Reopening.", asOK("update_ticket", obj{"ticket_id": 48210, "status": 2}, egJSON(obj{"id": 48210, "status": 2, "updated_at": "2026-12-06T05:01:00Z"})))
		w.t("Replying again.", asOK("reply_ticket", obj{"ticket_id": 48210, "body": "Hi Marta, your refund was issued today."}, egJSON(obj{"id": 99120331, "ticket_id": 48210, "created_at": "2026-12-06T05:01:09Z"})))
		w.t("Closing it.", asOK("update_ticket", obj{"ticket_id": 48210, "status": 5}, egJSON(obj{"id": 48210, "status": 5, "updated_at": "2026-12-06T05:01:15Z"})))
		add(w)
	}

	// Names tried until one is found, then its uses.
	{
		w := asRunOf("ripgrep-names-tried", "files", false)
		w.t("Searching.", asOK("search_code", obj{"pattern": "useCheckoutForm", "path": "src"}, "No matches found."))
		w.t("Maybe it is useCheckout.", asOK("search_code", obj{"pattern": "useCheckout", "path": "src"}, "src/hooks/useCheckoutState.ts:3:export function useCheckoutState() {"))
		w.t("Where is it used?", asOK("search_code", obj{"pattern": "useCheckoutState\\(", "path": "src"}, "src/pages/Checkout.tsx:18:  const state = useCheckoutState();\nsrc/pages/Cart.tsx:9:  const state = useCheckoutState();"))
		w.t("And its form part.", asOK("search_code", obj{"pattern": "CheckoutForm", "path": "src/components"}, "No matches found."))
		w.t("Forms folder.", asOK("search_code", obj{"pattern": "Checkout", "path": "src/forms"}, "src/forms/AddressForm.tsx:2:// used by Checkout"))
		add(w)
	}

	// Free/busy for other days; most answer the same morning block.
	{
		w := asRunOf("freebusy-other-days", "calendar", false)
		for d := 7; d <= 11; d++ {
			min := fmt.Sprintf("2026-12-%02dT08:00:00Z", d)
			max := fmt.Sprintf("2026-12-%02dT17:00:00Z", d)
			w.t("Checking the day.", asOK("calendar_freebusy", obj{"timeMin": min, "timeMax": max, "items": arr{obj{"id": "ana.lopez@shop.example"}}},
				s18FreeBusy(min, max, [2]string{fmt.Sprintf("2026-12-%02dT08:30:00Z", d), fmt.Sprintf("2026-12-%02dT10:30:00Z", d)})))
		}
		add(w)
	}

	// A wait that times out twice, then the confirmation shows.
	{
		w := asRunOf("browser-wait-then-appears", "browser", false)
		w.t("Waiting.", asFail("browser_wait_for", obj{"text": "Order confirmed", "time": 5}, "tool_error", "TimeoutError: page.waitForSelector: Timeout 5000ms exceeded.\nCall log:\n  - waiting for get_by_text(\"Order confirmed\") to be visible"))
		w.t("Waiting longer.", asFail("browser_wait_for", obj{"text": "Order confirmed", "time": 10}, "tool_error", "TimeoutError: page.waitForSelector: Timeout 10000ms exceeded.\nCall log:\n  - waiting for get_by_text(\"Order confirmed\") to be visible"))
		w.t("Once more.", asOK("browser_wait_for", obj{"text": "Order confirmed", "time": 20}, "Waited for Order confirmed"))
		w.t("Reading the page.", asOK("browser_snapshot", obj{}, s17Snap("https://shop.example/checkout/done", "Thank you", "- heading \"Order confirmed\" [ref=e12]", "- text: Order SH-90412")))
		add(w)
	}

	// The hook fails on one file, then another; each is fixed.
	{
		w := asRunOf("git-commit-hook-fixed", "git", false).acc("write", "git_commit", "edit_file")
		w.t("Committing.", asFail("git_commit", obj{"repo_path": "/workspace/shop", "message": "Fix voucher rounding"}, "tool_error", "ruff....Failed\n- hook id: ruff\n\nshop/basket.py:41:5: F841 Local variable `rounded` is assigned to but never used\nFound 1 error."))
		w.t("Removing the variable.", asOK("edit_file", obj{"path": "shop/basket.py", "old_string": "    rounded = total\n", "new_string": ""}, "The file shop/basket.py has been updated."))
		w.t("Committing.", asFail("git_commit", obj{"repo_path": "/workspace/shop", "message": "Fix voucher rounding"}, "tool_error", "ruff....Failed\n- hook id: ruff\n\nshop/vouchers.py:12:1: F401 `decimal.ROUND_HALF_UP` imported but unused\nFound 1 error."))
		w.t("Dropping the import.", asOK("edit_file", obj{"path": "shop/vouchers.py", "old_string": "from decimal import ROUND_HALF_UP\n", "new_string": ""}, "The file shop/vouchers.py has been updated."))
		w.t("Committing.", asFail("git_commit", obj{"repo_path": "/workspace/shop", "message": "Fix voucher rounding"}, "tool_error", "mypy....Failed\n- hook id: mypy\n\nshop/vouchers.py:30: error: Incompatible return value type (got \"float\", expected \"Decimal\")\nFound 1 error in 1 file."))
		w.t("Fixing the type.", asOK("edit_file", obj{"path": "shop/vouchers.py", "old_string": "    return float(d)", "new_string": "    return d"}, "The file shop/vouchers.py has been updated."))
		w.t("Committing.", asOK("git_commit", obj{"repo_path": "/workspace/shop", "message": "Fix voucher rounding"}, "[main 8d02b1f] Fix voucher rounding\n 2 files changed, 3 insertions(+), 5 deletions(-)"))
		add(w)
	}

	// An A2A task polled while its progress moves, then completed.
	{
		w := asRunOf("a2a-task-polled-progress", "a2a", false)
		for i, p := range []int{5, 20, 45, 70, 90} {
			w.t("Checking the task.", asOK("a2a_get_task", obj{"id": "task-8c1f22ab"}, s18Task("task-8c1f22ab", "working", fmt.Sprintf("Reconciling invoices: %d%% (%d of 3120)", p, p*3120/100))))
			_ = i
		}
		w.t("Checking the task.", asOK("a2a_get_task", obj{"id": "task-8c1f22ab"}, s18Task("task-8c1f22ab", "completed", "Reconciled 3120 invoices; 14 mismatches written to mismatches.csv")))
		add(w)
	}

	// A listing paged by its cursors to the end.
	{
		w := asRunOf("ticket-cursor-pages", "ticketing", false)
		w.t("Listing open tickets.", asOK("list_tickets", obj{"status": "open", "limit": 25}, s18Tickets(1, 25, "Y3Vyc29yOjI1")))
		w.t("Next page.", asOK("list_tickets", obj{"status": "open", "limit": 25, "cursor": "Y3Vyc29yOjI1"}, s18Tickets(26, 25, "Y3Vyc29yOjUw")))
		w.t("Next page.", asOK("list_tickets", obj{"status": "open", "limit": 25, "cursor": "Y3Vyc29yOjUw"}, s18Tickets(51, 25, "Y3Vyc29yOjc1")))
		w.t("Next page.", asOK("list_tickets", obj{"status": "open", "limit": 25, "cursor": "Y3Vyc29yOjc1"}, s18Tickets(76, 25, "Y3Vyc29yOjEwMA")))
		w.t("Last page.", asOK("list_tickets", obj{"status": "open", "limit": 25, "cursor": "Y3Vyc29yOjEwMA"}, s18Tickets(101, 7, "")))
		add(w)
	}

	// The context trimmed until the call fits.
	{
		w := asRunOf("proxy-context-trimmed", "model", false)
		for i, c := range []struct {
			n   int
			tok int
		}{{412, 163211}, {300, 131020}, {220, 97400}} {
			msgs := arr{obj{"role": "system", "content": "You summarise support transcripts."}, obj{"role": "user", "content": fmt.Sprintf("Summarise the attached %d transcripts (see file transcripts-2026-11.jsonl).", c.n)}}
			if i < 2 {
				w.t("Calling the model.", asFail("chat_completion", obj{"model": "gpt-4o", "messages": msgs, "max_tokens": 800}, "invalid_request_error",
					fmt.Sprintf("400 context_length_exceeded: This model's maximum context length is 128000 tokens. However, your messages resulted in %d tokens. Please reduce the length of the messages.", c.tok)))
				continue
			}
			w.t("Calling the model.", asOK("chat_completion", obj{"model": "gpt-4o", "messages": msgs, "max_tokens": 800}, s18Chat("chatcmpl-5k0091", "gpt-4o-2024-08-06", "Top issues: late deliveries (41%), refunds (22%), voucher errors (9%).", 97400, 210)))
		}
		add(w)
	}

	// The series is left alone and the one instance moved.
	{
		w := asRunOf("calendar-instance-moved", "calendar", false).acc("write", "update_event")
		w.t("Moving the review.", asOK("update_event", obj{"calendarId": "primary", "eventId": "7kq3ops", "start": obj{"dateTime": "2026-12-11T14:00:00+01:00"}, "end": obj{"dateTime": "2026-12-11T15:00:00+01:00"}}, s18Event("7kq3ops", "2026-12-11T14:00:00+01:00", "2026-12-11T15:00:00+01:00", "2026-12-06T05:10:11.000Z")))
		w.t("Checking it moved.", asOK("get_event", obj{"calendarId": "primary", "eventId": "7kq3ops_20261211T100000Z"}, s18Event("7kq3ops_20261211T100000Z", "2026-12-11T11:00:00+01:00", "2026-12-11T12:00:00+01:00", "2026-11-02T09:00:00.000Z")))
		w.t("That moved the series; moving the instance.", asOK("update_event", obj{"calendarId": "primary", "eventId": "7kq3ops_20261211T100000Z", "start": obj{"dateTime": "2026-12-11T14:00:00+01:00"}, "end": obj{"dateTime": "2026-12-11T15:00:00+01:00"}}, s18Event("7kq3ops_20261211T100000Z", "2026-12-11T14:00:00+01:00", "2026-12-11T15:00:00+01:00", "2026-12-06T05:11:40.000Z")))
		w.t("Checking it moved.", asOK("get_event", obj{"calendarId": "primary", "eventId": "7kq3ops_20261211T100000Z"}, s18Event("7kq3ops_20261211T100000Z", "2026-12-11T14:00:00+01:00", "2026-12-11T15:00:00+01:00", "2026-12-06T05:11:40.000Z")))
		add(w)
	}

	// Another encoding, then the rows.
	{
		w := asRunOf("read-file-other-encoding", "files", false)
		w.t("Reading.", asFail("read_text_file", obj{"path": "/data/exports/clients.csv", "encoding": "utf-8"}, "tool_error", "'utf-8' codec can't decode byte 0xe9 in position 1412: invalid continuation byte"))
		w.t("Latin-1 then.", asOK("read_text_file", obj{"path": "/data/exports/clients.csv", "encoding": "latin-1"}, "id;name;city\n1;Zoé Martin;Nîmes\n2;Hélène Roy;Orléans"))
		w.t("The other export.", asOK("read_text_file", obj{"path": "/data/exports/suppliers.csv", "encoding": "latin-1"}, "id;name;city\n1;Bières & Co;Liège"))
		add(w)
	}

	// The log's messages say nothing; the pickaxe finds the commit.
	{
		w := asRunOf("git-log-then-pickaxe", "git", false).acc("write", "run_command")
		w.t("Searching the log.", asOK("run_command", obj{"command": "git log --oneline --grep='voucher rounding'", "cwd": "/workspace/shop"}, s17Shell(0, "", "")))
		w.t("Searching the code's history.", asOK("run_command", obj{"command": "git log --oneline -S ROUND_HALF_UP", "cwd": "/workspace/shop"}, s17Shell(0, "a41c9e0 basket: totals\n", "")))
		w.t("Showing it.", asOK("run_command", obj{"command": "git show --stat a41c9e0", "cwd": "/workspace/shop"}, s17Shell(0, "commit a41c9e0\nAuthor: Tom <tom@shop.example>\n\n    basket: totals\n\n shop/basket.py | 12 +++++++-----\n", "")))
		w.t("Who else touched it.", asOK("run_command", obj{"command": "git log --oneline -L30,45:shop/basket.py", "cwd": "/workspace/shop"}, s17Shell(0, "a41c9e0 basket: totals\n7b21d04 Decimal discount\n", "")))
		add(w)
	}

	// The user looked up, then the ticket assigned.
	{
		w := asRunOf("ticket-assign-after-lookup", "ticketing", false).acc("write", "assign_ticket")
		w.t("Assigning.", asFail("assign_ticket", obj{"ticket_id": 48302, "assignee": "mkhan"}, "tool_error", "422 Unprocessable Entity: no agent matches assignee \"mkhan\""))
		w.t("Looking the agent up.", asOK("list_agents", obj{"query": "khan"}, egJSON(arr{obj{"id": 7711, "email": "mohammed.khan@shop.example", "name": "Mohammed Khan"}})))
		w.t("Assigning.", asOK("assign_ticket", obj{"ticket_id": 48302, "assignee": "mohammed.khan@shop.example"}, egJSON(obj{"id": 48302, "responder_id": 7711})))
		w.t("Next ticket.", asOK("assign_ticket", obj{"ticket_id": 48303, "assignee": "mohammed.khan@shop.example"}, egJSON(obj{"id": 48303, "responder_id": 7711})))
		add(w)
	}

	// The form asks for one field after another; each is filled.
	{
		w := asRunOf("browser-form-fields-filled", "browser", false).acc("write", "browser_type", "browser_click")
		w.t("Submitting.", asOK("browser_click", obj{"element": "Place order button", "ref": "e45"}, s17Snap("https://shop.example/checkout", "Checkout", "- textbox \"Phone\" [ref=e53]", "- alert: Phone number is required.", "- button \"Place order\" [ref=e57]")))
		w.t("Filling the phone.", asOK("browser_type", obj{"element": "Phone textbox", "ref": "e53", "text": "+33 6 12 34 56 78"}, "- Ran Playwright code:\n```js\nawait page.getByRole('textbox', { name: 'Phone' }).fill('+33 6 12 34 56 78');\n```"))
		w.t("Submitting.", asOK("browser_click", obj{"element": "Place order button", "ref": "e57"}, s17Snap("https://shop.example/checkout", "Checkout", "- textbox \"Postcode\" [ref=e61]: 7500", "- alert: Enter a valid postcode.", "- button \"Place order\" [ref=e66]")))
		w.t("Fixing the postcode.", asOK("browser_type", obj{"element": "Postcode textbox", "ref": "e61", "text": "75001"}, "- Ran Playwright code:\n```js\nawait page.getByRole('textbox', { name: 'Postcode' }).fill('75001');\n```"))
		w.t("Submitting.", asOK("browser_click", obj{"element": "Place order button", "ref": "e66"}, s17Snap("https://shop.example/checkout/done", "Thank you", "- heading \"Order confirmed\" [ref=e12]", "- text: Order SH-90412")))
		add(w)
	}

	// An index that changes the plan; then the plan of a second query.
	{
		w := asRunOf("sql-explain-after-index", "sql", false).acc("write", "execute_sql")
		w.t("Explaining.", asOK("query", obj{"sql": "EXPLAIN ANALYZE SELECT * FROM orders WHERE customer_id = 4412"}, "Seq Scan on orders  (cost=0.00..48211.00 rows=31 width=96) (actual time=0.041..612.118 rows=29 loops=1)\n  Filter: (customer_id = 4412)\nPlanning Time: 0.080 ms\nExecution Time: 612.301 ms"))
		w.t("Adding an index.", asOK("execute_sql", obj{"sql": "CREATE INDEX orders_customer_id_idx ON orders (customer_id)"}, "CREATE INDEX"))
		w.t("Explaining again.", asOK("query", obj{"sql": "EXPLAIN ANALYZE SELECT * FROM orders WHERE customer_id = 4412"}, "Index Scan using orders_customer_id_idx on orders  (cost=0.43..124.10 rows=31 width=96) (actual time=0.019..0.088 rows=29 loops=1)\n  Index Cond: (customer_id = 4412)\nPlanning Time: 0.210 ms\nExecution Time: 0.112 ms"))
		w.t("The date filter too.", asOK("query", obj{"sql": "EXPLAIN ANALYZE SELECT * FROM orders WHERE customer_id = 4412 AND created_at > now() - interval '30 days'"}, "Index Scan using orders_customer_id_idx on orders  (cost=0.43..124.18 rows=3 width=96) (actual time=0.021..0.090 rows=2 loops=1)\n  Index Cond: (customer_id = 4412)\n  Filter: (created_at > (now() - '30 days'::interval))\n  Rows Removed by Filter: 27\nExecution Time: 0.131 ms"))
		add(w)
	}

	// Directories walked one by one, several of them empty.
	{
		w := asRunOf("list-dirs-walked", "files", false)
		w.t("Listing the data folder.", asOK("list_directory", obj{"path": "/data"}, egJSON(arr{"[DIR] inbox", "[DIR] outbox", "[DIR] archive", "[DIR] tmp", "[DIR] exports"})))
		for _, d := range []string{"inbox", "outbox", "archive", "tmp"} {
			w.t("Listing "+d+".", asOK("list_directory", obj{"path": "/data/" + d}, "[]"))
		}
		w.t("Listing exports.", asOK("list_directory", obj{"path": "/data/exports"}, egJSON(arr{"[FILE] clients.csv", "[FILE] suppliers.csv"})))
		add(w)
	}

	return runs
}
