package policy

import (
	"strings"
	"testing"

	"github.com/agentreach/reach"
)

func TestAskDefault(t *testing.T) {
	e := New(nil)
	read := Ask{Action: ReadResourceAction, Type: ResourceType, Name: "file:///notes.txt", Upstream: "files"}
	if d := e.Ask(Principal{ID: "alice"}, read).Decision; d != reach.Permit {
		t.Errorf("an authenticated principal reading a resource under the defaults: %v, want permit", d)
	}
	if d := e.Ask(Principal{ID: "anonymous"}, read).Decision; d != reach.Deny {
		t.Errorf("anonymous reading a resource under the defaults: %v, want deny", d)
	}
	prompt := Ask{Action: GetPromptAction, Type: PromptType, Name: "files__greet", Upstream: "files"}
	if !e.Allows(Principal{ID: "alice"}, prompt) {
		t.Error("the defaults do not let an authenticated principal get a prompt")
	}
}

func TestAskScopes(t *testing.T) {
	s, err := Parse(Source{Name: "p.cedar", Text: []byte(`
@id("support-docs")
permit (principal in Reach::Role::"support", action == Reach::Action::"read_resource", resource in Reach::Upstream::"docs");
@id("one-prompt")
permit (principal, action == Reach::Action::"get_prompt", resource == Reach::Prompt::"docs__greet");
@id("no-secret")
@reason("the vault is closed")
forbid (principal, action, resource == Reach::Resource::"vault://key");
@id("tools-read")
permit (principal, action == Reach::Action::"call", resource) when { resource.access == "read" };
@id("scene")
forbid (principal, action, resource) when { context.scene == "chitchat" && resource.access == "write" };
`)})
	if err != nil {
		t.Fatal(err)
	}
	if w := s.Warnings(); len(w) != 0 {
		t.Fatalf("warnings: %v", w)
	}
	support := Principal{ID: "bob", Roles: []string{"support"}}
	other := Principal{ID: "eve"}
	cases := []struct {
		p    Principal
		a    Ask
		want reach.Decision
	}{
		{support, Ask{ReadResourceAction, ResourceType, "doc://a", "docs"}, reach.Permit},
		{other, Ask{ReadResourceAction, ResourceType, "doc://a", "docs"}, reach.Deny},
		{support, Ask{ReadResourceAction, ResourceType, "doc://a", "files"}, reach.Deny},
		{support, Ask{GetPromptAction, PromptType, "docs__x", "docs"}, reach.Deny}, // read_resource only
		{other, Ask{GetPromptAction, PromptType, "docs__greet", "docs"}, reach.Permit},
		{other, Ask{CompleteAction, PromptType, "docs__greet", "docs"}, reach.Deny},
		{support, Ask{ReadResourceAction, ResourceType, "vault://key", "docs"}, reach.Deny},
	}
	for _, c := range cases {
		r := s.Ask(c.p, c.a)
		if r.Decision != c.want {
			t.Errorf("%s %v: %v (%+v), want %v", c.p.ID, c.a, r.Decision, r, c.want)
		}
		if len(r.Errors) > 0 {
			t.Errorf("%s %v: errors %v", c.p.ID, c.a, r.Errors)
		}
	}
	a := Ask{ReadResourceAction, ResourceType, "vault://key", "docs"}
	msg := Refusal(support, a, s.Ask(support, a))
	for _, want := range []string{"read_resource", "vault://key", "the vault is closed", "forbid wins over any permit"} {
		if !strings.Contains(msg, want) {
			t.Errorf("refusal %q lacks %q", msg, want)
		}
	}
	// A policy that only asks about resources stays out of tool calls.
	if pl := s.plan("docs__search", "docs"); len(pl.pol[1]) != 0 {
		t.Errorf("a call of docs__search weighs %d policies scoped to docs's resources", len(pl.pol[1]))
	}
	if r := s.Evaluate(&Input{Principal: other, Tool: "docs__search"}); r.Decision != reach.Permit {
		t.Errorf("a read tool: %+v", r)
	}
}

func TestAskErrorDenies(t *testing.T) {
	s, err := Parse(Source{Name: "p.cedar", Text: []byte(`
permit (principal, action == Reach::Action::"read_resource", resource);
forbid (principal, action, resource) when { principal.department == "x" };
`)})
	if err != nil {
		t.Fatal(err)
	}
	a := Ask{ReadResourceAction, ResourceType, "doc://a", "docs"}
	r := s.Ask(Principal{ID: "bob"}, a)
	if r.Decision != reach.Deny || len(r.Errors) == 0 {
		t.Errorf("a forbid that errors: %+v, want deny with its error", r)
	}
	if msg := Refusal(Principal{ID: "bob"}, a, r); !strings.Contains(msg, "failed to evaluate") {
		t.Errorf("refusal %q", msg)
	}
}

// TestRefusalSaysWhatAllowsIt: a refusal tells what would allow what was
// asked, and only that. A permit added allows it when no policy permitted
// it; it does not when a forbid denied it (a forbid wins over any permit),
// when a policy failed to evaluate (an error denies), or when the permit
// that applies asks for approval (the strictest permit that applies wins).
func TestRefusalSaysWhatAllowsIt(t *testing.T) {
	s, err := Parse(Source{Name: "p.cedar", Text: []byte(`
@id("docs")
permit (principal, action == Reach::Action::"read_resource", resource in Reach::Upstream::"docs");
@id("held")
@approval("user")
permit (principal, action == Reach::Action::"get_prompt", resource in Reach::Upstream::"docs");
@id("no-secret")
@reason("the vault is closed")
forbid (principal, action, resource == Reach::Resource::"vault://key");
@id("broken")
forbid (principal, action == Reach::Action::"complete", resource) when { principal.department == "x" };
`)})
	if err != nil {
		t.Fatal(err)
	}
	bob := Principal{ID: "bob"}
	const permit = "add a policy such as: permit ("
	for _, c := range []struct {
		name      string
		a         Ask
		want      reach.Decision
		has, lack []string
	}{
		{"no permit", Ask{ReadResourceAction, ResourceType, "doc://a", "files"}, reach.Deny,
			[]string{"no policy permits it", permit + `principal == Reach::Principal::"bob", action == Reach::Action::"read_resource", resource in Reach::Upstream::"files");`}, nil},
		{"forbid", Ask{ReadResourceAction, ResourceType, "vault://key", "docs"}, reach.Deny,
			[]string{"the vault is closed", "forbid wins over any permit"}, []string{permit}},
		{"error", Ask{CompleteAction, PromptType, "docs__greet", "docs"}, reach.Deny,
			[]string{"failed to evaluate", "fix that policy"}, []string{permit}},
		{"approval", Ask{GetPromptAction, PromptType, "docs__greet", "docs"}, reach.NeedsApproval,
			[]string{"asks for approval", "without @approval"}, []string{permit}},
	} {
		r := s.Ask(bob, c.a)
		if r.Decision != c.want {
			t.Fatalf("%s: %+v, want %v", c.name, r, c.want)
		}
		msg := Refusal(bob, c.a, r)
		for _, w := range c.has {
			if !strings.Contains(msg, w) {
				t.Errorf("%s: refusal %q lacks %q", c.name, msg, w)
			}
		}
		for _, w := range c.lack {
			if strings.Contains(msg, w) {
				t.Errorf("%s: refusal %q says %q, which would not allow it", c.name, msg, w)
			}
		}
	}
}
