package config

import (
	"strings"
	"testing"
)

// A retention refused says why in the configuration's own words: the
// shortest as a configuration writes it ("1h", not "1h0m0s"), and a number
// of days past the largest says so rather than that it is no number.
func TestRetentionRefusalTexts(t *testing.T) {
	for bad, want := range map[string]string{
		"retention: 10m\n":       `retention "10m" is shorter than 1h, the shortest;`,
		"retention: 0d\n":        `retention "0d" is shorter than 1h, the shortest;`,
		"retention: 99999999d\n": `retention "99999999d" is more days than 65535;`,
		"retention: 1.5d\n":      `retention "1.5d" is not a whole number of days;`,
	} {
		_, err := Parse([]byte(bad), env(nil))
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Parse(%q) = %v; want it to say %s", bad, err, want)
		}
	}
}
