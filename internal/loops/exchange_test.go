package loops

import (
	"fmt"
	"strings"
	"testing"
)

// TestExchangeArgs: a read whose arguments differ only in what names the
// exchange (a request id, the client's clock, an attempt counter, a
// nonce), answered alike, is the same call asked again; a write's are its
// own, and what the question asks stays.
func TestExchangeArgs(t *testing.T) {
	const notices = `{"icao":"EHAM","notams":[{"id":"A4127/26","text":"RWY 18C/36C CLSD"}]}`
	stamped := func(i int) op {
		return call("notam_fetch", fmt.Sprintf(`{"attempt":%d,"client_time":"2026-12-07T09:0%d:00Z","icao":"EHAM","request_id":"5f3a9c0%d-2e0e-45fa-aa32-001b2cc1d2e3"}`, i+1, i, i), notices)
	}
	nested := func(i int) op {
		return call("get_order", fmt.Sprintf(`{"id":"A1","meta":{"correlationId":"c-%04d","retry_count":%d}}`, 7000+i*13, i), status)
	}
	signed := func(i int) op {
		return call("balance", fmt.Sprintf(`{"account":"acc-1","nonce":%d,"recvWindow":5000}`, 1765098001000+i*2300), `{"free":1.5}`)
	}
	stepped := func(i int) op {
		return call("customs_status", fmt.Sprintf(`{"awb":"176-88120315","metadata":{"langgraph_step":%d,"run_id":"run-7f2a"}}`, 4+2*i), `{"status":"HELD"}`)
	}
	pay := func(i int) op {
		return write("create_charge", fmt.Sprintf(`{"amount":100,"request_id":"r-%d"}`, i), `{"ok":true}`)
	}
	runCases(t, []testCase{
		{"a request id, the client's clock and an attempt counter", nil, []op{stamped(0), stamped(1), refused(stamped(2), "repeat")}},
		{"a correlation id and a retry count nested", nil, []op{nested(0), nested(1), refused(nested(2), "repeat")}},
		{"a nonce in a signed read", nil, []op{signed(0), signed(1), refused(signed(2), "repeat")}},
		{"a framework's step counter in its metadata", nil, []op{stepped(0), stepped(1), refused(stepped(2), "repeat")}},
		{"a step elsewhere is asked", nil, []op{
			call("simulate", `{"model":"m1","step":1}`, `{"t":0}`), call("simulate", `{"model":"m1","step":2}`, `{"t":0}`),
			call("simulate", `{"model":"m1","step":3}`, `{"t":0}`)}},
		{"a write's request ids are its own", nil, []op{pay(0), pay(1), pay(2)}},
		{"what is asked stays: another airport", nil, []op{stamped(0), stamped(1),
			call("notam_fetch", `{"attempt":3,"client_time":"2026-12-07T09:02:00Z","icao":"EGLL","request_id":"x-3"}`, notices)}},
		{"a limit of retries is the caller's setting", nil, []op{
			call("fetch", `{"max_retries":1,"url":"https://a.example/x"}`, `"same"`),
			call("fetch", `{"max_retries":2,"url":"https://a.example/x"}`, `"same"`),
			call("fetch", `{"max_retries":3,"url":"https://a.example/x"}`, `"same"`)}},
		{"a search's id asks for that search", nil, []op{
			call("search_page", `{"search_id":"s1"}`, `"none"`), call("search_page", `{"search_id":"s2"}`, `"none"`),
			call("search_page", `{"search_id":"s3"}`, `"none"`)}},
	})
}

// TestPollIDs: a long poll's answer whose only change is its poll's own id
// (poll_id, pollId) is the same answer.
func TestPollIDs(t *testing.T) {
	poll := func(i int) op {
		return call("await_export", `{"export_id":"exp_2291","wait_s":30}`, fmt.Sprintf(`{"export_id":"exp_2291","poll_id":"5f3a9c%02d-2e0e-45fa-aa32-001b2cc1d2e3","state":"pending"}`, i))
	}
	runCases(t, []testCase{{"a poll's id", nil, []op{poll(0), poll(1), refused(poll(2), "repeat")}}})
}

// TestExchangeArgsSaid: the refusal says the stamps were set aside, so
// that a model does not read "identical" as wrong.
func TestExchangeArgsSaid(t *testing.T) {
	d := New(nil)
	var v *Verdict
	for i := range 3 {
		s := &Step{Kind: ToolCall, Tool: "notam_fetch", Access: "read", Args: []byte(fmt.Sprintf(`{"icao":"EHAM","request_id":"r-%d"}`, i))}
		if v = d.Check(s); v != nil {
			break
		}
		d.Done(s, Outcome{Result: []byte(`{"notams":[]}`)})
	}
	if v == nil || !strings.Contains(v.Message, "request ids, clock and attempt or step counters aside") {
		t.Fatalf("verdict %+v, want a repeat that says the stamps were set aside", v)
	}
}

// TestExchangeArgsAsked: a read that asks nothing but an id of the
// exchange (a trace looked up by its trace_id, a ticket's status by its
// request_id) asks for that trace or that ticket: another id is another
// question, even answered alike. Its clock, attempt counter and nonce are
// still the exchange's: the same id asked again with only those new is
// the same call.
func TestExchangeArgsAsked(t *testing.T) {
	trace := func(id string) op { return call("get_trace", `{"trace_id":"`+id+`"}`, `"trace not found"`) }
	ticket := func(n int) op {
		return call("get_ticket_status", fmt.Sprintf(`{"request_id":"REQ-%d"}`, 1001+n), `{"status":"open"}`)
	}
	retried := func(i int) op {
		return call("get_trace", fmt.Sprintf(`{"attempt":%d,"client_time":"2026-12-07T09:0%d:00Z","trace_id":"4bf92f35"}`, i+1, i), `"trace not found"`)
	}
	spans := func(i int) op {
		return call("list_spans", fmt.Sprintf(`{"meta":{"step":%d},"span_id":"s-%d","filter":null}`, i, i), `[]`)
	}
	signed := func(i int) op {
		return call("account", fmt.Sprintf(`{"nonce":%d}`, 1765098001000+i*2300), `{"free":1.5}`)
	}
	runCases(t, []testCase{
		{"three traces looked up by id", nil, []op{trace("4bf92f35"), trace("a3ce929d"), trace("00f067aa")}},
		{"three tickets by request id", nil, []op{ticket(0), ticket(1), ticket(2)}},
		{"three spans by id, a step counter and a null aside", nil, []op{spans(0), spans(1), spans(2)}},
		{"one trace retried with a new clock and attempt", nil, []op{retried(0), retried(1), refused(retried(2), "repeat")}},
		{"a nonce alone asks nothing", nil, []op{signed(0), signed(1), refused(signed(2), "repeat")}},
		{"the same trace id asked again", nil, []op{trace("4bf92f35"), trace("4bf92f35"), refused(trace("4bf92f35"), "repeat")}},
	})
}

// TestExchangeArgsAskedSaid: the refusal of a trace retried with a new
// attempt does not say its ids were set aside: its trace id is what it
// asked, and another would have been another call.
func TestExchangeArgsAskedSaid(t *testing.T) {
	d := New(nil)
	var v *Verdict
	for i := range 3 {
		s := &Step{Kind: ToolCall, Tool: "get_trace", Access: "read", Args: []byte(fmt.Sprintf(`{"attempt":%d,"trace_id":"4bf92f35"}`, i+1))}
		if v = d.Check(s); v != nil {
			break
		}
		d.Done(s, Outcome{Result: []byte(`"trace not found"`)})
	}
	if v == nil || !strings.Contains(v.Message, "(its clock and attempt or step counters aside)") {
		t.Fatalf("verdict %+v, want a repeat that says its clock and counters, not its ids, were set aside", v)
	}
}
