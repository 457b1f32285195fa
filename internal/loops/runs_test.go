package loops

import (
	"fmt"
	"strings"
	"testing"
)

// The framework probe: runs shaped the way agent frameworks drive reach
// (OpenAI Agents, LangGraph's prebuilt ReAct agent and the AI SDK pointed at
// reach's MCP endpoint and model proxy), written as turns rather than as the
// benchmark's event lists, and played through a Detector directly rather
// than through replay. It is independent of the held-out probe
// (heldout_test.go): other classes, another writer, another driver. What the
// driver does that replay cannot: every turn is a model call whose text is
// reported (the proxy sees the model's wording change from turn to turn),
// and the tool calls of one turn are parallel, as the frameworks run them:
// all checked before any is done, and done in another order than they were
// dispatched. A hand-off's sub-agent plays its own turns under its name,
// with the delegation stack the runtime would give it.
//
// Each run is labelled by what a careful reader of the trajectory would
// say: legit work must never be refused; a loop is refused at or after the
// first call a reader could justly refuse (earliest), and the test asserts
// where it is refused (or that it is missed, with why: fwKnown).

type fwCall struct {
	tool, args, result string
	err                string // error type; "" for a success
	mark               string
}

type fwTurn struct {
	agent string
	say   string
	calls []fwCall
	hand  *fwHand
}

type fwHand struct {
	to, task string
	mark     string
	turns    []fwTurn
	verdict  string
}

type fwRun struct {
	id, class string
	loop      bool
	earliest  string // mark of the first call that may be refused
	access    map[string]string
	retryable map[string]bool
	turns     []fwTurn
}

// fwResult is where a run was refused.
type fwResult struct {
	at       int // index of the refused call or hand-off, in play order; -1 if none
	earliest int
	verdict  *Verdict
}

func playRun(r *fwRun) fwResult {
	d := New(nil)
	res := fwResult{at: -1, earliest: -1}
	n := 0
	var play func(turns []fwTurn, chain []string) bool
	play = func(turns []fwTurn, chain []string) bool {
		for _, t := range turns {
			agent := t.agent
			m := &Step{Kind: ModelCall, Agent: agent, Tokens: 800}
			d.Check(m)
			d.Done(m, Outcome{Result: Text(t.say)})
			if h := t.hand; h != nil {
				if h.mark != "" && h.mark == r.earliest {
					res.earliest = n
				}
				s := &Step{Kind: Delegation, Agent: agent, To: h.to, Task: h.task}
				if len(chain) > 0 {
					s.Chain = append(append([]string(nil), chain...), agentName(agent))
				}
				if v := d.Check(s); v != nil {
					res.at, res.verdict = n, v
					return false
				}
				n++
				sub := chain
				if len(sub) == 0 {
					sub = []string{agentName(agent)}
				} else {
					sub = append(append([]string(nil), chain...), agentName(agent))
				}
				if !play(h.turns, sub) {
					return false
				}
				d.Done(s, Outcome{Result: Text(h.verdict)})
				continue
			}
			// Parallel calls: all dispatched, then done last first.
			steps := make([]*Step, len(t.calls))
			for i, c := range t.calls {
				if c.mark != "" && c.mark == r.earliest {
					res.earliest = n
				}
				acc := r.access[c.tool]
				if acc == "" {
					acc = "read"
				}
				s := &Step{Agent: agent, Tool: c.tool, Args: canonical([]byte(c.args)), Access: acc, Retryable: r.retryable[c.tool]}
				if v := d.Check(s); v != nil {
					res.at, res.verdict = n, v
					return false
				}
				n++
				steps[i] = s
			}
			for i := len(t.calls) - 1; i >= 0; i-- {
				c := t.calls[i]
				o := Outcome{Result: canonical([]byte(c.result))}
				if c.err != "" {
					o.Error, o.ErrorType = true, c.err
				}
				d.Done(steps[i], o)
			}
		}
		return true
	}
	play(r.turns, nil)
	return res
}

// fwOutcome is "ok", "false_kill", "early" (a loop refused before its
// earliest call), "detected" or "missed".
func fwOutcome(r *fwRun, res fwResult) string {
	switch {
	case !r.loop && res.at >= 0:
		return "false_kill"
	case !r.loop:
		return "ok"
	case res.at < 0:
		return "missed"
	case res.at < res.earliest:
		return "early"
	}
	return "detected"
}

// fwb builds a run.
type fwb struct{ r *fwRun }

func newRun(id, class string, loop bool) *fwb {
	return &fwb{r: &fwRun{id: id, class: class, loop: loop, access: map[string]string{}, retryable: map[string]bool{}}}
}

func (b *fwb) writes(tools ...string) *fwb {
	for _, t := range tools {
		b.r.access[t] = "write"
	}
	return b
}

func (b *fwb) turn(agent, say string, calls ...fwCall) *fwb {
	b.r.turns = append(b.r.turns, fwTurn{agent: agent, say: say, calls: calls})
	return b
}

func (b *fwb) hand(agent, say string, h *fwHand) *fwb {
	b.r.turns = append(b.r.turns, fwTurn{agent: agent, say: say, hand: h})
	return b
}

func (b *fwb) from(mark string) *fwb { b.r.earliest = mark; return b }

func fc(tool, args, result string) fwCall { return fwCall{tool: tool, args: args, result: result} }

func (c fwCall) at(mark string) fwCall { c.mark = mark; return c }

func (c fwCall) failed(errType string) fwCall { c.err = errType; return c }

func q(s string) string { return fmt.Sprintf("%q", s) }

// sub builds a hand-off's turns.
func sub(to, task, verdict string, turns ...fwTurn) *fwHand {
	return &fwHand{to: to, task: task, turns: turns, verdict: verdict}
}

func tn(agent, say string, calls ...fwCall) fwTurn {
	return fwTurn{agent: agent, say: say, calls: calls}
}

func frameworkRuns() []*fwRun {
	var out []*fwRun
	add := func(b *fwb) { out = append(out, b.r) }

	// --- legit: different inputs, the same answer -------------------------

	// A sentiment classifier over twelve reviews, five per turn (the AI SDK
	// runs a turn's calls in parallel); every review is positive.
	{
		reviews := []string{
			"I love this blender, it crushes ice in seconds",
			"Delivery was quick and the courier was very polite",
			"The jacket fits perfectly and keeps me warm on windy days",
			"Setup took five minutes and the app explained every step",
			"Our kids play with this puzzle every single evening",
			"Battery lasts the whole weekend camping trip without charging",
			"Customer support replaced the cracked lid within two days",
			"These headphones sound rich and the bass is deep",
			"Sturdy desk, easy assembly, no wobble at all",
			"The novel kept me up reading until three in the morning",
			"Fresh coffee beans with a lovely chocolate aroma",
			"Great value for a cordless drill with two batteries",
		}
		b := newRun("classifier-sentiment-parallel", "same answer, different inputs", false)
		for i := 0; i < len(reviews); i += 5 {
			var cs []fwCall
			for _, t := range reviews[i:min(i+5, len(reviews))] {
				cs = append(cs, fc("classify_sentiment", `{"text":`+q(t)+`}`, `{"label":"positive","confidence":0.97}`))
			}
			b.turn("", fmt.Sprintf("Classifying reviews %d to %d.", i+1, min(i+5, len(reviews))), cs...)
		}
		add(b)
	}
	// The same, one call a turn, the answer a sentence (LangGraph's ReAct
	// agent, text results), two-word inputs under "input".
	{
		inputs := []string{"love it", "works great", "fast shipping", "highly recommended", "excellent quality", "very comfortable", "super friendly staff", "beautiful colours"}
		b := newRun("classifier-short-inputs-text", "same answer, different inputs", false)
		for i, in := range inputs {
			b.turn("", fmt.Sprintf("Next, item %d.", i+1), fc("sentiment", `{"input":`+q(in)+`}`, q("Sentiment: POSITIVE. The text expresses a favourable opinion.")))
		}
		add(b)
	}
	// An intent router over different customer messages, the same intent.
	{
		msgs := []string{
			"where is my parcel, it was due on Monday",
			"tracking page shows nothing since last week",
			"my order still has not arrived",
			"can you tell me when the package will be delivered",
			"the courier never came to my address",
			"shipment stuck in the depot for days",
		}
		b := newRun("intent-router", "same answer, different inputs", false)
		for _, m := range msgs {
			b.turn("", "Routing the next ticket.", fc("detect_intent", `{"message":`+q(m)+`,"channel":"email"}`, `{"intent":"delivery_status","queue":"logistics","priority":"normal"}`))
		}
		add(b)
	}
	// A spell checker over the paragraphs of a document: nothing to fix.
	{
		paras := []string{
			"The committee met on Tuesday to review the annual budget and the hiring plan.",
			"Members agreed that the travel allowance should stay at last year's level.",
			"A proposal to move the archive to cloud storage was deferred until spring.",
			"The treasurer presented three options for the new accounting software.",
			"Volunteers will be thanked at the summer picnic in the botanical garden.",
			"The next meeting will take place in the library's reading room.",
		}
		b := newRun("spellcheck-paragraphs", "same answer, different inputs", false)
		var cs []fwCall
		for _, p := range paras {
			cs = append(cs, fc("check_spelling", `{"text":`+q(p)+`,"lang":"en-GB"}`, `{"issues":[],"summary":"No spelling or grammar issues found."}`))
		}
		b.turn("", "Checking every paragraph.", cs...)
		add(b)
	}
	// Different questions to a knowledge base that has none of them.
	{
		qs := []string{"parking rules for visitors at the Lyon office", "how many vacation days carry over into next year", "reimbursement limit for home office chairs", "who approves conference travel abroad", "dress code for the annual gala dinner"}
		b := newRun("kb-different-questions-nothing", "same answer, different inputs", false)
		for _, x := range qs {
			b.turn("", "Looking that up.", fc("search_handbook", `{"query":`+q(x)+`}`, `{"results":[],"message":"No matching handbook sections were found."}`))
		}
		add(b)
	}
	// Tickets about one product routed to one team: the texts share the
	// product's name, the answer is a verdict on them, not about them.
	{
		tickets := []string{"Acme router keeps rebooting every night", "Acme router wifi drops when the microwave runs", "firmware update bricked my Acme router", "Acme router fan is very loud", "Acme router lights blink orange", "cannot log in to the Acme router admin page"}
		b := newRun("tickets-one-product-routed", "same answer, different inputs", false)
		for i, x := range tickets {
			b.turn("", fmt.Sprintf("Ticket %d.", i+1), fc("route_ticket", `{"text":`+q(x)+`}`, `{"team":"hardware-support","sla":"48h","note":"assigned to the default hardware queue"}`))
		}
		add(b)
	}
	// A classifier over reviews in two languages, one answer.
	{
		reviews := []string{"the blender is quiet and strong", "这款吸尘器很好用，噪音也小", "battery lasts all week long", "送货很快，包装也很结实", "the lamp looks lovely on my desk", "客服态度非常好，问题马上解决了"}
		b := newRun("classifier-two-languages", "same answer, different inputs", false)
		for _, r := range reviews {
			b.turn("", "Next review.", fc("classify", `{"review":`+q(r)+`}`, `{"sentiment":"positive","summary":"The customer is satisfied."}`))
		}
		add(b)
	}
	// The same, the router echoing each ticket's text in its answer.
	{
		tickets := []string{"Acme router keeps rebooting every night", "Acme router wifi drops when the microwave runs", "firmware update bricked my Acme router", "Acme router fan is very loud", "Acme router lights blink orange"}
		b := newRun("tickets-one-product-echoed", "same answer, different inputs", false)
		for _, x := range tickets {
			b.turn("", "Routing.", fc("route_ticket", `{"text":`+q(x)+`}`, `{"ticket":{"text":`+q(x)+`},"team":"hardware-support","note":"assigned to the default hardware queue"}`))
		}
		add(b)
	}
	// Writes that each answer the same acknowledgement.
	{
		b := newRun("writes-acknowledged", "same answer, different inputs", false).writes("create_ticket", "notify")
		titles := []string{"Printer on floor 3 jams", "VPN drops every hour", "Badge reader at gate B dead", "Laptop fan very loud", "Monitor flickers after update", "Shared drive is read-only"}
		for i, t := range titles {
			b.turn("", "Filing it.", fc("create_ticket", `{"title":`+q(t)+`,"team":"it-helpdesk"}`, `{"status":"created"}`),
				fc("notify", fmt.Sprintf(`{"user":"u%d","message":"Your ticket has been filed"}`, 100+i), `"202 Accepted"`))
		}
		add(b)
	}
	// Health checks of different hosts, all healthy, in parallel.
	{
		b := newRun("health-checks-hosts", "same answer, different inputs", false)
		var cs []fwCall
		for i := range 8 {
			cs = append(cs, fc("check_health", fmt.Sprintf(`{"host":"web-%02d.prod.internal","port":8443}`, i+1), `{"status":"healthy","checks":{"disk":"ok","memory":"ok","tls":"valid"},"message":"all checks passed"}`))
		}
		b.turn("", "Checking the web tier.", cs[:4]...).turn("", "And the rest.", cs[4:]...)
		add(b)
	}
	// A batch over a list of ids, each validated with the same verdict.
	{
		b := newRun("batch-validate-ids", "same answer, different inputs", false)
		for i := range 9 {
			b.turn("", fmt.Sprintf("Record %d of 9.", i+1), fc("validate_invoice", fmt.Sprintf(`{"invoice_id":"INV-2026-%04d"}`, 311+i*7), `{"valid":true,"errors":[],"schema":"invoice-v3","note":"all required fields present"}`))
		}
		add(b)
	}
	// Translation of different sentences (the answers differ).
	{
		b := newRun("translate-sentences", "same answer, different inputs", false)
		pairs := [][2]string{{"Where is the train station?", "Où est la gare ?"}, {"The museum opens at nine.", "Le musée ouvre à neuf heures."}, {"Two coffees, please.", "Deux cafés, s'il vous plaît."}, {"Is breakfast included?", "Le petit-déjeuner est-il inclus ?"}, {"Thank you very much.", "Merci beaucoup."}, {"Thanks a lot.", "Merci beaucoup."}, {"Many thanks.", "Merci beaucoup."}}
		for _, p := range pairs {
			b.turn("", "Translating.", fc("translate", `{"text":`+q(p[0])+`,"target":"fr"}`, `{"translation":`+q(p[1])+`,"source":"en"}`))
		}
		add(b)
	}
	// A test runner re-run after each edit; the failure is the same twice
	// before the right fix.
	{
		b := newRun("tests-after-each-edit", "same command, edits between", false).writes("apply_patch")
		fail := `{"exit_code":1,"output":"--- FAIL: TestParse (0.00s)\n    parse_test.go:41: got 3 fields, want 4\nFAIL\nFAIL\texample.com/csv\t0.012s"}`
		b.turn("", "Running the tests.", fc("run_command", `{"command":"go test ./..."}`, fail))
		for i, r := range []string{fail, fail, `{"exit_code":0,"output":"ok  \texample.com/csv\t0.011s"}`} {
			b.turn("", fmt.Sprintf("Trying fix %d.", i+1), fc("apply_patch", fmt.Sprintf(`{"path":"parse.go","patch":"@@ -%d +%d @@ fix %d"}`, 10+i, 10+i, i), `{"ok":true}`))
			b.turn("", "Re-running.", fc("run_command", `{"command":"go test ./..."}`, r))
		}
		add(b)
	}
	// Pagination in parallel: pages 1 to 4 of a listing in one turn.
	{
		b := newRun("parallel-pages", "parallel reads", false)
		var cs []fwCall
		for p := 1; p <= 4; p++ {
			cs = append(cs, fc("list_orders", fmt.Sprintf(`{"status":"open","page":%d,"per_page":2}`, p), fmt.Sprintf(`{"orders":[{"id":"O-%d"},{"id":"O-%d"}],"page":%d}`, p*2, p*2+1, p)))
		}
		b.turn("", "Fetching every page at once.", cs...)
		b.turn("", "Done; summarising.")
		add(b)
	}
	// The same read made in two parallel branches of one turn and again the
	// turn after (a framework that lets the model call a tool twice at once).
	{
		b := newRun("parallel-duplicate-read", "parallel reads", false)
		b.turn("", "Reading the config and the schema.", fc("read_file", `{"path":"config.yaml"}`, `"port: 8080\nworkers: 4"`), fc("read_file", `{"path":"config.yaml"}`, `"port: 8080\nworkers: 4"`), fc("read_file", `{"path":"schema.sql"}`, `"create table t (id int);"`))
		b.turn("", "Now the handler.", fc("read_file", `{"path":"handler.go"}`, `"package main\nfunc handle() {}"`))
		add(b)
	}
	// Polling a job whose progress moves, the model saying something new
	// each turn.
	{
		b := newRun("polling-progress", "polling", false)
		for i, p := range []int{5, 20, 20, 45, 80, 100} {
			st := "running"
			if p == 100 {
				st = "succeeded"
			}
			b.turn("", fmt.Sprintf("Still waiting (%d).", i), fc("get_job", `{"job_id":"exp-77"}`, fmt.Sprintf(`{"job_id":"exp-77","state":%q,"progress":%d,"step":"epoch %d"}`, st, p, i)))
		}
		add(b)
	}
	// The framework's own retries: a transient failure retried, then a
	// client timeout that re-sends a call that had completed.
	{
		b := newRun("framework-retries", "retries", false)
		b.turn("", "Fetching the forecast.", fc("get_forecast", `{"city":"Oslo"}`, `"upstream weather answered: 503 Service Unavailable"`).failed("unavailable"))
		b.turn("", "Fetching the forecast.", fc("get_forecast", `{"city":"Oslo"}`, `{"city":"Oslo","today":"snow","high_c":-2}`))
		b.turn("", "Fetching the forecast.", fc("get_forecast", `{"city":"Oslo"}`, `{"city":"Oslo","today":"snow","high_c":-2}`))
		b.turn("", "And Bergen.", fc("get_forecast", `{"city":"Bergen"}`, `{"city":"Bergen","today":"rain","high_c":5}`))
		add(b)
	}
	// A2A: a lead hands research to two agents and drafting to a writer;
	// the researchers' searches overlap.
	{
		b := newRun("a2a-research-team", "delegation", false)
		res := func(agent, topic string, i int) []fwTurn {
			return []fwTurn{
				tn(agent, "Searching.", fc("web_search", `{"query":`+q(topic)+`}`, fmt.Sprintf(`{"results":[{"title":"Overview of %s","url":"https://ex.org/%d"},{"title":"Shared survey 2025","url":"https://ex.org/survey"}]}`, topic, i))),
				tn(agent, "Reading.", fc("fetch_page", fmt.Sprintf(`{"url":"https://ex.org/%d"}`, i), fmt.Sprintf(`"Finding %d about %s."`, i, topic))),
			}
		}
		b.hand("", "Splitting the work.", sub("researcher_a", "research heat pump subsidies in Germany", "Germany: 30-70% subsidy.", res("researcher_a", "heat pump subsidies Germany", 1)...))
		b.hand("", "Now France.", sub("researcher_b", "research heat pump subsidies in France", "France: MaPrimeRenov up to 5000 EUR.", res("researcher_b", "heat pump subsidies France", 2)...))
		b.hand("", "Drafting.", sub("writer", "write a one-page comparison of the two", "Draft attached.",
			tn("writer", "Writing.", fc("save_draft", `{"name":"comparison.md","text":"Germany vs France"}`, `{"ok":true}`))))
		b.r.access["save_draft"] = "write"
		add(b)
	}

	// --- loops ----------------------------------------------------------------

	// A paraphrase loop that changes language mid-run; the product name is
	// kept in every language, the same articles come back each time.
	{
		b := newRun("paraphrase-cross-language", "paraphrase", true)
		docs := `{"results":[{"title":"Reset Okta MFA for a user","id":"KB-1203"},{"title":"Okta Verify enrolment","id":"KB-0981"}]}`
		for i, x := range []string{"reset Okta MFA for a locked out user", "Okta MFA zurücksetzen gesperrter Benutzer", "réinitialiser MFA Okta utilisateur bloqué", "restablecer MFA de Okta usuario bloqueado", "Okta MFA リセット ロックされたユーザー", "how to reset Okta multi factor"} {
			c := fc("search_kb", `{"query":`+q(x)+`,"limit":5}`, docs)
			if i == 3 {
				c = c.at("3")
			}
			b.turn("", fmt.Sprintf("Let me try phrasing it differently (%d).", i+1), c)
		}
		add(b.from("3"))
	}
	// Rewordings that change script and share no word across it; the
	// documents found are about the English wording.
	{
		b := newRun("paraphrase-english-chinese", "paraphrase", true)
		docs := `{"hits":[{"title":"Change the billing address of a subscription","id":"KB-77"},{"title":"Invoice details and VAT numbers","id":"KB-78"}]}`
		for i, x := range []string{"change billing address on my subscription", "修改订阅的账单地址", "update the billing address for invoices", "发票上的地址怎么改", "账单地址在哪里修改"} {
			c := fc("search_kb", `{"query":`+q(x)+`}`, docs)
			if i == 3 {
				c = c.at("3")
			}
			b.turn("", "Trying again.", c)
		}
		add(b.from("3"))
	}
	// A search whose query grows by one word each time, the same results.
	{
		b := newRun("query-grows-by-a-word", "paraphrase", true)
		docs := `{"hits":[{"title":"Rotating TLS certificates on the ingress","path":"ops/tls.md"},{"title":"cert-manager troubleshooting","path":"ops/cert-manager.md"}],"total":2}`
		base := "rotate ingress certificate"
		for i, w := range []string{"", "manually", "kubernetes", "production", "cluster", "now"} {
			x := base
			if w != "" {
				base += " " + w
				x = base
			}
			c := fc("search_docs", `{"q":`+q(x)+`}`, docs)
			if i == 3 {
				c = c.at("3")
			}
			b.turn("", "Refining the search.", c)
		}
		add(b.from("3"))
	}
	// Two tools feeding each other: a summary's text searched, the search's
	// top hit summarised, round and round with nothing new.
	{
		b := newRun("two-tool-feedback", "cycle", true)
		sum := `{"summary":"The outage was caused by an expired certificate on the payments gateway."}`
		hits := `{"results":[{"doc":"INC-4471","snippet":"expired certificate on the payments gateway"}]}`
		for i := range 4 {
			s := fc("search_incidents", `{"query":"expired certificate on the payments gateway"}`, hits)
			u := fc("summarize_doc", `{"doc":"INC-4471"}`, sum)
			if i == 2 {
				s = s.at("3")
			}
			b.turn("", "Searching for it.", s).turn("", "Summarising the top hit.", u)
		}
		add(b.from("3"))
	}
	// The same loop spread over the parallel calls of each turn: three
	// lookups a turn, each returning what it did the turn before.
	{
		b := newRun("loop-across-parallel-calls", "repeat", true)
		for i := range 4 {
			cs := []fwCall{
				fc("get_account", `{"id":"AC-7"}`, `{"id":"AC-7","plan":"pro","seats":12}`),
				fc("get_invoices", `{"account":"AC-7"}`, `{"invoices":[{"n":"F-1","due":"2026-01-31","paid":false}]}`),
				fc("get_usage", `{"account":"AC-7","month":"2026-01"}`, `{"api_calls":120331,"storage_gb":41}`),
			}
			if i == 2 {
				cs[0] = cs[0].at("3")
			}
			b.turn("", fmt.Sprintf("Checking the account again (round %d).", i+1), cs...)
		}
		add(b.from("3"))
	}
	// Reworded searches in parallel: three rewordings a turn, the same two
	// documents each time.
	{
		b := newRun("parallel-rewordings", "paraphrase", true)
		docs := `{"results":[{"title":"Refund window for annual plans","id":"D-12"},{"title":"Prorated refunds","id":"D-19"}]}`
		qs := [][]string{{"refund annual plan", "annual plan refund policy", "refund for yearly plan"}, {"money back annual subscription", "annual plan refund window", "refund rules annual"}}
		for i, t := range qs {
			var cs []fwCall
			for j, x := range t {
				c := fc("search_help", `{"query":`+q(x)+`}`, docs)
				if i == 1 && j == 0 {
					c = c.at("3")
				}
				cs = append(cs, c)
			}
			b.turn("", "Searching several phrasings at once.", cs...)
		}
		add(b.from("3"))
	}
	// A sub-agent in a reworded-search loop under a lead (A2A).
	{
		b := newRun("a2a-subagent-paraphrase", "paraphrase", true)
		docs := `{"results":[{"title":"SSO setup with Azure AD","id":"A-1"},{"title":"SAML metadata upload","id":"A-2"}]}`
		var ts []fwTurn
		for i, x := range []string{"configure Azure AD SSO", "set up SSO with Azure AD", "Azure AD single sign on configuration", "Azure AD SSO integration steps", "connect Azure AD SSO"} {
			c := fc("search_kb", `{"query":`+q(x)+`}`, docs)
			if i == 3 {
				c = c.at("3")
			}
			ts = append(ts, tn("support_agent", "Trying another phrasing.", c))
		}
		b.hand("", "Handing this to support.", sub("support_agent", "find how to configure Azure AD SSO", "not found", ts...))
		add(b.from("3"))
	}
	// A fetch retried by the model after each answer, the body the same and
	// only the HTTP metadata new, the framework's text result a JSON string.
	{
		b := newRun("noisy-refetch-text-result", "repeat", true)
		for i := range 5 {
			c := fc("http_get", `{"url":"https://api.example.com/v1/quota"}`, q(fmt.Sprintf(`{"headers":{"Date":"Thu, 03 Dec 2026 09:%02d:00 GMT","X-Request-Id":"%08x"},"body":{"quota":1000,"used":1000,"reset":"2026-12-04"}}`, i, 0xabc0+i*977)))
			if i == 2 {
				c = c.at("3")
			}
			b.turn("", fmt.Sprintf("Checking the quota once more (%d).", i+1), c)
		}
		add(b.from("3"))
	}
	// The model asks for one call three times in one turn (parallel tool
	// calls of one name and arguments), and again the next turn.
	{
		b := newRun("parallel-same-call-twice", "repeat", true)
		c := fc("get_balance", `{"account":"CH-1029"}`, `{"account":"CH-1029","balance":"1204.50","currency":"CHF"}`)
		b.turn("", "Checking the balance.", c, c, c)
		b.turn("", "Checking the balance again.", c.at("3"), c, c)
		add(b.from("3"))
	}
	// The same hand-off again and again, the same answer each time.
	{
		b := newRun("a2a-same-task-same-verdict", "delegation", true)
		for i := range 4 {
			h := sub("auditor", "Check the March invoices for duplicates", "No duplicates found among the 212 March invoices.",
				tn("auditor", "Scanning.", fc("list_invoices", fmt.Sprintf(`{"month":"2026-03","pass":%d}`, i), `{"count":212,"duplicates":[]}`)))
			if i == 2 {
				h.mark = "h3"
			}
			b.hand("", "Asking the auditor.", h)
		}
		b.r.earliest = "h3"
		add(b)
	}
	// A tool behind an upstream MCP server fails with an untyped error that
	// echoes each new argument: the model tries date after date.
	{
		b := newRun("untyped-error-probe", "same error", true)
		for i, d := range []string{"03/12/2026", "12-03-2026", "2026/12/03", "3 Dec 2026", "Dec 3, 2026"} {
			c := fc("book_room", fmt.Sprintf(`{"room":"B2","date":%q}`, d), q(fmt.Sprintf("Error: invalid date %q, expected YYYY-MM-DD", d))).failed("tool_error")
			if i == 3 {
				c = c.at("4")
			}
			b.turn("", "Trying another date format.", c)
		}
		add(b.from("4"))
	}
	// Candidate paths tried through an upstream tool, each "not found", and
	// a date fixed on the second try.
	{
		b := newRun("untyped-not-found-candidates", "retries", false)
		for _, p := range []string{"notes/2026-09.md", "notes/2026-10.md", "notes/2026-11.md", "notes/2026-12.md", "archive/2026-12.md"} {
			b.turn("", "Looking for the notes.", fc("read_note", `{"path":`+q(p)+`}`, q("Error: invalid path or file '"+p+"' not found")).failed("tool_error"))
		}
		b.turn("", "Booking.", fc("book_room", `{"room":"B2","date":"03/12/2026"}`, q("Error: invalid date \"03/12/2026\", expected YYYY-MM-DD")).failed("tool_error"))
		b.turn("", "Booking.", fc("book_room", `{"room":"B2","date":"2026-12-03"}`, `{"booked":true,"room":"B2"}`))
		add(b)
	}
	// The framework retries a call that timed out, then it succeeds.
	{
		b := newRun("timeouts-then-success", "retries", false)
		b.r.retryable["search_flights"] = true
		for range 3 {
			b.turn("", "Searching flights.", fc("search_flights", `{"from":"ZRH","to":"LIS","date":"2026-12-20"}`, `"upstream flights failed: context deadline exceeded"`).failed("timeout"))
		}
		b.turn("", "Searching flights.", fc("search_flights", `{"from":"ZRH","to":"LIS","date":"2026-12-20"}`, `{"flights":[{"no":"LX2086","dep":"07:10"}]}`))
		add(b)
	}
	// A lead fans one instruction out to one summariser over five documents
	// (A2A: the task text is the same, the document travels as a data part
	// the loop guard does not see).
	{
		b := newRun("a2a-same-task-text-fan-out", "delegation", false)
		sums := []string{
			"- Q3 revenue grew 12%\n- churn fell to 2.1%\n- two new regions launched",
			"- the lease ends in March\n- rent rises by 4%\n- early exit costs three months",
			"- incident caused by an expired certificate\n- 41 minutes of downtime\n- alerts now fire 30 days ahead",
			"- hiring plan adds six engineers\n- budget approved by the board\n- start dates in January",
			"- supplier audit passed\n- one minor finding on labelling\n- next audit in 2028",
		}
		for i, sum := range sums {
			b.hand("", fmt.Sprintf("Document %d.", i+1), sub("summariser", "Summarise the attached document in three bullet points", sum,
				tn("summariser", "Reading it.", fc("read_attachment", fmt.Sprintf(`{"part":%d}`, i), fmt.Sprintf(`"Document %d text"`, i)))))
		}
		add(b)
	}
	return out
}

// fwKnown lists the runs whose outcome is not their label's, each with why.
var fwKnown = map[string]string{}

func TestFrameworkRuns(t *testing.T) {
	type agg struct{ n, ok, detected, early, missed, falseK int }
	classes := map[string]*agg{}
	var order []string
	for _, r := range frameworkRuns() {
		res := playRun(r)
		got := fwOutcome(r, res)
		kind := "legit"
		if r.loop {
			kind = "loop"
		}
		k := kind + " " + r.class
		a := classes[k]
		if a == nil {
			a = &agg{}
			classes[k] = a
			order = append(order, k)
		}
		a.n++
		switch got {
		case "ok":
			a.ok++
		case "detected":
			a.detected++
		case "early":
			a.early++
		case "missed":
			a.missed++
		case "false_kill":
			a.falseK++
		}
		msg := ""
		if res.verdict != nil {
			msg = fmt.Sprintf(" at call %d (earliest %d) by %s: %s", res.at, res.earliest, res.verdict.Detector, res.verdict.Message)
		}
		t.Logf("%-34s %-10s%s", r.id, got, msg)
		want := "ok"
		if r.loop {
			want = "detected"
		}
		if w, ok := fwKnown[r.id]; ok {
			want = w
		}
		if got != want {
			t.Errorf("%s: %s, want %s", r.id, got, want)
		}
	}
	var b strings.Builder
	fmt.Fprintf(&b, "\n%-42s %3s %8s %6s %6s %11s\n", "class", "n", "detected", "early", "missed", "false kills")
	for _, k := range order {
		a := classes[k]
		fmt.Fprintf(&b, "%-42s %3d %8d %6d %6d %11d\n", k, a.n, a.detected, a.early, a.missed, a.falseK)
	}
	t.Log(b.String())
}
