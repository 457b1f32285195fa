package loops

import (
	"fmt"
	"strings"
	"testing"
)

// The twenty-second probe: written before reading the detectors' rules in
// detail, with the tool names and answer shapes of kinds of work the
// twenty-one before it do not use: parcel tracking and shipping labels
// (UPS, EasyPost), game servers (a Minecraft server's status and RCON),
// a CDN's purge and edge headers, legal e-discovery (keyword searches and
// privilege coding), lab automation (a liquid handler, an HPLC queue,
// PubChem), HR onboarding (an HRIS, an LDAP directory, an IT desk
// sub-agent), podcast and video production (episode hosting, audio
// mastering, cloud rendering), telescope scheduling, warehouse inventory,
// irrigation valves and accessibility audits (axe-core). The loops: one
// tracking number respelled into the same "not found", a label bought
// under respellings of one unverifiable address, a game server polled
// while it prepares its spawn at 0%, a player whitelisted under
// respellings of a name that does not exist, an asset purged under
// respellings of its URL while the edge keeps its old copy, a keyword
// search reworded into the same documents, a document coded privileged
// and not by two reviewers in turn, a protocol run under other notations
// of its volume into the same empty tip rack, an HPLC queue polled while
// its column never settles, one compound asked under its synonyms, one
// hire created again respelled into the same duplicate, a directory filter
// reordered into no entries, a laptop request handed to the IT desk in
// other words while the cost centre stays missing, an episode created
// under respellings of one forbidden audio URL, a master re-run with its
// options reordered into the same missing audio stream, a render polled
// while only its clock moves, one target's coordinates in other notations
// below the horizon, one SKU respelled at zero on hand, a valve opened and
// closed by two agents in turn, and an audit re-run with cosmetic options
// into the same violations. Each loop has a legitimate near-miss that
// repeats with progress: a parcel's events growing, an address fixed then
// other labels bought, a server whose spawn loads, several players
// whitelisted, assets purged and fetched fresh, a review set paged, a
// batch of documents coded, a tip rack reset then runs, a sequence whose
// injections advance, several compounds, an employee updated and read
// back, a directory search refined, distinct hand-offs, a season's
// episodes, a master refined until on target, a render that progresses,
// targets tried until one is visible, a count of many SKUs, zones watered
// one by one, an audit after each fix, a server's config read back after
// each change, and a pick list paged by cursor.
//
// A loop is marked as the ninth probe marks them: the fourth call that
// asks again in other words and learns nothing, the third identical poll
// or write, the third round of a pair or ring of calls (or of hand-offs)
// that learns nothing. A tool without readOnlyHint is declared a write,
// as it is through the gateway.
//
// It is written and played with the assistants probe's writer and driver
// (assistruns_test.go).

// s22Known lists the runs whose outcome is not their label's, each with why.
var s22Known = map[string]string{
	// As written, on the guard then (3713f070): 10 of 20 loops detected,
	// none early, 10 missed; none of 22 legit runs refused.
	// Since its fixes, 15 of 20: how long a job has waited, under a key
	// that says so in its unit (waiting_s), is a span that grows as
	// elapsed does (TestWaitedSpanKeys); an argument echoed by a
	// complaint in another case is its echo (TestEchoInAnotherCase); an
	// answer that differs from the last only in what it echoes, word for
	// word, of its own call's values (a query, an address) is the same
	// answer to rephrase (TestEchoedSpellingAnswer); a value is read
	// without the white space around it (TestValueSpacesAround). Left:
	//
	// the carrier's transId, a request's own id under a key that says
	// only "transaction", new with each answer;
	"tracking-number-respelled-not-found": "missed",
	// a console command with and without its leading slash, two
	// spellings only a game server's console takes for one;
	"rcon-whitelist-respelled-unknown-player": "missed",
	// LDAP's messageID, the exchange's number, under a key that names a
	// message (a chat's or a mail's message id is a thing);
	"ldap-filter-reordered-no-entries": "missed",
	// each try a new draft episode (a write that made something), its
	// failure told in a list of errors beside its status;
	"podcast-episode-audio-url-respelled-403": "missed",
	// a render whose "updated" moves while its status stays: when a
	// record changed is the answer's (updated_at stays), not the fetch's.
	"video-render-queued-only-clock-moves": "missed",
}

func TestTwentySecondRuns(t *testing.T) {
	checkAsRuns(t, "twenty-second probe", twentySecondRuns(), 42, s22Known)
}

// s22Hex is a 24-digit hex id made of n.
func s22Hex(n int) string {
	return fmt.Sprintf("%08x%08x%08x", 0x6a1f0000+n*104729, 0x2c00ab00+n*7919, 0x9e3779b1^(n*2654435))
}

// s22Clock is a time of day on the probe's day, n seconds after 17:00.
func s22Clock(n int) string {
	return fmt.Sprintf("2026-12-06T17:%02d:%02d.%03dZ", (n/60)%60, n%60, (n*373)%1000)
}

// s22Track is a UPS tracking answer: the number as asked, its activity.
func s22Track(asked string, n int, status string, acts ...[3]string) obj {
	var as arr
	for _, a := range acts {
		as = append(as, obj{"location": obj{"address": obj{"city": a[0], "countryCode": "US"}}, "status": obj{"description": a[1]}, "date": "20261206", "time": a[2]})
	}
	pkg := obj{"trackingNumber": strings.ToUpper(strings.TrimSpace(asked)), "activity": as, "currentStatus": obj{"description": status}}
	return obj{"trackResponse": obj{"shipment": arr{obj{"inquiryNumber": asked, "package": arr{pkg}}}}, "transId": fmt.Sprintf("txn-%d", 88120033+n*7717), "transactionSrc": "reach"}
}

// s22Docs is a review set's documents, control numbers from..from+n-1,
// rotated by rot.
func s22Docs(from, n, rot int) arr {
	custodians := []string{"J. Alvarez", "M. Chen", "R. Okoye", "S. Patel"}
	var ds arr
	for k := 0; k < n; k++ {
		i := from + (k+rot)%n
		ds = append(ds, obj{"control_number": fmt.Sprintf("ACME-%07d", 4211+i*37), "custodian": custodians[i%4], "date_sent": fmt.Sprintf("2025-%02d-%02d", 1+i%12, 1+i%28), "file_type": []string{"Email", "DOCX", "PDF"}[i%3]})
	}
	return ds
}

// s22Audit is an axe-core result with the violations named.
func s22Audit(n int, url string, violations ...[2]any) obj {
	var vs arr
	for _, v := range violations {
		var nodes arr
		for k := 0; k < v[1].(int); k++ {
			nodes = append(nodes, obj{"target": arr{fmt.Sprintf("#checkout > .row:nth-child(%d)", k+2)}, "impact": "serious"})
		}
		vs = append(vs, obj{"id": v[0], "impact": "serious", "nodes": nodes, "helpUrl": "https://dequeuniversity.com/rules/axe/4.10/" + v[0].(string)})
	}
	if vs == nil {
		vs = arr{}
	}
	return obj{"testEngine": obj{"name": "axe-core", "version": "4.10.2"}, "timestamp": s22Clock(100 + n*67), "url": url, "violations": vs, "passes": 41 + 7 - len(violations), "incomplete": 2}
}

func twentySecondRuns() []*asRun {
	var runs []*asRun
	add := func(w *asw) { runs = append(runs, w.run) }

	// ===================== loops =====================

	// A logistics agent tracks one parcel under respellings of its number;
	// UPS echoes each spelling and knows nothing of it yet.
	{
		w := asRunOf("tracking-number-respelled-not-found", "logistics", true)
		for i, n := range []string{"1Z999AA10123456784", "1z999aa10123456784", "1Z 999 AA1 0123 4567 84", "1Z-999AA1-0123456784", " 1Z999AA10123456784"} {
			if i == 3 {
				w.then()
			}
			w.t("Tracking the parcel.", asOK("ups_track", obj{"inquiryNumber": n, "locale": "en_US"},
				obj{"trackResponse": obj{"shipment": arr{obj{"inquiryNumber": n, "package": arr{}, "warnings": arr{obj{"code": "TW0001", "message": "Tracking Information Not Found"}}}}},
					"transId": fmt.Sprintf("txn-%d", 51200077+i*3313), "transactionSrc": "reach"}))
		}
		add(w)
	}

	// A shipping agent buys a label under respellings of one address the
	// carrier cannot verify.
	{
		w := asRunOf("label-address-respelled-unverifiable", "logistics", true).acc("write", "easypost_create_shipment")
		for i, a := range []obj{
			{"street1": "417 Montgomery Street", "city": "San Francisco", "state": "CA", "zip": "94104"},
			{"street1": "417 Montgomery St", "city": "San Francisco", "state": "CA", "zip": "94104"},
			{"street1": "417 MONTGOMERY ST.", "city": "SAN FRANCISCO", "state": "ca", "zip": "94104"},
			{"street1": "417 Montgomery St", "city": "San Francisco", "state": "CA", "zip": "94104-1101"},
			{"street1": "417 Montgomery Street", "street2": "", "city": "San Francisco", "state": "California", "zip": "94104"},
		} {
			if i == 3 {
				w.then()
			}
			args := obj{"to_address": a, "from_address": obj{"id": "adr_7c1e55b0a3e011f0b8"}, "parcel": obj{"weight": 22.5, "length": 12, "width": 9, "height": 4}, "options": obj{"label_format": "PDF"}}
			w.t("Buying the label.", asFail("easypost_create_shipment", args, "invalid_args", egJSON(obj{"error": obj{"code": "ADDRESS.VERIFY.FAILURE", "message": "Unable to verify address.",
				"errors": arr{obj{"field": "street1", "message": "Address not found"}, obj{"field": "street2", "message": "Suite or unit number is missing for a multi-unit building"}}}})))
		}
		add(w)
	}

	// A game-ops agent polls a server that stays at 0% of its spawn; only
	// its uptime and check time move.
	{
		w := asRunOf("game-server-spawn-stuck-uptime-grows", "gameserver", true)
		for i := 0; i < 5; i++ {
			if i == 2 {
				w.then()
			}
			w.t("Is the server up yet?", asOK("server_status", obj{"server_id": "mc-survival-02"},
				obj{"id": "mc-survival-02", "state": "starting", "players": obj{"online": 0, "max": 40}, "uptime_s": 95 + i*61, "tps": nil,
					"last_log": "[Server thread/INFO]: Preparing spawn area: 0%", "checked_at": s22Clock(200 + i*61)}))
		}
		add(w)
	}

	// A game-ops agent whitelists one player under respellings of a name
	// Mojang does not know.
	{
		w := asRunOf("rcon-whitelist-respelled-unknown-player", "gameserver", true).acc("write", "rcon_command")
		for i, c := range []string{"whitelist add Notch_Jr", "whitelist add notch_jr", "whitelist add  Notch_Jr", "/whitelist add Notch_Jr", "whitelist add Notch_jr"} {
			if i == 3 {
				w.then()
			}
			w.t("Adding the player.", asOK("rcon_command", obj{"server_id": "mc-survival-02", "command": c}, obj{"response": "That player does not exist", "request_id": fmt.Sprintf("rc-%05d", 31007+i*13)}))
		}
		add(w)
	}

	// A web-ops agent purges one asset under respellings of its URL and
	// fetches it: the edge serves the same old copy, its age growing.
	{
		w := asRunOf("cdn-purge-respelled-edge-still-stale", "cdn", true).acc("write", "cdn_purge_url")
		for r, u := range []string{"https://static.shop.example/app.js", "https://static.shop.example/app.js?", "http://static.shop.example/app.js", "https://STATIC.shop.example/app.js"} {
			if r == 2 {
				w.then()
			}
			w.t("Purging the asset.", asOK("cdn_purge_url", obj{"url": u}, obj{"status": "ok", "id": fmt.Sprintf("108-%d-%d", 1796576000+r*97, 4411+r)}))
			w.t("Checking the edge.", asOK("http_head", obj{"url": "https://static.shop.example/app.js"},
				obj{"status": 200, "headers": obj{"x-cache": "HIT, HIT", "age": fmt.Sprint(5400 + r*71), "etag": "\"5f2a-17c9e01\"", "last-modified": "Thu, 03 Dec 2026 08:14:02 GMT",
					"date": fmt.Sprintf("Sun, 06 Dec 2026 17:%02d:%02d GMT", 10+r, r*13%60), "x-served-by": fmt.Sprintf("cache-fra-eddf82%02d-FRA", 30+r*7)}}))
		}
		add(w)
	}

	// A review agent rewords one keyword search; the platform finds the
	// same fourteen documents, ordered otherwise, its query echoed.
	{
		w := asRunOf("ediscovery-search-reworded-same-docs", "ediscovery", true)
		for i, q := range []string{"termination w/5 breach", "breach w/5 termination", "terminat* w/5 breach*", "(termination OR terminate) w/5 breach", "\"breach\" w/5 \"termination\""} {
			if i == 3 {
				w.then()
			}
			w.t("Searching the review set.", asOK("review_search", obj{"workspace": "acme-v-zenith", "query": q, "syntax": "dtsearch"},
				obj{"search_id": 7700 + i*3, "query": q, "hits": 14, "documents": s22Docs(0, 14, i*5), "elapsed_ms": 311 + i*47}))
		}
		add(w)
	}

	// Two reviewers code one document privileged and not privileged in
	// turn.
	{
		w := asRunOf("ediscovery-privilege-coded-back-and-forth", "ediscovery", true).acc("write", "set_coding")
		first, qc := s19As(w, "first_pass"), s19As(w, "qc_review")
		for r := 0; r < 4; r++ {
			if r == 2 {
				first.then()
			}
			first.t("Outside counsel is on the cc line: privileged.", asOK("set_coding", obj{"document": "ACME-0004211", "field": "Privilege", "value": "Privileged - Withhold"},
				obj{"ok": true, "document": "ACME-0004211", "field": "Privilege", "value": "Privileged - Withhold", "audit_id": 99100 + r*2}))
			qc.t("No legal advice is sought in it: not privileged.", asOK("set_coding", obj{"document": "ACME-0004211", "field": "Privilege", "value": "Not Privileged"},
				obj{"ok": true, "document": "ACME-0004211", "field": "Privilege", "value": "Not Privileged", "audit_id": 99101 + r*2}))
		}
		add(w)
	}

	// A lab agent runs one dilution protocol under other notations of its
	// volume; each run stops on the same empty tip rack.
	{
		w := asRunOf("liquid-handler-volume-respelled-out-of-tips", "labauto", true).acc("write", "ot_run_protocol")
		for i, v := range []any{50, "50", 50.0, "50 uL", "50µL"} {
			if i == 3 {
				w.then()
			}
			run := s22Hex(i)[:16]
			w.t("Starting the dilution.", asFail("ot_run_protocol", obj{"protocol": "serial_dilution_v3", "plate": "P-0112", "volume_ul": v, "columns": 12}, "tool_error",
				fmt.Sprintf("Run %s failed at step 3/96: OutOfTipsError: No tips available in tip rack 'opentrons_96_tiprack_300ul' in slot 4. Replace the tip rack and reset tip tracking.", run)))
		}
		add(w)
	}

	// A chemistry agent polls an HPLC queue while its column never
	// settles; only the wait and the heartbeat move.
	{
		w := asRunOf("hplc-queue-waiting-equilibration", "chemistry", true)
		for i := 0; i < 5; i++ {
			if i == 2 {
				w.then()
			}
			w.t("Has the sequence started?", asOK("instrument_queue", obj{"instrument": "HPLC-2"},
				obj{"instrument": "HPLC-2", "state": "Waiting", "reason": "Column equilibration: pressure ripple above 2%", "sequence": "SEQ-20261206-A",
					"injections_done": 0, "injections_total": 12, "waiting_s": 300 + i*240, "heartbeat": s22Clock(900 + i*240)}))
		}
		add(w)
	}

	// A chemistry agent asks one compound's properties under its
	// synonyms; PubChem answers the same compound each time.
	{
		w := asRunOf("pubchem-synonyms-same-compound", "chemistry", true)
		for i, n := range []string{"aspirin", "acetylsalicylic acid", "2-acetoxybenzoic acid", "ASA", "Aspirin"} {
			if i == 3 {
				w.then()
			}
			w.t("Looking up the compound.", asOK("pubchem_properties", obj{"namespace": "name", "identifier": n, "properties": "MolecularFormula,MolecularWeight,IUPACName,XLogP,CanonicalSMILES"},
				obj{"PropertyTable": obj{"Properties": arr{obj{"CID": 2244, "MolecularFormula": "C9H8O4", "MolecularWeight": "180.16", "IUPACName": "2-acetyloxybenzoic acid", "XLogP": 1.2, "CanonicalSMILES": "CC(=O)OC1=CC=CC=C1C(=O)O"}}}}))
		}
		add(w)
	}

	// An onboarding agent creates one hire again under respellings; the
	// HRIS refuses each as a duplicate of the same employee.
	{
		w := asRunOf("hris-hire-respelled-duplicate", "hr", true).acc("write", "hris_create_employee")
		for i, e := range []obj{
			{"firstName": "Priya", "lastName": "Raghunathan", "workEmail": "priya.raghunathan@northwind.example", "hireDate": "2027-01-04", "department": "Data Platform"},
			{"firstName": "Priya", "lastName": "Raghunathan", "workEmail": "Priya.Raghunathan@northwind.example", "hireDate": "2027-01-04", "department": "Data Platform"},
			{"firstName": "priya", "lastName": "Raghunathan ", "workEmail": "priya.raghunathan@northwind.example", "hireDate": "01/04/2027", "department": "Data Platform"},
			{"lastName": "Raghunathan", "firstName": "Priya", "workEmail": "priya.raghunathan@northwind.example", "hireDate": "2027-1-4", "department": "data platform"},
			{"firstName": "Priya", "lastName": "Raghunathan", "workEmail": "PRIYA.RAGHUNATHAN@NORTHWIND.EXAMPLE", "hireDate": "2027-01-04", "department": "Data Platform", "employmentStatus": "Full-Time"},
		} {
			if i == 3 {
				w.then()
			}
			w.t("Creating the employee record.", asFail("hris_create_employee", e, "conflict", "409 Conflict: an employee with work email priya.raghunathan@northwind.example already exists (employee id 4471)"))
		}
		add(w)
	}

	// An IT agent searches the directory with one filter reordered and
	// respelled; it finds no entry each time, its filter echoed.
	{
		w := asRunOf("ldap-filter-reordered-no-entries", "directory", true)
		for i, f := range []string{
			"(&(objectClass=person)(mail=priya.r@northwind.example))",
			"(&(mail=priya.r@northwind.example)(objectClass=person))",
			"(&(objectClass=Person)(mail=Priya.R@northwind.example))",
			"(&(objectclass=person)(|(mail=priya.r@northwind.example)))",
			"(&( objectClass=person )(mail=priya.r@northwind.example))",
		} {
			if i == 3 {
				w.then()
			}
			w.t("Finding her account.", asOK("ldap_search", obj{"base": "ou=people,dc=northwind,dc=example", "scope": "sub", "filter": f, "attributes": arr{"uid", "cn", "mail", "memberOf"}},
				obj{"base": "ou=people,dc=northwind,dc=example", "filter": f, "entries": arr{}, "count": 0, "result": "success", "messageID": 11 + i}))
		}
		add(w)
	}

	// An onboarding lead hands one laptop request to the IT desk in other
	// words; the desk fails on the same missing cost centre each time.
	{
		w := asRunOf("onboarding-laptop-handoff-reworded", "hr", true).acc("write", "it_create_request")
		qs := [][2]string{
			{"Provision a laptop for Priya Raghunathan, starting Jan 4.", "I couldn't open the request: hardware requests need a cost centre, and I don't have one for her."},
			{"Please order and set up a MacBook for new hire Priya Raghunathan (start 2027-01-04).", "The request was refused: a cost centre is required for hardware, and none is on file for Priya."},
			{"Get Priya R. a laptop ready for her first day, January 4th.", "Still blocked: the IT system wants a cost centre for any hardware order."},
			{"Set up new-hire hardware for Priya Raghunathan, start date Jan 4 2027.", "I can't: no cost centre, so the hardware request is rejected."},
		}
		for i, q := range qs {
			if i == 2 {
				w.then()
			}
			w.hand("Asking the IT desk.", "it_desk", q[0], q[1], func(s *asw) {
				s.t("Opening a hardware request.", asFail("it_create_request", obj{"type": "hardware", "requested_for": "Priya Raghunathan", "item": "MacBook Pro 14", "needed_by": "2027-01-04"},
					"invalid_args", "422 Unprocessable Entity: cost_center is required for requests of type hardware"))
			})
		}
		add(w)
	}

	// A podcast agent creates one episode under respellings of its audio
	// URL; each draft fails to fetch it, forbidden.
	{
		w := asRunOf("podcast-episode-audio-url-respelled-403", "podcast", true).acc("write", "create_episode")
		for i, u := range []string{
			"https://media.northwindcast.example/ep42.mp3",
			"https://media.northwindcast.example/ep42.mp3?",
			"https://media.northwindcast.example//ep42.mp3",
			"HTTPS://media.northwindcast.example/ep42.mp3",
			"https://media.northwindcast.example/ep42.mp3#",
		} {
			if i == 3 {
				w.then()
			}
			w.t("Publishing the episode.", asOK("create_episode", obj{"show_id": "northwind-cast", "title": "Ep. 42: Shipping at scale", "audio_url": u, "season": 3, "number": 42},
				obj{"data": obj{"id": fmt.Sprint(889100 + i*7), "type": "episode", "attributes": obj{"title": "Ep. 42: Shipping at scale", "status": "draft", "audio_status": "failed",
					"media_url": nil, "errors": arr{"Could not fetch audio from " + u + ": HTTP 403 Forbidden"}, "created_at": s22Clock(1500 + i*50)}}}))
		}
		add(w)
	}

	// A podcast agent masters one file again with its options reordered
	// and respelled; each production fails on the same missing stream.
	{
		w := asRunOf("audio-master-options-reordered-no-stream", "podcast", true).acc("write", "start_production")
		for i, a := range []obj{
			{"input_file": "ep42_raw.wav", "preset": "podcast-16lufs", "algorithms": obj{"leveler": true, "normloudness": true, "loudnesstarget": -16}},
			{"preset": "podcast-16lufs", "input_file": "ep42_raw.wav", "algorithms": obj{"normloudness": true, "loudnesstarget": -16, "leveler": true}},
			{"input_file": "ep42_raw.wav", "preset": "podcast-16lufs", "algorithms": obj{"leveler": true, "normloudness": true, "loudnesstarget": "-16"}},
			{"input_file": "./ep42_raw.wav", "preset": "podcast-16lufs", "algorithms": obj{"leveler": true, "normloudness": true, "loudnesstarget": -16.0}},
			{"input_file": "ep42_raw.wav", "preset": "podcast-16lufs", "algorithms": obj{"leveler": true, "normloudness": true, "loudnesstarget": -16, "denoise": false}},
		} {
			if i == 3 {
				w.then()
			}
			w.t("Mastering the episode.", asFail("start_production", a, "tool_error",
				fmt.Sprintf("Production %s failed: Audio decoding error: ep42_raw.wav has no audio stream (container WAV, 0 channels, duration 00:00:00)", s22Hex(10 + i)[:22])))
		}
		add(w)
	}

	// A video agent polls a render that stays queued; only its updated
	// clock moves.
	{
		w := asRunOf("video-render-queued-only-clock-moves", "video", true)
		for i := 0; i < 5; i++ {
			if i == 2 {
				w.then()
			}
			w.t("Is the render done?", asOK("render_status", obj{"id": "d2b4a1f0-7c3e-4e55-9a10-5f6b7e8c9d01"},
				obj{"success": true, "message": "OK", "response": obj{"id": "d2b4a1f0-7c3e-4e55-9a10-5f6b7e8c9d01", "owner": "x7k2qq01", "plan": "basic", "status": "queued", "url": "",
					"created": "2026-12-06T17:01:09.114Z", "updated": s22Clock(700 + i*45)}}))
		}
		add(w)
	}

	// An astronomy agent submits one target under other notations of its
	// coordinates; each is refused as never above the altitude limit.
	{
		w := asRunOf("telescope-coords-respelled-below-limit", "astronomy", true).acc("write", "submit_observation")
		for i, c := range [][2]any{{"10:45:03.6", "-59:41:04"}, {"10h45m03.6s", "-59d41m04s"}, {161.265, -59.6844}, {"161.2650", "-59.68444"}, {"10 45 03.6", "-59 41 04"}} {
			if i == 3 {
				w.then()
			}
			w.t("Requesting the observation.", asFail("submit_observation", obj{"target": "Eta Carinae", "ra": c[0], "dec": c[1], "exposure_s": 120, "filter": "Halpha", "site": "ogg", "window": obj{"start": "2026-12-07T05:00:00Z", "end": "2026-12-07T15:00:00Z"}},
				"invalid_args", `{"errors":{"requests":[{"windows":["The target is never visible within the time window: its highest altitude at ogg is -12.3 deg, below the limit of 30 deg"]}]}}`))
		}
		add(w)
	}

	// A warehouse agent asks one SKU's stock under respellings; the
	// answer names the one SKU at zero, its clock moving.
	{
		w := asRunOf("inventory-sku-respelled-zero-on-hand", "warehouse", true)
		for i, s := range []string{"TS-BLK-M", "ts-blk-m", "TS_BLK_M", "TS-BLK-M ", "TSBLKM"} {
			if i == 3 {
				w.then()
			}
			w.t("Checking stock.", asOK("inventory_level", obj{"sku": s, "location": "DC-RENO"},
				obj{"sku": "TS-BLK-M", "description": "Tee, black, M", "location": "DC-RENO", "on_hand": 0, "allocated": 0, "available": 0, "inbound": arr{}, "as_of": s22Clock(1800 + i*20)}))
		}
		add(w)
	}

	// A scheduler opens a zone's valve for its cycle; a frost guard closes
	// it; round they go.
	{
		w := asRunOf("irrigation-valve-opened-closed-two-agents", "agriculture", true).acc("write", "set_valve")
		sched, guard := s19As(w, "scheduler"), s19As(w, "frost_guard")
		for r := 0; r < 4; r++ {
			if r == 2 {
				sched.then()
			}
			sched.t("Zone 3 is due for its 20-minute cycle.", asOK("set_valve", obj{"zone": 3, "state": "open", "duration_min": 20}, obj{"zone": 3, "state": "open", "changed_at": s22Clock(2000 + r*90)}))
			guard.t("Air is at 1.5 °C: closing zone 3 against frost.", asOK("set_valve", obj{"zone": 3, "state": "closed"}, obj{"zone": 3, "state": "closed", "changed_at": s22Clock(2030 + r*90)}))
		}
		add(w)
	}

	// An accessibility agent re-runs one audit with cosmetic changes to
	// its options; the same seven violations come back.
	{
		w := asRunOf("a11y-audit-rerun-cosmetic-options", "accessibility", true)
		vs := [][2]any{{"color-contrast", 4}, {"label", 2}, {"link-name", 1}, {"button-name", 1}, {"image-alt", 3}, {"aria-required-children", 1}, {"select-name", 1}}
		for i, a := range []obj{
			{"url": "https://shop.example/checkout", "runOnly": arr{"wcag2a", "wcag2aa"}},
			{"runOnly": arr{"wcag2aa", "wcag2a"}, "url": "https://shop.example/checkout"},
			{"url": "https://shop.example/checkout/", "runOnly": arr{"wcag2a", "wcag2aa"}},
			{"url": "https://shop.example/checkout", "runOnly": arr{"wcag2a", "wcag2aa"}, "resultTypes": arr{"violations"}},
			{"url": "https://shop.example/checkout", "runOnly": arr{"WCAG2A", "WCAG2AA"}},
		} {
			if i == 3 {
				w.then()
			}
			w.t("Auditing the checkout.", asOK("axe_audit", a, s22Audit(i, a["url"].(string), vs...)))
		}
		add(w)
	}

	// ===================== legit =====================

	// A parcel tracked while it moves: a new scan at each poll.
	{
		w := asRunOf("tracking-polled-events-grow", "logistics", false)
		acts := [][3]string{{"Louisville", "Departed from Facility", "031400"}, {"Oakland", "Arrived at Facility", "094100"}, {"San Francisco", "Out For Delivery Today", "071200"},
			{"San Francisco", "Delivery attempted: business closed", "112000"}, {"San Francisco", "Delivered", "154300"}}
		for i := 1; i <= len(acts); i++ {
			w.t("Where is the parcel?", asOK("ups_track", obj{"inquiryNumber": "1Z999AA10123456784", "locale": "en_US"}, s22Track("1Z999AA10123456784", i, acts[i-1][1], acts[:i]...)))
		}
		add(w)
	}

	// An address fixed with its suite after the carrier's hint, then
	// labels bought for other orders.
	{
		w := asRunOf("label-address-fixed-then-batch", "logistics", false).acc("write", "easypost_create_shipment")
		ship := func(a obj) obj {
			return obj{"to_address": a, "from_address": obj{"id": "adr_7c1e55b0a3e011f0b8"}, "parcel": obj{"weight": 22.5, "length": 12, "width": 9, "height": 4}, "options": obj{"label_format": "PDF"}}
		}
		w.t("Buying the label.", asFail("easypost_create_shipment", ship(obj{"street1": "417 Montgomery Street", "city": "San Francisco", "state": "CA", "zip": "94104"}), "invalid_args",
			egJSON(obj{"error": obj{"code": "ADDRESS.VERIFY.FAILURE", "message": "Unable to verify address.", "errors": arr{obj{"field": "street2", "message": "Suite or unit number is missing for a multi-unit building"}}}})))
		for i, a := range []obj{
			{"street1": "417 Montgomery Street", "street2": "Suite 300", "city": "San Francisco", "state": "CA", "zip": "94104"},
			{"street1": "1 Ferry Building", "street2": "Shop 22", "city": "San Francisco", "state": "CA", "zip": "94111"},
			{"street1": "2200 Mission College Blvd", "city": "Santa Clara", "state": "CA", "zip": "95054"},
			{"street1": "500 W 2nd St", "city": "Austin", "state": "TX", "zip": "78701"},
		} {
			w.t("Buying the label.", asOK("easypost_create_shipment", ship(a), obj{"id": "shp_" + s22Hex(20 + i)[:20], "tracking_code": fmt.Sprintf("9400111899223%09d", 334100+i*7717),
				"postage_label": obj{"label_url": "https://easypost-files.example/files/postage_label/" + s22Hex(30 + i)[:16] + ".pdf"}, "selected_rate": obj{"carrier": "USPS", "service": "GroundAdvantage", "rate": fmt.Sprintf("%.2f", 8.4+float64(i)*1.15)}}))
		}
		add(w)
	}

	// A server whose spawn area loads: the percentage moves, then it runs.
	{
		w := asRunOf("game-server-spawn-loads-then-runs", "gameserver", false)
		for i, p := range []int{12, 47, 83} {
			w.t("Is the server up yet?", asOK("server_status", obj{"server_id": "mc-survival-02"},
				obj{"id": "mc-survival-02", "state": "starting", "players": obj{"online": 0, "max": 40}, "uptime_s": 35 + i*30, "tps": nil,
					"last_log": fmt.Sprintf("[Server thread/INFO]: Preparing spawn area: %d%%", p), "checked_at": s22Clock(200 + i*30)}))
		}
		w.t("Is the server up yet?", asOK("server_status", obj{"server_id": "mc-survival-02"},
			obj{"id": "mc-survival-02", "state": "running", "players": obj{"online": 0, "max": 40}, "uptime_s": 125, "tps": 20.0, "last_log": "[Server thread/INFO]: Done (41.872s)! For help, type \"help\"", "checked_at": s22Clock(290)}))
		add(w)
	}

	// A server's whitelist filled player by player; one was on it already.
	{
		w := asRunOf("rcon-whitelist-several-players", "gameserver", false).acc("write", "rcon_command")
		for i, p := range []string{"Kestrel_77", "mossyboots", "Notch_Jr2", "LunaTide", "ironwick", "Pebble_Pal"} {
			res := "Added " + p + " to the whitelist"
			if p == "LunaTide" {
				res = "Player is already whitelisted"
			}
			w.t("Adding the next player.", asOK("rcon_command", obj{"server_id": "mc-survival-02", "command": "whitelist add " + p}, obj{"response": res, "request_id": fmt.Sprintf("rc-%05d", 32001+i*11)}))
		}
		add(w)
	}

	// Assets purged one by one, each fetched fresh from the origin after.
	{
		w := asRunOf("cdn-assets-purged-then-fresh", "cdn", false).acc("write", "cdn_purge_url")
		for r, a := range []string{"app.js", "app.css", "vendor.js", "fonts/inter.woff2"} {
			u := "https://static.shop.example/" + a
			w.t("Purging "+a+".", asOK("cdn_purge_url", obj{"url": u}, obj{"status": "ok", "id": fmt.Sprintf("108-%d-%d", 1796576000+r*97, 5511+r)}))
			w.t("Checking the edge.", asOK("http_head", obj{"url": u},
				obj{"status": 200, "headers": obj{"x-cache": "MISS, MISS", "age": "0", "etag": fmt.Sprintf("\"6a%02x-%07x\"", 17+r, 0x18ad0e1+r*911), "last-modified": "Sun, 06 Dec 2026 16:58:40 GMT",
					"date": fmt.Sprintf("Sun, 06 Dec 2026 17:%02d:%02d GMT", 20+r, r*13%60), "x-served-by": fmt.Sprintf("cache-fra-eddf82%02d-FRA", 30+r*7)}}))
		}
		add(w)
	}

	// A review set paged fifty documents at a time.
	{
		w := asRunOf("ediscovery-review-set-paged", "ediscovery", false)
		for pg := 0; pg < 5; pg++ {
			n := 50
			if pg == 4 {
				n = 13
			}
			w.t("Next page of the review set.", asOK("review_search", obj{"workspace": "acme-v-zenith", "query": "termination w/5 breach", "syntax": "dtsearch", "start": pg * 50, "rows": 50},
				obj{"search_id": 7800, "query": "termination w/5 breach", "hits": 213, "start": pg * 50, "documents": s22Docs(pg*50, n, 0), "elapsed_ms": 290 + pg*13}))
		}
		add(w)
	}

	// A batch of documents coded privileged, one by one.
	{
		w := asRunOf("ediscovery-privilege-batch", "ediscovery", false).acc("write", "set_coding")
		for i := 0; i < 8; i++ {
			doc := fmt.Sprintf("ACME-%07d", 4211+i*37)
			w.t("Coding the next document.", asOK("set_coding", obj{"document": doc, "field": "Privilege", "value": "Privileged - Withhold"},
				obj{"ok": true, "document": doc, "field": "Privilege", "value": "Privileged - Withhold", "audit_id": 99200 + i}))
		}
		add(w)
	}

	// Out of tips: the rack replaced and its tracking reset, the run goes;
	// then the next plate.
	{
		w := asRunOf("liquid-handler-tips-reset-then-runs", "labauto", false).acc("write", "ot_run_protocol", "ot_reset_tips")
		args := func(plate string) obj {
			return obj{"protocol": "serial_dilution_v3", "plate": plate, "volume_ul": 50, "columns": 12}
		}
		w.t("Starting the dilution.", asFail("ot_run_protocol", args("P-0112"), "tool_error",
			"Run 6a1f00009c2e11f0 failed at step 3/96: OutOfTipsError: No tips available in tip rack 'opentrons_96_tiprack_300ul' in slot 4. Replace the tip rack and reset tip tracking."))
		w.t("A fresh rack is in slot 4; resetting.", asOK("ot_reset_tips", obj{"slot": 4}, obj{"slot": 4, "labware": "opentrons_96_tiprack_300ul", "tips_available": 96}))
		w.t("Starting the dilution.", asOK("ot_run_protocol", args("P-0112"), obj{"run_id": "7b20e1c09c2e11f0", "status": "succeeded", "steps": 96, "tips_used": 12, "duration_s": 1411}))
		w.t("Next plate.", asOK("ot_run_protocol", args("P-0113"), obj{"run_id": "7b20e1c09c2e11f1", "status": "succeeded", "steps": 96, "tips_used": 12, "duration_s": 1398}))
		add(w)
	}

	// A sequence whose injections advance at each poll.
	{
		w := asRunOf("hplc-sequence-advances", "chemistry", false)
		for i := 0; i < 6; i++ {
			w.t("How far is the sequence?", asOK("instrument_queue", obj{"instrument": "HPLC-2"},
				obj{"instrument": "HPLC-2", "state": "Running", "sequence": "SEQ-20261206-A", "injections_done": i + 1, "injections_total": 12,
					"current_sample": fmt.Sprintf("S-%03d", 101+i), "heartbeat": s22Clock(900 + i*240)}))
		}
		add(w)
	}

	// Several compounds' properties, one by one.
	{
		w := asRunOf("pubchem-several-compounds", "chemistry", false)
		for _, c := range [][5]string{{"aspirin", "2244", "C9H8O4", "180.16", "1.2"}, {"ibuprofen", "3672", "C13H18O2", "206.28", "3.5"}, {"caffeine", "2519", "C8H10N4O2", "194.19", "-0.1"},
			{"paracetamol", "1983", "C8H9NO2", "151.16", "0.5"}, {"naproxen", "156391", "C14H14O3", "230.26", "3.2"}} {
			w.t("Looking up the next compound.", asOK("pubchem_properties", obj{"namespace": "name", "identifier": c[0], "properties": "MolecularFormula,MolecularWeight,XLogP"},
				obj{"PropertyTable": obj{"Properties": arr{obj{"CID": c[1], "MolecularFormula": c[2], "MolecularWeight": c[3], "XLogP": c[4]}}}}))
		}
		add(w)
	}

	// An employee record updated field by field, read back after each.
	{
		w := asRunOf("hris-employee-updated-read-back", "hr", false).acc("write", "hris_update_employee")
		rec := obj{"id": 4471, "firstName": "Priya", "lastName": "Raghunathan", "workEmail": "priya.raghunathan@northwind.example", "department": "Data Platform"}
		for i, f := range [][2]string{{"jobTitle", "Senior Data Engineer"}, {"supervisorEId", "3120"}, {"location", "Remote - Lisbon"}} {
			w.t("Setting "+f[0]+".", asOK("hris_update_employee", obj{"id": 4471, "fields": obj{f[0]: f[1]}}, obj{"status": 200, "updated": arr{f[0]}}))
			rec[f[0]] = f[1]
			cp := obj{}
			for k, v := range rec {
				cp[k] = v
			}
			cp["lastChanged"] = s22Clock(2400 + i*40)
			w.t("Reading the record back.", asOK("hris_get_employee", obj{"id": 4471}, cp))
		}
		add(w)
	}

	// A directory search that finds nothing by mail, then refined by name.
	{
		w := asRunOf("ldap-search-refined-by-name", "directory", false)
		person := func(uid, given string) obj {
			return obj{"dn": "uid=" + uid + ",ou=people,dc=northwind,dc=example", "uid": uid, "cn": given + " Raghunathan", "mail": uid + "@northwind.example"}
		}
		for _, s := range []struct {
			f  string
			es arr
		}{
			{"(&(objectClass=person)(mail=priya.r@northwind.example))", arr{}},
			{"(&(objectClass=person)(sn=Raghunathan))", arr{person("arjun.raghunathan", "Arjun"), person("priya.raghunathan", "Priya"), person("meena.raghunathan", "Meena")}},
			{"(&(objectClass=person)(sn=Raghunathan)(givenName=Priya))", arr{person("priya.raghunathan", "Priya")}},
		} {
			w.t("Finding her account.", asOK("ldap_search", obj{"base": "ou=people,dc=northwind,dc=example", "scope": "sub", "filter": s.f, "attributes": arr{"uid", "cn", "mail"}},
				obj{"base": "ou=people,dc=northwind,dc=example", "filter": s.f, "entries": s.es, "count": len(s.es), "result": "success"}))
		}
		w.t("Her groups.", asOK("ldap_search", obj{"base": "uid=priya.raghunathan,ou=people,dc=northwind,dc=example", "scope": "base", "filter": "(objectClass=*)", "attributes": arr{"memberOf"}},
			obj{"entries": arr{obj{"memberOf": arr{"cn=data-platform,ou=groups,dc=northwind,dc=example"}}}, "count": 1, "result": "success"}))
		add(w)
	}

	// An onboarding lead hands distinct tasks to distinct desks; the IT
	// desk hands the purchase on to procurement.
	{
		w := asRunOf("onboarding-distinct-handoffs", "hr", false).acc("write", "it_create_request", "po_create", "badge_issue", "payroll_enroll")
		w.hand("Asking the IT desk.", "it_desk", "Provision a MacBook Pro 14 for Priya Raghunathan, cost centre CC-4410, needed by 2027-01-04.", "Request IT-88213 opened; procurement ordered it (PO-5521).", func(s *asw) {
			s.t("Opening a hardware request.", asOK("it_create_request", obj{"type": "hardware", "requested_for": "Priya Raghunathan", "item": "MacBook Pro 14", "cost_center": "CC-4410", "needed_by": "2027-01-04"}, obj{"id": "IT-88213", "state": "new"}))
			s.hand("Asking procurement.", "procurement", "Order one MacBook Pro 14 for request IT-88213 on cost centre CC-4410.", "PO-5521 placed, delivery 2026-12-18.", func(p *asw) {
				p.t("Placing the order.", asOK("po_create", obj{"vendor": "Apple Business", "item": "MBP14-M4-16-512", "qty": 1, "cost_center": "CC-4410", "ref": "IT-88213"}, obj{"po": "PO-5521", "eta": "2026-12-18"}))
			})
		})
		w.hand("Asking facilities.", "facilities", "Issue a building badge for Priya Raghunathan, Lisbon office, from 2027-01-04.", "Badge B-20931 issued.", func(s *asw) {
			s.t("Issuing the badge.", asOK("badge_issue", obj{"name": "Priya Raghunathan", "site": "LIS-1", "valid_from": "2027-01-04"}, obj{"badge": "B-20931", "status": "active"}))
		})
		w.hand("Asking payroll.", "payroll", "Enrol employee 4471 in the Portuguese payroll from January.", "Enrolled in PT payroll, first run 2027-01-28.", func(s *asw) {
			s.t("Enrolling.", asOK("payroll_enroll", obj{"employee_id": 4471, "entity": "Northwind PT Lda", "start": "2027-01-01"}, obj{"ok": true, "first_run": "2027-01-28"}))
		})
		add(w)
	}

	// A season's episodes created one by one.
	{
		w := asRunOf("podcast-season-episodes-created", "podcast", false).acc("write", "create_episode")
		for i, t := range []string{"Pallets and patience", "Cross-docking 101", "The last mile", "Cold chain stories", "Peak season"} {
			n := 37 + i
			u := fmt.Sprintf("https://media.northwindcast.example/ep%d.mp3", n)
			w.t("Publishing the next episode.", asOK("create_episode", obj{"show_id": "northwind-cast", "title": fmt.Sprintf("Ep. %d: %s", n, t), "audio_url": u, "season": 3, "number": n},
				obj{"data": obj{"id": fmt.Sprint(888900 + i*7), "type": "episode", "attributes": obj{"title": fmt.Sprintf("Ep. %d: %s", n, t), "status": "draft", "audio_status": "processed",
					"media_url": u, "errors": arr{}, "created_at": s22Clock(1300 + i*50)}}}))
		}
		add(w)
	}

	// A master refined until it is on target: each production's options
	// change and so does its loudness.
	{
		w := asRunOf("audio-master-refined-to-target", "podcast", false).acc("write", "start_production")
		for i, s := range []struct {
			alg  obj
			lufs float64
			note string
		}{
			{obj{"leveler": true, "normloudness": true, "loudnesstarget": -16}, -19.8, "True peak limit reached before target loudness"},
			{obj{"leveler": true, "normloudness": true, "loudnesstarget": -16, "maxpeak": -2}, -17.4, "True peak limit reached before target loudness"},
			{obj{"leveler": true, "normloudness": true, "loudnesstarget": -16, "maxpeak": -1, "levelerstrength": 120}, -16.1, ""},
		} {
			w.t("Mastering the episode.", asOK("start_production", obj{"input_file": "ep42_fixed.wav", "preset": "podcast-16lufs", "algorithms": s.alg},
				obj{"uuid": s22Hex(40 + i)[:22], "status": "Done", "statistics": obj{"integrated_loudness_lufs": s.lufs, "true_peak_db": -1.0, "warning": s.note}}))
		}
		add(w)
	}

	// A render that progresses at each poll, then is done.
	{
		w := asRunOf("video-render-progresses", "video", false)
		for i, s := range [][2]any{{"queued", 0}, {"fetching", 0}, {"rendering", 35}, {"rendering", 80}, {"saving", 100}, {"done", 100}} {
			r := obj{"id": "d2b4a1f0-7c3e-4e55-9a10-5f6b7e8c9d01", "owner": "x7k2qq01", "plan": "basic", "status": s[0], "progress": s[1], "url": "",
				"created": "2026-12-06T17:01:09.114Z", "updated": s22Clock(700 + i*45)}
			if s[0] == "done" {
				r["url"] = "https://cdn.render.example/x7k2qq01/d2b4a1f0-7c3e-4e55-9a10-5f6b7e8c9d01.mp4"
			}
			w.t("Is the render done?", asOK("render_status", obj{"id": "d2b4a1f0-7c3e-4e55-9a10-5f6b7e8c9d01"}, obj{"success": true, "message": "OK", "response": r}))
		}
		add(w)
	}

	// Targets tried until one is visible tonight, then two more queued.
	{
		w := asRunOf("telescope-targets-until-visible", "astronomy", false).acc("write", "submit_observation")
		sub := func(target string, ra, dec any) obj {
			return obj{"target": target, "ra": ra, "dec": dec, "exposure_s": 120, "filter": "Halpha", "site": "ogg", "window": obj{"start": "2026-12-07T05:00:00Z", "end": "2026-12-07T15:00:00Z"}}
		}
		w.t("Requesting the observation.", asFail("submit_observation", sub("Eta Carinae", "10:45:03.6", "-59:41:04"), "invalid_args",
			`{"errors":{"requests":[{"windows":["The target is never visible within the time window: its highest altitude at ogg is -12.3 deg, below the limit of 30 deg"]}]}}`))
		w.t("Too far south; the Carina nebula's neighbour is no better. Trying the Orion nebula.", asOK("submit_observation", sub("M42", "05:35:17.3", "-05:23:28"),
			obj{"id": 1904411, "state": "PENDING", "requests": arr{obj{"id": 3390017, "state": "PENDING", "max_airmass": 1.6}}}))
		w.t("And the Rosette.", asOK("submit_observation", sub("NGC 2244", "06:31:55", "+04:56:30"), obj{"id": 1904412, "state": "PENDING", "requests": arr{obj{"id": 3390018, "state": "PENDING", "max_airmass": 1.6}}}))
		w.t("And the Horsehead.", asOK("submit_observation", sub("B33", "05:40:59", "-02:27:30"), obj{"id": 1904413, "state": "PENDING", "requests": arr{obj{"id": 3390019, "state": "PENDING", "max_airmass": 1.6}}}))
		add(w)
	}

	// Stock counted SKU by SKU; several are out, answered alike.
	{
		w := asRunOf("inventory-many-skus", "warehouse", false)
		for i, s := range []string{"TS-BLK-S", "TS-BLK-M", "TS-BLK-L", "TS-WHT-S", "TS-WHT-M", "TS-WHT-L", "HD-GRY-M", "HD-GRY-L"} {
			on := []int{14, 0, 0, 31, 0, 8, 0, 22}[i]
			w.t("Checking stock.", asOK("inventory_level", obj{"sku": s, "location": "DC-RENO"},
				obj{"sku": s, "location": "DC-RENO", "on_hand": on, "allocated": 0, "available": on, "inbound": arr{}, "as_of": s22Clock(1800 + i*20)}))
		}
		add(w)
	}

	// Zones watered one by one: opened, the soil read as it wets, closed.
	{
		w := asRunOf("irrigation-zones-one-by-one", "agriculture", false).acc("write", "set_valve")
		for z := 1; z <= 4; z++ {
			w.t(fmt.Sprintf("Watering zone %d.", z), asOK("set_valve", obj{"zone": z, "state": "open", "duration_min": 20}, obj{"zone": z, "state": "open", "changed_at": s22Clock(2000 + z*300)}))
			w.t("Soil moisture?", asOK("soil_moisture", obj{"zone": z}, obj{"zone": z, "vwc_percent": 18.5 + float64(z)*1.3, "read_at": s22Clock(2000 + z*300 + 120)}))
			w.t("Soil moisture?", asOK("soil_moisture", obj{"zone": z}, obj{"zone": z, "vwc_percent": 27.0 + float64(z)*0.9, "read_at": s22Clock(2000 + z*300 + 240)}))
			w.t("Closing it.", asOK("set_valve", obj{"zone": z, "state": "closed"}, obj{"zone": z, "state": "closed", "changed_at": s22Clock(2000 + z*300 + 250)}))
		}
		add(w)
	}

	// An audit after each fix, with fewer violations each time.
	{
		w := asRunOf("a11y-audit-after-each-fix", "accessibility", false).acc("write", "edit_file")
		all := [][2]any{{"color-contrast", 4}, {"label", 2}, {"link-name", 1}, {"button-name", 1}, {"image-alt", 3}, {"aria-required-children", 1}, {"select-name", 1}}
		audit := obj{"url": "https://shop.example/checkout", "runOnly": arr{"wcag2a", "wcag2aa"}}
		for i, left := range []int{7, 4, 1, 0} {
			w.t("Auditing the checkout.", asOK("axe_audit", audit, s22Audit(i, "https://shop.example/checkout", all[7-left:]...)))
			if left > 0 {
				w.t("Fixing what it found.", asOK("edit_file", obj{"path": fmt.Sprintf("src/checkout/part%d.tsx", i), "old": "<input", "new": "<input aria-label=\"…\""}, obj{"ok": true, "replacements": 3 - i%2}))
			}
		}
		add(w)
	}

	// A server's settings changed one by one, read back after each change.
	{
		w := asRunOf("game-server-config-read-after-writes", "gameserver", false).acc("write", "set_property")
		props := obj{"max-players": "20", "motd": "A Minecraft Server", "difficulty": "easy", "view-distance": "10"}
		for i, p := range [][2]string{{"max-players", "40"}, {"motd", "Northwind survival, season 4"}, {"difficulty", "hard"}} {
			w.t("Setting "+p[0]+".", asOK("set_property", obj{"server_id": "mc-survival-02", "key": p[0], "value": p[1]}, obj{"ok": true, "restart_required": true}))
			props[p[0]] = p[1]
			var lines []string
			for _, k := range []string{"difficulty", "max-players", "motd", "view-distance"} {
				lines = append(lines, k+"="+props[k].(string))
			}
			w.t("Reading server.properties back.", asOK("read_file", obj{"server_id": "mc-survival-02", "path": "server.properties"},
				obj{"content": fmt.Sprintf("#Minecraft server properties\n#%s\n", s22Clock(2600+i*30)) + strings.Join(lines, "\n") + "\n"}))
		}
		add(w)
	}

	// A wave's pick list paged by its cursor.
	{
		w := asRunOf("pick-list-paged-by-cursor", "warehouse", false)
		cursor := ""
		for pg := 0; pg < 5; pg++ {
			var picks arr
			for k := 0; k < 25; k++ {
				n := pg*25 + k
				picks = append(picks, obj{"order": fmt.Sprintf("SO-%06d", 771000+n*3), "sku": []string{"TS-BLK-S", "TS-WHT-L", "HD-GRY-L"}[n%3], "bin": fmt.Sprintf("A-%02d-%d", 1+n%40, 1+n%5), "qty": 1 + n%3})
			}
			next := fmt.Sprintf("eyJ3YXZlIjoiVzEyMDYtMDMiLCJhZnRlciI6%d", 771000+(pg+1)*75)
			if pg == 4 {
				next = ""
			}
			args := obj{"wave": "W1206-03", "limit": 25}
			if cursor != "" {
				args["cursor"] = cursor
			}
			w.t("Next page of picks.", asOK("wms_pick_list", args, obj{"wave": "W1206-03", "picks": picks, "next_cursor": next}))
			cursor = next
		}
		add(w)
	}

	return runs
}
