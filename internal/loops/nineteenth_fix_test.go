package loops

import (
	"fmt"
	"testing"
)

// The same sub-task handed to one agent again and again is refused at the
// third hand-off when its verdicts say the same thing, reworded or not; a
// verdict that names a number neither of the last two named (another
// commit pushed, another fix applied) is news, and the hand-offs go on.
// A verdict whose words move but whose numbers do not ("Addressed the
// review; head is 9f3c2e1" said another way) is still the same.
func TestVerdictNamingNewNumber(t *testing.T) {
	run := func(id string, verdict func(r int) string) asPlay {
		w := asRunOf(id, "graph", false)
		for r := 0; r < 4; r++ {
			w.hand("", "coder", "Address the latest review on PR #412.", verdict(r), nil)
			w.hand("", "reviewer", "Review PR #412 again.", fmt.Sprintf("Changes requested (round %d): see the comments.", r+1), nil)
		}
		return playAs(w.run)
	}
	heads := []string{"b71d0a4", "e2c95f8", "5a0e7bd", "0c4f1e9"}
	if p := run("new-heads", func(r int) string { return "Pushed " + heads[r] + " to PR #412." }); p.refusedAt >= 0 {
		t.Errorf("a new commit pushed each round: refused at %d: %v", p.refusedAt, p.v)
	}
	same := []string{"Addressed the review on PR #412; head is 9f3c2e1.", "Review on PR #412 addressed, head is 9f3c2e1.", "Addressed the review on PR #412; head is 9f3c2e1.", "Review addressed on PR #412; the head is 9f3c2e1."}
	if p := run("same-head", func(r int) string { return same[r] }); p.refusedAt != 4 || p.v.Detector != "delegation" {
		t.Errorf("the same head reported each round: refused at %d (%v), want the coder's third hand-off (4)", p.refusedAt, p.v)
	}
}

// Rounds of a reworded task end in the same rejection when the rejection
// lists as many points again, each sharing a word with the last one's; a
// rejection that names a number the last did not (the review of another
// head) is of other work, and the rounds go on.
func TestRejectionOfAnotherHead(t *testing.T) {
	tasks := []string{"Fix the voucher handling in PR #412.", "Please fix the PR #412 voucher handling.", "Voucher handling in PR #412 needs fixing.", "Fix PR #412's voucher handling, please."}
	run := func(id string, heads []string) asPlay {
		w := asRunOf(id, "graph", false)
		for r, task := range tasks {
			w.hand("", "coder", task, "Done.", nil)
			w.hand("", "reviewer", fmt.Sprintf("Review PR #412, round %d.", r+1), "Changes requested on PR #412 (head "+heads[r]+"): the voucher guard is missing; add a test for an expired voucher.", nil)
		}
		return playAs(w.run)
	}
	if p := run("other-heads", []string{"9f3c2e1", "b71d0a4", "e2c95f8", "5a0e7bd"}); p.refusedAt >= 0 {
		t.Errorf("a rejection of another head each round: refused at %d: %v", p.refusedAt, p.v)
	}
	if p := run("one-head", []string{"9f3c2e1", "9f3c2e1", "9f3c2e1", "9f3c2e1"}); p.refusedAt < 0 || p.v.Detector != "delegation" {
		t.Errorf("the same rejection of one head each round: refused at %d (%v), want refused", p.refusedAt, p.v)
	}
}

// A vector search's answer is its ids and documents: the distances listed
// beside them measure the query, and move with each rewording. The same
// chunks under the fourth rewording are refused (rephrase); other chunks
// each time go on.
func TestDistancesListed(t *testing.T) {
	qs := []string{"sick leave for contractors", "contractor sick leave entitlement", "sick days allowed for contractors", "paid sick leave contractors"}
	run := func(id string, ids func(i int) []string) asPlay {
		w := asRunOf(id, "rag", false)
		for i, q := range qs {
			docs := []string{"Accrual is 2.08 days a month.", "Carry-over ends on 31 March.", "See the parental leave policy."}
			if ids(i)[0] != "leave-policy#4" {
				docs = []string{fmt.Sprintf("Clause %d-a.", i), fmt.Sprintf("Clause %d-b.", i), fmt.Sprintf("Clause %d-c.", i)}
			}
			w.t("", asOK("chroma_query_documents", obj{"collection_name": "hr", "query_texts": arr{q}, "n_results": 3},
				s19Chunks(ids(i), docs, []float64{0.41 + float64(i)*0.004, 0.45 - float64(i)*0.003, 0.5 + float64(i)*0.002})))
		}
		return playAs(w.run)
	}
	if p := run("same", func(int) []string { return []string{"leave-policy#4", "leave-policy#5", "benefits#12"} }); p.refusedAt != 3 || p.v.Detector != "rephrase" {
		t.Errorf("the same chunks, distances moving: refused at %d (%v), want the fourth query by rephrase", p.refusedAt, p.v)
	}
	if p := run("other", func(i int) []string {
		return []string{fmt.Sprintf("contractors#%d", i*3), fmt.Sprintf("contractors#%d", i*3+1), fmt.Sprintf("legal#%d", i)}
	}); p.refusedAt >= 0 {
		t.Errorf("other chunks each time: refused at %d: %v", p.refusedAt, p.v)
	}
}

// A model's answer in its envelope (a chat completion's id, creation time
// and token counts; a message's id and usage) is what the model said: a
// judge grading one unchanged text alike under reworded prompts is refused
// at the fourth prompt, while a judge whose grade moves, and a classifier
// labelling other texts alike, go on.
func TestModelEnvelope(t *testing.T) {
	for _, c := range []struct {
		b    string
		want bool
	}{
		{s19Chat("chatcmpl-1", "Score: 4/10.", 50, 9), true},
		{`{"id":"msg_01","type":"message","role":"assistant","content":[{"type":"text","text":"4/10"}],"model":"claude","stop_reason":"end_turn","usage":{"input_tokens":50,"output_tokens":9}}`, true},
		{`{"id":"job-1","usage":{"cpu":3},"state":"done"}`, false},
		{`{"choices":["a","b"],"usage":"none"}`, false},
		{`[{"choices":[],"usage":{}}]`, false},
	} {
		if got := modelEnvelope([]byte(c.b)) != 0; got != c.want {
			t.Errorf("modelEnvelope(%.60s) = %v, want %v", c.b, got, c.want)
		}
	}
	prompts := []string{"Grade this answer 1-10 for accuracy.", "On a 1 to 10 scale, how accurate is this answer?", "Rate the answer's accuracy from 1 to 10.", "Score 1-10: how accurate is this answer?", "Give the answer an accuracy score (1-10)."}
	judge := func(id string, grade func(i int) string) asPlay {
		w := asRunOf(id, "model", false)
		for i, p := range prompts {
			w.t("", asOK("chat_completion", obj{"model": "gpt-4o-mini", "messages": arr{obj{"role": "system", "content": p}, obj{"role": "user", "content": "The warranty lasts two years."}}},
				s19Chat(fmt.Sprintf("chatcmpl-%d", 900+i*7), grade(i), 40+i*3, 12)))
		}
		return playAs(w.run)
	}
	if p := judge("alike", func(int) string { return "Score: 4/10. Plausible, but no source is cited." }); p.refusedAt != 3 {
		t.Errorf("one grade under reworded prompts: refused at %d (%v), want the fourth prompt", p.refusedAt, p.v)
	}
	if p := judge("moves", func(i int) string { return fmt.Sprintf("Score: %d/10. Plausible, but no source is cited.", 3+i) }); p.refusedAt >= 0 {
		t.Errorf("a grade that moves: refused at %d: %v", p.refusedAt, p.v)
	}
	w := asRunOf("classifier", "model", false)
	for i, text := range []string{"Love it", "Great service", "Fast delivery, thanks", "Works as described", "Would buy again", "Five stars"} {
		w.t("", asOK("chat_completion", obj{"model": "gpt-4o-mini", "messages": arr{obj{"role": "system", "content": "Label the review's sentiment: positive, neutral or negative."}, obj{"role": "user", "content": text}}},
			s19Chat(fmt.Sprintf("chatcmpl-%d", 700+i), "positive", 30+i, 1)))
	}
	if p := playAs(w.run); p.refusedAt >= 0 {
		t.Errorf("a classifier labelling other texts alike: refused at %d: %v", p.refusedAt, p.v)
	}
}

// Two agents that set one thing back and forth, each with a note in other
// words, each write answered as the round before and nothing read in
// between, are refused at the write that starts a fourth round
// (short_cycle). A look in between (a charge read), one agent alone, two
// agents posting to two channels answered alike, and a value that moves
// each round go on.
func TestFlipBetweenAgents(t *testing.T) {
	type opts struct {
		read, alone, post, moves bool
	}
	run := func(id string, o opts) asPlay {
		w := asRunOf(id, "support", false).acc("write", "assign_conversation", "post_message")
		a, b := s19As(w, "tier1"), s19As(w, "billing")
		if o.alone {
			b = a
		}
		for r := 0; r < 4; r++ {
			if o.post {
				a.t("", asOK("post_message", obj{"channel": "#support", "text": fmt.Sprintf("Update %c on the outage, round %c.", 'A'+r, 'a'+r)}, obj{"ok": true}))
				b.t("", asOK("post_message", obj{"channel": "#billing", "text": fmt.Sprintf("Billing note %c on the refunds, round %c.", 'A'+r, 'a'+r)}, obj{"ok": true}))
				continue
			}
			to := "team_billing"
			if o.moves {
				to = fmt.Sprintf("team_%d", r)
			}
			a.t("", asOK("assign_conversation", obj{"conversation_id": "215469873", "assignee_id": to, "body": []string{"Double charge, over to billing.", "Billing please: charged twice.", "Sending to billing: duplicate charge.", "Customer says charged twice; billing."}[r]},
				obj{"id": "215469873", "team_assignee_id": to}))
			if o.read {
				b.t("", asOK("get_charges", obj{"customer": "cus_Q81xK"}, arr{obj{"id": "ch_1", "amount": 4990}}))
			}
			b.t("", asOK("assign_conversation", obj{"conversation_id": "215469873", "assignee_id": "team_tier1", "body": []string{"One charge only; back to tier 1.", "Stripe shows one charge, tier 1.", "Nothing duplicated; returning it.", "Login issue, not billing; tier 1."}[r]},
				obj{"id": "215469873", "team_assignee_id": "team_tier1"}))
		}
		return playAs(w.run)
	}
	if p := run("flip", opts{}); p.refusedAt != 6 || p.v.Detector != "short_cycle" {
		t.Errorf("two agents setting one thing back and forth: refused at %d (%v), want the seventh write by short_cycle", p.refusedAt, p.v)
	}
	for name, o := range map[string]opts{"read": {read: true}, "alone": {alone: true}, "post": {post: true}, "moves": {moves: true}} {
		if p := run(name, o); p.refusedAt >= 0 {
			t.Errorf("%s: refused at %d: %v", name, p.refusedAt, p.v)
		}
	}
}
