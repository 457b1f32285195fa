package policy

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/agentreach/reach"
)

func TestPathView(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"/safe/a.txt", "/safe/a.txt"},
		{"/safe/../etc/passwd", "/etc/passwd"},
		{"/safe/./../../etc/passwd", "/etc/passwd"},
		{"/safe/%2e%2e/etc/passwd", "/etc/passwd"},
		{"/safe/..%2F..%2Fetc/passwd", "/etc/passwd"},
		{"//etc/passwd", "/etc/passwd"},
		{"/./etc/passwd", "/etc/passwd"},
		{"/safe/./a/", "/safe/a/"},
		{"/safe/", "/safe/"},
		{"safe/../../x", "../x"},
		{"./x", "x"},
		{"https://api.example.com/public/../admin?q=a/../b#f", "https://api.example.com/admin?q=a/../b#f"},
		{"https://api.example.com/public/%2e%2e/admin", "https://api.example.com/admin"},
		{"https://api.example.com/public/x", "https://api.example.com/public/x"},
		{"https://api.example.com", "https://api.example.com"},
		{"file:///srv/safe/../etc", "file:///srv/etc"},
		{"and/or", "and/or"},
		{"no slash at all ..", "no slash at all .."},
		{"/a%20b/c", "/a%20b/c"},
		{"/%70rivate/key", "/private/key"},
		{"https://intranet/%61dmin/users", "https://intranet/admin/users"},
		{"HTTPS://Intranet/admin", "https://intranet/admin"},
		{"https://Bob@Intranet:8443/Admin/../x?Q#F", "https://Bob@intranet:8443/x?Q#F"},
		{"https://INTRANET", "https://intranet"},
		{"https://INTRANET?a=/b", "https://intranet?a=/b"},
		{"FILE:///srv/../etc", "file:///etc"},
		{"/a%2Fb/%7Eme", "/a%2Fb/~me"},
		{"/%2e%2e/%zz/../x", "/x"},
		{`C:\safe\..\x`, `C:\safe\..\x`},
	} {
		if got := pathView(tc.in); got != tc.want {
			t.Errorf("pathView(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

// TestLikeOnPathsCannotBeSteppedOut: a permit of `like "/safe/*"` and a
// forbid of `like "/etc/*"` hold against "..", ".", doubled slashes and
// their percent-escapes, through the runtime (only the fields policies
// read are converted) and Evaluate; the tool still gets the path as sent.
func TestLikeOnPathsCannotBeSteppedOut(t *testing.T) {
	set := mustParse(t, `
@id("safe-reads")
permit (principal, action, resource == Reach::Tool::"read_file")
when { context.arguments.path like "/safe/*" };
@id("anything-else")
permit (principal, action, resource == Reach::Tool::"stat");
@id("no-etc") @reason("nothing under /etc")
forbid (principal, action, resource == Reach::Tool::"stat")
when { context.arguments.paths.contains("/etc/passwd") || context.arguments.path like "/etc/*" };
`)
	var got json.RawMessage
	rt := reach.New(&reach.Options{Authorizer: New(&Options{Policies: set})})
	rt.MustRegister(
		reach.Tool{Name: "read_file", Func: func(ctx context.Context, args json.RawMessage) (json.RawMessage, error) {
			got = args
			return noop(ctx, args)
		}},
		reach.Tool{Name: "stat", Func: noop},
	)
	ctx, req, err := rt.Begin(t.Context(), &reach.RequestOptions{Principal: "alice"})
	if err != nil {
		t.Fatal(err)
	}
	defer req.End()
	for _, tc := range []struct {
		tool, args string
		want       reach.Decision
	}{
		{"read_file", `{"path":"/safe/notes.txt"}`, reach.Permit},
		{"read_file", `{"path":"/safe/sub/../notes.txt"}`, reach.Permit},
		{"read_file", `{"path":"/safe/../etc/passwd"}`, reach.Deny},
		{"read_file", `{"path":"/safe/./../etc/passwd"}`, reach.Deny},
		{"read_file", `{"path":"/safe/%2e%2e/etc/passwd"}`, reach.Deny},
		{"read_file", `{"path":"/safe/\u002e\u002e/etc/passwd"}`, reach.Deny},
		{"read_file", `{"path":"/safe/.."}`, reach.Deny},
		{"stat", `{"path":"/tmp/x","paths":[]}`, reach.Permit},
		{"stat", `{"path":"//etc/passwd","paths":[]}`, reach.Deny},
		{"stat", `{"path":"/./etc/shadow","paths":[]}`, reach.Deny},
		{"stat", `{"path":"/tmp/x","paths":["/tmp/../etc/passwd"]}`, reach.Deny},
		{"stat", `{"path":"/%65tc/passwd","paths":[]}`, reach.Deny},
		{"stat", `{"path":"/tmp/x","paths":["/%65tc/passwd"]}`, reach.Deny},
	} {
		in := &Input{Principal: Principal{ID: "alice"}, Tool: tc.tool, Arguments: json.RawMessage(tc.args)}
		if d := set.Evaluate(in).Decision; d != tc.want {
			t.Errorf("Evaluate %s %s = %v, want %v", tc.tool, tc.args, d, tc.want)
		}
		got = nil
		res := rt.Call(ctx, &reach.Call{ID: "c", Tool: tc.tool, Arguments: json.RawMessage(tc.args)})
		if (res.Status == reach.StatusSuccess) != (tc.want == reach.Permit) {
			t.Errorf("calling %s %s = %s %v, want %v", tc.tool, tc.args, res.Status, res.Error, tc.want)
		}
		if tc.args == `{"path":"/safe/sub/../notes.txt"}` && !strings.Contains(string(got), "/safe/sub/../notes.txt") {
			t.Errorf("the tool got %s, want the path as sent", got)
		}
	}
}

// FuzzPathView: whatever the string, an absolute path without escapes is
// seen without "." or ".." segments or doubled slashes, and a string
// without a slash is seen as it is.
func FuzzPathView(f *testing.F) {
	for _, s := range []string{"/safe/../etc/passwd", "//x", "/a/./b/", "https://h/a/../b", "a/b", "..", "/%2e%2e/x"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if r := resourceView(s); !strings.Contains(s, "/") && r != s {
			t.Fatalf("resourceView(%q) = %q, want it unchanged", s, r)
		}
		v := pathView(s)
		if !strings.Contains(s, "/") && v != s {
			t.Fatalf("pathView(%q) = %q, want it unchanged", s, v)
		}
		if strings.HasPrefix(s, "/") && !strings.ContainsAny(s, "%") && !urlPrefixRE.MatchString(s) {
			for i, seg := range strings.Split(v, "/") {
				if seg == "." || seg == ".." || seg == "" && i > 0 && i < strings.Count(v, "/") {
					t.Fatalf("pathView(%q) = %q, which still has segment %q", s, v, seg)
				}
			}
		}
	})
}

// TestResourceView: a resource's URI reaches the policies with its path
// cleaned, a scheme without "//" kept; a template, a query and a
// fragment are left as they are.
func TestResourceView(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"file:///private/key", "file:///private/key"},
		{"file:///public/../private/key", "file:///private/key"},
		{"file:///public/%2e%2e/private/key", "file:///private/key"},
		{"file:////private/key", "file:///private/key"},
		{"file:///%70rivate/key", "file:///private/key"},
		{"doc://pages/{n}", "doc://pages/{n}"},
		{"custom:public/../private/key", "custom:private/key"},
		{"custom:public/%2e%2e/private/key?x=../y#../z", "custom:private/key?x=../y#../z"},
		{"custom:plain", "custom:plain"},
		{"urn:isbn:123", "urn:isbn:123"},
		{"a/../b", "b"},
	} {
		if got := resourceView(tc.in); got != tc.want {
			t.Errorf("resourceView(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

// TestAskCleansResourcePaths: a forbid of a resource URI, and of what is
// like a folder's URIs, holds against a read of it through ".." and its
// escapes; a prompt's name is asked about as it is.
func TestAskCleansResourcePaths(t *testing.T) {
	set := mustParse(t, `
@id("all") permit (principal, action, resource);
@id("no-key") forbid (principal, action, resource == Reach::Resource::"file:///private/key");
@id("no-private") forbid (principal, action, resource) when { resource.name like "custom:private/*" };
`)
	p := Principal{ID: "alice"}
	for _, tc := range []struct {
		name string
		want reach.Decision
	}{
		{"file:///public/readme", reach.Permit},
		{"file:///public/../private/key", reach.Deny},
		{"file:///public/%2E%2E/private/key", reach.Deny},
		{"custom:public/../private/notes", reach.Deny},
	} {
		r := set.Ask(p, Ask{Action: ReadResourceAction, Type: ResourceType, Name: tc.name, Upstream: "files"})
		if r.Decision != tc.want {
			t.Errorf("read %s: %v %v, want %v", tc.name, r.Decision, r.Policies, tc.want)
		}
	}
}

// TestURLArgumentsSpelledOneWay: a forbid of what is like
// https://intranet/admin* holds against the URL's other spellings that every
// server reads as it: its scheme or host in capitals, an escaped letter of
// its path, a ".." segment. Before, each passed the forbid.
func TestURLArgumentsSpelledOneWay(t *testing.T) {
	set := mustParse(t, `
@id("fetch") permit (principal, action, resource == Reach::Tool::"fetch");
@id("no-admin") forbid (principal, action, resource == Reach::Tool::"fetch")
when { context.arguments.url like "https://intranet/admin*" };
`)
	e := New(&Options{Policies: set})
	for _, tc := range []struct {
		url  string
		want reach.Decision
	}{
		{"https://intranet/docs", reach.Permit},
		{"https://intranet/admin/users", reach.Deny},
		{"HTTPS://INTRANET/admin/users", reach.Deny},
		{"https://Intranet/%61dmin/users", reach.Deny},
		{"https://intranet/docs/../admin", reach.Deny},
	} {
		args, _ := json.Marshal(map[string]string{"url": tc.url})
		if r := e.Evaluate(&Input{Principal: Principal{ID: "alice"}, Tool: "fetch", Arguments: args}); r.Decision != tc.want {
			t.Errorf("fetch %s: %v %v, want %v", tc.url, r.Decision, r.Policies, tc.want)
		}
	}
}
