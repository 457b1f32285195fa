package loops

import (
	"fmt"
	"strings"
	"testing"
)

// The twenty-fourth probe: written before reading the detectors' rules in
// detail, with the tool names and answer shapes of kinds of work the
// twenty-three before it do not use: aviation weather and NOTAMs, flight
// plan filing and dispatch, AIS vessel tracking, EV charging over OCPP, a
// brokerage's orders and quotes, a Python package resolver, court dockets
// and e-filing, a Gradle build, an e-mail marketing campaign, wiki edits
// (MediaWiki), a veterinary clinic's scheduler sub-agent, a wind farm's
// SCADA, elevator monitoring, LaTeX compilation, a data warehouse's query
// jobs and a cloud drive's change feed. The loops: an airport's weather
// asked under other names of the station, one vessel asked of two
// equivalent tools in turn, a charging session started under spellings of
// its connector, a limit order placed through two equivalent tools while
// the market is closed, an order replaced under notations of its price
// after it filled, a package install flipping between two constraints
// into two alternating conflicts, a docket searched under spellings of
// its case number, one brief e-filed under reworded titles, a build re-run
// with its flags reordered into one compile error, a campaign sent and
// its checklist read in turn while it misses a sender, a wiki page saved
// reworded on one stale base revision, an appointment handed to a
// scheduler in other words, a turbine reset into the same fault again and
// again, an elevator polled out of service while only its heartbeat
// counts, a paper compiled by other engines into one undefined macro, one
// warehouse query respelled into one permission error, a change feed
// continued on a cursor that does not move, a briefing handed between a
// weather briefer and a dispatcher in circles, NOTAMs polled with no new
// notice, and an anchored vessel polled while its report ages. Each loop
// has a legitimate near-miss that repeats with progress.
//
// A loop is marked as the ninth probe marks them: the fourth call that
// asks again in other words and learns nothing, the third identical poll
// or write, the third round of a pair or ring of calls (or of hand-offs)
// that learns nothing. A tool without readOnlyHint is declared a write,
// as it is through the gateway.
//
// It is written and played with the assistants probe's writer and driver
// (assistruns_test.go).

// s24Known lists the runs whose outcome is not their label's, each with why.
var s24Known = map[string]string{
	// As written, on the guard then (df3b8c91): 14 of 20 loops detected,
	// one early, 5 missed; none of 24 legit runs refused (078da3cb).
	// Since its fixes, 16 of 20: how old a report is (age_seconds) grows
	// with the clock as a wait does (TestReportAgeKeys); an answer alike
	// that names the value an earlier spelling wrote and another respelled
	// (icaoId KSFO, asked as ksfo, then SFO) says what those spellings
	// resolve to, and one more spelling of that argument is refused
	// (TestAnswerNamesItsThing). Left:
	//
	// one case number respelled (3:24cv1234, leading zeros, a district's
	// year in four digits): other words, and the answer names the case in
	// a fifth spelling (3:24-cv-01234-JD), none of the call's;
	"docket-case-number-respelled-same-entries": "missed",
	// a reset and a read-back in turn, the fault's event_time moving: the
	// fault tripped again at a new time, which is news of a kind;
	"turbine-reset-same-fault-ring": "missed",
	// other engines are other tools, each failure's banner naming its
	// engine and timing: complaints that differ in their first line;
	"latex-engines-switched-undefined-macro": "missed",
	// refused at the third hand-off, two rounds rejected alike with
	// nothing written between (the delegation rule); the probe's mark
	// is the fourth rewording.
	"vet-appointment-handed-reworded-no-slot": "early",
}

func TestTwentyFourthRuns(t *testing.T) {
	checkAsRuns(t, "twenty-fourth probe", twentyFourthRuns(), 44, s24Known)
}

// s24ID is a hex request id made of n.
func s24ID(n int) string {
	return fmt.Sprintf("%08x%08x", 0x3a7c0000+n*48611, 0x9e000000+n*7793)
}

// s24Clock is a time of day on the probe's day, n seconds after 20:00.
func s24Clock(n int) string {
	return fmt.Sprintf("2026-12-06T20:%02d:%02dZ", (n/60)%60, n%60)
}

// s24Metar is an aviation weather answer for one station.
func s24Metar(icao, raw string, n int) obj {
	return obj{"icaoId": icao, "receiptTime": "2026-12-06 19:56:12", "obsTime": 1796587200, "reportTime": "2026-12-06 19:56:00",
		"temp": 11.1, "dewp": 8.3, "wdir": 280, "wspd": 14, "visib": "10+", "altim": 1016.6, "rawOb": raw, "fltCat": "VFR",
		"served_at": s24Clock(n)}
}

// s24Docket is a court docket's entries from..to.
func s24Docket(from, to int) arr {
	texts := []string{"COMPLAINT against Northwind Freight LLC", "SUMMONS Issued as to Northwind Freight LLC", "NOTICE of Appearance by R. Okafor",
		"MOTION to Dismiss for Failure to State a Claim", "ORDER setting briefing schedule", "RESPONSE in Opposition re Motion to Dismiss",
		"REPLY to Response to Motion", "ORDER granting in part Motion to Dismiss", "AMENDED COMPLAINT", "ANSWER to Amended Complaint"}
	var es arr
	for i := from; i <= to; i++ {
		es = append(es, obj{"entry_number": i, "date_filed": fmt.Sprintf("2026-%02d-%02d", 1+i%11, 3+i*2%25), "description": texts[(i-1)%len(texts)], "document_count": 1 + i%3})
	}
	return es
}

// s24Turbine is a wind turbine's SCADA status.
func s24Turbine(id, state, fault string, power float64, n int) obj {
	o := obj{"turbine": id, "state": state, "active_power_kw": power, "wind_ms": 9.4, "rotor_rpm": 0.0, "event_time": s24Clock(n)}
	if fault != "" {
		o["fault"] = obj{"code": fault, "text": "Pitch system: blade 2 converter fault", "severity": "STOP"}
		o["rotor_rpm"] = 0.0
	} else {
		o["rotor_rpm"] = 12.8
	}
	return o
}

func twentyFourthRuns() []*asRun {
	var runs []*asRun
	add := func(w *asw) { runs = append(runs, w.run) }

	// ===================== loops =====================

	// A flight-planning agent asks an airport's weather under other names
	// of the station; the same observation comes back.
	{
		w := asRunOf("metar-station-renamed-same-observation", "aviation", true)
		raw := "KSFO 061956Z 28014KT 10SM FEW008 BKN200 11/08 A3002 RMK AO2 SLP166 T01110083"
		for i, st := range []string{"KSFO", "ksfo", "SFO", "San Francisco Intl", "K SFO"} {
			if i == 3 {
				w.then()
			}
			w.t("Checking the departure weather.", asOK("metar", obj{"ids": st, "format": "json", "hours": 1}, arr{s24Metar("KSFO", raw, 30+i*11)}))
		}
		add(w)
	}

	// A port agent asks one vessel's position of two equivalent tools in
	// turn; the same report comes back from each.
	{
		w := asRunOf("ais-vessel-two-tools-same-report", "maritime", true)
		rep := obj{"mmsi": 636019825, "name": "MAERSK KINLOSS", "lat": 51.94112, "lon": 4.05031, "sog": 0.1, "cog": 211.0, "nav_status": "At anchor", "timestamp": "2026-12-06T19:41:30Z"}
		for i := 0; i < 5; i++ {
			if i == 3 {
				w.then()
			}
			if i%2 == 0 {
				w.t("Where is the Kinloss?", asOK("vessel_position", obj{"mmsi": "636019825"}, obj{"data": rep, "meta": obj{"request_id": s24ID(i), "credits_used": 1}}))
			} else {
				w.t("Asking the other feed.", asOK("ais_last_report", obj{"vessel": obj{"mmsi": 636019825}}, obj{"data": rep, "meta": obj{"request_id": s24ID(i), "credits_used": 1}}))
			}
		}
		add(w)
	}

	// A fleet agent starts a charging session under spellings of its
	// connector; the charger answers Faulted each time.
	{
		w := asRunOf("ocpp-start-connector-respelled-faulted", "charging", true).acc("write", "remote_start_transaction")
		for i, c := range []any{1, "1", "connector-1", 1.0, "01"} {
			if i == 3 {
				w.then()
			}
			w.t("Starting the session for bus 22.", asFail("remote_start_transaction", obj{"charge_point": "CP-DEPOT-07", "connector_id": c, "id_tag": "BUS22-RFID"}, "conflict",
				fmt.Sprintf(`{"status":"Rejected","reason":"Connector 1 of CP-DEPOT-07 is Faulted (GroundFailure)","message_id":"%s"}`, s24ID(20+i))))
		}
		add(w)
	}

	// A trading agent places one limit order through two equivalent tools
	// in turn while the market is closed.
	{
		w := asRunOf("broker-order-two-tools-market-closed", "brokerage", true).acc("write", "place_order", "submit_order")
		for i := 0; i < 5; i++ {
			if i == 3 {
				w.then()
			}
			msg := fmt.Sprintf(`{"code":40310000,"message":"market is closed; limit orders with time_in_force=day are not accepted outside regular hours","request_id":"%s"}`, s24ID(40+i))
			if i%2 == 0 {
				w.t("Buying 40 MSFT at 401.", asFail("place_order", obj{"symbol": "MSFT", "qty": 40, "side": "buy", "type": "limit", "limit_price": 401, "time_in_force": "day"}, "conflict", msg))
			} else {
				w.t("Trying the other order endpoint.", asFail("submit_order", obj{"order": obj{"ticker": "MSFT", "quantity": "40", "action": "BUY", "order_type": "LMT", "price": "401.00", "tif": "DAY"}}, "conflict", msg))
			}
		}
		add(w)
	}

	// A trading agent replaces an order's price in other notations after
	// the order filled.
	{
		w := asRunOf("broker-replace-price-respelled-already-filled", "brokerage", true).acc("write", "replace_order")
		for i, p := range []any{101.5, "101.50", "101.5", 101.50, "$101.50"} {
			if i == 3 {
				w.then()
			}
			w.t("Moving the limit up.", asFail("replace_order", obj{"order_id": "b7e0c2f4-2d1a-4c8e-9f4e-55e1a0d9c3b2", "limit_price": p}, "conflict",
				fmt.Sprintf("order b7e0c2f4-2d1a-4c8e-9f4e-55e1a0d9c3b2 cannot be replaced: status is filled (filled_at 2026-12-06T14:31:07Z) [req %s]", s24ID(60 + i)[:10])))
		}
		add(w)
	}

	// A coding agent installs packages flipping between two constraints;
	// each fails on one of two conflicts, in turn.
	{
		w := asRunOf("pip-constraints-flip-two-conflicts", "python", true).acc("write", "pip_install")
		a := "ERROR: Cannot install pandas==2.2.3 and numpy<2 because these package versions have conflicting dependencies.\nThe conflict is caused by:\n    The user requested numpy<2\n    pandas 2.2.3 depends on numpy>=2.0; python_version >= \"3.13\""
		b := "ERROR: Cannot install numpy>=2 and scipy==1.11.4 because these package versions have conflicting dependencies.\nThe conflict is caused by:\n    The user requested numpy>=2\n    scipy 1.11.4 depends on numpy<1.28.0 and >=1.21.6"
		for r := 0; r < 3; r++ {
			if r == 2 {
				w.then()
			}
			w.t("Pinning numpy below 2 for scipy.", asFail("pip_install", obj{"packages": arr{"pandas==2.2.3", "scipy==1.11.4", "numpy<2"}}, "tool_error", a))
			w.t("pandas wants numpy 2 then: letting it.", asFail("pip_install", obj{"packages": arr{"pandas==2.2.3", "scipy==1.11.4", "numpy>=2"}}, "tool_error", b))
		}
		add(w)
	}

	// A legal agent searches one case under spellings of its number; the
	// same docket comes back.
	{
		w := asRunOf("docket-case-number-respelled-same-entries", "legal", true)
		for i, n := range []string{"3:24-cv-01234", "3:24cv1234", "3:24-CV-1234", "324-cv-01234", "3:2024-cv-01234"} {
			if i == 3 {
				w.then()
			}
			w.t("Pulling the docket.", asOK("docket_search", obj{"court": "cand", "case_number": n},
				obj{"case": "3:24-cv-01234-JD", "caption": "Alvarez v. Northwind Freight LLC", "judge": "James Donato", "entries": s24Docket(1, 8), "retrieved": s24Clock(200 + i*37), "cost_usd": 0.8}))
		}
		add(w)
	}

	// A legal agent e-files one brief under reworded titles; the court's
	// system refuses the filer each time.
	{
		w := asRunOf("efile-title-reworded-not-authorized", "legal", true).acc("write", "efile_document")
		for i, title := range []string{"Opposition to Motion to Dismiss", "Plaintiff's Opposition to Defendant's Motion to Dismiss", "OPPOSITION re 4 MOTION to Dismiss", "Opposition (Motion to Dismiss)", "Memorandum in Opposition to Motion to Dismiss"} {
			if i == 3 {
				w.then()
			}
			w.t("Filing the opposition.", asFail("efile_document", obj{"case": "3:24-cv-01234-JD", "event": "opposition", "title": title, "pdf": "opp_mtd_final.pdf"}, "forbidden",
				fmt.Sprintf("Filing rejected (transaction %d): filer rokafor is not a registered attorney of record in 3:24-cv-01234-JD.", 9912000+i*13)))
		}
		add(w)
	}

	// A coding agent re-runs a build with its flags reordered; one compile
	// error comes back, the build's time moving.
	{
		w := asRunOf("gradle-flags-reordered-same-compile-error", "build", true)
		for i, args := range []string{"build --no-daemon --stacktrace", "--stacktrace --no-daemon build", "build -s --no-daemon", "--no-daemon build --stacktrace", "clean build --stacktrace --no-daemon"} {
			if i == 3 {
				w.then()
			}
			w.t("Building the app.", asFail("gradle", obj{"args": args, "project_dir": "android-app"}, "tool_error",
				fmt.Sprintf("> Task :app:compileDebugKotlin FAILED\ne: file:///work/android-app/app/src/main/java/com/acme/cart/CartViewModel.kt:57:23 Unresolved reference: discountRules\n\nFAILURE: Build failed with an exception.\n\nBUILD FAILED in %ds\n23 actionable tasks: %d executed, %d up-to-date", 14+i*3, 3+i%2, 20-i%2)))
		}
		add(w)
	}

	// A marketing agent sends a campaign and reads its checklist in turn;
	// the sender stays missing.
	{
		w := asRunOf("campaign-send-checklist-ring-missing-sender", "marketing", true).acc("write", "campaign_send")
		for r := 0; r < 3; r++ {
			if r == 2 {
				w.then()
			}
			w.t("Sending the December newsletter.", asFail("campaign_send", obj{"campaign_id": "9b2e41f7c0"}, "invalid_args",
				`{"type":"https://mailchimp.com/developer/marketing/docs/errors/","title":"Bad Request","status":400,"detail":"Your Campaign is not ready to send.","instance":"`+s24UUIDish(r)+`"}`))
			w.t("What does the checklist say?", asOK("campaign_checklist", obj{"campaign_id": "9b2e41f7c0"},
				obj{"is_ready": false, "items": arr{obj{"type": "error", "id": 0, "heading": "From Name", "details": "You need to set a from name."}, obj{"type": "success", "id": 1, "heading": "Subject Line", "details": "Your subject line is set."}}}))
		}
		add(w)
	}

	// A wiki agent saves a page, reworded each time, on one stale base
	// revision; each save is an edit conflict.
	{
		w := asRunOf("wiki-edit-reworded-stale-base", "wiki", true).acc("write", "wiki_edit")
		for i, text := range []string{
			"The station opened in 1911 and was rebuilt in 1968.",
			"Opened in 1911, the station was rebuilt in 1968.",
			"The station, opened 1911, was rebuilt in 1968.",
			"The station opened in 1911; it was rebuilt in 1968.",
			"First opened in 1911, the station was later rebuilt (1968).",
		} {
			if i == 3 {
				w.then()
			}
			w.t("Fixing the history section.", asFail("wiki_edit", obj{"title": "Haltwhistle railway station", "section": 2, "text": text, "baserevid": 1188231470, "summary": "history: opening date"}, "conflict",
				fmt.Sprintf(`{"error":{"code":"editconflict","info":"Edit conflict.","*":"See https://en.wikipedia.org/w/api.php for API usage."},"servedby":"mw-api-ext.eqiad.main-%x","curtimestamp":"%s"}`, 0x6d4f+i*97, s24Clock(400+i*29))))
		}
		add(w)
	}

	// A clinic's front desk hands one appointment to its scheduler in
	// other words; no slot is free with that vet.
	{
		w := asRunOf("vet-appointment-handed-reworded-no-slot", "veterinary", true)
		for i, task := range []string{
			"Book Biscuit (dog) a dental check with Dr. Amara Singh this week.",
			"Find a slot this week with Dr. Singh for Biscuit's dental check.",
			"Biscuit needs a dental exam with Dr. A. Singh, any time this week.",
			"Schedule this week: dental check, patient Biscuit, vet Dr. Singh.",
			"Please get Biscuit in with Dr. Singh for dental this week.",
		} {
			if i == 3 {
				w.then()
			}
			w.hand("Asking the scheduler.", "scheduler", task, "No slot with Dr. Amara Singh this week: her calendar is fully booked until Monday.", func(s *asw) {
				s.t("Checking Dr. Singh's calendar.", asOK("vet_availability", obj{"vet": "dr-amara-singh", "from": "2026-12-07", "to": "2026-12-11", "type": "dental"},
					obj{"vet": "dr-amara-singh", "slots": arr{}, "next_free": "2026-12-14T09:00", "checked_at": s24Clock(500 + i*61)}))
			})
		}
		add(w)
	}

	// A wind-farm operator resets a turbine and reads it back in turn;
	// the same pitch fault trips it again each time.
	{
		w := asRunOf("turbine-reset-same-fault-ring", "energy", true).acc("write", "turbine_reset")
		for r := 0; r < 3; r++ {
			if r == 2 {
				w.then()
			}
			w.t("Resetting WTG-11.", asOK("turbine_reset", obj{"turbine": "WTG-11", "level": "remote"}, obj{"turbine": "WTG-11", "command": "reset", "accepted": true, "command_id": 77120 + r}))
			w.t("Did it come back?", asOK("turbine_status", obj{"turbine": "WTG-11"}, s24Turbine("WTG-11", "STOPPED", "PITCH_2_CONV", 0, 600+r*95)))
		}
		add(w)
	}

	// A building agent polls an elevator out of service; only the
	// controller's heartbeat counter moves.
	{
		w := asRunOf("elevator-polled-out-of-service-heartbeat", "building", true)
		for i := 0; i < 5; i++ {
			if i == 2 {
				w.then()
			}
			w.t("Is car 3 back?", asOK("elevator_status", obj{"bank": "B", "car": 3},
				obj{"car": 3, "mode": "OUT_OF_SERVICE", "door": "closed", "floor": 1, "fault": "Door zone sensor fault", "technician_eta": "2026-12-07T08:00", "heartbeat_seq": 441207 + i*6}))
		}
		add(w)
	}

	// A writing agent compiles a paper with other engines; one undefined
	// macro stops each.
	{
		w := asRunOf("latex-engines-switched-undefined-macro", "writing", true)
		for i, eng := range []string{"latex_compile", "xelatex", "latex_compile", "lualatex", "latexmk"} {
			if i == 3 {
				w.then()
			}
			args := obj{"main": "paper.tex"}
			if eng == "latex_compile" {
				args["engine"] = []string{"pdflatex", "pdflatex", "pdflatex -interaction=nonstopmode"}[i/2%3]
			}
			w.t("Compiling the paper.", asFail(eng, args, "tool_error",
				fmt.Sprintf("This is %s, Version 3.141592653-2.6-1.40.26 (TeX Live 2024)\n! Undefined control sequence.\nl.142 ... as shown in \\figref\n                                {fig:ablation}.\nOutput written on paper.pdf? No pages of output.\nTranscript written on paper.log. (%d.%02ds)", []string{"pdfTeX", "XeTeX", "pdfTeX", "LuaHBTeX", "pdfTeX"}[i], 2+i%2, 13*i%100)))
		}
		add(w)
	}

	// A data agent runs one warehouse query respelled; each job fails on
	// the same missing permission.
	{
		w := asRunOf("warehouse-query-respelled-access-denied", "data", true).acc("write", "run_query")
		for i, q := range []string{
			"SELECT region, SUM(amount) AS revenue FROM finance.ledger WHERE fiscal_year = 2026 GROUP BY region",
			"select region, sum(amount) as revenue from finance.ledger where fiscal_year=2026 group by region",
			"SELECT l.region, SUM(l.amount) AS revenue FROM finance.ledger l WHERE l.fiscal_year = 2026 GROUP BY l.region",
			"SELECT region, SUM(amount) revenue\nFROM `finance.ledger`\nWHERE fiscal_year = 2026\nGROUP BY 1",
			"SELECT region, SUM(amount) AS revenue FROM finance.ledger WHERE fiscal_year IN (2026) GROUP BY region ORDER BY region",
		} {
			if i == 3 {
				w.then()
			}
			w.t("Getting revenue by region.", asFail("run_query", obj{"sql": q, "location": "EU"}, "forbidden",
				fmt.Sprintf("Access Denied: Table acme-prod:finance.ledger: User does not have permission to query table acme-prod:finance.ledger, or perhaps it does not exist. (job acme-prod:EU.bquxjob_%s)", s24ID(80 + i)[:12])))
		}
		add(w)
	}

	// A sync agent continues a change feed on a cursor that does not
	// move; nothing comes, more is promised.
	{
		w := asRunOf("drive-feed-cursor-stuck-has-more", "files", true)
		w.t("Listing the shared folder.", asOK("list_folder", obj{"path": "/Team/Contracts", "recursive": false},
			obj{"entries": arr{obj{".tag": "file", "name": "msa_2026.pdf", "id": "id:a4ayc_80_OEAAAAAAAAAXw", "rev": "015f1c2a7e9b0000000"}}, "cursor": "AAHn4bX2cK9-stuck", "has_more": true}))
		for i := 0; i < 4; i++ {
			if i == 2 {
				w.then()
			}
			w.t("Getting the rest.", asOK("list_folder_continue", obj{"cursor": "AAHn4bX2cK9-stuck"}, obj{"entries": arr{}, "cursor": "AAHn4bX2cK9-stuck", "has_more": true}))
		}
		add(w)
	}

	// A flight-planning agent hands a briefing to a weather briefer and a
	// dispatcher in turn, each sending it to the other.
	{
		w := asRunOf("briefing-handed-briefer-dispatcher-circle", "aviation", true)
		for r := 0; r < 3; r++ {
			if r == 2 {
				w.then()
			}
			w.hand("Getting the briefing.", "wx_briefer", []string{"Brief the KSFO-KSEA leg at 22Z.", "Weather for KSFO to KSEA departing 22Z please.", "Need the 22Z SFO-SEA briefing."}[r],
				"Icing along the route is the dispatcher's call: ask dispatch for the approved altitude first.", nil)
			w.hand("Asking dispatch.", "dispatcher", []string{"Approve an altitude for KSFO-KSEA at 22Z.", "What altitude for the 22Z SFO-SEA leg?", "Altitude for KSFO to KSEA, 22Z departure?"}[r],
				"I need the weather briefing before approving an altitude: get it from the briefer.", nil)
		}
		add(w)
	}

	// A dispatcher polls NOTAMs for an airport; no notice is new, only
	// the page's retrieval time.
	{
		w := asRunOf("notams-polled-none-new", "aviation", true)
		for i := 0; i < 5; i++ {
			if i == 2 {
				w.then()
			}
			w.t("Any new NOTAMs for Seattle?", asOK("notam_search", obj{"location": "KSEA", "effective_after": "2026-12-06T22:00Z"},
				obj{"pageSize": 50, "pageNum": 1, "totalCount": 2, "items": arr{
					obj{"id": "NOTAM_1_73912044", "number": "12/041", "text": "RWY 16L/34R CLSD 2200-0600 DLY", "effectiveStart": "2026-12-04T22:00Z"},
					obj{"id": "NOTAM_1_73915502", "number": "12/055", "text": "TWY B CLSD BTN B7 AND B9", "effectiveStart": "2026-12-05T14:00Z"}},
					"retrievedAt": s24Clock(900 + i*300)}))
		}
		add(w)
	}

	// A port agent polls an anchored vessel; its last report only ages.
	{
		w := asRunOf("ais-anchored-polled-report-ages", "maritime", true)
		for i := 0; i < 5; i++ {
			if i == 2 {
				w.then()
			}
			w.t("Has she weighed anchor?", asOK("vessel_position", obj{"mmsi": "636019825"},
				obj{"data": obj{"mmsi": 636019825, "lat": 51.94112, "lon": 4.05031, "sog": 0.1, "nav_status": "At anchor", "timestamp": "2026-12-06T19:41:30Z", "age_seconds": 95 + i*240}}))
		}
		add(w)
	}

	// ===================== legit =====================

	// The route's weather, station by station; several report alike.
	{
		w := asRunOf("metar-route-station-by-station", "aviation", false)
		for i, st := range []string{"KSFO", "KOAK", "KSJC", "KSMF", "KRDD", "KMFR", "KPDX", "KSEA"} {
			raw := st + " 061956Z 28010KT 10SM FEW008 BKN200 11/08 A3002"
			w.t("Next station on the route.", asOK("metar", obj{"ids": st, "format": "json", "hours": 1}, arr{s24Metar(st, raw, 30+i*9)}))
		}
		add(w)
	}

	// A vessel under way, polled: its position moves each time.
	{
		w := asRunOf("ais-underway-polled-moving", "maritime", false)
		for i := 0; i < 7; i++ {
			w.t("Tracking the approach.", asOK("vessel_position", obj{"mmsi": "636019825"},
				obj{"data": obj{"mmsi": 636019825, "lat": 51.9411 + float64(i)*0.0092, "lon": 4.0503 + float64(i)*0.0131, "sog": 11.4 - float64(i)*0.9, "nav_status": "Under way using engine",
					"timestamp": s24Clock(60 + i*180), "age_seconds": 12 + i%3}}))
		}
		add(w)
	}

	// A charging session: a busy connector once, then started, its meter
	// read as energy flows, then stopped.
	{
		w := asRunOf("ocpp-session-busy-then-metered", "charging", false).acc("write", "remote_start_transaction", "remote_stop_transaction")
		w.t("Starting the session for bus 22.", asFail("remote_start_transaction", obj{"charge_point": "CP-DEPOT-07", "connector_id": 2, "id_tag": "BUS22-RFID"}, "unavailable",
			`{"status":"Rejected","reason":"Connector 2 is Occupied (Preparing)","retry_after_s":30}`))
		w.t("Trying again now the last bus left.", asOK("remote_start_transaction", obj{"charge_point": "CP-DEPOT-07", "connector_id": 2, "id_tag": "BUS22-RFID"}, obj{"status": "Accepted", "transaction_id": 58120}))
		for i := 0; i < 5; i++ {
			w.t("How far along?", asOK("meter_values", obj{"charge_point": "CP-DEPOT-07", "transaction_id": 58120},
				obj{"transaction_id": 58120, "energy_wh": 1200 + i*14800, "power_w": 149000 - i*2000, "soc_percent": 31 + i*9, "timestamp": s24Clock(1000 + i*360)}))
		}
		w.t("Charged enough: stopping.", asOK("remote_stop_transaction", obj{"charge_point": "CP-DEPOT-07", "transaction_id": 58120}, obj{"status": "Accepted"}))
		add(w)
	}

	// An order filled in parts, polled until done.
	{
		w := asRunOf("broker-order-partial-fills-polled", "brokerage", false).acc("write", "place_order")
		w.t("Buying 400 MSFT at 401.", asOK("place_order", obj{"symbol": "MSFT", "qty": 400, "side": "buy", "type": "limit", "limit_price": 401, "time_in_force": "day"},
			obj{"id": "c1d2e3f4-0000-4a4a-8b8b-123456789abc", "status": "accepted", "filled_qty": "0"}))
		for i, f := range []int{0, 100, 100, 250, 400} {
			st := "partially_filled"
			if f == 0 {
				st = "new"
			} else if f == 400 {
				st = "filled"
			}
			w.t("Checking the fill.", asOK("get_order", obj{"order_id": "c1d2e3f4-0000-4a4a-8b8b-123456789abc"},
				obj{"id": "c1d2e3f4-0000-4a4a-8b8b-123456789abc", "status": st, "filled_qty": fmt.Sprint(f), "filled_avg_price": fmt.Sprintf("%.2f", 400.8+float64(i)*0.03), "updated_at": s24Clock(1200 + i*40)}))
		}
		add(w)
	}

	// Quotes for a watch list, one ticker at a time; two are halted alike.
	{
		w := asRunOf("broker-quotes-watchlist", "brokerage", false)
		for i, s := range []string{"MSFT", "AAPL", "NVDA", "AMZN", "GOOGL", "META", "TSLA", "AVGO"} {
			q := obj{"symbol": s, "bid": 100 + float64(i)*37.5, "ask": 100.04 + float64(i)*37.5, "last": 100.02 + float64(i)*37.5, "halted": false}
			if i == 4 || i == 6 {
				q = obj{"symbol": s, "bid": nil, "ask": nil, "last": nil, "halted": true}
			}
			w.t("Next on the list.", asOK("get_quote", obj{"symbol": s}, q))
		}
		add(w)
	}

	// An install refined constraint by constraint, each error new, until
	// it resolves.
	{
		w := asRunOf("pip-constraints-refined-resolves", "python", false).acc("write", "pip_install")
		w.t("Installing the pins.", asFail("pip_install", obj{"packages": arr{"pandas==2.2.3", "scipy==1.11.4", "numpy<2"}}, "tool_error",
			"ERROR: Cannot install pandas==2.2.3 and numpy<2 because these package versions have conflicting dependencies."))
		w.t("Letting scipy move.", asFail("pip_install", obj{"packages": arr{"pandas==2.2.3", "scipy>=1.13", "numpy<2"}}, "tool_error",
			"ERROR: Cannot install pandas==2.2.3 and numpy<2 because these package versions have conflicting dependencies."))
		w.t("Dropping the numpy pin.", asFail("pip_install", obj{"packages": arr{"pandas==2.2.3", "scipy>=1.13"}}, "tool_error",
			"ERROR: Failed building wheel for scipy: meson-python: error: Could not find a Fortran compiler"))
		w.t("Asking for binary wheels only.", asOK("pip_install", obj{"packages": arr{"pandas==2.2.3", "scipy>=1.13"}, "only_binary": ":all:"},
			"Successfully installed numpy-2.1.3 pandas-2.2.3 scipy-1.14.1"))
		w.t("Checking the versions.", asOK("python_run", obj{"code": "import numpy, scipy, pandas; print(numpy.__version__, scipy.__version__, pandas.__version__)"}, "2.1.3 1.14.1 2.2.3"))
		add(w)
	}

	// A docket read page by page on its cursor.
	{
		w := asRunOf("docket-entries-paginated", "legal", false)
		for p := 0; p < 6; p++ {
			args := obj{"case": "3:24-cv-01234-JD", "page_size": 10}
			if p > 0 {
				args["cursor"] = fmt.Sprintf("cD0yMDI2LTA%d", 3+p*7)
			}
			res := obj{"results": s24Docket(1+p*10, 10+p*10), "next": nil}
			if p < 5 {
				res["next"] = fmt.Sprintf("cD0yMDI2LTA%d", 3+(p+1)*7)
			}
			w.t("Reading the docket.", asOK("docket_entries", args, res))
		}
		add(w)
	}

	// A case-law search refined; each refinement finds more.
	{
		w := asRunOf("caselaw-search-refined-finds-more", "legal", false)
		for i, q := range []string{"freight broker negligent selection", "\"negligent selection\" AND carrier", "negligent selection OR negligent hiring AND motor carrier", "broker liability FAAAA preemption negligent selection", "FAAAA \"safety exception\" broker"} {
			var hits arr
			for j := 0; j <= i+1; j++ {
				hits = append(hits, obj{"cluster_id": 6100000 + i*1000 + j, "case_name": fmt.Sprintf("Case %c%d v. Carrier", 'A'+i, j), "court": "ca9", "date_filed": fmt.Sprintf("20%02d-03-1%d", 15+j, i)})
			}
			w.t("Refining the search.", asOK("caselaw_search", obj{"q": q, "court": "ca9 cand", "order_by": "score desc"}, obj{"count": len(hits) * 3, "results": hits, "search_id": s24ID(200 + i)}))
		}
		add(w)
	}

	// A build fixed error by error.
	{
		w := asRunOf("gradle-fixed-error-by-error", "build", false).acc("write", "edit_file")
		errs := []string{"CartViewModel.kt:57:23 Unresolved reference: discountRules", "CartViewModel.kt:88:9 Type mismatch: inferred type is Int? but Int was expected", "CheckoutScreen.kt:12:8 Unresolved reference: compose.material3.pullrefresh"}
		files := []string{"CartViewModel.kt", "CartViewModel.kt", "CheckoutScreen.kt"}
		for i, e := range errs {
			w.t("Building the app.", asFail("gradle", obj{"args": "build --no-daemon", "project_dir": "android-app"}, "tool_error",
				fmt.Sprintf("> Task :app:compileDebugKotlin FAILED\ne: %s\nBUILD FAILED in %ds", e, 14+i)))
			w.t("Fixing it.", asOK("edit_file", obj{"path": "app/src/main/java/com/acme/cart/" + files[i], "old": fmt.Sprintf("line %d", 57+i*31), "new": fmt.Sprintf("fixed %d", i)}, obj{"ok": true}))
		}
		w.t("Building the app.", asOK("gradle", obj{"args": "build --no-daemon", "project_dir": "android-app"}, "BUILD SUCCESSFUL in 41s\n31 actionable tasks: 9 executed, 22 up-to-date"))
		add(w)
	}

	// A campaign's checklist worked item by item, then sent.
	{
		w := asRunOf("campaign-checklist-fixed-then-sent", "marketing", false).acc("write", "campaign_update", "campaign_send")
		items := []arr{
			{obj{"type": "error", "heading": "From Name"}, obj{"type": "error", "heading": "Subject Line"}, obj{"type": "warning", "heading": "Preview Text"}},
			{obj{"type": "error", "heading": "Subject Line"}, obj{"type": "warning", "heading": "Preview Text"}},
			{obj{"type": "warning", "heading": "Preview Text"}},
			{},
		}
		fixes := []obj{{"from_name": "Acme Outdoors"}, {"subject_line": "December gear picks"}, {"preview_text": "Warm layers, 20% off"}}
		for i, it := range items {
			w.t("What does the checklist say?", asOK("campaign_checklist", obj{"campaign_id": "9b2e41f7c0"}, obj{"is_ready": i >= 2, "items": it}))
			if i < len(fixes) {
				w.t("Fixing that.", asOK("campaign_update", obj{"campaign_id": "9b2e41f7c0", "settings": fixes[i]}, obj{"id": "9b2e41f7c0", "status": "save"}))
			}
		}
		w.t("Sending.", asOK("campaign_send", obj{"campaign_id": "9b2e41f7c0"}, obj{"ok": true}))
		add(w)
	}

	// A wiki edit conflicts once; the agent reads the latest revision and
	// saves on it, then edits other sections.
	{
		w := asRunOf("wiki-conflict-rebased-then-saved", "wiki", false).acc("write", "wiki_edit")
		w.t("Fixing the history section.", asFail("wiki_edit", obj{"title": "Haltwhistle railway station", "section": 2, "text": "The station opened in 1838.", "baserevid": 1188231470}, "conflict",
			`{"error":{"code":"editconflict","info":"Edit conflict."},"curtimestamp":"2026-12-06T20:10:00Z"}`))
		w.t("Reading the latest revision.", asOK("wiki_revision", obj{"title": "Haltwhistle railway station", "section": 2},
			obj{"revid": 1188240912, "timestamp": "2026-12-06T20:08:41Z", "user": "Rail buff", "text": "The station opened in 1838 and was rebuilt in 1968."}))
		for i, sec := range []int{2, 3, 5, 6} {
			w.t("Saving on the latest revision.", asOK("wiki_edit", obj{"title": "Haltwhistle railway station", "section": sec, "text": fmt.Sprintf("Section %d copy-edited.", sec), "baserevid": 1188240912 + i*3},
				obj{"edit": obj{"result": "Success", "newrevid": 1188240915 + i*3, "newtimestamp": s24Clock(700 + i*20)}}))
		}
		add(w)
	}

	// Three pets' appointments, each handed to the scheduler alike.
	{
		w := asRunOf("vet-three-pets-handed-alike", "veterinary", false)
		for i, pet := range []string{"Biscuit (dog)", "Miso (cat)", "Pepper (rabbit)"} {
			w.hand("Asking the scheduler.", "scheduler", "Book "+pet+" a vaccination this week with any vet.", fmt.Sprintf("Booked %s on 2026-12-0%d at 10:%d0.", pet, 8+i, i), func(s *asw) {
				s.t("Checking the calendar.", asOK("vet_availability", obj{"vet": "any", "from": "2026-12-07", "to": "2026-12-11", "type": "vaccination", "species": strings.Fields(pet)[1]},
					obj{"slots": arr{fmt.Sprintf("2026-12-0%dT10:%d0", 8+i, i)}}))
				s.t("Booking it.", asOK("vet_book", obj{"pet": strings.Fields(pet)[0], "slot": fmt.Sprintf("2026-12-0%dT10:%d0", 8+i, i)}, obj{"appointment_id": 4410 + i, "status": "confirmed"}))
			})
		}
		add(w)
	}

	// Turbines reset one by one after a grid event; each answers alike.
	{
		w := asRunOf("turbines-reset-one-by-one", "energy", false).acc("write", "turbine_reset")
		for i := 1; i <= 9; i++ {
			id := fmt.Sprintf("WTG-%02d", i)
			w.t("Resetting after the grid dip.", asOK("turbine_reset", obj{"turbine": id, "level": "remote"}, obj{"turbine": id, "command": "reset", "accepted": true, "command_id": 78000 + i}))
		}
		for i := 1; i <= 9; i++ {
			id := fmt.Sprintf("WTG-%02d", i)
			w.t("Checking it came back.", asOK("turbine_status", obj{"turbine": id}, s24Turbine(id, "RUNNING", "", 1800+float64(i)*35, 800+i*5)))
		}
		add(w)
	}

	// An elevator polled while it is repaired; the state moves.
	{
		w := asRunOf("elevator-polled-through-repair", "building", false)
		for i, m := range []string{"OUT_OF_SERVICE", "TECHNICIAN_ON_SITE", "MAINTENANCE", "INSPECTION", "NORMAL"} {
			w.t("Is car 3 back?", asOK("elevator_status", obj{"bank": "B", "car": 3},
				obj{"car": 3, "mode": m, "door": "closed", "floor": 1 + i%2, "heartbeat_seq": 441207 + i*6}))
		}
		add(w)
	}

	// A paper fixed error by error, compiled after each fix.
	{
		w := asRunOf("latex-fixed-error-by-error", "writing", false).acc("write", "edit_file")
		for i, e := range []string{"! Undefined control sequence.\nl.142 ... as shown in \\figref", "! LaTeX Error: File `booktabs.sty' not found.", "! Missing $ inserted.\nl.207 the loss L_{total"} {
			w.t("Compiling the paper.", asFail("latex_compile", obj{"main": "paper.tex", "engine": "pdflatex"}, "tool_error", e+"\nNo pages of output."))
			w.t("Fixing it.", asOK("edit_file", obj{"path": "paper.tex", "edit": i}, obj{"ok": true}))
		}
		w.t("Compiling the paper.", asOK("latex_compile", obj{"main": "paper.tex", "engine": "pdflatex"}, "Output written on paper.pdf (14 pages, 512334 bytes)."))
		add(w)
	}

	// A warehouse job polled as it runs, then its results paged.
	{
		w := asRunOf("warehouse-job-polled-then-paged", "data", false).acc("write", "run_query")
		w.t("Getting revenue by region.", asOK("run_query", obj{"sql": "SELECT region, SUM(amount) FROM sales.orders GROUP BY region", "location": "EU"}, obj{"job_id": "bquxjob_5c1d2e3f", "state": "PENDING"}))
		for i, st := range []string{"RUNNING", "RUNNING", "RUNNING", "DONE"} {
			w.t("Is it done?", asOK("job_status", obj{"job_id": "bquxjob_5c1d2e3f"},
				obj{"job_id": "bquxjob_5c1d2e3f", "state": st, "totalBytesProcessed": fmt.Sprint(1 << (30 + i)), "completedUnits": 40 * (i + 1), "pendingUnits": 160 - 40*(i+1)}))
		}
		for p := 0; p < 3; p++ {
			args := obj{"job_id": "bquxjob_5c1d2e3f", "maxResults": 2}
			if p > 0 {
				args["pageToken"] = fmt.Sprintf("BFDVHZ%dQ", p)
			}
			w.t("Reading the results.", asOK("job_results", args, obj{"rows": arr{obj{"region": fmt.Sprintf("R%d", p*2), "revenue": 1000 + p}, obj{"region": fmt.Sprintf("R%d", p*2+1), "revenue": 2000 + p}}, "pageToken": fmt.Sprintf("BFDVHZ%dQ", p+1)}))
		}
		add(w)
	}

	// A change feed continued while it moves, then long-polled until a
	// change comes.
	{
		w := asRunOf("drive-feed-continued-then-longpoll", "files", false)
		w.t("Listing the shared folder.", asOK("list_folder", obj{"path": "/Team/Contracts", "recursive": false},
			obj{"entries": arr{obj{".tag": "file", "name": "msa_2026.pdf"}}, "cursor": "AAH-c1", "has_more": true}))
		for i := 1; i <= 3; i++ {
			w.t("Getting the rest.", asOK("list_folder_continue", obj{"cursor": fmt.Sprintf("AAH-c%d", i)},
				obj{"entries": arr{obj{".tag": "file", "name": fmt.Sprintf("sow_%02d.pdf", i)}}, "cursor": fmt.Sprintf("AAH-c%d", i+1), "has_more": i < 3}))
		}
		w.t("Waiting for changes.", asOK("list_folder_longpoll", obj{"cursor": "AAH-c4", "timeout": 120}, obj{"changes": false}))
		w.t("Waiting for changes.", asOK("list_folder_longpoll", obj{"cursor": "AAH-c4", "timeout": 120}, obj{"changes": true}))
		w.t("Fetching the change.", asOK("list_folder_continue", obj{"cursor": "AAH-c4"}, obj{"entries": arr{obj{".tag": "file", "name": "msa_2026_signed.pdf"}}, "cursor": "AAH-c5", "has_more": false}))
		add(w)
	}

	// A briefing handed to the briefer, then to dispatch with its answer.
	{
		w := asRunOf("briefing-then-dispatch-with-answer", "aviation", false)
		w.hand("Getting the briefing.", "wx_briefer", "Brief the KSFO-KSEA leg at 22Z.", "Moderate icing FL120-FL180 over southern Oregon; tops FL220. Recommend FL240 or above.", nil)
		w.hand("Asking dispatch.", "dispatcher", "Approve an altitude for KSFO-KSEA at 22Z; briefing recommends FL240+ for icing FL120-180.", "FL260 approved; file it.", nil)
		w.t("Filing the plan.", asOK("file_flight_plan", obj{"callsign": "N512QX", "route": "KSFO OAK V23 SEA KSEA", "altitude": "FL260", "etd": "2200Z"}, obj{"plan_id": "FP-88172", "status": "ACKNOWLEDGED"}))
		add(w)
	}

	// A transient failure that clears: rate-limited, then unavailable,
	// then answered.
	{
		w := asRunOf("notams-transient-then-answered", "aviation", false)
		w.t("Any NOTAMs for Seattle?", asFail("notam_search", obj{"location": "KSEA"}, "rate_limited", "429 Too Many Requests: retry after 3 seconds"))
		w.t("Trying again.", asFail("notam_search", obj{"location": "KSEA"}, "unavailable", "503 Service Unavailable (upstream FNS timeout)"))
		w.t("Trying again.", asOK("notam_search", obj{"location": "KSEA"}, obj{"totalCount": 1, "items": arr{obj{"id": "NOTAM_1_73912044", "text": "RWY 16L/34R CLSD 2200-0600 DLY"}}}))
		w.t("And Portland?", asOK("notam_search", obj{"location": "KPDX"}, obj{"totalCount": 0, "items": arr{}}))
		add(w)
	}

	// Flight plans filed leg by leg, each acknowledged alike.
	{
		w := asRunOf("flight-plans-filed-leg-by-leg", "aviation", false).acc("write", "file_flight_plan")
		legs := [][2]string{{"KSFO", "KSEA"}, {"KSEA", "KGEG"}, {"KGEG", "KBOI"}, {"KBOI", "KSLC"}, {"KSLC", "KDEN"}}
		for i, l := range legs {
			w.t("Filing the next leg.", asOK("file_flight_plan", obj{"callsign": "N512QX", "departure": l[0], "destination": l[1], "altitude": "FL260", "etd": fmt.Sprintf("%02d00Z", 14+i*3)},
				obj{"plan_id": fmt.Sprintf("FP-%d", 88172+i), "status": "ACKNOWLEDGED"}))
		}
		add(w)
	}

	// A campaign sent segment by segment; each send answers alike.
	{
		w := asRunOf("campaign-sent-segment-by-segment", "marketing", false).acc("write", "campaign_send_segment")
		for i, seg := range []string{"vip", "new_2026", "lapsed_90d", "newsletter_eu", "newsletter_us", "wholesale"} {
			w.t("Next segment.", asOK("campaign_send_segment", obj{"campaign_id": "9b2e41f7c0", "segment": seg}, obj{"ok": true, "queued": true, "batch": i + 1}))
		}
		add(w)
	}

	// A turbine fault diagnosed: reset, a new fault, the converter swapped,
	// reset again into running.
	{
		w := asRunOf("turbine-reset-diagnosed-repaired", "energy", false).acc("write", "turbine_reset", "work_order")
		w.t("Resetting WTG-11.", asOK("turbine_reset", obj{"turbine": "WTG-11", "level": "remote"}, obj{"turbine": "WTG-11", "command": "reset", "accepted": true, "command_id": 77120}))
		w.t("Did it come back?", asOK("turbine_status", obj{"turbine": "WTG-11"}, s24Turbine("WTG-11", "STOPPED", "PITCH_2_CONV", 0, 600)))
		w.t("Reading the fault log.", asOK("fault_log", obj{"turbine": "WTG-11", "hours": 24}, obj{"events": arr{obj{"code": "PITCH_2_CONV", "count": 6, "first": "2026-12-06T03:12Z"}}}))
		w.t("Sending a technician.", asOK("work_order", obj{"turbine": "WTG-11", "task": "replace pitch converter blade 2"}, obj{"work_order": "WO-3391", "status": "completed", "completed_at": s24Clock(1500)}))
		w.t("Resetting WTG-11.", asOK("turbine_reset", obj{"turbine": "WTG-11", "level": "remote"}, obj{"turbine": "WTG-11", "command": "reset", "accepted": true, "command_id": 77121}))
		w.t("Did it come back?", asOK("turbine_status", obj{"turbine": "WTG-11"}, s24Turbine("WTG-11", "RUNNING", "", 2104, 1620)))
		add(w)
	}

	// A warehouse query fails once on a typo, fixed, and runs.
	{
		w := asRunOf("warehouse-query-typo-fixed", "data", false).acc("write", "run_query")
		w.t("Getting revenue by region.", asFail("run_query", obj{"sql": "SELECT regoin, SUM(amount) FROM sales.orders GROUP BY 1", "location": "EU"}, "invalid_args", "Unrecognized name: regoin; Did you mean region? at [1:8]"))
		w.t("Fixing the column.", asOK("run_query", obj{"sql": "SELECT region, SUM(amount) FROM sales.orders GROUP BY 1", "location": "EU"}, obj{"job_id": "bquxjob_7a8b", "state": "DONE", "rows": 6}))
		add(w)
	}

	// A long reconciliation: every vessel in a port's anchorage asked in
	// turn, each answering in one shape.
	{
		w := asRunOf("ais-anchorage-roll-call", "maritime", false)
		for i := 0; i < 12; i++ {
			mmsi := 636019825 + i*1117
			w.t("Next vessel at the anchorage.", asOK("vessel_position", obj{"mmsi": fmt.Sprint(mmsi)},
				obj{"data": obj{"mmsi": mmsi, "lat": 51.94 + float64(i)*0.003, "lon": 4.05 - float64(i)*0.004, "sog": 0.1, "nav_status": "At anchor", "timestamp": s24Clock(100 + i*7)}}))
		}
		add(w)
	}

	return runs
}

// s24UUIDish is an error instance id made of n.
func s24UUIDish(n int) string {
	return fmt.Sprintf("%08x-%04x-%04x-%04x-%012x", 0x2b9c0000+n*31337, n*17, 0x4000+n, 0x8000+n*3, 0x5e6f70000000+n*65537)
}
