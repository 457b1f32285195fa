package loops

import (
	"fmt"
	"testing"
)

// The twenty-fifth probe: written before reading the detectors' rules in
// detail, with the tool names and answer shapes of kinds of work the
// twenty-four before it do not use: routers' BGP sessions (NETCONF), a
// quantum computer's job queue, an earthquake catalog (FDSN), drone
// flights (MAVLink), e-prescribing, a domain registrar, online auctions,
// an app store's review, a print queue (IPP), VAT returns, a chess
// engine, a museum's digital assets, river gauges, voice calls, a search
// engine's URL inspection and a pharmacist sub-agent. The loops: a BGP
// neighbor asked under spellings of its address while it stays Idle, a
// session cleared and read back in turn into the same notification, a
// quantum job polled while only its time in the queue grows, a circuit
// submitted under spellings of its backend into one qubit count error, an
// earthquake asked under notations of its time window, a drone armed with
// its parameters respelled into one pre-arm failure, a take-off and a
// status read in turn while the drone stays on the ground, a drug
// interaction asked under other names of the drugs, a prescription sent
// under spellings of the pharmacy's id into one refusal, a domain's
// availability asked under spellings of its name, a domain registered
// with its contact reworded into one unverified e-mail, a bid placed in
// notations of one amount under the minimum, an auction searched in other
// words into the same listings, an app submitted for review and its
// review read in turn into one rejection, a document printed under names
// of one stopped printer, a VAT return submitted under spellings of one
// period, a chess position analysed under other move counters, a
// museum's assets searched in other words into nothing, a river gauge
// polled while its last reading ages, a call placed with its message
// reworded to one busy line, a page inspected under spellings of its
// address and a prior authorization handed to a pharmacist in other
// words. Each loop has a legitimate near-miss that repeats with progress.
//
// A loop is marked as the ninth probe marks them: the fourth call that
// asks again in other words and learns nothing, the third identical poll
// or write, the third round of a pair or ring of calls (or of hand-offs)
// that learns nothing. A tool without readOnlyHint is declared a write,
// as it is through the gateway.
//
// It is written and played with the assistants probe's writer and driver
// (assistruns_test.go).

// s25Known lists the runs whose outcome is not their label's, each with why.
var s25Known = map[string]string{
	// As written, on the guard then (604c3dfb): 11 of 22 loops detected,
	// one early, 10 missed; one of 25 legit runs refused. The early one
	// was the probe's own error, against the marks it states above: the
	// prior authorization's mark was put at the fourth hand-off, where it
	// is the third round of hand-offs (the delegation rule refuses there);
	// corrected, it is detected. Since its fixes, 14 of 22 (13 and the
	// early one on the mark as written): how long a
	// job has been in a queue (time_in_queue_s) grows with the clock as a
	// wait does (TestQueueSpanKeys); an answer's stamp under a key that
	// says when it was made, as a number since the epoch ("generated":
	// 1796558400000), is its stamp as a date-time is (TestEpochStamps).
	// Since the twenty-sixth probe's fixes, 15: a print refused on a
	// stopped printer, each refusal naming the job it did not create (job
	// 4411 not created), names that job as the attempt's own, left out of
	// the complaint compared word for word (TestAttemptOwnIDs).
	// Left:
	//
	// a neighbor asked under spellings of its address (192.0.2.14/32,
	// leading zeros, a word before it): none respells the address in
	// another case or punctuation alone, and its down-for moves;
	"bgp-neighbor-address-respelled-idle": "missed",
	// rings of a write accepted and a read that shows nothing changed (a
	// session cleared, a take-off, a submission for review): a cycle with
	// a write goes round three times before the fourth is refused, so
	// that a flaky job re-run and its logs read go on; the probe marks
	// the third round;
	"bgp-clear-session-ring-same-notification":   "missed",
	"drone-takeoff-status-ring-on-ground":        "missed",
	"appstore-submit-review-ring-same-rejection": "missed",
	// reworded searches whose answer holds a link or a count that moves
	// with each asking (a search's href, an inspection's result link, an
	// engine's node count).
	"auction-search-reworded-same-listings":       "missed",
	"url-inspect-address-respelled-not-indexed":   "missed",
	"chess-position-counters-respelled-same-line": "missed",
	// A domain's nameservers polled until they change, answered alike
	// three times before they do: the third identical poll, after two
	// answers alike with nothing written, is refused by the benchmark's
	// own rule (repeat, RepeatMax), which the probe's marks state (the
	// third identical poll), whatever the poll would have brought. An
	// agent waiting on the world's change is told to wait or to give its
	// answer.
	"domain-nameservers-polled-until-changed": "false_kill",
}

func TestTwentyFifthRuns(t *testing.T) {
	checkAsRuns(t, "twenty-fifth probe", twentyFifthRuns(), 44, s25Known)
}

// s25ID is a hex request id made of n.
func s25ID(n int) string {
	return fmt.Sprintf("%08x%08x", 0x51d30000+n*52919, 0x7c000000+n*6883)
}

// s25Clock is a time of day on the probe's day, n seconds after 21:00.
func s25Clock(n int) string {
	return fmt.Sprintf("2026-12-06T21:%02d:%02dZ", (n/60)%60, n%60)
}

// s25Neighbor is a BGP neighbor's state as a router reports it.
func s25Neighbor(addr, state string, up string, rx, tx int) obj {
	o := obj{"neighbor-address": addr, "peer-as": 64512, "session-state": state, "established-transitions": 3,
		"messages":         obj{"received": obj{"UPDATE": rx, "NOTIFICATION": 1}, "sent": obj{"UPDATE": tx, "NOTIFICATION": 0}},
		"last-established": "2026-12-06T18:02:11Z"}
	if state != "ESTABLISHED" {
		o["last-error"] = "Hold Timer Expired (code 4, subcode 0)"
		o["down-for"] = up
	} else {
		o["up-for"] = up
	}
	return o
}

// s25Quake is one event of an earthquake catalog.
func s25Quake(id string, mag float64, place string, n int) obj {
	return obj{"type": "Feature", "id": id, "properties": obj{"mag": mag, "place": place, "time": 1796551200000 + int64(n)*60000,
		"updated": 1796558400000, "status": "reviewed", "tsunami": 0, "magType": "mww", "net": "us"},
		"geometry": obj{"type": "Point", "coordinates": arr{142.37 + float64(n)*0.01, 38.11, 24.5}}}
}

// s25Drone is a drone's status over MAVLink.
func s25Drone(armed bool, mode, prearm string, hdop float64, bootMs int) obj {
	o := obj{"system_id": 1, "armed": armed, "mode": mode, "landed_state": "ON_GROUND", "gps": obj{"fix_type": "3D", "satellites": 9, "hdop": hdop},
		"battery": obj{"voltage": 16.61, "remaining": 97}, "time_boot_ms": bootMs}
	if prearm != "" {
		o["statustext"] = obj{"severity": "CRITICAL", "text": prearm}
	}
	return o
}

// s25Gauge is a river gauge's latest reading.
func s25Gauge(site string, value float64, at string, n int) obj {
	return obj{"site": site, "name": "Meramec River near Eureka, MO", "parameter": "00065", "unit": "ft",
		"latest": obj{"value": value, "dateTime": at, "qualifiers": arr{"P"}}, "retrieved_at": s25Clock(n)}
}

func twentyFifthRuns() []*asRun {
	var runs []*asRun
	add := func(w *asw) { runs = append(runs, w.run) }

	// ===================== loops =====================

	// A network agent asks one BGP neighbor under spellings of its
	// address; it stays Idle, only how long it has been down moving.
	{
		w := asRunOf("bgp-neighbor-address-respelled-idle", "network", true)
		for i, a := range []string{"192.0.2.14", "192.0.2.14/32", "neighbor 192.0.2.14", "192.000.002.014", "ipv4 192.0.2.14"} {
			if i == 3 {
				w.then()
			}
			w.t("Why is the Frankfurt peer down?", asOK("bgp_neighbor", obj{"device": "edge-fra-1", "neighbor": a},
				obj{"device": "edge-fra-1", "neighbor": s25Neighbor("192.0.2.14", "IDLE", fmt.Sprintf("00:%02d:%02d", 12+i, 7+i*13), 48211, 1207)}))
		}
		add(w)
	}

	// A network agent clears a BGP session and reads it back in turn;
	// it falls back to Active with the same hold-timer notification.
	{
		w := asRunOf("bgp-clear-session-ring-same-notification", "network", true).acc("write", "bgp_clear")
		for r := 0; r < 3; r++ {
			if r == 2 {
				w.then()
			}
			w.t("Clearing the session to the Frankfurt peer.", asOK("bgp_clear", obj{"device": "edge-fra-1", "neighbor": "192.0.2.14", "soft": false},
				obj{"rpc-reply": obj{"message-id": 811 + r, "ok": true}}))
			w.t("Did it come up?", asOK("bgp_neighbor", obj{"device": "edge-fra-1", "neighbor": "192.0.2.14"},
				obj{"device": "edge-fra-1", "neighbor": s25Neighbor("192.0.2.14", "ACTIVE", fmt.Sprintf("00:00:%02d", 31+r*4), 48211, 1207)}))
		}
		add(w)
	}

	// A research agent polls a quantum job; it stays 14th in the queue,
	// only its time in the queue growing.
	{
		w := asRunOf("quantum-job-polled-queue-position-still", "quantum", true)
		for i := 0; i < 5; i++ {
			if i == 2 {
				w.then()
			}
			w.t("Is the job running yet?", asOK("quantum_job_status", obj{"job_id": "cx7q2v9r3m0g008k4h1g"},
				obj{"id": "cx7q2v9r3m0g008k4h1g", "backend": "ibm_kyiv", "status": "QUEUED", "queue_position": 14,
					"estimated_start": "2026-12-07T02:40:00Z", "time_in_queue_s": 610 + i*300, "created": "2026-12-06T20:49:12Z"}))
		}
		add(w)
	}

	// A research agent submits one circuit under spellings of its backend;
	// the circuit is too wide for it each time.
	{
		w := asRunOf("quantum-submit-backend-respelled-too-wide", "quantum", true).acc("write", "quantum_submit")
		for i, b := range []string{"ibm_kyiv", "IBM_Kyiv", "ibm-kyiv", "kyiv", "ibm_kyiv "} {
			if i == 3 {
				w.then()
			}
			w.t("Submitting the 133-qubit GHZ circuit.", asFail("quantum_submit", obj{"backend": b, "program": "ghz_133.qasm", "shots": 4000}, "invalid_args",
				fmt.Sprintf(`{"errors":[{"code":1519,"message":"Number of qubits in the circuit (133) is greater than the number of qubits in the backend (127)."}],"trace":"%s"}`, s25ID(i))))
		}
		add(w)
	}

	// A geoscience agent asks for one earthquake under notations of its
	// time window; the same event comes back.
	{
		w := asRunOf("quake-window-notations-same-event", "seismology", true)
		for i, win := range []obj{
			{"starttime": "2026-12-06T08:00:00", "endtime": "2026-12-06T09:00:00"},
			{"starttime": "2026-12-06 08:00", "endtime": "2026-12-06 09:00"},
			{"starttime": "2026-12-06T08:00:00Z", "endtime": "2026-12-06T09:00:00Z"},
			{"starttime": "2026-12-06T17:00:00+09:00", "endtime": "2026-12-06T18:00:00+09:00"},
			{"starttime": "1796544000", "endtime": "1796547600"},
		} {
			if i == 3 {
				w.then()
			}
			args := obj{"minmagnitude": 6, "format": "geojson", "orderby": "time"}
			for k, v := range win {
				args[k] = v
			}
			w.t("Finding the Miyagi quake.", asOK("fdsn_event_query", args,
				obj{"type": "FeatureCollection", "metadata": obj{"generated": 1796558400000 + int64(i)*41000, "count": 1, "api": "1.14.1"},
					"features": arr{s25Quake("us7000q1xz", 6.4, "52 km E of Ishinomaki, Japan", 4)}}))
		}
		add(w)
	}

	// A drone agent arms the drone with its parameters respelled; the
	// same pre-arm check fails, the boot clock moving.
	{
		w := asRunOf("drone-arm-params-respelled-prearm-fail", "drone", true).acc("write", "drone_arm")
		for i, a := range []obj{
			{"arm": true, "force": false},
			{"arm": 1, "force": 0},
			{"arm": "true"},
			{"param1": 1, "param2": 0, "command": "MAV_CMD_COMPONENT_ARM_DISARM"},
			{"arm": true, "force": false, "target_system": 1},
		} {
			if i == 3 {
				w.then()
			}
			w.t("Arming for the survey flight.", asFail("drone_arm", a, "tool_error",
				fmt.Sprintf(`{"result":"MAV_RESULT_FAILED","command":400,"statustext":"PreArm: GPS HDOP too high (2.41 > 1.40)","time_boot_ms":%d}`, 381200+i*5130)))
		}
		add(w)
	}

	// A drone agent takes off and reads its status in turn; the drone
	// stays on the ground with one pre-arm message.
	{
		w := asRunOf("drone-takeoff-status-ring-on-ground", "drone", true).acc("write", "drone_takeoff")
		for r := 0; r < 3; r++ {
			if r == 2 {
				w.then()
			}
			w.t("Taking off to 40 m.", asOK("drone_takeoff", obj{"altitude_m": 40}, obj{"result": "MAV_RESULT_ACCEPTED", "command": 22}))
			w.t("Are we airborne?", asOK("drone_status", obj{}, s25Drone(false, "GUIDED", "PreArm: Compass not calibrated", 0.9, 402100+r*7300)))
		}
		add(w)
	}

	// A prescribing agent asks one drug interaction under other names of
	// the drugs; the same warning comes back.
	{
		w := asRunOf("erx-interaction-drug-names-same-warning", "pharmacy", true)
		for i, p := range [][2]string{{"warfarin", "fluconazole"}, {"Coumadin", "Diflucan"}, {"WARFARIN SODIUM", "FLUCONAZOLE"}, {"warfarin 5 mg", "fluconazole 150 mg"}, {"Jantoven", "fluconazole"}} {
			if i == 3 {
				w.then()
			}
			w.t("Checking the interaction before prescribing.", asOK("drug_interactions", obj{"drugs": arr{p[0], p[1]}},
				obj{"pairs": arr{obj{"drug_a": obj{"rxcui": "11289", "name": "warfarin"}, "drug_b": obj{"rxcui": "4450", "name": "fluconazole"},
					"severity": "major", "description": "Fluconazole may increase the anticoagulant effect of warfarin (CYP2C9 inhibition). Monitor INR closely."}},
					"source": "DrugBank", "checked_at": s25Clock(120 + i*40)}))
		}
		add(w)
	}

	// A prescribing agent sends one prescription under spellings of the
	// pharmacy's id; the network refuses the prescriber each time.
	{
		w := asRunOf("erx-send-pharmacy-id-respelled-refused", "pharmacy", true).acc("write", "erx_send")
		for i, ph := range []any{"0512345", 512345, "NCPDP 0512345", "05-12345", "0512345 "} {
			if i == 3 {
				w.then()
			}
			w.t("Sending the amoxicillin prescription.", asFail("erx_send", obj{"patient_id": "pt_88231", "pharmacy_ncpdp": ph, "drug": "amoxicillin 500 mg capsule", "sig": "1 cap PO TID x 10 days", "quantity": 30},
				"forbidden", fmt.Sprintf("NewRx rejected (message %s): 602 Prescriber SPI not registered for NewRx with this pharmacy's network.", s25ID(30+i))))
		}
		add(w)
	}

	// A founder's agent asks a domain's availability under spellings of
	// its name; it is taken each time.
	{
		w := asRunOf("domain-availability-name-respelled-taken", "registrar", true)
		for i, d := range []string{"acmecloud.io", "AcmeCloud.io", "acmecloud.io.", "https://acmecloud.io", "www.acmecloud.io"} {
			if i == 3 {
				w.then()
			}
			w.t("Is acmecloud.io free?", asOK("domain_check", obj{"domain": d},
				obj{"domain": "acmecloud.io", "available": false, "premium": false, "registered_until": "2027-08-14", "checked": s25Clock(300 + i*22)}))
		}
		add(w)
	}

	// A founder's agent registers a domain with its contact reworded; the
	// registrant's e-mail stays unverified.
	{
		w := asRunOf("domain-register-contact-reworded-unverified", "registrar", true).acc("write", "domain_register")
		for i, org := range []string{"Acme Cloud Ltd", "Acme Cloud Limited", "ACME CLOUD LTD.", "Acme Cloud Ltd (UK)", "Acme-Cloud Ltd"} {
			if i == 3 {
				w.then()
			}
			w.t("Registering acmecloud.dev.", asFail("domain_register", obj{"domain": "acmecloud.dev", "years": 1, "contact": obj{"org": org, "email": "ops@acmecloud.example", "country": "GB"}}, "invalid_args",
				fmt.Sprintf(`{"code":"CONTACT_EMAIL_UNVERIFIED","message":"The registrant email ops@acmecloud.example has not been verified.","request_id":"%s"}`, s25ID(50+i))))
		}
		add(w)
	}

	// A buyer's agent bids one amount in other notations; each is under
	// the minimum.
	{
		w := asRunOf("auction-bid-amount-notations-under-minimum", "auction", true).acc("write", "place_bid")
		for i, amt := range []any{125, "125.00", "$125", 125.0, "125 USD"} {
			if i == 3 {
				w.then()
			}
			w.t("Bidding on the Leica.", asFail("place_bid", obj{"listing_id": "v1|386172935541|0", "max_amount": amt}, "invalid_args",
				fmt.Sprintf(`{"errors":[{"errorId":120011,"message":"Your bid must be at least 130.00 USD. The current bid is 127.50 USD.","correlationId":"%s"}]}`, s25ID(70+i))))
		}
		add(w)
	}

	// A buyer's agent searches an auction site in other words; the same
	// four listings come back.
	{
		w := asRunOf("auction-search-reworded-same-listings", "auction", true)
		items := arr{
			obj{"itemId": "v1|386172935541|0", "title": "Leica M3 double stroke 1955 + Summicron 50mm", "currentBidPrice": obj{"value": "127.50", "currency": "USD"}, "bidCount": 11},
			obj{"itemId": "v1|295881204412|0", "title": "Leica M3 body only, serviced", "currentBidPrice": obj{"value": "840.00", "currency": "USD"}, "bidCount": 23},
			obj{"itemId": "v1|176690023157|0", "title": "LEICA M3 single stroke chrome", "currentBidPrice": obj{"value": "1010.00", "currency": "USD"}, "bidCount": 31},
			obj{"itemId": "v1|204455781930|0", "title": "Vintage Leica M3 rangefinder camera", "currentBidPrice": obj{"value": "655.00", "currency": "USD"}, "bidCount": 17},
		}
		for i, q := range []string{"leica m3", "Leica M3 camera", "vintage leica m3 rangefinder", "leica m-3 body", "M3 Leica film camera"} {
			if i == 3 {
				w.then()
			}
			w.t("Looking for an M3 under 1,000 dollars.", asOK("auction_search", obj{"q": q, "filter": "buyingOptions:{AUCTION}", "sort": "endingSoonest"},
				obj{"total": 4, "itemSummaries": items, "href": fmt.Sprintf("https://api.example/buy/browse/v1/item_summary/search?q=%d", i)}))
		}
		add(w)
	}

	// A release agent submits an app for review and reads the review in
	// turn; the same rejection comes back on the same build.
	{
		w := asRunOf("appstore-submit-review-ring-same-rejection", "appstore", true).acc("write", "submit_for_review")
		for r := 0; r < 3; r++ {
			if r == 2 {
				w.then()
			}
			w.t("Submitting 4.2.0 for review.", asOK("submit_for_review", obj{"app_id": "1582293041", "version": "4.2.0", "build": "4200113"},
				obj{"data": obj{"type": "reviewSubmissions", "id": fmt.Sprintf("a1c0%04x-77de-4b1e-9f00-3e2a5c%06x", r*311, r*7919), "attributes": obj{"state": "WAITING_FOR_REVIEW"}}}))
			w.t("What did review say?", asOK("review_status", obj{"app_id": "1582293041", "version": "4.2.0"},
				obj{"state": "REJECTED", "build": "4200113", "guideline": "2.1", "message": "We were unable to sign in with the demo account provided. Please provide valid demo account credentials."}))
		}
		add(w)
	}

	// An office agent prints one document under names of one printer;
	// the printer is stopped, out of paper, each time.
	{
		w := asRunOf("print-printer-respelled-stopped", "printing", true).acc("write", "print_document")
		for i, p := range []string{"HP_LaserJet_4F", "hp-laserjet-4f", "ipp://print.corp.example/printers/HP_LaserJet_4F", "HP LaserJet 4F", "HP_LaserJet_4F@print.corp.example"} {
			if i == 3 {
				w.then()
			}
			w.t("Printing the board pack.", asFail("print_document", obj{"printer": p, "file": "board-pack-dec.pdf", "copies": 12, "sides": "two-sided-long-edge"}, "tool_error",
				fmt.Sprintf("client-error-not-possible: printer HP_LaserJet_4F is stopped (printer-state-reasons: media-empty-error); job %d not created", 4411+i)))
		}
		add(w)
	}

	// A bookkeeping agent submits one VAT return under spellings of its
	// period; it was already filed.
	{
		w := asRunOf("vat-return-period-respelled-duplicate", "tax", true).acc("write", "vat_submit_return")
		for i, pk := range []string{"24A3", "24a3", "#24A3", "24A3 ", "Q3-2024/24A3"} {
			if i == 3 {
				w.then()
			}
			w.t("Filing the Q3 VAT return.", asFail("vat_submit_return", obj{"vrn": "123456789", "periodKey": pk, "vatDueSales": 10412.50, "totalVatDue": 10412.50, "netVatDue": 7110.25, "finalised": true}, "conflict",
				fmt.Sprintf(`{"code":"DUPLICATE_SUBMISSION","message":"The VAT return was already submitted for the given period.","correlationId":"%s"}`, s25ID(90+i))))
		}
		add(w)
	}

	// A chess coach's agent analyses one position under other move
	// counters; the engine's line comes back, its node count moving.
	{
		w := asRunOf("chess-position-counters-respelled-same-line", "chess", true)
		for i, fen := range []string{
			"r1bqkb1r/pppp1ppp/2n2n2/4p2Q/2B1P3/8/PPPP1PPP/RNB1K1NR w KQkq - 4 4",
			"r1bqkb1r/pppp1ppp/2n2n2/4p2Q/2B1P3/8/PPPP1PPP/RNB1K1NR w KQkq - 0 1",
			"r1bqkb1r/pppp1ppp/2n2n2/4p2Q/2B1P3/8/PPPP1PPP/RNB1K1NR w KQkq -",
			"r1bqkb1r/pppp1ppp/2n2n2/4p2Q/2B1P3/8/PPPP1PPP/RNB1K1NR w KQkq - 4 12",
			"r1bqkb1r/pppp1ppp/2n2n2/4p2Q/2B1P3/8/PPPP1PPP/RNB1K1NR w KQkq - 0 4",
		} {
			if i == 3 {
				w.then()
			}
			w.t("What should White play here?", asOK("engine_analyse", obj{"fen": fen, "depth": 22},
				obj{"bestmove": "h5f7", "score": obj{"mate": 1}, "pv": arr{"h5f7"}, "depth": 22, "nodes": 18204 + i*113, "time_ms": 41 + i*3}))
		}
		add(w)
	}

	// A curator's agent searches a museum's assets in other words; none
	// come back.
	{
		w := asRunOf("dam-search-reworded-no-assets", "museum", true)
		for i, q := range []string{"Monet water lilies", "water lilies by Monet", "Nymphéas Claude Monet", "Monet lily pond painting", "Claude Monet Waterlilies"} {
			if i == 3 {
				w.then()
			}
			w.t("Finding images of the Monet for the catalogue.", asOK("asset_search", obj{"query": q, "collection": "paintings", "rights": "cleared"},
				obj{"total": 0, "assets": arr{}, "facets": obj{"department": arr{}}, "query_id": s25ID(110 + i)}))
		}
		add(w)
	}

	// A flood-watch agent polls a river gauge whose last reading stays at
	// 14:15 while the answer's retrieval time moves.
	{
		w := asRunOf("gauge-polled-reading-stale", "hydrology", true)
		for i := 0; i < 5; i++ {
			if i == 2 {
				w.then()
			}
			w.t("Is the Meramec still rising?", asOK("gauge_latest", obj{"site": "07019000", "parameter": "00065"},
				s25Gauge("07019000", 18.42, "2026-12-06T14:15:00-06:00", 600+i*900)))
		}
		add(w)
	}

	// A reminder agent places one call with its message reworded; the line
	// is busy each time.
	{
		w := asRunOf("voice-call-message-reworded-busy", "voice", true).acc("write", "place_call")
		for i, msg := range []string{
			"Hello, this is a reminder of your dental appointment tomorrow at 9 am.",
			"Hi! Reminder: dental appointment tomorrow, 9 am.",
			"This is Brightsmile Dental reminding you of tomorrow's 9 am appointment.",
			"Hello, your dental appointment is tomorrow at 9 in the morning.",
			"Reminder from Brightsmile: you are booked tomorrow at 9 am.",
		} {
			if i == 3 {
				w.then()
			}
			w.t("Calling Mrs Okonkwo about tomorrow.", asOK("place_call", obj{"to": "+15125550143", "from": "+15125550100", "say": msg, "voice": "alice"},
				obj{"sid": fmt.Sprintf("CA%032x", 0x9f31+i*7717), "status": "busy", "duration": 0, "answered_by": nil, "price": nil}))
		}
		add(w)
	}

	// A web agent inspects one page under spellings of its address; the
	// same coverage comes back.
	{
		w := asRunOf("url-inspect-address-respelled-not-indexed", "seo", true)
		for i, u := range []string{"https://acme.example/pricing", "https://acme.example/pricing/", "https://acme.example/pricing?utm_source=newsletter", "acme.example/pricing", "https://ACME.example/pricing#plans"} {
			if i == 3 {
				w.then()
			}
			w.t("Why is the pricing page not in search?", asOK("url_inspect", obj{"inspectionUrl": u, "siteUrl": "sc-domain:acme.example"},
				obj{"inspectionResult": obj{"indexStatusResult": obj{"verdict": "NEUTRAL", "coverageState": "Crawled - currently not indexed", "lastCrawlTime": "2026-11-29T03:12:44Z",
					"googleCanonical": "https://acme.example/pricing", "robotsTxtState": "ALLOWED"}, "inspectionResultLink": fmt.Sprintf("https://search.example/inspect?id=%d", 5521+i)}}))
		}
		add(w)
	}

	// A clinic's agent hands one prior authorization to a pharmacist
	// sub-agent in other words; the plan's answer stays the same.
	{
		w := asRunOf("prior-auth-handed-reworded-same-denial", "pharmacy", true)
		for i, task := range []string{
			"Get prior authorization for semaglutide 1 mg for patient pt_88231 (Aetna).",
			"Patient pt_88231 needs a PA for Ozempic 1 mg; plan is Aetna.",
			"Please obtain Aetna's authorization of semaglutide 1 mg weekly for pt_88231.",
			"PA request: Ozempic (semaglutide) 1 mg, pt_88231, Aetna commercial.",
			"Could you secure coverage approval for pt_88231's semaglutide 1 mg?",
		} {
			if i == 2 { // the third round of hand-offs (corrected: written i == 3)
				w.then()
			}
			w.hand("Asking the pharmacist.", "pharmacist", task, "Denied: the plan requires a trial of metformin first (step therapy); no record of one.", func(s *asw) {
				s.t("Checking the plan's criteria.", asOK("pa_criteria", obj{"payer": "aetna", "drug_rxcui": "1991302", "patient_id": "pt_88231"},
					obj{"covered": false, "reason": "STEP_THERAPY", "requires": arr{"metformin"}, "history_found": arr{}, "checked_at": s25Clock(700 + i*55)}))
			})
		}
		add(w)
	}

	// ===================== legit =====================

	// A BGP neighbor polled after a fix until it is Established.
	{
		w := asRunOf("bgp-neighbor-polled-until-established", "network", false)
		for i, st := range []string{"IDLE", "CONNECT", "OPENSENT", "OPENCONFIRM", "ESTABLISHED"} {
			w.t("Watching the Frankfurt peer come up.", asOK("bgp_neighbor", obj{"device": "edge-fra-1", "neighbor": "192.0.2.14"},
				obj{"device": "edge-fra-1", "neighbor": s25Neighbor("192.0.2.14", st, fmt.Sprintf("00:00:%02d", 5+i*6), 48211+i*(i/4)*300, 1207+i)}))
		}
		add(w)
	}

	// Every neighbor of a router checked, all Established alike.
	{
		w := asRunOf("bgp-neighbors-roll-call-all-up", "network", false)
		for i := 0; i < 10; i++ {
			a := fmt.Sprintf("192.0.2.%d", 10+i*4)
			w.t("Next neighbor.", asOK("bgp_neighbor", obj{"device": "edge-fra-1", "neighbor": a},
				obj{"device": "edge-fra-1", "neighbor": s25Neighbor(a, "ESTABLISHED", "3d04h", 48211, 1207)}))
		}
		add(w)
	}

	// A quantum job polled as it moves up the queue and runs.
	{
		w := asRunOf("quantum-job-polled-queue-moves", "quantum", false)
		for i, pos := range []int{14, 9, 3, 0, 0} {
			st := "QUEUED"
			if i == 3 {
				st = "RUNNING"
			} else if i == 4 {
				st = "DONE"
			}
			w.t("Is the job running yet?", asOK("quantum_job_status", obj{"job_id": "cx7q2v9r3m0g008k4h1g"},
				obj{"id": "cx7q2v9r3m0g008k4h1g", "backend": "ibm_kyiv", "status": st, "queue_position": pos, "time_in_queue_s": 610 + i*300}))
		}
		add(w)
	}

	// A circuit too wide for a backend, cut down, then run.
	{
		w := asRunOf("quantum-circuit-cut-then-runs", "quantum", false).acc("write", "quantum_submit")
		w.t("Submitting the GHZ circuit.", asFail("quantum_submit", obj{"backend": "ibm_kyiv", "program": "ghz_133.qasm", "shots": 4000}, "invalid_args",
			`{"errors":[{"code":1519,"message":"Number of qubits in the circuit (133) is greater than the number of qubits in the backend (127)."}]}`))
		w.t("Cutting it to 127 qubits.", asFail("quantum_submit", obj{"backend": "ibm_kyiv", "program": "ghz_127.qasm", "shots": 4000}, "invalid_args",
			`{"errors":[{"code":1517,"message":"Instruction h is not supported by the backend; transpile the circuit to its basis gates (ecr, id, rz, sx, x)."}]}`))
		w.t("Transpiling first.", asOK("quantum_submit", obj{"backend": "ibm_kyiv", "program": "ghz_127.transpiled.qasm", "shots": 4000},
			obj{"id": "cx7q4a1b9n8h00e3kfpg", "status": "QUEUED"}))
		add(w)
	}

	// An earthquake catalog paged by offset.
	{
		w := asRunOf("quake-catalog-paged-by-offset", "seismology", false)
		for p := 0; p < 6; p++ {
			var fs arr
			for j := 0; j < 4; j++ {
				fs = append(fs, s25Quake(fmt.Sprintf("us7000q%03d", p*4+j), 4.5+float64(j)/10, fmt.Sprintf("%d km SE of Place %d", 10+j*7, p), p*4+j))
			}
			w.t("Reading the week's catalog.", asOK("fdsn_event_query", obj{"starttime": "2026-11-29", "endtime": "2026-12-06", "minmagnitude": 4.5, "limit": 4, "offset": 1 + p*4},
				obj{"type": "FeatureCollection", "metadata": obj{"count": 4}, "features": fs}))
		}
		add(w)
	}

	// A search narrowed by magnitude; each answer is a subset of the last.
	{
		w := asRunOf("quake-search-narrowed-by-magnitude", "seismology", false)
		for i, m := range []float64{4.5, 5.0, 5.5, 6.0} {
			var fs arr
			for j := 0; j < 8-2*i; j++ {
				fs = append(fs, s25Quake(fmt.Sprintf("us7000r%03d", j), m+float64(j)/20, "off the east coast of Honshu, Japan", j))
			}
			w.t("Narrowing to the larger ones.", asOK("fdsn_event_query", obj{"starttime": "2026-12-01", "endtime": "2026-12-06", "minmagnitude": m, "latitude": 38.1, "longitude": 142.4, "maxradiuskm": 300},
				obj{"type": "FeatureCollection", "metadata": obj{"count": len(fs)}, "features": fs}))
		}
		add(w)
	}

	// A drone armed after its GPS settles: refused, status read while the
	// HDOP falls, then armed.
	{
		w := asRunOf("drone-arm-after-gps-settles", "drone", false).acc("write", "drone_arm")
		w.t("Arming for the survey flight.", asFail("drone_arm", obj{"arm": true}, "tool_error",
			`{"result":"MAV_RESULT_FAILED","command":400,"statustext":"PreArm: GPS HDOP too high (2.41 > 1.40)","time_boot_ms":381200}`))
		for i, h := range []float64{2.1, 1.7, 1.3} {
			w.t("Waiting for the GPS.", asOK("drone_status", obj{}, s25Drone(false, "GUIDED", "", h, 392000+i*15000)))
		}
		w.t("Arming again now HDOP is under 1.4.", asOK("drone_arm", obj{"arm": true}, obj{"result": "MAV_RESULT_ACCEPTED", "command": 400}))
		add(w)
	}

	// A survey mission followed waypoint by waypoint.
	{
		w := asRunOf("drone-mission-progress-polled", "drone", false)
		for i := 0; i < 7; i++ {
			w.t("Following the mission.", asOK("mission_progress", obj{},
				obj{"current_seq": i, "total": 7, "distance_to_wp_m": 80 - i*3, "alt_m": 40.2, "battery": 95 - i*4}))
		}
		add(w)
	}

	// Each drug of a new prescription checked against the patient's list;
	// most answer no interaction alike.
	{
		w := asRunOf("erx-interactions-each-drug", "pharmacy", false)
		for i, d := range []string{"lisinopril", "atorvastatin", "metformin", "omeprazole", "sertraline", "amlodipine"} {
			pairs := arr{}
			if i == 4 {
				pairs = arr{obj{"drug_a": obj{"name": "sertraline"}, "drug_b": obj{"name": "tramadol"}, "severity": "major", "description": "Risk of serotonin syndrome."}}
			}
			w.t("Checking against her current list.", asOK("drug_interactions", obj{"drugs": arr{d, "tramadol"}}, obj{"pairs": pairs, "source": "DrugBank"}))
		}
		add(w)
	}

	// A prescription refused, the prescriber's id fixed, and sent.
	{
		w := asRunOf("erx-send-after-prescriber-fixed", "pharmacy", false).acc("write", "erx_send", "prescriber_update")
		args := obj{"patient_id": "pt_88231", "pharmacy_ncpdp": "0512345", "drug": "amoxicillin 500 mg capsule", "sig": "1 cap PO TID x 10 days", "quantity": 30}
		w.t("Sending the prescription.", asFail("erx_send", args, "forbidden", "NewRx rejected: 602 Prescriber SPI not registered for NewRx with this pharmacy's network."))
		w.t("Registering the prescriber for NewRx.", asOK("prescriber_update", obj{"npi": "1629071234", "service_levels": arr{"New", "Refill", "Change"}}, obj{"spi": "6152037614001", "service_levels": arr{"New", "Refill", "Change"}}))
		w.t("Sending it again.", asOK("erx_send", args, obj{"status": "Accepted", "message_id": "f31c7a0e"}))
		add(w)
	}

	// Many names checked for a launch; most are taken alike.
	{
		w := asRunOf("domain-availability-many-names", "registrar", false)
		for i, d := range []string{"acmecloud.io", "acmecloud.dev", "acmecloud.app", "getacmecloud.com", "acmecloud.co", "tryacmecloud.com", "acme-cloud.io", "acmecloudhq.com"} {
			res := obj{"domain": d, "available": false, "premium": false}
			if i == 5 || i == 7 {
				res = obj{"domain": d, "available": true, "price": obj{"amount": 12.98, "currency": "USD"}}
			}
			w.t("Checking the next name.", asOK("domain_check", obj{"domain": d}, res))
		}
		add(w)
	}

	// A domain's nameservers polled after a change until they show.
	{
		w := asRunOf("domain-nameservers-polled-until-changed", "registrar", false)
		for i := 0; i < 5; i++ {
			ns := arr{"ns1.oldhost.example", "ns2.oldhost.example"}
			if i >= 3 {
				ns = arr{"ada.ns.cloudflare.com", "bob.ns.cloudflare.com"}
			}
			w.t("Has the NS change gone through?", asOK("whois_lookup", obj{"domain": "tryacmecloud.com"}, obj{"domain": "tryacmecloud.com", "nameservers": ns, "updated": "2026-12-06"}))
		}
		add(w)
	}

	// A bid raised over a competitor, round by round.
	{
		w := asRunOf("auction-bids-raised-over-competitor", "auction", false).acc("write", "place_bid")
		w.t("Bidding 125.", asFail("place_bid", obj{"listing_id": "v1|386172935541|0", "max_amount": 125}, "invalid_args",
			`{"errors":[{"errorId":120011,"message":"Your bid must be at least 130.00 USD. The current bid is 127.50 USD."}]}`))
		for i, a := range []int{131, 145, 160} {
			w.t("Raising the bid.", asOK("place_bid", obj{"listing_id": "v1|386172935541|0", "max_amount": a},
				obj{"auctionStatus": "ACTIVE", "highBidder": i == 2, "currentPrice": obj{"value": fmt.Sprintf("%d.00", a+2-3*(i/2)), "currency": "USD"}, "bidCount": 12 + i*2}))
		}
		add(w)
	}

	// An auction watched while its price and bids move.
	{
		w := asRunOf("auction-listing-watched-price-moves", "auction", false)
		for i := 0; i < 6; i++ {
			w.t("Watching the Leica.", asOK("get_item", obj{"item_id": "v1|295881204412|0"},
				obj{"itemId": "v1|295881204412|0", "currentBidPrice": obj{"value": fmt.Sprintf("%d.00", 840+i*25), "currency": "USD"}, "bidCount": 23 + i, "itemEndDate": "2026-12-06T22:00:00Z"}))
		}
		add(w)
	}

	// An uploaded build polled while it processes.
	{
		w := asRunOf("appstore-build-processing-polled", "appstore", false)
		for i, st := range []string{"PROCESSING", "PROCESSING", "PROCESSING", "VALID"} {
			res := obj{"id": "4200114", "processingState": st, "uploadedDate": "2026-12-06T20:41:00Z"}
			if i > 0 && i < 3 {
				res["processingState"] = st
				res["progress"] = obj{"step": []string{"", "symbols", "encryption"}[i]}
			}
			w.t("Is the build ready?", asOK("build_status", obj{"app_id": "1582293041", "build": "4200114"}, res))
		}
		add(w)
	}

	// An app rejected, fixed with a new build, resubmitted, approved.
	{
		w := asRunOf("appstore-resubmitted-after-fix", "appstore", false).acc("write", "submit_for_review", "set_review_details")
		w.t("What did review say?", asOK("review_status", obj{"app_id": "1582293041", "version": "4.2.0"},
			obj{"state": "REJECTED", "build": "4200113", "guideline": "2.1", "message": "We were unable to sign in with the demo account provided."}))
		w.t("Giving them a working demo account.", asOK("set_review_details", obj{"app_id": "1582293041", "version": "4.2.0", "demo_user": "review@acme.example", "demo_password_ref": "vault:appreview"}, obj{"ok": true}))
		w.t("Resubmitting with build 4200114.", asOK("submit_for_review", obj{"app_id": "1582293041", "version": "4.2.0", "build": "4200114"},
			obj{"data": obj{"type": "reviewSubmissions", "id": "b2d1", "attributes": obj{"state": "WAITING_FOR_REVIEW"}}}))
		for _, st := range []string{"WAITING_FOR_REVIEW", "IN_REVIEW", "APPROVED"} {
			w.t("Checking review.", asOK("review_status", obj{"app_id": "1582293041", "version": "4.2.0"}, obj{"state": st, "build": "4200114"}))
		}
		add(w)
	}

	// A batch of documents printed, each accepted alike.
	{
		w := asRunOf("print-batch-each-accepted", "printing", false).acc("write", "print_document")
		for i := 0; i < 8; i++ {
			w.t("Printing the next pack.", asOK("print_document", obj{"printer": "HP_LaserJet_4F", "file": fmt.Sprintf("pack-%02d.pdf", i+1), "copies": 1},
				obj{"job-id": 4500 + i, "job-state": "pending", "job-state-reasons": arr{"none"}}))
		}
		add(w)
	}

	// A print refused on an empty tray, the tray filled, printed.
	{
		w := asRunOf("print-retried-after-paper-loaded", "printing", false).acc("write", "print_document")
		args := obj{"printer": "HP_LaserJet_4F", "file": "board-pack-dec.pdf", "copies": 12}
		w.t("Printing the board pack.", asFail("print_document", args, "tool_error", "client-error-not-possible: printer HP_LaserJet_4F is stopped (printer-state-reasons: media-empty-error)"))
		w.t("Asking facilities to load paper; checking the printer.", asOK("printer_status", obj{"printer": "HP_LaserJet_4F"}, obj{"printer-state": "stopped", "printer-state-reasons": arr{"media-empty-error"}}))
		w.t("Checking again.", asOK("printer_status", obj{"printer": "HP_LaserJet_4F"}, obj{"printer-state": "idle", "printer-state-reasons": arr{"none"}}))
		w.t("Printing now.", asOK("print_document", args, obj{"job-id": 4420, "job-state": "pending"}))
		add(w)
	}

	// VAT returns filed for each open period, each accepted alike.
	{
		w := asRunOf("vat-returns-each-open-period", "tax", false).acc("write", "vat_submit_return")
		w.t("Which periods are open?", asOK("vat_obligations", obj{"vrn": "123456789", "status": "O"},
			obj{"obligations": arr{obj{"periodKey": "24A4"}, obj{"periodKey": "25A1"}, obj{"periodKey": "25A2"}}}))
		for i, pk := range []string{"24A4", "25A1", "25A2"} {
			w.t("Filing the next period.", asOK("vat_submit_return", obj{"vrn": "123456789", "periodKey": pk, "totalVatDue": 9000 + i*411, "finalised": true},
				obj{"processingDate": "2026-12-06T21:10:00Z", "formBundleNumber": fmt.Sprintf("2566%08d", 1200+i), "paymentIndicator": "BANK"}))
		}
		add(w)
	}

	// One position analysed deeper and deeper; the line changes.
	{
		w := asRunOf("chess-analysis-deepened", "chess", false)
		fen := "r2q1rk1/pp2bppp/2n1bn2/3p4/3P4/2NBBN2/PP3PPP/R2Q1RK1 w - - 6 11"
		for i, d := range []int{12, 18, 24, 30} {
			best := []string{"a2a3", "f3e5", "f3e5", "d1c2"}[i]
			w.t("Going deeper on this position.", asOK("engine_analyse", obj{"fen": fen, "depth": d},
				obj{"bestmove": best, "score": obj{"cp": 18 + i*7}, "pv": arr{best, "c6e5", "d4e5"}[:1+i%3], "depth": d, "nodes": 90000 * (i + 1) * (i + 1)}))
		}
		add(w)
	}

	// A museum search narrowed facet by facet.
	{
		w := asRunOf("dam-search-narrowed", "museum", false)
		for i, f := range []obj{{}, {"department": "European Paintings"}, {"department": "European Paintings", "date": "1900-1926"}, {"department": "European Paintings", "date": "1900-1926", "rights": "cleared"}} {
			var as arr
			for j := 0; j < 12-3*i; j++ {
				as = append(as, obj{"asset_id": fmt.Sprintf("dam-%05d", 31000+j*7), "title": fmt.Sprintf("Water Lilies %d", j)})
			}
			args := obj{"query": "Monet", "collection": "paintings"}
			for k, v := range f {
				args[k] = v
			}
			w.t("Narrowing the search.", asOK("asset_search", args, obj{"total": len(as), "assets": as}))
		}
		add(w)
	}

	// A river gauge polled while the river rises.
	{
		w := asRunOf("gauge-polled-rising", "hydrology", false)
		for i := 0; i < 6; i++ {
			w.t("Is the Meramec still rising?", asOK("gauge_latest", obj{"site": "07019000", "parameter": "00065"},
				s25Gauge("07019000", 18.42+float64(i)*0.37, fmt.Sprintf("2026-12-06T%02d:%02d:00-06:00", 14+(i+1)/4, (15*(i+1))%60), 600+i*900)))
		}
		add(w)
	}

	// A call to a busy line placed again later, answered, followed.
	{
		w := asRunOf("voice-call-busy-then-answered", "voice", false).acc("write", "place_call")
		args := obj{"to": "+15125550143", "from": "+15125550100", "say": "Reminder: dental appointment tomorrow, 9 am.", "voice": "alice"}
		w.t("Calling Mrs Okonkwo.", asOK("place_call", args, obj{"sid": "CA01", "status": "busy", "duration": 0}))
		w.t("Trying once more later.", asOK("place_call", args, obj{"sid": "CA02", "status": "queued"}))
		for _, st := range []string{"ringing", "in-progress", "completed"} {
			w.t("How did the call go?", asOK("call_status", obj{"sid": "CA02"}, obj{"sid": "CA02", "status": st}))
		}
		add(w)
	}

	// A site map's pages inspected one by one; most are indexed alike.
	{
		w := asRunOf("url-inspect-sitemap-pages", "seo", false)
		for i, p := range []string{"", "pricing", "docs", "blog", "about", "careers", "security", "changelog"} {
			cov := "Submitted and indexed"
			if i == 1 {
				cov = "Crawled - currently not indexed"
			}
			w.t("Inspecting the next page.", asOK("url_inspect", obj{"inspectionUrl": "https://acme.example/" + p, "siteUrl": "sc-domain:acme.example"},
				obj{"inspectionResult": obj{"indexStatusResult": obj{"verdict": "PASS", "coverageState": cov}}}))
		}
		add(w)
	}

	// Prior authorizations for several patients handed to the pharmacist.
	{
		w := asRunOf("prior-auth-several-patients", "pharmacy", false)
		for i, p := range []string{"pt_88231", "pt_88412", "pt_90017", "pt_90233"} {
			w.hand("Asking the pharmacist.", "pharmacist", "Get prior authorization for semaglutide 1 mg for patient "+p+".", []string{"Denied: step therapy.", "Approved through 2027-06-30.", "Approved through 2027-05-31.", "Pending: the plan asks for an A1c result."}[i], func(s *asw) {
				s.t("Checking the plan's criteria.", asOK("pa_criteria", obj{"payer": "aetna", "drug_rxcui": "1991302", "patient_id": p}, obj{"covered": i == 1 || i == 2, "patient_id": p}))
			})
		}
		add(w)
	}

	return runs
}
