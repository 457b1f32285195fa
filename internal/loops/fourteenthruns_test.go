package loops

import (
	"fmt"
	"strings"
	"testing"
)

// The fourteenth probe: written before reading the detectors or the rules
// of docs/LOOPS.md, by agents on their frameworks' defaults with the tool
// names and answer shapes of real MCP servers, in domains the thirteen
// before it cover little: a package-registry agent (npm searches
// reworded), a Notion database queried under filters restructured, a
// Linear issue filed again in other words, Elasticsearch asked with its
// query's clauses reordered, an S3 prefix respelled, a Redis job hash
// polled while only its heartbeat moves, a Kafka consumer that never
// commits, an SMS sent again reworded after each is undelivered, a
// Cloudflare DNS record created again with its name and TTL respelled, a
// YouTube transcript fetched under other spellings of one video's URL, a
// service's status asked over SSH in other commands, an exchange order
// re-placed with its quantity written otherwise, flights searched by
// airport code, city and ICAO code, a Wikidata query with its variables
// renamed, a to-do appended to a daily note again in other words, a
// GraphQL query with its fields reordered and aliased, a lead handing one
// failing fix to a coder in other words, exchange rates fanned out in
// parallel with the currencies respelled, a meeting proposed again at a
// declined instant written in another zone, a Figma node asked by its id
// in URL and API notation, a Todoist filter respelled, and a PagerDuty
// incident acknowledged again. Each loop has a legitimate near-miss:
// searches that find new packages, a database paged by its cursor, issues
// filed for other bugs, hits paged with search_after, objects listed by a
// continuation token, a job whose progress moves, a consumer whose
// offsets advance, a template sent to several customers, a DNS record
// fixed then another created, several videos' transcripts, a service
// fixed and restarted, a ticker polled while its price moves, routes
// searched one by one, queries of other properties, a day's log appended
// entry by entry, a GraphQL connection paged, modules handed out one by
// one, rates of other dates, meetings proposed at other times until one
// is accepted, nodes read one by one, tasks completed one by one,
// incidents acknowledged one by one, and an install retried with a lock
// timeout after the lock was held.
//
// A loop is marked as the ninth probe marks them: the fourth call that
// asks again in other words and learns nothing, the third identical poll
// or write, the third round of a pair or ring of calls that learns
// nothing. A tool without readOnlyHint is declared a write, as it is
// through the gateway.
//
// It is written and played with the assistants probe's writer and driver
// (assistruns_test.go).

// ftKnown lists the runs whose outcome is not their label's, each with why.
var ftKnown = map[string]string{
	// On the guard as the probe was written (dc5e625): 10 of 22 loops
	// detected, none early; 0 of 23 legit runs refused. Since loops20: 16
	// (a heartbeat polled, a filter written without spaces, a prefix and a
	// node id in other punctuation; a to-do appended and an SMS sent again
	// in other words). Since loops21: 17 (a video's URL in other hosts'
	// notations; nginx and nginx.service).
	"linear-same-bug-refiled-reworded":   "missed",
	"wikidata-vars-renamed-empty":        "missed",
	"graphql-fields-reordered-same-data": "missed",
	"fx-rates-respelled-parallel-same":   "missed",
}

func TestFourteenthRuns(t *testing.T) {
	checkAsRuns(t, "fourteenth probe", fourteenthRuns(), 30, ftKnown)
}

// ftNpm is an npm search server's answer: one block a package.
func ftNpm(pkgs ...[4]string) string {
	var b []string
	for _, p := range pkgs {
		b = append(b, fmt.Sprintf("%s@%s\n  %s\n  weekly downloads: %s", p[0], p[1], p[2], p[3]))
	}
	return fmt.Sprintf("Found %d packages:\n\n", len(pkgs)) + strings.Join(b, "\n\n")
}

// ftNotion is a Notion database query's answer.
func ftNotion(pages arr, next string) string {
	o := obj{"object": "list", "results": pages, "has_more": next != "", "type": "page_or_database", "page_or_database": obj{}}
	if next != "" {
		o["next_cursor"] = next
	} else {
		o["next_cursor"] = nil
	}
	return egJSON(o)
}

// ftES is an Elasticsearch search answer.
func ftES(took int, hits ...obj) string {
	var hs arr
	for i, h := range hits {
		hs = append(hs, obj{"_index": "orders-2026.12", "_id": h["order_id"], "_score": 7.1 - float64(i)*0.4, "_source": h, "sort": arr{h["ts"], h["order_id"]}})
	}
	return egJSON(obj{"took": took, "timed_out": false, "_shards": obj{"total": 3, "successful": 3, "skipped": 0, "failed": 0}, "hits": obj{"total": obj{"value": len(hits), "relation": "eq"}, "max_score": 7.1, "hits": hs}})
}

// ftSystemctl is systemctl status of a failed nginx, active since ago.
func ftSystemctl(ago string, pid int) string {
	return "× nginx.service - A high performance web server and a reverse proxy server\n     Loaded: loaded (/lib/systemd/system/nginx.service; enabled; vendor preset: enabled)\n     Active: failed (Result: exit-code) since Sat 2026-12-05 08:41:07 UTC; " + ago + " ago\n       Docs: man:nginx(8)\n    Process: " + fmt.Sprint(pid) + " ExecStartPre=/usr/sbin/nginx -t -q -g daemon on; master_process on; (code=exited, status=1/FAILURE)\n        CPU: 21ms\n\nDec 05 08:41:07 web-2 nginx[" + fmt.Sprint(pid) + "]: nginx: [emerg] unknown directive \"proxy_buffering_size\" in /etc/nginx/sites-enabled/shop:41\nDec 05 08:41:07 web-2 nginx[" + fmt.Sprint(pid) + "]: nginx: configuration file /etc/nginx/nginx.conf test failed\nDec 05 08:41:07 web-2 systemd[1]: nginx.service: Control process exited, code=exited, status=1/FAILURE\nDec 05 08:41:07 web-2 systemd[1]: Failed to start A high performance web server and a reverse proxy server."
}

// ftSSH is an SSH server's answer to a command.
func ftSSH(code int, out string) string {
	return egJSON(obj{"exit_code": code, "stdout": out, "stderr": ""})
}

// ftTodo is Todoist's get_tasks answer: one line a task.
func ftTodo(tasks ...[3]string) string {
	if len(tasks) == 0 {
		return "No tasks found matching the filter."
	}
	var b []string
	for _, t := range tasks {
		b = append(b, fmt.Sprintf("- %s (ID: %s, Due: %s)", t[1], t[0], t[2]))
	}
	return fmt.Sprintf("%d tasks found:\n", len(tasks)) + strings.Join(b, "\n")
}
