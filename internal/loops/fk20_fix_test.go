package loops

import (
	"fmt"
	"testing"
)

// A list written from one template (a task of one project, an alert for
// another host, a changelog line for another feature, a commit message
// for another file) is not one write said again in other words: each
// text is the last with one run of words put in place of another, each
// of them new. A rewording that moves, drops or swaps the words it keeps
// is still refused at the fourth (TestWriteReworded).
func TestWriteSeries(t *testing.T) {
	w := map[string]string{"add_task": "write", "post": "write", "append": "write"}
	for _, list := range [][]string{
		{"Website relaunch: draft the homepage copy", "Website relaunch: review the homepage copy", "Website relaunch: proofread the homepage copy", "Website relaunch: publish the homepage copy", "Website relaunch: translate the homepage copy"},
		{"Checkout redesign: update the cart page", "Checkout redesign: update the payment page", "Checkout redesign: update the shipping page", "Checkout redesign: update the confirmation page"},
		{"Q1 hiring plan: collect headcount requests", "Q1 hiring plan: budget review with finance", "Q1 hiring plan: write the job descriptions", "Q1 hiring plan: send to the leadership team"},
	} {
		var calls []asCall
		for i, c := range list {
			calls = append(calls, asOK("add_task", obj{"project_id": "2203306141", "content": c}, obj{"id": fmt.Sprint(7025000000 + i*7919), "content": c}))
		}
		if at, v := thPlay(t, calls, w); at >= 0 {
			t.Errorf("%q...: refused at %d (%v)", list[0], at, v)
		}
	}
	var calls []asCall
	for i, h := range []string{"alpha", "bravo", "charlie", "delta", "echo"} {
		calls = append(calls, asOK("post", obj{"channel_id": "C07OPSALERT", "text": "Disk almost full on " + h}, obj{"ok": true, "ts": fmt.Sprintf("1733392%03d.000100", i*17)}))
	}
	if at, v := thPlay(t, calls, w); at >= 0 {
		t.Errorf("alerts for other hosts: refused at %d (%v)", at, v)
	}
	calls = nil
	for _, f := range []string{"invoices", "orders", "customers", "refunds", "payouts"} {
		calls = append(calls, asOK("append", obj{"path": "CHANGELOG.md", "content": "- Added export to CSV for " + f + "\n"}, "Appended to CHANGELOG.md"))
	}
	if at, v := thPlay(t, calls, w); at >= 0 {
		t.Errorf("changelog lines: refused at %d (%v)", at, v)
	}
	// A word of the list said again in its place is not new: the item
	// written again is the same text, reworded around it.
	calls = nil
	for _, c := range []string{"Website relaunch: draft the homepage copy", "Website relaunch: review the homepage copy", "Homepage copy for the website relaunch: draft it", "Draft the website relaunch homepage copy", "Website relaunch homepage copy: draft"} {
		calls = append(calls, asOK("add_task", obj{"project_id": "2203306141", "content": c}, obj{"id": "7025000000"}))
	}
	if at, v := thPlay(t, calls, w); at < 0 || v.Detector != "rephrase" {
		t.Errorf("one task reworded after a list's item: refused at %d (%v), want rephrase", at, v)
	}
}

// Punctuation between words with a letter is part of a name: web-1 and
// web.1, a Java package and a folder, pods in two naming schemes, are
// other names; between numbers (a date's, a time's, an id of numbers) it
// is not (TestNotationRespelled).
func TestNotationJoins(t *testing.T) {
	for _, names := range [][]string{
		{"web-1", "web.1", "web_1", "web:1", "web/1"},
		{"api-v2-0", "api.v2.0", "api_v2_0", "api-v2.0"},
		{"com.acme.billing", "com/acme/billing", "com_acme_billing", "com-acme-billing"},
	} {
		var calls []asCall
		for _, h := range names {
			calls = append(calls, asOK("get_status", obj{"name": h}, obj{"name": h, "status": "healthy"}))
		}
		if at, v := thPlay(t, calls, nil); at >= 0 {
			t.Errorf("%v: refused at %d (%v)", names, at, v)
		}
	}
	// Leading and trailing punctuation, and escapes, still fold.
	var calls []asCall
	for _, h := range []string{"web-1", "/web-1", "web%2D1", "web-1/"} {
		calls = append(calls, asOK("get_status", obj{"name": h}, obj{"name": h, "status": "healthy"}))
	}
	if at, v := thPlay(t, calls, nil); at != 3 || v.Detector != "rephrase" {
		t.Errorf("one name, its punctuation around it and escaped: refused at %d (%v), want 3 by rephrase", at, v)
	}
}
