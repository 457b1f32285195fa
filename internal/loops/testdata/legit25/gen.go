//go:build ignore

// gen writes the long legitimate trajectories of this folder: 25 runs of
// 40 to 300 steps (model turns, each with the call it chose) in the shapes real agents produce, none of which a loop
// guard may refuse. Each run is labelled loop: false. Run from this folder:
//
//	go run gen.go
//
// The runs are written from what agents do, not from the guard's rules:
// a coding agent re-running one test command after each edit, a researcher
// refining its queries, cursors, forms, polls whose progress moves slowly,
// one tool over 200 ids, long chats, review rounds with real changes, and
// model turns with similar prompts.
package main

import (
	"fmt"
	"math/rand"
	"os"
	"strings"

	"github.com/agentreach/reach/internal/loops/testdata/tracegen"
)

var bad bool

type (
	obj      = tracegen.Obj
	contract = tracegen.Contract
	event    = tracegen.Event
	trace    = tracegen.Trace
)

var (
	raw = tracegen.Raw
	ptr = tracegen.Ptr
)

type b struct {
	t     *trace
	rnd   *rand.Rand
	agent string
	up    string // the parent of the next model turn ("" at the top)
}

func run(id, desc string, seed int64) *b {
	return &b{t: &trace{ID: id, Description: desc, Tools: map[string]contract{}, Label: obj{"loop": false, "kind": "long_legit"}}, rnd: rand.New(rand.NewSource(seed)), agent: "main"}
}

func (r *b) tool(name, access, reent string, key ...string) *b {
	r.t.Tools[name] = contract{Access: access, Reentrancy: reent, Key: key}
	return r
}

func (r *b) retryable(name string) {
	c := r.t.Tools[name]
	c.Retryable = true
	r.t.Tools[name] = c
}

func (r *b) add(e event) string {
	e.ID = fmt.Sprintf("e%d", len(r.t.Events)+1)
	if e.Agent == "" {
		e.Agent = r.agent
	}
	r.t.Events = append(r.t.Events, e)
	return e.ID
}

// turn is a model turn with its text (may be empty).
func (r *b) turn(text string) string {
	return r.add(event{Parent: ptr(r.up), Type: "model", Tokens: int64(600 + r.rnd.Intn(2400)), Text: text})
}

// call is a model turn choosing a tool, and the call, answered ok.
func (r *b) call(say, tool string, args, result any) {
	m := r.turn(say)
	r.add(event{Parent: ptr(m), Type: "tool_call", Tool: tool, Args: raw(args), Status: "ok", Result: raw(result)})
}

// fail is a model turn choosing a tool, and the call, answered with an error.
func (r *b) fail(say, tool string, args any, errType string, result any) {
	m := r.turn(say)
	r.add(event{Parent: ptr(m), Type: "tool_call", Tool: tool, Args: raw(args), Status: "error", ErrorType: errType, Result: raw(result)})
}

// delegate hands task to agent to; body plays the sub-agent's turns; the
// sub-agent's last turn says verdict.
func (r *b) delegate(to, task string, body func(), verdict string) {
	m := r.turn("delegate: " + task)
	d := r.add(event{Parent: ptr(m), Type: "delegate", To: to, Task: task})
	saveA, saveUp := r.agent, r.up
	r.agent, r.up = to, d
	if body != nil {
		body()
	}
	r.turn(verdict)
	r.agent, r.up = saveA, saveUp
}

func (r *b) write() {
	n := 0 // steps: model turns, each with the call it chose
	for _, e := range r.t.Events {
		if e.Type == "model" {
			n++
		}
	}
	if n < 40 || n > 300 {
		fmt.Fprintf(os.Stderr, "%s: %d steps, want 40 to 300\n", r.t.ID, n)
		bad = true
	}
	r.t.Save()
}

func sh(stdout, stderr string, code int) obj {
	return obj{"stdout": stdout, "stderr": stderr, "exit_code": code}
}

func main() {
	pytestFix()
	goBuildFix()
	tscErrors()
	flakyBisect()
	researchRefine()
	papersRead()
	cursorPaging()
	sqlExplore()
	githubPages()
	browserForm()
	browserNextPage()
	jobPoll()
	rolloutWatch()
	labelIssues()
	thumbnails()
	classifyEmails()
	supportChat()
	ticketQueue()
	reviewRounds()
	codeReviewRounds()
	proxySummaries()
	rateLimitedExport()
	researchTeam()
	migrations()
	inboxCleanup()
	if bad {
		os.Exit(1)
	}
}

// 1. A coding agent fixing a failing pytest suite: the same command after
// each edit, the failures shrinking and changing.
func pytestFix() {
	r := run("legit25-pytest-fix", "a coding agent runs the same pytest command after each edit; the failures change and shrink until the suite is green", 1)
	r.tool("read_file", "read", "reentrant").tool("edit_file", "write", "keyed", "path").tool("bash", "write", "reentrant")
	cmd := obj{"command": "python -m pytest -x -q tests/"}
	r.call("I'll start by running the test suite to see what fails.", "bash", cmd, sh("F\n=================================== FAILURES ===================================\n___________________________ test_parse_empty_header ____________________________\n    def test_parse_empty_header():\n>       assert parse_header(b\"\") == {}\nE       TypeError: 'NoneType' object is not subscriptable\nsrc/httpx_lite/headers.py:41: TypeError\n1 failed, 3 passed in 0.41s", "", 1))
	r.call("Let me look at parse_header.", "read_file", obj{"path": "src/httpx_lite/headers.py"}, "def parse_header(raw):\n    lines = raw.split(b\"\\r\\n\")\n    first = lines[0] or None\n    key, _, value = first[0].partition(b\":\")\n    ...")
	fails := []struct{ test, err, file string }{
		{"test_parse_folded_header", "AssertionError: assert {'x-a': 'b'} == {'x-a': 'b c'}", "headers.py:57"},
		{"test_parse_folded_header", "AssertionError: assert {'x-a': 'b  c'} == {'x-a': 'b c'}", "headers.py:58"},
		{"test_duplicate_headers_joined", "AssertionError: assert 'a' == 'a, b'", "headers.py:66"},
		{"test_latin1_value", "UnicodeDecodeError: 'utf-8' codec can't decode byte 0xe9 in position 3", "headers.py:44"},
		{"test_cookie_not_joined", "AssertionError: assert 'x=1, y=2' == ['x=1', 'y=2']", "headers.py:70"},
		{"test_cookie_not_joined", "TypeError: can only concatenate str (not \"list\") to str", "headers.py:71"},
		{"test_request_roundtrip", "AssertionError: assert b'GET / HTTP/1.1\\r\\nhost: a\\r\\n' == b'GET / HTTP/1.1\\r\\nHost: a\\r\\n'", "request.py:22"},
		{"test_request_roundtrip", "KeyError: 'host'", "request.py:19"},
		{"test_chunked_body", "ValueError: invalid literal for int() with base 16: b'1a;ext=1'", "body.py:33"},
		{"test_chunked_trailers", "AssertionError: assert {} == {'x-checksum': 'abc'}", "body.py:48"},
		{"test_content_length_mismatch", "Failed: DID NOT RAISE <class 'httpx_lite.errors.ProtocolError'>", "body.py:12"},
	}
	passed := 4
	for i, f := range fails {
		file := "src/httpx_lite/" + strings.Split(f.file, ":")[0]
		r.call(fmt.Sprintf("The failure is in %s; I'll fix it.", file), "edit_file", obj{"path": file, "old_str": fmt.Sprintf("# line %d", 10+i), "new_str": fmt.Sprintf("# fixed line %d for %s", 10+i, f.test)}, obj{"ok": true, "path": file, "lines_changed": 2 + i%3})
		passed += i % 2
		r.call("Running the tests again.", "bash", cmd, sh(fmt.Sprintf("%sF\n=================================== FAILURES ===================================\n_____ %s _____\nE       %s\nsrc/httpx_lite/%s: %s\n1 failed, %d passed in 0.%02ds", strings.Repeat(".", passed), f.test, f.err, f.file, strings.SplitN(f.err, ":", 2)[0], passed, 40+r.rnd.Intn(30)), "", 1))
		if i%3 == 1 {
			r.call("Let me re-read the file around that line.", "read_file", obj{"path": file}, fmt.Sprintf("... source of %s after %d edits ...", file, i+1))
		}
	}
	r.call("Last fix, for the length check.", "edit_file", obj{"path": "src/httpx_lite/body.py", "old_str": "return body", "new_str": "if len(body) != n:\n        raise ProtocolError(\"length mismatch\")\n    return body"}, obj{"ok": true, "path": "src/httpx_lite/body.py", "lines_changed": 3})
	r.call("Running the tests again.", "bash", cmd, sh(strings.Repeat(".", 16)+"\n16 passed in 0.63s", "", 0))
	full := obj{"command": "python -m pytest -q"}
	client := []string{"test_redirect_loop_limit", "test_timeout_pool", "test_proxy_auth_header", "test_http2_fallback"}
	for k := range client {
		var lines []string
		for _, c := range client[k:] {
			lines = append(lines, "FAILED tests/test_client.py::"+c)
		}
		r.call("Now the whole suite without -x.", "bash", full, sh(strings.Join(lines, "\n")+fmt.Sprintf("\n%d failed, %d passed, 2 skipped in 2.%02ds", len(client)-k, 54+k, 60+r.rnd.Intn(30)), "", 1))
		r.call("Fix "+client[k]+".", "edit_file", obj{"path": "src/httpx_lite/client.py", "old_str": fmt.Sprintf("# TODO %d", k), "new_str": "# handled: " + client[k]}, obj{"ok": true, "path": "src/httpx_lite/client.py", "lines_changed": 4})
	}
	r.call("Now the whole suite without -x.", "bash", full, sh(strings.Repeat(".", 58)+"\n58 passed, 2 skipped in 2.71s", "", 0))
	r.turn("All 58 tests pass; the header parser handles empty, folded, duplicate and latin-1 headers, and chunked bodies are fixed.")
	r.write()
}

// 2. go build then go test after each edit, compile errors moving.
func goBuildFix() {
	r := run("legit25-go-build-fix", "a coding agent renames a type across a Go module: go build after each edit lists fewer errors in other files, then go test runs until green", 2)
	r.tool("str_replace_editor", "write", "keyed", "path").tool("run_command", "write", "reentrant").tool("grep", "read", "reentrant")
	build := obj{"cmd": "go build ./..."}
	files := []string{"internal/store/store.go", "internal/store/sqlite.go", "internal/store/pg.go", "internal/api/handlers.go", "internal/api/middleware.go", "internal/api/routes.go", "internal/worker/queue.go", "internal/worker/retry.go", "cmd/server/main.go", "internal/report/csv.go", "internal/report/pdf.go", "internal/auth/session.go", "internal/auth/tokens.go", "internal/export/json.go", "internal/export/parquet.go"}
	r.call("Find every use of the old name.", "grep", obj{"pattern": "store\\.Record\\b", "path": "."}, strings.Join(files, "\n"))
	for i, f := range files {
		var errs []string
		for _, g := range files[i:] {
			errs = append(errs, fmt.Sprintf("%s:%d:%d: undefined: store.Record", g, 20+len(g)%17, 9+len(g)%5))
		}
		r.call("Building to see what is left.", "run_command", build, sh("", "# example.com/ledger/...\n"+strings.Join(errs, "\n"), 1))
		r.call("Fix "+f+".", "str_replace_editor", obj{"command": "str_replace", "path": f, "old_str": "store.Record", "new_str": "store.Entry"}, fmt.Sprintf("The file %s has been edited. Here's the result of running `cat -n` on a snippet of %s", f, f))
	}
	r.call("Building again.", "run_command", build, sh("", "", 0))
	test := obj{"cmd": "go test ./..."}
	outs := []string{
		"--- FAIL: TestEntryJSON (0.00s)\n    store_test.go:44: json: unknown field \"record_id\"\nFAIL\tledger/internal/store\t0.021s\nok  \tledger/internal/api\t0.311s\nok  \tledger/internal/worker\t1.204s",
		"--- FAIL: TestEntryJSON (0.00s)\n    store_test.go:51: got entry_id=\"\", want \"e-1\"\nFAIL\tledger/internal/store\t0.019s\nok  \tledger/internal/api\t0.298s\nok  \tledger/internal/worker\t1.187s",
		"ok  \tledger/internal/store\t0.020s\n--- FAIL: TestListEntries (0.01s)\n    handlers_test.go:88: status 500, want 200: column \"record_id\" does not exist\nFAIL\tledger/internal/api\t0.305s\nok  \tledger/internal/worker\t1.199s",
		"ok  \tledger/internal/store\t0.020s\nok  \tledger/internal/api\t0.301s\nok  \tledger/internal/worker\t1.190s\nok  \tledger/internal/report\t0.087s",
	}
	fixes := []string{"internal/store/entry.go", "internal/store/entry.go", "internal/store/migrations/0007_entry.sql", ""}
	for i, o := range outs {
		code := 1
		if i == len(outs)-1 {
			code = 0
		}
		r.call("Running the tests.", "run_command", test, sh(o, "", code))
		if fixes[i] != "" {
			r.call("Fix "+fixes[i]+".", "str_replace_editor", obj{"command": "str_replace", "path": fixes[i], "old_str": fmt.Sprintf("record_id /*%d*/", i), "new_str": "entry_id"}, "The file "+fixes[i]+" has been edited.")
			r.call("Check nothing else still says record_id.", "grep", obj{"pattern": "record_id", "path": "internal"}, strings.Join([]string{"internal/store/entry.go:12", "internal/store/migrations/0007_entry.sql:3", "internal/api/handlers.go:140"}[min(i+1, 3)-1:], "\n"))
		}
	}
	r.call("Vet too.", "run_command", obj{"cmd": "go vet ./..."}, sh("", "", 0))
	r.turn("Renamed store.Record to store.Entry in 12 files plus the migration; build, tests and vet are clean.")
	r.write()
}

// 3. tsc --noEmit again and again while the error count goes down; two
// edits whose old_str did not match, retried with the right text.
func tscErrors() {
	r := run("legit25-tsc-errors", "a coding agent enables strict mode in a TypeScript project and runs tsc --noEmit after each batch of edits; the error list shrinks, two edits miss and are redone with the right text", 3)
	r.tool("execute", "write", "reentrant").tool("edit", "write", "keyed", "file_path").tool("view", "read", "reentrant")
	tsc := obj{"command": "npx tsc --noEmit -p tsconfig.json"}
	type e struct{ file, msg string }
	all := []e{}
	for i := 0; i < 30; i++ {
		file := []string{"src/cart.ts", "src/checkout.ts", "src/api/client.ts", "src/hooks/useUser.ts", "src/components/PriceTag.tsx", "src/utils/money.ts"}[i%6]
		msg := []string{"TS7006: Parameter 'item' implicitly has an 'any' type.", "TS2532: Object is possibly 'undefined'.", "TS2345: Argument of type 'string | undefined' is not assignable to parameter of type 'string'.", "TS18047: 'user' is possibly 'null'.", "TS2322: Type 'number | null' is not assignable to type 'number'."}[i%5]
		all = append(all, e{fmt.Sprintf("%s(%d,%d)", file, 10+i*3, 5+i%7), msg})
	}
	list := func(es []e) string {
		var s []string
		for _, x := range es {
			s = append(s, x.file+": error "+x.msg)
		}
		return strings.Join(s, "\n") + fmt.Sprintf("\n\nFound %d errors in %d files.", len(es), min(len(es), 6))
	}
	r.call("Turn on strict and see how bad it is.", "edit", obj{"file_path": "tsconfig.json", "old_string": "\"strict\": false", "new_string": "\"strict\": true"}, "The file tsconfig.json has been updated.")
	r.call("Type-check.", "execute", tsc, sh(list(all), "", 2))
	left := all
	for round := 0; len(left) > 0; round++ {
		n := 4
		if n > len(left) {
			n = len(left)
		}
		for k, x := range left[:n] {
			f := strings.Split(x.file, "(")[0]
			if round == 2 && k == 1 || round == 5 && k == 0 {
				r.fail("Fix "+x.file+".", "edit", obj{"file_path": f, "old_string": fmt.Sprintf("const v%d = ", round*4+k), "new_string": fmt.Sprintf("const v%d: number = ", round*4+k)}, "invalid_args", "String to replace not found in file.\nString: "+fmt.Sprintf("const v%d = ", round*4+k))
				r.call("Let me view the lines.", "view", obj{"file_path": f, "offset": 10 + round*12, "limit": 20}, fmt.Sprintf("%d\tlet v%d = computeTotal(items)", 10+round*12, round*4+k))
				r.call("It is let, not const.", "edit", obj{"file_path": f, "old_string": fmt.Sprintf("let v%d = ", round*4+k), "new_string": fmt.Sprintf("let v%d: number = ", round*4+k)}, "The file "+f+" has been updated.")
				continue
			}
			r.call("Fix "+x.file+".", "edit", obj{"file_path": f, "old_string": fmt.Sprintf("/*%d*/(item)", round*4+k), "new_string": fmt.Sprintf("/*%d*/(item: CartItem)", round*4+k)}, "The file "+f+" has been updated.")
		}
		left = left[n:]
		out, code := list(left), 2
		if len(left) == 0 {
			out, code = "", 0
		}
		r.call("Type-check again.", "execute", tsc, sh(out, "", code))
	}
	r.call("And the unit tests.", "execute", obj{"command": "npx vitest run"}, sh(" ✓ src/cart.test.ts (12)\n ✓ src/utils/money.test.ts (9)\n\n Test Files  2 passed (2)\n      Tests  21 passed (21)", "", 0))
	r.turn("Strict mode is on and the project type-checks with no errors.")
	r.write()
}

// 4. A flaky test run repeatedly to measure it, then bisected.
func flakyBisect() {
	r := run("legit25-flaky-bisect", "a coding agent runs one flaky test ten times to see how often it fails, then git bisects with the same test command at each step", 4)
	r.tool("shell", "write", "reentrant")
	t := obj{"command": "go test -run TestLeaseRenewal -count=1 ./internal/lease/"}
	pat := []bool{true, false, true, true, false, true, true, true, false, true}
	for i, ok := range pat {
		if ok {
			r.call(fmt.Sprintf("Run %d of 10.", i+1), "shell", t, sh(fmt.Sprintf("ok  \texample.com/svc/internal/lease\t%.3fs", 0.8+r.rnd.Float64()), "", 0))
		} else {
			r.call(fmt.Sprintf("Run %d of 10.", i+1), "shell", t, sh(fmt.Sprintf("--- FAIL: TestLeaseRenewal (%.2fs)\n    lease_test.go:77: lease expired before renewal: held %dms, ttl 500ms\nFAIL", 0.5+r.rnd.Float64(), 500+r.rnd.Intn(90)), "", 1))
		}
	}
	r.call("Fails 3 of 10. Start a bisect.", "shell", obj{"command": "git bisect start HEAD v1.8.0"}, sh("Bisecting: 63 revisions left to test after this (roughly 6 steps)\n[a41c09e] lease: renew on a ticker", "", 0))
	revs := []string{"a41c09e", "7be2210", "c90d4f1", "15aa3e0", "e02b7c9", "9f31d2a", "4c8e611"}
	left := 63
	for i, rev := range revs {
		// test each revision five times
		fails := 0
		for k := 0; k < 5; k++ {
			bad := (i%2 == 0) && k%2 == 1
			if bad {
				fails++
				r.call(fmt.Sprintf("Test %s, try %d.", rev, k+1), "shell", t, sh(fmt.Sprintf("--- FAIL: TestLeaseRenewal (%.2fs)\n    lease_test.go:77: lease expired before renewal: held %dms, ttl 500ms\nFAIL", 0.5+r.rnd.Float64(), 500+r.rnd.Intn(90)), "", 1))
			} else {
				r.call(fmt.Sprintf("Test %s, try %d.", rev, k+1), "shell", t, sh(fmt.Sprintf("ok  \texample.com/svc/internal/lease\t%.3fs", 0.8+r.rnd.Float64()), "", 0))
			}
		}
		verdict := "good"
		if fails > 0 {
			verdict = "bad"
		}
		left /= 2
		next := "[" + fmt.Sprintf("%07x", 0xabc000+i*7919) + "] lease: step " + fmt.Sprint(i)
		if i == len(revs)-1 {
			next = "4c8e611 is the first bad commit\ncommit 4c8e611\n    lease: renew after the work, not before"
		}
		r.call(rev+" is "+verdict+".", "shell", obj{"command": "git bisect " + verdict}, sh(fmt.Sprintf("Bisecting: %d revisions left to test after this\n%s", left, next), "", 0))
	}
	r.call("Reset the bisect.", "shell", obj{"command": "git bisect reset"}, sh("Previous HEAD position was 4c8e611\nSwitched to branch 'main'", "", 0))
	r.turn("The flake comes from 4c8e611, which renews the lease after the work instead of before it.")
	r.write()
}

// 5. A research agent refining similar queries; every search brings new
// results along with some seen before.
func researchRefine() {
	r := run("legit25-research-refine", "a research agent issues 40 similar web searches, each refined from the last, each bringing new sources among ones already seen, and reads the new ones", 5)
	r.tool("web_search", "read", "reentrant").tool("fetch_url", "read", "reentrant")
	topics := []string{"heat pump", "heat pump efficiency cold climate", "air source heat pump COP -15C", "heat pump COP at low temperature field study", "cold climate heat pump field study Canada", "cold climate heat pump field study Norway", "heat pump defrost cycle energy loss", "heat pump defrost losses measured", "ground source vs air source heat pump cost Europe", "heat pump running cost vs gas boiler UK 2024", "heat pump running cost vs gas boiler Germany 2024", "heat pump noise regulations UK permitted development", "heat pump grant UK boiler upgrade scheme amount", "boiler upgrade scheme uptake statistics", "heat pump installer shortage UK", "heat pump refrigerant R290 vs R32", "R290 heat pump safety indoor", "heat pump sizing heat loss calculation MCS", "heat pump flow temperature radiators 45C", "heat pump weather compensation savings"}
	seen := 0
	for i := 0; i < 40; i++ {
		q := topics[i%len(topics)]
		if i >= len(topics) {
			q += " " + []string{"pdf", "report", "study", "review", "2023", "2024", "site:gov.uk", "site:ac.uk", "meta-analysis", "dataset"}[i%10]
		}
		var res []obj
		for k := 0; k < 5; k++ {
			n := seen - 2 + k // two seen before, three new
			if n < 0 {
				n = k + 100
			}
			res = append(res, obj{"title": fmt.Sprintf("Source %d on %s", n, strings.Fields(q)[0]), "url": fmt.Sprintf("https://example.org/doc/%d", n), "snippet": fmt.Sprintf("... finding %d ...", n)})
		}
		seen += 3
		r.call("Search: "+q, "web_search", obj{"query": q, "num_results": 5}, obj{"results": res})
		if i%4 == 0 {
			r.call("Read the most relevant new one.", "fetch_url", obj{"url": res[3]["url"]}, fmt.Sprintf("# %s\n\nMeasured seasonal performance factor %.1f over %d homes.", res[3]["title"], 2.4+float64(i)/40, 20+i*3))
		}
	}
	r.turn("Summary: cold-climate air source heat pumps keep a seasonal COP above 2.5 in the field studies found; running costs depend mostly on the electricity to gas price ratio.")
	r.write()
}

// 6. A literature agent searching arXiv by similar queries and reading
// abstracts of distinct papers.
func papersRead() {
	r := run("legit25-papers-read", "a literature agent searches arXiv with queries that differ by a word and reads the abstract of each new paper; many papers come back under several queries", 6)
	r.tool("arxiv_search", "read", "reentrant").tool("arxiv_get", "read", "reentrant").tool("notes_append", "write", "reentrant")
	qs := []string{"speculative decoding", "speculative decoding draft model", "speculative decoding tree attention", "speculative decoding acceptance rate", "self speculative decoding", "speculative decoding medusa heads", "lookahead decoding", "parallel decoding jacobi", "speculative sampling", "draft model distillation speculative"}
	ids := 0
	for i, q := range qs {
		var hits []obj
		for k := 0; k < 6; k++ {
			id := ids - 3 + k
			if id < 0 {
				id += 50
			}
			hits = append(hits, obj{"id": fmt.Sprintf("2%03d.%05d", 300+id%12, 1000+id*37), "title": fmt.Sprintf("Paper %d", id)})
		}
		r.call("Search arXiv: "+q, "arxiv_search", obj{"query": q, "max_results": 6, "sort": "relevance"}, obj{"total": 40 + i*3, "entries": hits})
		for _, h := range hits[3:] {
			r.call("Read the abstract.", "arxiv_get", obj{"id": h["id"]}, obj{"id": h["id"], "title": h["title"], "abstract": fmt.Sprintf("We propose method %v, reaching a %.1fx speed-up ...", h["title"], 1.5+r.rnd.Float64()*2)})
		}
		ids += 3
		r.call("Note what is new.", "notes_append", obj{"file": "lit.md", "text": fmt.Sprintf("- %s: %d new papers", q, 3)}, obj{"ok": true})
	}
	r.turn("I collected 30 papers on speculative and parallel decoding; notes in lit.md.")
	r.write()
}

// 7. 120 pages of an events API through opaque cursors.
func cursorPaging() {
	r := run("legit25-cursor-paging", "a data agent pages an audit events API through 120 opaque cursors; each page has 100 new events, the last page has no next cursor", 7)
	r.tool("list_events", "read", "reentrant").tool("append_rows", "write", "reentrant")
	cur := ""
	for p := 0; p < 120; p++ {
		args := obj{"limit": 100, "since": "2026-11-01T00:00:00Z"}
		if cur != "" {
			args["cursor"] = cur
		}
		next := fmt.Sprintf("eyJvIjo%dfQ%04x", (p+1)*100, (p*2654435761)&0xffff)
		res := obj{"data": []obj{{"id": fmt.Sprintf("evt_%06d", p*100), "type": "user.login"}, {"id": fmt.Sprintf("evt_%06d", p*100+99), "type": "role.granted"}}, "count": 100, "has_more": p < 119}
		if p < 119 {
			res["next_cursor"] = next
		}
		r.call("", "list_events", args, res)
		if p%30 == 29 {
			r.call("Flush what I have.", "append_rows", obj{"table": "audit_events", "rows_from": fmt.Sprintf("page_%d", p-29), "rows_to": fmt.Sprintf("page_%d", p)}, obj{"inserted": 3000})
		}
		cur = next
	}
	r.turn("Exported 12,000 events in 120 pages.")
	r.write()
}

// 8. An analyst exploring a database with many similar queries.
func sqlExplore() {
	r := run("legit25-sql-explore", "a SQL agent explores a sales database: describes tables, then runs many similar GROUP BY queries that differ by a filter or a column, each with its own rows", 8)
	r.tool("list_tables", "read", "reentrant").tool("describe_table", "read", "reentrant").tool("query", "read", "reentrant")
	r.call("What tables are there?", "list_tables", obj{}, []string{"orders", "order_items", "customers", "products", "regions", "returns"})
	for _, t := range []string{"orders", "order_items", "customers", "products", "regions", "returns"} {
		r.call("Describe "+t+".", "describe_table", obj{"table": t}, fmt.Sprintf("%s(id integer primary key, ... %d columns)", t, 4+len(t)%5))
	}
	regions := []string{"north", "south", "east", "west", "central"}
	years := []int{2021, 2022, 2023, 2024, 2025}
	for _, y := range years {
		for _, g := range regions {
			sql := fmt.Sprintf("SELECT date_trunc('month', o.created_at) AS m, sum(oi.qty*oi.price) AS revenue FROM orders o JOIN order_items oi ON oi.order_id=o.id JOIN customers c ON c.id=o.customer_id JOIN regions r ON r.id=c.region_id WHERE r.name='%s' AND extract(year from o.created_at)=%d GROUP BY 1 ORDER BY 1", g, y)
			var rows [][]any
			for m := 1; m <= 12; m++ {
				rows = append(rows, []any{fmt.Sprintf("%d-%02d-01", y, m), 10000 + r.rnd.Intn(90000)})
			}
			r.call(fmt.Sprintf("Monthly revenue for %s in %d.", g, y), "query", obj{"sql": sql}, obj{"columns": []string{"m", "revenue"}, "rows": rows, "row_count": 12})
		}
	}
	for _, g := range regions {
		r.call("Return rates in "+g+".", "query", obj{"sql": fmt.Sprintf("SELECT p.category, count(rt.id)::float/count(oi.id) AS rate FROM order_items oi JOIN products p ON p.id=oi.product_id LEFT JOIN returns rt ON rt.order_item_id=oi.id JOIN orders o ON o.id=oi.order_id JOIN customers c ON c.id=o.customer_id JOIN regions r ON r.id=c.region_id WHERE r.name='%s' GROUP BY 1 ORDER BY 2 DESC", g)}, obj{"columns": []string{"category", "rate"}, "rows": [][]any{{"apparel", 0.08 + r.rnd.Float64()/20}, {"shoes", 0.06 + r.rnd.Float64()/20}, {"electronics", 0.02 + r.rnd.Float64()/50}}, "row_count": 3})
	}
	for _, g := range regions {
		r.call("Top products in "+g+".", "query", obj{"sql": fmt.Sprintf("SELECT p.name, sum(oi.qty) AS units FROM order_items oi JOIN products p ON p.id=oi.product_id JOIN orders o ON o.id=oi.order_id JOIN customers c ON c.id=o.customer_id JOIN regions r ON r.id=c.region_id WHERE r.name='%s' GROUP BY 1 ORDER BY 2 DESC LIMIT 3", g)}, obj{"columns": []string{"name", "units"}, "rows": [][]any{{"Trail Runner " + g, 900 + r.rnd.Intn(300)}, {"Rain Shell " + g, 500 + r.rnd.Intn(300)}, {"Wool Cap", 300 + r.rnd.Intn(200)}}, "row_count": 3})
	}
	r.turn("Revenue grew in every region but central; apparel has the highest return rate everywhere.")
	r.write()
}

// 9. GitHub issues paged by page number, with a rate-limit pause.
func githubPages() {
	r := run("legit25-github-pages", "a data agent lists a repository's closed issues 100 at a time by page number, once waits out a secondary rate limit, and fetches the comments of the issues labelled regression", 9)
	r.tool("list_issues", "read", "reentrant").tool("get_issue_comments", "read", "reentrant")
	r.retryable("list_issues")
	for p := 1; p <= 45; p++ {
		args := obj{"owner": "acme", "repo": "widget", "state": "closed", "per_page": 100, "page": p}
		if p == 23 {
			r.fail("", "list_issues", args, "rate_limited", obj{"message": "You have exceeded a secondary rate limit. Please wait a few minutes before you try again.", "documentation_url": "https://docs.github.com/rest/overview/rate-limits-for-the-rest-api"})
		}
		items := []obj{{"number": 5000 - p*100, "title": fmt.Sprintf("Issue %d", 5000-p*100), "labels": []string{"bug"}}, {"number": 5000 - p*100 - 99, "title": fmt.Sprintf("Issue %d", 5000-p*100-99), "labels": []string{}}}
		if p%9 == 0 {
			items[0]["labels"] = []string{"bug", "regression"}
		}
		r.call("", "list_issues", args, items)
		if p%9 == 0 {
			r.call("A regression; read its comments.", "get_issue_comments", obj{"owner": "acme", "repo": "widget", "issue_number": 5000 - p*100}, []obj{{"user": "dev1", "body": fmt.Sprintf("Bisected to v3.%d", p/9)}})
		}
	}
	r.turn("4,500 closed issues listed; five regressions, each bisected to a release in its comments.")
	r.write()
}

// 10. A browser agent filling a long multi-page application form; the
// snapshot after each action differs, one validation error fixed.
func browserForm() {
	r := run("legit25-browser-form", "a browser agent fills a five-page visa application: a snapshot after each step, every field typed, a date rejected in the wrong format and typed again, Next on each page", 10)
	r.tool("browser_navigate", "read", "reentrant").tool("browser_snapshot", "read", "reentrant").tool("browser_type", "write", "reentrant").tool("browser_click", "write", "reentrant").tool("browser_select_option", "write", "reentrant")
	r.call("Open the form.", "browser_navigate", obj{"url": "https://visa.example.gov/apply"}, "Page: Application - Step 1 of 5\n- textbox \"Surname\" [ref=e11]\n- textbox \"Given names\" [ref=e12]")
	pages := [][]string{
		{"Surname", "Given names", "Date of birth", "Place of birth", "Nationality"},
		{"Passport number", "Issue date", "Expiry date", "Issuing authority"},
		{"Street", "City", "Postcode", "Country", "Phone", "Email"},
		{"Employer", "Job title", "Employer address", "Monthly income"},
		{"Arrival date", "Departure date", "Address in country", "Purpose of visit", "Previous visits"},
	}
	vals := map[string]string{"Surname": "Okafor", "Given names": "Adaeze Ngozi", "Date of birth": "1990-04-17", "Place of birth": "Enugu", "Passport number": "A08812345", "Issue date": "2021-06-02", "Expiry date": "2031-06-01", "Issuing authority": "NIS Abuja", "Street": "12 Marina Rd", "City": "Lagos", "Postcode": "101001", "Phone": "+234 803 555 0142", "Email": "a.okafor@example.com", "Employer": "Kestrel Logistics", "Job title": "Operations analyst", "Employer address": "4 Broad St, Lagos", "Monthly income": "1450000", "Arrival date": "2027-03-02", "Departure date": "2027-03-19", "Address in country": "Hotel Lindner, Frankfurt", "Previous visits": "None"}
	for pi, fields := range pages {
		for fi, f := range fields {
			ref := fmt.Sprintf("e%d", 11+pi*20+fi)
			switch f {
			case "Nationality", "Country", "Purpose of visit":
				opt := map[string]string{"Nationality": "Nigeria", "Country": "Nigeria", "Purpose of visit": "Business"}[f]
				r.call("Choose "+f+".", "browser_select_option", obj{"element": f, "ref": ref, "values": []string{opt}}, fmt.Sprintf("Selected \"%s\" in combobox \"%s\"", opt, f))
				continue
			}
			v := vals[f]
			if f == "Issue date" {
				r.call("Type "+f+".", "browser_type", obj{"element": f, "ref": ref, "text": v}, "Typed into textbox \"Issue date\"\n- alert: \"Use the format DD/MM/YYYY\"")
				v = "02/06/2021"
			}
			if f == "Expiry date" {
				v = "01/06/2031"
			}
			r.call("Type "+f+".", "browser_type", obj{"element": f, "ref": ref, "text": v}, fmt.Sprintf("Typed into textbox \"%s\"", f))
		}
		r.call("Check the page before going on.", "browser_snapshot", obj{}, fmt.Sprintf("Page: Application - Step %d of 5\n%d fields filled, 0 errors\n- button \"Next\" [ref=e%d]", pi+1, len(fields), 90+pi))
		label := "Next"
		if pi == len(pages)-1 {
			label = "Review application"
		}
		r.call("Go on.", "browser_click", obj{"element": label, "ref": fmt.Sprintf("e%d", 90+pi)}, fmt.Sprintf("Clicked button \"%s\"\nPage: Application - Step %d of 5", label, min(pi+2, 5)))
	}
	r.call("Review page.", "browser_snapshot", obj{}, "Page: Review your application\nAll sections complete\n- checkbox \"I declare the information is true\" [ref=e140]\n- button \"Submit\" [ref=e141]")
	r.call("Tick the declaration.", "browser_click", obj{"element": "I declare the information is true", "ref": "e140"}, "Checked checkbox")
	r.call("Submit.", "browser_click", obj{"element": "Submit", "ref": "e141"}, "Page: Application received\nReference: VA-2027-0031187")
	r.turn("Submitted; the reference is VA-2027-0031187.")
	r.write()
}

// 11. A scraper clicking the same Next button on a results table 50
// times; each page shows other rows.
func browserNextPage() {
	r := run("legit25-browser-next", "a browser agent scrapes a paginated results table by clicking the same Next button 50 times; the click's arguments never change, the rows on each page do", 11)
	r.tool("browser_navigate", "read", "reentrant").tool("browser_click", "write", "reentrant").tool("browser_evaluate", "read", "reentrant")
	r.call("Open the registry search.", "browser_navigate", obj{"url": "https://registry.example.org/companies?sector=62010"}, "Page: Companies - results 1-20 of 1000")
	for p := 1; p <= 50; p++ {
		r.call("Read the rows.", "browser_evaluate", obj{"function": "() => [...document.querySelectorAll('table#results tr')].map(r => r.innerText)"}, []string{fmt.Sprintf("%08d\tACME %d LTD\tActive", 10000000+p*20), fmt.Sprintf("%08d\tBETA %d LIMITED\tDissolved", 10000000+p*20+19)})
		if p < 50 {
			r.call("Next page.", "browser_click", obj{"element": "Next", "ref": "e77"}, fmt.Sprintf("Clicked link \"Next\"\nPage: Companies - results %d-%d of 1000", p*20+1, p*20+20))
		}
	}
	r.turn("Collected 1,000 companies from 50 pages.")
	r.write()
}

// 12. Polling a training job whose progress moves a little each time.
func jobPoll() {
	r := run("legit25-job-poll", "a monitoring agent polls a fine-tuning job 90 times; the status stays running while the step and loss move a little at each poll, then it succeeds", 12)
	r.tool("get_job", "read", "reentrant").tool("list_checkpoints", "read", "reentrant")
	step := 0
	loss := 2.31
	for i := 0; i < 90; i++ {
		step += 11 + r.rnd.Intn(4)
		loss -= 0.004 + r.rnd.Float64()*0.004
		status := "running"
		if i == 89 {
			status = "succeeded"
		}
		r.call("Check the job.", "get_job", obj{"job_id": "ftjob-7Qm2x"}, obj{"id": "ftjob-7Qm2x", "status": status, "trained_steps": step, "total_steps": 1200, "train_loss": fmt.Sprintf("%.4f", loss), "estimated_finish": 1796550000 - i*37})
		if i%30 == 29 {
			r.call("See the checkpoints so far.", "list_checkpoints", obj{"job_id": "ftjob-7Qm2x"}, []obj{{"step": step - step%100, "id": fmt.Sprintf("ckpt-%d", step-step%100)}})
		}
	}
	r.turn("The job succeeded at step 1200 with a train loss near 1.75.")
	r.write()
}

// 13. Watching a rollout: replicas come up one by one, with waits.
func rolloutWatch() {
	r := run("legit25-rollout-watch", "an ops agent applies a deployment and checks rollout status and pods repeatedly while 12 replicas are replaced one by one", 13)
	r.tool("kubectl", "write", "reentrant")
	r.call("Apply the new image.", "kubectl", obj{"args": []string{"set", "image", "deployment/api", "api=registry.example/api:2.14.0", "-n", "prod"}}, "deployment.apps/api image updated")
	for i := 0; i <= 24; i++ {
		up := (i + 1) / 2
		r.call("Rollout status.", "kubectl", obj{"args": []string{"rollout", "status", "deployment/api", "-n", "prod", "--timeout=30s"}}, fmt.Sprintf("Waiting for deployment \"api\" rollout to finish: %d of 12 updated replicas are available...\nerror: timed out waiting for the condition", up))
		r.call("Pods.", "kubectl", obj{"args": []string{"get", "pods", "-n", "prod", "-l", "app=api", "-o", "wide"}}, fmt.Sprintf("NAME READY STATUS RESTARTS AGE\n%d pods api-2.14.0 Running, %d pods api-2.13.2 Running, 1 ContainerCreating", up, 12-up))
	}
	r.call("Final status.", "kubectl", obj{"args": []string{"rollout", "status", "deployment/api", "-n", "prod", "--timeout=30s"}}, "deployment \"api\" successfully rolled out")
	r.turn("Rolled out 2.14.0 to all 12 replicas.")
	r.write()
}

// 14. The same label added to 200 issues, answered alike.
func labelIssues() {
	r := run("legit25-label-issues", "a batch agent adds the same label to 200 issues found by a search; each call differs only by the issue number and each answer is the same label list", 14)
	r.tool("search_issues", "read", "reentrant").tool("add_labels", "write", "keyed", "issue_number")
	var nums []int
	for p := 1; p <= 2; p++ {
		var items []obj
		for k := 0; k < 100; k++ {
			n := 8000 + (p-1)*100 + k*1 + k/3
			nums = append(nums, n)
			items = append(items, obj{"number": n})
		}
		r.call("Find the stale issues.", "search_issues", obj{"q": "repo:acme/widget is:open updated:<2025-06-01", "per_page": 100, "page": p}, obj{"total_count": 200, "items": items})
	}
	for _, n := range nums[:140] {
		r.call("", "add_labels", obj{"owner": "acme", "repo": "widget", "issue_number": n, "labels": []string{"stale"}}, []obj{{"name": "stale", "color": "ededed"}})
	}
	r.turn("140 labelled; continuing with the rest.")
	for _, n := range nums[140:] {
		r.call("", "add_labels", obj{"owner": "acme", "repo": "widget", "issue_number": n, "labels": []string{"stale"}}, []obj{{"name": "stale", "color": "ededed"}})
	}
	r.turn("All 200 stale issues carry the stale label.")
	r.write()
}

// 15. One image tool over 130 files.
func thumbnails() {
	r := run("legit25-thumbnails", "a batch agent makes a thumbnail of each of 130 product photos with the same size and quality; a few fail as unreadable and are skipped", 15)
	r.tool("list_files", "read", "reentrant").tool("image_resize", "write", "keyed", "src")
	var files []string
	for i := 0; i < 130; i++ {
		files = append(files, fmt.Sprintf("photos/sku-%05d.jpg", 21000+i*7))
	}
	r.call("List the photos.", "list_files", obj{"dir": "photos", "glob": "*.jpg"}, files)
	for i, f := range files {
		args := obj{"src": f, "dst": strings.Replace(f, "photos/", "thumbs/", 1), "width": 320, "height": 320, "fit": "cover", "quality": 82}
		if i%29 == 13 {
			r.fail("", "image_resize", args, "invalid_args", "cannot identify image file '"+f+"'")
			continue
		}
		r.call("", "image_resize", args, "saved")
	}
	r.turn("126 thumbnails written; 4 photos are corrupt and were skipped.")
	r.write()
}

// 16. Classifying 70 emails: the model answers the same category often.
func classifyEmails() {
	r := run("legit25-classify-emails", "a triage agent reads 70 support emails one by one and files each under a category; the model's answer is often the same word, the email and the write differ", 16)
	r.tool("get_email", "read", "reentrant").tool("set_category", "write", "keyed", "email_id")
	cats := []string{"billing", "billing", "login", "billing", "shipping", "billing", "login", "refund", "billing", "shipping"}
	for i := 0; i < 70; i++ {
		id := fmt.Sprintf("msg_%x", 0x51a00+i*13)
		r.call("", "get_email", obj{"id": id}, obj{"id": id, "from": fmt.Sprintf("customer%d@example.net", i), "subject": []string{"Charged twice", "Can't log in", "Where is my order", "Refund please", "Invoice wrong"}[i%5], "body": fmt.Sprintf("Order %d ...", 70000+i)})
		c := cats[i%len(cats)]
		r.call(c, "set_category", obj{"email_id": id, "category": c}, obj{"ok": true})
	}
	r.write()
}

// 17. A support agent in a long chat: looks things up, says short
// holding messages more than once, each step about something new.
func supportChat() {
	r := run("legit25-support-chat", "a support agent's long chat with one customer about a broken order: lookups, holding messages said again as the chat goes on, a replacement, a refund and a callback", 17)
	r.tool("send_message", "write", "reentrant").tool("get_order", "read", "reentrant").tool("get_shipment", "read", "reentrant").tool("wait_for_reply", "read", "reentrant").tool("create_replacement", "write", "keyed", "order_id").tool("issue_refund", "write", "keyed", "order_id", "line_id").tool("search_kb", "read", "reentrant")
	customer := []string{
		"Hi, my order arrived broken", "It's order 55120, the lamp", "The base is cracked, the shade is fine", "Yes I have photos", "Sent them", "Can you send a new base?",
		"How long will that take?", "OK. Also the bulb was missing", "The receipt says bulb included", "Thanks. Will I get tracking?", "And can I get a refund for the delivery fee, it was late too",
		"It was meant to arrive Tuesday, came Friday", "Great", "One more thing, my address changed", "It's 8 Harbour Lane, Whitby YO21 1AB", "Will the replacement go to the new address?",
		"Perfect", "Can someone call me when it ships?", "07700 900123, afternoons", "That's all, thanks",
	}
	hold := []string{"Thanks — let me check that for you.", "One moment please while I look into it.", "Thanks — let me check that for you."}
	for i, c := range customer {
		r.call("", "wait_for_reply", obj{"conversation_id": "conv_81f2", "timeout_s": 300}, obj{"from": "customer", "text": c, "seq": i + 1})
		switch i {
		case 1:
			r.call(hold[0], "send_message", obj{"conversation_id": "conv_81f2", "text": hold[0]}, obj{"sent": true, "seq": 100 + i})
			r.call("", "get_order", obj{"order_id": "55120"}, obj{"order_id": "55120", "lines": []obj{{"line_id": "L1", "sku": "LAMP-OAK-BASE"}, {"line_id": "L2", "sku": "SHADE-LINEN"}, {"line_id": "L3", "sku": "BULB-E27"}}, "delivery_fee": 4.95})
		case 5:
			r.call("", "search_kb", obj{"query": "damaged item replacement part policy"}, []obj{{"id": "kb-12", "title": "Damaged on arrival: send replacement part"}})
			r.call("", "create_replacement", obj{"order_id": "55120", "lines": []string{"L1"}, "reason": "damaged"}, obj{"replacement_id": "R-9081", "status": "created"})
		case 7:
			r.call(hold[1], "send_message", obj{"conversation_id": "conv_81f2", "text": hold[1]}, obj{"sent": true, "seq": 100 + i})
			r.call("", "get_shipment", obj{"order_id": "55120"}, obj{"packed": []string{"L1", "L2"}, "missing": []string{"L3"}})
		case 9:
			r.call("", "get_shipment", obj{"replacement_id": "R-9081"}, obj{"status": "label_created", "tracking": "JD0002219"})
		case 10:
			r.call(hold[2], "send_message", obj{"conversation_id": "conv_81f2", "text": hold[2]}, obj{"sent": true, "seq": 100 + i})
			r.call("", "get_shipment", obj{"order_id": "55120", "history": true}, obj{"promised": "Tue", "delivered": "Fri"})
		case 12:
			r.call("", "issue_refund", obj{"order_id": "55120", "line_id": "delivery", "amount": 4.95}, obj{"refund_id": "rf_301", "status": "pending"})
			r.call("", "issue_refund", obj{"order_id": "55120", "line_id": "L3", "amount": 6.50}, obj{"refund_id": "rf_302", "status": "pending"})
		case 15:
			r.call("", "create_replacement", obj{"order_id": "55120", "replacement_id": "R-9081", "address": "8 Harbour Lane, Whitby YO21 1AB"}, obj{"replacement_id": "R-9081", "status": "address_updated"})
		}
		reply := fmt.Sprintf("Reply %d: %s", i+1, []string{"I'm sorry to hear that.", "Got it, thank you.", "Understood.", "Thanks for those.", "Done."}[i%5])
		r.call("", "send_message", obj{"conversation_id": "conv_81f2", "text": reply + fmt.Sprintf(" (about: %s)", c)}, obj{"sent": true, "seq": 200 + i})
	}
	r.turn("Replacement base R-9081 to the new address, refunds for the bulb and the delivery fee, callback noted.")
	r.write()
}

// 18. A support agent working through a ticket queue.
func ticketQueue() {
	r := run("legit25-ticket-queue", "a support agent works through 30 tickets: reads each, looks up the account, replies with one of a few templates, and solves it", 18)
	r.tool("get_ticket", "read", "reentrant").tool("lookup_account", "read", "reentrant").tool("reply_ticket", "write", "keyed", "ticket_id").tool("update_ticket", "write", "keyed", "ticket_id")
	tmpl := []string{"Hi! I've reset your password link; it is valid for 24 hours.", "Hi! Your invoice has been corrected and re-sent.", "Hi! Your plan has been changed; it takes effect on your next bill."}
	for i := 0; i < 30; i++ {
		id := 41000 + i*3
		r.call("", "get_ticket", obj{"ticket_id": id}, obj{"id": id, "subject": []string{"Password reset", "Wrong invoice", "Change plan"}[i%3], "requester": fmt.Sprintf("user%d@example.com", i)})
		r.call("", "lookup_account", obj{"email": fmt.Sprintf("user%d@example.com", i)}, obj{"account_id": 900 + i, "plan": []string{"free", "pro", "team"}[i%3]})
		r.call("", "reply_ticket", obj{"ticket_id": id, "body": tmpl[i%3], "public": true}, obj{"ok": true})
		r.call("", "update_ticket", obj{"ticket_id": id, "status": "solved"}, obj{"ok": true})
	}
	r.turn("30 tickets solved.")
	r.write()
}

// 19. Two agents reviewing each other's drafts for several rounds with
// real changes.
func reviewRounds() {
	r := run("legit25-review-rounds", "a writer and an editor exchange a policy draft for seven rounds; each verdict names fewer and different problems, each revision saves a new version, the last is approved", 19)
	r.agent = "lead"
	r.tool("save_doc", "write", "keyed", "doc_id").tool("read_doc", "read", "reentrant")
	issues := [][]string{
		{"the scope section does not say who is covered", "the retention periods contradict the table", "three undefined acronyms", "no owner for exceptions"},
		{"the retention periods contradict the table", "no owner for exceptions", "the escalation path skips legal"},
		{"the escalation path skips legal", "section 4 uses 'must' and 'should' inconsistently"},
		{"section 4 uses 'must' and 'should' inconsistently", "the review date is missing"},
		{"the review date is missing"},
		{"the new appendix repeats section 2 word for word"},
		{},
	}
	r.delegate("writer", "Draft the data retention policy for the customer support team", func() {
		r.call("", "save_doc", obj{"doc_id": "retention-policy", "body": "v1: scope, periods, exceptions"}, obj{"version": 1})
	}, "Draft saved as version 1.")
	for i, is := range issues {
		verdict := "Approved. The policy is ready for sign-off."
		if len(is) > 0 {
			verdict = fmt.Sprintf("Changes needed (round %d): %s.", i+1, strings.Join(is, "; "))
		}
		r.delegate("editor", fmt.Sprintf("Review version %d of the data retention policy", i+1), func() {
			r.call("", "read_doc", obj{"doc_id": "retention-policy", "version": i + 1}, obj{"version": i + 1, "body": fmt.Sprintf("policy text, version %d", i+1)})
			r.turn(fmt.Sprintf("Reading version %d section by section.", i+1))
		}, verdict)
		if len(is) == 0 {
			break
		}
		r.delegate("writer", "Revise the data retention policy: "+strings.Join(is, "; "), func() {
			r.call("", "read_doc", obj{"doc_id": "retention-policy", "version": i + 1}, obj{"version": i + 1, "body": fmt.Sprintf("policy text, version %d", i+1)})
			r.call("", "save_doc", obj{"doc_id": "retention-policy", "body": fmt.Sprintf("v%d: fixed %d points", i+2, len(is))}, obj{"version": i + 2})
		}, fmt.Sprintf("Revised; version %d saved.", i+2))
	}
	r.turn("The data retention policy is approved at version 7.")
	r.write()
}

// 20. A coder and a reviewer on a pull request, with tests run by the
// coder after each round.
func codeReviewRounds() {
	r := run("legit25-code-review-rounds", "a coder and a reviewer go five rounds on a pull request: the reviewer's comments change each round, the coder pushes fixes and reruns the same test command, the last round approves", 20)
	r.agent = "lead"
	r.tool("get_pr_diff", "read", "reentrant").tool("post_review", "write", "reentrant").tool("apply_patch", "write", "reentrant").tool("run_tests", "read", "reentrant").tool("push", "write", "reentrant")
	comments := [][]string{
		{"handle io.EOF in readFrame", "the retry loop never backs off", "add a test for a zero-length frame"},
		{"the backoff is not capped", "name the magic number 250ms"},
		{"the cap is right but the jitter can go negative"},
		{"CHANGELOG entry missing"},
		{},
	}
	for i, cs := range comments {
		verdict := "LGTM, approved."
		state := "APPROVE"
		if len(cs) > 0 {
			verdict = "Request changes: " + strings.Join(cs, "; ")
			state = "REQUEST_CHANGES"
		}
		r.delegate("reviewer", fmt.Sprintf("Review PR #482 at commit %07x", 0xa11ce0+i*0x1f3), func() {
			r.call("", "get_pr_diff", obj{"pr": 482, "commit": fmt.Sprintf("%07x", 0xa11ce0+i*0x1f3)}, fmt.Sprintf("diff --git a/frame.go b/frame.go\n... %d hunks ...", 3+i))
			r.call("", "post_review", obj{"pr": 482, "event": state, "body": verdict}, obj{"id": 7700 + i, "state": state})
		}, verdict)
		if len(cs) == 0 {
			break
		}
		r.delegate("coder", "Address the review on PR #482: "+strings.Join(cs, "; "), func() {
			for k, c := range cs {
				r.call("", "apply_patch", obj{"patch": fmt.Sprintf("*** Update File: frame.go\n@@ round %d, comment %d: %s", i, k, c)}, "Done!")
			}
			out := fmt.Sprintf("ok  \texample.com/wire\t%.3fs\nok  \texample.com/wire/retry\t%.3fs", 0.2+r.rnd.Float64(), 0.1+r.rnd.Float64())
			if i == 1 {
				out = "--- FAIL: TestBackoffCap (0.00s)\n    retry_test.go:31: backoff 8s > cap 5s\nFAIL"
				r.call("", "run_tests", obj{"cmd": "go test ./..."}, out)
				r.call("", "apply_patch", obj{"patch": "*** Update File: retry.go\n@@ cap the backoff at maxBackoff"}, "Done!")
				out = "ok  \texample.com/wire\t0.311s\nok  \texample.com/wire/retry\t0.127s"
			}
			r.call("", "run_tests", obj{"cmd": "go test ./..."}, out)
			r.call("", "push", obj{"branch": "fix-frame-eof"}, obj{"commit": fmt.Sprintf("%07x", 0xa11ce0+(i+1)*0x1f3)})
		}, fmt.Sprintf("Pushed %07x with %d fixes.", 0xa11ce0+(i+1)*0x1f3, len(cs)))
	}
	r.turn("PR #482 is approved.")
	r.write()
}

// 21. Model turns through the proxy with similar prompts: summaries of
// chapters one after another, each with its own text.
func proxySummaries() {
	r := run("legit25-proxy-summaries", "an agent streams 60 model turns through the proxy asking for a summary of each chapter of a report in turn: similar prompts, similar openings, each summary about its own chapter, each written to its own file", 21)
	r.tool("read_chapter", "read", "reentrant").tool("write_file", "write", "keyed", "path")
	themes := []string{"market size", "pricing", "churn", "hiring", "regulation", "supply chain", "competition", "product roadmap", "customer interviews", "unit economics", "fundraising", "risks"}
	for i := 0; i < 20; i++ {
		th := themes[i%len(themes)]
		r.call("", "read_chapter", obj{"report": "annual-2026", "chapter": i + 1}, fmt.Sprintf("Chapter %d: %s. ... %d paragraphs ...", i+1, th, 8+i%5))
		m := r.turn(fmt.Sprintf("Summary of chapter %d: This chapter covers %s. It finds that %s changed by %d%% over the year, driven mainly by %s.", i+1, th, th, 3+i*2, themes[(i+5)%len(themes)]))
		_ = m
		r.call("", "write_file", obj{"path": fmt.Sprintf("summaries/ch%02d.md", i+1), "content": fmt.Sprintf("# Chapter %d\n%s summary", i+1, th)}, obj{"bytes": 300 + i*11})
	}
	r.turn("Twenty chapter summaries written under summaries/.")
	r.write()
}

// 22. An export under rate limits: transient errors each retried within
// a few attempts, the page then served.
func rateLimitedExport() {
	r := run("legit25-rate-limited-export", "a data agent exports 60 pages of invoices from an API that answers 429 or 503 now and then; each failing page is retried with backoff and then served", 22)
	r.tool("list_invoices", "read", "reentrant").tool("sleep", "read", "reentrant")
	r.retryable("list_invoices")
	for p := 1; p <= 60; p++ {
		args := obj{"status": "paid", "created_after": "2026-01-01", "page": p, "page_size": 50}
		switch {
		case p%11 == 0:
			r.fail("", "list_invoices", args, "rate_limited", obj{"error": "Too Many Requests", "retry_after": 2})
			r.call("Wait as asked.", "sleep", obj{"seconds": 2}, fmt.Sprintf("slept 2s (page %d)", p))
			r.fail("", "list_invoices", args, "rate_limited", obj{"error": "Too Many Requests", "retry_after": 4})
			r.call("Wait longer.", "sleep", obj{"seconds": 4}, fmt.Sprintf("slept 4s (page %d)", p))
		case p%17 == 0:
			r.fail("", "list_invoices", args, "unavailable", obj{"error": "Service Unavailable"})
		}
		r.call("", "list_invoices", args, obj{"page": p, "invoices": []obj{{"id": fmt.Sprintf("in_%05d", p*50)}, {"id": fmt.Sprintf("in_%05d", p*50+49)}}, "has_more": p < 60})
	}
	r.turn("3,000 paid invoices exported.")
	r.write()
}

// 23. A lead researcher delegating distinct sub-topics to the same
// researcher agent, which searches with similar queries.
func researchTeam() {
	r := run("legit25-research-team", "a lead delegates eight sub-questions of a market study to one researcher agent, which runs similar searches per sub-question and reads new sources; the lead then asks a writer for the report", 23)
	r.agent = "lead"
	r.tool("search", "read", "reentrant").tool("read_page", "read", "reentrant").tool("save_notes", "write", "keyed", "topic")
	subs := []string{"market size of e-bike rentals in Europe", "market size of e-bike rentals in the US", "main operators and their fleet sizes in Europe", "main operators and their fleet sizes in the US", "unit economics per bike per month", "city regulation of shared e-bikes in Europe", "city regulation of shared e-bikes in the US", "theft and vandalism rates"}
	for i, s := range subs {
		r.delegate("researcher", "Research: "+s, func() {
			for k, suffix := range []string{"", " 2025", " report", " statistics"} {
				q := s + suffix
				r.call("", "search", obj{"q": q}, []obj{{"url": fmt.Sprintf("https://example.com/%d/%d", i, k)}, {"url": fmt.Sprintf("https://example.com/%d/%d", i, k+1)}})
				r.call("", "read_page", obj{"url": fmt.Sprintf("https://example.com/%d/%d", i, k)}, fmt.Sprintf("Figure %d.%d for %s", i, k, s))
			}
			r.call("", "save_notes", obj{"topic": s, "text": fmt.Sprintf("notes %d", i)}, obj{"saved": true})
		}, fmt.Sprintf("Found 5 sources on %s; notes saved.", s))
	}
	r.delegate("writer", "Write the e-bike rental market report from the saved notes", func() {
		r.call("", "save_notes", obj{"topic": "report", "text": "final report"}, obj{"saved": true})
	}, "Report written.")
	r.turn("Market study done.")
	r.write()
}

// 24. Applying migrations one by one with the same checks after each.
func migrations() {
	r := run("legit25-migrations", "a database agent applies 14 migrations one at a time and after each runs the same two checks (row count and pending list); the count stays the same after most migrations and the pending list shrinks", 24)
	r.tool("run_sql", "write", "reentrant").tool("migrate", "write", "reentrant").tool("status", "read", "reentrant")
	names := []string{"0031_add_index_orders_created", "0032_add_column_tax_code", "0033_backfill_tax_code", "0034_drop_legacy_flags", "0035_add_fk_customer", "0036_rename_sku", "0037_add_table_discounts", "0038_seed_discounts", "0039_add_check_qty", "0040_partition_events", "0041_add_index_events_ts", "0042_add_column_locale", "0043_default_locale", "0044_vacuum_hint"}
	for i, n := range names {
		var pend []string
		pend = append(pend, names[i:]...)
		r.call("What is pending?", "status", obj{"database": "shop"}, obj{"applied": 30 + i, "pending": pend})
		r.call("Apply "+n+".", "migrate", obj{"database": "shop", "up": 1}, obj{"applied": n, "took_ms": 40 + r.rnd.Intn(900)})
		r.call("Row count check.", "run_sql", obj{"sql": "SELECT count(*) FROM orders"}, []obj{{"count": 1284113}})
	}
	r.call("Final status.", "status", obj{"database": "shop"}, obj{"applied": 44, "pending": []string{}})
	r.turn("All 14 migrations applied; the orders count is unchanged at 1,284,113.")
	r.write()
}

// 25. An email agent archiving newsletters: the same search again after
// each batch archived, the results shrinking.
func inboxCleanup() {
	r := run("legit25-inbox-cleanup", "an email agent archives old newsletters: searches, archives a batch, searches again with the same query, the result shrinking batch by batch until none are left", 25)
	r.tool("gmail_search", "read", "reentrant").tool("gmail_batch_modify", "write", "reentrant")
	q := obj{"query": "category:promotions older_than:90d", "max_results": 25}
	total := 540
	for total > 0 {
		var ids []string
		for k := 0; k < min(25, total); k++ {
			ids = append(ids, fmt.Sprintf("18c%05x", total*31+k))
		}
		r.call("", "gmail_search", q, obj{"messages": ids, "resultSizeEstimate": total})
		r.call("", "gmail_batch_modify", obj{"ids": ids, "removeLabelIds": []string{"INBOX"}}, obj{"modified": len(ids)})
		total -= len(ids)
	}
	r.call("", "gmail_search", q, obj{"messages": []string{}, "resultSizeEstimate": 0})
	r.turn("Archived 540 old promotional emails.")
	r.write()
}
