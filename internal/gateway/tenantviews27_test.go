package gateway

import (
	"fmt"
	"github.com/agentreach/reach/internal/audit"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

// toolsPageCalls reads the calls column of tool's row on the UI's tools
// page as who sees it, -1 for an empty cell.
func toolsPageCalls(t *testing.T, srvURL, key, tool string) (calls int, page string) {
	t.Helper()
	status, page := rawAs(t, key, "GET", srvURL+"/ui/tools", "")
	if status != 200 {
		t.Fatalf("GET /ui/tools = %d %.300s", status, page)
	}
	m := regexp.MustCompile(`<b>` + regexp.QuoteMeta(tool) + `</b>.*?<td class="breaker">.*?</td><td>(\d*)</td>`).FindStringSubmatch(page)
	if m == nil {
		t.Fatalf("the tools page has no row of %s: %.2000s", tool, page)
	}
	if m[1] == "" {
		return -1, page
	}
	n, _ := strconv.Atoi(m[1])
	return n, page
}

// statsCalls reads tool's calls in GET /v1/stats as who sees it.
func statsCalls(t *testing.T, srvURL, key, tool string) (int, map[string]any) {
	t.Helper()
	status, out := do(t, "GET", srvURL+"/v1/stats", "", map[string]string{"Authorization": "Bearer " + key})
	if status != 200 {
		t.Fatalf("GET /v1/stats = %d %v", status, out)
	}
	for _, s := range out["tools"].([]any) {
		if path(s, "tool") == tool {
			return int(path(s, "calls").(float64)), out
		}
	}
	return 0, out
}

// TestTenantOperatorToolsFigures: the UI's tools page and GET /v1/stats
// of an operator of tenant acme count the calls of acme's requests only;
// an operator of no tenant counts every tenant's; a principal who is no
// operator sees the tools without figures (they count other principals'
// calls). Before, the tools page showed every tenant's calls to anyone
// signed in, and GET /v1/stats answered acme's operator 403.
func TestTenantOperatorToolsFigures(t *testing.T) {
	_, srvURL, keys := tenantOpsGateway(t)
	// Each trip reserved once; globex reserves five more times.
	for i := range 5 {
		body := fmt.Sprintf(`{"request_id":"globex-more","tool_calls":[{"call_id":"m%d","tool":"reserve","arguments":{"seat":"%dB"}}]}`, i, i)
		if status, out := do(t, "POST", srvURL+"/v1/calls", body, map[string]string{"Authorization": "Bearer " + keys["alice@globex"]}); status != 200 {
			t.Fatalf("globex's call = %d %v", status, out)
		}
	}
	if n, out := statsCalls(t, srvURL, keys["root"], "reserve"); n != 7 {
		t.Fatalf("root's GET /v1/stats counts %d calls of reserve, want 7: %v", n, out)
	}
	if n, _ := toolsPageCalls(t, srvURL, keys["root"], "reserve"); n != 7 {
		t.Errorf("root's tools page counts %d calls of reserve, want every tenant's 7", n)
	}
	n, page := toolsPageCalls(t, srvURL, keys["ops@acme"], "reserve")
	if n != 1 {
		t.Errorf("ops@acme's tools page counts %d calls of reserve, want acme's 1", n)
	}
	if !strings.Contains(page, "tenant acme") {
		t.Errorf("ops@acme's tools page does not say whose calls it counts: %.2000s", page)
	}
	if n, out := statsCalls(t, srvURL, keys["ops@acme"], "reserve"); n != 1 || out["tenant"] != "acme" {
		t.Errorf("ops@acme's GET /v1/stats counts %d calls of reserve (%v), want acme's 1", n, out)
	} else if since, err := time.Parse(time.RFC3339Nano, fmt.Sprint(out["since"])); err != nil || since.After(time.Now()) {
		t.Errorf("ops@acme's GET /v1/stats says its figures count since %v (%v), want a time before now", out["since"], err)
	}
	if !regexp.MustCompile(`tenant acme(?:'|&#39;)s requests since \d{4}-\d\d-\d\dT`).MatchString(page) {
		t.Errorf("ops@acme's tools page does not say since when its figures count: %.2000s", page)
	}
	if n, page := toolsPageCalls(t, srvURL, keys["alice@acme"], "reserve"); n != -1 || !strings.Contains(page, "for operators") {
		t.Errorf("alice@acme's tools page counts %d calls of reserve, want no figures and why", n)
	}
	if status, body := rawAs(t, keys["alice@acme"], "GET", srvURL+"/v1/stats", ""); status != http.StatusForbidden {
		t.Errorf("alice@acme GET /v1/stats = %d %.200s, want 403", status, body)
	}
}

// TestTenantOperatorAuditPageIndexed: under more than 10,000 events of
// another tenant, a tenant operator's recent page (no other filter) has
// its tenant's events, found by the store's tenant index, and no cursor.
// Before, the page read the 10,000 newest records, found none of acme's
// and ended short with a cursor to read on from.
func TestTenantOperatorAuditPageIndexed(t *testing.T) {
	g, srvURL, keys := tenantOpsGateway(t)
	fillAudit(t, g, "globex", 10050)
	status, out := do(t, "GET", srvURL+"/v1/audit", "", map[string]string{"Authorization": "Bearer " + keys["ops@acme"]})
	evs, _ := out["events"].([]any)
	if status != 200 || len(evs) == 0 || out["before"] != nil {
		t.Fatalf("ops@acme GET /v1/audit = %d, %d events, before %v; want acme's events, no cursor", status, len(evs), out["before"])
	}
	for _, e := range evs {
		if path(e, "event", "tenant") != "acme" {
			t.Fatalf("ops@acme's page has %v", e)
		}
	}
	if _, page := rawAs(t, keys["ops@acme"], "GET", srvURL+"/ui/audit", ""); !strings.Contains(page, ">acme-trip<") || strings.Contains(page, "/ui/audit?before=") {
		t.Errorf("ops@acme's UI audit page: acme-trip's rows %v, a link to older events %v; want rows, no link",
			strings.Contains(page, ">acme-trip<"), strings.Contains(page, "/ui/audit?before="))
	}
}

// fillAudit appends n events of tenant's alice to g's audit log, eight at
// a time so that the log commits them in groups.
func fillAudit(t *testing.T, g *Gateway, tenant string, n int) {
	t.Helper()
	work := make(chan int)
	errs := make(chan error, 8)
	for range 8 {
		go func() {
			var err error
			for i := range work {
				if err == nil {
					_, err = g.audit.Append(t.Context(), &audit.Event{Kind: "tool", Name: "reserve", Principal: "alice", Tenant: tenant, Request: fmt.Sprintf("%s-fill-%d", tenant, i)})
				}
			}
			errs <- err
		}()
	}
	for i := range n {
		work <- i
	}
	close(work)
	for range 8 {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
}

// TestTenantOperatorAuditVerify: the audit chain's verification tells a
// global operator how many events the log holds and its head, which count
// and change with every tenant's events; a tenant's operator and a
// principal of a tenant are told whether it verifies. Before, anyone
// signed in read the count of every tenant's events.
func TestTenantOperatorAuditVerify(t *testing.T) {
	_, srvURL, keys := tenantOpsGateway(t)
	for who, full := range map[string]bool{"root": true, "ops@acme": false, "alice@acme": false} {
		status, out := do(t, "GET", srvURL+"/v1/audit/verify", "", map[string]string{"Authorization": "Bearer " + keys[who]})
		msg, _ := out["message"].(string)
		if status != 200 || out["ok"] != true || strings.Contains(msg, " events, head ") != full {
			t.Errorf("%s: GET /v1/audit/verify = %d %v; want ok, the figures %v", who, status, out, full)
		}
		if _, page := rawAs(t, keys[who], "GET", srvURL+"/ui/audit", ""); strings.Contains(page, " events, head ") != full {
			t.Errorf("%s's UI audit page shows the log's figures: %v, want %v", who, !full, full)
		}
	}
}
