//go:build ignore

// gen writes the twenty-ninth held-out probe, written before reading the
// guard's rules again, in kinds no earlier probe uses: hand-off fan-outs
// from one turn (one receiver stuck while the others move, the last
// receiver's verdict the same while its tasks move, the same question to
// several agents at once), map-reduce sub-agents (mappers over chunks, a
// reducer sending a chunk back in other words), results that are paged or
// streamed (log streams followed by sequence number, cursors re-encoded
// each call), queries reworded across languages and notations (a
// compound's name, SMILES, InChIKey and CAS number; a date written four
// ways; one question in four languages), stamps and counters in the
// arguments (request ids, cache busters, step counters, idempotency keys)
// that change while nothing is learned, and long polls that do learn
// something (an update feed with its offset, a blocking query with its
// index). The domains: contract review, localisation, chemistry
// procurement, calendars, seismology, vessel tracking, aviation notices,
// CI logs, a bot's update feed, a service catalog's key/value watch,
// payments, a crypto order book, travel reviews, a recipe converter,
// geocoding and a museum's collection API.
//
// A loop is marked where the probes before it mark one: the third call
// asking the same thing after two answers alike (its substance, fetch
// metadata aside) with nothing written; the fourth asking in other words
// or with other arguments that learns nothing; the next call after three
// failures alike; the third hand-off of one sub-task to one agent; the
// fifth attempt of one call after transient failures.
package main

import (
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
	return tracegen.NewProbe("probe29-"+id, desc, loop, kind)
}

func uuidish(n int) string {
	return fmt.Sprintf("%08x-%04x-4%03x-a%03x-%012x", 0x5f3a9c01+n*7919, (n*131)%65536, (n*17)%4096, (n*29)%4096, 0x1b2c3d4e5f+int64(n)*104729)
}

// h is one hand-off of a fan-out: the receiver, its task, what it does and
// what it answers.
type h struct {
	to, task string
	body     func()
	verdict  string
	mark     bool
}

// fan hands every h out from one model turn.
func fan(r *b, say string, hs ...h) {
	m := r.Turn(say)
	for _, x := range hs {
		if x.mark {
			r.Then()
		}
		r.DelegateFrom(m, x.to, x.task, x.body, x.verdict)
	}
}

func main() {
	translateFanoutOneStuck()
	translateFanoutLastSame()
	contractMapReduceReworded()
	contractMapReduceAlike()
	ensembleSameQuestion()
	ensembleThirdRound()
	ciLogStreamRefollowed()
	ciLogStreamFollowed()
	museumCursorReencoded()
	museumCursorShifting()
	compoundNotations()
	compoundNotationsFound()
	calendarDateNotations()
	reviewsLanguagesSame()
	reviewsLanguagesLocal()
	notamRequestIDs()
	statusCacheBuster()
	orderBookNonce()
	graphStepCounter()
	cardDeclinedNewKeys()
	quakeWindowTooLarge()
	quakeWindowNarrowed()
	vesselPingPong()
	vesselUnderway()
	botUpdatesLongPoll()
	consulBlockingWatch()
	exportLongPollPending()
	geocodeParallelDuplicates()
	geocodeParallelSameBuilding()
	recipeUnitsConverted()
	abstractFanoutEditorStuck()
	abstractFanoutEditorMoves()
}

// --- localisation: a fan-out of translators from one turn ---

func translateFanoutOneStuck() {
	r := run("translate-fanout-one-stuck", "a localisation lead fans each round's paragraphs out to three translators from one turn; the German and French ones get the next paragraph each round, the Japanese one is handed paragraph 1 again each round and answers it alike", true, "livelock_agents")
	r.Tool("tm_lookup", "read")
	paras := []string{"Welcome to your new thermostat.", "Press and hold the dial for three seconds to pair it.", "The display dims after thirty seconds of inactivity."}
	de := []string{"Willkommen bei Ihrem neuen Thermostat.", "Halten Sie das Rad drei Sekunden lang gedrückt, um es zu koppeln.", "Die Anzeige wird nach dreißig Sekunden Inaktivität gedimmt."}
	fr := []string{"Bienvenue dans votre nouveau thermostat.", "Maintenez la molette enfoncée trois secondes pour l'appairer.", "L'écran s'assombrit après trente secondes d'inactivité."}
	for round := 0; round < 3; round++ {
		p := paras[round]
		fan(r, "Handing out this round's paragraphs.",
			h{to: "translator_de", task: fmt.Sprintf("Translate paragraph %d into German: %q", round+1, p), verdict: de[round], body: func() {
				r.Calls("Checking the translation memory.", ok("tm_lookup", obj{"source": p, "target_lang": "de"}, obj{"matches": []obj{}, "fuzzy_best": 0.41}))
			}},
			h{to: "translator_fr", task: fmt.Sprintf("Translate paragraph %d into French: %q", round+1, p), verdict: fr[round], body: func() {
				r.Calls("Checking the translation memory.", ok("tm_lookup", obj{"source": p, "target_lang": "fr"}, obj{"matches": []obj{}, "fuzzy_best": 0.38}))
			}},
			h{to: "translator_ja", task: fmt.Sprintf("Translate paragraph 1 into Japanese: %q", paras[0]), verdict: "新しいサーモスタットへようこそ。", mark: round == 2, body: func() {
				r.Calls("Checking the translation memory.", ok("tm_lookup", obj{"source": paras[0], "target_lang": "ja"}, obj{"matches": []obj{{"target": "新しいサーモスタットへようこそ。", "score": 1.0}}}))
			}},
		)
	}
	r.Write()
}

func translateFanoutLastSame() {
	r := run("translate-fanout-last-same", "a localisation lead fans each round's paragraph out to a German translator, a French translator and a terminology checker from one turn; the translators move on each round, and the checker, handed each round's new paragraph, finds nothing each time", false, "legit_recursion")
	r.Tool("tm_lookup", "read").Tool("termbase_search", "read")
	paras := []string{"Welcome to your new thermostat.", "Press and hold the dial for three seconds to pair it.", "The display dims after thirty seconds of inactivity.", "Remove the batteries before mounting the back plate."}
	de := []string{"Willkommen bei Ihrem neuen Thermostat.", "Halten Sie das Rad drei Sekunden lang gedrückt, um es zu koppeln.", "Die Anzeige wird nach dreißig Sekunden Inaktivität gedimmt.", "Entnehmen Sie die Batterien, bevor Sie die Rückplatte montieren."}
	fr := []string{"Bienvenue dans votre nouveau thermostat.", "Maintenez la molette enfoncée trois secondes pour l'appairer.", "L'écran s'assombrit après trente secondes d'inactivité.", "Retirez les piles avant de fixer la plaque arrière."}
	for round, p := range paras {
		round, p := round, p
		fan(r, "Handing out the next paragraph.",
			h{to: "translator_de", task: fmt.Sprintf("Translate paragraph %d into German: %q", round+1, p), verdict: de[round], body: func() {
				r.Calls("Checking the translation memory.", ok("tm_lookup", obj{"source": p, "target_lang": "de"}, obj{"matches": []obj{}, "fuzzy_best": 0.3 + float64(round)/20}))
			}},
			h{to: "translator_fr", task: fmt.Sprintf("Translate paragraph %d into French: %q", round+1, p), verdict: fr[round], body: func() {
				r.Calls("Checking the translation memory.", ok("tm_lookup", obj{"source": p, "target_lang": "fr"}, obj{"matches": []obj{}, "fuzzy_best": 0.28 + float64(round)/20}))
			}},
			h{to: "term_checker", task: fmt.Sprintf("Check paragraph %d against the termbase: %q", round+1, p), verdict: "No terminology issues found.", body: func() {
				r.Calls("Searching the termbase.", ok("termbase_search", obj{"text": p, "product": "thermostat-t3"}, obj{"hits": []obj{}}))
			}},
		)
	}
	r.Write()
}

// --- contract review: map-reduce sub-agents ---

var clauses = []string{
	"12.1 Either party may terminate this Agreement on ninety (90) days' written notice.",
	"12.2 Supplier may suspend the Services without notice if any invoice is unpaid for more than fifteen (15) days.",
	"14.3 Supplier's aggregate liability shall not exceed the fees paid in the one (1) month preceding the claim.",
	"15.1 Customer shall indemnify Supplier against all claims arising from Customer Data.",
	"18.4 This Agreement renews automatically for successive three (3) year terms.",
	"21.2 Supplier may assign this Agreement without Customer's consent.",
}

func contractMapReduceReworded() {
	r := run("contract-mapreduce-reworded", "a contract reviewer maps six clauses to clause-analyst sub-agents, then its reducer, unhappy with clause 14.3's summary, sends the same clause back to the analyst in other words, which answers alike each time", true, "livelock_agents")
	r.Tool("clause_playbook", "read")
	var hs []h
	for i, cl := range clauses {
		cl := cl
		hs = append(hs, h{to: "clause_analyst", task: fmt.Sprintf("Chunk %d/6: flag risks for the customer in: %s", i+1, cl), verdict: fmt.Sprintf("Chunk %d: %s", i+1, []string{"standard", "high risk: suspension without notice", "high risk: liability cap one month of fees", "medium risk: uncapped indemnity", "medium risk: three-year auto-renewal", "medium risk: free assignment"}[i]), body: func() {
			r.Calls("Reading the playbook.", ok("clause_playbook", obj{"clause_text": cl}, obj{"position": "negotiate", "fallbacks": 2}))
		}})
	}
	fan(r, "Mapping the clauses.", hs...)
	asks := []string{
		"Re-examine clause 14.3 (liability cap): is one month of fees market standard?",
		"Clause 14.3 again: compare the liability cap to market practice and give a fallback",
		"Please look once more at the limitation of liability in 14.3 and how it compares",
		"Liability cap, section 14.3: benchmark it and propose wording",
		"One more pass on 14.3's cap on liability, please",
	}
	for i, a := range asks {
		if i == 2 {
			r.Then()
		}
		r.Delegate("The reducer needs more on 14.3.", "clause_analyst", a, nil, "Clause 14.3: high risk. The cap of one month of fees is below market (12 months is usual); fallback: fees paid in the preceding 12 months.")
	}
	r.Write()
}

func contractMapReduceAlike() {
	r := run("contract-mapreduce-alike", "a contract reviewer maps six clauses to one clause-analyst agent from one turn; four clauses come back with the same short verdict, then a reducer agent writes the memo", false, "batch_progress")
	r.Tool("clause_playbook", "read").Tool("save_memo", "write")
	var hs []h
	verdicts := []string{"No issue for the customer.", "High risk: suspension without notice.", "No issue for the customer.", "No issue for the customer.", "No issue for the customer.", "Medium risk: free assignment."}
	for i, cl := range clauses {
		cl, i := cl, i
		hs = append(hs, h{to: "clause_analyst", task: fmt.Sprintf("Chunk %d/6: flag risks for the customer in: %s", i+1, cl), verdict: verdicts[i], body: func() {
			r.Calls("Reading the playbook.", ok("clause_playbook", obj{"clause_text": cl}, obj{"position": []string{"accept", "negotiate"}[i%2], "fallbacks": i % 3}))
		}})
	}
	fan(r, "Mapping the clauses.", hs...)
	r.Delegate("Reducing.", "memo_writer", "Write the review memo from the six chunk verdicts", func() {
		r.Calls("Saving the memo.", ok("save_memo", obj{"matter": "MSA-2026-118", "body": "Two issues: 12.2 suspension without notice (high), 21.2 free assignment (medium)."}, obj{"saved": true, "version": 3}))
	}, "Memo saved: two issues.")
	r.Write()
}

// --- the same question to several agents at once ---

func ensembleSameQuestion() {
	r := run("ensemble-same-question", "a lead asks three forecasting agents the same question at once, gets three answers, and asks the same three the same question again and again", true, "livelock_agents")
	r.Tool("fetch_series", "read")
	q := "Forecast Q1 2027 electricity demand for the NL grid in TWh"
	for round := 0; round < 3; round++ {
		var hs []h
		for j, a := range []string{"forecaster_arima", "forecaster_gbm", "forecaster_llm"} {
			j := j
			hs = append(hs, h{to: a, task: q, mark: round == 2 && j == 0, verdict: fmt.Sprintf("%.1f TWh", 29.4+float64(j)*0.6), body: func() {
				r.Calls("Fetching the series.", ok("fetch_series", obj{"series": []string{"nl_load_monthly", "nl_load_hourly", "nl_load_news"}[j], "from": "2019-01"}, obj{"points": 95 + j*700, "last": obj{"month": "2026-11", "twh": 9.8}}))
			}})
		}
		fan(r, "Asking the forecasters.", hs...)
	}
	r.Write()
}

func ensembleThirdRound() {
	r := run("ensemble-questions", "a lead asks three forecasting agents the same question at once for each of three quarters, and averages their answers", false, "legit_recursion")
	r.Tool("fetch_series", "read")
	for round, qtr := range []string{"Q1 2027", "Q2 2027", "Q3 2027"} {
		var hs []h
		for j, a := range []string{"forecaster_arima", "forecaster_gbm", "forecaster_llm"} {
			j, qtr := j, qtr
			hs = append(hs, h{to: a, task: "Forecast " + qtr + " electricity demand for the NL grid in TWh", verdict: fmt.Sprintf("%.1f TWh", 29.4-float64(round)*2.1+float64(j)*0.6), body: func() {
				r.Calls("Fetching the series.", ok("fetch_series", obj{"series": []string{"nl_load_monthly", "nl_load_hourly", "nl_load_news"}[j], "from": "2019-01", "season": qtr[:2]}, obj{"points": 95 + j*700, "season_mean_twh": 30.1 - float64(round)*2.3}))
			}})
		}
		fan(r, "Asking the forecasters.", hs...)
	}
	r.Write()
}

// --- CI logs: a streamed result, followed by sequence number ---

var buildLines = []string{
	"Step 4/11 : RUN npm ci",
	"npm WARN deprecated inflight@1.0.6",
	"added 1423 packages in 41s",
	"Step 5/11 : RUN npm run build",
	"> web@4.18.3 build",
	"vite v5.4.2 building for production...",
	"transforming (812) src/routes/checkout.tsx",
	"✓ 2204 modules transformed.",
	"Step 6/11 : RUN npm test -- --ci",
	"PASS src/cart.test.ts",
	"PASS src/checkout.test.ts",
	"Tests: 188 passed, 188 total",
}

// chunks is a log stream's answer: its chunks as the server sent them,
// each with its sequence number and when it was received.
func chunks(from, n, at int) obj {
	var cs []obj
	for i := from; i < from+n && i < len(buildLines); i++ {
		cs = append(cs, obj{"seq": i + 1, "data": buildLines[i], "received_at": clock(at + i)})
	}
	return obj{"job": "build-web-88412", "chunks": cs, "stream_state": "open", "last_seq": from + n}
}

func ciLogStreamRefollowed() {
	r := run("ci-log-stream-refollowed", "a CI agent follows a build's log stream; the build hangs in npm ci and the agent re-opens the stream from the start again and again, the same three chunks coming back with new receive times", true, "noisy_repeat")
	r.Tool("stream_job_log", "read")
	for i := 0; i < 5; i++ {
		if i == 2 {
			r.Then()
		}
		r.Calls("Following the build log.", ok("stream_job_log", obj{"job": "build-web-88412", "follow": true, "max_wait_s": 20}, chunks(0, 3, 100+i*40)))
	}
	r.Write()
}

func ciLogStreamFollowed() {
	r := run("ci-log-stream-followed", "a CI agent follows a build's log stream from the last sequence number it saw; each call brings the next chunks until the tests pass", false, "pagination")
	r.Tool("stream_job_log", "read")
	for i, from := 0, 0; from < len(buildLines); i, from = i+1, from+3 {
		args := obj{"job": "build-web-88412", "follow": true, "max_wait_s": 20}
		if from > 0 {
			args["after_seq"] = from
		}
		r.Calls("Following the build log.", ok("stream_job_log", args, chunks(from, 3, 100+i*40)))
	}
	r.Write()
}

// --- a museum's collection API: cursors ---

func artwork(i int) obj {
	names := []string{"Still Life with Lemons", "River Landscape", "Portrait of a Lady", "The Ferry", "Tulips in a Vase", "Winter Skaters", "The Mill", "A Kitchen Interior"}
	return obj{"objectNumber": fmt.Sprintf("SK-A-%d", 1800+i*13), "title": names[i%len(names)], "maker": []string{"Willem Claesz. Heda", "Salomon van Ruysdael", "Jan Verspronck", "Esaias van de Velde"}[i%4], "dated": 1620 + i*3}
}

func cursorOf(n int) string {
	return strings.TrimRight(fmt.Sprintf("eyJvIjo%dLCJ0IjoxNzY1MTAwM%05dfQ", 40, 10000+n*713), "=")
}

func museumCursorReencoded() {
	r := run("museum-cursor-reencoded", "a catalogue agent pages a museum's search by cursor; the API re-encodes the same position with a new time in each cursor and hands back the same four works each time", true, "hidden_loop")
	r.Tool("collection_search", "read")
	r.Calls("Searching the collection.", ok("collection_search", obj{"q": "still life", "century": 17, "pageSize": 4}, obj{"artObjects": []obj{artwork(0), artwork(1), artwork(2), artwork(3)}, "next": cursorOf(0), "count": 212}))
	for i := 1; i <= 5; i++ {
		if i == 4 {
			r.Then()
		}
		r.Calls("Next page.", ok("collection_search", obj{"q": "still life", "century": 17, "pageSize": 4, "cursor": cursorOf(i - 1)}, obj{"artObjects": []obj{artwork(4), artwork(5), artwork(6), artwork(7)}, "next": cursorOf(i), "count": 212}))
	}
	r.Write()
}

func museumCursorShifting() {
	r := run("museum-cursor-shifting", "a catalogue agent pages a museum's search by cursor while new records are added; each page overlaps the last by a work or two but brings new ones", false, "pagination")
	r.Tool("collection_search", "read")
	start := []int{0, 3, 6, 8, 11, 14}
	for i, s := range start {
		args := obj{"q": "still life", "century": 17, "pageSize": 4}
		if i > 0 {
			args["cursor"] = cursorOf(i - 1)
		}
		r.Calls("Reading the collection.", ok("collection_search", args, obj{"artObjects": []obj{artwork(s), artwork(s + 1), artwork(s + 2), artwork(s + 3)}, "next": cursorOf(i), "count": 212 + i}))
	}
	r.Write()
}

// --- chemistry procurement: one compound in four notations ---

func compoundNotations() {
	r := run("compound-notations", "a lab procurement agent searches a supplier's catalogue for one compound by its name, its SMILES, its InChIKey, its CAS number and its IUPAC name; each finds nothing", true, "hidden_loop")
	r.Tool("supplier_search", "read")
	qs := []obj{
		{"query": "acetylsalicylic acid", "grade": "USP"},
		{"query": "CC(=O)OC1=CC=CC=C1C(=O)O", "grade": "USP", "type": "smiles"},
		{"query": "BSYNRYMUTXBXSQ-UHFFFAOYSA-N", "grade": "USP", "type": "inchikey"},
		{"query": "50-78-2", "grade": "USP", "type": "cas"},
		{"query": "2-acetoxybenzoic acid", "grade": "USP"},
		{"query": "aspirin", "grade": "USP"},
	}
	for i, q := range qs {
		if i == 3 {
			r.Then()
		}
		r.Calls("Searching the supplier.", ok("supplier_search", q, obj{"results": []obj{}, "total": 0, "suggestion": nil}))
	}
	r.Write()
}

func compoundNotationsFound() {
	r := run("compound-notations-found", "a lab procurement agent searches for a compound by name (nothing), by SMILES (a near match), by CAS number (the product), then checks its stock and orders", false, "revisit_with_progress")
	r.Tool("supplier_search", "read").Tool("stock_check", "read").Tool("place_order", "write")
	r.Calls("Searching by name.", ok("supplier_search", obj{"query": "acetylsalicylic acid", "grade": "USP"}, obj{"results": []obj{}, "total": 0}))
	r.Calls("By structure.", ok("supplier_search", obj{"query": "CC(=O)OC1=CC=CC=C1C(=O)O", "grade": "USP", "type": "smiles"}, obj{"results": []obj{{"sku": "A5376-100G", "name": "Acetylsalicylic acid, analytical standard", "grade": "analytical", "similarity": 1.0}}, "total": 1}))
	r.Calls("By CAS, in USP grade.", ok("supplier_search", obj{"query": "50-78-2", "grade": "USP", "type": "cas"}, obj{"results": []obj{{"sku": "1044006-200MG", "name": "Aspirin USP reference standard", "grade": "USP"}}, "total": 1}))
	r.Calls("Stock?", ok("stock_check", obj{"sku": "1044006-200MG", "site": "Leiden"}, obj{"available": 6, "lead_days": 2}))
	r.Calls("Ordering.", ok("place_order", obj{"sku": "1044006-200MG", "qty": 2, "cost_center": "CHEM-QC-4"}, obj{"order": "PO-778120", "status": "accepted"}))
	r.Write()
}

// --- a calendar: one date in four notations ---

func calendarDateNotations() {
	r := run("calendar-date-notations", "a scheduling agent asks for free slots on one day written as ISO, as a European date, as an American date, as words and as a weekday; each answer is the same empty list", true, "hidden_loop")
	r.Tool("find_free_slots", "read")
	days := []string{"2026-12-10", "10/12/2026", "12/10/2026", "10 December 2026", "Thursday, Dec 10", "2026-W50-4"}
	for i, d := range days {
		if i == 3 {
			r.Then()
		}
		r.Calls("Looking for a free hour.", ok("find_free_slots", obj{"attendees": []string{"ines@example.com", "tom@example.com", "room-4b@example.com"}, "date": d, "duration_min": 60, "tz": "Europe/Lisbon"}, obj{"slots": []obj{}, "reason": "no common free time"}))
	}
	r.Write()
}

// --- travel reviews: one question in four languages ---

func reviewsLanguagesSame() {
	r := run("reviews-languages-same", "a travel agent searches hotel reviews for a quiet hotel near the Sagrada Familia in English, Spanish, Catalan, French and German; the index is language-blind and answers the same three hotels each time", true, "hidden_loop")
	r.Tool("review_search", "read")
	res := obj{"hotels": []obj{{"name": "Hotel Gaudí Jardí", "score": 8.7, "quiet_mentions": 41}, {"name": "Casa Mallorca 212", "score": 8.4, "quiet_mentions": 29}, {"name": "Sagrada Rooms", "score": 8.1, "quiet_mentions": 17}}}
	qs := []string{"quiet hotel near Sagrada Familia", "hotel tranquilo cerca de la Sagrada Familia", "hotel tranquil a prop de la Sagrada Família", "hôtel calme près de la Sagrada Familia", "ruhiges Hotel in der Nähe der Sagrada Familia"}
	for i, q := range qs {
		if i == 3 {
			r.Then()
		}
		r.Calls("Searching reviews.", ok("review_search", obj{"q": q, "city": "Barcelona", "limit": 3}, res))
	}
	r.Write()
}

func reviewsLanguagesLocal() {
	r := run("reviews-languages-local", "a travel agent searches hotel reviews for a quiet hotel in English, Spanish, Catalan and French; each language's reviewers name other hotels", false, "revisit_with_progress")
	r.Tool("review_search", "read")
	qs := []string{"quiet hotel near Sagrada Familia", "hotel tranquilo cerca de la Sagrada Familia", "hotel tranquil a prop de la Sagrada Família", "hôtel calme près de la Sagrada Familia"}
	names := [][]string{{"Hotel Gaudí Jardí", "Casa Mallorca 212", "Sagrada Rooms"}, {"Hostal Rosellón", "Hotel Gaudí Jardí", "Aparthotel Marina"}, {"Pensió Provença", "Hostal Rosellón", "Hotel Sant Pau"}, {"Hôtel Diagonal Zero", "Pensió Provença", "Casa Mallorca 212"}}
	for i, q := range qs {
		var hs []obj
		for j, n := range names[i] {
			hs = append(hs, obj{"name": n, "score": 8.8 - float64(j)*0.3, "quiet_mentions": 40 - j*9 - i})
		}
		r.Calls("Searching reviews.", ok("review_search", obj{"q": q, "city": "Barcelona", "limit": 3}, obj{"hotels": hs}))
	}
	r.Write()
}

// --- stamps and counters in the arguments ---

func notamRequestIDs() {
	r := run("notam-request-ids", "a flight-ops agent fetches the NOTAMs for an airport again and again, each request with a new request id, a client time and an attempt counter; the notices are the same each time", true, "noisy_repeat")
	r.Tool("notam_fetch", "read")
	notams := []obj{
		{"id": "A4127/26", "text": "RWY 18C/36C CLSD DUE TO WIP", "from": "2612070500", "to": "2612071500"},
		{"id": "A4133/26", "text": "TWY B BTN B3 AND B5 CLSD", "from": "2612060000", "to": "2612202359"},
		{"id": "A4140/26", "text": "ILS RWY 06 GP U/S", "from": "2612070800", "to": "2612071800"},
	}
	for i := 0; i < 5; i++ {
		if i == 2 {
			r.Then()
		}
		r.Calls("Fetching the notices for EHAM.", ok("notam_fetch", obj{"icao": "EHAM", "request_id": uuidish(i), "client_time": clock(300 + i*45), "attempt": i + 1}, obj{"icao": "EHAM", "notams": notams, "count": 3}))
	}
	r.Write()
}

func statusCacheBuster() {
	r := run("status-cache-buster", "an SRE agent reads a vendor's status page through a fetch tool, adding a cache-busting query parameter each time; the page says the same incident the same way", true, "noisy_repeat")
	r.Tool("http_get", "read")
	body := "Investigating - We are seeing elevated error rates for API requests in eu-west-2. Posted Dec 7, 09:12 UTC\nComponents: API (partial outage), Dashboard (operational)"
	for i := 0; i < 5; i++ {
		if i == 2 {
			r.Then()
		}
		r.Calls("Checking the vendor's status.", ok("http_get", obj{"url": fmt.Sprintf("https://status.example-pay.com/incidents/xq81?_cb=%d", 1765098000123+int64(i)*61013)}, obj{"status": 200, "body": body}))
	}
	r.Write()
}

func orderBookNonce() {
	r := run("orderbook-nonce", "a trading agent snapshots an order book with a fresh nonce in each signed request; the best bid and ask move between snapshots, and it places a limit order", false, "polling")
	r.Tool("orderbook_snapshot", "read").Tool("place_limit_order", "write")
	for i := 0; i < 5; i++ {
		bid := 67012.5 + float64(i*i)*3.5
		r.Calls("Snapshotting the book.", ok("orderbook_snapshot", obj{"pair": "BTC-EUR", "depth": 5, "nonce": 1765098001000 + i*2300}, obj{"bids": []obj{{"px": bid, "qty": 0.41 + float64(i)/100}}, "asks": []obj{{"px": bid + 4.0, "qty": 0.37}}, "seq": 88123401 + i*57}))
	}
	r.Calls("Placing the order.", ok("place_limit_order", obj{"pair": "BTC-EUR", "side": "buy", "px": 67060.0, "qty": 0.05, "nonce": 1765098013000}, obj{"order_id": "o-55120", "status": "open"}))
	r.Write()
}

func graphStepCounter() {
	r := run("graph-step-counter", "a graph-framework agent passes its step counter and a run id in every tool call; it reads the same shipment's customs status each step and learns nothing new", true, "noisy_repeat")
	r.Tool("customs_status", "read")
	for i := 0; i < 5; i++ {
		if i == 2 {
			r.Then()
		}
		r.Calls("Checking customs.", ok("customs_status", obj{"awb": "176-88120315", "metadata": obj{"run_id": "run-7f2a", "step": 4 + i*2, "langgraph_node": "check_customs"}}, obj{"awb": "176-88120315", "status": "HELD", "hold_reason": "commercial invoice missing HS code", "office": "NL000396"}))
	}
	r.Write()
}

func cardDeclinedNewKeys() {
	r := run("card-declined-new-keys", "a checkout agent retries a card payment with a fresh idempotency key each time; the issuer declines it the same way", true, "error_retry_loop")
	r.Tool("create_payment", "write")
	for i := 0; i < 5; i++ {
		if i == 3 {
			r.Then()
		}
		r.Calls("Charging the card.", fail("create_payment", obj{"amount": 18900, "currency": "EUR", "payment_method": "pm_1QfA2b", "idempotency_key": uuidish(40 + i)}, "forbidden", obj{"error": obj{"type": "card_error", "code": "card_declined", "decline_code": "do_not_honor", "request_id": fmt.Sprintf("req_%x", 0xa11f0+i*977)}}))
	}
	r.Write()
}

// --- seismology: an error that other arguments do not change ---

func quakeWindowTooLarge() {
	r := run("quake-window-too-large", "a seismology agent queries an earthquake catalogue over ten years, lowering the minimum magnitude each time; the service refuses each for its result count in the same words", true, "error_retry_loop")
	r.Tool("fdsn_event_query", "read")
	for i, m := range []float64{2.5, 2.4, 2.3, 2.0, 1.8} {
		if i == 3 {
			r.Then()
		}
		r.Calls("Querying the catalogue.", fail("fdsn_event_query", obj{"starttime": "2016-01-01", "endtime": "2026-12-01", "minmagnitude": m, "minlatitude": 35.0, "maxlatitude": 42.0, "minlongitude": 19.0, "maxlongitude": 30.0}, "invalid_args", "Error 400: Bad Request\n\nRequest would return too many events. Query limit is 20000 events.\n\nUsage details are available from https://earthquake.example.gov/fdsnws/event/1\n\nRequest:\n/fdsnws/event/1/query?..."))
	}
	r.Write()
}

func quakeWindowNarrowed() {
	r := run("quake-window-narrowed", "a seismology agent's ten-year query is refused for its size; it splits the window by year and each year answers", false, "revisit_with_progress")
	r.Tool("fdsn_event_query", "read")
	box := func(from, to string) obj {
		return obj{"starttime": from, "endtime": to, "minmagnitude": 2.5, "minlatitude": 35.0, "maxlatitude": 42.0, "minlongitude": 19.0, "maxlongitude": 30.0}
	}
	r.Calls("Querying the catalogue.", fail("fdsn_event_query", box("2016-01-01", "2026-12-01"), "invalid_args", "Error 400: Bad Request\n\nRequest would return too many events. Query limit is 20000 events."))
	r.Calls("Again, one year.", fail("fdsn_event_query", box("2016-01-01", "2016-12-31"), "invalid_args", "Error 400: Bad Request\n\nRequest would return too many events. Query limit is 20000 events."))
	for y := 2016; y < 2021; y++ {
		r.Calls("Half a year at a time.", ok("fdsn_event_query", box(fmt.Sprintf("%d-01-01", y), fmt.Sprintf("%d-06-30", y)), obj{"type": "FeatureCollection", "metadata": obj{"count": 8100 + (y-2016)*977}, "features_head": []obj{{"id": fmt.Sprintf("us7000%04d", y*3), "mag": 4.1 + float64(y-2016)/10}}}))
	}
	r.Write()
}

// --- vessel tracking ---

func vesselPingPong() {
	r := run("vessel-ping-pong", "a port agent alternates between a vessel's AIS position and its ETA at the berth; the ship lies at anchor and both answers stay the same", true, "ping_pong")
	r.Tool("ais_position", "read").Tool("berth_eta", "read")
	for i := 0; i < 4; i++ {
		if i == 2 {
			r.Then()
		}
		r.Calls("Where is she now?", ok("ais_position", obj{"mmsi": 244650123}, obj{"mmsi": 244650123, "lat": 51.9612, "lon": 3.9874, "sog_kn": 0.1, "nav_status": "at anchor", "received": clock(600 + i*90)}))
		r.Calls("And the ETA?", ok("berth_eta", obj{"mmsi": 244650123, "berth": "ECT Delta 6"}, obj{"eta": "2026-12-07T18:30:00Z", "pilot_booked": false, "source": "agent"}))
	}
	r.Write()
}

func vesselUnderway() {
	r := run("vessel-underway", "a port agent alternates between a vessel's AIS position and its ETA while the ship comes in; the position moves each time and the ETA firms up", false, "polling")
	r.Tool("ais_position", "read").Tool("berth_eta", "read")
	for i := 0; i < 5; i++ {
		r.Calls("Where is she now?", ok("ais_position", obj{"mmsi": 244650123}, obj{"mmsi": 244650123, "lat": 51.9612 + float64(i)*0.011, "lon": 3.9874 + float64(i)*0.042, "sog_kn": 9.4 - float64(i)*0.8, "nav_status": "under way using engine", "received": clock(600 + i*90)}))
		r.Calls("And the ETA?", ok("berth_eta", obj{"mmsi": 244650123, "berth": "ECT Delta 6"}, obj{"eta": fmt.Sprintf("2026-12-07T%02d:%02d:00Z", 13-i/3, 50-i*7), "pilot_booked": i >= 2, "source": "ais"}))
	}
	r.Write()
}

// --- long polls that learn ---

func botUpdatesLongPoll() {
	r := run("bot-updates-long-poll", "a support bot long-polls its update feed with the offset after the last update; some polls time out empty, twice at most at one offset, and messages arrive between", false, "polling")
	r.Tool("get_updates", "read").Tool("send_message", "write")
	offset := 480112
	msgs := []string{"hi, my order hasn't arrived", "order 7781", "thanks!"}
	for _, m := range msgs {
		for e := 0; e < 1; e++ {
			r.Calls("Waiting for messages.", ok("get_updates", obj{"offset": offset, "timeout": 50, "allowed_updates": []string{"message"}}, obj{"ok": true, "result": []obj{}}))
		}
		r.Calls("Waiting for messages.", ok("get_updates", obj{"offset": offset, "timeout": 50, "allowed_updates": []string{"message"}}, obj{"ok": true, "result": []obj{{"update_id": offset, "message": obj{"chat": obj{"id": 99120}, "text": m}}}}))
		r.Calls("Replying.", ok("send_message", obj{"chat_id": 99120, "text": "Got it: " + m}, obj{"ok": true, "result": obj{"message_id": 7000 + offset%100}}))
		offset++
	}
	r.Write()
}

func consulBlockingWatch() {
	r := run("consul-blocking-watch", "a deploy agent watches a feature flag's key with blocking queries, each from the index the last answered; the flag is flipped twice by people and the agent reacts each time", false, "polling")
	r.Tool("kv_get", "read").Tool("rollout_set", "write")
	vals := []string{"off", "canary", "canary", "on"}
	idx := 918220
	for i, v := range vals {
		next := idx + 17 + i*3
		r.Calls("Watching the flag.", ok("kv_get", obj{"key": "flags/checkout-v2", "index": idx, "wait": "5m"}, obj{"Key": "flags/checkout-v2", "Value": v, "ModifyIndex": next, "X-Consul-Index": next}))
		if i > 0 && v != vals[i-1] {
			r.Calls("Following the flag.", ok("rollout_set", obj{"service": "checkout", "variant": "v2", "stage": v}, obj{"ok": true}))
		}
		idx = next
	}
	r.Write()
}

func exportLongPollPending() {
	r := run("export-long-poll-pending", "a data agent long-polls an export job with a thirty-second wait; the job never leaves pending and every answer says so with a new poll id", true, "noisy_repeat")
	r.Tool("await_export", "read")
	for i := 0; i < 6; i++ {
		if i == 2 {
			r.Then()
		}
		r.Calls("Waiting on the export.", ok("await_export", obj{"export_id": "exp_2291", "wait_s": 30}, obj{"export_id": "exp_2291", "state": "pending", "waited_s": 30, "poll_id": uuidish(90 + i), "queue_position": 4}))
	}
	r.Write()
}

// --- geocoding: parallel calls from one turn ---

func geocodeParallelDuplicates() {
	r := run("geocode-parallel-duplicates", "a delivery agent's model emits the same geocoding call several times in one parallel batch, and again the next turn", true, "consecutive_repeat")
	r.Tool("geocode", "read")
	a := obj{"address": "Keizersgracht 123, 1015 CJ Amsterdam", "country": "NL"}
	res := obj{"lat": 52.37601, "lon": 4.88611, "precision": "rooftop"}
	r.Calls("Geocoding the stop.", ok("geocode", a, res), ok("geocode", a, res))
	r.Then()
	r.Calls("Geocoding the stop.", ok("geocode", a, res), ok("geocode", a, res))
	r.Write()
}

func geocodeParallelSameBuilding() {
	r := run("geocode-parallel-same-building", "a delivery agent geocodes six stops in one parallel batch; three are flats in one building and resolve to the same point", false, "batch_progress")
	r.Tool("geocode", "read").Tool("optimise_route", "read")
	var cs []c
	for i, ad := range []string{"Keizersgracht 123-A", "Keizersgracht 123-B", "Keizersgracht 123-C", "Prinsengracht 263", "Herengracht 502", "Singel 421"} {
		res := obj{"lat": 52.37601, "lon": 4.88611, "precision": "rooftop"}
		if i >= 3 {
			res = obj{"lat": 52.3752 + float64(i)/1000, "lon": 4.8840 + float64(i)/700, "precision": "rooftop"}
		}
		cs = append(cs, ok("geocode", obj{"address": ad + ", Amsterdam", "country": "NL"}, res))
	}
	r.Calls("Geocoding the stops.", cs...)
	r.Calls("Routing.", ok("optimise_route", obj{"depot": "Amstel 1", "stops": 6}, obj{"order": []int{0, 1, 2, 3, 5, 4}, "km": 7.4}))
	r.Write()
}

// --- a recipe converter: one quantity in many notations, each a new one ---

func recipeUnitsConverted() {
	r := run("recipe-units", "a cooking agent converts each of a recipe's quantities, written in cups, ounces, tablespoons and Fahrenheit, to metric", false, "batch_progress")
	r.Tool("convert_units", "read")
	for _, q := range []struct {
		v    float64
		from string
		to   string
		out  float64
	}{{2.5, "cup", "g_flour", 312.5}, {8, "oz", "g", 226.8}, {3, "tbsp", "ml", 44.4}, {350, "degF", "degC", 176.7}, {1.5, "cup", "ml", 354.9}, {0.5, "tsp", "ml", 2.5}} {
		r.Calls("Converting.", ok("convert_units", obj{"value": q.v, "from": q.from, "to": q.to}, obj{"value": q.out, "unit": q.to}))
	}
	r.Write()
}

// --- a fan-out whose receivers move at other paces ---

func abstractFanoutEditorStuck() {
	r := run("abstract-fanout-editor-stuck", "a writing lead fans out from one turn each round: an editor asked in other words to shorten the abstract, which hands back the same draft each time, and a citation checker handed each new section, whose findings move", true, "livelock_agents")
	r.Tool("word_count", "read").Tool("resolve_doi", "read")
	asks := []string{"Shorten the abstract to 150 words", "Cut the abstract down to at most 150 words", "Please trim the abstract so it fits in 150 words", "The abstract must be 150 words or fewer: condense it", "Make the abstract shorter, 150 words max"}
	draft := "We study heat pump uptake in 1,204 Dutch homes and find that subsidies shorten payback by 3.1 years (…212 words)."
	for i, a := range asks {
		i := i
		fan(r, "Next round.",
			h{to: "editor", task: a, verdict: draft, mark: i == 2, body: func() {
				r.Calls("Counting.", ok("word_count", obj{"text_ref": fmt.Sprintf("abstract@v%d", i+1)}, obj{"words": 212}))
			}},
			h{to: "citation_checker", task: fmt.Sprintf("Resolve the DOIs cited in section %d", i+1), verdict: fmt.Sprintf("Section %d: %d DOIs resolve, %d do not.", i+1, 6+i, i%2), body: func() {
				r.Calls("Resolving.", ok("resolve_doi", obj{"section": i + 1}, obj{"resolved": 6 + i, "failed": i % 2}))
			}},
		)
	}
	r.Write()
}

func abstractFanoutEditorMoves() {
	r := run("abstract-fanout-editor-moves", "a writing lead fans out from one turn each round: an editor asked in other words to keep shortening the abstract, whose draft shrinks each time, and a citation checker handed each new section, which finds all of them resolve", false, "revisit_with_progress")
	r.Tool("word_count", "read").Tool("resolve_doi", "read")
	asks := []string{"Shorten the abstract to 150 words", "Cut the abstract down further, to at most 150 words", "Please trim the abstract again so it fits in 150 words", "Condense the abstract once more: 150 words or fewer", "One last cut of the abstract, 150 words max"}
	words := []int{212, 188, 171, 158, 149}
	for i, a := range asks {
		i := i
		fan(r, "Next round.",
			h{to: "editor", task: a, verdict: fmt.Sprintf("Draft v%d: %d words; cut the %s.", i+2, words[i], []string{"methods detail", "second example", "related work", "hedges", "last clause"}[i]), body: func() {
				r.Calls("Counting.", ok("word_count", obj{"text_ref": fmt.Sprintf("abstract@v%d", i+2)}, obj{"words": words[i]}))
			}},
			h{to: "citation_checker", task: fmt.Sprintf("Resolve the DOIs cited in section %d", i+1), verdict: "All DOIs resolve.", body: func() {
				r.Calls("Resolving.", ok("resolve_doi", obj{"section": i + 1}, obj{"resolved": 6 + i, "failed": 0}))
			}},
		)
	}
	r.Write()
}
