package loops

import (
	"fmt"
	"strings"
	"testing"
)

// op is one step of a hand-written case: a tool call (tool set), a delegation
// (to set) or a model call (neither). The step's outcome is reported right
// after an allowed Check.
type op struct {
	agent     string
	tool      string
	args      string
	access    string // "" means read
	res       string // result (canonical JSON)
	err       string // error type; "" means success
	to        string
	task      string
	chain     []string // delegations: the agents on the delegation stack
	retryable bool
	key       []string // a write's declared key (Step.Key)
	want      string   // the detector expected to refuse this step; "" to allow it
}

func call(tool, args, res string) op { return op{tool: tool, args: args, res: res} }
func failing(tool, args, errType string) op {
	return op{tool: tool, args: args, err: errType, res: `"` + errType + `: try again"`}
}
func write(tool, args, res string) op { return op{tool: tool, args: args, access: "write", res: res} }
func hand(to, task string) op         { return op{to: to, task: task, res: `"done"`} }
func verdictOf(o op, text string) op  { o.res = marshalString(text); return o }
func within(chain ...string) func(op) op {
	return func(o op) op { o.chain = chain; return o }
}
func refused(o op, detector string) op {
	o.want = detector
	return o
}
func by(agent string, o op) op { o.agent = agent; return o }

func marshalString(s string) string { return string(marshal(s)) }

func (o op) step() *Step {
	switch {
	case o.tool != "":
		access := o.access
		if access == "" {
			access = "read"
		}
		return &Step{Kind: ToolCall, Agent: o.agent, Tool: o.tool, Args: []byte(o.args), Access: access, Retryable: o.retryable, Key: o.key}
	case o.to != "":
		return &Step{Kind: Delegation, Agent: o.agent, To: o.to, Task: o.task, Chain: o.chain}
	}
	return &Step{Kind: ModelCall, Agent: o.agent, Tokens: 100}
}

// run plays ops through a Detector made with opts and checks each verdict.
func run(t *testing.T, opts *Options, ops []op) {
	t.Helper()
	d := New(opts)
	for i, o := range ops {
		s := o.step()
		v := d.Check(s)
		got := ""
		if v != nil {
			got = v.Detector
		}
		if got != o.want {
			msg := ""
			if v != nil {
				msg = ": " + v.Message
			}
			t.Fatalf("step %d (%s %s%s): got verdict %q%s, want %q", i, o.tool, o.args, o.task, got, msg, o.want)
		}
		if v != nil {
			if v.Message == "" || v.Suggestion == "" {
				t.Errorf("step %d: verdict without message or suggestion: %+v", i, v)
			}
			continue
		}
		d.Done(s, Outcome{Error: o.err != "", ErrorType: o.err, Result: []byte(o.res)})
	}
}

type testCase struct {
	name string
	opts *Options
	ops  []op
}

func runCases(t *testing.T, cases []testCase) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) { run(t, tc.opts, tc.ops) })
	}
}

func repeatN(n int, o op) []op {
	out := make([]op, n)
	for i := range out {
		out[i] = o
	}
	return out
}

func cat(parts ...[]op) []op {
	var out []op
	for _, p := range parts {
		out = append(out, p...)
	}
	return out
}

const status = `{"order_id":"A1","status":"SHIPPED","updated_at":"2025-01-15 10:30:00"}`

func TestRepeat(t *testing.T) {
	get := call("get_status", `{"id":"A1"}`, status)
	runCases(t, []testCase{
		{"third identical call refused", nil, []op{get, get, refused(get, "repeat")}},
		{"two identical calls allowed", nil, []op{get, get, call("other", `{}`, `{"x":1}`)}},
		{"interleaved calls still count", nil, []op{
			get, call("get_customer", `{"id":"C1"}`, `{"tier":"gold"}`), get,
			call("get_customer", `{"id":"C2"}`, `{"tier":"basic"}`), refused(get, "repeat"),
		}},
		{"re-read after a write", nil, []op{
			call("read_file", `{"path":"a"}`, `"v1"`), call("read_file", `{"path":"a"}`, `"v1"`),
			write("write_file", `{"content":"v1","path":"a"}`, `{"bytes":2}`),
			call("read_file", `{"path":"a"}`, `"v1"`), call("read_file", `{"path":"a"}`, `"v1"`),
			refused(call("read_file", `{"path":"a"}`, `"v1"`), "repeat"),
		}},
		{"a failed write does not excuse a repeat", nil, []op{
			get, {tool: "save", args: `{"x":1}`, access: "write", err: "conflict", res: `"conflict"`}, get,
			refused(get, "repeat"),
		}},
		{"polling whose result changes", nil, []op{
			call("job", `{"id":"j1"}`, `{"progress":10,"state":"running"}`),
			call("job", `{"id":"j1"}`, `{"progress":20,"state":"running"}`),
			call("job", `{"id":"j1"}`, `{"progress":30,"state":"running"}`),
			call("job", `{"id":"j1"}`, `{"progress":40,"state":"running"}`),
			call("job", `{"id":"j1"}`, `{"progress":100,"state":"done"}`),
		}},
		{"polling that stops changing", nil, []op{
			call("job", `{"id":"j1"}`, `{"progress":10,"state":"running"}`),
			call("job", `{"id":"j1"}`, `{"progress":20,"state":"running"}`),
			call("job", `{"id":"j1"}`, `{"progress":20,"state":"running"}`),
			refused(call("job", `{"id":"j1"}`, `{"progress":20,"state":"running"}`), "repeat"),
		}},
		{"same non-transient error, same args", nil, []op{
			failing("create", `{"amount":"x"}`, "invalid_args"), failing("create", `{"amount":"x"}`, "invalid_args"),
			refused(failing("create", `{"amount":"x"}`, "invalid_args"), "repeat"),
		}},
		{"same error, different args", nil, []op{
			failing("read_file", `{"path":"a"}`, "not_found"), failing("read_file", `{"path":"b"}`, "not_found"),
			failing("read_file", `{"path":"c"}`, "not_found"), failing("read_file", `{"path":"d"}`, "not_found"),
			failing("read_file", `{"path":"e"}`, "not_found"), failing("read_file", `{"path":"f"}`, "not_found"),
			failing("read_file", `{"path":"g"}`, "not_found"), call("read_file", `{"path":"h"}`, `"found"`),
		}},
		{"transient errors in between do not break the streak", nil, []op{
			get, failing("get_status", `{"id":"A1"}`, "timeout"), get, refused(get, "repeat"),
		}},
		{"think tool returning nothing, same thought", nil, []op{
			call("think", `{"t":"hmm"}`, `""`), call("think", `{"t":"hmm"}`, `""`), refused(call("think", `{"t":"hmm"}`, `""`), "repeat"),
		}},
		{"other agents' reads do not count against a first read", nil, []op{
			by("r1", get), by("r2", get), by("r3", get), by("r4", get), by("r1", refused(get, "repeat")),
		}},
		{"an agent that took part is refused", nil, []op{
			by("a", get), by("b", get), by("a", refused(get, "repeat")),
		}},
		{"disabled", &Options{RepeatMax: -1, CyclePeriod: -1, StaleSteps: -1}, repeatN(6, get)},
		{"custom threshold", &Options{RepeatMax: 3, StaleSteps: -1}, []op{get, get, get, refused(get, "repeat")}},
	})
}

func TestRepeatWriteInFlight(t *testing.T) {
	// A write dispatched after the streak began and still running may change
	// what the call reads: the repeat is allowed until it completes.
	d := New(nil)
	get := func() *Step { return &Step{Tool: "get", Args: []byte(`{}`), Access: "read"} }
	for range 2 {
		s := get()
		if v := d.Check(s); v != nil {
			t.Fatalf("got %v", v)
		}
		d.Done(s, Outcome{Result: []byte(`"same"`)})
	}
	w := &Step{Tool: "put", Args: []byte(`{}`), Access: "write"}
	if v := d.Check(w); v != nil {
		t.Fatalf("write refused: %v", v)
	}
	if v := d.Check(get()); v != nil {
		t.Fatalf("read refused while a write is in flight: %v", v.Message)
	}
	d.Done(w, Outcome{Refused: true}) // the write never ran
	if v := d.Check(get()); v == nil || v.Detector != "repeat" {
		t.Fatalf("got %v, want a repeat verdict once the write was refused", v)
	}
}

func TestRetryBudget(t *testing.T) {
	to := failing("get_flight", `{"no":"CZ1"}`, "timeout")
	ok := call("get_flight", `{"no":"CZ1"}`, `{"status":"ON_TIME"}`)
	runCases(t, []testCase{
		{"fifth attempt after four transient errors refused", nil, cat(repeatN(4, to), []op{refused(to, "retry_budget")})},
		{"success within four attempts", nil, cat(repeatN(3, to), []op{ok, call("x", `{}`, `{}`)})},
		{"success restarts the budget", nil, cat(repeatN(3, to), []op{ok}, repeatN(4, to), []op{refused(to, "retry_budget")})},
		{"mixed transient types", nil, []op{
			failing("f", `{}`, "timeout"), failing("f", `{}`, "unavailable"), failing("f", `{}`, "rate_limited"),
			failing("f", `{}`, "timeout"), refused(failing("f", `{}`, "timeout"), "retry_budget"),
		}},
		{"a tool failing whatever the arguments", nil, []op{
			failing("f", `{"a":1}`, "timeout"), failing("f", `{"a":2}`, "timeout"), failing("f", `{"a":3}`, "timeout"),
			failing("f", `{"a":4}`, "timeout"), failing("f", `{"a":5}`, "timeout"), failing("f", `{"a":6}`, "timeout"),
			failing("f", `{"a":7}`, "timeout"), failing("f", `{"a":8}`, "timeout"),
			refused(failing("f", `{"a":9}`, "timeout"), "retry_budget"),
		}},
		{"another tool is not affected", nil, cat(repeatN(4, to), []op{call("other", `{}`, `{"x":1}`)})},
		{"custom budget", &Options{RetryBudget: 2}, []op{to, to, refused(to, "retry_budget")}},
		{"disabled", &Options{RetryBudget: -1, ToolRetryBudget: -1}, repeatN(12, to)},
	})
}

func TestTransient(t *testing.T) {
	for _, c := range []struct {
		typ  string
		want bool
	}{
		{"timeout", true}, {"unavailable", true}, {"rate_limited", true},
		{"invalid_args", false}, {"not_found", false}, {"forbidden", false}, {"conflict", false}, {"", false}, {"Timeout", false},
	} {
		if got := Transient(c.typ); got != c.want {
			t.Errorf("Transient(%q) = %v, want %v", c.typ, got, c.want)
		}
	}
}

func TestShortCycle(t *testing.T) {
	inv := call("get_inventory", `{"sku":"S1"}`, `{"available":27,"sku":"S1"}`)
	price := call("get_price", `{"sku":"S1"}`, `{"price":9.5,"sku":"S1"}`)
	cust := call("get_customer", `{"id":"C1"}`, `{"tier":"gold"}`)
	edit := write("edit", `{"new":"a+b","old":"a-b","path":"calc.py"}`, `{"applied":true}`)
	test := call("run_tests", `{}`, `"1 failed, 4 passed"`)
	runCases(t, []testCase{
		{"A B A B, then A", nil, []op{cust, inv, price, inv, price, refused(inv, "short_cycle")}},
		{"A B C three rounds minus one", nil, []op{inv, price, cust, inv, price, cust, refused(inv, "short_cycle")}},
		{"A B A B' (B's result changed)", &Options{RepeatMax: -1}, []op{
			inv, price, inv, call("get_price", `{"sku":"S1"}`, `{"price":9.9,"sku":"S1"}`),
			call("get_inventory", `{"sku":"S1"}`, `{"available":26,"sku":"S1"}`),
		}},
		{"same tool, two pages back and forth", nil, []op{
			call("view", `{"page":1}`, `"lines 1-10"`), call("view", `{"page":2}`, `"lines 11-20"`),
			call("view", `{"page":1}`, `"lines 1-10"`), call("view", `{"page":2}`, `"lines 11-20"`),
			refused(call("view", `{"page":1}`, `"lines 1-10"`), "short_cycle"),
		}},
		{"a write with the same effect each round", nil, []op{
			edit, test, edit, test, edit, test, refused(edit, "short_cycle"),
		}},
		{"the same write alone, three times", nil, []op{edit, edit, edit, refused(edit, "short_cycle")}},
		{"two edits undone and redone, the file read before each", nil, func() []op {
			// read, edit, test, read, undo, test: a period of six calls.
			undo := write("edit", `{"new":"a-b","old":"a+b","path":"calc.py"}`, `{"applied":true}`)
			readA := call("read_file", `{"path":"calc.py"}`, `"return a-b"`)
			readB := call("read_file", `{"path":"calc.py"}`, `"return a+b"`)
			other := call("run_tests", `{}`, `"1 failed: test_sub"`)
			round := []op{readA, edit, test, readB, undo, other}
			return cat(round, round, round, []op{refused(readA, "short_cycle")})
		}()},
		{"re-running the same test after different edits", nil, []op{
			write("edit", `{"v":1}`, `{"applied":true}`), test, write("edit", `{"v":2}`, `{"applied":true}`), test,
			write("edit", `{"v":3}`, `{"applied":true}`), test, write("edit", `{"v":4}`, `{"applied":true}`), test,
			write("edit", `{"v":5}`, `{"applied":true}`), test,
		}},
		{"a write cycle whose reads change", nil, []op{
			edit, call("run_tests", `{}`, `"3 failed"`), edit, call("run_tests", `{}`, `"2 failed"`),
			edit, call("run_tests", `{}`, `"1 failed"`), edit, call("run_tests", `{}`, `"0 failed"`),
		}},
		{"a transient error breaks the cycle", &Options{RepeatMax: -1}, []op{
			inv, price, inv, failing("get_price", `{"sku":"S1"}`, "timeout"), inv,
		}},
		{"disabled", &Options{CyclePeriod: -1, RepeatMax: -1, StaleSteps: -1}, []op{inv, price, inv, price, inv, price, inv}},
	})
}

func TestNoProgress(t *testing.T) {
	hits := func(q string, order ...string) op {
		var b strings.Builder
		b.WriteString(`{"hits":[`)
		for i, id := range order {
			if i > 0 {
				b.WriteByte(',')
			}
			fmt.Fprintf(&b, `{"id":%q,"title":"Article %s on account recovery"}`, id, id)
		}
		b.WriteString(`]}`)
		return call("search", fmt.Sprintf(`{"q":%q}`, q), b.String())
	}
	article := call("get_article", `{"id":"K1"}`, `{"body":"K1 full text: reset the second factor from the admin console","id":"K1"}`)
	runCases(t, []testCase{
		// RephraseMax off: these rewordings are "rephrase"'s to refuse first
		// (TestRephrase); no_progress must catch them too.
		{"paraphrased searches returning known documents", &Options{RephraseMax: -1}, []op{
			hits("reset 2fa", "K1", "K2", "K3"), article,
			hits("recover account", "K2", "K1", "K3"), hits("lost authenticator", "K3", "K2", "K1"),
			article, hits("disable mfa", "K1", "K3", "K2"),
			refused(hits("two factor help", "K1", "K2", "K3"), "no_progress"),
		}},
		{"paraphrased searches that keep finding something new", nil, []op{
			hits("reset 2fa", "K1", "K2"), hits("recover account", "K2", "K3"), hits("lost authenticator", "K3", "K4"),
			hits("disable mfa", "K4", "K5"), hits("two factor help", "K5", "K6"), hits("mfa reset admin", "K6", "K7"),
			article, article,
		}},
		{"a write starts over", nil, []op{
			hits("a", "K1", "K2"), hits("b", "K2", "K1"), hits("c", "K1", "K2"), hits("d", "K2", "K1"),
			write("note", `{"text":"nothing found"}`, `{"ok":true}`), hits("e", "K1", "K2"), hits("f", "K2", "K1"),
		}},
		{"a write is never refused", nil, []op{
			hits("a", "K1", "K2"), hits("b", "K2", "K1"), hits("c", "K1", "K2"), hits("d", "K2", "K1"),
			hits("e", "K1", "K2"), write("note", `{"text":"x"}`, `{"ok":true}`),
		}},
		{"think-like tool returning nothing", nil, cat(
			[]op{hits("a", "K1", "K2")},
			[]op{call("think", `{"t":"1"}`, `""`), call("think", `{"t":"2"}`, `{}`), call("think", `{"t":"3"}`, `""`),
				call("think", `{"t":"4"}`, `null`), call("think", `{"t":"5"}`, `""`), call("think", `{"t":"6"}`, `""`)},
		)},
		{"the same error for different arguments is neutral", nil, []op{
			hits("a", "K1", "K2"), failing("get", `{"p":1}`, "not_found"), failing("get", `{"p":2}`, "not_found"),
			failing("get", `{"p":3}`, "not_found"), failing("get", `{"p":4}`, "not_found"), failing("get", `{"p":5}`, "not_found"),
			failing("get", `{"p":6}`, "not_found"),
		}},
		{"results that echo the query bring nothing", &Options{RephraseMax: -1}, []op{
			call("s", `{"q":"refund rules abroad"}`, `{"hits":["K1 refund policy text"],"query":"refund rules abroad"}`),
			call("s", `{"q":"refunds for foreign orders"}`, `{"hits":["K1 refund policy text"],"query":"refunds for foreign orders"}`),
			call("s", `{"q":"international refund"}`, `{"hits":["K1 refund policy text"],"query":"international refund"}`),
			call("s", `{"q":"refund outside the country"}`, `{"hits":["K1 refund policy text"],"query":"refund outside the country"}`),
			call("s", `{"q":"cross border refund"}`, `{"hits":["K1 refund policy text"],"query":"cross border refund"}`),
			refused(call("s", `{"q":"overseas refund"}`, `{"hits":["K1 refund policy text"],"query":"overseas refund"}`), "no_progress"),
		}},
		{"a batch whose payload repeats but names a new entity each time", nil, []op{
			call("pr", `{"n":1}`, `{"description":"All checks have passed on the latest commit","n":1}`),
			call("pr", `{"n":2}`, `{"description":"All checks have passed on the latest commit","n":2}`),
			call("pr", `{"n":3}`, `{"description":"All checks have passed on the latest commit","n":3}`),
			call("pr", `{"n":4}`, `{"description":"All checks have passed on the latest commit","n":4}`),
			call("pr", `{"n":5}`, `{"description":"All checks have passed on the latest commit","n":5}`),
			call("pr", `{"n":6}`, `{"description":"All checks have passed on the latest commit","n":6}`),
		}},
		{"each agent has its own knowledge", nil, []op{
			hits("a", "K1", "K2"), by("sub", hits("a2", "K1", "K2")), by("sub", hits("a3", "K2", "K1")),
			by("sub", hits("a4", "K1", "K2")), by("sub", hits("a5", "K2", "K1")), by("sub", hits("a6", "K1", "K2")),
			hits("b", "K1", "K2"), hits("c", "K2", "K1"),
		}},
		{"small results are neutral", nil, []op{
			call("w", `{"city":"a"}`, `{"sky":"sunny"}`), call("w", `{"city":"b"}`, `{"sky":"sunny"}`),
			call("w", `{"city":"c"}`, `{"sky":"sunny"}`), call("w", `{"city":"d"}`, `{"sky":"sunny"}`),
			call("w", `{"city":"e"}`, `{"sky":"sunny"}`), call("w", `{"city":"f"}`, `{"sky":"sunny"}`),
		}},
		// A term searched for the first time learns its answer, known or
		// not; the same terms searched again learn nothing.
		{"custom window", &Options{StaleSteps: 2, RepeatMax: -1}, []op{
			hits("a", "K1", "K2"), hits("b", "K2", "K1"), hits("c", "K1", "K2"), hits("a", "K2", "K1"), hits("b", "K1", "K2"),
			refused(hits("c", "K2", "K1"), "no_progress"),
		}},
		{"a batch over new ids, the same answer for each", nil, []op{
			call("validate", `{"invoice_id":"INV-0311"}`, `{"errors":[],"note":"all required fields present","valid":true}`),
			call("validate", `{"invoice_id":"INV-0318"}`, `{"errors":[],"note":"all required fields present","valid":true}`),
			call("validate", `{"invoice_id":"INV-0325"}`, `{"errors":[],"note":"all required fields present","valid":true}`),
			call("validate", `{"invoice_id":"INV-0332"}`, `{"errors":[],"note":"all required fields present","valid":true}`),
			call("validate", `{"invoice_id":"INV-0339"}`, `{"errors":[],"note":"all required fields present","valid":true}`),
			call("validate", `{"invoice_id":"INV-0346"}`, `{"errors":[],"note":"all required fields present","valid":true}`),
		}},
		{"the same ids again learn nothing", &Options{RephraseMax: -1}, []op{
			call("validate", `{"invoice_id":"INV-0311"}`, `{"errors":[],"note":"all required fields present","valid":true}`),
			call("validate", `{"invoice_id":"INV-0318"}`, `{"errors":[],"note":"all required fields present","valid":true}`),
			call("validate", `{"invoice_id":"inv-0311"}`, `{"errors":[],"note":"all required fields present","valid":true}`),
			call("validate", `{"invoice_id":"inv-0318"}`, `{"errors":[],"note":"all required fields present","valid":true}`),
			call("validate", `{"invoice_id":"INV-0311 "}`, `{"errors":[],"note":"all required fields present","valid":true}`),
			refused(call("validate", `{"invoice_id":"INV-0318 "}`, `{"errors":[],"note":"all required fields present","valid":true}`), "no_progress"),
		}},
	})
}

func TestAmplification(t *testing.T) {
	logs := func(limit int, matches int) op {
		return call("search_logs", fmt.Sprintf(`{"limit":%d,"query":"error"}`, limit),
			fmt.Sprintf(`{"matches":%d,"note":"results truncated","top":["auth ERROR connection reset by peer"]}`, matches))
	}
	logsAt := func(offset int) op {
		return call("search_logs", fmt.Sprintf(`{"offset":%d,"query":"error"}`, offset),
			`{"note":"results truncated","top":["auth ERROR connection reset by peer"]}`)
	}
	runCases(t, []testCase{
		{"limit doubling, same answer", nil, []op{logs(20, 20), logs(40, 40), logs(80, 80), refused(logs(160, 160), "amplification")}},
		{"count that is not an echo", nil, []op{logs(20, 17), logs(40, 31), logs(80, 44), refused(logs(160, 52), "amplification")}},
		{"window with a unit", nil, []op{
			call("m", `{"window":"7d"}`, `{"top":"p99 spike during deploy"}`),
			call("m", `{"window":"30d"}`, `{"top":"p99 spike during deploy"}`),
			call("m", `{"window":"90d"}`, `{"top":"p99 spike during deploy"}`),
			refused(call("m", `{"window":"365d"}`, `{"top":"p99 spike during deploy"}`), "amplification"),
		}},
		{"window whose unit changes", nil, []op{
			call("m", `{"window":"15m"}`, `{"top":"p99 spike during deploy"}`),
			call("m", `{"window":"1h"}`, `{"top":"p99 spike during deploy"}`),
			call("m", `{"window":"6h"}`, `{"top":"p99 spike during deploy"}`),
			refused(call("m", `{"window":"2 days"}`, `{"top":"p99 spike during deploy"}`), "amplification"),
		}},
		{"relative window", nil, []op{
			call("m", `{"from":"now-15m"}`, `{"top":"p99 spike during deploy"}`),
			call("m", `{"from":"now-1h"}`, `{"top":"p99 spike during deploy"}`),
			call("m", `{"from":"now-1d"}`, `{"top":"p99 spike during deploy"}`),
			refused(call("m", `{"from":"now-7d"}`, `{"top":"p99 spike during deploy"}`), "amplification"),
		}},
		{"a date range widened backwards", nil, []op{
			call("m", `{"since":"2026-03-01","to":"2026-03-08"}`, `{"top":"p99 spike during deploy"}`),
			call("m", `{"since":"2026-02-22","to":"2026-03-08"}`, `{"top":"p99 spike during deploy"}`),
			call("m", `{"since":"2026-02-01","to":"2026-03-08"}`, `{"top":"p99 spike during deploy"}`),
			refused(call("m", `{"since":"2025-12-01","to":"2026-03-08"}`, `{"top":"p99 spike during deploy"}`), "amplification"),
		}},
		{"a listing paged back by date is not widening", nil, []op{
			call("m", `{"before":"2026-03-08T00:00:00Z"}`, `{"top":"p99 spike during deploy"}`),
			call("m", `{"before":"2026-03-01T00:00:00Z"}`, `{"top":"p99 spike during deploy"}`),
			call("m", `{"before":"2026-02-22T00:00:00Z"}`, `{"top":"p99 spike during deploy"}`),
			call("m", `{"before":"2026-02-15T00:00:00Z"}`, `{"top":"p99 spike during deploy"}`),
			call("m", `{"since":"2026-02-15","day":"2026-02-16"}`, `{"top":"p99 spike during deploy"}`),
			call("m", `{"since":"2026-02-15","day":"2026-02-10"}`, `{"top":"p99 spike during deploy"}`),
			call("m", `{"since":"2026-02-15","day":"2026-02-01"}`, `{"top":"p99 spike during deploy"}`),
			call("m", `{"since":"2026-02-15","day":"2026-01-01"}`, `{"top":"p99 spike during deploy"}`),
		}},
		{"limit spelled as a string", nil, []op{
			call("m", `{"limit":"50"}`, `{"top":"p99 spike during deploy"}`),
			call("m", `{"limit":"100"}`, `{"top":"p99 spike during deploy"}`),
			call("m", `{"limit":"200"}`, `{"top":"p99 spike during deploy"}`),
			refused(call("m", `{"limit":"400"}`, `{"top":"p99 spike during deploy"}`), "amplification"),
		}},
		{"versions and units of another kind are not widening", nil, []op{
			call("m", `{"release":"v2","size":"2kg"}`, `{"top":"p99 spike during deploy"}`),
			call("m", `{"release":"v3","size":"2kg"}`, `{"top":"p99 spike during deploy"}`),
			call("m", `{"release":"v5","size":"2kg"}`, `{"top":"p99 spike during deploy"}`),
			call("m", `{"release":"v8","size":"2kg"}`, `{"top":"p99 spike during deploy"}`),
			call("m", `{"release":"v8","size":"2000g"}`, `{"top":"p99 spike during deploy"}`),
			call("m", `{"release":"v8","size":"3h"}`, `{"top":"p99 spike during deploy"}`),
		}},
		{"a list of sources that grows", nil, []op{
			call("m", `{"src":["a"]}`, `{"top":"p99 spike during deploy"}`),
			call("m", `{"src":["a","b"]}`, `{"top":"p99 spike during deploy"}`),
			call("m", `{"src":["a","b","c"]}`, `{"top":"p99 spike during deploy"}`),
			refused(call("m", `{"src":["a","b","c","d"]}`, `{"top":"p99 spike during deploy"}`), "amplification"),
		}},
		{"widening that finds new things", nil, []op{
			call("s", `{"limit":10}`, `{"items":["a","b"]}`), call("s", `{"limit":20}`, `{"items":["a","b","c"]}`),
			call("s", `{"limit":40}`, `{"items":["a","b","c","d"]}`), call("s", `{"limit":80}`, `{"items":["a","b","c","d","e"]}`),
			call("s", `{"limit":160}`, `{"items":["a","b","c","d","e","f"]}`),
		}},
		{"consecutive numeric ids are not widening", nil, []op{
			call("get_order", `{"id":1001}`, `{"status":"SHIPPED to the customer address"}`),
			call("get_order", `{"id":1002}`, `{"status":"SHIPPED to the customer address"}`),
			call("get_order", `{"id":1003}`, `{"status":"SHIPPED to the customer address"}`),
			call("get_order", `{"id":1004}`, `{"status":"SHIPPED to the customer address"}`),
		}},
		{"small numeric ids that the result echoes are not widening", nil, []op{
			// 1, 2, 3, 5: each at least 1.5 times the last, and the result
			// names the id asked for, the rest of it alike.
			call("get_user", `{"id":1}`, `{"active":true,"id":1,"plan":"pro","role":"member"}`),
			call("get_user", `{"id":2}`, `{"active":true,"id":2,"plan":"pro","role":"member"}`),
			call("get_user", `{"id":3}`, `{"active":true,"id":3,"plan":"pro","role":"member"}`),
			call("get_user", `{"id":5}`, `{"active":true,"id":5,"plan":"pro","role":"member"}`),
			call("get_user", `{"user_id":8}`, `{"active":true,"id":8,"plan":"pro","role":"member"}`),
			call("get_user", `{"user_id":13}`, `{"active":true,"id":13,"plan":"pro","role":"member"}`),
			call("get_user", `{"user_id":21}`, `{"active":true,"id":21,"plan":"pro","role":"member"}`),
			call("get_user", `{"user_id":34}`, `{"active":true,"id":34,"plan":"pro","role":"member"}`),
		}},
		{"ids as strings that contain the last one are not widening", nil, []op{
			call("get_doc", `{"docId":"A1"}`, `{"title":"Quarterly report draft"}`),
			call("get_doc", `{"docId":"A12"}`, `{"title":"Quarterly report draft"}`),
			call("get_doc", `{"docId":"A123"}`, `{"title":"Quarterly report draft"}`),
			call("get_doc", `{"docId":"A1234"}`, `{"title":"Quarterly report draft"}`),
		}},
		{"offsets that grow are not widening", nil, []op{
			logsAt(10), logsAt(20), logsAt(40), logsAt(80),
		}},
		{"page numbers are not widening", nil, []op{
			call("list", `{"page":1}`, `{"rows":[1,2,3]}`), call("list", `{"page":2}`, `{"rows":[4,5,6]}`),
			call("list", `{"page":3}`, `{"rows":[7,8,9]}`), call("list", `{"page":4}`, `{"rows":[10,11,12]}`),
			call("list", `{"page":5}`, `{"rows":[13,14,15]}`),
		}},
		{"empty results are not amplification", nil, []op{
			call("s", `{"days":7}`, `{"hits":[]}`), call("s", `{"days":30}`, `{"hits":[]}`),
			call("s", `{"days":90}`, `{"hits":[]}`), call("s", `{"days":365}`, `{"hits":[]}`),
		}},
		{"a narrowing in between starts over", nil, []op{
			logs(20, 20), logs(40, 40), logs(80, 80), logs(10, 10), logs(20, 20), logs(40, 40),
		}},
		{"disabled", &Options{AmplifyMax: -1}, []op{logs(20, 20), logs(40, 40), logs(80, 80), logs(160, 160), logs(320, 320)}},
	})
}

func TestDelegation(t *testing.T) {
	task := hand("executor", "Write a summary of the Q1 report, under 200 words")
	runCases(t, []testCase{
		{"third hand-off refused", nil, []op{task, hand("verifier", "verify"), task, hand("verifier", "verify"), refused(task, "delegation")}},
		{"case and white space do not matter", nil, []op{
			task, hand("executor", "write a summary of the  Q1 report, under 200 words."),
			refused(hand("executor", " WRITE a summary of the Q1 report,\nunder 200 words "), "delegation"),
		}},
		{"one instruction over new material, a new answer each time", nil, []op{
			verdictOf(hand("summariser", "Summarise the attached document"), "Q3 revenue grew 12%; churn fell to 2.1%"),
			verdictOf(hand("summariser", "Summarise the attached document"), "The lease ends in March and the rent rises by 4%"),
			verdictOf(hand("summariser", "Summarise the attached document"), "An expired certificate caused 41 minutes of downtime"),
			verdictOf(hand("summariser", "Summarise the attached document"), "The board approved six new engineers for January"),
		}},
		{"the same answer reworded is no new answer", nil, []op{
			verdictOf(hand("reviewer", "Review the draft"), "REJECTED: the figures by region are missing; the tone is too informal"),
			verdictOf(hand("reviewer", "Review the draft"), "REJECTED: the figures by region are still missing; the tone is still informal"),
			refused(hand("reviewer", "Review the draft"), "delegation"),
		}},
		{"a reviewer that goes back and forth between two objections", nil, []op{
			verdictOf(hand("reviewer", "Review the draft"), "REJECTED: the figures by region are missing"),
			verdictOf(hand("reviewer", "Review the draft"), "REJECTED: the tone is too informal for the board"),
			verdictOf(hand("reviewer", "Review the draft"), "REJECTED: the figures by region are missing"),
			refused(hand("reviewer", "Review the draft"), "delegation"),
		}},
		{"distinct sub-tasks", nil, []op{
			hand("reviewer", "Review module auth"), hand("reviewer", "Review module billing"),
			hand("reviewer", "Review module search"), hand("reviewer", "Review module export"),
		}},
		{"the same task to different agents", nil, []op{
			hand("a", "check the build"), hand("b", "check the build"), hand("c", "check the build"), hand("d", "check the build"),
		}},
		{"a write by another agent in between starts over", nil, []op{
			hand("tester", "run the suite"), by("coder", write("write_file", `{"path":"x","v":1}`, `{"ok":true}`)),
			hand("tester", "run the suite"), by("coder", write("write_file", `{"path":"x","v":2}`, `{"ok":true}`)),
			hand("tester", "run the suite"), by("coder", write("write_file", `{"path":"x","v":3}`, `{"ok":true}`)),
			hand("tester", "run the suite"),
		}},
		{"the receiver's own writes do not", nil, []op{
			hand("executor", "draft it"), by("executor", write("save", `{"v":1}`, `{"ok":true}`)),
			hand("executor", "draft it"), by("executor", write("save", `{"v":2}`, `{"ok":true}`)),
			refused(hand("executor", "draft it"), "delegation"),
		}},
		{"disabled", &Options{DelegationMax: -1}, repeatN(5, task)},
	})
}

func TestDelegationRefusedAfterAll(t *testing.T) {
	d := New(nil)
	for i := range 4 {
		s := &Step{Kind: Delegation, To: "x", Task: "t"}
		if v := d.Check(s); v != nil {
			t.Fatalf("hand-off %d refused: %s", i+1, v.Message)
		}
		d.Done(s, Outcome{Refused: true}) // a later guard refused it: it never happened
	}
}

func TestModelCallsAreNeverRefused(t *testing.T) {
	d := New(nil)
	for range 1000 {
		s := &Step{Kind: ModelCall, Tokens: 1000}
		if v := d.Check(s); v != nil {
			t.Fatalf("model call refused: %v", v)
		}
		d.Done(s, Outcome{Result: []byte(`"same text"`)})
	}
}

func TestDoneWithoutCheck(t *testing.T) {
	d := New(nil)
	d.Done(nil, Outcome{})
	d.Done(&Step{Tool: "x"}, Outcome{Result: []byte(`"a"`)}) // never checked: ignored
	s := &Step{Tool: "x", Args: []byte(`{}`)}
	d.Check(s)
	d.Done(s, Outcome{Result: []byte(`"a"`)})
	d.Done(s, Outcome{Result: []byte(`"a"`)}) // twice: the second is ignored
	if v := d.Check(&Step{Tool: "x", Args: []byte(`{}`)}); v != nil {
		t.Fatalf("one result counted twice: %v", v.Message)
	}
	if d.Check(nil) != nil {
		t.Fatal("nil step refused")
	}
}

func TestOutOfOrderDone(t *testing.T) {
	// Three identical calls in flight at once, completing in reverse order:
	// none of them is refused (no result was known before dispatch), the
	// fourth is.
	d := New(nil)
	var steps []*Step
	for range 3 {
		s := &Step{Tool: "get", Args: []byte(`{"id":1}`), Access: "read"}
		if v := d.Check(s); v != nil {
			t.Fatalf("refused before any result: %v", v.Message)
		}
		steps = append(steps, s)
	}
	for i := len(steps) - 1; i >= 0; i-- {
		d.Done(steps[i], Outcome{Result: []byte(`{"v":1}`)})
	}
	if v := d.Check(&Step{Tool: "get", Args: []byte(`{"id":1}`), Access: "read"}); v == nil || v.Detector != "repeat" {
		t.Fatalf("got %v, want repeat", v)
	}
}

func TestVerdictMessage(t *testing.T) {
	d := New(nil)
	for range 2 {
		s := &Step{Tool: "get_order_status", Args: []byte(`{"order_id":"A1"}`), Access: "read"}
		d.Check(s)
		d.Done(s, Outcome{Result: []byte(status)})
	}
	v := d.Check(&Step{Tool: "get_order_status", Args: []byte(`{"order_id":"A1"}`), Access: "read"})
	if v == nil {
		t.Fatal("not refused")
	}
	for _, want := range []string{"get_order_status", `{"order_id":"A1"}`, "2 times", "SHIPPED"} {
		if !strings.Contains(v.Message, want) {
			t.Errorf("message %q does not mention %q", v.Message, want)
		}
	}
}

func TestBoundedMemory(t *testing.T) {
	opts := &Options{MaxKeys: 512, MaxUnits: 1024, MaxAgents: 8}
	d := New(opts)
	bound := d.retainedBound()
	for i := range 10000 {
		agent := fmt.Sprintf("agent-%d", i%50)
		s := &Step{
			Agent:  agent,
			Tool:   fmt.Sprintf("tool-%d", i%300),
			Args:   fmt.Appendf(nil, `{"id":%d,"q":"query %d"}`, i, i),
			Access: []string{"read", "read", "read", "write"}[i%4],
		}
		if v := d.Check(s); v != nil {
			t.Fatalf("call %d refused: %s", i, v.Message)
		}
		d.Done(s, Outcome{Result: fmt.Appendf(nil, `{"id":%d,"lines":"line %d\nline %d\nline %d"}`, i, i, i+1, i+2)})
		if i%5 == 0 {
			ds := &Step{Kind: Delegation, Agent: agent, To: "sub", Task: fmt.Sprintf("task %d", i)}
			d.Check(ds)
			d.Done(ds, Outcome{Result: []byte(`"ok"`)})
		}
		if n := d.retained(); n > bound {
			t.Fatalf("after %d calls: %d entries retained, bound %d", i+1, n, bound)
		}
	}
	if n := d.calls.len(); n > opts.MaxKeys {
		t.Errorf("%d call keys retained, MaxKeys %d", n, opts.MaxKeys)
	}
	if n := d.seen.len(); n > opts.MaxUnits {
		t.Errorf("%d result pieces retained, MaxUnits %d", n, opts.MaxUnits)
	}
	if n := d.agents.len(); n > opts.MaxAgents {
		t.Errorf("%d agents retained, MaxAgents %d", n, opts.MaxAgents)
	}
	t.Logf("retained %d entries (bound %d)", d.retained(), bound)
}

func TestConcurrent(t *testing.T) {
	d := New(nil)
	done := make(chan struct{})
	for g := range 8 {
		go func() {
			defer func() { done <- struct{}{} }()
			for i := range 500 {
				s := &Step{Agent: fmt.Sprintf("a%d", g), Tool: "t", Args: fmt.Appendf(nil, `{"i":%d}`, i%7), Access: "read"}
				if d.Check(s) == nil {
					d.Done(s, Outcome{Result: fmt.Appendf(nil, `{"v":%d}`, i%3)})
				}
				m := &Step{Kind: ModelCall, Agent: s.Agent}
				d.Check(m)
				d.Done(m, Outcome{Result: []byte(`"x"`)})
			}
		}()
	}
	for range 8 {
		<-done
	}
}

func TestNoisyRepeat(t *testing.T) {
	order := func(meta string) op {
		return call("get_order", `{"id":"W1"}`, `{"id":"W1","items":[{"sku":"A","qty":1},{"sku":"B","qty":2}],"status":"PROCESSING",`+meta+`}`)
	}
	runCases(t, []testCase{
		{"request ids, timestamps and latencies change, nothing else", nil, []op{
			order(`"request_id":"req_1a2b3c4d","fetched_at":"2025-01-07T22:32:47Z","latency_ms":518`),
			order(`"request_id":"req_9f8e7d6c","fetched_at":"2025-01-07T22:33:18Z","latency_ms":90`),
			refused(order(`"request_id":"req_55aa44bb","fetched_at":"2025-01-07T22:34:02Z","latency_ms":77`), "repeat"),
		}},
		{"an HTTP answer whose exchange headers change, its body not", nil, []op{
			call("http_get", `{"url":"https://x.example/s"}`, `{"status":200,"headers":{"Date":"Tue, 10 Mar 2026 08:07:13 GMT","Age":"12","CF-Ray":"8a1f2c3d4e5f6a7b-FRA","X-RateLimit-Remaining":"59","Content-Type":"application/json"},"body":{"indicator":"minor","api":"degraded"}}`),
			call("http_get", `{"url":"https://x.example/s"}`, `{"status":200,"headers":{"Date":"Tue, 10 Mar 2026 08:08:20 GMT","Age":"79","CF-Ray":"8a1f2d9e0b1c2d3e-FRA","X-RateLimit-Remaining":"58","Content-Type":"application/json"},"body":{"indicator":"minor","api":"degraded"}}`),
			refused(call("http_get", `{"url":"https://x.example/s"}`, `{"status":200,"headers":{"Date":"Tue, 10 Mar 2026 08:09:41 GMT","Age":"160","CF-Ray":"8a1f2f0a1b2c3d4e-FRA","X-RateLimit-Remaining":"57","Content-Type":"application/json"},"body":{"indicator":"minor","api":"degraded"}}`), "repeat"),
		}},
		{"a check's own time under a one-word key", nil, []op{
			order(`"checked":"2025-01-07T22:32:47Z","meta":{"lastFetched":"2025-01-07T22:32:47.120Z"}`),
			order(`"checked":"2025-01-07T22:33:18Z","meta":{"lastFetched":"2025-01-07T22:33:18.004Z"}`),
			refused(order(`"checked":"2025-01-07T22:34:02Z","meta":{"lastFetched":"2025-01-07T22:34:02.310Z"}`), "repeat"),
		}},
		{"a count under such a key, and a time something happened, are the answer's", nil, []op{
			order(`"generated":12,"updated":"2025-01-07T22:32:47Z"`),
			order(`"generated":12,"updated":"2025-01-07T22:33:18Z"`),
			order(`"generated":12,"updated":"2025-01-07T22:34:02Z"`),
			order(`"generated":14,"updated":"2025-01-07T22:34:02Z"`),
			order(`"generated":16,"updated":"2025-01-07T22:34:02Z"`),
		}},
		{"a JSON document handed over as a string", nil, []op{
			call("job", `{"id":"etl"}`, marshalString(`{"state": "failed", "error": "disk quota exceeded on /data", "request_id": "9f8e7d6c5b4a", "latency_ms": 31}`)),
			call("job", `{"id":"etl"}`, marshalString(`{"latency_ms": 48, "state": "failed", "request_id": "1a2b3c4d5e6f", "error": "disk quota exceeded on /data"}`)),
			refused(call("job", `{"id":"etl"}`, marshalString(`{"state": "failed", "error": "disk quota exceeded on /data", "request_id": "0a1b2c3d4e5f", "latency_ms": 65}`)), "repeat"),
		}},
		{"a JSON document as a string whose substance moves", nil, []op{
			call("job", `{"id":"etl"}`, marshalString(`{"state": "running", "done": 10, "request_id": "9f8e7d6c5b4a"}`)),
			call("job", `{"id":"etl"}`, marshalString(`{"state": "running", "done": 20, "request_id": "1a2b3c4d5e6f"}`)),
			call("job", `{"id":"etl"}`, marshalString(`{"state": "running", "done": 30, "request_id": "0a1b2c3d4e5f"}`)),
			call("job", `{"id":"etl"}`, marshalString(`{"state": "done", "done": 40, "request_id": "0a1b2c3d4e50"}`)),
		}},
		{"a date that is not under headers is the answer's", nil, []op{
			call("next_slot", `{"room":"B2"}`, `{"room":"B2","date":"Tue, 10 Mar 2026 08:07:13 GMT","age":"12"}`),
			call("next_slot", `{"room":"B2"}`, `{"room":"B2","date":"Tue, 10 Mar 2026 09:07:13 GMT","age":"13"}`),
			call("next_slot", `{"room":"B2"}`, `{"room":"B2","date":"Tue, 10 Mar 2026 10:07:13 GMT","age":"14"}`),
		}},
		{"a mailbox's newest message, an alert sent again: its Date is the answer's", nil, []op{
			call("latest_mail", `{"folder":"alerts"}`, `{"headers":{"From":"monitor@x.example","To":"ops@x.example","Subject":"disk /data above 90%","Date":"Tue, 10 Mar 2026 08:05:00 +0000"},"body":"disk /data is 91% full on db-1"}`),
			call("latest_mail", `{"folder":"alerts"}`, `{"headers":{"From":"monitor@x.example","To":"ops@x.example","Subject":"disk /data above 90%","Date":"Tue, 10 Mar 2026 08:10:00 +0000"},"body":"disk /data is 91% full on db-1"}`),
			call("latest_mail", `{"folder":"alerts"}`, `{"headers":{"From":"monitor@x.example","To":"ops@x.example","Subject":"disk /data above 90%","Date":"Tue, 10 Mar 2026 08:15:00 +0000"},"body":"disk /data is 91% full on db-1"}`),
		}},
		{"camelCase and nested metadata, a list in another order", nil, []op{
			order(`"meta":{"traceId":"af29d115ef24bd62","servedBy":"api-3","cache":"HIT"}`),
			call("get_order", `{"id":"W1"}`, `{"id":"W1","items":[{"qty":2,"sku":"B"},{"qty":1,"sku":"A"}],"meta":{"cache":"MISS","servedBy":"api-9","traceId":"440e2b4fda9c025a"},"status":"PROCESSING"}`),
			refused(order(`"meta":{"traceId":"babb7fbb0a76c196","servedBy":"api-1","cache":"HIT"}`), "repeat"),
		}},
		{"a nonce wrapped around a text", nil, []op{
			call("fetch", `{"url":"u"}`, `"<<<CONTENT id=\"6718e99530189f0d\">>>\nstatus: unpaid\n<<<END id=\"6718e99530189f0d\">>>"`),
			call("fetch", `{"url":"u"}`, `"<<<CONTENT id=\"d0cc8d5263d60044\">>>\nstatus: unpaid\n<<<END id=\"d0cc8d5263d60044\">>>"`),
			refused(call("fetch", `{"url":"u"}`, `"<<<CONTENT id=\"00c70d2659a92c2a\">>>\nstatus: unpaid\n<<<END id=\"00c70d2659a92c2a\">>>"`), "repeat"),
		}},
		{"the substance moves: polling", nil, []op{
			call("job", `{"id":"j"}`, `{"progress":31,"request_id":"req_1","state":"running"}`),
			call("job", `{"id":"j"}`, `{"progress":32,"request_id":"req_2","state":"running"}`),
			call("job", `{"id":"j"}`, `{"progress":36,"request_id":"req_3","state":"running"}`),
			call("job", `{"id":"j"}`, `{"progress":51,"request_id":"req_4","state":"running"}`),
		}},
		{"values swapped between list elements are a change", nil, []op{
			call("stages", `{"run":1}`, `{"stages":[{"name":"build","status":"passed"},{"name":"test","status":"queued"}]}`),
			call("stages", `{"run":1}`, `{"stages":[{"name":"build","status":"queued"},{"name":"test","status":"passed"}]}`),
			call("stages", `{"run":1}`, `{"stages":[{"name":"build","status":"passed"},{"name":"test","status":"queued"}]}`),
		}},
		{"a value that is only an id or a time is what it names", nil, []op{
			call("head", `{"repo":"r"}`, `{"sha":"3f2a9c1d7e","updated_at":"2025-01-07T22:32:47Z"}`),
			call("head", `{"repo":"r"}`, `{"sha":"9b8c7d6e5f","updated_at":"2025-01-07T22:40:00Z"}`),
			call("head", `{"repo":"r"}`, `{"sha":"0a1b2c3d4e","updated_at":"2025-01-07T22:51:00Z"}`),
		}},
	})
}

func TestSameError(t *testing.T) {
	date := func(d string) op {
		return failingWith("search_flights", `{"date":"`+d+`","from":"PVG"}`, "invalid_args", "date '"+d+"' is not in the format YYYY-MM-DD")
	}
	pay := func(paid int) op {
		return failingWith("book", fmt.Sprintf(`{"amount":%d,"user":"u1"}`, paid), "invalid_args",
			fmt.Sprintf("payment amount does not add up, total price is 564, but paid %d [req %08x]", paid, paid*7919))
	}
	untyped := func(d string) op {
		return failingWith("book_room", `{"date":"`+d+`","room":"B2"}`, "tool_error", "Error: invalid date '"+d+"', expected YYYY-MM-DD")
	}
	missing := func(p string) op {
		return failingWith("read_note", `{"path":"`+p+`"}`, "tool_error", "Error: invalid path or file '"+p+"' not found")
	}
	refund := func(p string) op {
		return failingWith("refund_payment", `{"payment_id":"`+p+`"}`, "tool_error", "Error: refund of payment "+p+" rejected: the payment must be settled first")
	}
	cancel := func(o string) op {
		return failingWith("cancel_order", `{"order_id":"`+o+`"}`, "tool_error", "Invalid state: order "+o+" has already shipped")
	}
	runCases(t, []testCase{
		// An upstream MCP tool's error result says nothing of its class:
		// its message does.
		{"an untyped error that complains of a value's form", nil, []op{
			untyped("03/12/2026"), untyped("12-03-2026"), untyped("2026/12/03"), refused(untyped("3 Dec 2026"), "same_error"),
		}},
		{"an untyped error that says not found", nil, []op{
			missing("notes/a.md"), missing("notes/b.md"), missing("notes/c.md"), missing("notes/d.md"), missing("notes/e.md"),
		}},
		// A batch meets an item's state for one item after another.
		{"untyped errors that say an item's state refuses the call", nil, []op{
			refund("P-1001"), refund("P-1002"), refund("P-1003"), refund("P-1004"), refund("P-1005"),
			cancel("O-1"), cancel("O-2"), cancel("O-3"), cancel("O-4"), cancel("O-5"),
		}},
		{"an untyped error fixed on the third try", nil, []op{
			untyped("03/12/2026"), untyped("12-03-2026"), call("book_room", `{"date":"2026-12-03","room":"B2"}`, `{"booked":true}`),
			untyped("04/12/2026"), untyped("12-04-2026"),
		}},
		{"new values, the same complaint echoing them", nil, []op{
			date("09-10-2025"), date("10/09/2025"), call("rate", `{"q":"KRW"}`, `{"rate":1345.3}`), date("2025-10-09T00:00"),
			refused(date("2025年10月9日"), "same_error"),
		}},
		{"numbers and request ids in the message are masked", nil, []op{
			pay(474), call("think", `{"t":"recompute"}`, `""`), pay(504), pay(524), refused(pay(406), "same_error"),
		}},
		{"a fix on the third try", nil, []op{
			date("09-10-2025"), date("10/09/2025"), call("search_flights", `{"date":"2025-10-09","from":"PVG"}`, `{"flights":[]}`),
			date("11/09/2025"), date("12/09/2025"), date("13/09/2025"),
		}},
		{"different complaints", nil, []op{
			failingWith("book", `{"a":1}`, "invalid_args", "flight HAT265 has no seats left"),
			failingWith("book", `{"a":2}`, "invalid_args", "payment amount does not add up"),
			failingWith("book", `{"a":3}`, "invalid_args", "date of birth does not match the profile"),
			failingWith("book", `{"a":4}`, "invalid_args", "the cabin class is not offered"),
		}},
		{"not_found rules a candidate out", nil, []op{
			failingWith("find", `{"email":"a@x.io"}`, "not_found", "no user with email a@x.io"),
			failingWith("find", `{"email":"b@x.io"}`, "not_found", "no user with email b@x.io"),
			failingWith("find", `{"email":"c@x.io"}`, "not_found", "no user with email c@x.io"),
			failingWith("find", `{"email":"d@x.io"}`, "not_found", "no user with email d@x.io"),
		}},
		{"a successful write starts over", nil, []op{
			date("a1"), date("b2"), date("c3"), write("set_locale", `{"l":"zh"}`, `{"ok":true}`), date("d4"), date("e5"), date("f6"),
		}},
		{"a conflict streak ends when the agent reads", nil, []op{
			failingWith("put", `{"v":1}`, "conflict", "version 1 is stale"), call("get", `{"k":"x"}`, `{"v":3}`),
			failingWith("put", `{"v":3}`, "conflict", "version 3 is stale"), call("get", `{"k":"x"}`, `{"v":5}`),
			failingWith("put", `{"v":5}`, "conflict", "version 5 is stale"), call("get", `{"k":"x"}`, `{"v":7}`),
			failingWith("put", `{"v":7}`, "conflict", "version 7 is stale"),
		}},
		{"another agent's first call", nil, []op{
			date("a1"), date("b2"), date("c3"), by("sub", date("d4")),
		}},
		{"disabled", &Options{ErrorStreak: -1}, []op{date("a1"), date("b2"), date("c3"), date("d4"), date("e5")}},
	})
}

func failingWith(tool, args, errType, msg string) op {
	return op{tool: tool, args: args, err: errType, res: marshalString(msg)}
}

func TestStaleWrite(t *testing.T) {
	upd := func(changes string) op {
		o := failingWith("update_contact", `{"changes":`+changes+`,"contact_id":"C-1","expected_version":10}`, "conflict", "version mismatch (expected 10, current 13)")
		o.access = "write"
		return o
	}
	runCases(t, []testCase{
		{"the same version after two conflicts, the payload tweaked", nil, []op{
			upd(`{"phone":"+1 415 555 0187"}`), upd(`{"phone":"+14155550187"}`), refused(upd(`{"title":"VP Sales"}`), "stale_write"),
		}},
		{"a read of the entity in between", nil, []op{
			upd(`{"phone":"1"}`), upd(`{"phone":"2"}`), call("get_contact", `{"contact_id":"C-1"}`, `{"version":13}`), upd(`{"phone":"3"}`),
		}},
		{"a read of another entity does not count", nil, []op{
			upd(`{"phone":"1"}`), upd(`{"phone":"2"}`), call("get_contact", `{"contact_id":"C-2"}`, `{"version":4}`), refused(upd(`{"phone":"3"}`), "stale_write"),
		}},
		{"another agent's first write", nil, []op{
			upd(`{"phone":"1"}`), upd(`{"phone":"2"}`), by("sub", upd(`{"phone":"3"}`)),
		}},
		{"a new version is a new precondition", nil, []op{
			upd(`{"phone":"1"}`), upd(`{"phone":"2"}`),
			{tool: "update_contact", access: "write", args: `{"changes":{"phone":"3"},"contact_id":"C-1","expected_version":13}`, res: `{"version":14}`},
		}},
		{"disabled", &Options{StaleWriteMax: -1, ErrorStreak: -1}, []op{upd(`{"a":1}`), upd(`{"a":2}`), upd(`{"a":3}`), upd(`{"a":4}`)}},
	})
}

func TestRephrase(t *testing.T) {
	search := func(q string, ids ...string) op {
		var hits []string
		for i, id := range ids {
			hits = append(hits, fmt.Sprintf(`{"id":%q,"score":0.%d,"title":"Billing settings %s"}`, id, 9-i, id))
		}
		return call("search_kb", fmt.Sprintf(`{"limit":5,"query":%q}`, q),
			fmt.Sprintf(`{"hits":[%s],"query":%q,"search_id":"%x"}`, strings.Join(hits, ","), q, len(q)*7919))
	}
	about := func(q, topic string) op {
		return call("search_kb", fmt.Sprintf(`{"limit":5,"query":%q}`, q),
			fmt.Sprintf(`{"hits":[{"id":"K1","title":"%s: steps"},{"id":"K2","title":"%s: FAQ"}],"query":%q}`, topic, topic, q))
	}
	zh := func(q string) op { // Chinese documents, found by their help pages' addresses
		return call("search_web", fmt.Sprintf(`{"limit":5,"query":%q}`, q),
			fmt.Sprintf(`{"query":%q,"results":[{"url":"https://help.example.com/kb/kb-4295","title":"账单设置：模板"},{"url":"https://help.example.com/kb/kb-8334","title":"账单设置：术语表"}]}`, q))
	}
	runCases(t, []testCase{
		{"rewordings that bring back the same documents", nil, []op{
			search("change the billing address", "K1", "K2", "K3"), search("modify the payment address", "K3", "K1", "K2"),
			search("update billing address on a plan", "K2", "K3", "K1"), refused(search("where to edit the invoice address", "K1", "K2", "K3"), "rephrase"),
		}},
		{"in Chinese, the query echoed without a space", nil, []op{
			search("如何修改订阅的账单地址", "K1", "K2"), search("发票上的地址在哪里修改", "K2", "K1"), search("修改发票地址", "K1", "K2"),
			refused(search("订阅账单地址怎么改", "K1", "K2"), "rephrase"),
		}},
		{"an English rewording among Chinese ones, documents that name few of their words: the streak goes on", nil, []op{
			zh("如何修改订阅的账单地址"), zh("发票上的地址在哪里修改"), zh("modify the payment address mid-cycle"),
			zh("修改发票地址"), refused(zh("订阅账单地址怎么改"), "rephrase"),
		}},
		{"unrelated fresh lookups in between do not hide it", nil, []op{
			search("change the billing address", "K1", "K2"), call("get_weather", `{"city":"Oslo"}`, `{"city":"Oslo","temp_c":3}`),
			search("modify the payment address", "K2", "K1"), call("get_weather", `{"city":"Lima"}`, `{"city":"Lima","temp_c":21}`),
			search("update billing address on a plan", "K1", "K2"), refused(search("edit the invoice address", "K1", "K2"), "rephrase"),
		}},
		{"each rewording brings a new document", nil, []op{
			search("change the billing address", "K1", "K2"), search("modify the payment address", "K2", "K3"),
			search("update billing address on a plan", "K3", "K4"), search("edit the invoice address", "K4", "K5"),
			search("billing address for recurring payments", "K5", "K6"),
		}},
		{"known documents, but a different set each time", nil, []op{
			search("retry backoff", "K1", "K2", "K3"), search("backoff jitter", "K2"), search("max retries", "K1"),
			search("retry cap", "K3"), search("sleep between retries", "K1", "K3"),
		}},
		{"identifiers are not rewordings", nil, []op{
			call("get_user", `{"name":"Ana Sousa"}`, `{"plan":"pro","seats":3,"status":"active"}`),
			call("get_user", `{"name":"Ana Sousa"}`, `{"plan":"pro","seats":3,"status":"active"}`),
			call("read_file", `{"path":"src/a b.py"}`, `"print(1)\nprint(2)\nprint(3)\nprint(4)"`),
			call("bash", `{"command":"git status"}`, `"On branch main, nothing to commit, working tree clean"`),
			call("bash", `{"command":"git diff"}`, `"On branch main, nothing to commit, working tree clean"`),
			call("bash", `{"command":"git log"}`, `"On branch main, nothing to commit, working tree clean"`),
		}},
		{"two-word rewordings under input, a framework's one argument", nil, []op{
			call("buscar", `{"input":"política reembolsos"}`, `{"r":["Política de devoluciones","Plazos de reembolso"]}`),
			call("buscar", `{"input":"devolución dinero"}`, `{"r":["Plazos de reembolso","Política de devoluciones"]}`),
			call("buscar", `{"input":"reembolso compra"}`, `{"r":["Política de devoluciones","Plazos de reembolso"]}`),
			refused(call("buscar", `{"input":"devolver pedido"}`, `{"r":["Política de devoluciones","Plazos de reembolso"]}`), "rephrase"),
		}},
		{"the same lookup respelled: case, white space, a number as a string", nil, []op{
			call("stock", `{"qty":2,"site":"FRA","sku":"ab-1200"}`, `{"note":"supplier delay, next inbound shipment pending","sku":"AB-1200"}`),
			call("stock", `{"qty":"2","site":"FRA","sku":"AB-1200"}`, `{"note":"supplier delay, next inbound shipment pending","sku":"AB-1200"}`),
			call("stock", `{"qty":"02","site":"fra","sku":"AB-1200 "}`, `{"note":"supplier delay, next inbound shipment pending","sku":"AB-1200"}`),
			refused(call("stock", `{"qty":2,"site":"Fra","sku":"Ab-1200"}`, `{"note":"supplier delay, next inbound shipment pending","sku":"AB-1200"}`), "rephrase"),
		}},
		{"respellings whose answers change, and two tools with one argument shape", nil, []op{
			call("stock", `{"sku":"ab-1200"}`, `{"note":"supplier delay, next inbound shipment pending","available":0}`),
			call("stock", `{"sku":"AB-1200"}`, `{"note":"supplier delay, next inbound shipment pending","available":0}`),
			call("stock", `{"sku":"Ab-1200"}`, `{"note":"supplier delay, next inbound shipment arrived","available":7}`),
			call("stock", `{"sku":"AB-1200"}`, `{"note":"supplier delay, next inbound shipment arrived","available":7}`),
			call("stock_eu", `{"sku":"ab-1200"}`, `{"note":"supplier delay, next inbound shipment arrived","available":7}`),
			call("stock", `{"sku":"ab-1200 "}`, `{"note":"supplier delay, next inbound shipment arrived","available":7,"reserved":2}`),
		}},
		{"a write starts over", nil, []op{
			search("change the billing address", "K1", "K2"), search("modify the payment address", "K2", "K1"),
			search("update billing address on a plan", "K1", "K2"), write("note", `{"text":"x"}`, `{"ok":true}`),
			search("edit the invoice address", "K1", "K2"),
		}},
		// Different texts given to one tool that answers alike are other
		// questions, not rewordings: they share no word (cut to five
		// letters) with each other or with the answer.
		{"a classifier over different texts, one answer", nil, []op{
			call("sentiment", `{"input":"love it"}`, `"Sentiment: POSITIVE. The text expresses a favourable opinion."`),
			call("sentiment", `{"input":"works great"}`, `"Sentiment: POSITIVE. The text expresses a favourable opinion."`),
			call("sentiment", `{"input":"fast shipping"}`, `"Sentiment: POSITIVE. The text expresses a favourable opinion."`),
			call("sentiment", `{"input":"highly recommended"}`, `"Sentiment: POSITIVE. The text expresses a favourable opinion."`),
			call("sentiment", `{"input":"excellent quality"}`, `"Sentiment: POSITIVE. The text expresses a favourable opinion."`),
			call("sentiment", `{"input":"very comfortable"}`, `"Sentiment: POSITIVE. The text expresses a favourable opinion."`),
		}},
		{"different questions to a knowledge base that has none of them", nil, []op{
			call("handbook", `{"query":"parking rules for visitors"}`, `{"message":"No matching handbook sections were found.","results":[]}`),
			call("handbook", `{"query":"vacation days carry over"}`, `{"message":"No matching handbook sections were found.","results":[]}`),
			call("handbook", `{"query":"reimbursement limit for chairs"}`, `{"message":"No matching handbook sections were found.","results":[]}`),
			call("handbook", `{"query":"who approves conference travel"}`, `{"message":"No matching handbook sections were found.","results":[]}`),
			call("handbook", `{"query":"dress code at the gala"}`, `{"message":"No matching handbook sections were found.","results":[]}`),
		}},
		{"texts that share a name, a verdict on each", nil, []op{
			call("route", `{"text":"Acme router keeps rebooting every night"}`, `{"note":"assigned to the default hardware queue","team":"hardware-support"}`),
			call("route", `{"text":"Acme router wifi drops at noon"}`, `{"note":"assigned to the default hardware queue","team":"hardware-support"}`),
			call("route", `{"text":"firmware update bricked my Acme router"}`, `{"note":"assigned to the default hardware queue","team":"hardware-support"}`),
			call("route", `{"text":"Acme router fan is very loud"}`, `{"note":"assigned to the default hardware queue","team":"hardware-support"}`),
			call("route", `{"text":"Acme router lights blink orange"}`, `{"note":"assigned to the default hardware queue","team":"hardware-support"}`),
		}},
		// Texts tied only by the word of their label, which the verdict
		// names: each is another question.
		{"tickets that each say billing, routed to billing", nil, []op{
			call("route", `{"text":"Billing: I was charged twice for order 1001"}`, `{"note":"assigned to the billing queue, first reply within one business day","team":"billing"}`),
			call("route", `{"text":"billing portal shows the wrong plan"}`, `{"note":"assigned to the billing queue, first reply within one business day","team":"billing"}`),
			call("route", `{"text":"Need a billing receipt for March"}`, `{"note":"assigned to the billing queue, first reply within one business day","team":"billing"}`),
			call("route", `{"text":"billing email goes to my old address"}`, `{"note":"assigned to the billing queue, first reply within one business day","team":"billing"}`),
			call("route", `{"text":"stop billing my second seat"}`, `{"note":"assigned to the billing queue, first reply within one business day","team":"billing"}`),
		}},
		{"requests that each ask for a refund, classified as refund", nil, []op{
			call("classify", `{"input":"Refund please, the item arrived broken"}`, `"Category: refund. Confidence high. Route to the refunds desk."`),
			call("classify", `{"input":"I want a refund for my late order"}`, `"Category: refund. Confidence high. Route to the refunds desk."`),
			call("classify", `{"input":"refund the shipping fee"}`, `"Category: refund. Confidence high. Route to the refunds desk."`),
			call("classify", `{"input":"Where is my refund?"}`, `"Category: refund. Confidence high. Route to the refunds desk."`),
			call("classify", `{"input":"refund to a different card"}`, `"Category: refund. Confidence high. Route to the refunds desk."`),
			// A word in passing with an earlier one of them ("order").
			call("classify", `{"input":"refund status for order"}`, `"Category: refund. Confidence high. Route to the refunds desk."`),
			call("classify", `{"input":"partial refund possible?"}`, `"Category: refund. Confidence high. Route to the refunds desk."`),
			call("classify", `{"input":"refund not received yet"}`, `"Category: refund. Confidence high. Route to the refunds desk."`),
		}},
		// The documents found are about what was asked (their titles share
		// its words), as a search's are.
		{"rewordings across languages that keep a name", nil, []op{
			about("reset Okta MFA for a locked out user", "Reset Okta MFA"), about("Okta MFA zurücksetzen gesperrter Benutzer", "Reset Okta MFA"),
			about("réinitialiser MFA Okta utilisateur bloqué", "Reset Okta MFA"),
			refused(about("restablecer MFA de Okta usuario bloqueado", "Reset Okta MFA"), "rephrase"),
		}},
		{"a compound and its parts: Rechnungsadresse, Rechnung", nil, []op{
			about("Wie ändere ich die Rechnungsadresse", "Rechnungsadresse ändern"), about("Rechnungsadresse im Kundenkonto ändern", "Rechnungsadresse ändern"),
			about("Adresse auf der Rechnung aktualisieren", "Rechnungsadresse ändern"),
			refused(about("neue Rechnungsadresse hinterlegen", "Rechnungsadresse ändern"), "rephrase"),
		}},
		{"a router that echoes each text, one verdict", nil, []op{
			call("route", `{"text":"Acme router keeps rebooting every night"}`, `{"team":"hardware","ticket":{"text":"Acme router keeps rebooting every night"}}`),
			call("route", `{"text":"Acme router wifi drops at noon"}`, `{"team":"hardware","ticket":{"text":"Acme router wifi drops at noon"}}`),
			call("route", `{"text":"firmware update bricked my Acme router"}`, `{"team":"hardware","ticket":{"text":"firmware update bricked my Acme router"}}`),
			call("route", `{"text":"Acme router fan is very loud"}`, `{"team":"hardware","ticket":{"text":"Acme router fan is very loud"}}`),
			call("route", `{"text":"Acme router lights blink orange"}`, `{"team":"hardware","ticket":{"text":"Acme router lights blink orange"}}`),
		}},
		{"disabled", &Options{RephraseMax: -1, StaleSteps: -1}, []op{
			search("change the billing address", "K1"), search("modify the payment address", "K1"),
			search("update billing address on a plan", "K1"), search("edit the invoice address", "K1"),
		}},
	})
}

func TestDelegationCycle(t *testing.T) {
	runCases(t, []testCase{
		{"back to the agent that handed it out", nil, []op{
			hand("travel_agent", "Book the Berlin offsite"),
			refused(by("travel_agent", within("orchestrator", "travel_agent")(hand("orchestrator", "Book the Berlin offsite"))), "delegation_cycle"),
		}},
		{"three agents round", nil, []op{
			by("research_lead", within("orchestrator", "research_lead")(hand("analyst", "Price table for the board"))),
			refused(by("analyst", within("orchestrator", "research_lead", "analyst")(hand("orchestrator", "Board deck pricing"))), "delegation_cycle"),
		}},
		{"to itself, below the root", nil, []op{
			refused(by("analyst", within("lead", "analyst")(hand("analyst", "a sub-topic"))), "delegation_cycle"),
		}},
		{"the same agent on other branches", nil, []op{
			by("desk_na", within("lead", "market", "desk_na")(hand("source_finder", "news on North America"))),
			by("desk_jp", within("lead", "market", "desk_jp")(hand("source_finder", "news on Japan"))),
			by("desk_eu", within("lead", "players", "desk_eu")(hand("source_finder", "reports on Europe"))),
		}},
		{"the root handing to itself first", nil, []op{hand("main", "plan the trip")}},
	})
}

func TestRewordedDelegation(t *testing.T) {
	n := 0
	round := func(task, verdict string) []op {
		n++ // the verifier's task differs each round (the same one a third time is "delegation"'s exact repeat)
		return []op{
			by("planner", hand("executor", task)),
			by("planner", verdictOf(hand("verifier", fmt.Sprintf("Check draft %d", n)), verdict)),
		}
	}
	const reject = "The draft does not pass: include a timeline with timestamps; quantify customer impact"
	runCases(t, []testCase{
		{"reworded tasks, the same rejection", nil, cat(
			round("Write the postmortem for the checkout outage", reject),
			round("Compose the outage retrospective for the checkout service", reject),
			[]op{refused(by("planner", hand("executor", "Draft the incident review for the checkout downtime")), "delegation")},
		)},
		{"the same points, paraphrased", nil, cat(
			round("Write a summary of the Q3 report, under 200 words", "Still failing review: no margin comparison with Q2; the main cost driver is not named"),
			round("Give me a tight Q3 financials summary, no more than 200 words", "REJECT: compare the margin with Q2; say what drove costs"),
			[]op{refused(by("planner", hand("executor", "Prepare the Q3 report summary; keep it brief")), "delegation")},
		)},
		{"fewer points each round", nil, cat(
			round("Document the checkout outage", "Rejected. Please fix: the root cause is not stated; the timeline has no timestamps; follow-ups have no owners"),
			round("Revise the checkout outage postmortem: state the root cause; add timestamps", "Rejected. Please fix: the root cause is not stated; add timestamps to the timeline"),
			round("Revise the checkout outage postmortem: state the root cause", "Rejected. Please fix: name the root cause"),
			round("Revise the checkout outage postmortem once more", "ACCEPT: all criteria met"),
		)},
		{"new points each round", nil, cat(
			round("Write the onboarding guide", "Rejected: the escalation matrix is missing; several links are broken"),
			round("Revise the onboarding guide", "Rejected: the tooling section is too long; there is no glossary"),
			round("Revise the onboarding guide again", "Rejected: refund limits are not spelled out; screenshots are missing"),
			round("Revise the onboarding guide one last time", "Accepted"),
		)},
		{"a task naming a new number is a new task", nil, cat(
			round("Fix the failing test, attempt 1", reject), round("Fix the failing test, attempt 2", reject),
			round("Fix the failing test, attempt 3", reject),
		)},
		{"reports that say no are not rejections", nil, cat(
			round("Review module auth for security issues", "no issues found"),
			round("Review module billing for security issues", "no issues found"),
			round("Review module search for security issues", "no issues found"),
		)},
		{"a write by another agent in between starts over", nil, cat(
			round("Write the postmortem for the checkout outage", reject),
			[]op{by("coder", write("save", `{"v":1}`, `{"ok":true}`))},
			round("Compose the outage retrospective for the checkout service", reject),
			[]op{by("coder", write("save", `{"v":2}`, `{"ok":true}`))},
			round("Draft the incident review for the checkout downtime", reject),
		)},
	})
}

func TestRetryableFailuresAreTransient(t *testing.T) {
	flaky := func(errType string) op {
		return op{tool: "get_quote", args: `{"sku":"A"}`, err: errType, res: `"503 temporarily overloaded, retry in a moment"`}
	}
	retryable := func(o op) op { o.retryable = true; return o }
	runCases(t, []testCase{
		{"a retryable tool's untyped failures count against the retry budget", nil, cat(
			repeatN(4, retryable(flaky("tool_error"))), []op{refused(retryable(flaky("tool_error")), "retry_budget")},
		)},
		{"the same failures of another tool are a repeat", nil, cat(
			repeatN(2, flaky("tool_error")), []op{refused(flaky("tool_error"), "repeat")},
		)},
		{"a retryable tool's permanent failures are a repeat", nil, cat(
			repeatN(2, retryable(flaky("invalid_args"))), []op{refused(retryable(flaky("invalid_args")), "repeat")},
		)},
	})
}

// TestFoldArgs: a read's arguments respelled (case, white space around a
// value, a number as a string or in another form, a key renamed, a list
// reordered, an instant in another zone, a span in other units) ask one
// question of its tool; other values and another tool ask another.
func TestFoldArgs(t *testing.T) {
	same := [][2]string{
		{`{"qty":2,"sku":"ab-1200"}`, `{"qty":"2","sku":"AB-1200"}`},
		{`{"qty":2,"sku":"ab-1200"}`, `{"qty":"02","sku":" Ab-1200 "}`},
		{`{"n":1000}`, `{"n":"1e3"}`},
		{`{"n":2.5}`, `{"n":"2.50"}`},
		{`{"n":-7}`, `{"n":"-007"}`},
		{`{"n":0}`, `{"n":"000"}`},
		{`{"f":{"ids":["X1","x2"]}}`, `{"f":{"ids":["x1","X2"]}}`},
		// Code of several words, its words in another order, spaced, quoted
		// or bracketed otherwise.
		{`{"sql":"SELECT id, total FROM orders WHERE status = 'late' AND region = 'EU'"}`, `{"sql":"select total, id from orders where (region='EU') and (status = 'late')"}`},
		{`{"command":"go test ./cache -count=1 -v"}`, `{"command":"go test -v -count=1 ./cache"}`},
		// Other options, the same operands.
		{`{"command":"go test ./cache -run TestEvict -v"}`, `{"command":"go test ./cache -run TestEvict -race --count=1"}`},
		// An option's value joined to it is its value after a space.
		{`{"command":"go test ./cache -run=TestEvict"}`, `{"command":"go test ./cache -run TestEvict"}`},
		// A path with a slash at its end, or ./ at its start.
		{`{"command":"ls src"}`, `{"command":"ls src/"}`},
		{`{"command":"ls src"}`, `{"command":"ls ./src/"}`},
		{`{"command":"grep -rn TODO src"}`, `{"command":"grep -rn TODO ./src"}`},
		// The same values under other names, a list in another order.
		{`{"table":"fact_orders","where":"day = '2026-12-01'"}`, `{"filter":"day='2026-12-01'","table":"fact_orders"}`},
		{`{"spreadsheet_id":"1xq","range":"Q4!A1:D20"}`, `{"range":"'Q4'!A1:D20","spreadsheetId":"1xq"}`},
		{`{"attendees":["ana@x.io","li@x.io"]}`, `{"attendees":["li@x.io","ana@x.io"]}`},
		// One instant in other zones, one span in other units, one path.
		{`{"start":"2026-12-09T13:00:00+01:00"}`, `{"start":"2026-12-09T12:00:00Z"}`},
		{`{"start":"2026-12-09T13:00:00+01:00"}`, `{"start":"2026-12-09T07:00:00.000-05:00"}`},
		{`{"duration":"45m"}`, `{"duration":"PT45M"}`},
		{`{"duration":"45m"}`, `{"duration":"0.75h"}`},
		{`{"duration":"45m"}`, `{"duration":"45 minutes"}`},
		{`{"duration":"1h30m"}`, `{"duration":"5400s"}`},
		{`{"path":"internal/api/handler.go"}`, `{"path":"./internal/api/handler.go"}`},
	}
	for _, p := range same {
		if foldArgs("t", []byte(p[0])) != foldArgs("t", []byte(p[1])) {
			t.Errorf("%s and %s: two questions, want one", p[0], p[1])
		}
	}
	differ := [][2]string{
		{`{"qty":2,"sku":"ab-1200"}`, `{"qty":3,"sku":"ab-1200"}`},
		{`{"qty":2,"sku":"ab-1200"}`, `{"qty":2,"sku":"ab-1201"}`},
		{`{"a":"x\"y"}`, `{"a":"x\"z"}`},
		{`{"a":"2"}`, `{"a":"\"2\""}`},
		{`{"a":["1","2"]}`, `{"a":["12"]}`},
		{`{"n":-7}`, `{"n":7}`},
		{`{"n":2.5}`, `{"n":25}`},
		{`{"sql":"SELECT id FROM orders WHERE total > 100"}`, `{"sql":"SELECT id FROM orders WHERE total < 100"}`},
		{`{"sql":"SELECT id FROM orders WHERE total > 100"}`, `{"sql":"SELECT id FROM orders WHERE total > 1000"}`},
		{`{"sql":"SELECT id FROM orders WHERE status = 'late'"}`, `{"sql":"SELECT id FROM orders WHERE status = 'lost'"}`},
		{`{"sql":"SELECT a.id FROM t"}`, `{"sql":"SELECT a id FROM t"}`},
		{`{"command":"go test ./cache -timeout 30s"}`, `{"command":"go test ./cache -timeout 60s"}`},
		{`{"command":"cat a/b.txt"}`, `{"command":"cat b/a.txt"}`},
		{`{"command":"go test ./cache -run TestEvict"}`, `{"command":"go test ./cache -run TestPin"}`},
		{`{"command":"kubectl get pods -n prod"}`, `{"command":"kubectl get pods -n staging"}`},
		{`{"command":"tail -n 5 app.log"}`, `{"command":"tail -n 50 app.log"}`},
		{`{"sql":"SELECT a - 5 FROM t"}`, `{"sql":"SELECT a FROM t"}`},
		{`{"command":"grep -rn foo src"}`, `{"command":"grep -rn fo osrc"}`},
		// A value joined to its option names what is asked about.
		{`{"command":"gh pr list --repo=acme/api"}`, `{"command":"gh pr list --repo=acme/web"}`},
		{`{"command":"kubectl get pods --namespace=prod"}`, `{"command":"kubectl get pods --namespace=staging"}`},
		{`{"command":"go test ./cache -run=TestEvict"}`, `{"command":"go test ./cache -run=TestPin"}`},
		{`{"command":"git log --since=2026-11-01"}`, `{"command":"git log --since=2026-12-01"}`},
		{`{"command":"ls /"}`, `{"command":"ls"}`},
		{`{"command":"cat ../a.txt"}`, `{"command":"cat a.txt"}`},
		{`{"command":"ls ./"}`, `{"command":"ls"}`},
		{`{"sql":"SELECT a / b FROM t"}`, `{"sql":"SELECT a b FROM t"}`},
		// A bare number is no span; a wall time without a zone is as written.
		{`{"duration":"45m"}`, `{"duration":"45"}`},
		{`{"duration":"45m"}`, `{"duration":"45s"}`},
		{`{"start":"2026-12-09T13:00:00"}`, `{"start":"2026-12-09T12:00:00Z"}`},
		{`{"start":"2026-12-09T13:00:00+01:00"}`, `{"start":"2026-12-09T13:00:00Z"}`},
		{`{"path":"/"}`, `{"path":"."}`},
		{`{"a":"x","b":"y"}`, `{"a":"x","b":"x"}`},
		{`{"a":true}`, `{"a":false}`},
	}
	for _, p := range differ {
		if foldArgs("t", []byte(p[0])) == foldArgs("t", []byte(p[1])) {
			t.Errorf("%s and %s: one question, want two", p[0], p[1])
		}
	}
	if foldArgs("get_order", []byte(`{"id":"7"}`)) == foldArgs("get_invoice", []byte(`{"id":"7"}`)) {
		t.Error("two tools, one question")
	}
}

// TestOptionValues: one command asked of each repository in turn, the
// repository named in an option's joined value (--repo=acme/svc-03), each
// answering alike, is a batch over new repositories, as it is when the
// value follows a space: no asking is refused.
func TestOptionValues(t *testing.T) {
	none := `{"exit_code":0,"output":"no open pull requests in this repository\n"}`
	var eq, sp []op
	for i := range 6 {
		eq = append(eq, call("run_command", fmt.Sprintf(`{"command":"gh pr list --repo=acme/svc-%02d --state=open"}`, i), none))
		sp = append(sp, call("run_command", fmt.Sprintf(`{"command":"gh pr list --repo acme/svc-%02d --state open"}`, i), none))
	}
	// A number joined to an option that names an identifier names the
	// thing asked about, as after a space: ten jobs described alike are
	// ten questions. A count joined to its option is still a setting.
	done := `"state: COMPLETED\nexit_code: 0\nattempts: 1\nqueue: nightly-etl"`
	var ids, counts []op
	for i := range 6 {
		ids = append(ids, call("shell", fmt.Sprintf(`{"command":"batchctl describe --job-id=%d"}`, 55120+i*7), done))
		counts = append(counts, call("shell", fmt.Sprintf(`{"command":"batchctl describe --job-id=55120 --retries=%d"}`, i+1), done))
	}
	counts[3] = refused(counts[3], "rephrase")
	counts = counts[:4]
	// A switch joined to its option says how, as the option alone does.
	nochange := `"No changes. Your infrastructure matches the configuration."`
	switches := []op{
		call("terraform", `{"args":"plan -input=false","chdir":"envs/prod"}`, nochange),
		call("terraform", `{"args":"plan -input=false -refresh=true","chdir":"envs/prod"}`, nochange),
		call("terraform", `{"args":"plan -lock=false -input=false","chdir":"envs/prod"}`, nochange),
		refused(call("terraform", `{"args":"plan -input=FALSE -parallelism=20","chdir":"envs/prod"}`, nochange), "rephrase"),
	}
	runCases(t, []testCase{
		{"values joined to their options", nil, eq},
		{"values after a space", nil, sp},
		{"numbers joined to an option that names an identifier", nil, ids},
		{"counts joined to their options", nil, counts},
		{"switches joined to their options", nil, switches},
	})
}

// TestRephraseRecords: askings that share no word (synonyms only) and find
// the same records, each time, are rewordings: the fourth is refused. The
// same one text for each (a label, a routing of several fields, a report of
// several lines) is no list of records, and texts given to a classifier go
// on; so do synonyms whose records change, and texts handed over to be
// judged (tickets) that get the same suggested records.
func TestRephraseRecords(t *testing.T) {
	docs := `{"hits":[{"title":"Managing your plan","url":"https://help.example.com/a/311"},{"title":"Billing cycles explained","url":"https://help.example.com/a/107"},{"title":"Refunds and credits","url":"https://help.example.com/a/452"}]}`
	asks := []string{"terminate membership plan", "end automatic renewal", "quit paying monthly fee", "unsubscribe premium tier"}
	ask := func(i int, res string) op { return call("kb_lookup", fmt.Sprintf(`{"q":%q}`, asks[i]), res) }
	routed := `{"intent":"account","team":"accounts-queue","priority":"normal"}`
	report := `{"report":"0 spelling errors\n0 grammar issues\n0 style notes\nreadability: fine"}`
	macros := `{"suggestions":[{"macro":"Refund request","body":"We have issued your refund."},{"macro":"Shipping delay","body":"Your parcel is on its way."},{"macro":"Order status","body":"Here is your order status."}]}`
	runCases(t, []testCase{
		{"synonyms, the same documents", nil, []op{ask(0, docs), ask(1, docs), ask(2, docs), refused(ask(3, docs), "rephrase")}},
		{"synonyms, other documents each time", nil, []op{
			ask(0, docs),
			ask(1, strings.ReplaceAll(docs, "/a/", "/b/")),
			ask(2, strings.ReplaceAll(docs, "/a/", "/c/")),
			ask(3, strings.ReplaceAll(docs, "/a/", "/d/")),
		}},
		{"texts routed alike", nil, []op{ask(0, routed), ask(1, routed), ask(2, routed), ask(3, routed)}},
		{"texts checked alike, a report of several lines", nil, []op{ask(0, report), ask(1, report), ask(2, report), ask(3, report)}},
		// A ticket handed to a tool that suggests replies finds nothing:
		// tickets that share no word, each given the same three macros,
		// are four tickets.
		{"tickets given the same suggestions", nil, []op{
			call("suggest_macros", `{"ticket_text":"parcel never arrived, want money back"}`, macros),
			call("suggest_macros", `{"ticket_text":"package late again, please refund me"}`, macros),
			call("suggest_macros", `{"ticket_text":"where is my order? it has been two weeks"}`, macros),
			call("suggest_macros", `{"ticket_text":"courier lost the box"}`, macros),
			call("suggest_macros", `{"ticket_text":"delivery slipped; reimburse shipping"}`, macros),
		}},
	})
}

// TestNumericAnswers: an answer of numbers (rows of ids and amounts) is
// judged as one of text is: the same rows to the same query asked again in
// other spellings, twice, bring nothing new, and the next asking is refused;
// new rows each time go on. A count alone is too small to judge as
// progress, but the same count to the same query respelled is the question
// going round, refused as the rows are; the same count to other queries
// (another status each time) goes on.
func TestNumericAnswers(t *testing.T) {
	rows := `{"rows":[{"id":1037,"total":21.5},{"id":1038,"total":28.5},{"id":1039,"total":35.5}]}`
	asks := []string{
		`{"sql":"SELECT id, total FROM orders WHERE status = 'late'"}`,
		`{"sql":"SELECT total, id FROM orders WHERE status = 'late'"}`,
		`{"sql":"select id, total from orders where status='late'"}`,
		`{"sql":"SELECT id,total FROM orders WHERE (status = 'late')"}`,
	}
	runCases(t, []testCase{
		{"the same rows, the query respelled", nil, []op{
			call("query", asks[0], rows), call("query", asks[1], rows), call("query", asks[2], rows),
			refused(call("query", asks[3], rows), "rephrase"),
		}},
		{"new rows each time", nil, []op{
			call("query", asks[0], rows),
			call("query", asks[1], `{"rows":[{"id":1040,"total":42.5}]}`),
			call("query", asks[2], `{"rows":[{"id":1041,"total":49.5}]}`),
			call("query", asks[3], `{"rows":[{"id":1042,"total":56.5}]}`),
		}},
		{"a count, the query respelled", nil, []op{
			call("query", asks[0], `{"n":3}`), call("query", asks[1], `{"n":3}`),
			call("query", asks[2], `{"n":3}`), refused(call("query", asks[3], `{"n":3}`), "rephrase"),
		}},
		{"the same count to other queries", nil, []op{
			call("query", asks[0], `{"n":3}`), call("query", strings.ReplaceAll(asks[1], "late", "lost"), `{"n":3}`),
			call("query", strings.ReplaceAll(asks[2], "late", "held"), `{"n":3}`), call("query", strings.ReplaceAll(asks[3], "late", "open"), `{"n":3}`),
		}},
	})
}

// TestMovedReadings: one host's metrics polled again and again, each
// reading within a range already shown but never the same answer twice, is
// a poll whose state moves: no poll is refused. A status that flaps back to
// answers it gave before brings nothing new, and is refused as before.
func TestMovedReadings(t *testing.T) {
	metrics := func(i int) string {
		return fmt.Sprintf(`{"cpu":%d,"mem":%d,"lag_s":%d,"conns":%d,"qps":%d,"threads":64,"open_files":%d,"queue":%d,"pool_mb":4096,"max_conns":1000}`,
			40+i%4, 60+(i/2)%3, i%3, 100+(i*3)%4, 300+(i*7)%5, 1024+i%2, (i/3)%2)
	}
	var polls, flaps []op
	for i := range 16 {
		polls = append(polls, call("get_metrics", `{"host":"db-1"}`, metrics(i)))
	}
	for i := range 6 {
		flaps = append(flaps, call("get_metrics", `{"host":"db-1"}`, metrics(i%2)))
	}
	flaps = append(flaps, refused(call("get_metrics", `{"host":"db-1"}`, metrics(0)), "no_progress"))
	runCases(t, []testCase{
		{"readings moving within their range", nil, polls},
		{"a status flapping back", nil, flaps},
	})
}

// TestAnswersRememberedOnlyWhenRepeated: a call's answer as a whole is
// remembered among what its agent was shown (for "moved" readings) only
// once the call is made again; a batch of calls made once each (new ids,
// the same answer) adds one entry a call there, its new question, not two,
// so that a request of many distinct calls fills its bounded memory no
// faster than before the rule (RSS as served, docs/BENCHMARKS.md).
func TestAnswersRememberedOnlyWhenRepeated(t *testing.T) {
	d := New(nil)
	n := 200
	for i := range n {
		s := call("lookup", fmt.Sprintf(`{"id":"item-%d"}`, i), `{"status":"not found in any of the regional catalogues"}`).step()
		if v := d.Check(s); v != nil {
			t.Fatalf("call %d refused: %s", i, v.Message)
		}
		d.Done(s, Outcome{Result: []byte(`{"status":"not found in any of the regional catalogues"}`)})
	}
	if got := d.seen.len(); got > n+8 {
		t.Errorf("%d calls made once each left %d entries of what was shown, want at most %d (one a call)", n, got, n+8)
	}
}

// TestEmbeddedJSON: a JSON string whose text is an object or a list is
// read as that document, escapes undone; anything else is a text.
func TestEmbeddedJSON(t *testing.T) {
	var scratch []byte
	for _, c := range []struct{ in, want string }{
		{`"{\"a\": \"x\\ny\"}"`, `{"a": "x\ny"}`},
		{`" [1, 2]"`, `[1, 2]`},
		{`"{\"é\":\"\u00e9\ud83d\ude00\"}"`, "{\"é\":\"é\U0001F600\"}"},
	} {
		got, ok := embeddedJSON([]byte(c.in), &scratch)
		if !ok || string(got) != c.want {
			t.Errorf("embeddedJSON(%s) = %q, %v; want %q", c.in, got, ok, c.want)
		}
	}
	for _, in := range []string{`"plain text"`, `{"a":1}`, `"{\"a\":"`, `"{bad \q}"`, `"{\u12"`} {
		if got, ok := embeddedJSON([]byte(in), &scratch); ok && in != `"{\"a\":"` {
			t.Errorf("embeddedJSON(%s) = %q, want no document", in, got)
		}
	}
}

// Lazy makes the tree's detector once and keeps it until Release; after
// it, Get gives none (a step that reaches the guard then is refused as its
// request stands, not judged afresh).
func TestLazyRelease(t *testing.T) {
	var l Lazy
	d := l.Get(nil)
	if l.Get(nil) != d || l.Released() {
		t.Fatal("the detector is not kept before Release")
	}
	l.Release()
	if !l.Released() {
		t.Fatal("Released is false after Release")
	}
	if a := l.Get(nil); a != nil {
		t.Errorf("after Release, Get gave %p (the kept one %p); want none", a, d)
	}
}

// TestDurationsMasked: a span of time inside a line of output (kubectl's
// ages, a run's time) is new each time it is asked, as a latency_ms field
// is; the rest of the line is the answer. A countdown is progress, and a
// value that is nothing but a span is a field's.
func TestDurationsMasked(t *testing.T) {
	for _, c := range []struct {
		a, b string
		same bool
	}{
		{"worker-7d9f   0/1   CrashLoopBackOff   7 (55s ago)   25m", "worker-7d9f   0/1   CrashLoopBackOff   7 (1m30s ago)   26m", true},
		{"ok  \texample.com/app/cache\t0.37s", "ok  \texample.com/app/cache\t0.41s", true},
		{"exit status 0 (plan took 11.2s)", "exit status 0 (plan took 12.1s)", true},
		{"Up 3 minutes ago", "Up 4 minutes ago", true},
		{"1 passed in 350ms", "1 passed in 1h2m3s", true},
		{"Deploying, ETA 4m", "Deploying, ETA 3m", false},
		{"deploying: 4m remaining", "deploying: 3m remaining", false},
		{"45m", "30m", false},
		{"5mb used", "6mb used", false},
		{"k8s 3 nodes", "k8s 4 nodes", false},
	} {
		if got := maskedHash([]byte(c.a)) == maskedHash([]byte(c.b)); got != c.same {
			t.Errorf("%q and %q: same %v, want %v", c.a, c.b, got, c.same)
		}
	}
	pods := func(age, ago string) string {
		return marshalString("NAME            READY   STATUS             RESTARTS       AGE\nworker-7d9f-x   0/1     CrashLoopBackOff   7 (" + ago + " ago)   " + age + "\n")
	}
	eta := func(m int) string { return marshalString(fmt.Sprintf("rollout: 2 of 3 replicas updated, ETA %dm", m)) }
	runCases(t, []testCase{
		{"a pod whose ages alone move", nil, []op{
			call("kubectl", `{"command":"get pods -l app=worker"}`, pods("25m", "55s")),
			call("kubectl", `{"command":"get pods -l app=worker"}`, pods("26m", "1m55s")),
			refused(call("kubectl", `{"command":"get pods -l app=worker"}`, pods("27m", "2m55s")), "repeat"),
		}},
		{"a countdown", nil, []op{
			call("rollout_status", `{"name":"api"}`, eta(4)),
			call("rollout_status", `{"name":"api"}`, eta(3)),
			call("rollout_status", `{"name":"api"}`, eta(2)),
			call("rollout_status", `{"name":"api"}`, eta(1)),
		}},
	})
}

// TestDurationKeys: a job polled whose answer changes only in how long it
// has waited (queued_duration, elapsed) is the same answer; its state
// moving is progress.
func TestDurationKeys(t *testing.T) {
	pending := func(d float64) string {
		return fmt.Sprintf(`{"id":88190,"jobs":[{"name":"build","runner":null,"status":"pending"}],"queued_duration":%g,"status":"pending"}`, d)
	}
	moving := func(st string, d float64) string {
		return fmt.Sprintf(`{"id":88190,"duration":%g,"status":%q}`, d, st)
	}
	runCases(t, []testCase{
		{"only the wait grows", nil, []op{
			call("pipeline_get", `{"id":88190}`, pending(312.4)),
			call("pipeline_get", `{"id":88190}`, pending(374.1)),
			refused(call("pipeline_get", `{"id":88190}`, pending(435.8)), "repeat"),
		}},
		{"the state moves", nil, []op{
			call("pipeline_get", `{"id":88190}`, moving("pending", 12)),
			call("pipeline_get", `{"id":88190}`, moving("running", 70)),
			call("pipeline_get", `{"id":88190}`, moving("success", 131)),
		}},
	})
}

// TestWritesThatChangeNothing: a read whose answer stays the same after
// each of the last writes to one target (Next clicked, described in other
// words, the page the same) is refused after the next such write, as a
// third identical read is. Writes to other targets (a field filled, a file
// edited otherwise), or an answer that moves, start over.
func TestWritesThatChangeNothing(t *testing.T) {
	page := func(alert string) string {
		return marshalString("- heading \"Step 4 of 6\"\n- textbox \"VAT number\" [ref=e20]: DE 123\n" + alert)
	}
	bad := page("- alert: Please enter a valid VAT number")
	click := func(el string) op { return write("form_click", `{"element":"`+el+`","ref":"e41"}`, `"ok"`) }
	snap := func(res string) op { return call("form_snapshot", `{}`, res) }
	edit := func(i int) op {
		return write("edit_file", fmt.Sprintf(`{"new":"limit %d","old":"limit","path":"cache.go"}`, i), `{"ok":true}`)
	}
	fail := marshalString("--- FAIL: TestEvict\n    evict_test.go:31: 3 entries left, want 2\nFAIL")
	keyed := func(v int) op {
		o := write("write_file", fmt.Sprintf(`{"content":"v%d","path":"fix.py"}`, v), `{"bytes":12}`)
		o.key = []string{"path"}
		return o
	}
	runCases(t, []testCase{
		{"Next clicked, the page the same", nil, []op{
			snap(page("")),
			click("Next"), snap(bad),
			click("Next button"), snap(bad),
			click("the Next button at the bottom"), snap(bad),
			click("Continue"), refused(snap(bad), "repeat"),
		}},
		{"a field filled in between", nil, []op{
			snap(page("")),
			click("Next"), snap(bad),
			click("Next button"), snap(bad),
			click("Continue"), snap(bad),
			write("form_fill", `{"ref":"e20","text":"DE123456789"}`, `"ok"`),
			click("Next"), snap(bad),
		}},
		{"a file edited otherwise each time", nil, []op{
			call("run_tests", `{"pkg":"./cache"}`, fail),
			edit(1), call("run_tests", `{"pkg":"./cache"}`, fail),
			edit(2), call("run_tests", `{"pkg":"./cache"}`, fail),
			edit(3), call("run_tests", `{"pkg":"./cache"}`, fail),
			edit(4), call("run_tests", `{"pkg":"./cache"}`, fail),
		}},
		// A tool that declares its key (the file's path) names its target
		// by it; edits of other contents there are other tries, each
		// tested in turn (the project's own traces: a coder, a team).
		{"a keyed file written otherwise each time", nil, []op{
			call("run_suite", `{}`, `{"failed":1,"passed":41}`),
			keyed(1), call("run_suite", `{}`, `{"failed":1,"passed":41}`),
			keyed(2), call("run_suite", `{}`, `{"failed":1,"passed":41}`),
			keyed(3), call("run_suite", `{}`, `{"failed":1,"passed":41}`),
			keyed(4), call("run_suite", `{}`, `{"failed":0,"passed":42}`),
		}},
		{"a keyed file written alike each time", nil, []op{ // the same write: a cycle
			call("run_suite", `{}`, `{"failed":1,"passed":41}`),
			keyed(1), call("run_suite", `{}`, `{"failed":1,"passed":41}`),
			keyed(1), call("run_suite", `{}`, `{"failed":1,"passed":41}`),
			keyed(1), refused(call("run_suite", `{}`, `{"failed":1,"passed":41}`), "short_cycle"),
		}},
		{"the page moves", nil, []op{
			snap(page("")),
			click("Load more"), snap(page("- listitem 1")),
			click("Load more"), snap(page("- listitem 2")),
			click("Load more"), snap(page("- listitem 3")),
			click("Load more"), snap(page("- listitem 4")),
		}},
	})
}

// TestSearchSyntax: a query in a search engine's syntax (from:, subject:,
// is:) is reworded as prose is: respelled, finding the same threads each
// time, its fourth asking is refused; searches that find other threads go
// on, and SQL or a shell pipeline under a query key is still code.
func TestSearchSyntax(t *testing.T) {
	threads := `{"threads":[{"from":"billing@acme-cloud.io","id":"18c01","snippet":"Your November invoice INV-88213 is attached"},{"from":"billing@acme-cloud.io","id":"18c02","snippet":"Reminder: invoice INV-88213 is due"}]}`
	search := func(q, res string) op { return call("mail_search", fmt.Sprintf(`{"q":%q}`, q), res) }
	other := func(i int) string {
		return fmt.Sprintf(`{"threads":[{"from":"ops@acme.io","id":"18c%d","snippet":"Weekly report %d"}]}`, 10+i, i)
	}
	runCases(t, []testCase{
		{"respelled, the same threads", nil, []op{
			search("from:billing@acme-cloud.io invoice november", threads),
			search("invoice from:billing@acme-cloud.io after:2026/11/01", threads),
			search("subject:(invoice) from:(billing@acme-cloud.io)", threads),
			refused(search("from:billing@acme-cloud.io subject:invoice newer_than:60d", threads), "rephrase"),
		}},
		{"other threads each time", nil, []op{
			search("from:ops@acme.io report week 1", other(1)),
			search("from:ops@acme.io report week 2", other(2)),
			search("from:ops@acme.io report week 3", other(3)),
			search("from:ops@acme.io report week 4", other(4)),
		}},
	})
	for _, q := range []string{"SELECT id FROM t WHERE a = 1", "logs | grep error:", "http://example.com/a b", "a::date b"} {
		if searchSyntax([]byte(q)) {
			t.Errorf("%q read as a search engine's query", q)
		}
	}
	if !searchSyntax([]byte("level:error service:api")) {
		t.Error("level:error service:api not read as a search engine's query")
	}
}
