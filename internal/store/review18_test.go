package store

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"
	"time"
)

// The line a sweep logs when it removed something (the first sweep of an
// upgraded gateway removes, at once, everything that finished more than
// 30 days before) names the retention it applied and says how to keep
// finished state longer, and where the removed requests' events remain.
func TestSweepRetentionLogSaysHowToKeep(t *testing.T) {
	var logs bytes.Buffer
	o := RetentionOptions{Keep: 30 * 24 * time.Hour, Batch: 10, Logger: slog.New(slog.NewTextHandler(&logs, nil))}
	if _, err := SweepRetention(t.Context(), &fakeRetention{n: 3}, o); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"retention=30d", "retention: forever", "reach audit show"} {
		if !strings.Contains(logs.String(), want) {
			t.Errorf("the sweep's line lacks %q:\n%s", want, logs.String())
		}
	}
}
