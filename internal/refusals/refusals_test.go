package refusals

import (
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/agentreach/reach/internal/fault"
)

// dynamic are the Errors whose code is another's, each looked at: the
// effect's name and "_failed" (effects.go: "undo_failed",
// "refresh_failed"), a batch's refusal code (batch), a breaker's
// (breaker_open, half_open), one read back from the store (history). A new
// one fails TestEveryRefusalSaysWhatNext until it is looked at and named
// here, with its codes in docs/ERRORS.md.
var dynamic = []string{"effects.go", "internal/batch/execute.go", "internal/breaker/registry.go", "internal/durable/history.go"}

// TestEveryRefusalSaysWhatNext: every place reach makes a refusal or a
// failure (fault.Error) gives it a code the fronts can name, a type when
// it is made, and a suggestion, the next step the model reads (in the
// literal or set in its function). Before, two did not: a pending
// approval's fallback ("X is waiting for approval.") and arguments that
// are not valid JSON.
func TestEveryRefusalSaysWhatNext(t *testing.T) {
	sites, dyn, err := Read("../..")
	if err != nil {
		t.Fatal(err)
	}
	if len(sites) < 60 {
		t.Fatalf("read %d refusals; want the repository's", len(sites))
	}
	for _, s := range sites {
		if !s.NextStep {
			t.Errorf("%s: %s has no suggestion: its text says not what to do next", s.Pos, s.Code)
		}
		if s.Type == "" && s.Code != "approval_pending" { // its type is set where it is returned
			t.Errorf("%s: %s has no type", s.Pos, s.Code)
		}
	}
	for _, d := range dyn {
		file, _, _ := strings.Cut(d.Pos, ":")
		if !slices.Contains(dynamic, file) {
			t.Errorf("%s: a refusal whose code is %s, not a literal: look at it and name its file in dynamic", d.Pos, d.Expr)
		}
	}
}

// TestTypesAreFaults: Types names every type constant a site uses.
func TestTypesAreFaults(t *testing.T) {
	sites, _, err := Read("../..")
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range sites {
		if _, ok := Types[s.Type]; s.Type != "" && !ok {
			t.Errorf("%s: type %s is not in Types", s.Pos, s.Type)
		}
	}
}

// TestErrorsDocListsRefusals: docs/ERRORS.md lists every refusal code
// reach's source makes, as Codes reads them (REACH_UPDATE_ERRORS=1
// rewrites its generated part).
func TestErrorsDocListsRefusals(t *testing.T) {
	const begin, end = "<!-- refusal codes: generated from the source (internal/refusals) -->\n", "<!-- end of refusal codes -->\n"
	codes, err := Codes("../..")
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	b.WriteString("| code | type | over the model proxy |\n|---|---|---|\n")
	for _, c := range codes {
		typ, proxy := "`"+c.Type+"`", "not retried"
		if c.Type == "" {
			typ = "`approval`" // approval_pending's, set where it is returned
		}
		if c.Type == fault.TypeTransient {
			proxy = "503, retried"
		}
		fmt.Fprintf(&b, "| `%s` | %s | %s |\n", c.Code, typ, proxy)
	}
	data, err := os.ReadFile("../../docs/ERRORS.md")
	if err != nil {
		t.Fatal(err)
	}
	doc := string(data)
	i, j := strings.Index(doc, begin), strings.Index(doc, end)
	if i < 0 || j < i {
		t.Fatalf("docs/ERRORS.md has no part between %q and %q", begin, end)
	}
	if doc[i+len(begin):j] == b.String() {
		return
	}
	if os.Getenv("REACH_UPDATE_ERRORS") == "1" {
		if err := os.WriteFile("../../docs/ERRORS.md", []byte(doc[:i+len(begin)]+b.String()+doc[j:]), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	t.Error("docs/ERRORS.md does not list the refusal codes as they are: run REACH_UPDATE_ERRORS=1 go test ./internal/refusals -run TestErrorsDocListsRefusals")
}
