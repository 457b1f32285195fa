package config

import (
	"os"
	"strings"
	"testing"
)

// TestContextLimitsConfig: model.context_limits gives each model its
// context window in tokens; a window that is no number of tokens is
// refused, naming the model.
func TestContextLimitsConfig(t *testing.T) {
	c, err := Parse([]byte("model: {base_url: \"http://127.0.0.1:8000/v1\", context_limits: {gpt-4o: 128000}}\n"), os.LookupEnv)
	if err != nil || c.Model.ContextLimits["gpt-4o"] != 128000 {
		t.Fatalf("context_limits {gpt-4o: 128000}: %v, %v", c, err)
	}
	for _, v := range []string{"0", "-5"} {
		_, err := Parse([]byte("model: {base_url: \"http://127.0.0.1:8000/v1\", context_limits: {gpt-4o: "+v+"}}\n"), os.LookupEnv)
		if err == nil || !strings.Contains(err.Error(), "context_limits") || !strings.Contains(err.Error(), "gpt-4o") {
			t.Errorf("context_limits {gpt-4o: %s}: %v, want it refused", v, err)
		}
	}
}
