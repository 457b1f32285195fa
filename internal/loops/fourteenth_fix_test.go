package loops

import (
	"fmt"
	"strconv"
	"testing"
)

// A job polled whose answer moves only in its worker's heartbeat (a
// liveness clock, as uptime is) is the same answer: the third poll is
// refused. A job whose status or progress moves goes on.
func TestHeartbeatPolled(t *testing.T) {
	for _, key := range []string{"heartbeat", "last_heartbeat", "lastHeartbeatAt"} {
		var calls []asCall
		for i := 0; i < 4; i++ {
			calls = append(calls, asOK("hgetall", obj{"key": "job:9c1e"}, obj{"status": "queued", "progress": "0", key: fmt.Sprint(1764921000 + i*30)}))
		}
		if at, v := thPlay(t, calls, nil); at != 2 || v.Detector != "repeat" {
			t.Errorf("%s: refused at %d (%v), want 2 by repeat", key, at, v)
		}
	}
	var calls []asCall
	for i, st := range []string{"queued", "running", "running", "running", "done"} {
		calls = append(calls, asOK("hgetall", obj{"key": "job:7f3a"}, obj{"status": st, "progress": fmt.Sprint(i * 20), "heartbeat": fmt.Sprint(1764921000 + i*30)}))
	}
	if at, v := thPlay(t, calls, nil); at >= 0 {
		t.Errorf("progress moving: refused at %d (%v)", at, v)
	}
}

// A filter's alternatives written without spaces (today|overdue) are the
// words they are when spaced (today | overdue): the fourth asking of one
// filter respelled, after answers alike, is refused.
func TestFilterWithoutSpaces(t *testing.T) {
	res := "2 tasks found:\n- Send invoice to Acme (ID: 8741021, Due: today)\n- Book dentist (ID: 8741030, Due: yesterday)"
	var calls []asCall
	for _, f := range []string{"today | overdue", "overdue | today", "(today | overdue)", "today|overdue"} {
		calls = append(calls, asOK("get_tasks", obj{"filter": f}, res))
	}
	if at, v := thPlay(t, calls, nil); at != 3 || v.Detector != "rephrase" {
		t.Errorf("filter respelled: refused at %d (%v), want 3 by rephrase", at, v)
	}
	if wordsFold([]byte("today|overdue")) != wordsFold([]byte("today | overdue")) {
		t.Error("today|overdue and today | overdue fold apart")
	}
	if wordsFold([]byte("today|overdue")) == wordsFold([]byte("today overdue")) {
		t.Error("an alternative and a conjunction fold alike")
	}
}

// One name in other punctuation (a prefix with and without its slashes,
// a date with other separators, a node id in its URL notation, echoed by
// the answer as asked) is one question: the fourth asking, after answers
// alike, is refused. Other words, or the same words in another order, are
// other names, and go on.
func TestNotationRespelled(t *testing.T) {
	list := func(p string) asCall {
		return asOK("list_objects_v2", obj{"Bucket": "shop-analytics", "Prefix": p, "MaxKeys": 100}, obj{"KeyCount": 0, "IsTruncated": false, "Name": "shop-analytics", "Prefix": p})
	}
	at, v := thPlay(t, []asCall{list("exports/2026/12/05/"), list("exports/2026/12/05"), list("/exports/2026/12/05/"), list("exports/2026-12-05/")}, nil)
	if at != 3 || v.Detector != "rephrase" {
		t.Errorf("prefix respelled: refused at %d (%v), want 3 by rephrase", at, v)
	}
	// Candidates: other words each time, each empty, go on.
	if at, v := thPlay(t, []asCall{list("exports/2026/12/05/"), list("imports/2026/12/05/"), list("backups/2026/12/05/"), list("logs/2026/12/05/"), list("exports/2026/12/04/")}, nil); at >= 0 {
		t.Errorf("candidate prefixes: refused at %d (%v)", at, v)
	}
	node := func(n string) asCall {
		return asOK("get_figma_data", obj{"fileKey": "Qx7hT2mZp9LrC", "nodeId": n}, obj{"name": "Pricing table", "nodes": arr{obj{"id": "12:41", "type": "FRAME", "fills": arr{"#F5F7FA"}}}})
	}
	if at, v := thPlay(t, []asCall{node("12:41"), node("12-41"), node("12%3A41"), node("12:41")}, nil); at != 3 || v.Detector != "rephrase" {
		t.Errorf("node id notations: refused at %d (%v), want 3 by rephrase", at, v)
	}
	for _, p := range [][2]string{{"exports/2026/12/05/", "/exports/2026-12-05"}, {"12:41", "12%3a41"}, {"ENG-1841", "eng-1841"}, {"web/1", "web%2F1"}} {
		a, _ := notationFold([]byte(p[0]))
		b, _ := notationFold([]byte(p[1]))
		if a != b {
			t.Errorf("%s and %s fold apart", p[0], p[1])
		}
	}
	for _, p := range [][2]string{{"a/b", "b/a"}, {"ENG-1841", "ENG-1842"}, {"12:41", "1241"}, {"web%41b", "web/b"}, {"web-1", "web.1"}, {"com.acme.billing", "com/acme/billing"}, {"ENG-1841", "ENG_1841"}} {
		a, _ := notationFold([]byte(p[0]))
		b, _ := notationFold([]byte(p[1]))
		if a == b {
			t.Errorf("%s and %s fold alike", p[0], p[1])
		}
	}
	if _, ok := notationFold([]byte("orders")); ok {
		t.Error("one word folded as a notation")
	}
}

// One write said again in other words, answered alike with nothing
// learned between, is refused at the fourth: a to-do appended again
// reworded, an SMS sent again reworded after each was read back
// undelivered. Writes of other words, to other people, of other
// numbers, or with news read between go on.
func TestWriteReworded(t *testing.T) {
	w := map[string]string{"append": "write", "send": "write"}
	app := func(c string) asCall {
		return asOK("append", obj{"filepath": "Daily/2026-12-05.md", "content": c}, "Successfully appended content to Daily/2026-12-05.md")
	}
	todo := []string{"- [ ] Send the Q1 hiring plan to Marta\n", "- [ ] Q1 hiring plan → Marta\n", "- [ ] Email Marta the Q1 hiring plan\n", "- [ ] Marta: send her the Q1 hiring plan\n"}
	var calls []asCall
	for _, c := range todo {
		calls = append(calls, app(c))
	}
	if at, v := thPlay(t, calls, w); at != 3 || v.Detector != "rephrase" {
		t.Errorf("to-do appended reworded: refused at %d (%v), want 3 by rephrase", at, v)
	}
	calls = nil
	for _, c := range []string{"09:05 standup: release train moved to Thursday", "10:40 paired with Rui on the refunds migration", "12:15 reviewed the hiring plan draft", "14:30 incident acknowledged, root cause DNS", "16:50 wrote the Q1 hiring plan"} {
		calls = append(calls, app("- "+c+"\n"))
	}
	if at, v := thPlay(t, calls, w); at >= 0 {
		t.Errorf("a day's log entry by entry: refused at %d (%v)", at, v)
	}
	calls = nil
	for _, n := range []string{"1001", "1002", "1003", "1004", "1005"} {
		calls = append(calls, app("- [ ] Send invoice "+n+" reminder to Acme billing\n"))
	}
	if at, v := thPlay(t, calls, w); at >= 0 {
		t.Errorf("numbered reminders: refused at %d (%v)", at, v)
	}

	sms := func(to, body string, i int) asCall {
		return asOK("send", obj{"to": to, "body": body}, obj{"sid": fmt.Sprintf("SM%032x", 0x7b2d0000+i*104729), "status": "queued"})
	}
	status := func(i int, st string) asCall {
		return asOK("get_message", obj{"sid": fmt.Sprintf("SM%032x", 0x7b2d0000+i*104729)}, obj{"sid": fmt.Sprintf("SM%032x", 0x7b2d0000+i*104729), "status": st, "error_message": "Unreachable destination handset"})
	}
	bodies := []string{"Hi Ana, your order is ready for pick-up at Rua Augusta 12.", "Ana, your order can be picked up at Rua Augusta 12.", "Reminder: order ready at Rua Augusta 12 for pick-up.", "Hello Ana! Pick up your order at Rua Augusta 12."}
	calls = nil
	for i, b := range bodies {
		calls = append(calls, sms("+351912000101", b, i), status(i, "undelivered"))
	}
	if at, v := thPlay(t, calls, w); at != 6 || v.Detector != "rephrase" {
		t.Errorf("SMS resent reworded, undelivered: refused at %d (%v), want 6 by rephrase", at, v)
	}
	calls = nil
	for i, b := range bodies {
		calls = append(calls, sms("+351912000101", b, i), status(i, []string{"queued", "sent", "undelivered", "delivered"}[i]))
	}
	if at, v := thPlay(t, calls, w); at >= 0 {
		t.Errorf("SMS whose status moves between sends: refused at %d (%v)", at, v)
	}
	calls = nil
	for i, to := range []string{"+351912000101", "+351912000202", "+351912000303", "+351912000404", "+351912000505"} {
		calls = append(calls, sms(to, bodies[i%len(bodies)], i))
	}
	if at, v := thPlay(t, calls, w); at >= 0 {
		t.Errorf("a message to several people: refused at %d (%v)", at, v)
	}
}

// FuzzNotation: folding a value's notation and an answer's words never
// panics, and a value's punctuation before its first word and after its
// last is not read.
func FuzzNotation(f *testing.F) {
	for _, s := range []string{"exports/2026/12/05/", "12%3A41", "%", "a%2", "12:41", "/", "é/ü", "ENG-1841"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		a, okA := notationFold([]byte(s))
		b, okB := notationFold([]byte("/" + s + "/"))
		if okA != okB || a != b {
			t.Errorf("%q: slashes around it fold apart", s)
		}
		answerWords([]byte(s), []byte(s))
		var e argEchoes
		e.d = New(nil)
		e.args, e.small = []byte(`{"v":`+strconv.Quote(s)+`}`), true
		e.load()
	})
}
