package loops

import (
	"fmt"
	"strings"
	"testing"
)

// The twelfth probe: written before reading the detectors or the rules
// of docs/LOOPS.md, by agents on their frameworks' defaults (@openai/agents
// with its hand-offs, LangGraph's ReAct agent, the AI SDK's maxSteps loop)
// with the tool names and answer shapes of real MCP servers, in domains
// and shapes the eleven before it cover little: a browser agent (Playwright
// and Puppeteer: one button clicked under other descriptions and refs
// while the page stays, a page reloaded with cache-busting parameters, a
// form re-typed in other formats over the same validation error, a wait
// stretched, a selector respelled in a script; legit: a wizard's Next
// clicked step by step, a form fixed field by field), a knowledge-graph
// agent (an entity created again with its observations reworded, a
// search and an open alternated over an empty graph), a Slack agent
// nudging a channel and re-reading it, a fetch agent in a redirect ring
// and on a site whose robots.txt refuses it, a Sentry agent re-querying
// one issue over other windows, a Kubernetes agent deleting a crashing
// pod and describing it again under its new hash, a git agent asking for
// more commits than there are, a filesystem agent searching a file under
// patterns respelled and reading a short file under longer heads, a
// SQLite agent respelling a query's case and spacing, a GitHub agent
// filing the same issue under reworded titles, and a planner
// re-delegating one sub-task paraphrased; legit: a bisect (the same two
// commands, a new answer each time), a tree walked, 100 pages paginated,
// a CI run polled until it finishes, retries that succeed, one question
// cross-checked on two tools, a long page read by start_index.
//
// Half the runs are legit and half loops; each legit run is a near-miss of
// a loop. A loop is marked as the ninth probe marks them: the fourth call
// that asks again in other words and learns nothing, the third identical
// poll or write, the third round of a pair or ring of calls that learns
// nothing.
//
// It is written and played with the assistants probe's writer and driver
// (assistruns_test.go).

// twKnown lists the runs whose outcome is not their label's, each with why.
var twKnown = map[string]string{
	// On the guard as the probe was written (a424ade): 9 of 18 loops
	// detected, none early; 2 of 18 legit runs refused. 12 since an
	// answer's key that is an expression (a column labelled COUNT(*) as
	// the query wrote it) is read in one case and spacing, a file
	// search's pattern without a star as the words it matches, and one
	// ref described otherwise at each click is the one button clicked
	// again (twelfth_keys.go).
	//
	// The two legit runs refused are refused by the benchmark's one rule:
	// a read made a third time after two answers alike with no write
	// between. A channel read a third time before its reply came (the
	// tenth probe's note: whatever else moved); a bisect's test run, whose
	// shell tool the probe, as the eleventh does, declares a read: through
	// the gateway a tool without readOnlyHint is a write, and the run
	// goes on (played so, it is not refused).
	"slack-reply-arrives":   "false_kill",
	"git-bisect-regression": "false_kill",
	// A script's selector respelled, each answering null, is a candidate
	// tried one by one as a path is (never a streak, by design).
	"puppeteer-selector-respelled-null": "missed",
	// Left: a value retyped in other formats (its digits the same) with
	// a click after each, the page echoing it; an entity created again
	// with its observations reworded and its type changed, answered []; a
	// channel nudged in other words, its history holding only the nudges;
	// a crashing pod deleted and described again under its new hash (its
	// start time and IP new); one bug filed again under reworded titles.
	"browser-phone-reformatted-same-error": "missed",
	"memory-entity-recreated-reworded":     "missed",
	"slack-nudge-reread-no-reply":          "missed",
	"k8s-pod-deleted-described-new-hash":   "missed",
	"github-same-issue-filed-reworded":     "missed",
}

func TestTwelfthRuns(t *testing.T) {
	checkAsRuns(t, "twelfth probe", twelfthRuns(), 30, twKnown)
}

// twPW is Playwright MCP's answer to an action: the code it ran, then the
// page's state as an accessibility snapshot.
func twPW(code, url, title, snap string) string {
	return "### Ran Playwright code\n```js\n" + code + "\n```\n\n### Page state\n- Page URL: " + url + "\n- Page Title: " + title + "\n- Page Snapshot:\n```yaml\n" + snap + "\n```"
}

// twCheckout is the checkout page's snapshot, with an alert when alert is
// not empty.
func twCheckout(alert string) string {
	s := `- generic [ref=e2]:
  - banner [ref=e3]:
    - link "Shop" [ref=e4] [cursor=pointer]:
      - /url: /
  - main [ref=e10]:
    - heading "Checkout" [level=1] [ref=e11]
    - group "Shipping" [ref=e20]:
      - textbox "Full name" [ref=e21]: Ana Ruiz
      - textbox "Phone" [ref=e22]: 555 0100
      - textbox "Postcode" [ref=e23]: 1000-001
    - checkbox "I accept the terms and conditions" [ref=e30]
    - text: Total €129.00`
	if alert != "" {
		s += "\n    - alert [ref=e35]: " + alert
	}
	return s + "\n    - button \"Place order\" [ref=e42] [cursor=pointer]"
}

// twSlackMsg is one message of a channel's history.
func twSlackMsg(user, text string, ts int) obj {
	return obj{"type": "message", "user": user, "text": text, "ts": fmt.Sprintf("1764900%03d.%06d", ts, 100+ts*37)}
}

// twSlackHistory is the Slack server's answer to slack_get_channel_history.
func twSlackHistory(msgs ...obj) string {
	a := arr{}
	for i := len(msgs) - 1; i >= 0; i-- {
		a = append(a, msgs[i])
	}
	return egJSON(obj{"ok": true, "messages": a, "has_more": false, "pin_count": 0, "response_metadata": obj{"next_cursor": ""}})
}

// twSentryEvents is the Sentry server's answer listing an issue's events.
func twSentryEvents(issue string, n int, last string) string {
	return fmt.Sprintf("# Issue %s: TypeError: Cannot read properties of undefined (reading 'currency')\n\n**Project**: checkout-web\n**Status**: unresolved\n**Events**: %d\n**Users affected**: %d\n**First seen**: 2026-11-28T09:12:44Z\n**Last seen**: %s\n\n## Stacktrace\n```\nat formatTotal (src/cart/total.ts:41:18)\nat CartSummary (src/cart/Summary.tsx:22:9)\n```\n\n# Using this information\n- You can reference the IssueID in commit messages (e.g. `Fixes %s`) to automatically close the issue when the commit is merged.", issue, n, n/3+1, last, issue)
}

// twDescribe is kubectl describe pod's text for one pod.
func twDescribe(name, status, reason string, age int, events ...string) string {
	return fmt.Sprintf("Name:             %s\nNamespace:        shop\nPriority:         0\nNode:             worker-2/10.0.3.14\nStart Time:       Sat, 05 Dec 2026 02:%02d:%02d +0000\nLabels:           app=checkout\n                  pod-template-hash=7d9f6c\nStatus:           %s\nIP:               10.244.2.%d\nControlled By:    ReplicaSet/checkout-7d9f6c\nContainers:\n  checkout:\n    Image:          registry.example/shop/checkout:1.14.2\n    State:          Waiting\n      Reason:       %s\nEvents:\n  Type     Reason     Age   From               Message\n  ----     ------     ----  ----               -------\n%s",
		name, 10+age/60, age%60, status, 17+age%200, reason, strings.Join(events, "\n"))
}

// twFetchChunk is the fetch server's answer to a page read from start.
func twFetchChunk(url string, start, size, total int) string {
	var b strings.Builder
	fmt.Fprintf(&b, "Contents of %s:\n", url)
	for i := start / 250; i < (start+size)/250 && i*250 < total; i++ {
		fmt.Fprintf(&b, "## Section %d\nThe handbook's rule %d.%d covers expense claims of category %c, submitted within %d days.\n", i+1, i/7+1, i%7+1, 'A'+rune(i%9), 14+i%30)
	}
	if start+size < total {
		fmt.Fprintf(&b, "\n<error>Content truncated. Call the fetch tool with a start_index of %d to get more content.</error>", start+size)
	}
	return b.String()
}

// twCommits is the GitHub server's list_commits page.
func twCommits(page int) string {
	a := arr{}
	for i := 0; i < 30; i++ {
		n := page*30 + i
		a = append(a, obj{"sha": fmt.Sprintf("%040x", uint64(n+1)*0x9E3779B97F4A7C15), "commit": obj{"message": fmt.Sprintf("change %d: %s", 3000-n, []string{"fix cart rounding", "bump deps", "docs: api", "refactor totals", "test: checkout"}[n%5]), "author": obj{"name": []string{"ana", "bo", "chen"}[n%3], "date": fmt.Sprintf("2026-%02d-%02dT10:00:00Z", 12-n/300, 28-n%28)}}})
	}
	return egJSON(a)
}
