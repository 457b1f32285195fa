package config

import (
	"strings"
	"testing"
	"time"
)

// retention reads days, Go durations, 0 and forever; unset is the default;
// shorter than MinRetention, negative or nonsense is refused, saying what
// to write.
func TestRetention(t *testing.T) {
	for _, tt := range []struct {
		yaml string
		want time.Duration
	}{
		{"", DefaultRetention},
		{"retention: 30d\n", 30 * 24 * time.Hour},
		{"retention: 7d\n", 7 * 24 * time.Hour},
		{"retention: 36h\n", 36 * time.Hour},
		{"retention: 0\n", 0},
		{"retention: forever\n", 0},
	} {
		c, err := Parse([]byte(tt.yaml), env(nil))
		if err != nil {
			t.Errorf("Parse(%q): %v", tt.yaml, err)
			continue
		}
		if got := c.RetentionPeriod(); got != tt.want {
			t.Errorf("Parse(%q).RetentionPeriod() = %v, want %v", tt.yaml, got, tt.want)
		}
	}
	for _, bad := range []string{"retention: 10m\n", "retention: -5d\n", "retention: -1h\n", "retention: month\n", "retention: [1]\n", "retention: 99999999d\n"} {
		_, err := Parse([]byte(bad), env(nil))
		if err == nil || !strings.Contains(err.Error(), "forever") {
			t.Errorf("Parse(%q) = %v; want a refusal that says what to write", bad, err)
		}
	}
}
