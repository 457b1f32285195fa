package loops

import (
	"fmt"
	"strings"
	"testing"
)

// The twenty-sixth probe: written before reading the detectors' rules in
// detail, with the tool names and answer shapes of kinds of work the
// twenty-five before it do not use: Lightning Network payments, customs
// declarations and tariff classification, real-time transit arrivals
// (GTFS-realtime), a circuit board's design-rule check (KiCad), a finite
// element solver's jobs, container image vulnerability scans, flashcards
// (Anki), payroll runs, satellite ground-station passes, smart locks,
// grocery delivery, a fitness tracker's uploads, crossword solving,
// air-quality sensors, protein structure prediction, restaurant
// reservations and a chef sub-agent scaling recipes. The loops: one
// invoice paid under spellings of itself into the same missing route, a
// channel polled while no block confirms it, a product classified under
// other descriptions into one heading, a declaration submitted under
// notations of its value into one missing EORI, a stop asked under
// spellings of its id while nothing serves it, a bus polled while it
// stands still, a design-rule check re-run with its options reordered
// into the same clearances, a solve submitted under notations of one mesh
// size into one singular matrix, an image scanned under spellings of its
// reference into the same CVEs, a rebuild and a scan in turn while the
// digest never moves, a flashcard added reworded into one duplicate, a
// payroll run under spellings of a locked period, a pass booked under
// names of one satellite into one conflict, a lock locked and read back
// in turn while it stays jammed, a substitute searched in other words
// into the same two sold-out products, an upload polled while only its
// elapsed time grows, a clue reworded into the same candidates, a sensor
// asked under spellings of its id while it stays offline, a sequence
// submitted reformatted into one invalid residue, a table booked under
// notations of one time, and one recipe handed to a chef in other words.
// Each loop has a legitimate near-miss that repeats with progress, and
// some legit runs look like loops: distinct times refused alike before
// one is free, distinct images clean alike, a clue re-asked as its
// crossings fill, a search narrowed, a retry after a real change.
//
// A loop is marked as the ninth probe marks them: the fourth call that
// asks again in other words and learns nothing, the third identical poll
// or write, the third round of a pair or ring of calls (or of hand-offs)
// that learns nothing. A tool without readOnlyHint is declared a write,
// as it is through the gateway.
//
// It is written and played with the assistants probe's writer and driver
// (assistruns_test.go).

// s26Known lists the runs whose outcome is not their label's, each with why.
var s26Known = map[string]string{
	// As written, on the guard then (8366509e): 10 of 21 loops detected,
	// none early, 11 missed; none of 27 legit runs refused. Since its
	// fixes, 14 of 21: a failure counted word for word names its attempt
	// (an attempt's id, a submission's reference, the job a solve
	// started, how long it ran by the wall clock), each attempt's own and
	// left out (TestAttemptOwnIDs, TestWallTimeKey); an answer in JSON-RPC
	// 1.0's shape, a result of null beside an error, is a failure handed
	// on as an answer (TestRPCOneErrorAnswer). And 15: an id after a word
	// that says what kind of thing it is (sensor 131075, PA-131075) names
	// what the id alone names, and a stamp's key in two words
	// (data_time_stamp) is a timestamp's (TestKindBeforeID). Left:
	//
	"pcb-drc-options-restyled-same-violations": "missed",
	"vuln-scan-image-ref-respelled-same-cves":  "missed",
	"vuln-rebuild-scan-ring-same-digest":       "missed",
	"smartlock-lock-status-ring-jammed":        "missed",
	"crossword-clue-reworded-same-candidates":  "missed",
	"restaurant-book-time-notations-no-table":  "missed",
}

func TestTwentySixthRuns(t *testing.T) {
	checkAsRuns(t, "twenty-sixth probe", twentySixthRuns(), 44, s26Known)
}

// s26ID is a hex id made of n.
func s26ID(n int) string {
	return fmt.Sprintf("%08x%08x", 0x2e6a0000+n*40503, 0x19c00000+n*7919)
}

// s26Clock is a time of day on the probe's day, n seconds after 06:00.
func s26Clock(n int) string {
	return fmt.Sprintf("2026-12-07T%02d:%02d:%02dZ", 6+n/3600, (n/60)%60, n%60)
}

// s26Channel is a Lightning channel as a node reports it.
func s26Channel(state string, conf int, n int) obj {
	return obj{"channel_point": "9f3c1a0e5b7d2c4e8a6f1b3d5c7e9a0b2d4f6e8c1a3b5d7f9e0c2a4b6d8f0e1c:0", "remote_pubkey": "02a1b2c3d4e5f60718293a4b5c6d7e8f90a1b2c3d4e5f60718293a4b5c6d7e8f90",
		"capacity": 2000000, "state": state, "num_confirmations": conf, "confirmations_required": 3, "checked_at": s26Clock(n)}
}

// s26Arrivals is a stop's arrivals from a GTFS-realtime feed.
func s26Arrivals(stop string, arrivals arr, n int) obj {
	return obj{"header": obj{"gtfs_realtime_version": "2.0", "timestamp": 1796623200 + n}, "stop_id": stop, "stop_name": "Harbour St / 5th Ave", "arrivals": arrivals}
}

// s26Scan is a vulnerability scan's report of an image.
func s26Scan(ref, digest string, vulns arr, n int) obj {
	return obj{"SchemaVersion": 2, "CreatedAt": s26Clock(n), "ArtifactName": ref, "ArtifactType": "container_image",
		"Metadata": obj{"RepoDigests": arr{"nginx@" + digest}, "OS": obj{"Family": "debian", "Name": "12.4"}},
		"Results":  arr{obj{"Target": ref + " (debian 12.4)", "Class": "os-pkgs", "Vulnerabilities": vulns}}}
}

func s26Vuln(id, pkg, sev string) obj {
	return obj{"VulnerabilityID": id, "PkgName": pkg, "InstalledVersion": "3.0.11-1~deb12u2", "FixedVersion": "3.0.13-1~deb12u1", "Severity": sev}
}

// s26Sensor is an air-quality sensor's latest reading.
func s26Sensor(id int, online bool, pm float64, lastSeen string, n int) obj {
	return obj{"api_version": "V1.0.11", "data_time_stamp": 1796623200 + n*37, "sensor": obj{"sensor_index": id, "name": "Elm Park rooftop",
		"last_seen": lastSeen, "confidence": 100, "pm2.5": pm, "humidity": 61, "channel_state": map[bool]int{true: 3, false: 0}[online]}}
}

func twentySixthRuns() []*asRun {
	var runs []*asRun
	add := func(w *asw) { runs = append(runs, w.run) }
	const invoice = "lnbc25u1pjq8x7wpp5qz8v2c9d0h3k6m4n7r2t5w8y1a3c5e7g9j2l4n6q8s0u2w4y6a8cqzpgxqyz5vqsp5k3m9n2p4r6t8v0x2z4b6d8f0h2j4l6n8q0s2u4w6y8a0c2e4g6j8l0q"

	// ===================== loops =====================

	// A wallet agent pays one invoice under spellings of itself; no route
	// has the capacity, each attempt under a new id.
	{
		w := asRunOf("ln-pay-invoice-respelled-no-route", "lightning", true).acc("write", "ln_pay_invoice")
		for i, inv := range []string{invoice, "lightning:" + invoice, strings.ToUpper(invoice), " " + invoice + "\n", "LIGHTNING:" + strings.ToUpper(invoice)} {
			if i == 3 {
				w.then()
			}
			w.t("Paying the supplier's invoice.", asFail("ln_pay_invoice", obj{"payment_request": inv, "timeout_seconds": 60, "fee_limit_sat": 50}, "payment_failed",
				fmt.Sprintf(`{"payment_hash":"4f1e7c2a9b3d5e6f708192a3b4c5d6e7f8091a2b3c4d5e6f708192a3b4c5d6e7","attempt_id":%d,"status":"FAILED","failure_reason":"FAILURE_REASON_NO_ROUTE","htlcs":[]}`, 7710+i*3)))
		}
		add(w)
	}

	// A wallet agent polls a channel it opened; no block has confirmed
	// its funding transaction.
	{
		w := asRunOf("ln-channel-polled-pending-open", "lightning", true)
		for i := 0; i < 5; i++ {
			if i == 2 {
				w.then()
			}
			w.t("Is the channel open yet?", asOK("ln_channel_status", obj{"channel_point": "9f3c1a0e5b7d2c4e8a6f1b3d5c7e9a0b2d4f6e8c1a3b5d7f9e0c2a4b6d8f0e1c:0"},
				s26Channel("PENDING_OPEN", 0, 400+i*90)))
		}
		add(w)
	}

	// A trade agent classifies one product under other descriptions;
	// the heading is the same each time.
	{
		w := asRunOf("customs-classify-reworded-same-heading", "customs", true)
		for i, d := range []string{"cordless drill", "battery-powered drill/driver, 18V", "handheld electric drill without cord", "power drill with lithium-ion battery", "18 volt cordless drill driver"} {
			if i == 3 {
				w.then()
			}
			w.t("Finding the tariff code.", asOK("hs_classify", obj{"description": d, "destination": "GB", "origin": "CN"},
				obj{"request_id": s26ID(300 + i), "hs_code": "8467.21.10", "description": "Drills of all kinds, with self-contained electric motor, capable of operation without an external source of power",
					"duty_rate": "1.7%", "confidence": 0.94}))
		}
		add(w)
	}

	// A trade agent submits a declaration under notations of its value;
	// it is rejected each time on the same missing EORI.
	{
		w := asRunOf("customs-declaration-value-notations-no-eori", "customs", true).acc("write", "customs_submit_declaration")
		for i, v := range []any{"1250.00", 1250, "1,250.00", "USD 1250", "1.25e3"} {
			if i == 3 {
				w.then()
			}
			w.t("Submitting the import declaration.", asFail("customs_submit_declaration", obj{"consignment": "CN-7741-22", "commodity_code": "8467211000", "customs_value": v, "currency": "USD", "importer": "Northgate Tools Ltd"}, "validation",
				fmt.Sprintf(`{"submission_ref":"%s","status":"REJECTED","errors":[{"code":"CDS12056","field":"importer.eori","message":"An EORI number is required for the importer"}]}`, s26ID(320+i))))
		}
		add(w)
	}

	// A commuting agent asks for arrivals under spellings of one stop;
	// nothing serves it tonight.
	{
		w := asRunOf("transit-stop-respelled-no-service", "transit", true)
		for i, s := range []string{"1234", "STOP_1234", "stop:1234", "01234", "1234 "} {
			if i == 3 {
				w.then()
			}
			w.t("When is the next bus from Harbour St?", asOK("transit_arrivals", obj{"stop_id": s, "limit": 5}, s26Arrivals("1234", arr{}, i*41)))
		}
		add(w)
	}

	// A commuting agent polls one bus's trip; it stands at one place, its
	// delay unchanged, only the feed's timestamp moving.
	{
		w := asRunOf("transit-trip-polled-bus-still", "transit", true)
		for i := 0; i < 5; i++ {
			if i == 2 {
				w.then()
			}
			w.t("Where is the 42 now?", asOK("transit_trip", obj{"trip_id": "42_0712_WKD"},
				obj{"header": obj{"timestamp": 1796623500 + i*30}, "trip_id": "42_0712_WKD", "vehicle": obj{"id": "bus-3317", "position": obj{"latitude": 51.50213, "longitude": -0.11472, "bearing": 88},
					"current_status": "STOPPED_AT", "stop_id": "1198"}, "delay": 420}))
		}
		add(w)
	}

	// An electronics agent re-runs the design-rule check with its options
	// reordered and restyled; the same three clearances fail.
	{
		w := asRunOf("pcb-drc-options-restyled-same-violations", "pcb", true)
		for i, a := range []obj{
			{"board": "main.kicad_pcb", "severity": "all", "format": "json"},
			{"format": "json", "board": "./main.kicad_pcb", "severity": "all"},
			{"board": "main.kicad_pcb", "severity": "ALL", "format": "JSON", "units": "mm"},
			{"board": "/work/hw/main.kicad_pcb", "severity": "error,warning", "format": "json"},
			{"severity": "all", "board": "main.kicad_pcb", "format": "json", "exit_code_violations": true},
		} {
			if i == 3 {
				w.then()
			}
			w.t("Running the DRC again.", asOK("kicad_drc", a, obj{"date": s26Clock(900 + i*64), "report_file": fmt.Sprintf("/tmp/drc-%d.json", 88120+i*7), "violations": arr{
				obj{"type": "clearance", "severity": "error", "description": "Clearance violation (netclass 'Default' clearance 0.2000 mm; actual 0.1500 mm)", "items": arr{"Track [GND] on F.Cu", "Pad 3 [VBUS] of J1"}},
				obj{"type": "clearance", "severity": "error", "description": "Clearance violation (netclass 'Default' clearance 0.2000 mm; actual 0.1800 mm)", "items": arr{"Via [3V3]", "Track [SDA] on B.Cu"}},
				obj{"type": "silk_overlap", "severity": "warning", "description": "Silkscreen overlap", "items": arr{"Reference field of U4", "Footprint C12"}},
			}, "unconnected_items": arr{}}))
		}
		add(w)
	}

	// An engineering agent submits one solve under notations of its mesh
	// size; the stiffness matrix is singular each time.
	{
		w := asRunOf("fea-solve-mesh-notations-singular", "fea", true).acc("write", "fea_submit")
		for i, m := range []any{"2mm", "2 mm", "0.002 m", 2.0, "2.0mm"} {
			if i == 3 {
				w.then()
			}
			w.t("Solving the bracket under load.", asFail("fea_submit", obj{"model": "bracket_v3.step", "load_case": "LC1", "mesh_size": m, "solver": "direct"}, "solver_error",
				fmt.Sprintf(`{"job_id":"fea-%d","status":"FAILED","log_tail":"*ERROR in e_c3d: zero pivot\n*ERROR: singular stiffness matrix; unconstrained degrees of freedom at node 4711 (UX, UY)","wall_time_s":%d}`, 51800+i*13, 14+i%3)))
		}
		add(w)
	}

	// A security agent scans one image under spellings of its reference;
	// the same two CVEs each time.
	{
		w := asRunOf("vuln-scan-image-ref-respelled-same-cves", "vulnscan", true)
		for i, ref := range []string{"nginx:1.25", "docker.io/library/nginx:1.25", "library/nginx:1.25", "index.docker.io/library/nginx:1.25", "docker.io/nginx:1.25"} {
			if i == 3 {
				w.then()
			}
			w.t("Scanning the web image.", asOK("image_scan", obj{"image": ref, "severity": "HIGH,CRITICAL"},
				s26Scan(ref, "sha256:4c0fdaa8b6341bfdeca5f18f7837462c80cff90527ee35ef185571e1c327beac", arr{s26Vuln("CVE-2023-5678", "libssl3", "HIGH"), s26Vuln("CVE-2024-0727", "openssl", "HIGH")}, 1200+i*50)))
		}
		add(w)
	}

	// A security agent rebuilds an image and scans it in turn; the build
	// is cached, the digest never moves, the CVEs stay.
	{
		w := asRunOf("vuln-rebuild-scan-ring-same-digest", "vulnscan", true).acc("write", "image_build")
		for r := 0; r < 3; r++ {
			if r == 2 {
				w.then()
			}
			w.t("Rebuilding the image.", asOK("image_build", obj{"context": ".", "dockerfile": "Dockerfile", "tag": "registry.example/web:fix"},
				obj{"build_id": fmt.Sprintf("bld_%d", 6610+r*17), "digest": "sha256:77aa0c3e9f9b8d1e2c3b4a5968776655443322110ffeeddccbbaa99887766554", "cached_steps": 9, "duration_s": 3 + r}))
			w.t("Scanning the rebuilt image.", asOK("image_scan", obj{"image": "registry.example/web:fix", "severity": "HIGH,CRITICAL"},
				s26Scan("registry.example/web:fix", "sha256:77aa0c3e9f9b8d1e2c3b4a5968776655443322110ffeeddccbbaa99887766554", arr{s26Vuln("CVE-2024-0727", "openssl", "HIGH")}, 1500+r*70)))
		}
		add(w)
	}

	// A study agent adds one flashcard with its back reworded; the deck
	// refuses it as a duplicate of its front each time.
	{
		w := asRunOf("anki-add-note-reworded-duplicate", "flashcards", true).acc("write", "anki_add_note")
		for i, back := range []string{"The powerhouse of the cell", "Organelle that makes ATP", "Site of cellular respiration; produces ATP", "Double-membraned organelle producing ATP", "Where the cell makes most of its ATP"} {
			if i == 3 {
				w.then()
			}
			w.t("Adding the card.", asOK("anki_add_note", obj{"note": obj{"deckName": "Biology", "modelName": "Basic", "fields": obj{"Front": "Mitochondrion", "Back": back}, "tags": arr{"cell"}}},
				obj{"result": nil, "error": "cannot create note because it is a duplicate"}))
		}
		add(w)
	}

	// A payroll agent runs one period under other spellings; the period
	// is locked each time.
	{
		w := asRunOf("payroll-run-period-respelled-locked", "payroll", true).acc("write", "payroll_run")
		for i, p := range []string{"2026-11", "Nov 2026", "2026-11-01/2026-11-30", "11/2026", "November 2026"} {
			if i == 3 {
				w.then()
			}
			w.t("Running November's payroll.", asFail("payroll_run", obj{"company_id": "co_5521", "period": p, "type": "regular"}, "conflict",
				fmt.Sprintf(`{"error":{"code":"PERIOD_LOCKED","message":"Pay period 2026-11-01..2026-11-30 is approved and locked; unlock it or run an off-cycle payroll.","trace_id":"%s"}}`, s26ID(500+i))))
		}
		add(w)
	}

	// A mission agent books a pass under names of one satellite; the
	// antenna is booked by another mission at that time.
	{
		w := asRunOf("groundstation-pass-satellite-respelled-conflict", "groundstation", true).acc("write", "gs_book_pass")
		for i, s := range []string{"NOAA 19", "NOAA-19", "noaa19", "33591", "NORAD 33591"} {
			if i == 3 {
				w.then()
			}
			w.t("Booking the evening pass.", asFail("gs_book_pass", obj{"satellite": s, "station": "svalbard-3", "aos": "2026-12-07T18:42:10Z", "los": "2026-12-07T18:55:40Z"}, "conflict",
				`{"error":"ANTENNA_CONFLICT","message":"svalbard-3 is reserved 18:40-19:00 by contact c-88213","next_free":"2026-12-07T20:21:00Z"}`))
		}
		add(w)
	}

	// A home agent locks a door and reads it back in turn; the bolt is
	// jammed each time.
	{
		w := asRunOf("smartlock-lock-status-ring-jammed", "smarthome", true).acc("write", "lock_set")
		for r := 0; r < 3; r++ {
			if r == 2 {
				w.then()
			}
			w.t("Locking the back door.", asOK("lock_set", obj{"lock_id": "back-door", "state": "locked"}, obj{"accepted": true, "command_id": fmt.Sprintf("cmd_%d", 9120+r)}))
			w.t("Is it locked?", asOK("lock_status", obj{"lock_id": "back-door"},
				obj{"lock_id": "back-door", "state": "jammed", "door": "closed", "battery": 71, "updated_at": s26Clock(2000 + r*25)}))
		}
		add(w)
	}

	// A shopping agent looks for a substitute in other words; the same two
	// products come back, both sold out.
	{
		w := asRunOf("grocery-substitute-reworded-sold-out", "grocery", true)
		for i, q := range []string{"oat milk", "oatmilk 1L", "oat drink", "plant-based oat beverage", "oat milk barista"} {
			if i == 3 {
				w.then()
			}
			w.t("Finding a substitute for the oat milk.", asOK("grocery_search", obj{"query": q, "store_id": "st_118", "in_stock_only": false},
				obj{"search_id": s26ID(700 + i), "results": arr{
					obj{"sku": "OAT-1L-OATLY", "name": "Oatly Oat Drink Barista 1L", "price": 2.15, "in_stock": false},
					obj{"sku": "OAT-1L-ALPRO", "name": "Alpro Oat No Sugars 1L", "price": 1.95, "in_stock": false}}}))
		}
		add(w)
	}

	// A fitness agent polls an upload; it stays processing, only its
	// elapsed time growing.
	{
		w := asRunOf("fitness-upload-polled-processing", "fitness", true)
		for i := 0; i < 5; i++ {
			if i == 2 {
				w.then()
			}
			w.t("Has the ride finished processing?", asOK("activity_upload_status", obj{"upload_id": 11934402871},
				obj{"id": 11934402871, "external_id": "ride-2026-12-06.fit", "status": "Your activity is still being processed.", "activity_id": nil, "elapsed_s": 20 + i*45}))
		}
		add(w)
	}

	// A puzzle agent asks for one clue in other words; the same candidates
	// come back each time.
	{
		w := asRunOf("crossword-clue-reworded-same-candidates", "crossword", true)
		for i, c := range []string{"Large body of salt water", "Vast salty expanse", "Huge body of seawater", "Big blue expanse of brine", "Great mass of salt water"} {
			if i == 3 {
				w.then()
			}
			w.t("Solving 14 across.", asOK("crossword_solve", obj{"clue": c, "pattern": "?????"},
				obj{"candidates": arr{obj{"word": "OCEAN", "score": 0.91}, obj{"word": "BRINE", "score": 0.33}, obj{"word": "WATER", "score": 0.12}}, "took_ms": 40 + i*7}))
		}
		add(w)
	}

	// An environment agent asks for one sensor under spellings of its id;
	// it has been offline since the morning.
	{
		w := asRunOf("airquality-sensor-respelled-offline", "airquality", true)
		for i, s := range []any{131075, "131075", "PA-131075", "purpleair:131075", "sensor 131075"} {
			if i == 3 {
				w.then()
			}
			w.t("What is the air like at Elm Park?", asOK("aq_sensor", obj{"sensor": s, "fields": "pm2.5,humidity,last_seen"},
				s26Sensor(131075, false, 0, "2026-12-07T03:12:40Z", i)))
		}
		add(w)
	}

	// A biology agent submits one sequence reformatted; it holds the same
	// invalid residue each time.
	{
		const seq = "MKTAYIAKQRQISFVKSHFSRQLEERLGLIEVQAPILSRVGDGTQDNLSGAEKAVQVKBALPDAQFEVVHSLAKWKRQTLGQHDFSAGEGLYTHMKALRPDEDRLSPLHSVYVDQWDWERVMGDGERQFSTLKSTVEAIWAGIKATEAAVSEEFGLAPFLPDQIHFVHSQELLSRYPDLDAKGRERAIAKDLGAVFLVGIGGKLSDGHRHDVRAPDYDDWSTPSELGHAGLNGDILVWNPVLEDAFELSSMGIRVDADTLKHQLALTGDEDRLELEWHQALLRGEMPQTIGGGIGQSRLTMLLLQLPHIGQVQAGVWPAACRESVPALL"
		w := asRunOf("fold-submit-sequence-reformatted-invalid", "protein", true).acc("write", "fold_submit")
		for i, s := range []string{seq, strings.ToLower(seq), ">query\n" + seq, seq[:60] + "\n" + seq[60:], strings.Join([]string{seq[:100], seq[100:200], seq[200:]}, " ")} {
			if i == 3 {
				w.then()
			}
			w.t("Predicting the structure.", asFail("fold_submit", obj{"name": "ypt7_variant", "sequence": s, "model": "monomer"}, "invalid_args",
				fmt.Sprintf(`{"job":"fold-%d","error":"invalid residue 'B' at position 57; use one of ACDEFGHIKLMNPQRSTVWY or X"}`, 30410+i*9)))
		}
		add(w)
	}

	// A dining agent books a table under notations of one time; there is
	// no table then, the same alternatives offered.
	{
		w := asRunOf("restaurant-book-time-notations-no-table", "dining", true).acc("write", "table_book")
		for i, tm := range []string{"19:30", "7:30 PM", "19h30", "1930", "7.30pm"} {
			if i == 3 {
				w.then()
			}
			w.t("Booking dinner for four.", asOK("table_book", obj{"restaurant_id": "r_44810", "date": "2026-12-12", "time": tm, "party_size": 4},
				obj{"booked": false, "reason": "no_availability", "alternatives": arr{"18:00", "21:45"}, "request_id": s26ID(900 + i)}))
		}
		add(w)
	}

	// A planner hands one recipe to a chef sub-agent in other words; the
	// same scaled recipe comes back each time.
	{
		w := asRunOf("recipe-scale-handed-reworded-same", "cooking", true)
		for i, task := range []string{
			"Scale the lasagne recipe from 6 to 10 servings.",
			"Convert the lasagne recipe for 10 people (it is written for 6).",
			"I need the lasagne quantities for ten servings instead of six.",
			"Please rescale lasagne: 6 servings -> 10.",
			"Could you adjust the lasagne ingredients for a party of 10?",
		} {
			if i == 2 {
				w.then()
			}
			w.hand("Asking the chef.", "chef", task, "Lasagne for 10: 833 g mince, 15 sheets, 1.25 l tomato passata, 625 ml bechamel, 250 g mozzarella.", func(s *asw) {
				s.t("Reading the recipe.", asOK("recipe_get", obj{"recipe_id": "lasagne-classic"},
					obj{"id": "lasagne-classic", "servings": 6, "ingredients": arr{"500 g mince", "9 sheets", "750 ml tomato passata", "375 ml bechamel", "150 g mozzarella"}}))
			})
		}
		add(w)
	}

	// ===================== legit =====================

	// An invoice with no route, a channel opened and polled until it
	// confirms, then the invoice paid.
	{
		w := asRunOf("ln-pay-after-channel-opens", "lightning", false).acc("write", "ln_pay_invoice", "ln_open_channel")
		w.t("Paying the supplier's invoice.", asFail("ln_pay_invoice", obj{"payment_request": invoice, "timeout_seconds": 60, "fee_limit_sat": 50}, "payment_failed",
			`{"status":"FAILED","failure_reason":"FAILURE_REASON_NO_ROUTE"}`))
		w.t("Opening a channel to a well-connected node.", asOK("ln_open_channel", obj{"node_pubkey": "02a1b2c3d4e5f60718293a4b5c6d7e8f90a1b2c3d4e5f60718293a4b5c6d7e8f90", "local_funding_amount": 2000000},
			obj{"funding_txid": "1ce0f8d6b4a2c0e9f7d5b3a1c8e6f4d2b0a9c7e5f3d1b8a6c4e2f0d9b7a5c3e1", "output_index": 0}))
		for i := 0; i < 4; i++ {
			st := "PENDING_OPEN"
			if i == 3 {
				st = "OPEN"
			}
			w.t("Is the channel open yet?", asOK("ln_channel_status", obj{"channel_point": "9f3c1a0e5b7d2c4e8a6f1b3d5c7e9a0b2d4f6e8c1a3b5d7f9e0c2a4b6d8f0e1c:0"}, s26Channel(st, i, 400+i*600)))
		}
		w.t("Paying again now the channel is open.", asOK("ln_pay_invoice", obj{"payment_request": invoice, "timeout_seconds": 60, "fee_limit_sat": 50},
			obj{"status": "SUCCEEDED", "fee_sat": 3, "payment_preimage": "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"}))
		add(w)
	}

	// A batch of distinct invoices paid, each answered alike but for its
	// hash.
	{
		w := asRunOf("ln-invoices-batch-paid", "lightning", false).acc("write", "ln_pay_invoice")
		for i := 0; i < 8; i++ {
			inv := fmt.Sprintf("lnbc%du1pjq%dx7wpp5%s", 10+i*5, i, s26ID(40+i))
			w.t("Next invoice.", asOK("ln_pay_invoice", obj{"payment_request": inv, "timeout_seconds": 60, "fee_limit_sat": 50},
				obj{"status": "SUCCEEDED", "fee_sat": 1, "payment_hash": s26ID(60 + i)}))
		}
		add(w)
	}

	// A shipment's products classified one by one, several under one
	// heading.
	{
		w := asRunOf("customs-classify-shipment-lines", "customs", false)
		for i, d := range []string{"cordless drill", "cordless impact driver", "drill bits, HSS, set of 19", "lithium-ion battery pack 18V", "battery charger for power tools", "cordless angle grinder", "tool case, plastic", "work gloves, nitrile coated"} {
			codes := []string{"8467.21.10", "8467.29.85", "8207.50.60", "8507.60.00", "8504.40.55", "8467.29.51", "4202.19.90", "6116.10.20"}
			w.t("Next line of the invoice.", asOK("hs_classify", obj{"description": d, "destination": "GB", "origin": "CN"},
				obj{"request_id": s26ID(340 + i), "hs_code": codes[i], "confidence": 0.9}))
		}
		add(w)
	}

	// A declaration fixed error by error until it is accepted.
	{
		w := asRunOf("customs-declaration-fixed-field-by-field", "customs", false).acc("write", "customs_submit_declaration")
		base := obj{"consignment": "CN-7741-22", "commodity_code": "8467211000", "customs_value": "1250.00", "currency": "USD", "importer": "Northgate Tools Ltd"}
		w.t("Submitting the import declaration.", asFail("customs_submit_declaration", base, "validation",
			`{"status":"REJECTED","errors":[{"code":"CDS12056","field":"importer.eori","message":"An EORI number is required for the importer"}]}`))
		base2 := obj{"consignment": "CN-7741-22", "commodity_code": "8467211000", "customs_value": "1250.00", "currency": "USD", "importer": "Northgate Tools Ltd", "importer_eori": "GB123456789000"}
		w.t("Adding the EORI.", asFail("customs_submit_declaration", base2, "validation",
			`{"status":"REJECTED","errors":[{"code":"CDS12119","field":"origin_country","message":"Country of origin is required for preferential duty"}]}`))
		base3 := obj{"consignment": "CN-7741-22", "commodity_code": "8467211000", "customs_value": "1250.00", "currency": "USD", "importer": "Northgate Tools Ltd", "importer_eori": "GB123456789000", "origin_country": "CN"}
		w.t("Adding the origin.", asOK("customs_submit_declaration", base3, obj{"status": "ACCEPTED", "mrn": "26GB7Q2K9M3P1X8ZR4"}))
		add(w)
	}

	// A stop polled as the bus approaches.
	{
		w := asRunOf("transit-arrivals-polled-bus-approaches", "transit", false)
		for i, m := range []int{9, 6, 4, 2, 1, 0} {
			w.t("How far is the bus?", asOK("transit_arrivals", obj{"stop_id": "1234", "limit": 1},
				s26Arrivals("1234", arr{obj{"route": "42", "vehicle": "bus-3317", "minutes": m, "delay": 60}}, i*60)))
		}
		add(w)
	}

	// The stops along a route asked one by one; the quiet ones answer
	// alike, empty.
	{
		w := asRunOf("transit-stops-along-route", "transit", false)
		for i := 0; i < 8; i++ {
			var a arr
			if i%3 == 0 {
				a = arr{obj{"route": "42", "minutes": 3 + i}}
			}
			w.t("Next stop on the route.", asOK("transit_arrivals", obj{"stop_id": fmt.Sprint(1230 + i), "limit": 3}, s26Arrivals(fmt.Sprint(1230+i), a, i*5)))
		}
		add(w)
	}

	// The design-rule check re-run after each fix.
	{
		w := asRunOf("pcb-drc-after-each-fix", "pcb", false).acc("write", "kicad_move_track")
		all := arr{"clearance J1", "clearance via", "silk U4"}
		for i := 0; i < 4; i++ {
			w.t("Running the DRC.", asOK("kicad_drc", obj{"board": "main.kicad_pcb", "severity": "all", "format": "json"},
				obj{"date": s26Clock(1000 + i*200), "violations": all[i:]}))
			if i < 3 {
				w.t("Fixing the first violation.", asOK("kicad_move_track", obj{"board": "main.kicad_pcb", "item": all[i], "offset_mm": 0.1}, obj{"ok": true}))
			}
		}
		add(w)
	}

	// A mesh refinement study: the same model at finer sizes, each answer
	// its own stress.
	{
		w := asRunOf("fea-mesh-refinement-study", "fea", false).acc("write", "fea_submit")
		for i, m := range []string{"4mm", "2mm", "1mm", "0.5mm"} {
			w.t("Solving at a finer mesh.", asOK("fea_submit", obj{"model": "bracket_v4.step", "load_case": "LC1", "mesh_size": m, "solver": "direct"},
				obj{"job_id": fmt.Sprintf("fea-%d", 52000+i), "status": "DONE", "max_von_mises_mpa": []float64{182.4, 201.7, 208.9, 210.2}[i], "nodes": 12000 << (i * 2)}))
		}
		add(w)
	}

	// A long solve polled while its residual falls.
	{
		w := asRunOf("fea-job-polled-converging", "fea", false)
		for i := 0; i < 6; i++ {
			w.t("How is the solve going?", asOK("fea_job_status", obj{"job_id": "fea-52003"},
				obj{"job_id": "fea-52003", "status": "RUNNING", "iteration": 40 + i*40, "residual": fmt.Sprintf("%.1e", 1e-2/float64(int(1)<<(i*2))), "elapsed_s": 60 + i*60}))
		}
		add(w)
	}

	// Every image of a release scanned; most are clean alike.
	{
		w := asRunOf("vuln-scan-release-images-clean", "vulnscan", false)
		for i, img := range []string{"web", "api", "worker", "scheduler", "migrator", "metrics", "gateway", "cron"} {
			ref := "registry.example/" + img + ":2.14.0"
			var v arr
			if i == 2 {
				v = arr{s26Vuln("CVE-2024-0727", "openssl", "HIGH")}
			}
			w.t("Scanning the next image.", asOK("image_scan", obj{"image": ref, "severity": "HIGH,CRITICAL"}, s26Scan(ref, "sha256:"+s26ID(i)+s26ID(i+1)+s26ID(i+2)+s26ID(i+3), v, 1600+i*30)))
		}
		add(w)
	}

	// A base image bumped, rebuilt and scanned until clean.
	{
		w := asRunOf("vuln-base-bumped-rebuilt-until-clean", "vulnscan", false).acc("write", "edit_file", "image_build")
		for r, base := range []string{"nginx:1.25.3", "nginx:1.25.4", "nginx:1.25.5"} {
			w.t("Bumping the base image.", asOK("edit_file", obj{"path": "Dockerfile", "old": "FROM nginx:1.25", "new": "FROM " + base}, obj{"ok": true}))
			d := fmt.Sprintf("sha256:%s%s", s26ID(80+r), s26ID(90+r))
			w.t("Rebuilding.", asOK("image_build", obj{"context": ".", "dockerfile": "Dockerfile", "tag": "registry.example/web:fix"}, obj{"build_id": fmt.Sprintf("bld_%d", 6700+r), "digest": d, "cached_steps": 2}))
			vulns := []arr{{s26Vuln("CVE-2023-5678", "libssl3", "HIGH"), s26Vuln("CVE-2024-0727", "openssl", "HIGH")}, {s26Vuln("CVE-2024-0727", "openssl", "HIGH")}, {}}[r]
			w.t("Scanning it.", asOK("image_scan", obj{"image": "registry.example/web:fix", "severity": "HIGH,CRITICAL"}, s26Scan("registry.example/web:fix", d, vulns, 1700+r*90)))
		}
		add(w)
	}

	// A deck built card by card.
	{
		w := asRunOf("anki-deck-built", "flashcards", false).acc("write", "anki_add_note")
		for i, f := range []string{"Mitochondrion", "Ribosome", "Golgi apparatus", "Lysosome", "Nucleolus", "Chloroplast", "Centrosome", "Peroxisome", "Vacuole", "Cytoskeleton"} {
			w.t("Adding the next card.", asOK("anki_add_note", obj{"note": obj{"deckName": "Biology", "modelName": "Basic", "fields": obj{"Front": f, "Back": "Organelle #" + fmt.Sprint(i+1)}, "tags": arr{"cell"}}},
				obj{"result": 1796620000000 + i*1731, "error": nil}))
		}
		add(w)
	}

	// A sync refused for a lapsed login, the login renewed, the sync done.
	{
		w := asRunOf("anki-sync-after-login", "flashcards", false).acc("write", "anki_sync", "anki_login")
		w.t("Syncing the collection.", asOK("anki_sync", obj{}, obj{"result": nil, "error": "sync: authentication failed; log in again"}))
		w.t("Logging in again.", asOK("anki_login", obj{"username": "student@example.org"}, obj{"result": "ok", "error": nil}))
		w.t("Syncing again.", asOK("anki_sync", obj{}, obj{"result": obj{"uploaded": 12, "downloaded": 0}, "error": nil}))
		add(w)
	}

	// Employees listed page by page.
	{
		w := asRunOf("payroll-employees-paged", "payroll", false)
		cur := ""
		for i := 0; i < 5; i++ {
			next := fmt.Sprintf("c_%s", s26ID(120+i))
			var people arr
			for j := 0; j < 3; j++ {
				people = append(people, obj{"id": fmt.Sprintf("emp_%d", 100+i*3+j), "status": "active"})
			}
			w.t("Next page of employees.", asOK("payroll_list_employees", obj{"company_id": "co_5521", "cursor": cur, "limit": 3}, obj{"employees": people, "next_cursor": next}))
			cur = next
		}
		add(w)
	}

	// A locked period unlocked by its approver, then run.
	{
		w := asRunOf("payroll-run-after-unlock", "payroll", false).acc("write", "payroll_run", "payroll_unlock_request")
		w.t("Running November's payroll.", asFail("payroll_run", obj{"company_id": "co_5521", "period": "2026-11", "type": "regular"}, "conflict",
			`{"error":{"code":"PERIOD_LOCKED","message":"Pay period 2026-11-01..2026-11-30 is approved and locked"}}`))
		w.t("Asking the approver to unlock it.", asOK("payroll_unlock_request", obj{"company_id": "co_5521", "period": "2026-11", "reason": "missed overtime for 3 employees"}, obj{"status": "APPROVED", "by": "controller@northgate.example"}))
		w.t("Running it again.", asOK("payroll_run", obj{"company_id": "co_5521", "period": "2026-11", "type": "regular"}, obj{"run_id": "pr_88231", "status": "CALCULATED", "gross": 412880.15}))
		add(w)
	}

	// A payroll run retried after a transient outage.
	{
		w := asRunOf("payroll-run-retried-after-outage", "payroll", false).acc("write", "payroll_run").retryable("payroll_run")
		w.t("Running December's off-cycle.", asFail("payroll_run", obj{"company_id": "co_5521", "period": "2026-12", "type": "off_cycle"}, "unavailable", `{"error":{"code":"UNAVAILABLE","message":"service temporarily unavailable; retry"}}`))
		w.t("Retrying.", asFail("payroll_run", obj{"company_id": "co_5521", "period": "2026-12", "type": "off_cycle"}, "unavailable", `{"error":{"code":"UNAVAILABLE","message":"service temporarily unavailable; retry"}}`))
		w.t("Retrying once more.", asOK("payroll_run", obj{"company_id": "co_5521", "period": "2026-12", "type": "off_cycle"}, obj{"run_id": "pr_88240", "status": "CALCULATED"}))
		add(w)
	}

	// Passes searched day by day until one is free.
	{
		w := asRunOf("groundstation-passes-searched-day-by-day", "groundstation", false).acc("write", "gs_book_pass")
		for i := 0; i < 4; i++ {
			day := fmt.Sprintf("2026-12-%02d", 7+i)
			var passes arr
			if i == 3 {
				passes = arr{obj{"aos": day + "T17:58:02Z", "los": day + "T18:10:44Z", "max_elevation": 41.2}}
			}
			w.t("Looking for a free pass.", asOK("gs_find_passes", obj{"satellite": "NOAA 19", "station": "svalbard-3", "from": day + "T00:00:00Z", "to": day + "T23:59:59Z", "free_only": true}, obj{"passes": passes}))
		}
		w.t("Booking it.", asOK("gs_book_pass", obj{"satellite": "NOAA 19", "station": "svalbard-3", "aos": "2026-12-10T17:58:02Z", "los": "2026-12-10T18:10:44Z"}, obj{"contact_id": "c-88420", "status": "SCHEDULED"}))
		add(w)
	}

	// A lock jammed on an open door, read until the door closes, locked.
	{
		w := asRunOf("smartlock-locked-after-door-closes", "smarthome", false).acc("write", "lock_set")
		w.t("Locking the back door.", asOK("lock_set", obj{"lock_id": "back-door", "state": "locked"}, obj{"accepted": true, "command_id": "cmd_9300"}))
		for i, door := range []string{"open", "open", "closed"} {
			st := "jammed"
			if i == 2 {
				st = "unlocked"
			}
			w.t("Is the door shut?", asOK("lock_status", obj{"lock_id": "back-door"}, obj{"lock_id": "back-door", "state": st, "door": door, "door_open_s": []int{40, 95, 0}[i], "updated_at": s26Clock(2100 + i*60)}))
		}
		w.t("Locking it now.", asOK("lock_set", obj{"lock_id": "back-door", "state": "locked"}, obj{"accepted": true, "command_id": "cmd_9304"}))
		w.t("Is it locked?", asOK("lock_status", obj{"lock_id": "back-door"}, obj{"lock_id": "back-door", "state": "locked", "door": "closed", "updated_at": s26Clock(2300)}))
		add(w)
	}

	// A basket filled item by item.
	{
		w := asRunOf("grocery-basket-filled", "grocery", false).acc("write", "cart_add")
		for i, q := range []string{"eggs", "sourdough", "spinach", "cheddar", "apples"} {
			sku := fmt.Sprintf("SKU-%d", 4410+i*7)
			w.t("Finding "+q+".", asOK("grocery_search", obj{"query": q, "store_id": "st_118", "in_stock_only": true}, obj{"search_id": s26ID(720 + i), "results": arr{obj{"sku": sku, "name": q, "in_stock": true}}}))
			w.t("Adding it.", asOK("cart_add", obj{"sku": sku, "qty": 1}, obj{"cart_items": i + 1}))
		}
		add(w)
	}

	// A search narrowed until one product fits.
	{
		w := asRunOf("grocery-search-narrowed", "grocery", false).acc("write", "cart_add")
		for i, q := range []string{"milk", "oat milk", "oat milk 1L", "oat milk barista 1L unsweetened"} {
			var res arr
			for j := 0; j < []int{6, 4, 2, 1}[i]; j++ {
				res = append(res, obj{"sku": fmt.Sprintf("M-%d", 100+j*(i+1)), "in_stock": true})
			}
			w.t("Looking for milk.", asOK("grocery_search", obj{"query": q, "store_id": "st_118", "in_stock_only": true}, obj{"search_id": s26ID(740 + i), "results": res, "total": []int{212, 31, 9, 1}[i]}))
		}
		w.t("Adding it.", asOK("cart_add", obj{"sku": "M-100", "qty": 2}, obj{"cart_items": 6}))
		add(w)
	}

	// An upload polled while processing advances, then ready.
	{
		w := asRunOf("fitness-upload-polled-until-ready", "fitness", false)
		for i, st := range []string{"Your activity is still being processed.", "Your activity is still being processed.", "Your activity is ready."} {
			o := obj{"id": 11934402871, "status": st, "activity_id": nil, "progress": []int{30, 75, 100}[i]}
			if i == 2 {
				o["activity_id"] = 12790334512
			}
			w.t("Has the ride finished processing?", asOK("activity_upload_status", obj{"upload_id": 11934402871}, o))
		}
		add(w)
	}

	// A grid filled clue by clue, one clue asked again as its crossings
	// fill in.
	{
		w := asRunOf("crossword-clue-narrowed-by-crossings", "crossword", false)
		for i, p := range []string{"?????", "O????", "O?E??", "O?EA?"} {
			c := arr{obj{"word": "OCEAN", "score": 0.91}, obj{"word": "BRINE", "score": 0.33}, obj{"word": "WATER", "score": 0.12}}
			w.t("Solving 14 across.", asOK("crossword_solve", obj{"clue": "Large body of salt water", "pattern": p}, obj{"candidates": c[:3-min(i, 2)], "took_ms": 40}))
			if i < 3 {
				w.t("Solving a down clue.", asOK("crossword_solve", obj{"clue": fmt.Sprintf("Down clue %d", i+1), "pattern": "????"}, obj{"candidates": arr{obj{"word": []string{"ONCE", "EPIC", "ARIA"}[i], "score": 0.8}}}))
			}
		}
		add(w)
	}

	// Sensors across a city read one by one.
	{
		w := asRunOf("airquality-sensors-roll-call", "airquality", false)
		for i := 0; i < 10; i++ {
			w.t("Next sensor.", asOK("aq_sensor", obj{"sensor": 131075 + i*11, "fields": "pm2.5,humidity,last_seen"}, s26Sensor(131075+i*11, true, 8.1+float64(i%4), s26Clock(3000+i), i)))
		}
		add(w)
	}

	// One sensor polled through a smoky evening, its readings moving.
	{
		w := asRunOf("airquality-sensor-polled-readings-move", "airquality", false)
		for i, pm := range []float64{12.4, 18.9, 27.3, 35.0, 31.6} {
			w.t("How is the air now?", asOK("aq_sensor", obj{"sensor": 131075, "fields": "pm2.5,humidity,last_seen"}, s26Sensor(131075, true, pm, s26Clock(3600+i*120), i)))
		}
		add(w)
	}

	// A fold job polled through its stages.
	{
		w := asRunOf("fold-job-polled-through-stages", "protein", false)
		for i, st := range []string{"QUEUED", "MSA", "MSA", "STRUCTURE", "RELAX", "DONE"} {
			w.t("Is the prediction done?", asOK("fold_status", obj{"job": "fold-30450"}, obj{"job": "fold-30450", "stage": st, "msa_sequences": []int{0, 1200, 4800, 5102, 5102, 5102}[i], "elapsed_s": i * 240}))
		}
		add(w)
	}

	// Times tried one after another until a table is free.
	{
		w := asRunOf("restaurant-times-tried-until-free", "dining", false).acc("write", "table_book")
		for i, tm := range []string{"19:00", "19:30", "20:00", "20:30"} {
			res := obj{"booked": false, "reason": "no_availability", "alternatives": arr{"18:00", "21:45"}, "request_id": s26ID(920 + i)}
			if i == 3 {
				res = obj{"booked": true, "confirmation": "RSV-7Q2K", "request_id": s26ID(920 + i)}
			}
			w.t("Trying another time.", asOK("table_book", obj{"restaurant_id": "r_44810", "date": "2026-12-12", "time": tm, "party_size": 4}, res))
		}
		add(w)
	}

	// Several recipes handed to the chef.
	{
		w := asRunOf("recipe-several-handed", "cooking", false)
		for i, r := range []string{"lasagne-classic", "tiramisu", "focaccia", "minestrone"} {
			w.hand("Asking the chef.", "chef", "Scale the "+r+" recipe from 6 to 10 servings.", fmt.Sprintf("%s for 10: scaled.", r), func(s *asw) {
				s.t("Reading the recipe.", asOK("recipe_get", obj{"recipe_id": r}, obj{"id": r, "servings": 6, "steps": 5 + i}))
			})
		}
		add(w)
	}

	return runs
}
