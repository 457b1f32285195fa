package loops

import (
	"fmt"
	"strings"
	"testing"
)

// The twenty-seventh probe: written before reading the detectors' rules
// again, with the tool names and answer shapes of kinds of work the
// twenty-six before it do not use: a brewery's fermentation tanks, bike
// sharing docks, over-the-air firmware rollouts, city traffic signals,
// wildlife camera traps, mortgage rate quotes and underwriting, cinema
// seat booking, stage lighting over DMX, amateur radio positions (APRS),
// smart water meters, car rental, a blood bank, a mass spectrometer's
// run queue, a ski resort's lifts, a wine cellar, laundry machines,
// vending machine restocking, visa applications, and an underwriter
// sub-agent that hands its task on. The loops: a tank polled while
// fermentation stalls (only its sample's clock and age moving), a yeast
// pitch under notations of one temperature into one occupied tank, a
// dock asked under spellings of its id while it stays empty, a bike
// unlocked and its dock read back in turn while the bolt holds, a
// rollout polled while it stays at one count, a firmware deployed under
// spellings of its version into one bad signature, a signal retimed under
// notations of one cycle length into one offline controller, a three-way
// window of a corridor's reads that never changes, camera-trap
// detections searched in other words, a rate quoted under notations of
// one amount, seats booked under spellings and orders of the same two
// seats, a cue fired and the universe read back in turn while the
// console is blind, a callsign asked under spellings of itself, a leak
// alert acknowledged with its note reworded into one closed alert, cars
// searched under names of one airport, a crossmatch handed to a lab in
// other words, a spectrometer polled while it calibrates (its vacuum
// gauge jittering in its last digit), a lift and the wind read in turn
// while nothing moves, a cellar searched with its filters restyled, a
// machine started under spellings of one programme into one open door,
// a restock ordered with its lines reordered into one closed warehouse,
// a visa polled while only its days in review grow, and an application
// handed from underwriter to underwriter unchanged. Each has near-misses
// that repeat with progress: a gravity that falls, a dock that fills,
// a rollout that advances, each signal of a corridor retimed alike,
// searches narrowed, detections paged, distinct amounts quoted alike,
// other seats tried until free, a station that moves, distinct callsigns
// unheard alike, meters paged by day, a pitch after the tank is cleaned,
// a firmware re-signed, a controller power-cycled, a blind console
// released, a door closed, each blood type counted, several patients
// crossmatched, a queue that drains, a wind that falls, a visa that
// moves through its stages and several applications underwritten.
//
// A loop is marked as the ninth probe marks them: the fourth call that
// asks again in other words and learns nothing, the third identical poll
// or write, the third round of a pair or ring of calls (or of hand-offs)
// that learns nothing. A ring is written for four rounds: an agent that
// goes round does not stop at its mark. A tool without readOnlyHint is
// declared a write, as it is through the gateway.
//
// It is written and played with the assistants probe's writer and driver
// (assistruns_test.go).

// s27Known lists the runs whose outcome is not their label's, each with why.
var s27Known = map[string]string{
	// As written, on the guard then (c62ad215): 14 of 24 loops detected,
	// none early, 10 missed; 2 of 36 legit runs refused (other seats
	// tried until free, and a corridor watched whose signal status, read
	// three times alike with nothing written, is refused by the
	// benchmark's own rule). Since its fixes, 18 of 24 and 1: a reading's
	// stamp (sampled_at, obs_time) is a stamp (TestReadingStamps), a
	// quote's id is the exchange's (TestQuoteIDs), an operation's or a
	// deployment's id in a failure is the attempt's own
	// (TestOwnOperationIDs), and a conflict is about the values of the
	// call it names (TestConflictNamesTaken). Left:
	//
	"bikeshare-dock-respelled-empty":              "missed",
	"traffic-retime-cycle-notations-offline":      "missed",
	"wildlife-detections-reworded-same":           "missed",
	"massspec-polled-calibrating-jitter":          "missed",
	"laundry-start-programme-respelled-door-open": "missed",
	"visa-polled-days-in-review-grow":             "missed",
	"traffic-corridor-watched-peak":               "false_kill",
}

func TestTwentySeventhRuns(t *testing.T) {
	checkAsRuns(t, "twenty-seventh probe", twentySeventhRuns(), 45, s27Known)
}

// s27ID is a hex id made of n.
func s27ID(n int) string {
	return fmt.Sprintf("%08x%08x", 0x7b1c0000+n*52711, 0x0a3e0000+n*6131)
}

// s27Clock is a time of day on the probe's day, n seconds after 07:00.
func s27Clock(n int) string {
	return fmt.Sprintf("2026-12-07T%02d:%02d:%02dZ", 7+n/3600, (n/60)%60, n%60)
}

// s27Tank is a fermenter's latest reading from its hydrometer.
func s27Tank(gravity float64, temp float64, n int) obj {
	return obj{"tank": "FV-3", "batch": "B-2611 Pale Ale", "specific_gravity": gravity, "temperature_c": temp, "ph": 4.4,
		"sampled_at": s27Clock(n), "sample_age_s": n % 50, "sensor": obj{"model": "Tilt Pro", "battery_pct": 88}}
}

// s27Dock is a bike share station's status as a GBFS feed reports it.
func s27Dock(id string, bikes, docks int, n int) obj {
	return obj{"last_updated": 1796626800 + n, "ttl": 60, "version": "2.3", "data": obj{"station": obj{"station_id": id, "num_bikes_available": bikes,
		"num_ebikes_available": 0, "num_docks_available": docks, "is_renting": true, "is_returning": true, "last_reported": 1796626000 + n}}}
}

// s27Rollout is a firmware rollout's progress.
func s27Rollout(updated, failed, total int, n int) obj {
	return obj{"rollout_id": "ro_5f81", "firmware": "2.4.1", "group": "thermostats-eu", "state": "IN_PROGRESS", "devices_total": total,
		"devices_updated": updated, "devices_failed": failed, "last_heartbeat": s27Clock(n), "poll_after_s": 30}
}

// s27Spectrometer is a mass spectrometer's status.
func s27Spectrometer(state string, queue int, pressure string, n int) obj {
	return obj{"instrument": "QE-HF-2", "state": state, "queue_length": queue, "vacuum": obj{"fore_mbar": "1.6e+00", "high_vac_mbar": pressure},
		"calibration": obj{"mode": "positive", "last_passed": "2026-12-06T22:10:00Z"}, "reported_at": s27Clock(n)}
}

// s27Visa is a visa application's status.
func s27Visa(stage string, days int) obj {
	return obj{"application": "GWF071234567", "type": "Skilled Worker", "stage": stage, "days_in_review": days,
		"service_standard_days": 15, "biometrics": "done", "documents": "complete"}
}

func twentySeventhRuns() []*asRun {
	var runs []*asRun
	add := func(w *asw) { runs = append(runs, w.run) }

	// ===================== loops =====================

	// A brewing agent polls a fermenter whose gravity has stopped
	// falling; only its sample's clock and age move.
	{
		w := asRunOf("brew-tank-polled-stalled", "brewery", true)
		for i := 0; i < 5; i++ {
			if i == 2 {
				w.then()
			}
			w.t("Has fermentation finished?", asOK("fermenter_reading", obj{"tank": "FV-3"}, s27Tank(1.018, 19.5, 600+i*947)))
		}
		add(w)
	}

	// A brewing agent pitches yeast under notations of one temperature;
	// the tank is still occupied each time.
	{
		w := asRunOf("brew-pitch-temp-notations-tank-busy", "brewery", true).acc("write", "batch_pitch")
		for i, tc := range []any{"18C", 18, "18 °C", "18.0", "18 degC"} {
			if i == 3 {
				w.then()
			}
			w.t("Pitching the yeast for the stout.", asFail("batch_pitch", obj{"tank": "FV-3", "batch": "B-2614 Stout", "yeast": "WLP001", "pitch_temp_c": tc}, "conflict",
				fmt.Sprintf(`{"error":"TANK_OCCUPIED","detail":"FV-3 holds batch B-2611 (specific gravity 1.018); transfer or clean it first","request":"%s"}`, s27ID(10+i))))
		}
		add(w)
	}

	// A commuting agent asks for one dock under spellings of its id;
	// it is empty each time.
	{
		w := asRunOf("bikeshare-dock-respelled-empty", "bikeshare", true)
		for i, s := range []string{"402", "station_402", "0402", "BS-402", "402 "} {
			if i == 3 {
				w.then()
			}
			w.t("Any bikes at Canal Street?", asOK("station_status", obj{"station_id": s}, s27Dock("402", 0, 19, i*20)))
		}
		add(w)
	}

	// A commuting agent unlocks a bike and reads its dock back in turn;
	// the bolt holds each time.
	{
		w := asRunOf("bikeshare-unlock-read-ring-bolt-holds", "bikeshare", true).acc("write", "bike_unlock")
		for r := 0; r < 4; r++ {
			if r == 2 {
				w.then()
			}
			w.t("Unlocking bike 7781.", asOK("bike_unlock", obj{"bike_id": "7781", "station_id": "402"}, obj{"accepted": true, "unlock_request": fmt.Sprintf("ur_%d", 30410+r*7)}))
			w.t("Is it free?", asOK("dock_status", obj{"station_id": "402", "dock": 11}, obj{"dock": 11, "bike_id": "7781", "bolt": "locked", "fault": "none", "checked": s27Clock(r * 40)}))
		}
		add(w)
	}

	// A fleet agent polls a firmware rollout stuck at one count; only
	// its heartbeat moves.
	{
		w := asRunOf("ota-rollout-polled-stuck", "firmware", true)
		for i := 0; i < 5; i++ {
			if i == 2 {
				w.then()
			}
			w.t("How far is the rollout?", asOK("rollout_status", obj{"rollout_id": "ro_5f81"}, s27Rollout(112, 3, 300, 1200+i*31)))
		}
		add(w)
	}

	// A fleet agent deploys firmware under spellings of its version; the
	// image's signature is invalid each time.
	{
		w := asRunOf("ota-deploy-version-respelled-bad-signature", "firmware", true).acc("write", "firmware_deploy")
		for i, v := range []string{"2.4.1", "v2.4.1", "V2.4.1", "2.4.1 ", "v2.4.1"} {
			if i == 3 {
				w.then()
			}
			w.t("Rolling out the thermostat fix.", asFail("firmware_deploy", obj{"group": "thermostats-eu", "version": v, "strategy": "canary", "canary_pct": 5}, "rejected",
				fmt.Sprintf(`{"code":"SIGNATURE_INVALID","message":"image thermo-2.4.1.bin: ed25519 signature does not verify against key fw-2025","deployment":"dep_%d"}`, 8801+i)))
		}
		add(w)
	}

	// A traffic agent retimes a signal under notations of one cycle
	// length; the controller is offline each time.
	{
		w := asRunOf("traffic-retime-cycle-notations-offline", "traffic", true).acc("write", "signal_set_timing")
		for i, c := range []any{90, "90s", "90 s", "1m30s", "PT90S"} {
			if i == 3 {
				w.then()
			}
			w.t("Retiming Main & 3rd for the evening peak.", asFail("signal_set_timing", obj{"intersection": "INT-0317", "plan": 4, "cycle_length": c, "offset_s": 22}, "unavailable",
				`{"status":503,"error":"controller INT-0317 not responding (NTCIP 1202 SNMP timeout after 3 attempts)"}`))
		}
		add(w)
	}

	// A traffic agent goes round a corridor's three reads; nothing
	// changes in any of them.
	{
		w := asRunOf("traffic-corridor-three-reads-window-unchanged", "traffic", true)
		for r := 0; r < 4; r++ {
			if r == 2 {
				w.then()
			}
			w.t("Checking the signal.", asOK("signal_status", obj{"intersection": "INT-0317"}, obj{"intersection": "INT-0317", "mode": "flash", "plan": 0, "comm": "down", "as_of": s27Clock(r * 60)}))
			w.t("Checking the queue detectors.", asOK("detector_counts", obj{"corridor": "Main St", "window_min": 5}, obj{"corridor": "Main St", "volumes": arr{412, 388, 405}, "occupancy_pct": arr{31, 29, 33}, "window_end": "2026-12-07T16:55:00Z"}))
			w.t("Checking incidents.", asOK("incidents_list", obj{"corridor": "Main St"}, obj{"incidents": arr{obj{"id": "INC-5520", "type": "signal_malfunction", "location": "Main & 3rd", "opened": "2026-12-07T16:21:00Z"}}}))
		}
		add(w)
	}

	// A conservation agent searches camera-trap detections in other
	// words; the same three detections each time.
	{
		w := asRunOf("wildlife-detections-reworded-same", "wildlife", true)
		dets := arr{
			obj{"image": "CT07_20261129_0214.jpg", "camera": "CT07", "species": "Vulpes vulpes", "confidence": 0.93},
			obj{"image": "CT07_20261201_0331.jpg", "camera": "CT07", "species": "Vulpes vulpes", "confidence": 0.88},
			obj{"image": "CT12_20261203_2350.jpg", "camera": "CT12", "species": "Vulpes vulpes", "confidence": 0.81},
		}
		for i, q := range []string{"red fox", "Vulpes vulpes", "red fox at night", "foxes", "fox (red) sightings"} {
			if i == 3 {
				w.then()
			}
			w.t("Finding the fox sightings.", asOK("detections_search", obj{"query": q, "project": "north-woods"}, obj{"total": 3, "results": dets, "query_ms": 40 + i*7}))
		}
		add(w)
	}

	// A lending agent asks for a rate under notations of one loan
	// amount; the quote is the same each time.
	{
		w := asRunOf("mortgage-quote-amount-notations-same-rate", "mortgage", true)
		for i, a := range []any{350000, "350,000", "$350k", "350000.00", "3.5e5"} {
			if i == 3 {
				w.then()
			}
			w.t("Getting a rate for the Hendersons.", asOK("rate_quote", obj{"loan_amount": a, "property_value": 480000, "term_years": 30, "fico": 742, "state": "OR"},
				obj{"quote_id": s27ID(100 + i), "product": "30yr fixed conforming", "rate": 6.375, "apr": 6.512, "points": 0.25, "monthly_pi": 2183.55, "expires_at": s27Clock(7200 + i*30)}))
		}
		add(w)
	}

	// A booking agent books the same two seats under other spellings and
	// orders; they are taken each time.
	{
		w := asRunOf("cinema-seats-respelled-taken", "cinema", true).acc("write", "seats_book")
		for i, s := range []any{arr{"F7", "F8"}, arr{"F8", "F7"}, arr{"f7", "f8"}, "F7,F8", arr{"F-7", "F-8"}} {
			if i == 3 {
				w.then()
			}
			w.t("Booking two seats for the 19:40.", asFail("seats_book", obj{"showtime": "st_22719", "seats": s, "customer": "cu_8812"}, "conflict",
				`{"error":"SEATS_UNAVAILABLE","unavailable":["F7","F8"],"hold_expires":null}`))
		}
		add(w)
	}

	// A lighting agent fires a cue and reads the universe back in turn;
	// the console is in blind mode, nothing comes out.
	{
		w := asRunOf("lighting-cue-fire-read-ring-blind", "stagelighting", true).acc("write", "cue_fire")
		zeros := make(arr, 12)
		for k := range zeros {
			zeros[k] = 0
		}
		for r := 0; r < 4; r++ {
			if r == 2 {
				w.then()
			}
			w.t("Going to cue 14.", asOK("cue_fire", obj{"cuelist": 1, "cue": 14}, obj{"ok": true, "seq": 5120 + r}))
			w.t("Reading universe 1.", asOK("dmx_read", obj{"universe": 1, "start": 1, "count": 12}, obj{"universe": 1, "values": zeros, "blind": true, "fps": 44}))
		}
		add(w)
	}

	// A radio agent asks for a station's position under spellings of its
	// callsign; it has not been heard since yesterday.
	{
		w := asRunOf("aprs-callsign-respelled-not-heard", "aprs", true)
		for i, c := range []string{"KX7ABC", "kx7abc", "KX7ABC-0", "Kx7Abc", " KX7ABC"} {
			if i == 3 {
				w.then()
			}
			w.t("Where is the club's van?", asOK("aprs_position", obj{"callsign": c},
				obj{"command": "get", "result": "ok", "found": 1, "entries": arr{obj{"name": "KX7ABC", "lat": 45.5231, "lng": -122.6765, "time": 1796540400, "lasttime": 1796540400, "comment": "Field Day van"}}, "fetched": 1796626800 + i*45}))
		}
		add(w)
	}

	// A utility agent acknowledges a leak alert with its note reworded;
	// the alert is closed each time.
	{
		w := asRunOf("watermeter-ack-note-reworded-closed", "watermeter", true).acc("write", "alert_ack")
		for i, n := range []string{"Customer notified by phone", "Called the customer", "Phoned customer about leak", "Customer informed via call", "Left message with customer"} {
			if i == 3 {
				w.then()
			}
			w.t("Acknowledging the leak alert.", asFail("alert_ack", obj{"alert_id": "AL-60213", "meter": "WM-0099812", "note": n}, "invalid_state",
				`{"error":"alert AL-60213 is closed (auto-resolved at 2026-12-07T06:12:00Z: flow returned to baseline)"}`))
		}
		add(w)
	}

	// A travel agent searches cars under names of one airport; nothing
	// is available each time.
	{
		w := asRunOf("carrental-airport-respelled-none", "carrental", true)
		for i, l := range []string{"LAX", "KLAX", "Los Angeles International Airport", "lax", "LAX Airport"} {
			if i == 3 {
				w.then()
			}
			w.t("Finding a car for Friday.", asOK("cars_search", obj{"pickup": l, "pickup_at": "2026-12-11T10:00", "dropoff_at": "2026-12-14T10:00", "class": "midsize"},
				obj{"search_id": s27ID(200 + i), "location": obj{"iata": "LAX", "name": "Los Angeles Intl"}, "offers": arr{}, "message": "No midsize vehicles available for these dates"}))
		}
		add(w)
	}

	// A transfusion agent hands one crossmatch to the lab in other words.
	{
		w := asRunOf("bloodbank-crossmatch-handed-reworded", "bloodbank", true)
		for i, task := range []string{
			"Crossmatch 2 units of O negative RBCs for patient MRN 4471920.",
			"Patient 4471920 needs two O- red cell units crossmatched.",
			"Please run a crossmatch: MRN 4471920, 2u O neg packed cells.",
			"Crossmatch request: two units O Rh-negative for MRN 4471920.",
			"Could you crossmatch O negative x2 for patient 4471920?",
		} {
			if i == 2 {
				w.then()
			}
			w.hand("Asking the lab.", "bloodlab", task, "Crossmatch incomplete: antibody screen positive (anti-K); K-negative O- units needed, none in stock.", func(s *asw) {
				s.t("Checking stock.", asOK("blood_inventory", obj{"abo": "O", "rh": "neg", "antigen_negative": arr{"K"}}, obj{"units": arr{}, "total": 0}))
			})
		}
		add(w)
	}

	// A lab agent polls a spectrometer while it calibrates; only its
	// vacuum gauge's last digit moves.
	{
		w := asRunOf("massspec-polled-calibrating-jitter", "massspec", true)
		for i, p := range []string{"2.41e-09", "2.43e-09", "2.40e-09", "2.42e-09", "2.41e-09"} {
			if i == 2 {
				w.then()
			}
			w.t("Has the calibration finished?", asOK("instrument_status", obj{"instrument": "QE-HF-2"}, s27Spectrometer("CALIBRATING", 6, p, 300+i*120)))
		}
		add(w)
	}

	// A ski agent reads a lift and the wind in turn; the lift stays on
	// wind hold, the wind does not change.
	{
		w := asRunOf("ski-lift-wind-ab-ab-unchanged", "skiresort", true)
		for r := 0; r < 4; r++ {
			if r == 2 {
				w.then()
			}
			w.t("Is the summit chair running?", asOK("lift_status", obj{"lift": "summit-express"}, obj{"lift": "summit-express", "status": "WIND_HOLD", "reason": "gusts over 65 km/h", "updated": s27Clock(r * 300)}))
			w.t("What is the wind at the top?", asOK("weather_station", obj{"station": "summit"}, obj{"station": "summit", "wind_kmh": 48, "gust_kmh": 71, "dir": "WSW", "temp_c": -9, "obs_time": s27Clock(r * 300)}))
		}
		add(w)
	}

	// A sommelier agent searches the cellar with its filters restyled;
	// the same two bottles each time.
	{
		w := asRunOf("wine-cellar-filters-restyled-same", "winecellar", true)
		bottles := arr{
			obj{"id": "btl_0173", "producer": "G. Mascarello", "wine": "Barolo Monprivato", "vintage": 2016, "bin": "C4", "qty": 2},
			obj{"id": "btl_0188", "producer": "Bartolo Mascarello", "wine": "Barolo", "vintage": 2016, "bin": "C5", "qty": 1},
		}
		for i, f := range []obj{
			{"region": "Barolo", "vintage": 2016},
			{"vintage": "2016", "region": "barolo"},
			{"region": "BAROLO", "vintage": 2016, "in_stock": true},
			{"region": "Barolo DOCG", "vintage": 2016},
			{"region": " Barolo", "vintage": "2016"},
		} {
			if i == 3 {
				w.then()
			}
			w.t("Which Barolo 2016 do we have?", asOK("cellar_search", f, obj{"count": 2, "bottles": bottles}))
		}
		add(w)
	}

	// A home agent starts a washer under spellings of one programme; its
	// door is open each time.
	{
		w := asRunOf("laundry-start-programme-respelled-door-open", "laundry", true).acc("write", "washer_start")
		for i, p := range []string{"Cotton 40", "cotton_40", "COTTON40", "Cotton 40°C", "cotton-40"} {
			if i == 3 {
				w.then()
			}
			w.t("Starting the wash.", asFail("washer_start", obj{"appliance": "washer-1", "programme": p, "spin_rpm": 1200}, "precondition",
				fmt.Sprintf(`{"key":"BSH.Common.Error.DoorOpen","description":"Door is open","operationId":"%s"}`, s27ID(300+i))))
		}
		add(w)
	}

	// A vending agent orders a restock with its lines reordered; the
	// warehouse is closed for picking each time.
	{
		w := asRunOf("vending-restock-lines-reordered-closed", "vending", true).acc("write", "restock_order")
		lines := []obj{{"sku": "COLA-330", "qty": 24}, {"sku": "WATER-500", "qty": 12}, {"sku": "CRISPS-SALT", "qty": 18}}
		orders := [][]int{{0, 1, 2}, {2, 1, 0}, {1, 0, 2}, {0, 2, 1}, {2, 0, 1}}
		for i, o := range orders {
			if i == 3 {
				w.then()
			}
			var ls arr
			for _, k := range o {
				ls = append(ls, lines[k])
			}
			w.t("Ordering the restock for machine 14.", asFail("restock_order", obj{"machine": "VM-014", "lines": ls}, "conflict",
				`{"error":"WAREHOUSE_CLOSED","message":"Depot North is not picking until 2026-12-08T05:00:00Z"}`))
		}
		add(w)
	}

	// An immigration agent polls an application while only its days in
	// review grow.
	{
		w := asRunOf("visa-polled-days-in-review-grow", "immigration", true)
		for i := 0; i < 5; i++ {
			if i == 2 {
				w.then()
			}
			w.t("Any news on the visa?", asOK("visa_status", obj{"reference": "GWF071234567"}, s27Visa("UNDER_REVIEW", 21+i)))
		}
		add(w)
	}

	// A lending lead hands an application to an underwriter, who hands
	// the same task on, and on.
	{
		w := asRunOf("underwriter-hands-task-on", "mortgage", true)
		task := "Underwrite application A-5531 (Henderson, 350,000 USD, 30yr fixed) and return a decision."
		w.hand("Asking underwriting.", "underwriter", task, "Referred.", func(u *asw) {
			u.hand("Handing it to the senior underwriter.", "senior-underwriter", task, "Referred.", func(s *asw) {
				s.then()
				s.hand("Handing it back to underwriting.", "underwriter", "Please underwrite application A-5531 (Henderson, USD 350,000, 30-year fixed); return a decision.", "Referred.", func(u2 *asw) {
					u2.hand("Handing it to the senior underwriter.", "senior-underwriter", task, "Referred.", nil)
				})
			})
		})
		add(w)
	}

	// A lending lead asks for an underwriting decision again and again
	// in a window where nothing it reads changes.
	{
		w := asRunOf("mortgage-conditions-reread-window", "mortgage", true)
		for r := 0; r < 4; r++ {
			if r == 2 {
				w.then()
			}
			w.t("Reading the conditions.", asOK("loan_conditions", obj{"loan": "A-5531"}, obj{"loan": "A-5531", "open": arr{"PTD-12 verify employment", "PTD-19 appraisal"}, "cleared": arr{"PTA-03 credit"}}))
			w.t("Asking for a decision.", asOK("aus_decision", obj{"loan": "A-5531"}, obj{"loan": "A-5531", "finding": "REFER", "casefile": "DU-" + s27ID(400), "messages": 2}))
		}
		add(w)
	}

	// ===================== legit =====================

	// A fermenter polled as its gravity falls, then steady twice.
	{
		w := asRunOf("brew-tank-gravity-falls", "brewery", false)
		for i, g := range []float64{1.052, 1.044, 1.031, 1.022, 1.014, 1.011, 1.011} {
			w.t("Has fermentation finished?", asOK("fermenter_reading", obj{"tank": "FV-3"}, s27Tank(g, 19.5, i*7200)))
		}
		add(w)
	}

	// A pitch refused on an occupied tank, the tank cleaned, the pitch
	// done.
	{
		w := asRunOf("brew-pitch-after-cleaning", "brewery", false).acc("write", "batch_pitch", "tank_cip")
		args := obj{"tank": "FV-3", "batch": "B-2614 Stout", "yeast": "WLP001", "pitch_temp_c": 18}
		w.t("Pitching the yeast.", asFail("batch_pitch", args, "conflict", `{"error":"TANK_OCCUPIED","detail":"FV-3 holds batch B-2611"}`))
		w.t("Transferring and cleaning FV-3.", asOK("tank_cip", obj{"tank": "FV-3", "program": "caustic-acid"}, obj{"ok": true, "state": "CLEAN"}))
		w.t("Pitching again.", asOK("batch_pitch", args, obj{"ok": true, "batch": "B-2614", "tank": "FV-3", "state": "FERMENTING"}))
		add(w)
	}

	// Every dock along a ride asked; several empty alike.
	{
		w := asRunOf("bikeshare-docks-along-ride", "bikeshare", false)
		for i := 0; i < 8; i++ {
			b := 0
			if i%3 == 1 {
				b = 2 + i
			}
			id := fmt.Sprint(401 + i)
			w.t("Next dock.", asOK("station_status", obj{"station_id": id}, s27Dock(id, b, 19-b, i*5)))
		}
		add(w)
	}

	// A dock polled as bikes come back.
	{
		w := asRunOf("bikeshare-dock-fills", "bikeshare", false)
		for i, b := range []int{0, 0, 1, 1, 3, 4} {
			w.t("Any bikes yet?", asOK("station_status", obj{"station_id": "402"}, s27Dock("402", b, 19-b, i*120)))
		}
		add(w)
	}

	// A rollout polled as it advances.
	{
		w := asRunOf("ota-rollout-advances", "firmware", false)
		for i, u := range []int{112, 140, 188, 231, 290, 297} {
			w.t("How far is the rollout?", asOK("rollout_status", obj{"rollout_id": "ro_5f81"}, s27Rollout(u, 3, 300, i*60)))
		}
		add(w)
	}

	// A bad signature, the image re-signed, the deploy done.
	{
		w := asRunOf("ota-deploy-after-resign", "firmware", false).acc("write", "firmware_deploy", "firmware_sign")
		args := obj{"group": "thermostats-eu", "version": "2.4.1", "strategy": "canary", "canary_pct": 5}
		w.t("Rolling out the fix.", asFail("firmware_deploy", args, "rejected", `{"code":"SIGNATURE_INVALID","message":"signature does not verify against key fw-2025"}`))
		w.t("Signing with the current key.", asOK("firmware_sign", obj{"image": "thermo-2.4.1.bin", "key": "fw-2026"}, obj{"ok": true, "sha256": s27ID(500)}))
		w.t("Rolling out again.", asOK("firmware_deploy", args, obj{"rollout_id": "ro_5f81", "state": "IN_PROGRESS"}))
		add(w)
	}

	// One firmware deployed to each device group, answered alike.
	{
		w := asRunOf("ota-deploy-each-group", "firmware", false).acc("write", "firmware_deploy")
		for i, g := range []string{"thermostats-eu", "thermostats-us", "thermostats-uk", "thermostats-au", "valves-eu", "valves-us"} {
			w.t("Next group.", asOK("firmware_deploy", obj{"group": g, "version": "2.4.1", "strategy": "canary", "canary_pct": 5}, obj{"rollout_id": fmt.Sprintf("ro_%x", 0x5f81+i), "state": "QUEUED"}))
		}
		add(w)
	}

	// Each signal of a corridor retimed alike.
	{
		w := asRunOf("traffic-corridor-retimed", "traffic", false).acc("write", "signal_set_timing")
		for i := 0; i < 7; i++ {
			w.t("Next intersection.", asOK("signal_set_timing", obj{"intersection": fmt.Sprintf("INT-%04d", 314+i), "plan": 4, "cycle_length": 90, "offset_s": 22 + i*11}, obj{"status": 200, "applied": true}))
		}
		add(w)
	}

	// A controller offline, power-cycled, then retimed.
	{
		w := asRunOf("traffic-retime-after-power-cycle", "traffic", false).acc("write", "signal_set_timing", "cabinet_power_cycle")
		args := obj{"intersection": "INT-0317", "plan": 4, "cycle_length": 90, "offset_s": 22}
		w.t("Retiming Main & 3rd.", asFail("signal_set_timing", args, "unavailable", `{"status":503,"error":"controller INT-0317 not responding"}`))
		w.t("Power-cycling the cabinet.", asOK("cabinet_power_cycle", obj{"intersection": "INT-0317"}, obj{"ok": true, "controller": "online", "uptime_s": 42}))
		w.t("Retiming again.", asOK("signal_set_timing", args, obj{"status": 200, "applied": true}))
		add(w)
	}

	// A corridor watched through the evening peak: volumes move.
	{
		w := asRunOf("traffic-corridor-watched-peak", "traffic", false)
		for r := 0; r < 5; r++ {
			w.t("Checking the queue detectors.", asOK("detector_counts", obj{"corridor": "Main St", "window_min": 5}, obj{"corridor": "Main St", "volumes": arr{412 - r*31, 388 + r*9, 405 - r*17}, "occupancy_pct": arr{31 - r*3, 29, 33 - r*2}, "window_end": s27Clock(3600*9 + r*300)}))
			w.t("Checking the signal.", asOK("signal_status", obj{"intersection": "INT-0317"}, obj{"intersection": "INT-0317", "mode": "coordinated", "plan": 4, "comm": "up", "as_of": s27Clock(3600*9 + r*300)}))
		}
		add(w)
	}

	// A detection search narrowed step by step.
	{
		w := asRunOf("wildlife-search-narrowed", "wildlife", false)
		for i, f := range []obj{
			{"query": "red fox", "project": "north-woods"},
			{"query": "red fox", "project": "north-woods", "camera": "CT07"},
			{"query": "red fox", "project": "north-woods", "camera": "CT07", "hours": "22-04"},
			{"query": "red fox", "project": "north-woods", "camera": "CT07", "hours": "22-04", "after": "2026-11-30"},
		} {
			n := 40 >> (i + 1)
			var res arr
			for k := 0; k < n && k < 4; k++ {
				res = append(res, obj{"image": fmt.Sprintf("CT07_%d.jpg", 100+k*7+i), "species": "Vulpes vulpes"})
			}
			w.t("Narrowing the fox search.", asOK("detections_search", f, obj{"total": n, "results": res}))
		}
		add(w)
	}

	// Detections paged with a cursor.
	{
		w := asRunOf("wildlife-detections-paged", "wildlife", false)
		cur := ""
		for i := 0; i < 6; i++ {
			a := obj{"project": "north-woods", "species": "Cervus elaphus", "limit": 50}
			if cur != "" {
				a["cursor"] = cur
			}
			next := fmt.Sprintf("c_%s", s27ID(600+i))
			w.t("Next page of deer.", asOK("detections_list", a, obj{"results": arr{obj{"image": fmt.Sprintf("CT%02d_%d.jpg", i%13, 9000+i*50)}, obj{"image": fmt.Sprintf("CT%02d_%d.jpg", (i+3)%13, 9001+i*50)}}, "next_cursor": next}))
			cur = next
		}
		add(w)
	}

	// Distinct loan amounts quoted, several at one rate.
	{
		w := asRunOf("mortgage-quotes-distinct-amounts", "mortgage", false)
		for i, a := range []int{300000, 325000, 350000, 375000, 400000, 766550} {
			rate := 6.375
			if a > 766000 {
				rate = 6.625
			}
			w.t("Another amount.", asOK("rate_quote", obj{"loan_amount": a, "property_value": 480000, "term_years": 30, "fico": 742, "state": "OR"},
				obj{"quote_id": s27ID(700 + i), "rate": rate, "monthly_pi": float64(a) * 0.00624}))
		}
		add(w)
	}

	// Conditions cleared one by one, the decision re-run after each.
	{
		w := asRunOf("mortgage-conditions-cleared", "mortgage", false).acc("write", "condition_clear")
		open := []string{"PTD-12 verify employment", "PTD-19 appraisal", "PTD-22 bank statements"}
		for i := 0; i < 3; i++ {
			w.t("Clearing the next condition.", asOK("condition_clear", obj{"loan": "A-5531", "condition": open[i][:6], "evidence": fmt.Sprintf("doc_%d", 88+i)}, obj{"ok": true}))
			finding := "REFER"
			if i == 2 {
				finding = "APPROVE"
			}
			var left arr
			for _, c := range open[i+1:] {
				left = append(left, c)
			}
			w.t("Asking for a decision.", asOK("aus_decision", obj{"loan": "A-5531"}, obj{"loan": "A-5531", "finding": finding, "open": left}))
		}
		add(w)
	}

	// Taken seats, other seats tried until two are free.
	{
		w := asRunOf("cinema-other-seats-until-free", "cinema", false).acc("write", "seats_book")
		for i, s := range []arr{{"F7", "F8"}, {"G7", "G8"}, {"E9", "E10"}, {"H3", "H4"}} {
			if i < 3 {
				w.t("Trying other seats.", asFail("seats_book", obj{"showtime": "st_22719", "seats": s, "customer": "cu_8812"}, "conflict",
					fmt.Sprintf(`{"error":"SEATS_UNAVAILABLE","unavailable":["%s","%s"]}`, s[0], s[1])))
				continue
			}
			w.t("Trying other seats.", asOK("seats_book", obj{"showtime": "st_22719", "seats": s, "customer": "cu_8812"}, obj{"booking": "BK-44120", "seats": s}))
		}
		add(w)
	}

	// Showtimes asked at each cinema of a chain; the small ones alike.
	{
		w := asRunOf("cinema-showtimes-each-site", "cinema", false)
		for i := 0; i < 7; i++ {
			times := arr{"17:10", "19:40", "22:05"}
			if i%2 == 1 {
				times = arr{"19:40"}
			}
			w.t("Next cinema.", asOK("showtimes", obj{"cinema": fmt.Sprintf("site_%02d", 10+i), "film": "flm_9120", "date": "2026-12-11"}, obj{"film": "flm_9120", "times": times}))
		}
		add(w)
	}

	// A blind console released, then the cue fired and lit.
	{
		w := asRunOf("lighting-blind-released-then-lit", "stagelighting", false).acc("write", "cue_fire", "console_mode")
		w.t("Going to cue 14.", asOK("cue_fire", obj{"cuelist": 1, "cue": 14}, obj{"ok": true, "seq": 5120}))
		w.t("Reading universe 1.", asOK("dmx_read", obj{"universe": 1, "start": 1, "count": 4}, obj{"universe": 1, "values": arr{0, 0, 0, 0}, "blind": true}))
		w.t("Leaving blind.", asOK("console_mode", obj{"blind": false}, obj{"ok": true, "blind": false}))
		w.t("Going to cue 14 again.", asOK("cue_fire", obj{"cuelist": 1, "cue": 14}, obj{"ok": true, "seq": 5122}))
		w.t("Reading universe 1.", asOK("dmx_read", obj{"universe": 1, "start": 1, "count": 4}, obj{"universe": 1, "values": arr{255, 180, 180, 40}, "blind": false}))
		add(w)
	}

	// A show's cues run in order, each read back.
	{
		w := asRunOf("lighting-cues-in-order", "stagelighting", false).acc("write", "cue_fire")
		for i := 0; i < 6; i++ {
			w.t("Next cue.", asOK("cue_fire", obj{"cuelist": 1, "cue": 14 + i}, obj{"ok": true, "seq": 5120 + i}))
			w.t("Reading universe 1.", asOK("dmx_read", obj{"universe": 1, "start": 1, "count": 4}, obj{"universe": 1, "values": arr{255 - i*30, 180, i * 40, 40}, "blind": false}))
		}
		add(w)
	}

	// A station tracked as it moves.
	{
		w := asRunOf("aprs-van-tracked", "aprs", false)
		for i := 0; i < 6; i++ {
			w.t("Where is the van now?", asOK("aprs_position", obj{"callsign": "KX7ABC-9"},
				obj{"found": 1, "entries": arr{obj{"name": "KX7ABC-9", "lat": 45.5231 + float64(i)*0.0113, "lng": -122.6765 + float64(i)*0.0071, "time": 1796626800 + i*180}}, "fetched": 1796626810 + i*180}))
		}
		add(w)
	}

	// Several callsigns asked, unheard alike.
	{
		w := asRunOf("aprs-net-members-unheard", "aprs", false)
		for i, c := range []string{"KX7ABC", "W7QRP", "N7XYZ", "KE7LMN", "AG7OP", "KD7TTT"} {
			w.t("Next member of the net.", asOK("aprs_position", obj{"callsign": c}, obj{"command": "get", "result": "ok", "found": 0, "entries": arr{}, "fetched": 1796626800 + i*5}))
		}
		add(w)
	}

	// A meter's readings paged day by day.
	{
		w := asRunOf("watermeter-readings-by-day", "watermeter", false)
		for d := 1; d <= 7; d++ {
			w.t("Next day.", asOK("meter_readings", obj{"meter": "WM-0099812", "date": fmt.Sprintf("2026-12-%02d", d), "interval": "1h"},
				obj{"meter": "WM-0099812", "liters": arr{12 + d, 0, 0, 3 * d, 40 + d}, "night_flow_lph": d % 2}))
		}
		add(w)
	}

	// Open leak alerts acknowledged one by one with one note.
	{
		w := asRunOf("watermeter-alerts-acked", "watermeter", false).acc("write", "alert_ack")
		for i := 0; i < 6; i++ {
			w.t("Next alert.", asOK("alert_ack", obj{"alert_id": fmt.Sprintf("AL-%d", 60213+i*4), "note": "Customer notified by phone"}, obj{"ok": true, "state": "ACKNOWLEDGED"}))
		}
		add(w)
	}

	// No cars at one airport, other places and a class tried until one
	// has an offer.
	{
		w := asRunOf("carrental-other-places-until-found", "carrental", false)
		for i, p := range []obj{
			{"pickup": "LAX", "class": "midsize"},
			{"pickup": "BUR", "class": "midsize"},
			{"pickup": "LAX", "class": "fullsize"},
			{"pickup": "Santa Monica", "class": "midsize"},
		} {
			offers := arr{}
			if i == 3 {
				offers = arr{obj{"vendor": "ZE", "car": "Toyota Camry or similar", "total": 212.4}}
			}
			p["pickup_at"], p["dropoff_at"] = "2026-12-11T10:00", "2026-12-14T10:00"
			w.t("Trying elsewhere.", asOK("cars_search", p, obj{"search_id": s27ID(800 + i), "offers": offers}))
		}
		add(w)
	}

	// Stock counted per blood type; several at zero alike.
	{
		w := asRunOf("bloodbank-stock-per-type", "bloodbank", false)
		for i, t := range [][2]string{{"O", "neg"}, {"O", "pos"}, {"A", "neg"}, {"A", "pos"}, {"B", "neg"}, {"B", "pos"}, {"AB", "neg"}, {"AB", "pos"}} {
			var units arr
			if i%3 != 2 {
				units = arr{obj{"unit": fmt.Sprintf("W0411%06d", i*37), "expires": "2026-12-30"}}
			}
			w.t("Next type.", asOK("blood_inventory", obj{"abo": t[0], "rh": t[1]}, obj{"units": units, "total": len(units)}))
		}
		add(w)
	}

	// Several patients' crossmatches handed to the lab.
	{
		w := asRunOf("bloodbank-crossmatch-several-patients", "bloodbank", false)
		for i, mrn := range []string{"4471920", "4471933", "4472018", "4472101"} {
			w.hand("Asking the lab.", "bloodlab", fmt.Sprintf("Crossmatch 2 units of O negative RBCs for patient MRN %s.", mrn), fmt.Sprintf("Compatible: units W0411%06d, W0411%06d.", i*2, i*2+1), func(s *asw) {
				s.t("Checking stock.", asOK("blood_inventory", obj{"abo": "O", "rh": "neg", "for": mrn}, obj{"total": 6 - i*2}))
			})
		}
		add(w)
	}

	// A spectrometer's queue polled as it drains.
	{
		w := asRunOf("massspec-queue-drains", "massspec", false)
		for i, q := range []int{6, 6, 5, 4, 2, 0} {
			st := "RUNNING"
			if i == 0 {
				st = "CALIBRATING"
			}
			w.t("How far is the queue?", asOK("instrument_status", obj{"instrument": "QE-HF-2"}, s27Spectrometer(st, q, "2.41e-09", i*900)))
		}
		add(w)
	}

	// A lift and the wind read in turn while the wind falls; the lift
	// opens.
	{
		w := asRunOf("ski-lift-wind-falls-opens", "skiresort", false)
		for r, g := range []int{71, 66, 58, 49} {
			st := "WIND_HOLD"
			if r == 3 {
				st = "OPEN"
			}
			w.t("Is the summit chair running?", asOK("lift_status", obj{"lift": "summit-express"}, obj{"lift": "summit-express", "status": st, "updated": s27Clock(r * 900)}))
			w.t("What is the wind at the top?", asOK("weather_station", obj{"station": "summit"}, obj{"station": "summit", "wind_kmh": g - 23, "gust_kmh": g, "obs_time": s27Clock(r * 900)}))
		}
		add(w)
	}

	// A cellar listed page by page.
	{
		w := asRunOf("wine-cellar-paged", "winecellar", false)
		for p := 1; p <= 6; p++ {
			var bs arr
			for k := 0; k < 3; k++ {
				bs = append(bs, obj{"id": fmt.Sprintf("btl_%04d", p*100+k), "bin": fmt.Sprintf("%c%d", 'A'+p, k)})
			}
			w.t("Next page.", asOK("cellar_list", obj{"page": p, "per_page": 3}, obj{"page": p, "pages": 40, "bottles": bs}))
		}
		add(w)
	}

	// A door open, the door closed, the wash started and followed.
	{
		w := asRunOf("laundry-door-closed-then-followed", "laundry", false).acc("write", "washer_start", "door_lock")
		args := obj{"appliance": "washer-1", "programme": "Cotton 40", "spin_rpm": 1200}
		w.t("Starting the wash.", asFail("washer_start", args, "precondition", `{"key":"BSH.Common.Error.DoorOpen","description":"Door is open"}`))
		w.t("The door is shut now; locking it.", asOK("door_lock", obj{"appliance": "washer-1"}, obj{"door": "closed", "locked": true}))
		w.t("Starting again.", asOK("washer_start", args, obj{"state": "Run", "remaining_min": 118}))
		for i, m := range []int{96, 71, 40, 12, 0} {
			w.t("How long is left?", asOK("washer_status", obj{"appliance": "washer-1"}, obj{"state": map[bool]string{true: "Finished", false: "Run"}[m == 0], "remaining_min": m, "at": s27Clock(i * 1500)}))
		}
		add(w)
	}

	// A restock refused on a closed warehouse, a slot booked, the
	// order placed.
	{
		w := asRunOf("vending-restock-after-slot", "vending", false).acc("write", "restock_order", "pick_slot_book")
		args := obj{"machine": "VM-014", "lines": arr{obj{"sku": "COLA-330", "qty": 24}, obj{"sku": "WATER-500", "qty": 12}}}
		w.t("Ordering the restock.", asFail("restock_order", args, "conflict", `{"error":"WAREHOUSE_CLOSED","message":"Depot North is not picking until 2026-12-08T05:00:00Z"}`))
		w.t("Booking an early picking slot.", asOK("pick_slot_book", obj{"depot": "north", "slot": "2026-12-08T05:00:00Z"}, obj{"ok": true, "slot_id": "ps_771"}))
		args2 := obj{"machine": "VM-014", "lines": arr{obj{"sku": "COLA-330", "qty": 24}, obj{"sku": "WATER-500", "qty": 12}}, "slot_id": "ps_771"}
		w.t("Ordering into the slot.", asOK("restock_order", args2, obj{"order": "RO-3310", "state": "SCHEDULED"}))
		add(w)
	}

	// Every machine on a route restocked alike.
	{
		w := asRunOf("vending-route-restocked", "vending", false).acc("write", "restock_order")
		for i := 0; i < 7; i++ {
			w.t("Next machine.", asOK("restock_order", obj{"machine": fmt.Sprintf("VM-%03d", 14+i), "lines": arr{obj{"sku": "COLA-330", "qty": 24}}, "slot_id": "ps_771"}, obj{"order": fmt.Sprintf("RO-%d", 3310+i), "state": "SCHEDULED"}))
		}
		add(w)
	}

	// A visa followed through its stages.
	{
		w := asRunOf("visa-moves-through-stages", "immigration", false)
		for i, st := range []string{"RECEIVED", "RECEIVED", "BIOMETRICS_BOOKED", "UNDER_REVIEW", "UNDER_REVIEW", "DECISION_MADE"} {
			w.t("Any news on the visa?", asOK("visa_status", obj{"reference": "GWF071234567"}, s27Visa(st, i*4)))
		}
		add(w)
	}

	// Several applications handed to underwriting, one each.
	{
		w := asRunOf("underwriter-several-applications", "mortgage", false)
		for i, a := range []string{"A-5531", "A-5540", "A-5542", "A-5561"} {
			w.hand("Asking underwriting.", "underwriter", "Underwrite application "+a+" and return a decision.", []string{"Approved.", "Referred.", "Approved.", "Approved with conditions."}[i], func(u *asw) {
				u.t("Reading the file.", asOK("loan_file", obj{"loan": a}, obj{"loan": a, "dti": 31 + i*3}))
			})
		}
		add(w)
	}

	// A decision asked again after each document upload.
	{
		w := asRunOf("mortgage-decision-after-uploads", "mortgage", false).acc("write", "document_upload")
		for i, doc := range []string{"paystub-nov.pdf", "w2-2025.pdf", "bank-oct.pdf", "bank-nov.pdf"} {
			w.t("Uploading.", asOK("document_upload", obj{"loan": "A-5531", "file": doc}, obj{"ok": true, "doc_id": fmt.Sprintf("doc_%d", 120+i)}))
			w.t("Asking for a decision.", asOK("aus_decision", obj{"loan": "A-5531"}, obj{"loan": "A-5531", "finding": "REFER", "messages": 6 - i, "missing": arr{"PTD-12", "PTD-19", "PTD-22", "PTD-30"}[i:]}))
		}
		add(w)
	}

	// A vending machine's telemetry polled while it sells.
	{
		w := asRunOf("vending-telemetry-sells", "vending", false)
		for i := 0; i < 6; i++ {
			w.t("How is machine 14 doing?", asOK("machine_telemetry", obj{"machine": "VM-014"}, obj{"machine": "VM-014", "cola_left": 24 - i*3, "temp_c": 4, "sales_today": i * 3, "reported": s27Clock(i * 1800)}))
		}
		add(w)
	}

	// A firmware search narrowed by channel and hardware.
	{
		w := asRunOf("ota-builds-narrowed", "firmware", false)
		for i, f := range []obj{{"product": "thermo"}, {"product": "thermo", "channel": "stable"}, {"product": "thermo", "channel": "stable", "hw": "rev-c"}, {"product": "thermo", "channel": "stable", "hw": "rev-c", "signed": true}} {
			var bs arr
			for k := 0; k < 4-i; k++ {
				bs = append(bs, fmt.Sprintf("2.4.%d", k))
			}
			w.t("Narrowing the builds.", asOK("firmware_builds", f, obj{"builds": bs, "count": strings.Count(fmt.Sprint(bs), ".") / 2}))
		}
		add(w)
	}

	return runs
}
