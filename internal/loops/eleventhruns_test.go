package loops

import (
	"fmt"
	"strings"
	"testing"
)

// The eleventh probe: written before reading the detectors or the rules
// of docs/LOOPS.md, by agents on their frameworks' defaults (@openai/agents
// with its hand-offs, LangGraph's ReAct agent, the AI SDK's maxSteps loop)
// with the tool names and answer shapes of real MCP servers, in domains
// the ten before it cover little: a shell agent (the same listing by a
// relative and an absolute path, a failing build re-run with its flags
// reordered or piped through another pager; legit: a build fixed error by
// error, a log tailed while a server starts), a knowledge-graph agent (the
// same fact recorded again in other words, a search reworded over an
// empty graph; legit: a graph built), a maps agent (one city geocoded in
// three languages, a search radius stretched over the same two places;
// legit: a multi-city itinerary, an ambiguous name disambiguated), a shop
// agent (a sold-out product tried in other sizes, a coupon respelled;
// legit: a cart filled item by item, the third size in stock), a document
// agent (a PDF's page range shifted by one over pages already read; legit:
// a book read page by page), a monitoring agent (a time range stretched
// while the answer is no data; legit: a spike narrowed), an agent asking
// its human the same question reworded, a planner whose two sub-agents
// hand the task back and forth, and long legit runs with volatile answers.
//
// Half the runs are legit and half loops; each legit run is a near-miss of
// a loop. A loop is marked as the ninth probe marks them: the fourth call
// that asks again in other words and learns nothing, the third identical
// poll or write, the third round of a pair of calls that learns nothing.
//
// It is written and played with the assistants probe's writer and driver
// (assistruns_test.go).

// elKnown lists the runs whose outcome is not their label's, each with why.
var elKnown = map[string]string{
	// On the guard as the probe was written (6742ca1): 7 of 18 loops
	// detected, none early; none of 18 legit runs refused. A command's
	// plumbing (2>&1, | cat, PAGER=cat) is left out of its words. An
	// absolute path was named by its last two components for a while,
	// which caught the same directory by relative and absolute path, and
	// refused the same file of several sites read in turn
	// (review17b_test.go): the rule is gone. 12 since a read respelled
	// in words its streak of answers alike already used is the question
	// again (alike.go): the directory by relative and absolute path, the
	// log by -10 and -n 10; 13 since a time with a fraction and a space
	// before its seconds ("Time: 2.341 s", jest's) is a span, so the test
	// runs by npm test, npx jest answer alike; 14 since a word of
	// punctuation alone (PromQL's =~ after =) names nothing asked.
	"shell-build-rerun-other-pager": "missed",
	"memory-same-fact-reworded":     "missed",
	"maps-city-in-three-languages":  "missed",
	"doc-page-range-shifted":        "missed",
}

func TestEleventhRuns(t *testing.T) {
	checkAsRuns(t, "eleventh probe", eleventhRuns(), 30, elKnown)
}

// elExec is Desktop Commander's answer to execute_command: a new PID at
// every call, then the command's output.
func elExec(call int, out string) string {
	return fmt.Sprintf("Process started with PID %d (shell: /bin/bash)\nInitial output:\n%s", 41207+call*613, out)
}

// elRun is a bash tool's answer on the AI SDK: stdout, stderr, exit code.
func elRun(stdout, stderr string, code int) string {
	return egJSON(obj{"stdout": stdout, "stderr": stderr, "exitCode": code})
}

// elGeocode is the Google Maps server's answer to maps_geocode.
func elGeocode(addr, placeID string, lat, lng float64) string {
	return egJSON(obj{"location": obj{"lat": lat, "lng": lng}, "formatted_address": addr, "place_id": placeID})
}

// elPlace is one place as maps_search_places answers it.
func elPlace(name, addr, id string, rating float64) obj {
	return obj{"name": name, "formatted_address": addr, "place_id": id, "rating": rating, "types": arr{"restaurant", "food", "point_of_interest"}, "location": obj{"lat": 45.52, "lng": -122.68}}
}

// elPages is a PDF server's answer to read_pdf over pages from..to.
func elPages(from, to int) string {
	var b []string
	for p := from; p <= to; p++ {
		b = append(b, fmt.Sprintf("--- Page %d ---\n%s", p, elPageText(p)))
	}
	return strings.Join(b, "\n\n")
}

func elPageText(p int) string {
	topics := []string{"Definitions", "Scope of services", "Fees and payment", "Service levels", "Confidentiality", "Data protection", "Liability", "Indemnity", "Term", "Renewal", "Governing law", "Notices"}
	return fmt.Sprintf("%d.%d %s. The Supplier shall, in respect of clause %d.%d, comply with Schedule %c as amended from time to time; the Customer may request evidence of compliance no more than once in any twelve-month period.", p/3+1, p%3+1, topics[p%len(topics)], p/3+1, p%3+1, 'A'+rune(p%6))
}

// elProm is the Grafana server's answer to query_prometheus over a range.
func elProm(series ...obj) string {
	a := arr{}
	for _, s := range series {
		a = append(a, s)
	}
	return egJSON(obj{"resultType": "matrix", "result": a})
}

func elSeries(pod string, start, step int, vals ...float64) obj {
	v := arr{}
	for i, x := range vals {
		v = append(v, arr{start + i*step, fmt.Sprintf("%g", x)})
	}
	return obj{"metric": obj{"__name__": "http_requests_total", "service": "checkout", "pod": pod}, "values": v}
}

// elCart is the Shopify storefront server's cart after update_cart.
func elCart(lines ...[3]any) string {
	ls := arr{}
	total := 0.0
	for _, l := range lines {
		ls = append(ls, obj{"merchandise": obj{"id": l[0], "title": l[1]}, "quantity": 1, "cost": obj{"totalAmount": obj{"amount": fmt.Sprintf("%.2f", l[2]), "currencyCode": "USD"}}})
		total += l[2].(float64)
	}
	return egJSON(obj{"cart": obj{"id": "gid://shopify/Cart/c1-7f3a9e", "checkout_url": "https://shop.example/cart/c/c1-7f3a9e", "total_quantity": len(lines), "lines": ls, "cost": obj{"total_amount": obj{"amount": fmt.Sprintf("%.2f", total), "currency": "USD"}}}})
}
