package upstream

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/agentreach/reach/internal/config"
	"github.com/agentreach/reach/internal/redact"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// pagingServer is an MCP server (the SDK's) that lists one item a page:
// three tools, prompts, resources and resource templates.
func pagingServer() *mcp.Server {
	s := mcp.NewServer(&mcp.Implementation{Name: "pages", Version: "1"}, &mcp.ServerOptions{PageSize: 1})
	for i := range 3 {
		name := fmt.Sprintf("t%d", i)
		s.AddTool(&mcp.Tool{Name: name, InputSchema: map[string]any{"type": "object"}},
			func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
				return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: name}}}, nil
			})
		s.AddPrompt(&mcp.Prompt{Name: fmt.Sprintf("p%d", i)}, func(context.Context, *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
			return &mcp.GetPromptResult{}, nil
		})
		uri := fmt.Sprintf("file:///r%d", i)
		s.AddResource(&mcp.Resource{URI: uri, Name: uri}, func(context.Context, *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
			return &mcp.ReadResourceResult{}, nil
		})
		s.AddResourceTemplate(&mcp.ResourceTemplate{URITemplate: fmt.Sprintf("file:///d%d/{name}", i), Name: uri},
			func(context.Context, *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
				return &mcp.ReadResourceResult{}, nil
			})
	}
	return s
}

// An upstream that lists in pages has all of its pages mirrored: its tools
// offered and callable, its prompts, resources and resource templates on
// the gateway's server. The mirror read the first page of the three last
// only, and what was on the others was refused as unknown.
func TestUpstreamListedInPages(t *testing.T) {
	srv := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return pagingServer() }, nil))
	t.Cleanup(srv.Close)
	p := newPool(t, &config.Config{Upstreams: []config.Upstream{{Name: "up", URL: srv.URL}}})
	var names []string
	for _, rt := range p.Tools() {
		names = append(names, rt.Name)
	}
	slices.Sort(names)
	if want := []string{"up__t0", "up__t1", "up__t2"}; !slices.Equal(names, want) {
		t.Fatalf("tools %v, want %v", names, want)
	}
	waitUntil(t, "the mirror", func() bool { return p.Owner(true, "up__p0") != "" })
	for _, prompt := range []string{"up__p1", "up__p2"} {
		if got := p.Owner(true, prompt); got != "up" {
			t.Errorf("prompt %s mirrored from %q, want up", prompt, got)
		}
	}
	for _, uri := range []string{"file:///r1", "file:///r2", "file:///d1/{name}", "file:///d2/{name}"} {
		if got := p.Owner(false, uri); got != "up" {
			t.Errorf("resource %s mirrored from %q, want up", uri, got)
		}
	}
}

// A listing whose cursor comes back, or whose pages never end with
// nothing on them, is given up at once (the upstream then offers nothing):
// reach asked for the next page again and again until the listing's
// timeout. Each listing asks for the cursor that comes back once.
func TestUpstreamPagingBounded(t *testing.T) {
	defer func(n int) { maxEmptyPages = n }(maxEmptyPages)
	maxEmptyPages = 3
	for _, c := range []struct {
		name string
		next func(cursor string) string // the next cursor after the page at cursor
		max  int                        // pages asked past the first, a listing
	}{
		{"repeats", func(string) string { return "again" }, 1},
		{"never ends", func(c string) string { return c + "x" }, 3 + 1},
	} {
		t.Run(c.name, func(t *testing.T) {
			var mu sync.Mutex
			firsts, rest := 0, 0
			srv := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server {
				s := echoServer()
				s.AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
					return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
						if method != "tools/list" {
							return next(ctx, method, req)
						}
						cursor := req.(*mcp.ListToolsRequest).Params.Cursor
						mu.Lock()
						defer mu.Unlock()
						if cursor == "" {
							firsts++
							res, err := next(ctx, method, req)
							if err == nil {
								res.(*mcp.ListToolsResult).NextCursor = c.next("")
							}
							return res, err
						}
						rest++
						return &mcp.ListToolsResult{Tools: []*mcp.Tool{}, NextCursor: c.next(cursor)}, nil
					}
				})
				return s
			}, &mcp.StreamableHTTPOptions{Stateless: true}))
			t.Cleanup(srv.Close)
			p := newPool(t, &config.Config{Upstreams: []config.Upstream{{Name: "up", URL: srv.URL, Timeout: config.Duration(5e9)}}})
			if tools := p.Tools(); len(tools) != 0 {
				t.Fatalf("a listing that %s: %d tools offered; want none", c.name, len(tools))
			}
			mu.Lock()
			defer mu.Unlock()
			if firsts == 0 || rest > c.max*firsts {
				t.Fatalf("%d listings asked for %d pages past the first; want at most %d each", firsts, rest, c.max)
			}
		})
	}
}

// paged fails, saying why, at a cursor that comes back, past maxPages, or
// past maxEmptyPages pages with nothing on them; it ends at a page without
// a cursor.
func TestPaged(t *testing.T) {
	defer func(n, e int) { maxPages, maxEmptyPages = n, e }(maxPages, maxEmptyPages)
	maxPages, maxEmptyPages = 5, 2
	for _, c := range []struct {
		name  string
		pages []string // the cursor after each page ("" the last); a page has one item unless its cursor starts with "0"
		err   string
		asked int
	}{
		{"ends", []string{"a", "b", ""}, "", 3},
		{"repeats", []string{"a", "b", "a", ""}, "a cursor it gave before", 3},
		{"too many", []string{"a", "b", "c", "d", "e", "f", ""}, "more than 5 pages", 5},
		{"empty", []string{"0a", "0b", "0c", ""}, "more than 2 pages with nothing", 3},
	} {
		asked := 0
		err := paged(func(cursor string) (int, string, error) {
			next := c.pages[asked]
			asked++
			if strings.HasPrefix(next, "0") {
				return 0, next, nil
			}
			return 1, next, nil
		})
		if c.err == "" && err != nil || c.err != "" && (err == nil || !strings.Contains(err.Error(), c.err)) || asked != c.asked {
			t.Errorf("%s: %v after %d pages; want %q after %d", c.name, err, asked, c.err, c.asked)
		}
	}
}

// An upstream's status (/healthz, which answers anyone, and the banner)
// quotes what the upstream answered when it failed, cut to maxStatusError
// bytes with its secrets masked: an upstream that answered initialize with
// an error of 4 MiB had /healthz answer 4 MiB on every hit.
func TestUpstreamStatusErrorBounded(t *testing.T) {
	srv := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server {
		s := echoServer()
		s.AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
			return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
				if method == "initialize" {
					return nil, fmt.Errorf("no session today: sk-SECRET1234 %s", strings.Repeat("e", 4<<20))
				}
				return next(ctx, method, req)
			}
		})
		return s
	}, &mcp.StreamableHTTPOptions{Stateless: true}))
	t.Cleanup(srv.Close)
	red, err := redact.New(&redact.Options{Secrets: []string{"sk-SECRET1234"}})
	if err != nil {
		t.Fatal(err)
	}
	p := newPoolMasking(t, &config.Config{Upstreams: []config.Upstream{{Name: "up", URL: srv.URL}}}, red)
	st := p.Statuses()[0]
	if st.Error == "" || !strings.Contains(st.Error, "no session today") || len(st.Error) > maxStatusError+len("…") || strings.Contains(st.Error, "SECRET") {
		t.Fatalf("status error of %d bytes, starting %.120q; want the upstream's text, masked, in at most %d", len(st.Error), st.Error, maxStatusError)
	}
}

// A prompt whose name (as exposed) is longer than 128 bytes or holds a
// control or format character is not mirrored, the others are: a
// right-to-left override showed a prompt's name as another, its upstream's
// prefix hidden at its end, to every client.
func TestMirroredPromptNames(t *testing.T) {
	s := mcp.NewServer(&mcp.Implementation{Name: "names", Version: "1"}, nil)
	for _, name := range []string{"review code", "évaluer", "evil\u202etxt.exe", "zero\u200bwidth", "new\nline", strings.Repeat("p", 200)} {
		s.AddPrompt(&mcp.Prompt{Name: name}, func(context.Context, *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
			return &mcp.GetPromptResult{}, nil
		})
	}
	srv := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, nil))
	t.Cleanup(srv.Close)
	p := newPool(t, &config.Config{Upstreams: []config.Upstream{{Name: "up", URL: srv.URL}}})
	waitUntil(t, "the mirror", func() bool { return p.Owner(true, "up__review code") != "" })
	if p.Owner(true, "up__évaluer") != "up" {
		t.Error("prompt up__évaluer not mirrored")
	}
	for _, name := range []string{"evil\u202etxt.exe", "zero\u200bwidth", "new\nline", strings.Repeat("p", 200)} {
		if got := p.Owner(true, "up__"+name); got != "" {
			t.Errorf("prompt %.40q mirrored from %q; want none", name, got)
		}
	}
}

// Resources and resource templates are checked as prompts' names are: one
// whose URI or name is too long or holds a control or format character,
// or whose URI the MCP server cannot parse, is not mirrored, the others
// are. A URI that url.Parse refuses (or a template the URI templates'
// parser does) made the gateway's server panic, the gateway gone with it.
func TestMirroredResourceNames(t *testing.T) {
	good := []*mcp.Resource{{URI: "file:///ok.txt", Name: "ok"}, {URI: "file:///évalué.txt", Name: "évalué"}}
	bad := []*mcp.Resource{
		{URI: "file:///bad%zz", Name: "escape"},
		{URI: "file:///a\x01b", Name: "control"},
		{URI: "file:///rtl", Name: "evil\u202etxt.exe"},
		{URI: "file:///" + strings.Repeat("u", 3000), Name: "long uri"},
		{URI: "file:///longname", Name: strings.Repeat("n", 300)},
		{URI: "", Name: "empty"},
	}
	goodT := []*mcp.ResourceTemplate{{URITemplate: "file:///t/{name}", Name: "t"}}
	badT := []*mcp.ResourceTemplate{{URITemplate: "file:///t/{unclosed", Name: "unclosed"}, {URITemplate: "file:///z/{x}", Name: "zero\u200bwidth"}}
	s := echoServer()
	s.AddResource(&mcp.Resource{URI: "file:///seed", Name: "seed"}, func(context.Context, *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
		return &mcp.ReadResourceResult{}, nil
	})
	s.AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			switch method {
			case "resources/list":
				return &mcp.ListResourcesResult{Resources: append(slices.Clone(bad), good...)}, nil
			case "resources/templates/list":
				return &mcp.ListResourceTemplatesResult{ResourceTemplates: append(slices.Clone(badT), goodT...)}, nil
			}
			return next(ctx, method, req)
		}
	})
	srv := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, nil))
	t.Cleanup(srv.Close)
	p := newPool(t, &config.Config{Upstreams: []config.Upstream{{Name: "up", URL: srv.URL}}})
	waitUntil(t, "the mirror", func() bool { return p.Owner(false, "file:///ok.txt") != "" })
	for _, r := range good[1:] {
		if p.Owner(false, r.URI) != "up" {
			t.Errorf("resource %q not mirrored", r.URI)
		}
	}
	for _, r := range bad {
		if got := p.Owner(false, r.URI); got != "" {
			t.Errorf("resource %.40q (%.40q) mirrored from %q; want none", r.URI, r.Name, got)
		}
	}
	if p.Owner(false, goodT[0].URITemplate) != "up" {
		t.Errorf("resource template %q not mirrored", goodT[0].URITemplate)
	}
	for _, rt := range badT {
		if got := p.Owner(false, rt.URITemplate); got != "" {
			t.Errorf("resource template %q (%q) mirrored from %q; want none", rt.URITemplate, rt.Name, got)
		}
	}
}
