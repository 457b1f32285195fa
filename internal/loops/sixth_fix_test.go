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

// TestOptionsAddedSameAnswer: a question asked again with options added
// or changed beside all its values (a currency, a rate plan, a payment
// policy), whose answer is the one it gave, learns nothing: after four
// such answers in a row the next call is refused. Another item of a
// batch (an earlier value changed) answering alike is still work, and an
// option that changes the answer is news.
func TestOptionsAddedSameAnswer(t *testing.T) {
	const none = `{"data":[],"warnings":[{"code":3664,"title":"NO ROOMS AVAILABLE AT REQUESTED PROPERTY","source":{"parameter":"hotelIds"}}]}`
	runCases(t, []testCase{
		{"one stay, options that cannot make a room", nil, []op{
			call("room_offers", `{"checkIn":"2027-01-16","checkOut":"2027-01-19","hotel":"HX221"}`, none),
			call("room_offers", `{"checkIn":"2027-01-16","checkOut":"2027-01-19","currency":"USD","hotel":"HX221"}`, none),
			call("room_offers", `{"checkIn":"2027-01-16","checkOut":"2027-01-19","hotel":"HX221","refundable":true}`, none),
			call("room_offers", `{"checkIn":"2027-01-16","checkOut":"2027-01-19","hotel":"HX221","payment":"NONE"}`, none),
			call("room_offers", `{"checkIn":"2027-01-16","checkOut":"2027-01-19","currency":"EUR","hotel":"HX221","refundable":false}`, none),
			refused(call("room_offers", `{"checkIn":"2027-01-16","checkOut":"2027-01-19","hotel":"HX221","rooms":1}`, none), "no_progress"),
		}},
		{"one hotel after another, all full", nil, []op{
			call("room_offers", `{"checkIn":"2027-01-16","checkOut":"2027-01-19","hotel":"HX221"}`, none),
			call("room_offers", `{"checkIn":"2027-01-16","checkOut":"2027-01-19","hotel":"HX305"}`, none),
			call("room_offers", `{"checkIn":"2027-01-16","checkOut":"2027-01-19","currency":"USD","hotel":"HX311"}`, none),
			call("room_offers", `{"checkIn":"2027-01-16","checkOut":"2027-01-19","hotel":"HX402"}`, none),
			call("room_offers", `{"checkIn":"2027-01-16","checkOut":"2027-01-19","hotel":"HX419"}`, none),
			call("room_offers", `{"checkIn":"2027-01-16","checkOut":"2027-01-19","hotel":"HX512"}`, none),
		}},
		// The batch's first item adds its key to the question; the next
		// ones change its value.
		{"one host after another, all healthy", nil, []op{
			call("health_check", `{}`, `{"status":"healthy","message":"all checks passed on the last run","checks":{"disk":"ok","db":"ok","queue":"ok"}}`),
			call("health_check", `{"host":"web-1"}`, `{"status":"healthy","message":"all checks passed on the last run","checks":{"disk":"ok","db":"ok","queue":"ok"}}`),
			call("health_check", `{"host":"web-2"}`, `{"status":"healthy","message":"all checks passed on the last run","checks":{"disk":"ok","db":"ok","queue":"ok"}}`),
			call("health_check", `{"host":"web-3"}`, `{"status":"healthy","message":"all checks passed on the last run","checks":{"disk":"ok","db":"ok","queue":"ok"}}`),
			call("health_check", `{"host":"web-4"}`, `{"status":"healthy","message":"all checks passed on the last run","checks":{"disk":"ok","db":"ok","queue":"ok"}}`),
			call("health_check", `{"host":"web-5"}`, `{"status":"healthy","message":"all checks passed on the last run","checks":{"disk":"ok","db":"ok","queue":"ok"}}`),
			call("health_check", `{"host":"web-6"}`, `{"status":"healthy","message":"all checks passed on the last run","checks":{"disk":"ok","db":"ok","queue":"ok"}}`),
		}},
		{"other nights of one hotel, all full", nil, []op{
			call("room_offers", `{"checkIn":"2027-01-16","checkOut":"2027-01-19","hotel":"HX221"}`, none),
			call("room_offers", `{"checkIn":"2027-01-17","checkOut":"2027-01-20","hotel":"HX221"}`, none),
			call("room_offers", `{"checkIn":"2027-01-18","checkOut":"2027-01-21","hotel":"HX221"}`, none),
			call("room_offers", `{"checkIn":"2027-01-19","checkOut":"2027-01-22","hotel":"HX221"}`, none),
			call("room_offers", `{"checkIn":"2027-01-20","checkOut":"2027-01-23","hotel":"HX221"}`, none),
			call("room_offers", `{"checkIn":"2027-01-21","checkOut":"2027-01-24","hotel":"HX221"}`, none),
		}},
		{"filters that change the answer", nil, []op{
			call("room_offers", `{"checkIn":"2027-01-16","checkOut":"2027-01-19","hotel":"HX221"}`, `{"data":[{"offer":"OF1","board":"ROOM_ONLY","total":"612.00"},{"offer":"OF2","board":"BREAKFAST","total":"688.00"}]}`),
			call("room_offers", `{"board":"BREAKFAST","checkIn":"2027-01-16","checkOut":"2027-01-19","hotel":"HX221"}`, `{"data":[{"offer":"OF2","board":"BREAKFAST","total":"688.00"}]}`),
			call("room_offers", `{"board":"BREAKFAST","checkIn":"2027-01-16","checkOut":"2027-01-19","currency":"USD","hotel":"HX221"}`, `{"data":[{"offer":"OF2","board":"BREAKFAST","total":"741.50"}]}`),
			call("room_offers", `{"board":"ROOM_ONLY","checkIn":"2027-01-16","checkOut":"2027-01-19","hotel":"HX221"}`, `{"data":[{"offer":"OF1","board":"ROOM_ONLY","total":"612.00"}]}`),
			call("room_offers", `{"checkIn":"2027-01-16","checkOut":"2027-01-19","hotel":"HX221","refundable":true}`, `{"data":[{"offer":"OF2","board":"BREAKFAST","total":"688.00"}]}`),
			call("room_offers", `{"checkIn":"2027-01-16","checkOut":"2027-01-19","hotel":"HX221","rooms":2}`, `{"data":[]}`),
		}},
	})
}
