package policy

import (
	"testing"

	"github.com/agentreach/reach"
)

// TestSec34ForbidHoldsAgainstEveryReading: a forbid of a resource URI
// holds against the spellings an upstream may read as that URI: with a
// query or a fragment, with ";" parameters in a segment (..;/ as ../, as
// servlet containers read them), with its escapes escaped again, with its
// scheme in capitals, a file URI with a host. A permit of a URI with a
// query still permits that URI alone. Before, each of these spellings passed the forbid of
// file:///private/key (the folder's forbid was written for custom: only).
func TestSec34ForbidHoldsAgainstEveryReading(t *testing.T) {
	set := mustParse(t, `
@id("files") permit (principal, action, resource in Reach::Upstream::"files");
@id("one-query") permit (principal, action, resource == Reach::Resource::"db://q?table=public");
@id("no-key") forbid (principal, action, resource == Reach::Resource::"file:///private/key");
@id("no-custom") forbid (principal, action, resource == Reach::Resource::"custom:private/key");
`)
	p := Principal{ID: "alice"}
	for _, tc := range []struct {
		name, upstream string
		want           reach.Decision
	}{
		{"file:///public/readme", "files", reach.Permit},
		{"file:///public/readme?v=2", "files", reach.Permit},
		{"file:///public;v=2/readme", "files", reach.Permit},
		{"db://q?table=public", "", reach.Permit},
		{"db://q?table=other", "", reach.Deny},
		{"file:///private/key", "files", reach.Deny},
		{"file:///private/key?x=1", "files", reach.Deny},
		{"file:///private/key#x", "files", reach.Deny},
		{"file:///private;v=1/key", "files", reach.Deny},
		{"file:///private/key;v=1", "files", reach.Deny},
		{"file:///public/..;/private/key", "files", reach.Deny},
		{"file:///public/%252e%252e/private/key", "files", reach.Deny},
		{"file:///public/%25252e%25252e/private/key", "files", reach.Deny},
		{"file:///%2570rivate/key", "files", reach.Deny},
		{"FILE:///private/key", "files", reach.Deny},
		{"file://localhost/private/key", "files", reach.Deny},
		{"file://LocalHost/private/key", "files", reach.Deny},
		{"file://other.host/private/key", "files", reach.Deny},
		{"file://other.host/public/readme", "files", reach.Permit},
		{"CUSTOM:private/key", "files", reach.Deny},
		{"Custom:public/../private/key", "files", reach.Deny},
	} {
		r := set.Ask(p, Ask{Action: ReadResourceAction, Type: ResourceType, Name: tc.name, Upstream: tc.upstream})
		if r.Decision != tc.want {
			t.Errorf("read %s: %v %v, want %v", tc.name, r.Decision, r.Policies, tc.want)
		}
	}
}

// TestSec34ReadingOfPlainURIs: a URI with nothing another reading could
// change has none (it is asked about once).
func TestSec34ReadingOfPlainURIs(t *testing.T) {
	for _, uri := range []string{"file:///private/key", "doc://pages/{n}", "custom:plain", "urn:isbn:123"} {
		if got := resourceReading(uri); got != "" {
			t.Errorf("resourceReading(%q) = %q, want none", uri, got)
		}
	}
}
