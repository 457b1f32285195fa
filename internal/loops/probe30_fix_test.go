package loops

import (
	"fmt"
	"testing"
)

// TestCursorEmptyPagesWithMore: a listing filtered server-side hands back
// empty pages, each saying there is more and where it goes on. Nothing
// in them is named but their flags and cursor: the cursor moved is the
// only thing such a page can say, so three in a row are not a page
// handed back alike. A page of the same records under a re-encoded
// cursor still is (TestCursorUnderNext).
func TestCursorEmptyPagesWithMore(t *testing.T) {
	next := func(p int) string { return fmt.Sprintf("bmV4dF90czoxNzk2%06d", 512000+p*8640) }
	var ops []op
	for p := 0; p < 6; p++ {
		args := `{"channel":"C04INCIDENT","limit":50,"user":"U07KX"}`
		if p > 0 {
			args = fmt.Sprintf(`{"channel":"C04INCIDENT","cursor":"%s","limit":50,"user":"U07KX"}`, next(p-1))
		}
		msgs := `[]`
		if p == 0 || p == 5 {
			msgs = fmt.Sprintf(`[{"text":"rollback? (%d)","ts":"1796634%03d.000013","user":"U07KX"}]`, p, p)
		}
		ops = append(ops, call("conversations_history", args, fmt.Sprintf(`{"has_more":true,"messages":%s,"ok":true,"response_metadata":{"next_cursor":"%s"}}`, msgs, next(p))))
	}
	runCases(t, []testCase{{"empty pages, each with more after it", nil, ops}})
}

// TestDelegationTaskCycle: a sub-agent hands its parent's task on under a
// new name (a venue scout asks an "event planner" to plan the offsite,
// which asks a "venue finder" for the venue): no agent is on the stack
// twice, but the task is. A hand-off whose task is the one an agent on
// its chain was handed, with another task handed between them, has the
// task come back down to be done again. A task passed down a hierarchy
// as it is (a lead handing its own task to an engineer) and a task
// handed on another branch go on.
func TestDelegationTaskCycle(t *testing.T) {
	venue := "Find a venue in Lisbon for the design team's Q3 offsite, 14 people, 2 days"
	top := "Plan the Q3 offsite for the design team (14 people, Lisbon, 2 days)"
	runCases(t, []testCase{
		{"the task handed down again under a new name", nil, []op{
			hand("venue_scout", venue),
			by("venue_scout", within("main", "venue_scout")(hand("event_planner", top))),
			refused(by("event_planner", within("main", "venue_scout", "event_planner")(hand("venue_finder", "find a venue in Lisbon for the design team's Q3 offsite, 14 people, 2 days."))), "delegation_cycle"),
		}},
		{"a task passed down a hierarchy as it is", nil, []op{
			hand("team_lead", "Fix the checkout crash on Safari"),
			by("team_lead", within("main", "team_lead")(hand("engineer", "Fix the checkout crash on Safari"))),
			by("engineer", within("main", "team_lead", "engineer")(hand("reviewer", "Review the Safari checkout fix"))),
		}},
		{"a short task handed at two depths", nil, []op{
			hand("lead", "Review the changes"),
			by("lead", within("main", "lead")(hand("dev", "Apply the fix for the login timeout"))),
			by("dev", within("main", "lead", "dev")(hand("reviewer", "Review the changes"))),
		}},
		{"hand-offs that carry no task", nil, []op{
			hand("triage", ""),
			by("triage", within("main", "triage")(hand("order_lookup", "Look up order 8812"))),
			by("order_lookup", within("main", "triage", "order_lookup")(hand("billing", ""))),
		}},
		{"the task handed on another branch", nil, []op{
			hand("venue_scout", venue),
			hand("event_planner", top),
			by("event_planner", within("main", "event_planner")(hand("venue_finder", venue))),
		}},
	})
}

// TestRejectedAnswer: a write answered as a success whose answer says it
// was not accepted, and why ({"accepted": false, "errors": [...]}: a
// CMS's validation, handed back with 200), wrote nothing. Retried with
// cosmetic changes to its payload (a title's case, spacing) and refused
// the same way, its fourth try is refused as a typed failure's is; the
// answer's trace id is not its complaint. Each try refused for another
// field is a payload being fixed, and an answer accepted with warnings
// is a success.
func TestRejectedAnswer(t *testing.T) {
	for in, want := range map[string]string{
		`{"accepted":false,"errors":[{"path":"slug","message":"slug is taken"}],"trace":"a1"}`: `[{"path":"slug","message":"slug is taken"}]`,
		`{"success":false,"errors":["title is required"]}`:                                     `["title is required"]`,
		`{"accepted":true,"errors":[{"message":"image has no alt text"}]}`:                     ``,
		`{"accepted":false,"errors":[]}`:                                                       ``,
		`{"accepted":false,"reason":"queued"}`:                                                 ``,
	} {
		if c, _ := rejectedAnswer([]byte(in)); string(c) != want {
			t.Errorf("rejectedAnswer(%s) = %s, want %s", in, c, want)
		}
	}
	bodies := []string{"<h1>Winter sale</h1><p>Up to 40% off.</p>", "<h1>Winter Sale</h1><p>Up to 40% off.</p>", "<h1>Winter sale</h1>\n<p>Up to 40% off.</p>", "<h1> Winter sale </h1><p>Up to 40 % off.</p>", "<h1>Winter sale!</h1><p>Up to 40% off.</p>"}
	var same, fixed []op
	for i, bd := range bodies {
		same = append(same, write("publish_page", fmt.Sprintf(`{"html":%q,"site":"shop-eu","slug":"winter-sale"}`, bd),
			fmt.Sprintf(`{"accepted":false,"errors":[{"message":"slug 'winter-sale' is already used by page 8812","path":"slug"}],"trace":"%08x-77ab-4c1d"}`, 0x7c1e2a03+i*6151)))
		field := []string{"slug", "locale", "html", "template", "hero"}[i]
		fixed = append(fixed, write("publish_page", fmt.Sprintf(`{"html":%q,"site":"shop-eu","slug":"winter-sale-%d"}`, bd, i),
			fmt.Sprintf(`{"accepted":false,"errors":[{"message":"%s is not valid","path":"%s"}]}`, field, field)))
	}
	same[3] = refused(same[3], "same_error")
	runCases(t, []testCase{
		{"refused alike, the payload respelled", nil, same[:4]},
		{"refused for another field each time", nil, fixed},
	})
}

// TestHTTPResponseHeadLines: a raw HTTP response handed back as text
// (curl -i), its status line first, has its header lines up to the blank
// line read as the headers they are: those that name the exchange (Date,
// X-Request-Id, Age, ...: volatileHeader) are masked, as under a
// "headers" key. A status polled whose body stays "degraded" while only
// its Date moves is refused at the third answer alike; one whose ETag
// moves, or whose body moves, is not. A Date line in a text that is no
// HTTP response (a mail's) stays (TestHTTPDateHeaderKept).
func TestHTTPResponseHeadLines(t *testing.T) {
	resp := func(i int, etag, body string) string {
		t := 30 + i*45
		return fmt.Sprintf("HTTP/1.1 200 OK\nDate: Mon, 07 Dec 2026 09:%02d:%02d GMT\nContent-Type: application/json\nETag: %s\nX-Request-Id: %08x-2b1f-4c7e-9a10-%012x\n\n%s", t/60, t%60, etag, 0x7c1e2a03+i*6151, 0x2a3b4c5d6e+i*130363, body)
	}
	polls := func(f func(i int) string) []op {
		var ops []op
		for i := 0; i < 4; i++ {
			ops = append(ops, call("http_get", `{"include_headers":true,"url":"https://status.example.com/api/v2/components/payments-api"}`, marshalString(f(i))))
		}
		return ops
	}
	same := polls(func(i int) string { return resp(i, `"v1"`, `{"status":"degraded"}`) })
	same[2] = refused(same[2], "repeat")
	runCases(t, []testCase{
		{"only the exchange's headers move", nil, same[:3]},
		{"the ETag moves", nil, polls(func(i int) string { return resp(i, fmt.Sprintf(`"v%d"`, i), `{"status":"degraded"}`) })},
		{"the body moves", nil, polls(func(i int) string {
			return resp(i, `"v1"`, fmt.Sprintf(`{"status":"%s"}`, []string{"degraded", "recovering", "operational", "operational, monitoring"}[i]))
		})},
		{"a mail's Date line", nil, polls(func(i int) string {
			return fmt.Sprintf("From: alerts@example.com\nDate: Mon, 07 Dec 2026 09:%02d:00 +0000\nSubject: payments-api degraded\n\nStill degraded.", i)
		})},
	})
}
