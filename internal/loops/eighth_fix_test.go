package loops

import (
	"fmt"
	"testing"
)

// TestSameThingRefused: a complaint the error streak does not count (not
// found, a state that refuses the call, an error type it does not know)
// counts when it is the same message about the same named thing each time,
// whatever arguments asked for it: one missing file asked for under four
// spellings, one payment refunded again with other amounts (each
// request's own id aside). Candidate paths tried one by one, a batch
// meeting one state for item after item, and a complaint that names
// nothing go on.
func TestSameThingRefused(t *testing.T) {
	enoent := "Error: ENOENT: no such file or directory, open '/srv/app/config/app.yml'"
	var candidates, batch, generic, status, apostrophe []op
	for i, p := range []string{"config/app.yml", "config/app.yaml", "conf/app.yml", "app.yml", "etc/app.yml", "settings/app.yml"} {
		candidates = append(candidates, failingWith("read_text_file", `{"path":"`+p+`"}`, "tool_error", "Error: ENOENT: no such file or directory, open '/srv/app/"+p+"'"))
		batch = append(batch, failingWith("create_refund", fmt.Sprintf(`{"payment_intent":"pi_%d"}`, 100+i), "invalid_request_error", fmt.Sprintf("Charge ch_%d has already been refunded. (request id: req_%dxQ)", 900+i, 55+i)))
		generic = append(generic, failingWith("get_customer", fmt.Sprintf(`{"id":"C-%d"}`, 10+i), "not_found", "customer not found"))
		status = append(status, failingWith("fetch", `{"url":"https://docs.example.com/`+p+`"}`, "not_found", "HTTP/1.1 404 Not Found"))
		apostrophe = append(apostrophe, failingWith("read_file", `{"path":"`+p+`"}`, "tool_error", "The file doesn't exist (line 1)"))
	}
	refund := func(args string, i int) op {
		return failingWith("create_refund", args, "invalid_request_error", fmt.Sprintf("Charge ch_77 has already been refunded. (request id: req_%dxQ%d)", 31+i*7, i))
	}
	runCases(t, []testCase{
		{"one missing file, its path respelled", nil, []op{
			failingWith("read_text_file", `{"path":"./config/app.yml"}`, "tool_error", enoent),
			failingWith("read_text_file", `{"path":"config/app.yml"}`, "tool_error", enoent),
			failingWith("read_text_file", `{"path":"/srv/app/config/app.yml"}`, "tool_error", enoent),
			refused(failingWith("read_text_file", `{"path":"config//app.yml"}`, "tool_error", enoent), "same_error"),
		}},
		{"one payment refunded again, other amounts", nil, []op{
			refund(`{"payment_intent":"pi_77","amount":4900}`, 0), refund(`{"payment_intent":"pi_77","amount":4899}`, 1),
			refund(`{"payment_intent":"pi_77","reason":"duplicate"}`, 2), refused(refund(`{"payment_intent":"pi_77","amount":2450}`, 3), "same_error"),
		}},
		{"candidate paths tried one by one", nil, candidates},
		{"a batch meeting one state item after item", nil, batch},
		{"a complaint that names nothing", nil, generic},
		{"a status code names nothing", nil, status},
		{"an apostrophe and a line number name nothing", nil, apostrophe},
	})
}

// TestPatternRespelled: a glob or a regular expression is the words it
// matches: one glob respelled (*.pem, **/*.pem, *.PEM) or one expression
// (func\s+Name, func\W+Name) finding nothing each time asks the same
// question, and the fourth asking is refused; globs for other words
// finding nothing go on, and so does a glob respelled that finds files.
func TestPatternRespelled(t *testing.T) {
	find := func(p, res string) op {
		return call("search_files", `{"path":"/srv/app","pattern":"`+p+`"}`, marshalString(res))
	}
	none := "No matches found"
	runCases(t, []testCase{
		{"one glob respelled", nil, []op{find("*.pem", none), find("**/*.pem", none), find("*.PEM", none), refused(find("*pem", none), "rephrase")}},
		{"one expression respelled", nil, []op{
			find(`func\\s+NewLimiter`, none), find(`func\\W+NewLimiter`, none), find(`func\\s*NewLimiter`, none), refused(find(`func\\s+NewLimiter\\b`, none), "rephrase"),
		}},
		{"globs for other words", nil, []op{find("*.pem", none), find("*.key", none), find("*.crt", none), find("*.p12", none), find("*.jks", none)}},
		{"a glob respelled finds files", nil, []op{find("*.env", none), find("**/*.env", none), find("**/.env*", "/srv/app/.env.example\n/srv/app/deploy/.env.prod"), find("*.env*", "/srv/app/.env.example\n/srv/app/deploy/.env.prod\n/srv/app/tools/x.env.sample")}},
	})
}

// TestWriteRespelled: one write made again in other spellings (a list in
// another order, a value in another case), answered alike three times in
// a row, changed nothing: the next is refused as a write made again word
// for word is. Writes of other values (a batch, edits of other contents)
// and a write whose answer moves go on.
func TestWriteRespelled(t *testing.T) {
	entity := func(i int, res string) op {
		obs := []string{`"works at Acme"`, `"backend team"`, `"joined 2018"`}
		o := fmt.Sprintf(`{"entities":[{"name":"Ana Ruiz","entityType":"person","observations":[%s,%s,%s]}]}`, obs[i%3], obs[(i+1)%3], obs[(i+2)%3])
		return write("create_entities", o, res)
	}
	var batch, edits, moving []op
	for i := 0; i < 6; i++ {
		batch = append(batch, write("create_entities", fmt.Sprintf(`{"entities":[{"name":"Person %d","entityType":"person","observations":["works at Acme"]}]}`, i), `"ok"`))
		edits = append(edits, write("edit_file", fmt.Sprintf(`{"path":"a.go","oldText":"x := %d","newText":"x := %d"}`, i, i+1), `"The file a.go has been updated."`))
		moving = append(moving, write("add_observations", `{"observations":[{"entityName":"Ana Ruiz","contents":["on call"]}]}`, fmt.Sprintf(`{"count":%d}`, []int{1, 3, 4, 7, 8, 12}[i])))
	}
	runCases(t, []testCase{
		{"one entity created again, reordered", nil, []op{
			entity(0, `[{"name":"Ana Ruiz"}]`), entity(1, `[]`), entity(2, `[]`), entity(3, `[]`), refused(entity(4, `[]`), "short_cycle"),
		}},
		{"one value in another case", nil, []op{
			write("set_label", `{"issue":"OPS-1","label":"Blocked"}`, `"ok"`), write("set_label", `{"issue":"OPS-1","label":"blocked"}`, `"ok"`),
			write("set_label", `{"issue":"ops-1","label":"BLOCKED"}`, `"ok"`), refused(write("set_label", `{"issue":"OPS-1","label":"blocked "}`, `"ok"`), "short_cycle"),
		}},
		{"a batch", nil, batch},
		{"edits of other contents", nil, edits},
		{"a write whose answer moves", nil, moving},
	})
}

// TestAPIErrorAnswer: an API's failure handed on as a successful answer
// ({"ok": false, "error": ...}) is a failure: a post refused the same way
// whatever its text is refused at the fourth try (same_error), where as a
// success each write excused the next. One that says it was rate-limited
// is transient, so a post retried after it goes on; {"ok": true} and an
// answer with no error are successes.
func TestAPIErrorAnswer(t *testing.T) {
	post := func(text, res string) op {
		return write("post_message", `{"channel":"C07","text":"`+text+`"}`, res)
	}
	refusedNotIn := `{"ok":false,"error":"not_in_channel"}`
	limited := `{"ok":false,"error":"ratelimited"}`
	runCases(t, []testCase{
		{"a post refused the same way", nil, []op{
			post("Deploy done.", refusedNotIn), post("Deploy finished.", refusedNotIn), post("checkout is live", refusedNotIn),
			refused(post("FYI: deploy done", refusedNotIn), "same_error"),
		}},
		{"rate-limited, then posted", nil, []op{post("Deploy done.", limited), post("Deploy done.", limited), post("Deploy done.", limited), post("Deploy done.", `{"ok":true,"ts":"1764860412.0042"}`)}},
		{"posts that go through", nil, []op{post("a", `{"ok":true,"ts":"1"}`), post("b", `{"ok":true,"ts":"2"}`), post("c", `{"ok":true,"ts":"3"}`), post("d", `{"ok":true,"ts":"4"}`)}},
	})
	for _, c := range []struct {
		res               string
		failed, transient bool
	}{
		{`{"ok":false,"error":"not_in_channel"}`, true, false},
		{`{"success": false, "error": {"code": 429, "message": "Too Many Requests"}}`, true, true},
		{`{"ok":true,"error":"none"}`, false, false},
		{`{"ok":false,"error":null,"items":[1]}`, false, false},
		{`{"items":[{"ok":false,"error":"x"}],"n":1}`, false, false},
	} {
		if f, tr := apiErrorAnswer([]byte(c.res)); f != c.failed || tr != c.transient {
			t.Errorf("apiErrorAnswer(%s) = %v, %v, want %v, %v", c.res, f, tr, c.failed, c.transient)
		}
	}
}
