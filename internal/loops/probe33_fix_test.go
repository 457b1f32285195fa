package loops

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
)

// TestRewordedPollUsageGrows: a job asked about in words, reworded each
// time ("Any progress on the report?", "How far along is it?"), whose
// reply stays "still working" while its token counts grow by far more
// than a rewording moves a prompt's count: the counts are the job's, its
// one sign that it moves, not the exchange's. Eight such askings go on,
// with a wait between or none. The same askings whose counts move only as
// much as the questions' lengths do (the exchange's) are refused in the
// end, as TestModelReplyUsage's are.
func TestRewordedPollUsageGrows(t *testing.T) {
	qs := []string{
		"Any progress on the report so far?",
		"How far along is the report now?",
		"Is the report done yet?",
		"What's the status of my report?",
		"Still working on the report?",
		"Update on the report, please.",
		"How is the report coming along?",
		"Is my report ready?",
	}
	poll := func(grow, wait bool) asPlay {
		w := asRunOf("ask_agent", "research", false)
		for i, q := range qs {
			in, out := 30+len(q)/4, 12
			if grow {
				in, out = 1800+950*i, 120+310*i
			}
			w.t("", asOK("ask_agent", obj{"agent": "researcher", "message": q}, obj{"status": "Still working on your report, nearly there.", "usage": obj{"input_tokens": in, "output_tokens": out}}))
			if wait {
				w.t("", asOK("wait", obj{"seconds": 30 + 15*i}, "Waited."))
			}
		}
		return playAs(w.run)
	}
	for _, wait := range []bool{false, true} {
		if p := poll(true, wait); p.refusedAt >= 0 {
			t.Errorf("a job asked about reworded while its token counts grow (wait %v): refused at %d: %v", wait, p.refusedAt, p.v)
		}
		if p := poll(false, wait); p.refusedAt < 0 {
			t.Errorf("a job asked about reworded, the counts the exchange's (wait %v): not refused in %d calls", wait, p.calls)
		}
	}
}

// TestFedBackRounds: a writer hands its draft to an editor to shorten,
// then hands the editor's result back to be shortened again. The first
// round made the result the second one is handed: the two ending alike
// (the editor giving the text back unchanged) is one round that made
// nothing, not two, and the next hand-off is the same task's second. The
// rounds that take the unchanged text again end alike and are refused: the
// same task a third time, or reworded around it.
func TestFedBackRounds(t *testing.T) {
	const (
		s0 = "The December release adds webhook retries with exponential backoff, an audit-log export in CSV and JSON, and fixes the SSO logout loop."
		s1 = "December release: webhook retries with backoff, audit-log export (CSV/JSON), SSO logout fix."
	)
	round := func(task string) op { return by("writer", verdictOf(hand("editor", task), s1)) }
	runCases(t, []testCase{
		{"a draft shortened, then handed back", nil, []op{
			round("Shorten this summary to under 15 words: " + s0),
			round("Shorten this summary to under 15 words: " + s1),
			round("Shorten this summary to under 15 words: " + s1),
			refused(by("writer", hand("editor", "Shorten this summary to under 15 words: "+s1)), "delegation"),
		}},
		{"handed back, reworded around the unchanged text", nil, []op{
			round("Shorten this summary to under 15 words: " + s0),
			round("Shorten this summary to under 15 words: " + s1),
			round("Make this summary shorter, under 15 words: " + s1),
			refused(by("writer", hand("editor", "Trim this summary below 15 words: "+s1)), "delegation"),
		}},
	})
}

// a2aAnswer is an A2A JSON-RPC response: a completed task whose ids (the
// request's, the task's, its context's and artifact's) and timestamp are
// new with each send, its artifact saying text, or holding data.
func a2aAnswer(n int, text string, data obj) obj {
	part := obj{"kind": "text", "text": text}
	if data != nil {
		part = obj{"kind": "data", "data": data}
	}
	return obj{"jsonrpc": "2.0", "id": n + 1, "result": obj{"kind": "task", "id": fmt.Sprintf("9f%06x-1c2d-4e5f-8a9b-%012x", 0x3a70+n*4099, 0x51c2e9+n*7919), "contextId": fmt.Sprintf("ctx-%06x", 0xa100+n*977),
		"status":    obj{"state": "completed", "timestamp": fmt.Sprintf("2026-12-07T09:%02d:%02d.%03dZ", n, 7*n%60, 37*n%1000)},
		"artifacts": []obj{{"artifactId": fmt.Sprintf("art-%05d", 1200+n*31), "parts": []obj{part}}}}}
}

// a2aSend is an A2A message/send's arguments: text under a fresh
// messageId.
func a2aSend(n int, text string) obj {
	return obj{"agent": "hr", "message": obj{"role": "user", "messageId": fmt.Sprintf("msg-%08x", 0x7d10aa00+n*104729), "parts": []obj{{"kind": "text", "text": text}}}}
}

// TestA2AEnvelope: an A2A agent's answer comes as a task whose ids and
// timestamp are minted for the exchange, and each message is sent under a
// new messageId. One question sent again word for word is refused at its
// third sending, reworded at its fourth; distinct questions answered alike
// in part, and one question whose answers move, go on; so does a data
// part whose record's id moves (the record's id is no id of the exchange).
func TestA2AEnvelope(t *testing.T) {
	for _, c := range []struct {
		b    string
		want int
	}{
		{`{"jsonrpc":"2.0","id":3,"result":{"kind":"task","id":"t-1","contextId":"c-1","status":{"state":"completed"}}}`, a2aWrapped},
		{`{"kind":"message","messageId":"m-1","contextId":"c-1","role":"agent","parts":[{"kind":"text","text":"Yes."}]}`, a2aTop},
		{`{"kind":"order","id":"o-1","contextId":"c-1"}`, 0},
		{`{"id":3,"result":{"kind":"task","id":"t-1","contextId":"c-1"}}`, 0},
	} {
		if got := a2aShape([]byte(c.b)); got != c.want {
			t.Errorf("a2aShape(%.50s) = %d, want %d", c.b, got, c.want)
		}
	}
	ask := func(qs []string, answer func(i int) obj) asPlay {
		w := asRunOf("a2a_send", "a2a", false)
		for i, q := range qs {
			w.t("", asOK("a2a_send", a2aSend(i, q), answer(i)))
		}
		return playAs(w.run)
	}
	const same = "The home-office stipend is for employees only; contractors are not eligible (handbook 7.3)."
	word := []string{"Do contractors get the home-office stipend?", "Do contractors get the home-office stipend?", "Do contractors get the home-office stipend?", "Do contractors get the home-office stipend?"}
	if p := ask(word, func(i int) obj { return a2aAnswer(i, same, nil) }); p.refusedAt != 2 {
		t.Errorf("one question sent again word for word, answered alike: refused at %d (%v), want the third", p.refusedAt, p.v)
	}
	reworded := []string{"Do contractors get the home-office stipend?", "Is the home office allowance available to contract workers?", "Can a contractor claim the remote work equipment stipend?", "Are external contractors eligible for the home-office budget?", "Home-office stipend: does it apply to contractors?"}
	if p := ask(reworded, func(i int) obj { return a2aAnswer(i, same, nil) }); p.refusedAt != 3 {
		t.Errorf("one question reworded, answered alike: refused at %d (%v), want the fourth", p.refusedAt, p.v)
	}
	distinct := []string{"How many vacation days does a new hire get?", "When is payroll run each month?", "Which laptops can a new hire choose?", "Is there a probation period?", "Who approves overtime?"}
	if p := ask(distinct, func(i int) obj {
		return a2aAnswer(i, fmt.Sprintf("Per the 2026 handbook, section %d.%d: %s", 3+i, i+1, []string{"28 days", "on the 25th", "a MacBook Pro or a ThinkPad", "six months", "the line manager"}[i]), nil)
	}); p.refusedAt >= 0 {
		t.Errorf("distinct questions: refused at %d: %v", p.refusedAt, p.v)
	}
	orders := []string{"Where is order A-77120?", "Where is order B-11842?", "Where is order C-90311?", "Where is order D-40027?", "Where is order E-51290?", "Where is order F-66013?"}
	if p := ask(orders, func(i int) obj { return a2aAnswer(i, "That order is not in our system; check the number.", nil) }); p.refusedAt >= 0 {
		t.Errorf("distinct orders asked, each answered alike: refused at %d: %v", p.refusedAt, p.v)
	}
	if p := ask(word, func(i int) obj {
		return a2aAnswer(i, "", obj{"id": fmt.Sprintf("case-%d", 4100+i*17), "state": "open", "queue": "hr-general"})
	}); p.refusedAt >= 0 {
		t.Errorf("one question answered each time with another record's id: refused at %d: %v", p.refusedAt, p.v)
	}
}

// TestPageEchoedPastTheEnd: a listing that ignores the offset it is sent
// and hands back the same items, its answer naming the offset it was
// sent ({"offset": 16, "items": [...]}) or its text's header naming the
// page ("Results for ... (page 3):"), is paged past its end as one that
// names none: refused at the fifth page forward answered alike. Pages
// that name their position and bring other items each time go on.
func TestPageEchoedPastTheEnd(t *testing.T) {
	items := []obj{{"id": "P-1", "title": "Trail runner"}, {"id": "P-2", "title": "Road runner"}}
	past := func(at int, v *Verdict) bool { return at >= 0 && strings.Contains(v.Message, "later page") }
	var calls []asCall
	for i := 0; i < 8; i++ {
		calls = append(calls, asOK("search_products", obj{"q": "running shoes", "offset": i * 2, "limit": 2}, obj{"offset": i * 2, "limit": 2, "items": items}))
	}
	if at, v := thPlay(t, calls, nil); at != 4 || !past(at, v) {
		t.Errorf("the same items, the offset echoed: refused at %d (%v), want 4 for a later page", at, v)
	}
	calls = nil
	body := "1. Heat pump sizing guide - energy.gov\n2. Manual J explained - hvac-school.com"
	for p := 1; p < 9; p++ {
		calls = append(calls, asOK("web_search", obj{"query": "heat pump sizing", "page": p}, fmt.Sprintf("Results for \"heat pump sizing\" (page %d):\n%s", p, body)))
	}
	if at, v := thPlay(t, calls, nil); at != 4 || !past(at, v) {
		t.Errorf("the same results, the page named in the header: refused at %d (%v), want 4 for a later page", at, v)
	}
	calls = nil
	for i := 0; i < 8; i++ {
		calls = append(calls, asOK("search_products", obj{"q": "running shoes", "offset": i * 2, "limit": 2}, obj{"offset": i * 2, "limit": 2, "items": []obj{{"id": fmt.Sprintf("P-%d", 2*i+1)}, {"id": fmt.Sprintf("P-%d", 2*i+2)}}}))
	}
	if at, v := thPlay(t, calls, nil); at >= 0 {
		t.Errorf("pages that echo their offset and bring other items: refused at %d (%v)", at, v)
	}
	for _, c := range []struct {
		line string
		pos  float64
		want bool
	}{
		{`Results for "x" (page 3):`, 3, true}, {"Page 12 of 40", 12, true}, {"offset 16", 16, true},
		{"page 13 of 40", 1, false}, {"homepage 3", 3, false}, {"3 results", 3, false},
	} {
		if got := namesPage([]byte(c.line), c.pos); got != c.want {
			t.Errorf("namesPage(%q, %v) = %v, want %v", c.line, c.pos, got, c.want)
		}
	}
}

// BenchmarkA2AShape: the look at an A2A task's answer, in its JSON-RPC
// response, for the protocol's envelope.
func BenchmarkA2AShape(b *testing.B) {
	res, _ := json.Marshal(a2aAnswer(3, "The home-office stipend is for employees only; contractors are not eligible.", nil))
	for b.Loop() {
		if a2aShape(res) != a2aWrapped {
			b.Fatal("not a task")
		}
	}
}

// BenchmarkScanA2AResult: a result scanned that is an A2A task, its ids
// left out, beside BenchmarkScanPlainResult's answer of no protocol.
func BenchmarkScanA2AResult(b *testing.B) {
	res, _ := json.Marshal(a2aAnswer(3, "The home-office stipend is for employees only; contractors are not eligible.", nil))
	var vol keyCache
	var scratch []byte
	out := make([]leaf, 0, 64)
	for b.Loop() {
		out = scanResult(res, out, 64, &vol, &scratch, false).out
	}
}

// BenchmarkScanPlainResult: BenchmarkScanA2AResult's text in a plain
// object: the look for an A2A task costs its two bytes.Contains.
func BenchmarkScanPlainResult(b *testing.B) {
	res := []byte(`{"answer":"The home-office stipend is for employees only; contractors are not eligible.","state":"completed","source":"handbook 7.3"}`)
	var vol keyCache
	var scratch []byte
	out := make([]leaf, 0, 64)
	for b.Loop() {
		out = scanResult(res, out, 64, &vol, &scratch, false).out
	}
}

// BenchmarkPageAnswer: a page's answer that echoes its offset, compared
// without the echo.
func BenchmarkPageAnswer(b *testing.B) {
	res := []byte(`{"offset":16,"limit":8,"total":24,"items":[{"id":"P-1","title":"Trail runner"},{"id":"P-2","title":"Road runner"}]}`)
	var vol keyCache
	var scratch []byte
	sc := scanResult(res, nil, 64, &vol, &scratch, false)
	for b.Loop() {
		if pageAnswer(&sc, 16) == sc.digest {
			b.Fatal("echo not left out")
		}
	}
}
