package ui

import (
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"

	"github.com/agentreach/reach"
)

// TestRequestIDsInPaths: a request id is the client's (any printable
// text), and the UI writes it into the paths of its links and forms. Put
// there as it is, its dot segments, '?' and '#' are the browser's to
// resolve: the Stop buttons of a request named r1?x stopped request r1
// (found with chromium against reach serve), its link in the list led to
// r1's page, and, served by this handler alone (reach serve cleans the
// path first), a request named x/../../approvals/ap1/approve had Stop
// buttons that posted to that approval's Approve with the viewer's form
// token. Each link and form now leads to the request it names.
func TestRequestIDsInPaths(t *testing.T) {
	srv, rt, _, _ := setup(t)
	ids := []string{"x/../../approvals/ap1/approve", "%2e%2e/%2e%2e/approvals/ap1/approve", "r1?fold=1#graph", "team/a b/7"}
	for _, id := range ids {
		_, req, err := rt.Begin(t.Context(), &reach.RequestOptions{ID: id, Principal: "alice", Budget: &reach.Budget{ToolCalls: 10}})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(req.End)
	}
	attr := regexp.MustCompile(`(href|action)="([^"]*)"`)
	// resolved returns the paths (decoded, as the server routes them) that
	// the page's links and forms under prefix lead to, as a browser
	// resolves them against the page's address.
	resolved := func(pageURL, page, prefix string) []string {
		base, _ := url.Parse(pageURL)
		var out []string
		for _, m := range attr.FindAllStringSubmatch(page, -1) {
			ref, err := url.Parse(strings.ReplaceAll(m[2], "&amp;", "&"))
			if err != nil {
				t.Fatalf("%s=%q: %v", m[1], m[2], err)
			}
			u := base.ResolveReference(ref)
			if strings.HasPrefix(m[2], prefix) || strings.HasPrefix(u.Path, prefix) {
				out = append(out, u.Path)
			}
		}
		return out
	}
	list := get(t, srv.URL+"/ui/")
	got := map[string]bool{}
	for _, p := range resolved(srv.URL+"/ui/", list, "/ui/requests/") {
		got[p] = true
	}
	for _, id := range ids {
		if !got["/ui/requests/"+id] {
			t.Errorf("the requests page links to no page of request %q; its links lead to %v", id, got)
		}
	}
	for _, id := range ids {
		pageURL := srv.URL + "/ui/requests/" + url.PathEscape(id)
		resp, err := http.Get(pageURL)
		if err != nil {
			t.Fatal(err)
		}
		page := readAll(resp)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("the page of request %q: %s", id, resp.Status)
		}
		stops := 0
		for m := range strings.SplitSeq(page, "<form") {
			a := regexp.MustCompile(`action="([^"]*)"`).FindStringSubmatch(m)
			if a == nil || !strings.Contains(m, `name="mode"`) {
				continue
			}
			stops++
			ps := resolved(pageURL, `action="`+a[1]+`"`, "")
			if len(ps) != 1 || ps[0] != "/ui/stop/"+id {
				t.Errorf("a Stop form of request %q posts to %v, want /ui/stop/%s", id, ps, id)
			}
		}
		if stops == 0 {
			t.Errorf("the page of request %q has no Stop form", id)
		}
	}
}

// TestRequestsPathLeadsToList: /ui/requests (the address a user guesses
// from the Requests link) showed "no request "" of yours" with a 404; it
// leads to the requests page.
func TestRequestsPathLeadsToList(t *testing.T) {
	srv, _, _, _ := setup(t)
	for _, p := range []string{"/ui/requests", "/ui/requests/"} {
		resp, err := http.Get(srv.URL + p)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK || resp.Request.URL.Path != "/ui/" {
			t.Errorf("GET %s: %d at %s, want 200 at /ui/ (the requests page)", p, resp.StatusCode, resp.Request.URL.Path)
		}
	}
}
