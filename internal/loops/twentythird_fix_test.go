package loops

import (
	"fmt"
	"net/url"
	"testing"
)

// TestQuotaLeftKeys: the caller's quota left (requests_remaining,
// x_rate_limit_remaining, api_calls_left) falls with each call whatever
// the answer says, as X-RateLimit-Remaining does in the headers: a search
// respelled whose answer moves only there is the same answer, and its
// fourth spelling is refused (rephrase). Other things left (seats, days)
// are the answer's: a countdown of seats that falls is news.
func TestQuotaLeftKeys(t *testing.T) {
	n := 0
	search := func(name string) op {
		n++
		return call("players_search", `{"league":"WNBA","search":"`+name+`","season":2026}`,
			fmt.Sprintf(`{"errors":[],"get":"players","parameters":{"league":"WNBA","search":"%s","season":"2026"},"requests_remaining":%d,"response":[],"results":0}`, name, 97-n))
	}
	seats := func(left int) op {
		return call("event_availability", `{"event":"EV-7"}`, fmt.Sprintf(`{"event":"EV-7","seats_remaining":%d}`, left))
	}
	runCases(t, []testCase{
		{"a search respelled, the quota falling", nil, []op{
			search("Nikola Jokić"), search("Nikola Jokic"), search("JOKIC, Nikola"), refused(search("nikola jokic"), "rephrase"),
		}},
		{"seats left falling", nil, []op{seats(40), seats(31), seats(22), seats(9), seats(2)}},
	})
	for _, c := range []struct {
		key  string
		want bool
	}{
		{"requests_remaining", true}, {"x_rate_limit_remaining", true}, {"rateLimitRemaining", true}, {"api_calls_left", true},
		{"ratelimit_remaining", true}, {"remaining_requests", true},
		{"seats_remaining", false}, {"remaining", false}, {"days_left", false}, {"requests", false}, {"rate_limit", false},
		{"quota_remaining", false}, {"pending_requests", false},
	} {
		if got := volatileKey([]byte(c.key)); got != c.want {
			t.Errorf("volatileKey(%q) = %v, want %v", c.key, got, c.want)
		}
	}
}

// TestEchoOnlyAsWord: an argument's value is masked in a complaint only
// where it stands as a word: "pdf" is not echoed by "PDFs". Masked inside
// a word, it turned one complaint into another whenever the call was
// spelled that way, and one upload sent again under other names of its
// type (application/pdf, pdf, PDF, application/PDF), refused the same way
// each time, was never three complaints alike in a row; now the fourth is
// refused (same_error). Other files refused each for their own reason go
// on, and an echo as a word is still masked.
func TestEchoOnlyAsWord(t *testing.T) {
	n := 0
	upload := func(file, ctype, why string) op {
		n++
		o := failingWith("claim_upload_document", `{"claim":"CLM-7","content_type":"`+ctype+`","file":"`+file+`"}`, "invalid_args",
			fmt.Sprintf("Upload U%04d rejected: %s %s", 1000+n*37, file, why))
		o.access = "write"
		return o
	}
	const enc = "is encrypted (password-protected PDFs cannot be scanned)"
	runCases(t, []testCase{
		{"one file, its type respelled", nil, []op{
			upload("report.pdf", "application/pdf", enc), upload("report.pdf", "pdf", enc), upload("report.pdf", "PDF", enc),
			refused(upload("report.pdf", "application/PDF", enc), "same_error"),
		}},
		{"other files, other complaints", nil, []op{
			upload("report.pdf", "pdf", enc), upload("estimate.pdf", "pdf", "is empty (0 pages)"),
			upload("photo.heic", "image/heic", "has a type we cannot read (HEIC)"), upload("receipt.pdf", "pdf", "is larger than 25 MB"),
		}},
	})
	d := New(nil)
	inWord := d.template([]byte("PDFs cannot be scanned"), []byte(`{"content_type":"pdf"}`))
	if inWord != d.template([]byte("PDFs cannot be scanned"), []byte(`{"content_type":"application/pdf"}`)) {
		t.Errorf("a value inside a longer word is masked as its echo")
	}
	asWord := d.template([]byte("type pdf cannot be scanned"), []byte(`{"content_type":"pdf"}`))
	if asWord != d.template([]byte("type docx cannot be scanned"), []byte(`{"content_type":"docx"}`)) {
		t.Errorf("a value echoed as a word is not masked")
	}
	for _, c := range []struct {
		msg  string
		i, j int
		want bool
	}{
		{"PDFs", 0, 3, false}, {"a pdf.", 2, 5, true}, {"apply", 0, 3, false}, {"/srv/a/b", 0, 6, true}, {"x_pdf", 2, 5, false},
	} {
		if got := echoAsWord([]byte(c.msg), c.i, c.j); got != c.want {
			t.Errorf("echoAsWord(%q, %d, %d) = %v, want %v", c.msg, c.i, c.j, got, c.want)
		}
	}
}

// TestProximityQuery: a query with a proximity operator (w/5, NEAR/10,
// PRE/3), as legal and patent searches write them, is in a search
// engine's syntax, reworded as prose is: the same hits brought back under
// it after two rewordings are refused (rephrase), where its slash made it
// a path, another question. Queries that find other patents go on; a path
// stays no query.
func TestProximityQuery(t *testing.T) {
	search := func(q, hits string) op {
		return call("patent_search", `{"cpc":"H01M10/6569","q":`+marshalString(q)+`}`,
			`{"query":`+marshalString(q)+`,"results":[`+hits+`],"total":2}`)
	}
	same := `{"n":"US11245123B2","title":"Battery thermal management using phase change material"},{"n":"EP3561932A1","title":"Cooling plate with PCM pockets"}`
	runCases(t, []testCase{
		{"one question, the last with NEAR/10", nil, []op{
			search(`("phase change material" OR PCM) AND battery AND cooling`, same),
			search(`battery AND cooling AND (PCM OR "phase change material")`, same),
			search(`(PCM OR "phase-change material") AND battery AND cooling`, same),
			refused(search(`battery NEAR/10 ("phase change material" OR PCM) AND cooling`, same), "rephrase"),
		}},
		{"other questions, each its hits", nil, []op{
			search(`battery NEAR/10 "phase change material"`, same),
			search(`battery NEAR/10 graphite`, `{"n":"US11702211B1","title":"Graphite heat spreader"},{"n":"JP2021150222A","title":"Composite sheet"}`),
			search(`cell W/5 immersion`, `{"n":"US10950914B2","title":"Immersion cooling of packs"},{"n":"KR102288811B1","title":"Dielectric fluid"}`),
			search(`module PRE/3 "cooling plate"`, `{"n":"WO2020123456A1","title":"Cooling plate"},{"n":"CN110112345A","title":"Plate with channels"}`),
		}},
	})
	for _, c := range []struct {
		q    string
		want bool
	}{
		{"battery NEAR/10 cooling", true}, {"termination w/5 breach", true}, {"src/lib utils", false}, {"NEAR/10 battery", false},
		{"v1/users list", false}, {"battery NEAR/x cooling", false},
	} {
		if got := proseArg([]byte("q"), []byte(c.q)); got != c.want {
			t.Errorf("proseArg(q, %q) = %v, want %v", c.q, got, c.want)
		}
	}
}

// TestEchoInQueryString: a search's answer that links to itself with the
// query in its address (?query=Bohemian+Rhapsody+Queen&type=track)
// echoes the query as one that quotes it does: asked again in other words,
// the answer differs from the last only there, and the third rewording is
// refused (rephrase). Other queries that find other tracks go on, and a
// link that holds the query's words among others is the answer's.
func TestEchoInQueryString(t *testing.T) {
	search := func(q, items string) op {
		href := "https://api.music.example/v1/search?query=" + url.QueryEscape(q) + "&type=track"
		return call("catalog_search", `{"q":`+marshalString(q)+`,"type":"track"}`,
			`{"tracks":{"href":`+marshalString(href)+`,"items":[`+items+`],"total":2}}`)
	}
	same := `{"id":"4u7EnebtmKWzUH433cf5Qv","name":"Bohemian Rhapsody - Remastered 2011"},{"id":"7tFiyTwD0nx5a1eklYtX2J","name":"Bohemian Rhapsody"}`
	runCases(t, []testCase{
		{"one question reworded", nil, []op{
			search("Bohemian Rhapsody Queen", same), search("queen bohemian rhapsody", same), search("track:Bohemian Rhapsody artist:Queen", same),
			refused(search("bohemian rhapsody by queen", same), "rephrase"),
		}},
		{"other questions", nil, []op{
			search("Bohemian Rhapsody Queen", same),
			search("Bohemian Rhapsody live", `{"id":"1AhDOtG9vPSOmsWgNW0BEY","name":"Bohemian Rhapsody - Live Aid"},{"id":"6l8GvAyoUZwWDgF1e4822w","name":"Bohemian Rhapsody - Live At Wembley"}`),
			search("Under Pressure Queen", `{"id":"2fuCquhmrzHpu5xcA1ci9x","name":"Under Pressure - Remastered 2011"},{"id":"11IzgLRXV7Cgek3tEgGgjw","name":"Under Pressure"}`),
			search("Radio Ga Ga Queen", `{"id":"1HmzAZUvhQLhLo2z3ocpZI","name":"Radio Ga Ga - Remastered 2011"},{"id":"5ec6ylX4cfBbn1rPlIH7Ks","name":"Radio Ga Ga"}`),
		}},
	})
	for _, c := range []struct {
		b, t  string
		found bool
	}{
		{"https://x.example/s?query=Bohemian+Rhapsody+Queen&type=track", "Bohemian Rhapsody Queen", true},
		{"https://x.example/s?q=track%3ABohemian%20Rhapsody", "track:Bohemian Rhapsody", true},
		{"https://x.example/s?q=Bohemian+Rhapsody+Queen+live", "Bohemian Rhapsody Queen", false},
		{"https://x.example/Bohemian+Rhapsody+Queen", "Bohemian Rhapsody Queen", false},
		{"Results for query=Bohemian Rhapsody Queen", "Bohemian Rhapsody Queen", false},
	} {
		j, _ := queryParamIndex([]byte(c.b), []byte(c.t))
		if (j >= 0) != c.found {
			t.Errorf("queryParamIndex(%q, %q) = %d, want found %v", c.b, c.t, j, c.found)
		}
	}
}
