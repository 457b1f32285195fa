package retry

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"
)

// TestClassify: the messages that say a failure is temporary, and
// some that only look like it.
func TestClassify(t *testing.T) {
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
		if got := Classify(msg); got != want {
			t.Errorf("Classify(%q) = %q, want %q", msg, got, want)
		}
	}
}

func TestBackoff(t *testing.T) {
	for _, tt := range []struct {
		n        int
		min, max time.Duration
	}{
		{1, 50 * time.Millisecond, 100 * time.Millisecond},
		{2, 100 * time.Millisecond, 200 * time.Millisecond},
		{4, 400 * time.Millisecond, 800 * time.Millisecond},
		{7, 2500 * time.Millisecond, 5 * time.Second},  // capped
		{80, 2500 * time.Millisecond, 5 * time.Second}, // an overflowed shift is capped too
	} {
		for range 50 {
			if d := Backoff(100*time.Millisecond, 5*time.Second, tt.n); d < tt.min || d > tt.max {
				t.Fatalf("Backoff(n=%d) = %v, want within [%v, %v]", tt.n, d, tt.min, tt.max)
			}
		}
	}
}

func TestSleepEndsWithCtx(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithCancelCause(t.Context())
		cause := errors.New("stopped")
		time.AfterFunc(time.Second, func() { cancel(cause) })
		start := time.Now()
		if err := Sleep(ctx, time.Hour); err != cause || time.Since(start) != time.Second {
			t.Errorf("Sleep = %v after %v, want the cause after 1s", err, time.Since(start))
		}
		if err := Sleep(t.Context(), time.Minute); err != nil || time.Since(start) != time.Minute+time.Second {
			t.Errorf("Sleep = %v, want nil after a minute", err)
		}
	})
}
