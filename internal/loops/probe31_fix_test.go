package loops

import (
	"fmt"
	"testing"
)

// TestToldInOneMember: a short answer handed back as an object of one
// text member (a human-input tool's {"reply": ...}, {"answer": ...}) says
// what its text says: one question reworded, each reply saying it was
// given already, is refused at the fourth asking, as a bare text answer
// is (TestToldBefore); other questions answered so go on, and a text
// beside other members (who said it, when) is not read so.
func TestToldInOneMember(t *testing.T) {
	run := func(id string, qa [][2]string) asPlay {
		w := asRunOf(id, "human", false)
		for _, x := range qa {
			w.t("", asOK("ask_user", obj{"question": x[0]}, obj{"reply": x[1]}))
		}
		return playAs(w.run)
	}
	told := [][2]string{
		{"Which office should I book the meeting room in?", "Berlin."},
		{"Just to confirm, which office location is this for?", "The Berlin office, as I said."},
		{"Could you tell me the office for the meeting room?", "I already told you: Berlin."},
		{"Sorry, which of our offices do you mean?", "Berlin, as I said."},
		{"Which site should the room be at?", "Berlin!"},
	}
	if p := run("told", told); p.refusedAt != 3 || p.v.Detector != "rephrase" {
		t.Errorf("one question reworded, each reply saying so: refused at %d (%v), want the fourth asking", p.refusedAt, p.v)
	}
	plain := [][2]string{
		{"Which office should I book the meeting room in?", "Berlin."},
		{"How many people will attend the meeting?", "Eight, as I said in the invite."},
		{"Which day should the meeting be on?", "Tuesday."},
		{"Should I order lunch for the meeting?", "Yes, vegetarian."},
		{"Do you need a projector in the room?", "No, a screen is there."},
	}
	if p := run("plain", plain); p.refusedAt >= 0 {
		t.Errorf("other questions on one subject: refused at %d: %v", p.refusedAt, p.v)
	}
	for _, c := range []struct {
		res  string
		want bool
	}{
		{`{"reply":"The Berlin office, as I said."}`, true},
		{`{"text":"I already told you"}`, true},
		{` { "answer" : "Again, 150 euros." } `, true},
		{`{"reply":"Around 150 euros"}`, false},
		{`{"reply":"as I said, 150","from":"ana"}`, false},
		{`{"reply":{"text":"as I said"}}`, false},
		{`{"n":3}`, false},
	} {
		if got := saysToldBefore([]byte(c.res)); got != c.want {
			t.Errorf("saysToldBefore(%s) = %v, want %v", c.res, got, c.want)
		}
	}
}

// TestModelReplyUsage: a model asked through a tool that hands back its
// reply beside the call's token counts ({"answer": ..., "usage":
// {"prompt_tokens": ...}}) answered alike whatever the counts: one
// question reworded, the same reply each time, is refused at the fourth
// asking, as a full completion's envelope is (TestModelEnvelope). Other
// questions with other replies go on, and an account's usage report (no
// reply in words beside it) polled while its counts move is news.
func TestModelReplyUsage(t *testing.T) {
	for _, c := range []struct {
		b    string
		want bool
	}{
		{`{"answer":"It is taxed at 7 percent.","usage":{"prompt_tokens":20,"completion_tokens":9,"total_tokens":29}}`, true},
		{`{"text":"Seven percent, the reduced rate.","usage":{"input_tokens":20,"output_tokens":9}}`, true},
		{`{"org":"acme","usage":{"input_tokens":1200000,"output_tokens":90000}}`, false},
		{`{"answer":"It is taxed at 7 percent.","usage":{"requests":20,"tokens":9}}`, false},
		{`{"answer":"It is taxed at 7 percent.","usage":{}}`, false},
	} {
		if got := modelEnvelope([]byte(c.b)) != 0; got != c.want {
			t.Errorf("modelEnvelope(%.60s) = %v, want %v", c.b, got, c.want)
		}
	}
	qs := []string{
		"What is the VAT rate on e-books sold to consumers in Germany?",
		"Which VAT percentage applies to ebooks sold to German consumers?",
		"For a German private customer buying an e-book, what VAT rate do I charge?",
		"Germany: VAT on electronic books for B2C sales, what's the rate?",
		"What rate of VAT applies to e-books sold to consumers in Germany?",
	}
	ask := func(id string, reply func(i int) string) asPlay {
		w := asRunOf(id, "model", false)
		for i, q := range qs {
			w.t("", asOK("ask_llm", obj{"model": "gpt-4o-mini", "prompt": q}, obj{"answer": reply(i), "usage": obj{"prompt_tokens": 20 + 3*i, "completion_tokens": 31, "total_tokens": 51 + 3*i}}))
		}
		return playAs(w.run)
	}
	same := ask("same", func(int) string {
		return "E-books sold to consumers in Germany are taxed at the reduced VAT rate of 7% since December 2019."
	})
	if same.refusedAt != 3 || same.v.Detector != "rephrase" {
		t.Errorf("one question reworded, the same reply: refused at %d (%v), want the fourth asking", same.refusedAt, same.v)
	}
	moves := ask("moves", func(i int) string {
		return fmt.Sprintf("Draft %d: e-books in Germany carry %s VAT, depending on %s.", i, []string{"7%", "19%", "7% (since 2019)", "the reduced", "a 7%"}[i], []string{"the buyer", "the format", "the date", "the seller", "the channel"}[i])
	})
	if moves.refusedAt >= 0 {
		t.Errorf("reworded questions, the replies moving: refused at %d: %v", moves.refusedAt, moves.v)
	}
	// A classifier through a model: other reviews, each judged alike.
	c := asRunOf("classify", "model", false)
	for i, r := range []string{"The delivery was quick and the shoes fit perfectly", "Great support team, they solved my billing issue in minutes", "Love the new app design, checkout feels much faster", "The jacket is warm and the zipper feels solid", "Returned an item and got the refund the same week", "Fantastic coffee beans, will order again next month"} {
		c.t("", asOK("ask_llm", obj{"model": "gpt-4o-mini", "prompt": "Classify the sentiment of this customer review as positive, neutral or negative: " + r}, obj{"answer": "The review is positive overall.", "usage": obj{"prompt_tokens": 30 + 2*i, "completion_tokens": 7, "total_tokens": 37 + 2*i}}))
	}
	if p := playAs(c.run); p.refusedAt >= 0 {
		t.Errorf("other reviews classified alike through a model: refused at %d: %v", p.refusedAt, p.v)
	}
	w := asRunOf("account", "usage", false)
	for i := 0; i < 5; i++ {
		w.t("", asOK("get_usage", obj{"org": "acme"}, obj{"org": "acme", "usage": obj{"input_tokens": 1200000 + 70000*i, "output_tokens": 90000 + 4000*i}}))
	}
	if p := playAs(w.run); p.refusedAt >= 0 {
		t.Errorf("an account's token usage polled while it grows: refused at %d: %v", p.refusedAt, p.v)
	}
}

// BenchmarkSaysToldBeforeObject: the look at a short answer in an object
// of one member, for what its text says of being given before.
func BenchmarkSaysToldBeforeObject(b *testing.B) {
	res := []byte(`{"reply":"The offsite starts on the 14th of March, in Lisbon, for three nights near the river."}`)
	for b.Loop() {
		if saysToldBefore(res) {
			b.Fatal("told")
		}
	}
}

// BenchmarkModelEnvelopeReply: the look at a model's reply beside its
// token counts.
func BenchmarkModelEnvelopeReply(b *testing.B) {
	res := []byte(`{"answer":"E-books sold to consumers in Germany are taxed at the reduced VAT rate of 7% since December 2019.","usage":{"completion_tokens":31,"prompt_tokens":26,"total_tokens":57}}`)
	for b.Loop() {
		if modelEnvelope(res) != usageReply {
			b.Fatal("not a reply")
		}
	}
}

// TestTemplatedPrompt: a prompt that carries its item beside a fixed
// instruction ("Classify the sentiment of this customer review ...:
// <review>"), other items judged alike ("positive"), is a batch: the
// items go on (refused at the fourth before, with or without token counts
// beside the verdict). The same item under the instruction, reworded,
// answered alike, is still refused.
func TestTemplatedPrompt(t *testing.T) {
	const instr = "Classify the sentiment of this customer review as positive, neutral or negative: "
	run := func(id string, items []string) asPlay {
		w := asRunOf(id, "model", false)
		for _, r := range items {
			w.t("", asOK("ask_llm", obj{"model": "gpt-4o-mini", "prompt": instr + r}, "The review is positive overall."))
		}
		return playAs(w.run)
	}
	other := []string{"The delivery was quick and the shoes fit perfectly", "Great support team, they solved my billing issue in minutes", "Love the new app design, checkout feels much faster", "The jacket is warm and the zipper feels solid", "Returned an item and got the refund the same week", "Fantastic coffee beans, will order again next month"}
	if p := run("items", other); p.refusedAt >= 0 {
		t.Errorf("other reviews classified alike: refused at %d: %v", p.refusedAt, p.v)
	}
	same := []string{"The delivery was quick and the shoes fit perfectly", "Delivery was quick, shoes fit perfectly", "Quick delivery and the shoes fit perfectly", "The shoes fit perfectly and delivery was quick", "Shoes fit perfectly; the delivery was quick"}
	if p := run("same", same); p.refusedAt != 3 || p.v.Detector != "rephrase" {
		t.Errorf("one review reworded under the instruction: refused at %d (%v), want the fourth asking", p.refusedAt, p.v)
	}
}
