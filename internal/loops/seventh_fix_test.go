package loops

import (
	"fmt"
	"testing"
)

// The seventh probe's fixes, each failing before.

// TestExceptionAnswered: an exception handed back as a successful answer
// (a REPL's "KeyError: 'total'", a notebook cell's traceback) is a
// failure: the same one for three expressions in a row refuses the
// fourth, as an error result would. An exception fixed by the next call,
// one text among others that ends in an error (a log search), and paths
// tried one by one that do not exist are not.
func TestExceptionAnswered(t *testing.T) {
	const trace = `"---------------------------------------------------------------------------\nNameError                                 Traceback (most recent call last)\nCell In[%s], line 1\n----> 1 %s\n\nNameError: name 'df' is not defined"`
	cell := func(n, src string) op {
		return call("run_cell", `{"source":"`+src+`"}`, `[{"execution_count":`+n+`,"outputs":[`+fmt.Sprintf(trace, n, src)+`]}]`)
	}
	runCases(t, []testCase{
		{"one KeyError for every expression", nil, []op{
			call("run_python", `{"code":"orders.total.sum()"}`, `"KeyError: 'total'"`),
			call("run_python", `{"code":"orders.total.mean()"}`, `"KeyError: 'total'"`),
			call("run_python", `{"code":"orders.groupby('day').total.sum()"}`, `"KeyError: 'total'"`),
			refused(call("run_python", `{"code":"orders.total.max()"}`, `"KeyError: 'total'"`), "same_error"),
		}},
		{"a traceback under its cell's number", nil, []op{
			cell("31", "df.head()"), cell("32", "df.describe()"), cell("33", "df.columns"),
			refused(cell("34", "len(df)"), "same_error"),
		}},
		{"a cell that raises, then one that works", nil, []op{
			call("run_python", `{"code":"df.Amount.mean()"}`, `"AttributeError: 'DataFrame' object has no attribute 'Amount'"`),
			call("run_python", `{"code":"df.amount.mean()"}`, `"57.31928"`),
			call("run_python", `{"code":"df.Total.sum()"}`, `"AttributeError: 'DataFrame' object has no attribute 'Total'"`),
			call("run_python", `{"code":"df.total.sum()"}`, `"1209913.5"`),
			call("run_python", `{"code":"df.Region.nunique()"}`, `"AttributeError: 'DataFrame' object has no attribute 'Region'"`),
			call("run_python", `{"code":"df.region.nunique()"}`, `"3"`),
		}},
		{"log searches whose last line is an exception", nil, []op{
			call("search_logs", `{"query":"checkout 500"}`, `{"lines":["12:00:01 GET /pay 500","12:00:01 ValueError: amount must be positive"]}`),
			call("search_logs", `{"query":"checkout error"}`, `{"lines":["12:00:01 GET /pay 500","12:00:09 ValueError: amount must be positive"]}`),
			call("search_logs", `{"query":"pay handler"}`, `{"lines":["12:00:03 POST /pay 500","12:00:03 ValueError: amount must be positive"]}`),
			call("search_logs", `{"query":"amount validation"}`, `{"lines":["12:01:00 POST /pay 500","12:01:00 ValueError: amount must be positive"]}`),
		}},
		{"paths tried one by one", nil, []op{
			call("run_python", `{"code":"open('data.csv')"}`, `"FileNotFoundError: [Errno 2] No such file or directory: 'data.csv'"`),
			call("run_python", `{"code":"open('data/orders.csv')"}`, `"FileNotFoundError: [Errno 2] No such file or directory: 'data/orders.csv'"`),
			call("run_python", `{"code":"open('input/orders.csv')"}`, `"FileNotFoundError: [Errno 2] No such file or directory: 'input/orders.csv'"`),
			call("run_python", `{"code":"import os; os.listdir('.')"}`, `"['notebooks', 'raw', 'README.md']"`),
		}},
	})
	for _, c := range []struct {
		res  string
		want bool
	}{
		{`"KeyError: 'Date'"`, true},
		{`"java.lang.IllegalStateException: connection closed"`, true},
		{`"TypeError: x.map is not a function\n    at render (app.js:12:9)\n    at main (app.js:40:3)"`, true},
		{`"Error"`, false}, // too short to be one
		{`"Errors: 0, warnings: 2"`, false},
		{`"Build finished.\nValueError: bad value"`, false},
		{`{"ok":true,"note":"KeyError: 'x'"}`, false},
		{`"StopIteration"`, false},
	} {
		if got := exceptionAnswer([]byte(c.res)); got != c.want {
			t.Errorf("exceptionAnswer(%s) = %v, want %v", c.res, got, c.want)
		}
	}
}

// TestEchoedNameOrID: a value echoed in an error message is masked the
// same whether it holds a digit or not: a transition asked by its id and
// by its name is one complaint.
func TestEchoedNameOrID(t *testing.T) {
	msg := func(v string) string {
		return "Transition id '" + v + "' is not valid for this issue. Available transitions: 11 (To Do), 21 (In Progress)"
	}
	runCases(t, []testCase{
		{"ids and names in turn", nil, []op{
			failingWith("transition_issue", `{"issue":"OPS-340","transition":"31"}`, "invalid_args", msg("31")),
			failingWith("transition_issue", `{"issue":"OPS-340","transition":"Done"}`, "invalid_args", msg("Done")),
			failingWith("transition_issue", `{"issue":"OPS-340","transition":"41"}`, "invalid_args", msg("41")),
			refused(call("transition_issue", `{"issue":"OPS-340","transition":"Close"}`, `"ok"`), "same_error"),
		}},
	})
}

// TestWideningEchoesSize: a widened call whose answer is the last one but
// for the grown size it echoes ("Scanned 5000 sampled rows") brought
// nothing new, whether the size is a number argument or a number in code
// (df.sample(5000)); the third such widening is refused. An answer whose
// finding moves with the sample, and a page or a version stepped by one,
// are not.
func TestWideningEchoesSize(t *testing.T) {
	scanned := func(n int) string {
		return fmt.Sprintf(`"Scanned %d sampled rows of events (columns: latency_ms, bytes, status).\nNo anomalies found above z=4.0."`, n)
	}
	code := func(n int) string {
		return fmt.Sprintf(`{"code":"s = df.sample(%d); print(len(s), 'rows sampled,', s.email.str.contains('@@').sum(), 'malformed')"}`, n)
	}
	runCases(t, []testCase{
		{"a number argument", nil, []op{
			call("anomalies", `{"frame":"events","sample":1000}`, scanned(1000)),
			call("anomalies", `{"frame":"events","sample":5000}`, scanned(5000)),
			call("anomalies", `{"frame":"events","sample":20000}`, scanned(20000)),
			refused(call("anomalies", `{"frame":"events","sample":100000}`, scanned(100000)), "amplification"),
		}},
		{"a number in code", nil, []op{
			call("run_python", code(1000), `"1000 rows sampled, 0 malformed"`),
			call("run_python", code(5000), `"5000 rows sampled, 0 malformed"`),
			call("run_python", code(25000), `"25000 rows sampled, 0 malformed"`),
			refused(call("run_python", code(100000), `"100000 rows sampled, 0 malformed"`), "amplification"),
		}},
		{"a finding that moves with the sample", nil, []op{
			call("run_python", code(1000), `"1000 rows sampled, 0 malformed"`),
			call("run_python", code(10000), `"10000 rows sampled, 3 malformed"`),
			call("run_python", code(100000), `"100000 rows sampled, 41 malformed"`),
			call("run_python", code(1000000), `"1000000 rows sampled, 388 malformed"`),
			call("run_python", code(5000000), `"5000000 rows sampled, 1944 malformed"`),
		}},
	})
	for _, c := range []struct {
		x, y string
		want bool
	}{
		{"df.sample(1000)", "df.sample(5000)", true},
		{"SELECT * FROM t LIMIT 100", "SELECT * FROM t LIMIT 1000", true},
		{"curl /api/v2/users", "curl /api/v3/users", false},
		{"/items?page=2", "/items?page=3", false},
		{"tail -n 20 app.log", "tail -n 200 app.log", true},
		{"head -n 200 app.log", "head -n 20 app.log", false},
		{"is:issue created:>2026-12-01", "is:issue created:>2026-12-15", false},
		{"logs --since 2026-12-01 --until 2026-12-03", "logs --since 2026-12-01 --until 2026-12-09", false},
		{"at 14:02 today", "at 14:30 today", false},
	} {
		d := New(nil)
		if got := d.grows(leafString, false, []byte("command"), []byte(c.x), []byte(c.y)); got != c.want {
			t.Errorf("grows(%q, %q) = %v, want %v", c.x, c.y, got, c.want)
		}
	}
}

// TestSQLAliasFolded: a query's table aliases are left out of its words
// (FROM orders o, o.region is FROM orders, region; JOIN customers AS c),
// so a query respelled with an alias asks the same question. A command
// that says "from" defines no alias, and other columns are another
// question.
func TestSQLAliasFolded(t *testing.T) {
	q := func(sql string) uint64 { return foldArgs("db", []byte(`{"sql":`+marshalString(sql)+`}`)) }
	for _, c := range []struct {
		a, b string
		same bool
	}{
		{"SELECT region, SUM(amount) FROM orders WHERE status = 'late' GROUP BY region",
			"SELECT o.region, SUM(o.amount) FROM orders o WHERE o.status = 'late' GROUP BY o.region", true},
		{"SELECT c.name, count(*) FROM orders AS o JOIN customers AS c ON c.id = o.customer_id GROUP BY c.name",
			"select name, count(*) from orders join customers on id = customer_id group by name", true},
		{"SELECT o.region FROM orders o\nWHERE o.day = '2026-12-01'", "SELECT region FROM orders WHERE day = '2026-12-01'", true},
		{"SELECT o.region FROM orders o", "SELECT o.country FROM orders o", false},
		{"SELECT region FROM orders WHERE status = 'late'", "SELECT region FROM returns WHERE status = 'late'", false},
		{`grep -rn "from foo" src`, `grep -rn "from foo" lib`, false},
		{"python -c 'from os import path'", "python -c 'from os import sep'", false},
	} {
		if got := q(c.a) == q(c.b); got != c.same {
			t.Errorf("%q and %q one question: %v, want %v", c.a, c.b, got, c.same)
		}
	}
	rows := `{"row_count":4,"rows":[{"region":"EU","total":"48210.00"},{"region":"US","total":"39922.50"},{"region":"APAC","total":"12011.75"},{"region":"LATAM","total":"4410.00"}]}`
	runCases(t, []testCase{
		{"one query, an alias the fourth time", nil, []op{
			call("db_sql", `{"sql":"SELECT region, SUM(amount) AS total FROM orders WHERE status = 'late' GROUP BY region"}`, rows),
			call("db_sql", `{"sql":"select region, sum(amount) as total from orders where status='late' group by region"}`, rows),
			call("db_sql", `{"sql":"SELECT region, SUM(amount) AS total FROM orders WHERE (status = 'late') GROUP BY region"}`, rows),
			refused(call("db_sql", `{"sql":"SELECT o.region, SUM(o.amount) AS total FROM orders o WHERE o.status = 'late' GROUP BY o.region"}`, rows), "rephrase"),
		}},
	})
}

// TestOptionToggledAlone: one question asked again with only an option
// changed each time (a currency, a switch), its answer the same, is
// judged: after four such answers the next call is refused. One host after
// another answering alike is a batch, and an option that changes the
// answer is news.
func TestOptionToggledAlone(t *testing.T) {
	const none = `{"data":[],"warnings":[{"code":3664,"title":"NO ROOMS AVAILABLE AT REQUESTED PROPERTY","source":{"parameter":"hotelIds"}}]}`
	stay := func(extra string) string {
		return `{"checkIn":"2027-01-16","checkOut":"2027-01-19",` + extra + `"hotel":"HX221"}`
	}
	runCases(t, []testCase{
		{"one stay in other currencies", nil, []op{
			call("room_offers", stay(""), none),
			call("room_offers", stay(`"currency":"USD",`), none),
			call("room_offers", stay(`"currency":"EUR",`), none),
			call("room_offers", stay(`"currency":"GBP",`), none),
			call("room_offers", stay(`"currency":"JPY",`), none),
			refused(call("room_offers", stay(`"currency":"CHF",`), none), "no_progress"),
		}},
		{"a switch flipped", nil, []op{
			call("room_offers", stay(""), none),
			call("room_offers", stay(`"refundable":true,`), none),
			call("room_offers", stay(`"refundable":false,`), none),
			call("room_offers", stay(`"refundable":true,"rooms":1,`), none),
			call("room_offers", stay(`"refundable":false,"rooms":1,`), none),
			refused(call("room_offers", stay(`"refundable":true,"rooms":2,`), none), "no_progress"),
		}},
		{"other currencies that change the answer", nil, []op{
			call("room_offers", stay(""), `{"data":[{"offer":"OF1","total":"612.00","currency":"EUR"}]}`),
			call("room_offers", stay(`"currency":"USD",`), `{"data":[{"offer":"OF1","total":"659.10","currency":"USD"}]}`),
			call("room_offers", stay(`"currency":"GBP",`), `{"data":[{"offer":"OF1","total":"521.40","currency":"GBP"}]}`),
			call("room_offers", stay(`"currency":"JPY",`), `{"data":[{"offer":"OF1","total":"101208","currency":"JPY"}]}`),
			call("room_offers", stay(`"currency":"CHF",`), `{"data":[{"offer":"OF1","total":"574.90","currency":"CHF"}]}`),
			call("room_offers", stay(`"currency":"SEK",`), `{"data":[{"offer":"OF1","total":"7012.00","currency":"SEK"}]}`),
		}},
		{"one order after another, under a key that could name a sort", nil, []op{
			call("order_status", `{"shop":"eu"}`, `{"status":"shipped","carrier":"DHL","note":"left the warehouse on time"}`),
			call("order_status", `{"order":"A-1231","shop":"eu"}`, `{"status":"shipped","carrier":"DHL","note":"left the warehouse on time"}`),
			call("order_status", `{"order":"A-1232","shop":"eu"}`, `{"status":"shipped","carrier":"DHL","note":"left the warehouse on time"}`),
			call("order_status", `{"order":"A-1233","shop":"eu"}`, `{"status":"shipped","carrier":"DHL","note":"left the warehouse on time"}`),
			call("order_status", `{"order":"A-1234","shop":"eu"}`, `{"status":"shipped","carrier":"DHL","note":"left the warehouse on time"}`),
			call("order_status", `{"order":"A-1235","shop":"eu"}`, `{"status":"shipped","carrier":"DHL","note":"left the warehouse on time"}`),
		}},
		{"one host after another", nil, []op{
			call("health_check", `{"region":"eu"}`, `{"status":"healthy","message":"all checks passed on the last run","checks":{"disk":"ok","db":"ok"}}`),
			call("health_check", `{"host":"web-1","region":"eu"}`, `{"status":"healthy","message":"all checks passed on the last run","checks":{"disk":"ok","db":"ok"}}`),
			call("health_check", `{"host":"web-2","region":"eu"}`, `{"status":"healthy","message":"all checks passed on the last run","checks":{"disk":"ok","db":"ok"}}`),
			call("health_check", `{"host":"web-3","region":"eu"}`, `{"status":"healthy","message":"all checks passed on the last run","checks":{"disk":"ok","db":"ok"}}`),
			call("health_check", `{"host":"web-4","region":"eu"}`, `{"status":"healthy","message":"all checks passed on the last run","checks":{"disk":"ok","db":"ok"}}`),
			call("health_check", `{"host":"web-5","region":"eu"}`, `{"status":"healthy","message":"all checks passed on the last run","checks":{"disk":"ok","db":"ok"}}`),
		}},
	})
	for _, c := range []struct {
		key  string
		want bool
	}{{"currency", true}, {"include_archived", true}, {"showHidden", true}, {"sort_by", true}, {"order", true},
		{"order_id", false}, {"order_number", false}, {"host", false}, {"include", false}, {"with", false}} {
		if got := optionKey([]byte(c.key)); got != c.want {
			t.Errorf("optionKey(%q) = %v, want %v", c.key, got, c.want)
		}
	}
}

// TestRunNamesMasked: a process's id after "pid" and a name made for one
// run in /tmp are masked in a line of output, so a build run again with
// nothing changed prints the same log; the number of a file, a port or an
// exit code stays.
func TestRunNamesMasked(t *testing.T) {
	for _, c := range []struct {
		a, b string
		same bool
	}{
		{"make[1]: Entering directory '/repo' (pid 48211)", "make[1]: Entering directory '/repo' (pid 48384)", true},
		{"Main PID: 48211 (nginx)", "Main PID: 51007 (nginx)", true},
		{"worker started pid=812", "worker started pid=1022", true},
		{"WORK=/tmp/go-build2219043871", "WORK=/tmp/go-build2219051594", true},
		{"wrote /tmp/tmpa8x2k9lq/out.csv", "wrote /tmp/tmpq0z7m1bd/out.csv", true},
		{"wrote /tmp/report.csv", "wrote /tmp/summary.csv", false},
		{"listening on port 48211", "listening on port 48384", false},
		{"exit status 1 (rapid 48211)", "exit status 1 (rapid 48384)", false},
		{"Error 1", "Error 2", false},
	} {
		if got := maskedHash([]byte(c.a)) == maskedHash([]byte(c.b)); got != c.same {
			t.Errorf("%q and %q alike: %v, want %v", c.a, c.b, got, c.same)
		}
	}
	build := func(pid int, dir string) string {
		return marshalString(fmt.Sprintf("make[1]: Entering directory '/repo' (pid %d)\ngo build -o bin/api ./cmd/api\nWORK=/tmp/go-build%s\ninternal/store/pg.go:41:15: undefined: pgx.ConnConfig\nmake: *** [Makefile:14: build] Error 1", pid, dir))
	}
	runCases(t, []testCase{
		{"a build run again, nothing changed", nil, []op{
			write("shell", `{"command":"make build"}`, build(48211, "2219043871")),
			write("shell", `{"command":"make build"}`, build(48384, "2219051594")),
			write("shell", `{"command":"make build"}`, build(48557, "2219059317")),
			refused(write("shell", `{"command":"make build"}`, build(48730, "2219067040")), "short_cycle"),
		}},
	})
}

// TestRandomIDInOneCase: an id made at random in lower case, letters and
// digits mixed (a calendar event's), is masked inside a line as a hex one
// is, so one event created four times with the same arguments is a write
// made again; a word with a number after it is not such an id.
func TestRandomIDInOneCase(t *testing.T) {
	for _, c := range []struct {
		w    string
		want bool
	}{
		{"5u2k8d0q1ctg3v6hj7m9", true}, {"0b9r1m4kqe8s7ud2lp3a", true},
		{"build2219043871", false}, {"invoice20261204", false}, {"checkout7b5c4d8f9", false}, {"abcdefghijklmnop", false},
	} {
		if got := randomToken([]byte(c.w)); got != c.want {
			t.Errorf("randomToken(%q) = %v, want %v", c.w, got, c.want)
		}
	}
	created := func(id string) string {
		return marshalString("Event created: Quarterly plan review (" + id + ") 2026-12-10T11:00:00+01:00 - 2026-12-10T12:00:00+01:00")
	}
	ev := `{"calendarId":"primary","end":"2026-12-10T12:00:00","start":"2026-12-10T11:00:00","summary":"Quarterly plan review"}`
	runCases(t, []testCase{
		{"one event created again and again", nil, []op{
			write("create_event", ev, created("5u2k8d0q1ctg3v6hj7m9")),
			write("create_event", ev, created("0b9r1m4kqe8s7ud2lp3a")),
			write("create_event", ev, created("7hq0t2c5nd1vjl8k4m6e")),
			refused(write("create_event", ev, created("9c3e6d0f2a1b8h7k5j4g")), "short_cycle"),
		}},
	})
}
