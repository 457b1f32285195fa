package config

import (
	"os"
	"strings"
	"testing"
)

// TestOutputLimitsConfig: model.output_limits gives each model the most
// tokens it writes in one answer; a limit that is not a positive number of
// tokens is refused, saying where.
func TestOutputLimitsConfig(t *testing.T) {
	c, err := Parse([]byte("model: {base_url: \"http://127.0.0.1:8000/v1\", output_limits: {gpt-4o: 16384}}\n"), os.LookupEnv)
	if err != nil || c.Model.OutputLimits["gpt-4o"] != 16384 {
		t.Fatalf("%v, %+v", err, c)
	}
	for _, v := range []string{"0", "-1"} {
		_, err := Parse([]byte("model: {base_url: \"http://127.0.0.1:8000/v1\", output_limits: {gpt-4o: "+v+"}}\n"), os.LookupEnv)
		if err == nil || !strings.Contains(err.Error(), "output_limits") || !strings.Contains(err.Error(), "gpt-4o") {
			t.Errorf("output_limits {gpt-4o: %s}: %v, want it refused", v, err)
		}
	}
}
