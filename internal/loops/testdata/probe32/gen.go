//go:build ignore

// gen writes the thirty-second held-out probe, written before reading the
// guard's rules again, shaped as agent frameworks shape their runs on their
// defaults: LangGraph JS's ToolNode turns (a failed call handed back as a
// ToolMessage "Error: ... Please fix your mistakes."), the AI SDK's
// multi-step tool loops with parallel calls in one step, @openai/agents'
// handoffs and agents used as tools, and an MCP Inspector's manual runs of
// one tool. The kinds: parallel calls of one tool whose arguments come in
// another key order each step (and a fan-out over distinct items); a
// structured-output retry whose JSON fails validation the same way each
// time (and one that converges); a file read in growing windows (and the
// same window again); a handoff ping-pong with no tool call between (and a
// handoff chain that moves); an agent used as a tool on distinct strings
// (and on one task again); an error that changes only by its request id
// (non-transient, and transient past four attempts, and transient that
// clears); manual runs with the same arguments (and with edited ones); a
// human approval polled while it moves (and one polled after its
// rejection); AI SDK steps that move (and steps that repeat). Four more,
// added after the first 20 were replayed (all as labelled) to reach the 24
// runs the probe test asks, still before the rules were read: a parallel batch in another order each step, a handoff
// triangle, a fan-out keyed by a nested id, and one file window read again
// after each edit.
//
// A loop is marked where the probes before it mark one: the third call
// asking the same thing after two answers alike (its substance, ids and
// clocks aside) with nothing written; the next call after three failures
// alike; the fifth attempt after transient failures; the third hand-off
// of one sub-task to one agent.
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
	return tracegen.NewProbe("probe32-"+id, desc, loop, kind)
}

func raw(s string) json.RawMessage { return json.RawMessage(s) }

func main() {
	parallelShuffledArgs()
	parallelFanout()
	structuredSameError()
	structuredConverges()
	fileWindowGrows()
	fileWindowSame()
	handoffPingPong()
	handoffChain()
	agentToolDistinct()
	agentToolSameTask()
	errorRequestID()
	transientRequestIDForever()
	transientRequestIDClears()
	inspectorSameArgs()
	inspectorEdits()
	approvalMoves()
	approvalRejectedPolled()
	sdkStepsMove()
	sdkStepsRepeat()
	langgraphFixOnce()
	parallelBatchReordered()
	handoffTriangle()
	fanoutNestedID()
	fileWindowAfterEdit()
}

// --- parallel calls of one tool ---

func parallelShuffledArgs() {
	r := run("parallel-shuffled-args", "an AI SDK agent asks get_price for the same three SKUs in parallel each step, the arguments' key order shuffled each time, and gets the same prices", true, "consecutive_repeat")
	r.Tool("get_price", "read")
	orders := [][3]string{
		{`{"sku":"DSK-100","currency":"EUR"}`, `{"currency":"EUR","sku":"CHR-220"}`, `{"sku":"LMP-031","currency":"EUR"}`},
		{`{"currency":"EUR","sku":"DSK-100"}`, `{"sku":"CHR-220","currency":"EUR"}`, `{"currency":"EUR","sku":"LMP-031"}`},
		{`{"sku":"DSK-100","currency":"EUR"}`, `{"currency":"EUR","sku":"CHR-220"}`, `{"currency":"EUR","sku":"LMP-031"}`},
		{`{"currency":"EUR","sku":"DSK-100"}`, `{"currency":"EUR","sku":"CHR-220"}`, `{"sku":"LMP-031","currency":"EUR"}`},
	}
	prices := []obj{{"sku": "DSK-100", "price": 399.0, "currency": "EUR"}, {"sku": "CHR-220", "price": 189.5, "currency": "EUR"}, {"sku": "LMP-031", "price": 39.9, "currency": "EUR"}}
	for i, o := range orders {
		if i == 2 {
			r.Then()
		}
		r.Calls("Let me get the current prices for the bundle.", ok("get_price", raw(o[0]), prices[0]), ok("get_price", raw(o[1]), prices[1]), ok("get_price", raw(o[2]), prices[2]))
	}
	r.Write()
}

func parallelFanout() {
	r := run("parallel-fanout", "an AI SDK agent checks stock for twelve SKUs, three in parallel per step, each SKU once", false, "batch_progress")
	r.Tool("check_stock", "read")
	for s := 0; s < 4; s++ {
		var cs []tracegen.C
		for j := 0; j < 3; j++ {
			n := s*3 + j
			args := raw(fmt.Sprintf(`{"warehouse":"MUC-1","sku":"SKU-%04d"}`, 1000+n))
			if j%2 == 1 {
				args = raw(fmt.Sprintf(`{"sku":"SKU-%04d","warehouse":"MUC-1"}`, 1000+n))
			}
			cs = append(cs, ok("check_stock", args, obj{"sku": fmt.Sprintf("SKU-%04d", 1000+n), "on_hand": (n * 7) % 23, "warehouse": "MUC-1"}))
		}
		r.Calls("Checking the next three SKUs.", cs...)
	}
	r.Write()
}

// --- structured output validated ---

const fixMistakes = "\n Please fix your mistakes."

func structuredSameError() {
	r := run("structured-same-error", "a LangGraph agent submits a task as JSON; validation rejects due_date in the same way each time while the model rewords the title and notes", true, "error_retry_loop")
	r.Tool("create_task", "write")
	titles := []string{"Renew TLS certificate", "Renew the TLS certificate for api.example.com", "TLS cert renewal (api)", "Renew api TLS certificate before expiry", "Certificate renewal: api.example.com"}
	for i, t := range titles {
		if i == 3 {
			r.Then()
		}
		r.Calls("Creating the task with the fixed fields.", fail("create_task", obj{"title": t, "due_date": "next Friday", "priority": "high", "notes": fmt.Sprintf("attempt %d; expires Dec 18", i+1)}, "invalid_args",
			"Error: ZodError: [{\"code\":\"invalid_string\",\"validation\":\"date\",\"path\":[\"due_date\"],\"message\":\"Invalid date, expected YYYY-MM-DD\"}]"+fixMistakes))
	}
	r.Write()
}

func structuredConverges() {
	r := run("structured-converges", "a LangGraph agent submits a task as JSON; each rejection names another field, the model fixes it, and the fourth try is accepted", false, "revisit_with_progress")
	r.Tool("create_task", "write")
	r.Calls("Creating the task.", fail("create_task", obj{"title": "Renew TLS certificate", "due_date": "next Friday", "priority": "high"}, "invalid_args", "Error: ZodError: [{\"path\":[\"due_date\"],\"message\":\"Invalid date, expected YYYY-MM-DD\"}]"+fixMistakes))
	r.Calls("Fixing the date.", fail("create_task", obj{"title": "Renew TLS certificate", "due_date": "2026-12-11", "priority": "high"}, "invalid_args", "Error: ZodError: [{\"path\":[\"priority\"],\"message\":\"Invalid enum value. Expected 'p0' | 'p1' | 'p2', received 'high'\"}]"+fixMistakes))
	r.Calls("Fixing the priority.", fail("create_task", obj{"title": "Renew TLS certificate", "due_date": "2026-12-11", "priority": "p1"}, "invalid_args", "Error: ZodError: [{\"path\":[\"assignee\"],\"message\":\"Required\"}]"+fixMistakes))
	r.Calls("Adding the assignee.", ok("create_task", obj{"title": "Renew TLS certificate", "due_date": "2026-12-11", "priority": "p1", "assignee": "ops-oncall"}, obj{"id": "TASK-5521", "created": true}))
	r.Write()
}

// --- a file read in windows ---

func lines(from, n int) string {
	s := ""
	for i := from; i < from+n; i++ {
		s += fmt.Sprintf("%5d\tdef handler_%d(req):  # route %d\n", i+1, i, i%17)
	}
	return s
}

func fileWindowGrows() {
	r := run("file-window-grows", "a code agent reads one long file in windows (offset/limit), each covering new lines", false, "pagination")
	r.Tool("read_file", "read")
	off := 0
	for _, n := range []int{100, 150, 200, 250, 300} {
		r.Calls("Reading further into the file.", ok("read_file", obj{"path": "server/routes.py", "offset": off, "limit": n}, lines(off, n)))
		off += n
	}
	r.Write()
}

func fileWindowSame() {
	r := run("file-window-same", "a code agent reads the same window of one file (lines 120-160) again and again, nothing written between", true, "consecutive_repeat")
	r.Tool("read_file", "read")
	r.Calls("Reading the top of the file.", ok("read_file", obj{"path": "server/routes.py", "offset": 0, "limit": 120}, lines(0, 120)))
	for i := 0; i < 4; i++ {
		if i == 2 {
			r.Then()
		}
		args := raw(`{"path":"server/routes.py","offset":120,"limit":40}`)
		if i%2 == 1 {
			args = raw(`{"limit":40,"offset":120,"path":"server/routes.py"}`)
		}
		r.Calls("Let me look at the handler section again.", ok("read_file", args, lines(120, 40)))
	}
	r.Write()
}

// --- handoffs ---

func handoffPingPong() {
	r := run("handoff-ping-pong", "an @openai/agents triage hands a refund question to the refunds agent, which hands it back to the orders agent, which hands it back, with no tool call between", true, "livelock_agents")
	r.Tool("lookup_order", "read")
	r.Calls("Looking up the order first.", ok("lookup_order", obj{"order_id": "A-77120"}, obj{"order_id": "A-77120", "status": "delivered", "total": 84.0}))
	task := "Customer wants a refund for order A-77120 (delivered, damaged on arrival)"
	for i := 0; i < 5; i++ {
		to, v := "refunds_agent", "transfer_to_orders_agent: damaged-on-arrival claims start with the orders team."
		if i%2 == 1 {
			to, v = "orders_agent", "transfer_to_refunds_agent: refunds are handled by the refunds team."
		}
		if i == 4 {
			r.Then()
		}
		r.Delegate("Handing off.", to, task, nil, v)
	}
	r.Write()
}

func handoffChain() {
	r := run("handoff-chain", "an @openai/agents triage hands off to billing (which looks up the invoice), then to shipping (which books a pickup), then to a notifier", false, "legit_recursion")
	r.Tool("get_invoice", "read").Tool("book_pickup", "write").Tool("send_email", "write")
	r.Delegate("Handing off to billing.", "billing_agent", "Check invoice INV-3391 for order A-77120", func() {
		r.Calls("Fetching the invoice.", ok("get_invoice", obj{"invoice": "INV-3391"}, obj{"invoice": "INV-3391", "paid": true, "amount": 84.0}))
	}, "transfer_to_shipping_agent: paid; arrange the return pickup.")
	r.Delegate("Handing off to shipping.", "shipping_agent", "Book a return pickup for order A-77120", func() {
		r.Calls("Booking.", ok("book_pickup", obj{"order_id": "A-77120", "date": "2026-12-09"}, obj{"pickup": "PU-8812", "window": "09:00-12:00"}))
	}, "transfer_to_notifier_agent: pickup PU-8812 booked.")
	r.Delegate("Handing off to the notifier.", "notifier_agent", "Tell the customer about pickup PU-8812", func() {
		r.Calls("Sending.", ok("send_email", obj{"to": "customer-77120", "template": "pickup_booked", "pickup": "PU-8812"}, obj{"sent": true}))
	}, "Customer notified.")
	r.Write()
}

// --- agents used as tools ---

func agentToolDistinct() {
	r := run("agent-tool-distinct", "an orchestrator uses a translator agent as a tool on six distinct UI strings", false, "batch_progress")
	r.Tool("glossary_lookup", "read")
	for i, s := range []string{"Sign in", "Forgot your password?", "Create an account", "Remember me", "Terms of service", "Privacy settings"} {
		r.Delegate("Translating the next string.", "translator_agent", fmt.Sprintf("Translate the UI string %q into German", s), func() {
			r.Calls("Checking the glossary.", ok("glossary_lookup", obj{"term": s, "lang": "de"}, obj{"term": s, "hits": i % 2}))
		}, fmt.Sprintf("Translation %d done.", i+1))
	}
	r.Write()
}

func agentToolSameTask() {
	r := run("agent-tool-same-task", "an orchestrator calls a summarizer agent as a tool on the same document with the same instruction, getting the same summary back each time", true, "livelock_agents")
	r.Tool("fetch_doc", "read")
	task := "Summarize the incident report IR-2291 in five bullet points"
	for i := 0; i < 4; i++ {
		if i == 2 {
			r.Then()
		}
		r.Delegate("Asking the summarizer.", "summarizer_agent", task, func() {
			r.Calls("Fetching the report.", ok("fetch_doc", obj{"doc": "IR-2291"}, "Incident IR-2291: the payments API returned 502s for 14 minutes after a config push; rolled back at 10:42."))
		}, "- 502s for 14 min\n- cause: config push\n- rolled back 10:42\n- no data loss\n- follow-up: canary config pushes")
	}
	r.Write()
}

// --- errors that change only by a request id ---

func reqID(i int) string { return fmt.Sprintf("req_%08x%04x", 0x5f3a91c2+i*7919, 0x1b2+i*31) }

func errorRequestID() {
	r := run("error-request-id", "an agent calls a tool with the same arguments; the non-transient error differs only by its request id each time", true, "error_retry_loop")
	r.Tool("create_refund", "write")
	for i := 0; i < 5; i++ {
		if i == 2 {
			r.Then()
		}
		r.Calls("Retrying the refund.", fail("create_refund", obj{"charge": "ch_3PqL9", "amount": 8400}, "invalid_args",
			fmt.Sprintf("StripeInvalidRequestError: Refund amount (8400) is greater than unrefunded amount on charge (8000). Request ID: %s", reqID(i))))
	}
	r.Write()
}

func transientRequestIDForever() {
	r := run("transient-request-id-forever", "an agent retries a call after 503s, each naming another request id, past four attempts", true, "error_retry_loop")
	r.Tool("sync_contacts", "write").Retryable("sync_contacts")
	for i := 0; i < 7; i++ {
		if i == 4 {
			r.Then()
		}
		r.Calls("The service is unavailable; retrying.", fail("sync_contacts", obj{"list": "newsletter-eu"}, "unavailable",
			fmt.Sprintf("503 Service Unavailable (x-request-id: %s)", reqID(i))))
	}
	r.Write()
}

func transientRequestIDClears() {
	r := run("transient-request-id-clears", "an agent retries a call after 503s, each naming another request id, and the third attempt succeeds", false, "transient_retry")
	r.Tool("sync_contacts", "write").Retryable("sync_contacts")
	for i := 0; i < 2; i++ {
		r.Calls("The service is unavailable; retrying.", fail("sync_contacts", obj{"list": "newsletter-eu"}, "unavailable", fmt.Sprintf("503 Service Unavailable (x-request-id: %s)", reqID(i))))
	}
	r.Calls("Retrying.", ok("sync_contacts", obj{"list": "newsletter-eu"}, obj{"synced": 1832, "skipped": 4}))
	r.Write()
}

// --- MCP Inspector-style manual runs ---

func inspectorSameArgs() {
	r := run("inspector-same-args", "a tool run by hand from an inspector with the same arguments, answered the same not-found error each time", true, "consecutive_repeat")
	r.Tool("get_issue", "read")
	for i := 0; i < 4; i++ {
		if i == 2 {
			r.Then()
		}
		r.Calls("Run tool.", fail("get_issue", obj{"owner": "acme", "repo": "web", "issue_number": 4821}, "not_found", "MCP error -32602: Issue acme/web#4821 not found"))
	}
	r.Write()
}

func inspectorEdits() {
	r := run("inspector-edits", "a tool run by hand from an inspector, its arguments edited after each error until it answers", false, "revisit_with_progress")
	r.Tool("get_issue", "read")
	r.Calls("Run tool.", fail("get_issue", obj{"owner": "acme", "repo": "web", "issue_number": "4821"}, "invalid_args", "MCP error -32602: Invalid arguments: issue_number: Expected number, received string"))
	r.Calls("Run tool.", fail("get_issue", obj{"owner": "acme", "repo": "web", "issue_number": 4821}, "not_found", "MCP error -32602: Issue acme/web#4821 not found"))
	r.Calls("Run tool.", fail("get_issue", obj{"owner": "acme", "repo": "webapp", "issue_number": 4821}, "forbidden", "MCP error -32603: Resource not accessible by personal access token"))
	r.Calls("Run tool.", ok("get_issue", obj{"owner": "acme-corp", "repo": "webapp", "issue_number": 4821}, obj{"number": 4821, "title": "Checkout button unresponsive on Safari", "state": "open"}))
	r.Write()
}

// --- a human approval polled ---

func approvalMoves() {
	r := run("approval-moves", "an agent waits on a human approval of a production deploy, polling with growing waits; the request is opened, commented on, approved by one of two, then approved", false, "polling")
	r.Tool("request_approval", "write").Tool("get_approval", "read").Tool("wait", "read")
	r.Calls("Requesting approval.", ok("request_approval", obj{"change": "deploy api v2.14.0 to prod", "approvers": []string{"alice", "bob"}}, obj{"approval_id": "apr-7731", "state": "pending"}))
	states := []obj{
		{"state": "pending", "approvals": 0, "required": 2, "seen_by": []string{}},
		{"state": "pending", "approvals": 0, "required": 2, "seen_by": []string{"alice"}},
		{"state": "pending", "approvals": 0, "required": 2, "seen_by": []string{"alice"}, "comments": []string{"alice: checking the migration with the DBA first"}},
		{"state": "pending", "approvals": 1, "required": 2, "seen_by": []string{"alice", "bob"}, "comments": []string{"alice: checking the migration with the DBA first", "alice: approved"}},
		{"state": "approved", "approvals": 2, "required": 2, "seen_by": []string{"alice", "bob"}},
	}
	for i, s := range states {
		s["approval_id"] = "apr-7731"
		r.Calls("Checking the approval.", ok("get_approval", obj{"approval_id": "apr-7731"}, s))
		if i < len(states)-1 {
			r.Calls("Waiting before checking again.", ok("wait", obj{"seconds": 300 << i}, obj{"waited": 300 << i}))
		}
	}
	r.Write()
}

func approvalRejectedPolled() {
	r := run("approval-rejected-polled", "an agent keeps polling a human approval, with waits, after it was rejected; the answer stays rejected", true, "consecutive_repeat")
	r.Tool("get_approval", "read").Tool("wait", "read")
	rej := obj{"approval_id": "apr-7740", "state": "rejected", "by": "bob", "reason": "freeze until Jan 5"}
	for i := 0; i < 4; i++ {
		if i == 2 {
			r.Then()
		}
		r.Calls("Checking the approval.", ok("get_approval", obj{"approval_id": "apr-7740"}, rej))
		r.Calls("Waiting before checking again.", ok("wait", obj{"seconds": 600}, obj{"waited": 600}))
	}
	r.Write()
}

// --- AI SDK multi-step loops ---

func sdkStepsMove() {
	r := run("sdk-steps-move", "an AI SDK agent plans a trip in steps, each step with parallel calls of different tools; one step repeats a call in its batch once", false, "long_task")
	r.Tool("search_flights", "read").Tool("search_hotels", "read").Tool("get_weather", "read").Tool("convert_currency", "read")
	r.Calls("Searching flights and the weather.", ok("search_flights", obj{"from": "BER", "to": "LIS", "date": "2027-02-12"}, obj{"best": "TP 537, 189 EUR"}), ok("get_weather", obj{"city": "Lisbon", "month": "February"}, obj{"avg_high_c": 15}))
	r.Calls("Searching hotels.", ok("search_hotels", obj{"city": "Lisbon", "checkin": "2027-02-12", "nights": 4}, obj{"best": "Casa Alfama, 96 EUR/night"}), ok("search_hotels", obj{"city": "Lisbon", "checkin": "2027-02-12", "nights": 4}, obj{"best": "Casa Alfama, 96 EUR/night"}))
	r.Calls("Converting the totals.", ok("convert_currency", obj{"amount": 573, "from": "EUR", "to": "USD"}, obj{"amount": 621.13}), ok("get_weather", obj{"city": "Porto", "month": "February"}, obj{"avg_high_c": 14}))
	r.Calls("Return flights.", ok("search_flights", obj{"from": "LIS", "to": "BER", "date": "2027-02-16"}, obj{"best": "TP 538, 171 EUR"}))
	r.Write()
}

func sdkStepsRepeat() {
	r := run("sdk-steps-repeat", "an AI SDK agent's steps each call the same flight and hotel searches in parallel, same arguments, same answers, until the step limit", true, "consecutive_repeat")
	r.Tool("search_flights", "read").Tool("search_hotels", "read")
	for i := 0; i < 5; i++ {
		if i == 2 {
			r.Then()
		}
		r.Calls("Let me search flights and hotels for the trip.", ok("search_flights", obj{"from": "BER", "to": "LIS", "date": "2027-02-12"}, obj{"best": "TP 537, 189 EUR"}), ok("search_hotels", obj{"nights": 4, "city": "Lisbon", "checkin": "2027-02-12"}, obj{"best": "Casa Alfama, 96 EUR/night"}))
	}
	r.Write()
}

// --- LangGraph ToolNode ---

func langgraphFixOnce() {
	r := run("langgraph-fix-once", "a LangGraph ReAct agent gets one ToolMessage error, fixes its call, and goes on through distinct queries", false, "long_task")
	r.Tool("sql_query", "read")
	r.Calls("Querying revenue.", fail("sql_query", obj{"query": "SELECT sum(total) FROM order WHERE month = '2026-11'"}, "invalid_args", "Error: SqliteError: near \"order\": syntax error"+fixMistakes))
	qs := []string{
		"SELECT sum(total) FROM \"order\" WHERE month = '2026-11'",
		"SELECT count(*) FROM \"order\" WHERE month = '2026-11'",
		"SELECT region, sum(total) FROM \"order\" WHERE month = '2026-11' GROUP BY region",
		"SELECT sum(total) FROM \"order\" WHERE month = '2026-10'",
	}
	for i, q := range qs {
		r.Calls("Next query.", ok("sql_query", obj{"query": q}, obj{"rows": []any{[]any{41250.5 + float64(i*1000), i}}}))
	}
	r.Write()
}

// --- four more ---

func parallelBatchReordered() {
	r := run("parallel-batch-reordered", "an AI SDK agent fetches the same three pages in parallel each step, the calls in another order each step, the same pages each time", true, "consecutive_repeat")
	r.Tool("fetch_url", "read")
	urls := []string{"https://docs.example.com/limits", "https://docs.example.com/pricing", "https://docs.example.com/regions"}
	body := map[string]string{urls[0]: "Rate limits: 600 requests/minute per key.", urls[1]: "Pricing: 0.40 USD per 1,000 calls.", urls[2]: "Regions: eu-west, us-east, ap-south."}
	orders := [][]int{{0, 1, 2}, {2, 0, 1}, {1, 2, 0}, {0, 2, 1}}
	for i, o := range orders {
		if i == 2 {
			r.Then()
		}
		var cs []tracegen.C
		for _, k := range o {
			cs = append(cs, ok("fetch_url", obj{"url": urls[k]}, body[urls[k]]))
		}
		r.Calls("Reading the three docs pages.", cs...)
	}
	r.Write()
}

func handoffTriangle() {
	r := run("handoff-triangle", "an @openai/agents run hands one question around three agents (sales, support, billing), each transferring it to the next, no tool call between", true, "livelock_agents")
	r.Tool("lookup_account", "read")
	r.Calls("Looking up the account.", ok("lookup_account", obj{"account": "ACME-GmbH"}, obj{"plan": "business", "seats": 40}))
	task := "Customer asks whether seats can be moved from the business plan to a new enterprise contract mid-term"
	agents := []string{"sales_agent", "support_agent", "billing_agent"}
	for i := 0; i < 8; i++ {
		if i == 6 {
			r.Then()
		}
		to := agents[i%3]
		r.Delegate("Handing off.", to, task, nil, "transfer_to_"+agents[(i+1)%3]+": not ours to answer.")
	}
	r.Write()
}

func fanoutNestedID() {
	r := run("fanout-nested-id", "an agent enriches eight contacts in parallel pairs; the calls differ only by an id nested in the arguments", false, "batch_progress")
	r.Tool("enrich_contact", "read")
	for s := 0; s < 4; s++ {
		var cs []tracegen.C
		for j := 0; j < 2; j++ {
			n := s*2 + j
			cs = append(cs, ok("enrich_contact", obj{"source": "clearbit", "contact": obj{"id": fmt.Sprintf("c_%03d", 100+n), "fields": []string{"company", "title"}}}, obj{"id": fmt.Sprintf("c_%03d", 100+n), "company": []string{"Acme", "Globex", "Initech", "Umbrella"}[n%4], "title": []string{"CTO", "VP Sales", "Engineer"}[n%3]}))
		}
		r.Calls("Enriching the next two contacts.", cs...)
	}
	r.Write()
}

func fileWindowAfterEdit() {
	r := run("file-window-after-edit", "a code agent reads one window of a file, edits a line in it, and reads the same window again after each edit", false, "revisit_with_progress")
	r.Tool("read_file", "read").Tool("edit_file", "write")
	win := lines(120, 40)
	for i := 0; i < 4; i++ {
		r.Calls("Reading the handler section.", ok("read_file", obj{"path": "server/routes.py", "offset": 120, "limit": 40}, win))
		old := fmt.Sprintf("def handler_%d(req):", 125+i*5)
		nw := fmt.Sprintf("async def handler_%d(req):", 125+i*5)
		r.Calls("Making this handler async.", ok("edit_file", obj{"path": "server/routes.py", "old_str": old, "new_str": nw}, obj{"ok": true}))
		win = strings.Replace(win, old, nw, 1)
	}
	r.Calls("Checking the result.", ok("read_file", obj{"path": "server/routes.py", "offset": 120, "limit": 40}, win))
	r.Write()
}
