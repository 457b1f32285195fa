package ui

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/agentreach/reach"
)

// stoppedTree is an audit log whose tree pages end short: one row, and
// the cursor of the last event the page read.
type stoppedTree struct{}

func (stoppedTree) Search(_ context.Context, q AuditQuery, _ int) ([]AuditRow, int64, error) {
	rows := []AuditRow{{Seq: 7, Time: time.Now(), Request: q.Request, Principal: "alice", Name: "refund", Decision: "ok"}}
	if !q.Tree {
		return rows, 0, nil
	}
	return rows, 12345, nil
}

func (stoppedTree) Verify(context.Context) (bool, string) { return true, "ok" }

// TestAuditTreePageStoppedShort: a tree's page that ended short of its
// rows, having read as much as one page may (the filter kept few), links
// the next page from where it stopped, so the rest is one click away;
// without tree=1 there is no such link.
func TestAuditTreePageStoppedShort(t *testing.T) {
	srv := httptest.NewServer(New(Options{Runtime: reach.New(nil), Audit: stoppedTree{}}))
	defer srv.Close()
	get := func(query string) string {
		resp, err := http.Get(srv.URL + "/ui/audit?" + query)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return string(b)
	}
	if page := get("request=r1&tree=1&tool=refund"); !strings.Contains(page, "after=12345") {
		t.Errorf("a tree's page that stopped short has no link to the next page from seq 12345:\n%s", page)
	}
	if page := get("request=r1&tool=refund"); strings.Contains(page, "after=") {
		t.Errorf("a single request's page links a next page")
	}
}
