package loops

import "testing"

// TestAskedAddress: an address a complaint names counts as the thing named
// only when the call asked about it (fk21): the client's own address in a
// refusal is where the call came from.
func TestAskedAddress(t *testing.T) {
	for _, c := range []struct {
		msg, args string
		want      bool
	}{
		{"SMTP 550 5.1.1 <chen.wei@north.example>: Recipient address rejected", `{"to":["Chen Wei <Chen.Wei@North.example>"]}`, true},
		{"rule already exists: in tcp 443 from 0.0.0.0/0", `{"source_ips":["0.0.0.0/0"]}`, true},
		{`no pg_hba.conf entry for host "10.0.3.17" (not found)`, `{"sql":"SELECT 1"}`, false},
		{"Client host [203.0.113.7] blocked; unknown sender", `{"to":["ana@shop.example"]}`, false},
		{"Client host [203.0.113.7] blocked; unknown sender", `{"to":["ana@shop.example"],"from_ip":"203.0.113.70"}`, true},
		{"user ana@shop.example. unknown", `{"to":"ANA@shop.example"}`, true},
	} {
		if got := namesAskedAddress([]byte(c.msg), []byte(c.args)); got != c.want {
			t.Errorf("namesAskedAddress(%q, %s) = %v, want %v", c.msg, c.args, got, c.want)
		}
		if !namesAddress([]byte(c.msg)) {
			t.Errorf("namesAddress(%q) = false", c.msg)
		}
	}
}

// TestStartBesideASize: start is a page's position only beside a page's
// size (fk21): a time window's start or a recording's is a place.
func TestStartBesideASize(t *testing.T) {
	d := New(nil)
	for args, want := range map[string]bool{
		`{"q":"go","start":11,"num":10}`:                   true,
		`{"q":"go","rows":20,"start":40}`:                  true,
		`{"q":"go","offset":3}`:                            true,
		`{"city":"Oslo","day_offset":3}`:                   false,
		`{"q":"go","result_offset":3}`:                     true,
		`{"metric":"errors","start":1733370000,"step":60}`: false,
		`{"recording_id":"r","start":60,"duration":60}`:    false,
	} {
		if _, _, ok := d.pagingOf([]byte(args)); ok != want {
			t.Errorf("pagingOf(%s) = %v, want %v", args, ok, want)
		}
	}
}

// TestSystemctlUnits: the units a systemctl command names after its verb
// are each a thing, by their bare names (fk21).
func TestSystemctlUnits(t *testing.T) {
	th := func(c string) uint64 { return commandThings([]byte(`{"command":"` + c + `"}`)) }
	if th("sudo systemctl start api.service") == th("sudo systemctl start worker.service") {
		t.Error("two units started are one thing")
	}
	if th("systemctl status nginx --no-pager") != th("systemctl --no-pager status nginx.service") {
		t.Error("nginx and nginx.service are two things")
	}
	if th("systemctl status api.socket") == th("systemctl status api.service") {
		t.Error("a socket and its service are one thing")
	}
	if th("systemctl daemon-reload && systemctl restart api") == th("systemctl daemon-reload && systemctl restart web") {
		t.Error("units after && are one thing")
	}
}
