package loops

import (
	"fmt"
	"strings"
	"testing"
)

// The ninth probe: written before reading the detectors or the rules of
// docs/LOOPS.md, by agents on their frameworks' defaults (@openai/agents,
// LangGraph's ReAct agent, the AI SDK's maxSteps loop) with the tool names
// and answer shapes of real MCP servers: a browser agent on playwright-mcp
// (a click that does nothing while the snapshot's refs renumber, a wait
// that times out whatever its length), a CRM and spreadsheet agent (a
// name spelt other ways finding the same wrong contact, a row appended
// again, a stage flipped back and forth), a chat and mail agent (a post
// refused on the same missing scope under a channel respelled, a draft
// written again), a code agent (a patch re-indented and rejected on the
// same context, trivial edits before the same failing test, a workflow
// re-run to the same failure), a cloud agent (one database described by
// its name and its ARN in turn, a service polled whose only change is its
// request id), a research agent (synonyms finding the same results
// reordered, a vector store asked in other words), a planner handing the
// same brief back and forth, a weather tool refused on the same schema
// error, a Kubernetes agent alternating logs and status; and long legit
// runs (a form filled field by field, 40 rows updated, channels paged by
// cursor, failures that shrink, stack events that grow, a migration over
// 200 tables, an export paged, retries after a real 503 that then
// succeed).
//
// Half the runs are legit and half loops; each legit run is a near-miss of
// a loop. A loop is marked at the first call a careful reader would
// refuse: the fourth call that learns nothing (the third identical poll,
// the third identical write), or the third round of a pair of calls that
// learns nothing.
//
// It is written and played with the assistants probe's writer and driver
// (assistruns_test.go).

// nnKnown lists the runs whose outcome is not their label's, each with why.
var nnKnown = map[string]string{
	// On the guard as the probe was written (cbd5140): 9 of 18 loops
	// detected, none early; 2 of 22 legit runs refused, both corrected
	// since (a 503 typed as the runtime types it, unavailable; a pod's
	// status that showed 0/1 Running twice before moving). 10 since a
	// sub-agent that asks the same question back to a reworded task ends
	// its rounds the same way; 11 since a line of an answer that echoes
	// the call's free text beside other words is read without it; 12
	// since a click on one element described in words, under the ref each
	// snapshot gives it, is one write made again. 14 since a write cycle
	// whose answers move only in a count going up by one step, a stamp or
	// an id is the same cycle (loops16b); 15 since one record found
	// again, named by its identifier, ties askings as records do. The
	// click under renumbered refs is refused one click after its mark
	// since loops16c (a click's page shows what it started at the next
	// call), still detected. 16 since loops20: one draft created again
	// reworded, each answered alike but for its id (rewrite.go).
	"crm-stage-flip-flop":             "missed",
	"code-trivial-edits-same-failure": "missed",
}

func TestNinthRuns(t *testing.T) {
	checkAsRuns(t, "ninth probe", ninthRuns(), 30, nnKnown)
}

// nnPW is playwright-mcp's answer to an action: the code it ran, then the
// page's state with its elements numbered from ref.
func nnPW(code, url, title string, ref int, lines ...string) string {
	return "### Ran Playwright code\n```js\n" + code + "\n```\n\n" + svSnap(url, title, ref, lines...)
}

// nnAWS is an AWS API's answer as the AWS MCP server prints it: the
// service's JSON with its response metadata.
func nnAWS(body obj, req int) string {
	body["ResponseMetadata"] = obj{"RequestId": fmt.Sprintf("%08x-%04x-4%03x-a%03x-%012x", 0x5c1d2e3f+req*7919, req*31%0xffff, req*17%0xfff, req*13%0xfff, uint64(req)*0x9E3779B97F4A7C15%0xffffffffffff), "HTTPStatusCode": 200,
		"HTTPHeaders": obj{"date": fmt.Sprintf("Fri, 04 Dec 2026 21:%02d:%02d GMT", 10+req/60%50, req%60), "content-type": "text/xml"}, "RetryAttempts": 0}
	return egJSON(body)
}

// nnDB is an RDS instance as describe_db_instances answers it.
func nnDB(id, status string, storageFree int) obj {
	return obj{"DBInstances": arr{obj{"DBInstanceIdentifier": id, "DBInstanceArn": "arn:aws:rds:eu-west-1:123456789012:db:" + id, "DBInstanceClass": "db.r6g.large", "Engine": "postgres", "EngineVersion": "16.4",
		"DBInstanceStatus": status, "AllocatedStorage": 200, "FreeStorageSpaceMiB": storageFree, "Endpoint": obj{"Address": id + ".c9x2k1h3r8qz.eu-west-1.rds.amazonaws.com", "Port": 5432}, "MultiAZ": true}}}
}

// nnBrave is the Brave search server's answer: one block a result.
func nnBrave(hits ...[3]string) string {
	var b []string
	for _, h := range hits {
		b = append(b, "Title: "+h[0]+"\nDescription: "+h[1]+"\nURL: "+h[2])
	}
	return strings.Join(b, "\n\n")
}

// nnContacts is a CRM's contact search answer.
func nnContacts(total int, cs ...obj) string {
	a := arr{}
	for _, c := range cs {
		a = append(a, c)
	}
	return egJSON(obj{"total": total, "results": a, "paging": nil})
}

func nnContact(id int, first, last, email, company, stage, updated string) obj {
	return obj{"id": fmt.Sprint(id), "properties": obj{"firstname": first, "lastname": last, "email": email, "company": company, "lifecyclestage": stage, "hs_object_id": fmt.Sprint(id), "lastmodifieddate": updated}, "archived": false}
}

// nnJest is a test runner's summary: its failures, and a duration that
// moves from run to run.
func nnJest(run int, total int, fails ...string) string {
	var b strings.Builder
	for _, f := range fails {
		fmt.Fprintf(&b, "FAIL src/%s\n  ● %s\n\n", strings.SplitN(f, " › ", 2)[0], f)
	}
	passed := total - len(fails)
	suites := "Test Suites: 14 passed, 14 total"
	if len(fails) > 0 {
		suites = fmt.Sprintf("Test Suites: %d failed, %d passed, 14 total", len(fails), 14-len(fails))
		fmt.Fprintf(&b, "%s\nTests:       %d failed, %d passed, %d total\n", suites, len(fails), passed, total)
	} else {
		fmt.Fprintf(&b, "%s\nTests:       %d passed, %d total\n", suites, passed, total)
	}
	fmt.Fprintf(&b, "Snapshots:   0 total\nTime:        %d.%03d s\nRan all test suites.", 6+run%3, run*379%1000)
	return b.String()
}

// nnRun is a GitHub Actions workflow run as get_workflow_run answers it.
func nnRun(id, attempt int, status, conclusion string, at int) string {
	return egJSON(obj{"id": id, "name": "ci", "head_branch": "fix/retry-budget", "head_sha": "5d41402abc4b2a76b9719d911017c592a1b2c3d4", "run_attempt": attempt, "status": status, "conclusion": conclusion,
		"html_url": fmt.Sprintf("https://github.com/acme/api/actions/runs/%d/attempts/%d", id, attempt), "run_started_at": fmt.Sprintf("2026-12-04T21:%02d:%02dZ", 5+at/60, at%60), "updated_at": fmt.Sprintf("2026-12-04T21:%02d:%02dZ", 9+at/60, (at+17)%60)})
}

// nnQdrant is the Qdrant server's answer to qdrant-find.
func nnQdrant(q string, chunks ...string) string {
	s := []string{fmt.Sprintf("Results for the query '%s'", q)}
	for _, c := range chunks {
		s = append(s, "<entry><content>"+c+"</content></entry>")
	}
	return strings.Join(s, "\n")
}

// nnCFEvents is CloudFormation's describe_stack_events: the newest first.
func nnCFEvents(stack string, events ...[2]string) obj {
	a := arr{}
	for i := len(events) - 1; i >= 0; i-- {
		a = append(a, obj{"StackName": stack, "LogicalResourceId": events[i][0], "ResourceStatus": events[i][1], "Timestamp": fmt.Sprintf("2026-12-04T21:%02d:%02d.%03dZ", 20+i/6, i*9%60, i*137%1000),
			"EventId": fmt.Sprintf("%s-%s-%04d", events[i][0], events[i][1], 1000+i*37)})
	}
	return obj{"StackEvents": a}
}
