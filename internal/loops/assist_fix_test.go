package loops

import (
	"fmt"
	"testing"
)

// The assistants probe's fixes, each tested on its own.

// TestStartsIn: a span after "in" and a verb of what is to come ("starts
// in 9m", "Retrying in 30s") is a time to go, which moving is news; after
// a past or a count ("passed in 350ms", "Ran 12 tests in 0.41s") it is a
// time taken, masked.
func TestStartsIn(t *testing.T) {
	for _, c := range []struct {
		a, b string
		same bool
	}{
		{"window dp-7: maintenance opens in 40m", "window dp-7: maintenance opens in 31m", false},
		{"upstream busy, Retrying in 30s", "upstream busy, Retrying in 20s", false},
		{"session token expires in 5m", "session token expires in 4m", false},
		{"rate limited; try again in 2m", "rate limited; try again in 1m", false},
		{"=== 4 passed in 350ms ===", "=== 4 passed in 410ms ===", true},
		{"Ran 12 tests in 0.41s\nOK", "Ran 12 tests in 0.39s\nOK", true},
		{"Done in 3.2s, 4 files", "Done in 2.9s, 4 files", true},
	} {
		if got := maskedHash([]byte(c.a)) == maskedHash([]byte(c.b)); got != c.same {
			t.Errorf("%q and %q: same %v, want %v", c.a, c.b, got, c.same)
		}
	}
}

// TestClockMasked: a span written as a clock in a line of output ("running
// for 00:03:10") is masked as "running for 3m10s" is; a time of day
// without seconds, a clock that is a part of a whole, a clock that is the
// whole value and a time to go stay.
func TestClockMasked(t *testing.T) {
	for _, c := range []struct {
		a, b string
		same bool
	}{
		{"Kernel busy, cell [4] running for 00:03:10\nlast output: epoch 2", "Kernel busy, cell [4] running for 00:04:40\nlast output: epoch 2", true},
		{"job 7781 queued, waited 1:02:03 so far", "job 7781 queued, waited 1:05:33 so far", true},
		{"ffmpeg time=00:03:10.52 speed=1.2x", "ffmpeg time=00:03:40.10 speed=1.2x", true},
		{"Departs 18:40 from gate 14", "Departs 18:55 from gate 14", false},
		{"playing track 3, 00:03:10 / 00:45:00", "playing track 3, 00:05:10 / 00:45:00", false},
		{"position 00:03:10 of 00:45:00", "position 00:05:10 of 00:45:00", false},
		{"00:03:10", "00:04:10", false},
		{"launch window closes in 00:09:00", "launch window closes in 00:06:00", false},
	} {
		if got := maskedHash([]byte(c.a)) == maskedHash([]byte(c.b)); got != c.same {
			t.Errorf("%q and %q: same %v, want %v", c.a, c.b, got, c.same)
		}
	}
}

// TestClockTimeOfDay: a clock within a date or before a zone is a time of
// day, the answer's: an alert mailed again says so in its Date.
func TestClockTimeOfDay(t *testing.T) {
	for _, c := range []struct{ a, b string }{
		{"Date: Tue, 10 Mar 2026 08:05:00 +0000, disk full", "Date: Tue, 10 Mar 2026 08:10:00 +0000, disk full"},
		{"Dec 3 14:02:11 db-1 disk full", "Dec 3 14:07:11 db-1 disk full"},
		{"sent 08:05:00 UTC: disk full", "sent 08:10:00 UTC: disk full"},
	} {
		if maskedHash([]byte(c.a)) == maskedHash([]byte(c.b)) {
			t.Errorf("%q and %q: the same, want two times of day", c.a, c.b)
		}
	}
}

// TestFoldMidnight: a day and its midnight, without a zone or in UTC, ask
// one question; a midnight in another zone, or another time of the day,
// asks another.
func TestFoldMidnight(t *testing.T) {
	day := `{"check_in":"2026-12-18","guests":2}`
	for _, c := range []struct {
		args string
		same bool
	}{
		{`{"check_in":"2026-12-18T00:00:00Z","guests":2}`, true},
		{`{"check_in":"2026-12-18T00:00:00","guests":2}`, true},
		{`{"check_in":"2026-12-18T00:00","guests":2}`, true},
		{`{"check_in":"2026-12-18 00:00:00.000+00:00","guests":2}`, true},
		{`{"check_in":"2026-12-18T01:00:00+01:00","guests":2}`, true},
		{`{"check_in":"2026-12-18T00:00:00+01:00","guests":2}`, false},
		{`{"check_in":"2026-12-18T09:00:00Z","guests":2}`, false},
		{`{"check_in":"2026-12-19","guests":2}`, false},
	} {
		if got := foldArgs("stay", []byte(day)) == foldArgs("stay", []byte(c.args)); got != c.same {
			t.Errorf("%s and %s: one question %v, want %v", day, c.args, got, c.same)
		}
	}
}

// TestSameTextRespelled: one free text asked again word for word with its
// other arguments renamed or respelled is the question asked again, though
// its answer, one text, names none of its words; another text that gets
// the same answer is another question.
func TestSameTextRespelled(t *testing.T) {
	none := `{"available":false,"message":"Nothing free on those nights; the nearest openings are in January."}`
	runCases(t, []testCase{
		{"a venue's name, its dates respelled", nil, []op{
			call("venue_slots", `{"from":"2027-03-04","to":"2027-03-06","venue":"Teatro do Bairro Alto"}`, none),
			call("venue_slots", `{"from":"2027-03-04T00:00:00Z","to":"2027-03-06T00:00:00Z","venue":"Teatro do Bairro Alto"}`, none),
			call("venue_slots", `{"start":"2027-03-04","end":"2027-03-06","venue":"Teatro do Bairro Alto"}`, none),
			refused(call("venue_slots", `{"from":"2027-03-04T00:00","to":"2027-03-06","venue":"Teatro do Bairro Alto "}`, none), "rephrase"),
		}},
		{"a search's filter renamed", nil, []op{
			call("crm_find", `{"query":"late invoice dispute","stage":"negotiation"}`, `{"deals":[{"id":"D-17","name":"Lindqvist renewal"},{"id":"D-22","name":"Okafor expansion"}]}`),
			call("crm_find", `{"phase":"Negotiation","query":"late invoice dispute"}`, `{"deals":[{"id":"D-17","name":"Lindqvist renewal"},{"id":"D-22","name":"Okafor expansion"}]}`),
			call("crm_find", `{"deal_stage":"negotiation ","q":"late invoice dispute"}`, `{"deals":[{"id":"D-17","name":"Lindqvist renewal"},{"id":"D-22","name":"Okafor expansion"}]}`),
			refused(call("crm_find", `{"query":"late invoice dispute","stage_name":"NEGOTIATION"}`, `{"deals":[{"id":"D-17","name":"Lindqvist renewal"},{"id":"D-22","name":"Okafor expansion"}]}`), "rephrase"),
		}},
		{"other venues, answered alike", nil, []op{
			call("venue_slots", `{"from":"2027-03-04","to":"2027-03-06","venue":"Teatro do Bairro Alto"}`, none),
			call("venue_slots", `{"from":"2027-03-04","to":"2027-03-06","venue":"Casa da Música Porto"}`, none),
			call("venue_slots", `{"from":"2027-03-04","to":"2027-03-06","venue":"Coliseu dos Recreios"}`, none),
			call("venue_slots", `{"from":"2027-03-04","to":"2027-03-06","venue":"Centro Cultural de Belém"}`, none),
			call("venue_slots", `{"from":"2027-03-04","to":"2027-03-06","venue":"Teatro Nacional São João"}`, none),
		}},
	})
}

// TestFoldWebAddress: a web address asked again with another scheme, a
// "www." or a fragment asks for the same page; another path, another
// query or a fragment that routes an application asks for another.
func TestFoldWebAddress(t *testing.T) {
	base := `{"url":"https://docs.example.org/guide/setup"}`
	for _, c := range []struct {
		args string
		same bool
	}{
		{`{"url":"http://docs.example.org/guide/setup"}`, true},
		{`{"url":"https://docs.example.org/guide/setup/"}`, true},
		{`{"url":"https://www.docs.example.org/guide/setup#install"}`, true},
		{`{"url":"HTTPS://docs.example.org/guide/setup"}`, true},
		{`{"url":"https://docs.example.org/guide/upgrade"}`, false},
		{`{"url":"https://docs.example.org/guide/setup?lang=de"}`, false},
		{`{"url":"https://docs.example.org/guide/setup#/step/2"}`, false},
	} {
		if got := foldArgs("open_page", []byte(base)) == foldArgs("open_page", []byte(c.args)); got != c.same {
			t.Errorf("%s and %s: one question %v, want %v", base, c.args, got, c.same)
		}
	}
}

// TestUntypedSameComplaint: an untyped failure (an upstream tool's error
// result) that says the same thing three times in a row, whatever the
// arguments, is a streak as a typed one is; one that names another thing
// each time (a candidate column, a candidate file) is not, nor one that
// says something was not found.
func TestUntypedSameComplaint(t *testing.T) {
	runCases(t, []testCase{
		{"a transfer rejected alike, respelled", nil, []op{
			failingWith("bank_transfer", `{"amount":"250.00","iban":"PT50 0002 0123 1234 5678 9015 4","memo":"rent"}`, "tool_error", "Transfer rejected by the receiving bank (AM04: insufficient funds on the sending account). ref tx_81f0c2aa"),
			failingWith("bank_transfer", `{"amount":250,"iban":"PT50000201231234567890154","memo":"Rent"}`, "tool_error", "Transfer rejected by the receiving bank (AM04: insufficient funds on the sending account). ref tx_0c19e7b3"),
			failingWith("bank_transfer", `{"amount":"250","iban":"PT50 0002 0123 1234 5678 9015 4","memo":"rent december"}`, "tool_error", "Transfer rejected by the receiving bank (AM04: insufficient funds on the sending account). ref tx_77aa0d41"),
			refused(call("bank_transfer", `{"amount":"250.0","iban":"PT50000201231234567890154","memo":"rent"}`, `"ok"`), "same_error"),
		}},
		{"another column each time", nil, []op{
			failingWith("py_eval", `{"code":"df['rev'].sum()"}`, "tool_error", "KeyError: 'rev'"),
			failingWith("py_eval", `{"code":"df['revenue_eur'].sum()"}`, "tool_error", "KeyError: 'revenue_eur'"),
			failingWith("py_eval", `{"code":"df['net_revenue'].sum()"}`, "tool_error", "KeyError: 'net_revenue'"),
			call("py_eval", `{"code":"df['amount'].sum()"}`, `"48210.5"`),
		}},
		{"files not there", nil, []op{
			failingWith("cat", `{"path":"conf/app.yaml"}`, "tool_error", "cat: conf/app.yaml: No such file or directory"),
			failingWith("cat", `{"path":"config/app.yaml"}`, "tool_error", "cat: config/app.yaml: No such file or directory"),
			failingWith("cat", `{"path":"app.yaml"}`, "tool_error", "cat: app.yaml: No such file or directory"),
			call("cat", `{"path":"deploy/app.yaml"}`, `"replicas: 3"`),
		}},
	})
}

// TestTickIsClock: a tick (a simulation's or game server's logical clock)
// is when the answer was made: a world whose tick alone moves is the same
// answer; one whose units move is news.
func TestTickIsClock(t *testing.T) {
	runCases(t, []testCase{
		{"a paused world", nil, []op{
			call("world_get", `{"shard":"eu-2"}`, `{"serverTick":10412,"units":[{"id":"u1","hp":40,"at":[3,9]}],"phase":"paused"}`),
			call("world_get", `{"shard":"eu-2"}`, `{"serverTick":10440,"units":[{"id":"u1","hp":40,"at":[3,9]}],"phase":"paused"}`),
			refused(call("world_get", `{"shard":"eu-2"}`, `{"serverTick":10471,"units":[{"id":"u1","hp":40,"at":[3,9]}],"phase":"paused"}`), "repeat"),
		}},
		{"a world that moves", nil, []op{
			call("world_get", `{"shard":"eu-2"}`, `{"serverTick":10412,"units":[{"id":"u1","hp":40,"at":[3,9]}],"phase":"running"}`),
			call("world_get", `{"shard":"eu-2"}`, `{"serverTick":10440,"units":[{"id":"u1","hp":36,"at":[4,9]}],"phase":"running"}`),
			call("world_get", `{"shard":"eu-2"}`, `{"serverTick":10471,"units":[{"id":"u1","hp":31,"at":[5,9]}],"phase":"running"}`),
		}},
	})
}

// TestRefRenumbered: an element's ref in a snapshot ("[ref=e14]") is
// numbered anew at each reading, so the same page read again is the same
// answer; and a click that says what it clicks in words acts on the page,
// whatever ref it names: "Show more" clicked three times under new refs,
// the page the same after each, is refused at the next reading. Clicks
// whose page changes go on. (Since the eighteenth probe the clicks make
// a cycle with the readings, one write respelled under its new ref each
// round, and short_cycle, which names the cycle, refuses that reading
// first.)
func TestRefRenumbered(t *testing.T) {
	if maskedHash([]byte(`  - link "Pricing" [ref=e12]`)) != maskedHash([]byte(`  - link "Pricing" [ref=e31]`)) {
		t.Error("a ref renumbered: two lines, want one")
	}
	if maskedHash([]byte(`  - link "Pricing" [ref=e12]`)) == maskedHash([]byte(`  - link "Plans" [ref=e12]`)) {
		t.Error("another label: one line, want two")
	}
	if maskedHash([]byte(`git checkout ref=main`)) != hashBytes([]byte(`git checkout ref=main`)) {
		t.Error("a ref without a digit (a branch) masked")
	}
	page := func(first, rows int) string {
		s := ""
		for i := 0; i < rows; i++ {
			s += fmt.Sprintf("- row \"Invoice INV-%d overdue\" [ref=e%d]\\n", 7700+i, first+i)
		}
		return `"` + s + fmt.Sprintf("- button \\\"Show more\\\" [ref=e%d]", first+rows) + `"`
	}
	click := func(ref int) op {
		return write("ui_press", fmt.Sprintf(`{"element":"Show more button","ref":"e%d"}`, ref), `"pressed"`)
	}
	look := func(first, rows int) op { return call("ui_read", `{}`, page(first, rows)) }
	runCases(t, []testCase{
		{"the page the same after each click", nil, []op{
			look(1, 4), click(5), look(6, 4), click(10), look(11, 4), click(15), refused(look(16, 4), "short_cycle"),
		}},
		{"each click shows more", nil, []op{
			look(1, 4), click(5), look(6, 8), click(14), look(15, 12), click(27), look(28, 16), click(44), look(45, 20),
		}},
	})
}

// TestMinutesPastThree: minutes alone past 179 (340m) are not a span as
// kubectl or a person writes one (kubectl's ages turn to hours at 3h0m):
// a CPU in millicores that climbs is news. An age of 25m or 179m, and
// 340m written with seconds, are spans still.
func TestMinutesPastThree(t *testing.T) {
	for _, c := range []struct {
		a, b string
		same bool
	}{
		{"api-7d9f   340m   212Mi", "api-7d9f   560m   212Mi", false},
		{"worker-2   1250m   1.2Gi", "worker-2   1900m   1.2Gi", false},
		{"web-5c8   1/1   Running   0   25m", "web-5c8   1/1   Running   0   31m", true},
		{"web-5c8   1/1   Running   0   150m", "web-5c8   1/1   Running   0   179m", true},
		{"creating... [340m10s elapsed]", "creating... [341m40s elapsed]", true},
	} {
		if got := maskedHash([]byte(c.a)) == maskedHash([]byte(c.b)); got != c.same {
			t.Errorf("%q and %q: same %v, want %v", c.a, c.b, got, c.same)
		}
	}
}

// TestPostsEachAnother: posts to one thread that each say something else
// (free text under a key that names what is written: body, message,
// text) are other writes, so the thread's header read between them, the
// same each time, is not refused; a button described in other words is
// still one write made again (TestWritesThatChangeNothing).
func TestPostsEachAnother(t *testing.T) {
	head := call("forum_thread", `{"thread_id":"T-88"}`, `{"title":"Release 4.2 rollout","pinned":true,"locked":false,"category":"announcements"}`)
	post := func(key, msg string) op {
		return write("forum_reply", `{"`+key+`":"`+msg+`","thread_id":"T-88"}`, `{"ok":true}`)
	}
	runCases(t, []testCase{
		{"updates posted as body", nil, []op{
			head, post("body", "Rollout started for the first region, watching error rates closely"),
			head, post("body", "First region is healthy, moving on to the second region now"),
			head, post("body", "Second region paused after a spike in checkout latency"),
			head, post("body", "Latency spike traced to a cache warmup, resuming the rollout"),
			head,
		}},
		{"updates posted as message", nil, []op{
			head, post("message", "Rollout started for the first region, watching error rates closely"),
			head, post("message", "First region is healthy, moving on to the second region now"),
			head, post("message", "Second region paused after a spike in checkout latency"),
			head, post("message", "Latency spike traced to a cache warmup, resuming the rollout"),
			head,
		}},
	})
}
