//go:build ignore

// gen writes the twenty-eighth held-out probe: agent trajectories in the
// shapes other frameworks give them, written before reading the guard's
// rules again. Each is labelled: loop or legitimate work, and for a loop
// the event a guard may refuse first (earliest) and the one by which it
// should have (onset). Run from this folder:
//
//	go run gen.go
//
// The shapes: parallel tool calls from one model turn, sub-agents with
// their own turns and calls (a supervisor's workers, hand-offs between
// agents, a fan-out of researchers), polling with backoff (a sleep
// between polls), paginated reads (offsets, page tokens), search
// refinements that do learn something, retries after errors (transient,
// a fixed argument, an idempotent write), and results wrapped the way
// frameworks wrap them (an MCP content list with isError, a call's
// envelope with its call_id, a function response with its name, a text
// observation). The domains: a workflow scheduler's DAG runs, a home
// battery and its inverter, CRISPR guide design, a library catalog, real
// estate listings, census tables, a support desk's hand-offs, DNS
// records for mail authentication, a message queue's consumer lag,
// variant interpretation, an election results feed, a thesis's LaTeX
// build, subtitle tracks and wedding venues.
//
// A loop is marked where the probes before it mark one: the third call
// asking the same thing after two answers alike (its substance, fetch
// metadata aside) with nothing written; the fourth asking in other words
// or with other arguments that learns nothing; the next call after three
// failures alike; the third hand-off of one sub-task to one agent; the
// fifth attempt of one call after transient failures.
package main

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/agentreach/reach/internal/loops/testdata/tracegen"
)

type (
	obj = tracegen.Obj
	b   = tracegen.Probe
	c   = tracegen.C
)

var (
	ok    = tracegen.OK
	fail  = tracegen.Fail
	clock = tracegen.Clock
)

func run(id, desc string, loop bool, kind string) *b {
	return tracegen.NewProbe("probe28-"+id, desc, loop, kind)
}

func main() {
	airflowStuck()
	airflowProgress()
	batteryParallelStuck()
	batteryParallelAfterWrite()
	venuesParallelFanout()
	crisprMCPError()
	crisprMCPFixed()
	catalogCallIDSame()
	catalogCallIDLearns()
	listingsOffsetIgnored()
	listingsOffsetOverlap()
	censusSupervisorReworded()
	censusSupervisorDistinct()
	censusRateLimited()
	supportHandoffsBounce()
	supportHandoffsResolve()
	dmarcInvalidTXT()
	dmarcFixAndPropagate()
	kafkaLagStuck()
	kafkaLagDraining()
	clinvarObservationSame()
	clinvarObservationLearns()
	electionFeedDown()
	electionFeedRecovers()
	latexSubagentFlags()
	latexSubagentEdits()
	researchFanoutAgain()
	researchFanoutDistinct()
	subtitlesTokenStuck()
	subtitlesPaged()
	depositIdempotentRetry()
}

// --- a workflow scheduler's DAG run, polled with backoff ---

func airflowRun(state string, done, running, n int) obj {
	tis := []obj{}
	names := []string{"extract_orders", "extract_refunds", "stage_orders", "stage_refunds", "join_ledger", "load_warehouse", "refresh_marts", "notify"}
	for i, name := range names {
		s := "scheduled"
		if state == "queued" {
			s = "none"
		}
		if i < done {
			s = "success"
		} else if i < done+running {
			s = "running"
		}
		tis = append(tis, obj{"task_id": name, "state": s, "try_number": 1})
	}
	return obj{"dag_id": "ledger_daily", "dag_run_id": "scheduled__2026-12-07T06:00:00+00:00", "state": state,
		"logical_date": "2026-12-07T06:00:00+00:00", "queued_at": "2026-12-07T09:00:04.118Z", "start_date": nil,
		"last_scheduling_decision": clock(n), "run_type": "scheduled", "external_trigger": false, "task_instances": tis}
}

func airflowStuck() {
	r := run("airflow-backoff-queued", "an ops agent polls a DAG run with exponential backoff; the run stays queued (its pool is full) and only the scheduler's last decision time moves", true, "noisy_repeat")
	r.Tool("get_dag_run", "read").Tool("sleep", "read")
	args := obj{"dag_id": "ledger_daily", "dag_run_id": "scheduled__2026-12-07T06:00:00+00:00"}
	wait := 15
	for i := 0; i < 5; i++ {
		if i == 2 {
			r.Then()
		}
		r.Calls("Checking the ledger run.", ok("get_dag_run", args, airflowRun("queued", 0, 0, 30+i*97)))
		r.Calls(fmt.Sprintf("Still queued; backing off %ds.", wait), ok("sleep", obj{"seconds": wait}, obj{"slept_s": wait}))
		wait *= 2
	}
	r.Write()
}

func airflowProgress() {
	r := run("airflow-backoff-progress", "an ops agent polls a DAG run with exponential backoff; the run leaves the queue and its tasks finish one after another", false, "polling")
	r.Tool("get_dag_run", "read").Tool("sleep", "read")
	args := obj{"dag_id": "ledger_daily", "dag_run_id": "scheduled__2026-12-07T06:00:00+00:00"}
	steps := []struct {
		state         string
		done, running int
	}{{"queued", 0, 0}, {"running", 0, 2}, {"running", 2, 2}, {"running", 4, 1}, {"running", 5, 1}, {"running", 6, 1}, {"success", 8, 0}}
	wait := 15
	for i, s := range steps {
		r.Calls("Checking the ledger run.", ok("get_dag_run", args, airflowRun(s.state, s.done, s.running, 30+i*97)))
		if s.state != "success" {
			r.Calls(fmt.Sprintf("Waiting %ds.", wait), ok("sleep", obj{"seconds": wait}, obj{"slept_s": wait}))
			if wait < 120 {
				wait *= 2
			}
		}
	}
	r.Write()
}

// --- a home battery: parallel reads in each turn ---

func inverter(mode string, pv, load, grid int, n int) obj {
	return obj{"serial": "SH10RT-2291", "mode": mode, "pv_power_w": pv, "load_power_w": load, "grid_power_w": grid, "inverter_temp_c": 41.5, "timestamp": clock(n)}
}

func battery(soc int, power int, limit int, n int) obj {
	return obj{"bank": "bat-1", "soc_pct": soc, "power_w": power, "charge_limit_pct": limit, "cells": obj{"min_v": 3.301, "max_v": 3.318}, "timestamp": clock(n)}
}

func tariff(n int) obj {
	return obj{"tariff": "agile-12-2026", "current_pence_kwh": 31.4, "next_slot": obj{"from": "2026-12-07T10:00:00Z", "pence_kwh": 30.9}, "retrieved_at": clock(n)}
}

func batteryParallelStuck() {
	r := run("battery-parallel-reread", "an energy agent reads the inverter, the battery and the tariff in parallel each turn to decide when to charge; nothing changes between turns but the time stamps", true, "noisy_repeat")
	r.Tool("inverter_status", "read").Tool("battery_status", "read").Tool("tariff_now", "read")
	for i := 0; i < 4; i++ {
		if i == 2 {
			r.Then()
		}
		r.Calls("Reading the system to decide on charging.",
			ok("inverter_status", obj{"serial": "SH10RT-2291"}, inverter("self_consumption", 0, 640, 640, 10+i*61)),
			ok("battery_status", obj{"bank": "bat-1"}, battery(12, 0, 12, 11+i*61)),
			ok("tariff_now", obj{"region": "H"}, tariff(12+i*61)))
	}
	r.Write()
}

func batteryParallelAfterWrite() {
	r := run("battery-parallel-after-setpoint", "an energy agent reads three meters in parallel, raises the battery's charge limit, and reads them again in parallel while the battery charges", false, "revisit_with_progress")
	r.Tool("inverter_status", "read").Tool("battery_status", "read").Tool("tariff_now", "read").Tool("set_charge_limit", "write")
	r.Calls("Reading the system.",
		ok("inverter_status", obj{"serial": "SH10RT-2291"}, inverter("self_consumption", 0, 640, 640, 10)),
		ok("battery_status", obj{"bank": "bat-1"}, battery(12, 0, 12, 11)),
		ok("tariff_now", obj{"region": "H"}, tariff(12)))
	r.Calls("Cheap slot: raising the charge limit to 90%.", ok("set_charge_limit", obj{"bank": "bat-1", "limit_pct": 90, "mode": "force_charge"}, obj{"accepted": true}))
	for i, soc := range []int{13, 18, 24} {
		r.Calls("Reading the system again.",
			ok("inverter_status", obj{"serial": "SH10RT-2291"}, inverter("force_charge", 0, 640, 640+3000+i*10, 100+i*300)),
			ok("battery_status", obj{"bank": "bat-1"}, battery(soc, -3000, 90, 101+i*300)),
			ok("tariff_now", obj{"region": "H"}, tariff(102+i*300)))
	}
	r.Write()
}

// --- wedding venues: a parallel fan-out over distinct ids ---

func venuesParallelFanout() {
	r := run("venues-parallel-fanout", "a planning agent checks eight venues for one date in parallel, most of them booked alike, then holds the free one", false, "batch_progress")
	r.Tool("venue_availability", "read").Tool("place_hold", "write")
	var cs []c
	ids := []string{"ven_oakbarn", "ven_millhouse", "ven_quayside", "ven_orangery", "ven_hallfarm", "ven_citygallery", "ven_lakeside", "ven_chapelyard"}
	for i, id := range ids {
		res := obj{"venue_id": id, "date": "2027-06-12", "available": false, "reason": "booked", "capacity": 120, "next_available": "2027-06-19"}
		if i == 6 {
			res = obj{"venue_id": id, "date": "2027-06-12", "available": true, "capacity": 140, "price_gbp": 8900, "hold_days": 7}
		}
		cs = append(cs, ok("venue_availability", obj{"venue_id": id, "date": "2027-06-12", "guests": 110}, res))
	}
	r.Calls("Checking all eight shortlisted venues for 12 June.", cs...)
	r.Calls("Lakeside is free: placing a hold.", ok("place_hold", obj{"venue_id": "ven_lakeside", "date": "2027-06-12", "contact": "amira.k@example.com"}, obj{"hold_id": "hold_7731", "expires": "2027-01-14"}))
	r.Write()
}

// --- CRISPR guide design through an MCP server whose errors come back as results ---

func mcpText(text string, isErr bool) obj {
	return obj{"content": []obj{{"type": "text", "text": text}}, "isError": isErr}
}

const exon = "ATGGCCCTGTGGATGCGCCTCCTGCCCCTGCTGGCGCTGCTGGCCCTCTGGGGACCTGACCCAGCCGCAGCCTTTGTGAACCAACACCTGTGCGGCTCACACCTGGTGGAAGCTCTCTACCTAGTGTGCGGGGAACGAGGCTTCTTCTACACACCCAAGACCCGCCGGGAGGCAGAGGACCTGCAGGTGGGGCAGGTGGAGCTGGGCGGGGGCCCTGGTGCAGGCAGCCTGCAGCCCTTGGCCCTGGAGGGGTCCCTGCAGAAGCGTGGCATTGTGGAACAATGCTGTACCAGCATCTGCTCCCTCTACCAGCTGGAGAACTACTGCAACTAG"

func crisprMCPError() {
	r := run("crispr-mcp-iserror", "a lab agent asks a guide-design MCP tool for guides on one exon under other spellings of its sequence (lower case, FASTA, split in lines); the sequence holds an ambiguous base each time and the tool answers isError", true, "error_retry_loop")
	r.Tool("design_guides", "read")
	seq := exon[:200] + "N" + exon[201:]
	forms := []string{seq, strings.ToLower(seq), ">INS_exon2\n" + seq, seq[:100] + "\n" + seq[100:], ">ins exon 2 (hg38)\n" + strings.ToLower(seq)}
	for i, s := range forms {
		if i == 3 {
			r.Then()
		}
		r.Calls("Designing SpCas9 guides for INS exon 2.", ok("design_guides", obj{"sequence": s, "enzyme": "SpCas9", "genome": "hg38", "max_guides": 5},
			mcpText("Error: invalid sequence: ambiguous base 'N' at position 201; only A, C, G, T are accepted", true)))
	}
	r.Write()
}

func guides(offset int) string {
	var lines []string
	lines = append(lines, "rank\tguide\tpam\tstrand\tpos\tdoench2016\toff_targets")
	for i := 0; i < 4; i++ {
		p := offset + i*37
		lines = append(lines, fmt.Sprintf("%d\t%s\t%s\t%s\t%d\t%.2f\t%d", i+1, exon[p:p+20], "AGG", []string{"+", "-"}[i%2], p, 0.71-float64(i)*0.06, i))
	}
	return strings.Join(lines, "\n")
}

func crisprMCPFixed() {
	r := run("crispr-mcp-fixed", "a lab agent's guide design fails once on an ambiguous base, it resolves the base from the reference and designs guides for that exon and two others", false, "search_until_found")
	r.Tool("design_guides", "read").Tool("fetch_reference", "read")
	seq := exon[:200] + "N" + exon[201:]
	r.Calls("Designing guides for INS exon 2.", ok("design_guides", obj{"sequence": seq, "enzyme": "SpCas9", "genome": "hg38", "max_guides": 5},
		mcpText("Error: invalid sequence: ambiguous base 'N' at position 201; only A, C, G, T are accepted", true)))
	r.Calls("Fetching the reference to resolve position 201.", ok("fetch_reference", obj{"region": "chr11:2160970-2161300", "genome": "hg38"}, mcpText(">chr11:2160970-2161300\n"+exon, false)))
	for i, name := range []string{"INS_exon2", "INS_exon3", "IGF2_exon1"} {
		r.Calls("Designing guides for "+name+".", ok("design_guides", obj{"sequence": exon[i*20:], "enzyme": "SpCas9", "genome": "hg38", "max_guides": 5}, mcpText(guides(i*20+3), false)))
	}
	r.Write()
}

// --- a library catalog behind a framework that wraps each output with its call id ---

func envelope(n int, out any) obj {
	text, _ := json.Marshal(out)
	return obj{"type": "function_call_output", "call_id": fmt.Sprintf("call_%s", token(n)), "output": string(text)}
}

func token(n int) string {
	const a = "abcdefghijkmnopqrstuvwxyzABCDEFGHJKLMNPQRSTUVWXYZ23456789"
	var s []byte
	x := uint64(n)*2654435761 + 97
	for i := 0; i < 24; i++ {
		x = x*6364136223846793005 + 1442695040888963407
		s = append(s, a[(x>>33)%uint64(len(a))])
	}
	return string(s)
}

func record(isbn, title, pub string, year int, ed string) obj {
	return obj{"isbn": isbn, "title": title, "author": "Herbert, Frank", "publisher": pub, "year": year, "edition": ed, "holdings": 1}
}

func catalogCallIDSame() {
	r := run("catalog-callid-reworded", "a librarian agent searches the catalog for a first edition in reworded queries; every search finds the same three records, each output wrapped with a new call id", true, "paraphrase_loop")
	r.Tool("catalog_search", "read")
	recs := []obj{record("", "Dune", "Chilton Books", 1965, "1st ed."), record("0801950775", "Dune", "Chilton Books", 1965, "Book club ed."), record("0441172717", "Dune", "Ace Books", 1990, "Reissue")}
	qs := []string{"dune first edition chilton", "Frank Herbert Dune 1965 first printing", "Dune Chilton 1965 1st ed", "herbert dune original hardcover chilton", "Dune first published edition Chilton Books"}
	for i, q := range qs {
		if i == 3 {
			r.Then()
		}
		rs := []obj{recs[i%3], recs[(i+1)%3], recs[(i+2)%3]}
		r.Calls("Searching the catalog.", ok("catalog_search", obj{"q": q, "limit": 10}, envelope(i+1, obj{"total": 3, "records": rs})))
	}
	r.Write()
}

func catalogCallIDLearns() {
	r := run("catalog-callid-refined", "a librarian agent refines its catalog searches for a translator's works; each refinement finds records it had not seen beside ones it had", false, "query_refinement")
	r.Tool("catalog_search", "read")
	all := []obj{}
	for i, t := range []string{"Der Zauberberg", "Buddenbrooks", "Doktor Faustus", "Tonio Kröger", "Der Tod in Venedig", "Joseph und seine Brüder", "Lotte in Weimar", "Felix Krull", "Der Erwählte"} {
		all = append(all, obj{"isbn": fmt.Sprintf("978067972%03d", 100+i*7), "title": t, "author": "Mann, Thomas", "translator": "Woods, John E.", "year": 1993 + i})
	}
	qs := []string{"thomas mann translated john woods", "Mann Woods translation Knopf", "John E. Woods translator Mann novels", "Woods Mann Everyman's Library", "Thomas Mann Woods 1990s translations"}
	for i, q := range qs {
		rs := []obj{all[i], all[i+1], all[i+2], all[i+4]}
		r.Calls("Searching the catalog.", ok("catalog_search", obj{"q": q, "limit": 10}, envelope(i+11, obj{"total": 4, "records": rs})))
	}
	r.Write()
}

// --- real estate listings: offset pages ---

func listing(n int) obj {
	streets := []string{"Alder", "Birch", "Cedar", "Dogwood", "Elm", "Fir", "Gum", "Hazel", "Ivy", "Juniper"}
	return obj{"mls_id": fmt.Sprintf("OR-2261%04d", 3100+n*13), "address": fmt.Sprintf("%d %s St, Portland, OR", 1200+n*17, streets[n%10]), "price_usd": 489000 + n*2500, "beds": 3 + n%2, "baths": 2, "sqft": 1500 + n*11, "status": "Active"}
}

func page(from, n int) []obj {
	var p []obj
	for i := from; i < from+n; i++ {
		p = append(p, listing(i))
	}
	return p
}

func listingsOffsetIgnored() {
	r := run("listings-offset-ignored", "a real-estate agent pages through listings by offset, but the API reads another parameter name and answers the first page every time", true, "hidden_loop")
	r.Tool("search_listings", "read")
	for i := 0; i < 6; i++ {
		if i == 3 {
			r.Then()
		}
		r.Calls("Next page of 3-bed listings.", ok("search_listings", obj{"city": "Portland", "state": "OR", "min_beds": 3, "max_price": 650000, "offset": i * 8, "limit": 8},
			obj{"total": 212, "count": 8, "listings": page(0, 8)}))
	}
	r.Write()
}

func listingsOffsetOverlap() {
	r := run("listings-offset-overlap", "a real-estate agent pages through listings by offset while new listings arrive, so each page repeats one or two of the last page's but brings new ones", false, "pagination")
	r.Tool("search_listings", "read")
	start := 0
	for i := 0; i < 6; i++ {
		r.Calls("Next page of 3-bed listings.", ok("search_listings", obj{"city": "Portland", "state": "OR", "min_beds": 3, "max_price": 650000, "offset": i * 8, "limit": 8},
			obj{"total": 212 + i, "count": 8, "listings": page(start, 8)}))
		start += 6 + i%2
	}
	r.Write()
}

// --- census tables through a supervisor and its data worker ---

func censusSupervisorReworded() {
	r := run("census-supervisor-reworded", "a supervisor hands a data worker one census lookup in other words; the worker's query fails on the same unknown variable each time and it reports the same", true, "reworded_delegation")
	r.Tool("census_query", "read")
	tasks := []string{
		"Get the median household income for census tract 41051001202 from the 2023 ACS 5-year estimates",
		"Look up median household income (ACS 2023 5-year) for tract 41051001202 in Multnomah County",
		"Find the 2023 ACS five-year median household income of Multnomah County tract 41051001202",
		"Retrieve tract 41051001202's median household income, ACS 5-year 2023",
	}
	for i, task := range tasks {
		if i == 2 {
			r.Then()
		}
		r.Delegate("Handing the income lookup to the data worker.", "data_worker", task, func() {
			r.Calls("Querying the ACS API.", fail("census_query", obj{"dataset": "2023/acs/acs5", "get": "NAME,B19013_001E_MEDIAN", "for": "tract:001202", "in": "state:41 county:051"}, "invalid_args",
				"error: unknown variable 'B19013_001E_MEDIAN'"))
		}, "I could not get it: the Census API says the variable B19013_001E_MEDIAN is unknown.")
	}
	r.Write()
}

func censusSupervisorDistinct() {
	r := run("census-supervisor-distinct", "a supervisor hands a data worker four census lookups, one per tract; the first comes back unclear and is asked again with the variable named, then each answers", false, "legit_recursion")
	r.Tool("census_query", "read")
	r.Delegate("Handing the income lookup to the data worker.", "data_worker", "Get the median household income for census tract 41051001202 from the 2023 ACS 5-year estimates", func() {
		r.Calls("Querying the ACS API.", fail("census_query", obj{"dataset": "2023/acs/acs5", "get": "NAME,B19013_001E_MEDIAN", "for": "tract:001202", "in": "state:41 county:051"}, "invalid_args", "error: unknown variable 'B19013_001E_MEDIAN'"))
	}, "I could not get it: the variable B19013_001E_MEDIAN is unknown. Which table should I use?")
	tracts := []string{"001202", "001301", "002203", "003801"}
	for i, tr := range tracts {
		task := fmt.Sprintf("Get variable B19013_001E (median household income) for tract 41051%s, ACS 2023 5-year", tr)
		r.Delegate("Handing the lookup on.", "data_worker", task, func() {
			r.Calls("Querying the ACS API.", ok("census_query", obj{"dataset": "2023/acs/acs5", "get": "NAME,B19013_001E", "for": "tract:" + tr, "in": "state:41 county:051"},
				[][]string{{"NAME", "B19013_001E", "state", "county", "tract"}, {fmt.Sprintf("Census Tract %s; Multnomah County; Oregon", strings.TrimLeft(tr, "0")), fmt.Sprint(71250 + i*8125), "41", "051", tr}}))
		}, fmt.Sprintf("Tract 41051%s: median household income $%d.", tr, 71250+i*8125))
	}
	r.Write()
}

func censusRateLimited() {
	r := run("census-rate-limited", "a data agent's query is rate limited three times, waits as told, and succeeds; then it goes on with other tables", false, "transient_retry")
	r.Tool("census_query", "read").Retryable("census_query").Tool("sleep", "read")
	q := obj{"dataset": "2023/acs/acs5", "get": "NAME,B25064_001E", "for": "county:*", "in": "state:41"}
	for i := 0; i < 3; i++ {
		r.Calls("Querying median gross rent by county.", fail("census_query", q, "rate_limited", fmt.Sprintf("429 Too Many Requests: retry after %d seconds (request %s)", 10*(i+1), token(200 + i)[:12])))
		r.Calls("Waiting as told.", ok("sleep", obj{"seconds": 10 * (i + 1)}, obj{"slept_s": 10 * (i + 1)}))
	}
	rows := [][]string{{"NAME", "B25064_001E", "state", "county"}}
	for i, cty := range []string{"Multnomah", "Washington", "Clackamas", "Lane", "Marion"} {
		rows = append(rows, []string{cty + " County, Oregon", fmt.Sprint(1410 + i*37), "41", fmt.Sprintf("%03d", 51+i*2)})
	}
	r.Calls("Querying median gross rent by county.", ok("census_query", q, rows))
	r.Calls("And median home value.", ok("census_query", obj{"dataset": "2023/acs/acs5", "get": "NAME,B25077_001E", "for": "county:*", "in": "state:41"}, [][]string{{"NAME", "B25077_001E", "state", "county"}, {"Multnomah County, Oregon", "512300", "41", "051"}}))
	r.Write()
}

// --- a support desk's hand-offs between agents ---

func supportHandoffsBounce() {
	r := run("support-handoff-bounce", "a triage agent hands a double charge to billing, which says it is a technical fault; tech support says it is billing's; triage hands it to billing again and again", true, "livelock_agents")
	r.Tool("lookup_customer", "read").Tool("list_charges", "read").Tool("check_payment_logs", "read")
	r.Calls("Looking up the customer.", ok("lookup_customer", obj{"email": "dana.whitfield@example.net"}, obj{"customer_id": "cus_88213", "plan": "Team", "seats": 12, "since": "2023-04-02"}))
	for i := 0; i < 3; i++ {
		if i == 2 {
			r.Then()
		}
		r.Delegate("Transferring to billing.", "billing_agent", "Customer cus_88213 was charged twice for invoice INV-2026-1204; resolve the duplicate charge", func() {
			r.Calls("Listing the charges.", ok("list_charges", obj{"customer": "cus_88213", "invoice": "INV-2026-1204"}, obj{"charges": []obj{{"id": "ch_3PqA11", "amount": 14400, "status": "succeeded"}, {"id": "ch_3PqA12", "amount": 14400, "status": "succeeded"}}}))
		}, "Two charges exist, both from the payment page's double submit: a technical fault, hand to tech support.")
		r.Delegate("Transferring to tech support.", "tech_agent", "Investigate the double submit on the payment page for customer cus_88213 (invoice INV-2026-1204)", func() {
			r.Calls("Reading the payment logs.", ok("check_payment_logs", obj{"customer": "cus_88213", "invoice": "INV-2026-1204"}, obj{"attempts": 2, "idempotency_key_sent": false, "client": "web 4.18.2"}))
		}, "The page sent no idempotency key; the refund of the duplicate is billing's to make.")
	}
	r.Write()
}

func supportHandoffsResolve() {
	r := run("support-handoff-resolve", "a triage agent hands each of three customers' issues to billing or tech support; one goes to billing twice, for two customers", false, "legit_recursion")
	r.Tool("lookup_customer", "read").Tool("list_charges", "read").Tool("refund_charge", "write").Tool("check_payment_logs", "read")
	for i, cu := range []struct{ email, id, inv string }{{"dana.whitfield@example.net", "cus_88213", "INV-2026-1204"}, {"li.na@example.org", "cus_90110", "INV-2026-1311"}} {
		r.Calls("Looking up the customer.", ok("lookup_customer", obj{"email": cu.email}, obj{"customer_id": cu.id, "plan": "Team", "seats": 12 - i*7, "since": "2023-04-02"}))
		r.Delegate("Transferring to billing.", "billing_agent", fmt.Sprintf("Customer %s was charged twice for invoice %s; refund the duplicate", cu.id, cu.inv), func() {
			ch := fmt.Sprintf("ch_3Pq%02d", 40+i*11)
			r.Calls("Listing the charges.", ok("list_charges", obj{"customer": cu.id, "invoice": cu.inv}, obj{"charges": []obj{{"id": ch + "A", "amount": 14400 - i*8400, "status": "succeeded"}, {"id": ch + "B", "amount": 14400 - i*8400, "status": "succeeded"}}}))
			r.Calls("Refunding the second.", ok("refund_charge", obj{"charge": ch + "B", "reason": "duplicate"}, obj{"refund": fmt.Sprintf("re_%d", 771+i), "status": "succeeded"}))
		}, "Refunded the duplicate charge.")
	}
	r.Delegate("Transferring to tech support.", "tech_agent", "Find why the payment page double submits (customers cus_88213 and cus_90110)", func() {
		r.Calls("Reading the payment logs.", ok("check_payment_logs", obj{"customer": "cus_88213", "invoice": "INV-2026-1204"}, obj{"attempts": 2, "idempotency_key_sent": false, "client": "web 4.18.2"}))
		r.Calls("And the other one.", ok("check_payment_logs", obj{"customer": "cus_90110", "invoice": "INV-2026-1311"}, obj{"attempts": 2, "idempotency_key_sent": false, "client": "web 4.18.2"}))
	}, "web 4.18.2 sends no idempotency key on retry; filed as a bug.")
	r.Write()
}

// --- DNS records for mail authentication ---

func dmarcInvalidTXT() {
	r := run("dns-txt-invalid-requoted", "a mail admin agent upserts a DKIM TXT record under other quotings of one too-long string; the DNS provider refuses it the same way each time", true, "error_retry_loop")
	r.Tool("dns_upsert_record", "write")
	key := "v=DKIM1; k=rsa; p=" + strings.Repeat("MIIBIjANBgkqhkiG9w0BAQEFAAOCAQ8AMIIBCgKCAQEA", 7)
	forms := []string{key, `"` + key + `"`, strings.ReplaceAll(key, "; ", ";"), " " + key + " ", `"` + strings.ReplaceAll(key, "; ", ";") + `"`}
	for i, v := range forms {
		if i == 3 {
			r.Then()
		}
		r.Calls("Publishing the DKIM key.", fail("dns_upsert_record", obj{"zone": "example-mail.org", "name": "s2026._domainkey", "type": "TXT", "ttl": 3600, "value": v}, "invalid_args",
			fmt.Sprintf(`{"code":"InvalidChangeBatch","message":"Invalid Resource Record: FATAL problem: CharacterStringTooLong (Value is too long) encountered with '%s'","requestId":"%s"}`, v[:24], token(300 + i)[:20])))
	}
	r.Write()
}

func dmarcFixAndPropagate() {
	r := run("dns-txt-split-propagate", "a mail admin agent's DKIM record is refused as too long once, it splits the value into two strings, and checks four resolvers in parallel until all serve it", false, "polling")
	r.Tool("dns_upsert_record", "write").Tool("dns_lookup", "read").Tool("sleep", "read")
	key := "v=DKIM1; k=rsa; p=" + strings.Repeat("MIIBIjANBgkqhkiG9w0BAQEFAAOCAQ8AMIIBCgKCAQEA", 7)
	r.Calls("Publishing the DKIM key.", fail("dns_upsert_record", obj{"zone": "example-mail.org", "name": "s2026._domainkey", "type": "TXT", "ttl": 3600, "value": key}, "invalid_args",
		fmt.Sprintf(`{"code":"InvalidChangeBatch","message":"Invalid Resource Record: FATAL problem: CharacterStringTooLong (Value is too long) encountered with '%s'","requestId":"%s"}`, key[:24], token(400)[:20])))
	split := `"` + key[:250] + `" "` + key[250:] + `"`
	r.Calls("Splitting it into 255-byte strings.", ok("dns_upsert_record", obj{"zone": "example-mail.org", "name": "s2026._domainkey", "type": "TXT", "ttl": 3600, "value": split}, obj{"change_id": "C0471AB2Q", "status": "PENDING"}))
	resolvers := []string{"1.1.1.1", "8.8.8.8", "9.9.9.9", "208.67.222.222"}
	for round, served := range []int{1, 3, 4} {
		var cs []c
		for i, rs := range resolvers {
			res := obj{"resolver": rs, "name": "s2026._domainkey.example-mail.org", "type": "TXT", "answer": []string{}, "rcode": "NXDOMAIN"}
			if i < served {
				res = obj{"resolver": rs, "name": "s2026._domainkey.example-mail.org", "type": "TXT", "answer": []string{key}, "rcode": "NOERROR", "ttl": 3600 - round*60}
			}
			cs = append(cs, ok("dns_lookup", obj{"name": "s2026._domainkey.example-mail.org", "type": "TXT", "resolver": rs}, res))
		}
		r.Calls("Checking propagation on four resolvers.", cs...)
		if served < 4 {
			r.Calls("Waiting a minute.", ok("sleep", obj{"seconds": 60}, obj{"slept_s": 60}))
		}
	}
	r.Write()
}

// --- a message queue's consumer lag, through a function response wrapper ---

func lagResponse(lags []int, n int) obj {
	parts := []obj{}
	total := 0
	for i, l := range lags {
		parts = append(parts, obj{"partition": i, "current_offset": 918200 + i*1000 - l, "log_end_offset": 918200 + i*1000, "lag": l})
		total += l
	}
	return obj{"name": "get_consumer_lag", "response": obj{"group": "billing-consumers", "topic": "invoices.v2", "state": "Stable", "members": 3, "total_lag": total, "partitions": parts, "collected_at": clock(n)}}
}

func kafkaLagStuck() {
	r := run("kafka-lag-stuck", "an on-call agent polls a consumer group's lag through a function-response wrapper; the consumers are stuck and the lag never moves, only its collection time", true, "noisy_repeat")
	r.Tool("get_consumer_lag", "read")
	for i := 0; i < 5; i++ {
		if i == 2 {
			r.Then()
		}
		r.Calls("Is the lag going down?", ok("get_consumer_lag", obj{"group": "billing-consumers", "topic": "invoices.v2"}, lagResponse([]int{16020, 15877, 16314}, 20+i*45)))
	}
	r.Write()
}

func kafkaLagDraining() {
	r := run("kafka-lag-draining", "an on-call agent restarts a stuck consumer group and polls its lag through a function-response wrapper while it drains", false, "polling")
	r.Tool("get_consumer_lag", "read").Tool("restart_consumers", "write")
	r.Calls("Is the lag going down?", ok("get_consumer_lag", obj{"group": "billing-consumers", "topic": "invoices.v2"}, lagResponse([]int{16020, 15877, 16314}, 20)))
	r.Calls("Restarting the group.", ok("restart_consumers", obj{"group": "billing-consumers", "deployment": "billing-consumer"}, obj{"name": "restart_consumers", "response": obj{"restarted": 3}}))
	for i, f := range []float64{0.8, 0.55, 0.31, 0.12, 0.0} {
		r.Calls("Is the lag going down?", ok("get_consumer_lag", obj{"group": "billing-consumers", "topic": "invoices.v2"}, lagResponse([]int{int(16020 * f), int(15877 * f), int(16314 * f)}, 120+i*45)))
	}
	r.Write()
}

// --- variant interpretation through text observations ---

func rfc1123(n int) string {
	return fmt.Sprintf("Mon, 07 Dec 2026 %02d:%02d:%02d GMT", 10+n/3600, (n/60)%60, n%60)
}

func clinvarText(n int, q string, recs []string) string {
	return fmt.Sprintf("Observation: searched ClinVar (%s) for %q.\nFound %d record(s):\n%s", rfc1123(n), q, len(recs), strings.Join(recs, "\n"))
}

var brca2 = []string{
	"1. VCV000009325 NM_000059.4(BRCA2):c.5946del (p.Ser1982fs) - Pathogenic; review status: reviewed by expert panel; conditions: Hereditary breast and ovarian cancer syndrome",
	"2. VCV000051119 NM_000059.4(BRCA2):c.5946_5947insT (p.Ser1983fs) - Pathogenic; review status: criteria provided, multiple submitters; conditions: Breast-ovarian cancer, familial 2",
}

func clinvarObservationSame() {
	r := run("clinvar-observation-reworded", "a genetics agent searches ClinVar in reworded queries for one frameshift (HGVS, its legacy name, its protein change); every observation lists the same two records under a new search time", true, "paraphrase_loop")
	r.Tool("clinvar_search", "read")
	qs := []string{"BRCA2 c.5946delT pathogenic", "BRCA2 6174delT Ashkenazi founder", "BRCA2 p.Ser1982fs frameshift", "BRCA2 c.5946del classification", "BRCA2 6174delT variant significance"}
	for i, q := range qs {
		if i == 3 {
			r.Then()
		}
		r.Calls("Searching ClinVar.", ok("clinvar_search", obj{"term": q}, clinvarText(30+i*53, q, brca2)))
	}
	r.Write()
}

func clinvarObservationLearns() {
	r := run("clinvar-observation-refined", "a genetics agent refines its ClinVar searches across a gene's variants; each observation brings records it had not seen beside ones it had", false, "query_refinement")
	r.Tool("clinvar_search", "read")
	var recs []string
	for i := 0; i < 9; i++ {
		recs = append(recs, fmt.Sprintf("%d. VCV0000%05d NM_000059.4(BRCA2):c.%d%s - %s; review status: criteria provided, single submitter", i+1, 38000+i*811, 7000+i*131, []string{"C>T", "del", "G>A"}[i%3], []string{"Uncertain significance", "Likely pathogenic", "Benign"}[i%3]))
	}
	qs := []string{"BRCA2 exon 14 missense VUS", "BRCA2 exon 14 variants uncertain significance", "BRCA2 c.7000-7500 variants", "BRCA2 exon 14 and 15 reclassified", "BRCA2 DNA binding domain variants"}
	for i, q := range qs {
		r.Calls("Searching ClinVar.", ok("clinvar_search", obj{"term": q}, clinvarText(30+i*53, q, []string{recs[i], recs[i+2], recs[i+4]})))
	}
	r.Write()
}

// --- an election results feed: transient failures ---

func electionFeedDown() {
	r := run("election-feed-503-backoff", "a newsroom agent retries one race's results with backoff while the feed answers 503 every time, six attempts", true, "error_retry_loop")
	r.Tool("race_results", "read").Retryable("race_results").Tool("sleep", "read")
	wait := 5
	for i := 0; i < 6; i++ {
		if i == 4 {
			r.Then()
		}
		r.Calls("Fetching the Senate race.", fail("race_results", obj{"state": "GA", "race": "senate-runoff", "level": "county"}, "unavailable", fmt.Sprintf("503 Service Unavailable (request %s)", token(500 + i)[:16])))
		r.Calls(fmt.Sprintf("Backing off %ds.", wait), ok("sleep", obj{"seconds": wait}, obj{"slept_s": wait}))
		wait *= 2
	}
	r.Write()
}

func raceResults(reporting int, a, b int, n int) obj {
	return obj{"race": "GA senate-runoff", "precincts_reporting_pct": reporting, "candidates": []obj{{"name": "Okafor", "votes": a}, {"name": "Hale", "votes": b}}, "called": false, "last_updated": clock(n)}
}

func electionFeedRecovers() {
	r := run("election-feed-recovers", "a newsroom agent's results feed answers 503 twice, then the race is polled as counties report", false, "transient_retry")
	r.Tool("race_results", "read").Retryable("race_results").Tool("sleep", "read")
	args := obj{"state": "GA", "race": "senate-runoff", "level": "state"}
	for i := 0; i < 2; i++ {
		r.Calls("Fetching the Senate race.", fail("race_results", args, "unavailable", fmt.Sprintf("503 Service Unavailable (request %s)", token(600 + i)[:16])))
		r.Calls("Backing off.", ok("sleep", obj{"seconds": 5 << i}, obj{"slept_s": 5 << i}))
	}
	for i, pct := range []int{12, 12, 31, 47, 66} {
		r.Calls("Fetching the Senate race.", ok("race_results", args, raceResults(pct, 180000+pct*9100+i*300, 176000+pct*9300, 600+i*300)))
		r.Calls("Waiting for more counties.", ok("sleep", obj{"seconds": 300}, obj{"slept_s": 300}))
	}
	r.Write()
}

// --- a thesis's LaTeX build through a sub-agent ---

func latexLog(run int, pages int, errs []string, t float64) obj {
	out := fmt.Sprintf("Rc files read:\n  NONE\nLatexmk: This is Latexmk, John Collins, 7 Jan. 2026. Version 4.86.\nLatexmk: applying rule 'pdflatex'...\nRule 'pdflatex':  Reasons for rerun\nCategory 'other':\n  Rerun of 'pdflatex' forced or previously required\n------------\nRun number %d of rule 'pdflatex'\n------------\n", run)
	if len(errs) > 0 {
		out += strings.Join(errs, "\n") + fmt.Sprintf("\nOutput written on thesis.pdf (%d pages).\nLatexmk: Errors, so I did not complete making targets\nCollected error summary (may duplicate other messages):\n  pdflatex: Command for 'pdflatex' gave return code 1\nLatexmk: Use the -f option to force complete processing,\n unless error was exceeding maximum runs, or warnings treated as errors.\n", pages)
		return obj{"exit_code": 12, "stdout": out, "stderr": "", "duration_s": t}
	}
	return obj{"exit_code": 0, "stdout": out + fmt.Sprintf("Output written on thesis.pdf (%d pages).\nLatexmk: All targets (thesis.pdf) are up-to-date\n", pages), "stderr": "", "duration_s": t}
}

func latexSubagentFlags() {
	r := run("latex-subagent-flags", "a writing supervisor asks a build worker to make the thesis PDF; the worker re-runs latexmk with other flags while one undefined citation command fails the build the same way", true, "error_retry_loop")
	r.Tool("shell", "write")
	err := "! Undefined control sequence.\nl.212 ...results agree with earlier work~\\citet\n                                                  {hale2024}."
	r.Delegate("Asking the build worker for the PDF.", "build_worker", "Build thesis.pdf from thesis.tex and report any errors", func() {
		for i, cmd := range []string{"latexmk -pdf thesis.tex", "latexmk -pdf -interaction=nonstopmode thesis.tex", "latexmk -pdf -f thesis.tex", "latexmk -pdf -halt-on-error -interaction=nonstopmode thesis.tex", "latexmk -pdflatex='pdflatex -file-line-error' -pdf thesis.tex"} {
			if i == 3 {
				r.Then()
			}
			r.Calls("Building.", ok("shell", obj{"cmd": cmd, "cwd": "/home/ana/thesis"}, latexLog(1, 87, []string{err}, 3.1+float64(i)*0.27)))
		}
	}, "The build fails on an undefined control sequence at line 212.")
	r.Write()
}

func latexSubagentEdits() {
	r := run("latex-subagent-edits", "a build worker runs the same latexmk command after each fix to the thesis; the errors change and shrink until it builds", false, "revisit_with_progress")
	r.Tool("shell", "write").Tool("edit_file", "write")
	errs := [][]string{
		{"! Undefined control sequence.\nl.212 ...results agree with earlier work~\\citet", "! LaTeX Error: File `siunitx.sty' not found.", "! Missing $ inserted.\nl.388 the error is below 5%_"},
		{"! LaTeX Error: File `siunitx.sty' not found.", "! Missing $ inserted.\nl.388 the error is below 5%_"},
		{"! Missing $ inserted.\nl.388 the error is below 5%_"},
		nil,
	}
	fixes := []obj{{"path": "thesis.tex", "find": "\\usepackage{natbib}", "replace": "\\usepackage[numbers]{natbib}"}, {"path": "thesis.tex", "find": "\\usepackage{siunitx}", "replace": "% siunitx not installed\n\\newcommand{\\SI}[2]{#1\\,#2}"}, {"path": "chapters/results.tex", "find": "below 5%_", "replace": "below 5\\%"}}
	r.Delegate("Asking the build worker for the PDF.", "build_worker", "Build thesis.pdf from thesis.tex, fixing errors as you go", func() {
		for i, e := range errs {
			r.Calls("Building.", ok("shell", obj{"cmd": "latexmk -pdf -interaction=nonstopmode thesis.tex", "cwd": "/home/ana/thesis"}, latexLog(1, 87+i*2, e, 3.1+float64(i)*0.31)))
			if i < len(fixes) {
				r.Calls("Fixing the first error.", ok("edit_file", fixes[i], obj{"ok": true, "replacements": 1}))
			}
		}
	}, "thesis.pdf builds: 93 pages.")
	r.Write()
}

// --- a fan-out of researchers, in parallel hand-offs from one turn ---

func fanout(r *b, say string, tasks [][3]string) {
	m := r.Turn(say)
	for _, t := range tasks {
		t := t
		r.DelegateFrom(m, t[0], t[1], func() {
			r.Calls("Searching.", ok("web_search", obj{"query": t[1]}, obj{"results": []obj{{"title": t[2], "url": "https://example.org/" + strings.ReplaceAll(strings.ToLower(t[0]), "_", "-")}}}))
		}, t[2])
	}
}

func researchFanoutAgain() {
	r := run("research-fanout-repeated", "a lead agent fans three sub-questions out to three researchers at once, gets their answers, and fans the same three out again and again", true, "livelock_agents")
	r.Tool("web_search", "read")
	tasks := [][3]string{
		{"researcher_policy", "Summarise the EU heat pump subsidy rules for 2027", "Member states fund 30 to 50% of a heat pump; the 2027 cap is EUR 9,000 per home."},
		{"researcher_market", "Estimate heat pump sales in Germany in 2026", "About 290,000 units in 2026, down from 356,000 in 2024."},
		{"researcher_tech", "Compare air-source and ground-source heat pump efficiency in cold climates", "At -10 C air-source SCOP is about 2.6 against 4.1 for ground-source."},
	}
	for round := 0; round < 3; round++ {
		if round == 2 {
			r.Then()
		}
		fanout(r, "Fanning the three questions out.", tasks)
	}
	r.Write()
}

func researchFanoutDistinct() {
	r := run("research-fanout-rounds", "a lead agent fans sub-questions out to three researchers at once in three rounds, each round's questions following from the last's answers", false, "legit_recursion")
	r.Tool("web_search", "read")
	rounds := [][][3]string{
		{{"researcher_policy", "Summarise the EU heat pump subsidy rules for 2027", "Member states fund 30 to 50%; the 2027 cap is EUR 9,000."},
			{"researcher_market", "Estimate heat pump sales in Germany in 2026", "About 290,000 units in 2026."},
			{"researcher_tech", "Compare air-source and ground-source efficiency in cold climates", "At -10 C, SCOP 2.6 against 4.1."}},
		{{"researcher_policy", "How does Germany's BEG programme apply the EU cap?", "BEG pays 30% base plus up to 40% in bonuses, capped at 70%."},
			{"researcher_market", "Why did German heat pump sales fall from 2024 to 2026?", "Subsidy uncertainty after the 2023 heating law debate and higher rates."},
			{"researcher_tech", "What share of German homes can use ground-source pumps?", "About 20%, limited by plot size and drilling permits."}},
		{{"researcher_policy", "Which BEG bonuses apply to a 1970s detached house?", "The efficiency bonus (5%) and the speed bonus (20%) if replacing oil."},
			{"researcher_market", "What is the 2027 forecast for German heat pump sales?", "BWP forecasts 330,000 units."},
			{"researcher_tech", "What SCOP does an air-source pump reach in a 1970s house after insulation?", "About 3.2 with a 45 C flow temperature."}},
	}
	for _, tasks := range rounds {
		fanout(r, "Fanning the next questions out.", tasks)
	}
	r.Write()
}

// --- subtitle tracks: page tokens ---

func cues(from, n int) []obj {
	var out []obj
	lines := []string{"Where were you last night?", "At the station, waiting.", "For whom?", "You know for whom.", "The train was late again.", "It always is, in winter.", "Then why wait?", "Because she said she would come."}
	for i := from; i < from+n; i++ {
		s := i * 2100
		out = append(out, obj{"index": i + 1, "start": fmt.Sprintf("00:%02d:%02d,%03d", s/60000, (s/1000)%60, s%1000), "end": fmt.Sprintf("00:%02d:%02d,%03d", (s+1800)/60000, ((s+1800)/1000)%60, (s+1800)%1000), "text": lines[i%len(lines)] + fmt.Sprintf(" (%d)", i+1)})
	}
	return out
}

func subtitlesTokenStuck() {
	r := run("subtitles-page-token-stuck", "a localisation agent reads a subtitle track page by page; the API hands back the token it was given and the same page, and the agent follows it", true, "consecutive_repeat")
	r.Tool("list_captions", "read")
	r.Calls("Reading the French track.", ok("list_captions", obj{"track": "trk_fr_0192", "pageSize": 50}, obj{"cues": cues(0, 50), "nextPageToken": "CDIQAA"}))
	for i := 0; i < 4; i++ {
		if i == 2 {
			r.Then()
		}
		r.Calls("Next page.", ok("list_captions", obj{"track": "trk_fr_0192", "pageSize": 50, "pageToken": "CDIQAA"}, obj{"cues": cues(50, 50), "nextPageToken": "CDIQAA"}))
	}
	r.Write()
}

func subtitlesPaged() {
	r := run("subtitles-paged", "a localisation agent reads a subtitle track page by page with the tokens the API hands back, then fixes two cues", false, "pagination")
	r.Tool("list_captions", "read").Tool("update_caption", "write")
	tokens := []string{"", "CDIQAA", "CGQQAA", "CJYBEAA", "CMgBEAA"}
	for i, tk := range tokens {
		args := obj{"track": "trk_fr_0192", "pageSize": 50}
		if tk != "" {
			args["pageToken"] = tk
		}
		res := obj{"cues": cues(i*50, 50)}
		if i+1 < len(tokens) {
			res["nextPageToken"] = tokens[i+1]
		}
		r.Calls("Reading the French track.", ok("list_captions", args, res))
	}
	r.Calls("Fixing cue 117.", ok("update_caption", obj{"track": "trk_fr_0192", "index": 117, "text": "Pour qui ?"}, obj{"updated": true}))
	r.Calls("Fixing cue 204.", ok("update_caption", obj{"track": "trk_fr_0192", "index": 204, "text": "Parce qu'elle avait dit qu'elle viendrait."}, obj{"updated": true}))
	r.Write()
}

// --- a write retried after transient errors with its idempotency key ---

func depositIdempotentRetry() {
	r := run("deposit-idempotent-retry", "a planning agent pays a venue deposit; the payment API times out twice and is retried with the same idempotency key, then succeeds; then the florist's deposit", false, "transient_retry")
	r.Tool("create_payment", "high_risk").Retryable("create_payment")
	args := obj{"payee": "ven_lakeside", "amount_gbp": 2670, "reference": "hold_7731 deposit", "idempotency_key": "dep-hold_7731-1"}
	r.Calls("Paying the venue deposit.", fail("create_payment", args, "timeout", "upstream timed out after 30s"))
	r.Calls("Retrying with the same idempotency key.", fail("create_payment", args, "timeout", "upstream timed out after 30s"))
	r.Calls("Retrying once more.", ok("create_payment", args, obj{"payment_id": "pay_55120", "status": "succeeded", "amount_gbp": 2670}))
	r.Calls("Paying the florist's deposit.", ok("create_payment", obj{"payee": "sup_petalandstem", "amount_gbp": 450, "reference": "florals deposit", "idempotency_key": "dep-florals-1"}, obj{"payment_id": "pay_55121", "status": "succeeded", "amount_gbp": 450}))
	r.Write()
}
