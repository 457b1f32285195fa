package policy

import (
	"strings"
	"testing"
)

// TestNeverAppliesListsActions: a policy whose action is none of reach's
// is warned of with the actions spelled as a reader reads them, not as a
// Go list ("[Reach::Action::"call" ...]").
func TestNeverAppliesListsActions(t *testing.T) {
	for _, tc := range []struct{ scope, want string }{
		{`action == Reach::Action::"run"`, `the actions are Reach::Action::"call", Reach::Action::"read_resource", Reach::Action::"get_prompt" and Reach::Action::"complete"`},
		{`action in [Reach::Action::"run", Reach::Action::"go"]`, `include none of Reach::Action::"call", Reach::Action::"read_resource", Reach::Action::"get_prompt" or Reach::Action::"complete"`},
	} {
		s, err := Parse(Source{Name: "p.cedar", Text: []byte("forbid (principal, " + tc.scope + ", resource);")})
		if err != nil {
			t.Fatal(err)
		}
		w := strings.Join(s.Warnings(), "\n")
		if !strings.Contains(w, tc.want) || strings.Contains(w, "[") {
			t.Errorf("%s: warnings %q; want %q", tc.scope, w, tc.want)
		}
	}
}
