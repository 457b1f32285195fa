package loops

import (
	"fmt"
	"strings"
	"testing"
)

// TestRewordedAskHistoryGrows: an agent that keeps its conversation (a
// chat agent under one contextId) asked one question reworded, answering
// the same each time: its prompt's token count grows by the turns before
// (the last question and the last answer, read again), its reply's stays.
// That growth is the exchange's, as a rewording's is: the askings are
// refused in the end, as those whose counts move by the questions' length
// are (TestRewordedPollUsageGrows). A job whose counts grow by more than
// the conversation before it could add still goes on.
func TestRewordedAskHistoryGrows(t *testing.T) {
	qs := []string{
		"Do contractors get the home-office stipend?",
		"Is the home office allowance available to contract workers?",
		"Can a contractor claim the remote work equipment stipend?",
		"Are external contractors eligible for the home-office budget?",
		"Home-office stipend: does it apply to contractors?",
		"Contractors and the home-office stipend, yes or no?",
		"Would a contractor be reimbursed for a home-office desk?",
		"Is the stipend for home offices open to contractors?",
	}
	answer := "Per the 2026 employee handbook, section 7.3, the home-office stipend of 500 EUR a year is available to employees only. " +
		strings.Repeat("Contractors are engaged under their own service agreements and equip their own workplaces; they are not eligible for it. ", 4)
	w := asRunOf("ask_agent", "research", false)
	in, reply := 420, len(answer)/4
	for _, q := range qs {
		w.t("", asOK("ask_agent", obj{"agent": "hr", "contextId": "ctx-7f3a", "message": q},
			obj{"answer": answer, "usage": obj{"input_tokens": in, "output_tokens": reply, "total_tokens": in + reply}}))
		in += len(q)/4 + reply + 12 // the conversation read again: the last question and answer
	}
	if p := playAs(w.run); p.refusedAt < 0 {
		t.Errorf("one question reworded to an agent that keeps its conversation, answered the same: not refused in %d calls", p.calls)
	}
}

// TestPageEchoedWithNext: a listing that ignores the offset it is sent
// hands back the same items, naming the offset it was sent and the next
// one to ask for ({"offset": 16, "next_offset": 18, "items": [...]}), or
// the page and the next page: each answer differs from the last only in
// what it echoes of its position, and it is paged past its end as one
// that names none (TestPageEchoedPastTheEnd). Pages that bring other
// items each time go on.
func TestPageEchoedWithNext(t *testing.T) {
	items := []obj{{"id": "P-1", "title": "Trail runner"}, {"id": "P-2", "title": "Road runner"}}
	for _, next := range []string{"next_offset", "nextOffset"} {
		var calls []asCall
		for i := 0; i < 8; i++ {
			calls = append(calls, asOK("search_products", obj{"q": "running shoes", "offset": i * 2, "limit": 2},
				obj{"offset": i * 2, next: i*2 + 2, "limit": 2, "items": items}))
		}
		if at, v := thPlay(t, calls, nil); at < 0 || !strings.Contains(v.Message, "later page") {
			t.Errorf("the same items, the offset and the %s echoed: refused at %d (%v), want for a later page", next, at, v)
		}
	}
	var calls []asCall
	for p := 1; p < 9; p++ {
		calls = append(calls, asOK("list_tickets", obj{"project": "ops", "page": p},
			obj{"page": p, "next_page": p + 1, "tickets": []obj{{"id": "T-1", "title": "Disk full on db-2"}}}))
	}
	if at, v := thPlay(t, calls, nil); at < 0 || !strings.Contains(v.Message, "later page") {
		t.Errorf("the same tickets, the page and the next page echoed: refused at %d (%v), want for a later page", at, v)
	}
	calls = nil
	for i := 0; i < 8; i++ {
		calls = append(calls, asOK("search_products", obj{"q": "running shoes", "offset": i * 2, "limit": 2},
			obj{"offset": i * 2, "next_offset": i*2 + 2, "limit": 2, "items": []obj{{"id": fmt.Sprintf("P-%d", 2*i+1)}, {"id": fmt.Sprintf("P-%d", 2*i+2)}}}))
	}
	if at, v := thPlay(t, calls, nil); at >= 0 {
		t.Errorf("pages that echo their offset and the next and bring other items: refused at %d (%v)", at, v)
	}
}

// TestMessageIDNotA2A: a mail tool's messageId names the message read,
// not the exchange, even where the arguments name the message's "parts"
// (fields to fetch): distinct messages read, each answered alike, go on;
// only an A2A message's own id (beside its role and parts) is the
// exchange's (TestA2AEnvelope).
func TestMessageIDNotA2A(t *testing.T) {
	var calls []asCall
	for i := 0; i < 8; i++ {
		calls = append(calls, asOK("get_message", obj{"messageId": fmt.Sprintf("18c%05x9e2f", 0x3a1f0+i*7919), "question": "Does this message have any attachments?", "parts": true},
			"No attachments in this message."))
	}
	if at, v := thPlay(t, calls, nil); at >= 0 {
		t.Errorf("distinct messages read, each answered alike: refused at %d (%v)", at, v)
	}
}
