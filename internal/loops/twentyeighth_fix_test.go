package loops

import (
	"fmt"
	"strings"
	"testing"
)

// TestMCPErrorAnswer: an MCP tool's result handed on as a success with
// isError set (a framework that wraps an MCP server's CallToolResult as
// its own answer) is a failure the tool typed: its complaint is the text
// of its content, and a read asked four times in other spellings into the
// same complaint is refused at its fourth asking. A result with isError
// false, or without content that says something, is an answer.
func TestMCPErrorAnswer(t *testing.T) {
	for in, want := range map[string]string{
		`{"content":[{"type":"text","text":"Error: invalid sequence"}],"isError":true}`:                   `{"message":"Error: invalid sequence"}`,
		`{"isError":true,"content":[{"type":"text","text":"not found:"},{"type":"text","text":"chr99"}]}`: `{"message":"not found:\nchr99"}`,
		`{"content":[{"type":"text","text":"rank\tguide"}],"isError":false}`:                              ``,
		`{"content":[],"isError":true}`:                                                                         ``,
		`{"content":[{"type":"text","text":"boom"}],"isError":true,"status":"ok"}`:                              ``,
		`{"content":[{"type":"image","data":"iVBORw0KGgo=","mimeType":"image/png"}],"isError":true}`:            ``,
		`{"content":[{"type":"text","text":"upstream overloaded, try again later"}],"isError":true,"_meta":{}}`: `{"message":"upstream overloaded, try again later"}`,
	} {
		c, _ := mcpErrorAnswer([]byte(in))
		if string(c) != want {
			t.Errorf("mcpErrorAnswer(%s) = %s, want %s", in, c, want)
		}
	}
	if _, tr := mcpErrorAnswer([]byte(`{"content":[{"type":"text","text":"upstream overloaded, try again later"}],"isError":true}`)); !tr {
		t.Error("an overloaded upstream's error is not transient")
	}

	d := New(nil)
	seq := strings.Repeat("ACGT", 50) + "N" + strings.Repeat("GGCA", 30)
	for i, s := range []string{seq, strings.ToLower(seq), ">exon2\n" + seq, seq[:100] + "\n" + seq[100:]} {
		st := &Step{Tool: "design_guides", Access: "read", Args: []byte(fmt.Sprintf(`{"sequence":%q,"enzyme":"SpCas9"}`, s))}
		v := d.Check(st)
		if (v != nil) != (i == 3) {
			t.Fatalf("asking %d: %v", i, v)
		}
		if v != nil {
			break
		}
		d.Done(st, Outcome{Result: []byte(`{"content":[{"type":"text","text":"Error: invalid sequence: ambiguous base 'N' at position 201; only A, C, G, T are accepted"}],"isError":true}`)})
	}

	// The same tool answering guides for other sequences goes on.
	d = New(nil)
	for i, g := range []string{"GACCTGACCCAGCCGCAGCC", "TTTGTGAACCAACACCTGTG", "CGGCTCACACCTGGTGGAAG", "CTCTCTACCTAGTGTGCGGG", "GAACGAGGCTTCTTCTACAC", "ACCCAAGACCCGCCGGGAGG"} {
		st := &Step{Tool: "design_guides", Access: "read", Args: []byte(fmt.Sprintf(`{"sequence":"%s","enzyme":"SpCas9"}`, strings.Repeat(g, 3)))}
		if v := d.Check(st); v != nil {
			t.Fatalf("design %d refused: %v", i, v)
		}
		d.Done(st, Outcome{Result: []byte(fmt.Sprintf(`{"content":[{"type":"text","text":"rank\tguide\n1\t%s\t0.71"}],"isError":false}`, g))})
	}
}

// TestHTTPDateMasked: a date-time written as HTTP and e-mail write it
// (RFC 1123, RFC 2822: "Mon, 07 Dec 2026 10:00:30 GMT", "7 Dec 2026
// 10:00 +0000") inside a line of text is masked as an ISO 8601 one is: a
// text observation that says when it searched says it anew each time. A
// date alone, a date-time that is the whole value, and other days' dates
// in the same line stay.
func TestHTTPDateMasked(t *testing.T) {
	for _, c := range []struct {
		a, b string
		same bool
	}{
		{`searched ClinVar (Mon, 07 Dec 2026 10:00:30 GMT) for it`, `searched ClinVar (Mon, 07 Dec 2026 10:02:13 GMT) for it`, true},
		{`fetched at 7 Dec 2026 10:00 +0000: 3 rows`, `fetched at 8 Dec 2026 11:20 +0000: 3 rows`, true},
		{`fetched Tue, 8 Dec 2026 09:01:02 -0700 ok`, `fetched Wed, 9 Dec 2026 19:01:02 -0700 ok`, true},
		{`due Mon, 07 Dec 2026 for review`, `due Tue, 08 Dec 2026 for review`, false},
		{`Mon, 07 Dec 2026 10:00:30 GMT`, `Mon, 07 Dec 2026 10:02:13 GMT`, false},
		{`searched (Mon, 07 Dec 2026 10:00:30 GMT): 2 records`, `searched (Mon, 07 Dec 2026 10:00:30 GMT): 3 records`, false},
		{`flight on 07 Dec 2026 10:00 from LHR`, `flight on 07 Dec 2026 10:00 from LGW`, false},
	} {
		if got := maskedHash([]byte(c.a)) == maskedHash([]byte(c.b)); got != c.same {
			t.Errorf("%q and %q alike: %v, want %v", c.a, c.b, got, c.same)
		}
	}

	// A search reworded four times whose text observation lists the same
	// records, stamped anew: the fourth is refused.
	d := New(nil)
	for i, q := range []string{"BRCA2 frameshift founder pathogenic", "BRCA2 Ashkenazi founder mutation", "BRCA2 founder frameshift classification", "pathogenic BRCA2 founder variant"} {
		s := &Step{Tool: "clinvar_search", Access: "read", Args: []byte(fmt.Sprintf(`{"term":%q}`, q))}
		v := d.Check(s)
		if (v != nil) != (i == 3) {
			t.Fatalf("search %d: %v", i, v)
		}
		if v != nil {
			break
		}
		text := fmt.Sprintf("Observation: searched ClinVar (Mon, 07 Dec 2026 10:%02d:%02d GMT) for %q.\nFound 2 record(s):\n1. VCV000009325 NM_000059.4(BRCA2):c.5946del (p.Ser1982fs) - Pathogenic; reviewed by expert panel\n2. VCV000051119 NM_000059.4(BRCA2):c.5946_5947insT (p.Ser1983fs) - Pathogenic; multiple submitters", i*3, 10+i*7, q)
		d.Done(s, Outcome{Result: []byte(fmt.Sprintf("%q", text))})
	}
}

// TestHTTPDateHeaderKept: a mail date that is a header's value at the
// start of its line ("Date: Tue, 10 Mar 2026 08:05:00 +0000") is that
// header's, the answer's, whatever follows: the mask is for a date in
// running text.
func TestHTTPDateHeaderKept(t *testing.T) {
	for _, c := range []struct{ a, b string }{
		{"Date: Tue, 10 Mar 2026 08:05:00 +0000", "Date: Tue, 10 Mar 2026 08:10:00 +0000"},
		{"Last-Modified: Mon, 07 Dec 2026 10:00:30 GMT, 4 KB", "Last-Modified: Mon, 07 Dec 2026 10:09:30 GMT, 4 KB"},
	} {
		if maskedHash([]byte(c.a)) == maskedHash([]byte(c.b)) {
			t.Errorf("%q and %q: the same, want two dates", c.a, c.b)
		}
	}
}

// TestToolOutputEnvelope: a tool's output handed back in the envelope a
// framework gives it (the Responses API's function_call_output with its
// call_id, a LangChain tool message's tool_call_id, an Anthropic
// tool_result's tool_use_id) is read as its output: the call's id is the
// exchange's, new with each call, and an output that is a JSON document in
// a string is read as that document. A search reworded four times that
// finds the same records, in another order each time, is refused at its
// fourth asking; one that finds a record it had not is not.
func TestToolOutputEnvelope(t *testing.T) {
	recs := []string{`{"isbn":"","title":"Dune","publisher":"Chilton Books","year":1965,"edition":"1st ed."}`,
		`{"isbn":"0801950775","title":"Dune","publisher":"Chilton Books","year":1965,"edition":"Book club ed."}`,
		`{"isbn":"0441172717","title":"Dune","publisher":"Ace Books","year":1990,"edition":"Reissue"}`,
		`{"isbn":"0340960191","title":"Dune","publisher":"Hodder","year":2005,"edition":"40th anniversary"}`}
	wraps := []func(i int, out string) string{
		func(i int, out string) string {
			return fmt.Sprintf(`{"type":"function_call_output","call_id":"call_%dXa9kQ2mZr7Tb4Wc8Yd1Ve5","output":%q}`, i, out)
		},
		func(i int, out string) string {
			return fmt.Sprintf(`{"type":"tool","tool_call_id":"call_%dXa9kQ2mZr7Tb4Wc8Yd1Ve5","name":"catalog_search","content":%q}`, i, out)
		},
		func(i int, out string) string {
			return fmt.Sprintf(`{"type":"tool_result","tool_use_id":"toolu_01%dA09q90qw90lq917835lq9","content":%q}`, i, out)
		},
	}
	for w, wrap := range wraps {
		for _, learns := range []bool{false, true} {
			d := New(nil)
			for i, q := range []string{"dune first edition chilton", "Frank Herbert Dune first printing", "Dune Chilton first edition hardcover", "herbert dune original hardcover chilton"} {
				s := &Step{Tool: "catalog_search", Access: "read", Args: []byte(fmt.Sprintf(`{"q":%q,"limit":10}`, q))}
				v := d.Check(s)
				if want := i == 3 && !learns; (v != nil) != want {
					t.Fatalf("wrap %d, learns %v, search %d: %v", w, learns, i, v)
				}
				if v != nil {
					break
				}
				rs := []string{recs[i%3], recs[(i+1)%3], recs[(i+2)%3]}
				if learns {
					rs = append(rs, strings.Replace(recs[3], "40th", fmt.Sprintf("%dth", 40+i*5), 1))
				}
				d.Done(s, Outcome{Result: []byte(wrap(i, `{"total":3,"records":[`+strings.Join(rs, ",")+`]}`))})
			}
		}
	}
}

// TestCollectedStamps: when a metrics answer was collected or scraped
// (collected_at, scrapedAt) is when the answer was made, as fetched_at is:
// a consumer group's lag polled while it stands still, each answer
// collected anew, is the same answer, and its third poll is refused. A
// lag that falls is news each time.
func TestCollectedStamps(t *testing.T) {
	for _, k := range []string{"collected_at", "collectedAt", "scraped_at", "scrape_time"} {
		if !volatileKey([]byte(k)) {
			t.Errorf("%s: not a stamp", k)
		}
	}
	for _, k := range []string{"collected", "collection", "amount_collected", "scrape_interval_s"} {
		if volatileKey([]byte(k)) {
			t.Errorf("%s: a stamp", k)
		}
	}
	lag := func(i, l int) []byte {
		return fmt.Appendf(nil, `{"name":"get_consumer_lag","response":{"group":"billing-consumers","state":"Stable","total_lag":%d,"partitions":[{"partition":0,"lag":%d}],"collected_at":"2026-12-07T09:%02d:10Z"}}`, l, l, i*3)
	}
	for _, falls := range []bool{false, true} {
		d := New(nil)
		for i := range 3 {
			s := &Step{Tool: "get_consumer_lag", Args: []byte(`{"group":"billing-consumers"}`), Access: "read"}
			v := d.Check(s)
			if want := i == 2 && !falls; (v != nil) != want {
				t.Fatalf("falls %v, poll %d: %v", falls, i, v)
			}
			if v != nil {
				break
			}
			l := 48211
			if falls {
				l -= i * 9000
			}
			d.Done(s, Outcome{Result: lag(i, l)})
		}
	}
}

// TestWaitBetweenPollsThatMove: a wait of a span of time alone
// ({"seconds": 120}) between polls of a job that moves is time passing
// for the next poll: its third asking, answered alike, is not refused
// while the poll before it brought something new (a backoff capped at
// its longest wait). Waits made again with nothing between, or after a
// poll that brought nothing new, are still repeat's to refuse.
func TestWaitBetweenPollsThatMove(t *testing.T) {
	wait := &Step{Tool: "sleep", Access: "read", Args: []byte(`{"seconds":120}`)}
	d := New(nil)
	for i := range 5 {
		poll := &Step{Tool: "get_dag_run", Access: "read", Args: []byte(`{"dag_id":"ledger_daily","run":"scheduled__2026-12-07"}`)}
		if v := d.Check(poll); v != nil {
			t.Fatalf("poll %d refused: %v", i, v)
		}
		d.Done(poll, Outcome{Result: fmt.Appendf(nil, `{"dag_id":"ledger_daily","state":"running","tasks_done":%d,"tasks_total":8}`, i+1)})
		w := *wait
		if v := d.Check(&w); v != nil {
			t.Fatalf("wait %d, after a poll that moved, refused: %v", i, v)
		}
		d.Done(&w, Outcome{Result: []byte(`{"slept_s":120}`)})
	}

	d = New(nil)
	for i := range 3 {
		w := *wait
		v := d.Check(&w)
		if (v != nil) != (i == 2) {
			t.Fatalf("wait %d in a row: %v", i, v)
		}
		if v != nil {
			break
		}
		d.Done(&w, Outcome{Result: []byte(`{"slept_s":120}`)})
	}
}

// TestEchoCutShort: a server that quotes the first characters of a long
// value it refuses ("encountered with 'v=DKIM1; k=rsa; p=MIIBIj'") echoes
// that value, cut short: the quoted start of an argument's value (twelve
// bytes or more) is masked as the whole value echoed is, so a record
// upserted under other quotings of one too-long value is one complaint,
// its fourth try refused. Other values refused alike, each quoted in
// full or cut short, stay one complaint too; a quote that starts no
// argument's value is the complaint's own words.
func TestEchoCutShort(t *testing.T) {
	key := "v=DKIM1; k=rsa; p=" + strings.Repeat("MIIBIjANBgkqhkiG9w0BAQEFAAOCAQ8A", 6)
	d := New(nil)
	for i, v := range []string{key, `"` + key + `"`, strings.ReplaceAll(key, "; ", ";"), " " + key + " "} {
		s := &Step{Tool: "dns_upsert_record", Access: "write", Args: fmt.Appendf(nil, `{"zone":"example-mail.org","type":"TXT","value":%q}`, v)}
		r := d.Check(s)
		if (r != nil) != (i == 3) {
			t.Fatalf("try %d: %v", i, r)
		}
		if r != nil {
			break
		}
		msg := fmt.Sprintf(`Invalid Resource Record: FATAL problem: CharacterStringTooLong (Value is too long) encountered with '%s'`, v[:24])
		d.Done(s, Outcome{Error: true, ErrorType: "invalid_args", Result: fmt.Appendf(nil, "%q", msg)})
	}
	args := []byte(`{"value":"v=DKIM1; k=rsa; p=MIIBIjANBgkqhkiG9w0"}`)
	a := d.template([]byte(`too long: 'v=DKIM1; k=rsa; p=MII'`), args)
	if b := d.template([]byte(`too long: 'k=rsa; p=MIIBIjAN'`), args); a == b {
		t.Error("a quote that starts no argument's value masked")
	}
	if b := d.template([]byte(`too long: 'v=DKIM1'`), args); a == b {
		t.Error("a quote shorter than twelve bytes masked")
	}
}
