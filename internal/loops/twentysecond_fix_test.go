package loops

import (
	"fmt"
	"testing"
)

// TestWaitedSpanKeys: how long a job has waited, under a key that says so
// and names its unit (waiting_s, queued_seconds, idleMinutes), is a span
// that grows while nothing else moves, as elapsed is: a queue polled whose
// answer moves only there is the same answer, its third poll refused
// (repeat). A count of jobs waiting has no unit and is the answer's; a
// timeout or a countdown in seconds is a setting or progress, and stays.
func TestWaitedSpanKeys(t *testing.T) {
	poll := func(waited, position int) op {
		return call("instrument_queue", `{"instrument":"HPLC-2"}`,
			fmt.Sprintf(`{"injections_done":0,"position":%d,"reason":"Column equilibration: pressure ripple above 2%%","state":"Waiting","waiting_s":%d}`, position, waited))
	}
	counts := func(waiting, active int) op {
		return call("queue_counts", `{"queue":"emails"}`, fmt.Sprintf(`{"active":%d,"completed":1200,"failed":3,"waiting":%d}`, active, waiting))
	}
	eta := func(s int) op {
		return call("export_status", `{"export":"ex-7"}`, fmt.Sprintf(`{"eta_s":%d,"state":"running","timeout_s":3600}`, s))
	}
	runCases(t, []testCase{
		{"a queue whose wait alone grows", nil, []op{poll(300, 3), poll(540, 3), refused(poll(780, 3), "repeat")}},
		{"a queue that moves up while it waits", nil, []op{poll(300, 4), poll(540, 3), poll(780, 2), poll(1020, 1)}},
		{"counts of jobs waiting", nil, []op{counts(9, 2), counts(7, 2), counts(4, 2), counts(1, 2), counts(0, 1)}},
		{"a countdown in seconds", nil, []op{eta(300), eta(240), eta(180), eta(120), eta(60)}},
	})
	for _, c := range []struct {
		key  string
		want bool
	}{
		{"waiting_s", true}, {"queued_seconds", true}, {"idleMinutes", true}, {"wait_sec", true}, {"pending_min", true},
		{"waiting", false}, {"timeout_s", false}, {"eta_s", false}, {"length_s", false}, {"waiting_jobs", false},
	} {
		if got := volatileKey([]byte(c.key)); got != c.want {
			t.Errorf("volatileKey(%q) = %v, want %v", c.key, got, c.want)
		}
	}
}

// TestEchoInAnotherCase: a complaint that echoes an argument in another
// case (a server keeps an e-mail lower-cased) echoes it all the same: one
// hire created again with the e-mail's case changed, refused as the same
// duplicate each time, is one complaint, refused at the fourth try
// (same_error), where the e-mail echoed in another case was a word of the
// complaint, another template each time. Another e-mail named by the
// complaint than the one sent is the complaint's, and other complaints go
// on.
func TestEchoInAnotherCase(t *testing.T) {
	n := 0
	hire := func(email, named string) op {
		n++ // each try in another department's words, so that no two are one write respelled
		o := failingWith("hris_create_employee", fmt.Sprintf(`{"department":"team %c","firstName":"Priya","workEmail":"%s"}`, 'a'+n, email), "conflict",
			"409 Conflict: an employee with work email "+named+" already exists")
		o.access = "write"
		return o
	}
	const p = "priya.raghunathan@northwind.example"
	runCases(t, []testCase{
		{"one e-mail in other cases", nil, []op{
			hire(p, p), hire("Priya.Raghunathan@northwind.example", p), hire("PRIYA.RAGHUNATHAN@NORTHWIND.EXAMPLE", p),
			refused(hire("Priya.Raghunathan@Northwind.example", p), "same_error"),
		}},
		{"the complaint names another e-mail each time", nil, []op{
			hire(p, "p.raghunathan@northwind.example"), hire(p, "priya.r@northwind.example"), hire(p, "praghunathan@northwind.example"),
			hire(p, "priya@northwind.example"),
		}},
	})
	// The template itself: an echo in another case is masked as one in
	// the same case is; a word that only looks like the argument stays.
	d := New(nil)
	args := []byte(`{"workEmail":"Priya.R@Northwind.example"}`)
	same := d.template([]byte("email priya.r@northwind.example is taken"), []byte(`{"workEmail":"priya.r@northwind.example"}`))
	if got := d.template([]byte("email priya.r@northwind.example is taken"), args); got != same {
		t.Errorf("an echo in another case is not masked as an echo")
	}
	if got := d.template([]byte("email ana.r@northwind.example is taken"), args); got == same {
		t.Errorf("another e-mail than the argument is masked as its echo")
	}
}

// TestEchoedSpellingAnswer: an answer that names, word for word, what its
// call was asked with (a directory's filter, a search's query in its own
// syntax, an audit's address) differs from the last only there when the
// call is respelled; the rest is the same answer, and the spellings go
// round as answers alike do (rephrase), refused once a spelling's words
// come again. Other filters, each answered with its own echo and the same
// empty list, are a batch; a filter refined that finds other entries is
// news.
func TestEchoedSpellingAnswer(t *testing.T) {
	search := func(filter string, entries string) op {
		return call("ldap_search", `{"base":"ou=people,dc=example","filter":"`+filter+`"}`,
			`{"base":"ou=people,dc=example","count":2,"entries":`+entries+`,"filter":"`+filter+`","result":"success"}`)
	}
	two := `[{"cn":"Ada Okafor","uid":"ada.okafor"},{"cn":"Ada Okafor","uid":"ada.okafor2"}]`
	one := `[{"cn":"Ada Okafor","uid":"ada.okafor"}]`
	runCases(t, []testCase{
		{"one filter respelled, the same entries", nil, []op{
			search("(&(objectClass=person)(sn=Okafor))", two), search("(&(sn=Okafor)(objectClass=person))", two),
			search("(&(objectclass=person)(sn=okafor))", two),
			refused(search("(&(sn=okafor)(objectClass=Person))", two), "rephrase"),
		}},
		{"other filters, answered alike", nil, []op{
			search("(&(objectClass=person)(sn=Okafor))", two), search("(&(objectClass=person)(sn=Okoye))", two),
			search("(&(objectClass=person)(sn=Okonkwo))", two), search("(&(objectClass=person)(sn=Obi))", two),
			search("(&(objectClass=person)(sn=Eze))", two),
		}},
		{"a filter refined", nil, []op{
			search("(&(objectClass=person)(sn=Okafor))", two), search("(&(sn=Okafor)(objectClass=person))", two),
			search("(&(objectClass=person)(sn=Okafor)(givenName=Ada))", one), search("(&(objectClass=person)(sn=Okafor)(uid=ada.okafor))", one),
		}},
	})
}

// TestValueSpacesAround: a value is read without the white space around
// it, as respelled reads it: one SKU asked again with a space after it,
// answered alike, is a spelling already used (rephrase), where the space
// made a code of words of it, another question. Other SKUs, answered
// alike, go on.
func TestValueSpacesAround(t *testing.T) {
	stock := func(sku string) op {
		return call("inventory_level", `{"location":"DC-RENO","sku":"`+sku+`"}`,
			`{"available":0,"description":"Tee, black, M","location":"DC-RENO","on_hand":0,"sku":"TS-BLK-M"}`)
	}
	other := func(sku string) op {
		return call("inventory_level", `{"location":"DC-RENO","sku":"`+sku+`"}`, `{"available":0,"location":"DC-RENO","on_hand":0,"sku":"`+sku+`"}`)
	}
	runCases(t, []testCase{
		{"one SKU, a space after it", nil, []op{stock("TS-BLK-M"), stock("ts-blk-m"), stock("TS_BLK_M"), refused(stock("TS-BLK-M "), "rephrase")}},
		{"other SKUs, a space after one", nil, []op{other("TS-BLK-M"), other("TS-BLK-L"), other("TS-WHT-M"), other("TS-WHT-L "), other("HD-GRY-M")}},
	})
}
