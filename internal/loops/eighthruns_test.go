package loops

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
)

// The eighth probe: written before reading the detectors or the rules of
// docs/LOOPS.md, by agents on their frameworks' defaults with the tool
// names and answer shapes of real MCP servers the earlier probes use
// little: a support agent on a payments server (customers looked up by an
// e-mail retyped, refunds refused the same way), a filesystem agent
// (paths respelled ./a, a, /abs/a; globs reworded), a GitHub agent
// (issues searched in other words, a pull request refused on the same
// validation, commits paged), a memory-graph agent (one entity created
// again with its observations reordered), a booking agent polling
// availability, a notebook agent editing a cell trivially before each run,
// a planner delegating one subtask in other words, an agent alternating
// two tools with nothing new, a chat agent whose post fails inside a
// success, a sequential-thinking agent repeating a thought, a Kubernetes
// agent deleting a crash-looping pod whose replacement crashes the same
// way; and long legit runs (a crawler on similar pages, a batch of similar
// writes, retries after a real transient error, polls that end when the
// state changes).
//
// Half the runs are legit and half loops; each legit run is a near-miss of
// a loop. A loop is marked at the first call a careful reader would
// refuse: the fourth call that learns nothing (the third identical poll),
// or the third round of a pair of calls that learns nothing.
//
// It is written and played with the assistants probe's writer and driver
// (assistruns_test.go).

// egKnown lists the runs whose outcome is not their label's, each with why.
var egKnown = map[string]string{
	// On the guard as the probe was written (7467c74): 5 of 18 loops
	// detected, none early; 0 of 18 legit runs refused, once two legit
	// polls were corrected (each showed two identical answers before
	// moving, and the benchmark's rule lets the third be refused: 2 of 18
	// refused as first written). 11 after its fixes; 13 since a read
	// whose answer differs from the last only in what it echoes of its
	// own arguments (counters, an address's query) is the same call; 14
	// since writes to one thing (a cell), each followed by the same
	// failure, do not excuse a fourth; 16 since a read whose one file
	// path is respelled (./a, a//b, ../, its absolute path) while its
	// answer stays is the same call made again.
	// booking-rooms-reordered is caught since loops18b (alike.go): its
	// spellings are each one asked before, answered alike.
	"k8s-delete-crashloop-again": "missed",
}

func TestEighthRuns(t *testing.T) {
	checkAsRuns(t, "eighth probe", eighthRuns(), 30, egKnown)
}

// egJSON is v as a server prints it with two-space indentation
// (JSON.stringify(v, null, 2)).
func egJSON(v any) string {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		panic(err)
	}
	return string(b)
}

// egCustomers is a payments server's customer list.
func egCustomers(cs ...obj) obj {
	if cs == nil {
		cs = []obj{}
	}
	return obj{"object": "list", "url": "/v1/customers", "has_more": false, "data": cs}
}

func egCustomer(id, email, name string, created int) obj {
	return obj{"id": id, "object": "customer", "email": email, "name": name, "created": 1764800000 + created, "currency": "eur", "delinquent": false}
}

// egRefund is a refund as the payments server answers create_refund.
func egRefund(id, pi string, amount, created int) obj {
	return obj{"id": id, "object": "refund", "amount": amount, "currency": "eur", "payment_intent": pi, "status": "succeeded", "created": 1764850000 + created, "reason": "requested_by_customer"}
}

// egDir is a directory listing as the filesystem server prints it.
func egDir(entries ...string) string {
	return strings.Join(entries, "\n")
}

// egIssue is an issue as the GitHub server answers search_issues.
func egIssue(n int, title, state string, comments int, updated string) obj {
	return obj{"number": n, "title": title, "state": state, "comments": comments, "html_url": fmt.Sprintf("https://github.com/acme/api/issues/%d", n),
		"user": obj{"login": "dev" + fmt.Sprint(n%7)}, "labels": arr{obj{"name": "bug"}}, "updated_at": updated}
}

func egIssues(items ...obj) string {
	a := arr{}
	for _, i := range items {
		a = append(a, i)
	}
	return egJSON(obj{"total_count": len(items), "incomplete_results": false, "items": a})
}

// egCommits is a page of commits as the GitHub server answers list_commits.
func egCommits(page, per int) string {
	var a arr
	for i := 0; i < per; i++ {
		n := page*per + i
		sha := fmt.Sprintf("%08x%032x", 0x9e3779b9*uint32(n+1), uint64(n)*0x2545F4914F6CDD1D)
		a = append(a, obj{"sha": sha, "html_url": "https://github.com/acme/api/commit/" + sha,
			"commit": obj{"message": []string{"store: retry on serialization failure", "http: close idle conns on shutdown", "docs: config reference", "queue: bound the backlog", "deps: bump pgx"}[n%5] + fmt.Sprintf(" (#%d)", 2400-n),
				"author": obj{"name": []string{"Ana", "Bo", "Chen", "Dee"}[n%4], "date": fmt.Sprintf("2026-%02d-%02dT%02d:%02d:00Z", 11-n/28%10, 28-n%28, n%24, n*7%60)}}})
	}
	return egJSON(a)
}

// egThought is the sequential-thinking server's answer.
func egThought(n, total int, next bool) string {
	return egJSON(obj{"thoughtNumber": n, "totalThoughts": total, "nextThoughtNeeded": next, "branches": arr{}, "thoughtHistoryLength": n})
}

// egFetched is the fetch server's answer: a page as markdown, cut at max.
func egFetched(url, body string, next int) string {
	s := "Contents of " + url + ":\n" + body
	if next > 0 {
		s += fmt.Sprintf("\n\n<error>Content truncated. Call the fetch tool with a start_index of %d to get more content.</error>", next)
	}
	return s
}

// egSlack is a chat server's answer to a post: the API's JSON as text.
func egSlack(ok bool, ts, errName string) string {
	if !ok {
		return egJSON(obj{"ok": false, "error": errName, "warning": "missing_charset", "response_metadata": obj{"warnings": arr{"missing_charset"}}})
	}
	return egJSON(obj{"ok": true, "channel": "C07Q2MB4K1D", "ts": ts, "message": obj{"type": "message", "ts": ts, "bot_id": "B07Q2N11XKE"}})
}

// egAvail is a booking server's availability answer.
func egAvail(hotel, checkedAt string, rooms ...obj) string {
	a := arr{}
	for _, r := range rooms {
		a = append(a, r)
	}
	return egJSON(obj{"hotel_id": hotel, "checkin": "2026-12-18", "checkout": "2026-12-20", "rooms": a, "checked_at": checkedAt, "cache": "MISS"})
}

// egCellOut is a notebook server's answer to execute_cell.
func egCellOut(n int, outs ...string) string {
	return egJSON(obj{"execution_count": n, "outputs": outs})
}

// egPyTrace is a Python traceback as a cell prints it.
func egPyTrace(n int, frames []string, exc string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "---------------------------------------------------------------------------\n%s                                  Traceback (most recent call last)\nCell In[%d], line 3\n", strings.SplitN(exc, ":", 2)[0], n)
	for _, f := range frames {
		b.WriteString(f + "\n")
	}
	b.WriteString("\n" + exc)
	return b.String()
}
