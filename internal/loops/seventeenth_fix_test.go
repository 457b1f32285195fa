package loops

import (
	"fmt"
	"testing"
)

// A name the system builds on a value of the call for each attempt (a
// pod named after its deployment, a replica set's hash) is that value: the
// same complaint about one deployment, its pod another each time, is one
// complaint (same_error at the fourth call). Other deployments refused
// alike, each under its own pods, stay a batch.
func TestGeneratedNameInError(t *testing.T) {
	quota := func(name string, i int) string {
		return fmt.Sprintf("pods \"%s-6c9d8b7f4-%s\" is forbidden: exceeded quota: compute-resources, requested: requests.cpu=500m, used: requests.cpu=15600m, limited: requests.cpu=16", name, []string{"x2kqp", "m8zrt", "q4wvn", "b7hcd", "t1lsy"}[i])
	}
	pull := func(name string, i int) string {
		return fmt.Sprintf("deployment %s-7d9f%03x failed: pod %s-7d9f%03x-x%dq: Failed to pull image \"registry.shop.io/%s:2.4.1\": manifest unknown: manifest tagged by \"2.4.1\" is not found", name, 0x4a1+i*9, name, 0x4a1+i*9, i, name)
	}
	same := asRunOf("scale-one", "k8s", true).acc("write", "scale_deployment")
	batch := asRunOf("scale-each", "k8s", false).acc("write", "scale_deployment")
	deploy := asRunOf("deploy-one", "deploy", true).acc("write", "deploy_service")
	deployEach := asRunOf("deploy-each", "deploy", false).acc("write", "deploy_service")
	names := []string{"checkout-api", "cart-api", "search-api", "pricing-api", "images-api"}
	for i := range 5 {
		if i == 3 {
			same.then()
			deploy.then()
		}
		same.t("", asFail("scale_deployment", obj{"name": "checkout-api", "replicas": 12, "reason": fmt.Sprintf("peak %d", i)}, "tool_error", quota("checkout-api", i)))
		batch.t("", asFail("scale_deployment", obj{"name": names[i], "replicas": 12}, "tool_error", quota(names[i], i)))
		deploy.t("", asFail("deploy_service", obj{"service": "checkout-api", "image": "registry.shop.io/checkout-api:2.4.1", "attempt": i + 1}, "tool_error", pull("checkout-api", i)))
		deployEach.t("", asFail("deploy_service", obj{"service": names[i], "image": "registry.shop.io/" + names[i] + ":2.4.1", "attempt": 1}, "tool_error", pull(names[i], i)))
	}
	for _, w := range []*asw{same, batch, deploy, deployEach} {
		p := playAs(w.run)
		got := asOutcome(w.run, p)
		want := "ok"
		if w.run.loop {
			want = "detected"
		}
		if got != want || w.run.loop && p.v.Detector != "same_error" {
			t.Errorf("%s: %s at %d, want %s (%v)", w.run.id, got, p.refusedAt, want, p.v)
		}
	}
	if generatedSuffix([]byte("-worker")) != 0 || generatedSuffix([]byte("-6c9d8b7f4-x2kqp rest")) != len("-6c9d8b7f4-x2kqp") {
		t.Error("generatedSuffix: a suffix of letters alone is another name; one with a digit ends at its word's end")
	}
}

// A text the question carries, the same in each asking (a document to
// summarise), ties an answer to the question: reworded instructions
// answered with the same summary are the question going round (rephrase
// at the fourth). Other questions about the document answered otherwise,
// and reworded instructions answered by a verdict that names nothing of
// it, go on.
func TestAboutCarriedDocument(t *testing.T) {
	doc := "Q3 revenue rose 12% to $48.2M, driven by the EU launch. Gross margin fell two points on higher shipping costs. Churn was flat at 2.1%."
	sum := "- Revenue +12% to $48.2M (EU launch)\n- Gross margin down 2 pts (shipping)\n- Churn flat at 2.1%"
	ins := []string{"Summarise in three bullet points.", "Give me a 3-bullet summary.", "Summarize this as three bullets.", "Three bullet points summarising the text, please.", "Bullet-point summary (3 points)."}
	loop := asRunOf("summary-again", "text", true)
	asks := asRunOf("questions-about-doc", "text", false)
	verdict := asRunOf("verdict-reworded", "text", false)
	qs := [][2]string{{"What drove revenue growth in this quarter?", "The EU launch."}, {"Why did the gross margin fall this quarter?", "Higher shipping costs."}, {"How did churn move over the quarter?", "It stayed flat at 2.1%."}, {"What is the revenue figure for the quarter?", "$48.2M, up 12%."}, {"Which costs rose in this quarter?", "Shipping."}}
	for i := range 5 {
		if i == 3 {
			loop.then()
		}
		loop.t("", asOK("summarize", obj{"text": doc, "instructions": ins[i]}, sum))
		asks.t("", asOK("summarize", obj{"text": doc, "instructions": qs[i][0]}, qs[i][1]))
		verdict.t("", asOK("summarize", obj{"text": doc, "instructions": []string{"Is this text about finance? Answer yes or no.", "Does the text concern finance? yes/no", "Is the text a finance text? yes or no", "Answer yes or no: is this finance text?", "Finance text, yes or no?"}[i]}, "Yes."))
	}
	for _, w := range []*asw{loop, asks} {
		p := playAs(w.run)
		got := asOutcome(w.run, p)
		want := "ok"
		if w.run.loop {
			want = "detected"
		}
		if got != want || w.run.loop && p.v.Detector != "rephrase" {
			t.Errorf("%s: %s at %d, want %s (%v)", w.run.id, got, p.refusedAt, want, p.v)
		}
	}
	if p := playAs(verdict.run); p.v != nil && p.v.Detector == "rephrase" {
		t.Errorf("a verdict naming nothing of the document tied to it: %v", p.v)
	}
}

// A search in words that found nothing, asked again in other words with
// the same numbers (one date respelled, its operators reordered), is the
// same empty answer again (rephrase at the fifth asking); a sweep over
// weeks, each empty, names another window each time and goes on.
func TestSearchSameNumbersRespelled(t *testing.T) {
	loop := asRunOf("mail-same-window", "mail", true)
	sweep := asRunOf("mail-weeks", "mail", false)
	for i, q := range []string{
		"from:billing@acme.io subject:invoice after:2026/11/01",
		"subject:invoice from:billing@acme.io after:2026/11/01",
		"after:2026/11/01 from:(billing@acme.io) subject:(invoice)",
		"from:\"billing@acme.io\" subject:\"invoice\" after:2026/11/1",
		"subject:invoice after:2026/11/01 from:billing@acme.io",
		"invoice from:billing@acme.io after:2026/11/01",
	} {
		if i == 4 {
			loop.then()
		}
		loop.t("", asOK("search_emails", obj{"query": q, "maxResults": 10}, s17Mail()))
		sweep.t("", asOK("search_emails", obj{"query": fmt.Sprintf("from:billing@acme.io subject:invoice after:2026/%02d/01 before:2026/%02d/01", 6+i, 7+i), "maxResults": 10}, s17Mail()))
	}
	for _, w := range []*asw{loop, sweep} {
		p := playAs(w.run)
		got := asOutcome(w.run, p)
		want := "ok"
		if w.run.loop {
			want = "detected"
		}
		if got != want || w.run.loop && p.v.Detector != "rephrase" {
			t.Errorf("%s: %s at %d, want %s (%v)", w.run.id, got, p.refusedAt, want, p.v)
		}
	}
}

// A mail server's transient reply (4yz) is a failure worth a retry, not
// a complaint said again: alerts to one greylisting address go on, and
// one message sent again and again is still bounded by the retry budget.
// A permanent reply (5yz) is not transient.
func TestSMTPTransient(t *testing.T) {
	for msg, want := range map[string]bool{
		"SMTP 451 4.7.1 <oncall@acme.example>: Recipient address rejected: Greylisted": true,
		"451 4.7.1 Please try again later":                                             true,
		"smtp error: 421 Too many connections from your host":                          true,
		"SMTP error (code 450): mailbox busy":                                          false, // a code inside brackets, no enhanced code: not read
		"SMTP 550 5.7.1 Client host blocked":                                           false,
		"Error 4512: quota":                                                            false,
		"HTTP 429 Too Many Requests":                                                   false,
		"disk 451 GB free, 4.7.1 release":                                              false,
	} {
		if got := smtpTransient([]byte(msg)); got != want {
			t.Errorf("smtpTransient(%q) = %v, want %v", msg, got, want)
		}
	}
	alerts := asRunOf("alerts-greylisted", "mail", false).acc("write", "send_email")
	again := asRunOf("one-mail-greylisted", "mail", true).acc("write", "send_email")
	grey := "SMTP 451 4.7.1 <oncall@acme.example>: Recipient address rejected: Greylisted, see https://postgrey.example/help"
	for i, s := range []string{"Disk 91% on db-1", "Backup finished late", "Certificate expires in 7 days", "Queue depth above 10k", "Error rate back to normal"} {
		a := obj{"to": arr{"oncall@acme.example"}, "subject": s, "body": s + "."}
		if i < 4 {
			alerts.t("", asFail("send_email", a, "tool_error", grey))
		} else {
			alerts.t("", asOK("send_email", a, "Email sent successfully."))
		}
	}
	for i := range 6 {
		if i == 4 {
			again.then()
		}
		again.t("", asFail("send_email", obj{"to": arr{"oncall@acme.example"}, "subject": "Disk full", "body": "Disk full."}, "tool_error", grey))
	}
	if p := playAs(alerts.run); p.v != nil {
		t.Errorf("alerts to a greylisting address refused: %v", p.v)
	}
	if p := playAs(again.run); asOutcome(again.run, p) != "detected" || p.v.Detector != "retry_budget" {
		t.Errorf("one mail greylisted again and again: refused at %d (%v), want retry_budget at 4", p.refusedAt, p.v)
	}
}

// The things a command names are compared as paths, not as written: an
// archive named bare or as an option's value (--file=), a folder as
// restore/, ./restore or restore, are the same things, so one corrupt
// archive extracted under other flags fails the same way (same_error at
// the fourth); other archives extracted one by one, one of them corrupt,
// and one archive into other nested folders, go on.
func TestCommandPath(t *testing.T) {
	for in, want := range map[string]string{
		"--file=backup.tar.gz": "backup.tar.gz", "./restore": "restore", "restore//": "restore",
		"-count=1": "1", "./": ".", "/": "/", "--output=": "--output=", "src/a/": "src/a",
	} {
		if got := string(commandPath([]byte(in))); got != want {
			t.Errorf("commandPath(%q) = %q, want %q", in, got, want)
		}
	}
	corrupt := s17Shell(2, "", "gzip: stdin: unexpected end of file\ntar: Unexpected EOF in archive\ntar: Error is not recoverable: exiting now\n")
	loop := asRunOf("one-archive-flags", "shell", true).acc("write", "run_command")
	dirs := asRunOf("one-archive-other-dirs", "shell", false).acc("write", "run_command")
	for i, c := range []string{
		"tar -xzf backup.tar.gz -C restore/",
		"tar xzf backup.tar.gz -C restore",
		"tar -x -z -f backup.tar.gz --directory ./restore/",
		"tar --extract --gzip --file=backup.tar.gz -C ./restore",
		"tar -xvzf backup.tar.gz -C restore/",
	} {
		if i == 3 {
			loop.then()
		}
		loop.t("", asOK("run_command", obj{"command": c}, corrupt))
		dirs.t("", asOK("run_command", obj{"command": fmt.Sprintf("tar -xzf backup.tar.gz -C restore/host-%d/", i)}, corrupt))
	}
	for _, w := range []*asw{loop, dirs} {
		p := playAs(w.run)
		got := asOutcome(w.run, p)
		want := "ok"
		if w.run.loop {
			want = "detected"
		}
		if got != want || w.run.loop && p.v.Detector != "same_error" {
			t.Errorf("%s: %s at %d, want %s (%v)", w.run.id, got, p.refusedAt, want, p.v)
		}
	}
}
