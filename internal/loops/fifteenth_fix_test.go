package loops

import (
	"strings"
	"testing"
)

// TestAddressBounced: one address bounced in other notations (case, angle
// brackets, a display name) is one complaint, refused at the fourth
// send; a notice to several people, some of whom bounce, goes on.
func TestAddressBounced(t *testing.T) {
	w := map[string]string{"send_email": "write"}
	bounce := func(to, addr string) asCall {
		return asFail("send_email", obj{"to": arr{to}, "subject": "Delayed", "body": "Your order ships Monday."}, "tool_error", "SMTP 550 5.1.1 <"+addr+">: Recipient address rejected: User unknown")
	}
	var calls []asCall
	for _, to := range []string{"chen.wei@north.example", "Chen.Wei@north.example", "<chen.wei@north.example>", "Chen Wei <chen.wei@north.example>", "CHEN.WEI@NORTH.EXAMPLE"} {
		calls = append(calls, bounce(to, "chen.wei@north.example"))
	}
	if at, v := thPlay(t, calls, w); at != 3 || v.Detector != "same_error" {
		t.Errorf("one address bounced in other notations: refused at %d (%v), want 3 by same_error", at, v)
	}
	calls = nil
	for _, a := range []string{"ana@shop.example", "ben@acme.example", "chen@north.example", "dana@loop.example", "eli@mill.example"} {
		calls = append(calls, bounce(a, a))
	}
	if at, v := thPlay(t, calls, w); at >= 0 {
		t.Errorf("several people, each bounced: refused at %d (%v)", at, v)
	}
	for _, c := range []struct {
		msg  string
		want bool
	}{
		{"<chen.wei@north.example>: rejected", true},
		{"user a+b@mail.shop.example unknown", true},
		{"user @north.example unknown", false},
		{"reach me at chen@localhost", false},
		{"version 1.2@3", false},
		{"no address here", false},
	} {
		if got := namesAddress([]byte(c.msg)); got != c.want {
			t.Errorf("namesAddress(%q) = %v, want %v", c.msg, got, c.want)
		}
	}
}

// TestPagedPastTheEnd: a search paged past its end, the engine answering
// its last page again at every later offset, is refused at the fourth
// later page answered alike; pages that bring other results and a page
// position that goes back (the first page read again) are not refused by
// it.
func TestPagedPastTheEnd(t *testing.T) {
	last := []string{"Generic data structures in Go", "Go generics performance"}
	page := func(off int, key string, titles ...string) asCall {
		return asOK("brave_web_search", obj{"query": "go generics guide", "count": 2, key: off}, fiSearch(off, titles...))
	}
	past := func(at int, v *Verdict) bool { return at >= 0 && strings.Contains(v.Message, "later page") }
	var calls []asCall
	for o := 0; o < 8; o++ {
		if o == 0 {
			calls = append(calls, page(o, "offset", "Go generics tutorial", "Type parameters in Go"))
			continue
		}
		calls = append(calls, page(o, "offset", last...))
	}
	if at, v := thPlay(t, calls, nil); at != 5 || !past(at, v) {
		t.Errorf("paged past its end: refused at %d (%v), want 5 for a later page", at, v)
	}
	calls = nil
	for p := 1; p < 9; p++ {
		calls = append(calls, page(p, "page", "Result "+itoa(int64(p)), "Other "+itoa(int64(p))))
	}
	if at, v := thPlay(t, calls, nil); at >= 0 {
		t.Errorf("pages that bring other results: refused at %d (%v)", at, v)
	}
	calls = nil
	for _, p := range []int{1, 2, 3, 1, 2, 3, 1, 2} {
		calls = append(calls, page(p, "startIndex", last...))
	}
	if at, v := thPlay(t, calls, nil); past(at, v) {
		t.Errorf("pages read again from the first: refused at %d (%v) for a later page", at, v)
	}
	for k, want := range map[string]bool{"offset": true, "page": true, "pageNumber": true, "start_index": true, "skip": true, "page_size": false, "per_page": false, "pageToken": false, "index": false, "number": false} {
		if got := pageKey([]byte(k)); got != want {
			t.Errorf("pageKey(%q) = %v, want %v", k, got, want)
		}
	}
}

// TestVideoAddressRespelled: one video asked under other hosts' notations
// of its address, answered alike, is refused by the fourth asking; other
// videos answered alike (a playlist of empty transcripts) go on.
func TestVideoAddressRespelled(t *testing.T) {
	tr := "[00:00] Welcome back.\n[00:06] Today: WAL and checkpoints."
	get := func(u string) asCall { return asOK("get_transcript", obj{"url": u, "lang": "en"}, tr) }
	var calls []asCall
	for _, u := range []string{"https://www.youtube.com/watch?v=Hn2pR7tYw3E", "https://youtu.be/Hn2pR7tYw3E", "https://www.youtube.com/watch?v=Hn2pR7tYw3E&t=42s", "https://m.youtube.com/watch?v=Hn2pR7tYw3E&feature=share", "youtube.com/embed/Hn2pR7tYw3E", "https://youtu.be/Hn2pR7tYw3E?si=x"} {
		calls = append(calls, get(u))
	}
	if at, v := thPlay(t, calls, nil); at < 3 || at > 4 || v.Detector != "rephrase" {
		t.Errorf("one video in other addresses: refused at %d (%v), want 3 or 4 by rephrase", at, v)
	}
	calls = nil
	for _, id := range []string{"Hn2pR7tYw3E", "Qa9xT4mLp2K", "Zr5bN8wEc1V", "Lm3kP7dTy6U", "Bx1vG9sHq4W", "Wt8jD2nRf5Y"} {
		calls = append(calls, asOK("get_transcript", obj{"url": "https://youtu.be/" + id, "lang": "en"}, "No transcript available for this video."))
	}
	if at, v := thPlay(t, calls, nil); at >= 0 {
		t.Errorf("several videos answered alike: refused at %d (%v)", at, v)
	}
	for v, want := range map[string]bool{
		"https://youtu.be/Hn2pR7tYw3E":                    true,
		"youtube.com/embed/Hn2pR7tYw3E":                   true,
		"src/components/UserCard2.tsx":                    false, // a path, no host
		"https://example.com/a/Hn2pR7tYw3E/b/Qa9xT4mLp2K": false, // two ids
		"https://example.com/docs/getting-started":        false,
		"https://api.example.com/v2/orders/1234567890":    false, // digits alone
		"see https://youtu.be/Hn2pR7tYw3E":                false, // text
	} {
		if got := addressID([]byte(v)) != 0; got != want {
			t.Errorf("addressID(%q) != 0 is %v, want %v", v, got, want)
		}
	}
	if addressID([]byte("https://youtu.be/Hn2pR7tYw3E")) != addressID([]byte("youtube.com/watch?v=Hn2pR7tYw3E&t=1s")) {
		t.Error("one id, two addresses: two hashes")
	}
}

// TestUnitByBareName: one unit's status asked as nginx and nginx.service,
// failing alike, is one complaint, refused at the fourth asking; several
// units, each failed, go on.
func TestUnitByBareName(t *testing.T) {
	w := map[string]string{"ssh_exec": "write"}
	status := func(cmd, unit string) asCall {
		out := "× " + unit + ".service - " + unit + " server\n     Active: failed (Result: exit-code) since Sat 2026-12-05 08:41:07 UTC; 2min ago\n" + unit + ".service: Control process exited, code=exited, status=1/FAILURE"
		return asOK("ssh_exec", obj{"host": "web-2", "command": cmd}, obj{"exit_code": 3, "stdout": out, "stderr": ""})
	}
	var calls []asCall
	for _, c := range []string{"systemctl status nginx --no-pager", "systemctl status nginx.service --no-pager", "sudo systemctl status nginx -l --no-pager", "systemctl --no-pager status nginx.service", "systemctl status nginx"} {
		calls = append(calls, status(c, "nginx"))
	}
	if at, v := thPlay(t, calls, w); at != 3 || v.Detector != "same_error" {
		t.Errorf("one unit by its bare name and its full one: refused at %d (%v), want 3 by same_error", at, v)
	}
	calls = nil
	for _, u := range []string{"api", "web", "worker", "cron", "mailer"} {
		calls = append(calls, status("systemctl status "+u+".service --no-pager", u))
	}
	if at, v := thPlay(t, calls, w); at >= 0 {
		t.Errorf("several units, each failed: refused at %d (%v)", at, v)
	}
	for w, want := range map[string]string{"nginx.service": "nginx", "nginx": "nginx", ".service": ".service", "backup.timer": "backup.timer"} {
		if got := string(unitStem([]byte(w))); got != want {
			t.Errorf("unitStem(%q) = %q, want %q", w, got, want)
		}
	}
}

// TestRuleByAddress: one firewall rule added under other spellings of its
// port, refused the same way naming its address, is one complaint,
// refused at the fourth; rules for several ports, each existing, go on.
func TestRuleByAddress(t *testing.T) {
	w := map[string]string{"add_firewall_rule": "write"}
	add := func(port any, said string) asCall {
		return asFail("add_firewall_rule", obj{"firewall": "web-fw", "protocol": "tcp", "port": port, "source_ips": arr{"0.0.0.0/0"}}, "tool_error", "hcloud: firewall rule already exists: in tcp "+said+" from 0.0.0.0/0 (uniqueness_error)")
	}
	var calls []asCall
	for _, p := range []any{"443", "443/tcp", 443, "https", "443-443"} {
		calls = append(calls, add(p, "443"))
	}
	if at, v := thPlay(t, calls, w); at != 3 || v.Detector != "same_error" {
		t.Errorf("one rule, its port respelled: refused at %d (%v), want 3 by same_error", at, v)
	}
	calls = nil
	for _, p := range []string{"80", "443", "8443", "9090", "3000"} {
		calls = append(calls, add(p, p))
	}
	if at, v := thPlay(t, calls, w); at >= 0 {
		t.Errorf("several ports, each existing: refused at %d (%v)", at, v)
	}
	for m, want := range map[string]bool{"from 0.0.0.0/0 (x)": true, "host 10.1.2.3:5432 down": true, "at 192.168.0.1.": true, "version 1.2.3 only": false, "1.2.3.4.5": false, "1234.1.1.1": false} {
		if got := namesAddress([]byte(m)); got != want {
			t.Errorf("namesAddress(%q) = %v, want %v", m, got, want)
		}
	}
}

// FuzzAddresses: the readers of addresses, ids and page keys take any
// bytes without panicking, and an id found is found again in the
// address read twice.
func FuzzAddresses(f *testing.F) {
	for _, s := range []string{"<a@b.example>", "0.0.0.0/0", "1.2.3.4.", "https://youtu.be/Hn2pR7tYw3E", "youtube.com/embed/Hn2pR7tYw3E", "x.service", "@", "a@.", "999.1.1.1", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		b := []byte(s)
		if namesAddress(b) != namesAskedAddress(b, b) {
			t.Fatalf("%q names an address it does not hold", s)
		}
		unitStem(b)
		pageKey(b)
		if addressID(b) != addressID([]byte(s)) {
			t.Fatalf("addressID(%q) not the same twice", s)
		}
	})
}
