package loops

import (
	"fmt"
	"strings"
	"testing"
)

// The seventh probe: written before reading the detectors or the rules of
// docs/LOOPS.md, by agents on their frameworks' defaults with the tool
// names and answer shapes of real MCP servers: a coding agent on a CLI
// harness's Bash, Grep, Read and Edit (ripgrep patterns respelled, builds
// whose logs differ only in timestamps, PIDs and temporary directories), a
// Kubernetes agent watching a rollout that progresses or is stuck (the same
// pods, their ages growing), a data agent paging through a table (by its
// offset, or the first page again under another page size), a calendar and
// mail assistant, a browser agent on a Playwright server whose snapshots
// renumber their refs, a research agent whose reworded searches find the
// same sources, a notebook agent whose errors come back as a cell's
// output, a Jira agent, a CI agent re-running workflows, and a lead
// handing work to a sub-agent.
//
// Half the runs are legit and half loops; each legit run is a near-miss of
// a loop (progress that looks like repetition). A loop is marked at the
// first call a careful reader would refuse: the fourth call that learns
// nothing, or the second round of a state flipped back and forth.

// The seventh probe is written and played with the assistants probe's
// writer and driver (assistruns_test.go), under its own names.
type (
	svCall = asCall
	svw    = asw
	svRun  = asRun
)

var (
	svRunOf = asRunOf
	svOK    = asOK
	svFail  = asFail
)

// svKnown lists the runs whose outcome is not their label's, each with why.
var svKnown = map[string]string{
	// On the guard as the probe was written (dca6b2c): 5 of 18 loops
	// detected, none early; 0 of 16 legit runs refused. Then two
	// corrections of the probe itself, not of the guard: kubectl's ages
	// were written as minutes past three hours ("1440m", read as
	// millicores), where kubectl writes "24h"; and the stuck rollout's
	// mark was at its fourth identical poll, where the benchmark's rule
	// allows the third. With them, 6 of 18 on that guard.
	"coding-edits-same-failure": "missed",
	// coding-grep-respelled is caught since loops18b: a pattern
	// respelled in words its streak of answers alike used (alike.go).
	"browser-submit-invalid": "missed",
	"sql-count-respelled":    "missed",
	"k8s-scale-fights-hpa":   "missed",
	"ci-rerun-same-failure":  "missed",
}

func TestSeventhRuns(t *testing.T) {
	checkAsRuns(t, "seventh probe", seventhRuns(), 28, svKnown)
}

// svClock is a wall-clock time seconds after 14:02:07.
func svClock(sec int) string {
	s := 14*3600 + 2*60 + 7 + sec
	return fmt.Sprintf("%02d:%02d:%02d", s/3600, s/60%60, s%60)
}

// svAge is a kubectl age, as kubectl writes a duration (HumanDuration).
func svAge(sec int) string {
	m, h := sec/60, sec/3600
	switch {
	case sec < 120:
		return fmt.Sprintf("%ds", sec)
	case m < 10 && sec%60 == 0:
		return fmt.Sprintf("%dm", m)
	case m < 10:
		return fmt.Sprintf("%dm%ds", m, sec%60)
	case m < 180:
		return fmt.Sprintf("%dm", m)
	case h < 8 && m%60 == 0:
		return fmt.Sprintf("%dh", h)
	case h < 8:
		return fmt.Sprintf("%dh%dm", h, m%60)
	case h < 48:
		return fmt.Sprintf("%dh", h)
	case h < 192 && h%24 == 0:
		return fmt.Sprintf("%dd", h/24)
	case h < 192:
		return fmt.Sprintf("%dd%dh", h/24, h%24)
	}
	return fmt.Sprintf("%dd", h/24)
}

type svPod struct {
	name, ready, status string
	restarts, age       int
	ip, node            string
}

// svPods is a pods listing as the Kubernetes server prints it.
func svPods(pods ...svPod) string {
	var b strings.Builder
	b.WriteString("NAME                            READY   STATUS              RESTARTS   AGE     IP            NODE\n")
	for _, p := range pods {
		ip := p.ip
		if ip == "" {
			ip = "<none>"
		}
		fmt.Fprintf(&b, "%-31s %-7s %-19s %-10d %-7s %-13s %s\n", p.name, p.ready, p.status, p.restarts, svAge(p.age), ip, p.node)
	}
	return b.String()
}

// svDeploy is a Deployment as the Kubernetes server answers resources_get.
func svDeploy(gen, observed, replicas, updated, ready, available int, progressing, reason, msg, updatedAt string) string {
	return fmt.Sprintf(`apiVersion: apps/v1
kind: Deployment
metadata:
  name: checkout
  namespace: shop
  generation: %d
  resourceVersion: "%d"
spec:
  replicas: %d
  strategy:
    rollingUpdate: {maxSurge: 25%%, maxUnavailable: 25%%}
  template:
    spec:
      containers:
      - name: checkout
        image: registry.example.com/shop/checkout:2.14.0
status:
  observedGeneration: %d
  replicas: %d
  updatedReplicas: %d
  readyReplicas: %d
  availableReplicas: %d
  conditions:
  - type: Available
    status: "True"
  - type: Progressing
    status: "%s"
    reason: %s
    message: %s
    lastUpdateTime: "2026-12-04T%s+00:00"
`, gen, 88120400+updated*37+ready*11, replicas, observed, replicas+1, updated, ready, available, progressing, reason, msg, updatedAt)
}

// svSnap is a Playwright snapshot: the page's URL and title, and its
// elements numbered from ref.
func svSnap(url, title string, ref int, lines ...string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "### Page state\n- Page URL: %s\n- Page Title: %s\n- Page Snapshot:\n```yaml\n- generic [ref=e%d]:\n", url, title, ref)
	for i, l := range lines {
		fmt.Fprintf(&b, "  - %s [ref=e%d]\n", l, ref+1+i)
	}
	b.WriteString("```")
	return b.String()
}

// svMail is a message as the Gmail server lists it.
func svMail(id, subject, from, date string) string {
	return fmt.Sprintf("ID: %s\nSubject: %s\nFrom: %s\nDate: %s\n", id, subject, from, date)
}

// svResults is a Tavily search's answer.
func svResults(q string, ms float64, hits ...obj) obj {
	return obj{"query": q, "follow_up_questions": nil, "answer": nil, "images": arr{}, "results": hits, "response_time": ms}
}

func svHit(title, url, content string, score float64) obj {
	return obj{"title": title, "url": url, "content": content, "score": score, "raw_content": nil}
}

// svRecords is an Airtable page of orders from n, and the offset of the
// next page ("" at the end).
func svRecords(from, n int, next string) obj {
	var rs arr
	for i := from; i < from+n; i++ {
		rs = append(rs, obj{"id": fmt.Sprintf("rec%014X", 0x5A1F00+i*7919), "createdTime": fmt.Sprintf("2026-11-%02dT%02d:%02d:00.000Z", 1+i%28, i%24, i*7%60),
			"fields": obj{"Order": fmt.Sprintf("SO-%05d", 20000+i), "Customer": fmt.Sprintf("Customer %d", i*13%97), "Total": fmt.Sprintf("%d.%02d", 20+i*37%400, i*11%100), "Status": []string{"Paid", "Shipped", "Refunded", "Paid"}[i%4]}})
	}
	o := obj{"records": rs}
	if next != "" {
		o["offset"] = next
	}
	return o
}

// svGoBuild is a build's log: its timestamps, PID and work directory move
// from run to run, its errors are errs.
func svGoBuild(run int, errs ...string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "[%s] make[1]: Entering directory '/repo' (pid %d)\n", svClock(run*41), 48211+run*173)
	fmt.Fprintf(&b, "[%s] go build -o bin/api ./cmd/api\nWORK=/tmp/go-build%d\n", svClock(run*41+1), 2219043871+run*7723)
	if len(errs) == 0 {
		fmt.Fprintf(&b, "[%s] built bin/api in %d.%02ds\n", svClock(run*41+9), 8+run%3, run*17%100)
		return b.String()
	}
	b.WriteString("# github.com/acme/api/internal/store\n")
	for _, e := range errs {
		b.WriteString(e + "\n")
	}
	fmt.Fprintf(&b, "[%s] make: *** [Makefile:14: build] Error 1 (%d.%02ds)", svClock(run*41+6), 5+run%2, run*29%100)
	return b.String()
}

// svCell is a notebook cell's output as the Jupyter server answers it.
func svCell(n int, out ...string) arr {
	r := arr{}
	for _, o := range out {
		r = append(r, o)
	}
	return arr{obj{"execution_count": n, "outputs": r}}
}

// svTrace is a Python exception printed as a cell's output.
func svTrace(n int, line, exc string) string {
	return fmt.Sprintf("---------------------------------------------------------------------------\n%s                                  Traceback (most recent call last)\nCell In[%d], line 1\n----> 1 %s\n\n%s", strings.SplitN(exc, ":", 2)[0], n, line, exc)
}
