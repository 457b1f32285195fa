package gateway

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/url"
	pathpkg "path"
	"strings"
	"sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// fileUpstream serves files by a resource template, as a filesystem
// server does: the path of the URI read, its escapes decoded and cleaned.
// It records the files it was asked for.
func fileUpstream(t *testing.T, read func(file string)) *httptest.Server {
	t.Helper()
	return templateFiles(t, nil, func(u *url.URL) string { return pathpkg.Clean(u.Path) }, read)
}

// templateFiles serves, with the server options opts, files by the
// resource template file:///{+path}: the file a URI names is file(the
// URI), and read records it.
func templateFiles(t *testing.T, opts *mcp.ServerOptions, file func(*url.URL) string, read func(file string)) *httptest.Server {
	t.Helper()
	s := mcp.NewServer(&mcp.Implementation{Name: "files", Version: "1"}, opts)
	s.AddResourceTemplate(&mcp.ResourceTemplate{URITemplate: "file:///{+path}", Name: "files"}, func(_ context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
		u, err := url.Parse(req.Params.URI)
		if err != nil {
			return nil, err
		}
		f := file(u)
		read(f)
		return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: req.Params.URI, Text: "contents of " + f}}}, nil
	})
	up := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, nil))
	t.Cleanup(up.Close)
	return up
}

const filePolicies = `
@id("files")
permit (principal, action == Reach::Action::"read_resource", resource in Reach::Upstream::"files")
when { principal.authenticated };

@id("no-key")
@reason("the key stays on the server")
forbid (principal, action, resource == Reach::Resource::"file:///private/key");

@id("no-private")
@reason("private files stay on the server")
forbid (principal, action, resource) when { resource.name like "file:///private/*" };
`

// TestResourceURIPathsCleanedForPolicies: a resource read is asked of the
// policies by its URI's path as the upstream reads it: "." and ".."
// segments, doubled slashes and escapes decoded and cleaned, as they are in a tool
// call's path arguments. A forbid of file:///private/key, or of what is
// like file:///private/*, holds against file:///public/../private/key and
// its spellings; the upstream is not asked. Before, the URI was asked about
// as sent: a forbid of a URI, or of a folder, held only against the
// spelling it named, and the file was read through another.
func TestResourceURIPathsCleanedForPolicies(t *testing.T) {
	var mu sync.Mutex
	var read []string
	up := fileUpstream(t, func(f string) { mu.Lock(); read = append(read, f); mu.Unlock() })
	url, key := policyGateway(t, "files", filePolicies, up.URL)
	alice, err := mcpAs(t, url, key)
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	res, err := alice.ReadResource(ctx, &mcp.ReadResourceParams{URI: "file:///public/readme"})
	if err != nil || len(res.Contents) != 1 || res.Contents[0].Text != "contents of /public/readme" {
		t.Fatalf("alice reads a public file: %v %v", res, err)
	}
	for _, uri := range []string{
		"file:///private/key",
		"file:///public/../private/key",
		"file:///public/%2e%2e/private/key",
		"file:///public/..%2Fprivate/key",
		"file:///%70rivate/key",
		"file:////private/key",
		"file:///./private/key",
		"file:///public/../private/other",
	} {
		res, err := alice.ReadResource(ctx, &mcp.ReadResourceParams{URI: uri})
		var je *jsonrpc.Error
		if !errors.As(err, &je) || je.Code != codeRefused {
			t.Errorf("alice reads %s: %v %v, want it refused (%d)", uri, res, err, codeRefused)
			continue
		}
		if !strings.Contains(je.Message, "on the server") {
			t.Errorf("alice reads %s: refused %q, want the forbid's reason", uri, je.Message)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	for _, f := range read {
		if strings.HasPrefix(f, "/private/") {
			t.Errorf("the upstream read %s", f)
		}
	}
}
