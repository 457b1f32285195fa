package loops

import "testing"

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
