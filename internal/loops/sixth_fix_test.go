package loops

import "testing"

// The sixth probe's fixes, each failing before.

// TestEchoedValueIsValue: a value in an error message is masked the same
// whether the call's arguments hold it (echoed) or not: a refund of a
// charge already refunded, asked once by the charge's id and else by its
// payment's, says one thing each time.
func TestEchoedValueIsValue(t *testing.T) {
	const msg = "Charge ch_3QK9cN4gBxMZnq4E0ab has already been refunded."
	runCases(t, []testCase{
		{"the same complaint, the id echoed once", nil, []op{
			failingWith("refund_create", `{"payment":"pi_3QK9cN4gBxMZnq4E3zs"}`, "invalid_args", msg),
			failingWith("refund_create", `{"charge":"ch_3QK9cN4gBxMZnq4E0ab","reason":"duplicate"}`, "invalid_args", msg),
			failingWith("refund_create", `{"amount":4900,"payment":"pi_3QK9cN4gBxMZnq4E3zs"}`, "invalid_args", msg),
			refused(call("refund_create", `{"charge":"ch_3QK9cN4gBxMZnq4E0ab"}`, `"ok"`), "same_error"),
		}},
		// A word echoed without a digit is still its own: other names are
		// other complaints.
		{"another name each time", nil, []op{
			failingWith("user_invite", `{"user":"alice"}`, "invalid_args", "alice is not a member of org acme"),
			failingWith("user_invite", `{"user":"bob7"}`, "invalid_args", "bob7 is not a member of org acme"),
			failingWith("user_invite", `{"user":"carol"}`, "invalid_args", "dave is not a member of org acme"),
			call("user_invite", `{"user":"erin"}`, `"invited"`),
		}},
	})
}
