package loops

import (
	"fmt"
	"strings"
	"testing"
)

// The thirteenth probe: written before reading the detectors or the rules
// of docs/LOOPS.md, by agents on their frameworks' defaults with the tool
// names and answer shapes of real MCP servers, in domains and shapes the
// twelve before it cover little: an email agent (Gmail's search with its
// operators reordered), a smart-home agent (Home Assistant's intents on a
// light that stays unavailable), a payments support agent asking for one
// customer by email, by id and by its payments, an issue-tracker agent
// (Jira transitions respelled), infrastructure agents (Terraform plans
// with their -var flags reordered through a process tool whose PID is new
// each time, a Docker container restarted over the same crash under new
// timestamps, AWS describe calls in other output formats), a places API
// whose page token never advances, a translation round trip, an agent
// asking another over A2A in other words (a new task id each time), a web
// search whose results come back reordered, a spreadsheet range respelled,
// a grep with its flags reordered, a package installed again under other
// version specifiers with the same ModuleNotFoundError, an image refused
// under reworded prompts, a PDF page extracted again at other
// resolutions, a push rejected under respelled commands, an HTTP API
// asked with its headers respelled, a coding agent whose edits undo each
// other over the same failing test, and a CI job re-run over the same
// lint failure. Each loop has a legitimate near-miss: a search narrowed,
// a thermostat stepped, payments paged, an issue walked through its
// workflow, a plan fixed error by error, a container's logs progressing,
// instances described one by one, a token that advances, paragraphs
// translated one by one, an A2A task polled until it completes, searches
// that find new results, ranges read one after another, greps for new
// patterns, modules installed one by one, images of other subjects, pages
// extracted one by one, a push after a pull, a paged API, edits whose
// failure changes, and a flaky job re-run until it passes.
//
// A loop is marked as the ninth probe marks them: the fourth call that
// asks again in other words and learns nothing, the third identical poll
// or write, the third round of a pair or ring of calls that learns
// nothing. A shell or process tool is declared a write, as a tool without
// readOnlyHint is through the gateway.
//
// It is written and played with the assistants probe's writer and driver
// (assistruns_test.go).

// thKnown lists the runs whose outcome is not their label's, each with why.
var thKnown = map[string]string{
	// On the guard as the probe was written (6f1621d): 9 of 20 loops
	// detected, none early; 0 of 21 legit runs refused.
	"aws-describe-output-formats":        "missed",
	"a2a-same-ask-reworded":              "missed",
	"sheets-range-respelled-same-values": "missed",
	"pip-reinstall-same-modulenotfound":  "missed",
	"pdf-page-reextracted-same-text":     "missed",
	// ci-rerun-same-lint-failure is caught since loops22: its log's
	// "(attempt 2, job 9120455)" is a re-run's counter and an id.
}

func TestThirteenthRuns(t *testing.T) {
	checkAsRuns(t, "thirteenth probe", thirteenthRuns(), 30, thKnown)
}

// thMail is the Gmail server's answer to search_emails: one block a
// message.
func thMail(msgs ...[4]string) string {
	var b strings.Builder
	for _, m := range msgs {
		fmt.Fprintf(&b, "ID: %s\nSubject: %s\nFrom: %s\nDate: %s\n\n", m[0], m[1], m[2], m[3])
	}
	return strings.TrimRight(b.String(), "\n")
}

// thHassDone is Home Assistant's answer to an intent that was carried out.
func thHassDone(name, id string) string {
	return egJSON(obj{"speech": obj{}, "response_type": "action_done", "data": obj{"targets": arr{}, "success": arr{obj{"name": name, "type": "entity", "id": id}}, "failed": arr{}}})
}

// thHassContext is Home Assistant's GetLiveContext answer.
func thHassContext(light, thermo string, temp float64) string {
	return fmt.Sprintf("Live Context: An overview of the areas and the devices in this smart home:\n- names: Kitchen light\n  domain: light\n  state: '%s'\n  areas: Kitchen\n- names: Living room thermostat\n  domain: climate\n  state: '%s'\n  areas: Living room\n  attributes:\n    current_temperature: %.1f\n    temperature: 21\n- names: Front door\n  domain: lock\n  state: locked\n  areas: Hall", light, thermo, temp)
}

// thProc is Desktop Commander's answer to start_process.
func thProc(pid int, out string) string {
	return fmt.Sprintf("Process started with PID %d (shell: /bin/sh)\nInitial output:\n%s", pid, out)
}

// thA2ATask is an A2A task as a bridge tool hands it back.
func thA2ATask(id, state, text string, sec int) string {
	return egJSON(obj{"id": id, "contextId": "ctx-" + id[5:13], "kind": "task", "status": obj{"state": state, "timestamp": fmt.Sprintf("2026-12-05T06:%02d:%02d.%03dZ", 10+sec/60, sec%60, sec*37%1000)}, "artifacts": arr{obj{"artifactId": "art-" + id[5:13], "parts": arr{obj{"kind": "text", "text": text}}}}})
}

// thBrave is the Brave search server's answer: one block a result.
func thBrave(rs ...[3]string) string {
	var b []string
	for _, r := range rs {
		b = append(b, fmt.Sprintf("Title: %s\nDescription: %s\nURL: %s", r[0], r[1], r[2]))
	}
	return strings.Join(b, "\n\n")
}

// thDockerLogs is a crashing container's log tail, its lines stamped at
// start.
func thDockerLogs(start int) string {
	ts := func(d int) string {
		s := start + d
		return fmt.Sprintf("2026-12-05T05:%02d:%02d.%06dZ", s/60%60, s%60, (s*7919)%1000000)
	}
	return strings.Join([]string{
		ts(0) + " > orders-api@2.4.1 start",
		ts(0) + " > node dist/server.js",
		ts(1) + " [info] loading config from /app/config/production.json",
		ts(1) + " [info] connecting to postgres at db:5432",
		ts(2) + " [error] password authentication failed for user \"orders\"",
		ts(2) + " Error: password authentication failed for user \"orders\"",
		ts(2) + "     at Parser.parseErrorMessage (/app/node_modules/pg-protocol/dist/parser.js:283:98)",
		ts(2) + " npm notice process exited with code 1",
	}, "\n")
}

// thRows is a Google Sheets range's values as the server answers them.
func thRows(rng string, n int) string {
	vals := arr{arr{"Team", "Q4 budget", "Spent", "Left"}}
	for i := 0; i < n; i++ {
		vals = append(vals, arr{[]string{"Payments", "Checkout", "Search", "Platform", "Data", "Mobile", "Growth", "Support"}[i%8], fmt.Sprint(40000 + i*2500), fmt.Sprint(31000 + i*1900), fmt.Sprint(9000 + i*600)})
	}
	return egJSON(obj{"spreadsheetId": "1qZ8mB2xK7", "range": rng, "majorDimension": "ROWS", "values": vals})
}
