package reach

import "testing"

// TestTransientText: the messages that say a failure is temporary, and
// some that only look like it.
func TestTransientText(t *testing.T) {
	for msg, want := range map[string]string{
		"503 temporarily overloaded, retry in a moment":                "unavailable",
		"upstream billing answered HTTP 503":                           "unavailable",
		"status: 502":                                                  "unavailable",
		"HTTP/1.1 429":                                                 "rate_limited",
		"Rate limit reached for requests per minute":                   "rate_limited",
		"Too Many Requests":                                            "rate_limited",
		"context deadline exceeded":                                    "timeout",
		"the database query timed out after 30s":                       "timeout",
		"error 504":                                                    "timeout",
		"read tcp 10.0.0.1:443: connection reset by peer":              "unavailable",
		"The server is overloaded. Please try again later.":            "unavailable",
		"order 503 was not found":                                      "",
		"invalid amount: 429.50 is more than the balance":              "",
		"the disk is full":                                             "",
		"payment amount does not add up, total price is 564, but paid": "",
		"permission denied for role analyst":                           "",
	} {
		if got := transientText(msg); got != want {
			t.Errorf("transientText(%q) = %q, want %q", msg, got, want)
		}
	}
}
