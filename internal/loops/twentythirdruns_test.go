package loops

import (
	"fmt"
	"strings"
	"testing"
)

// The twenty-third probe: written before reading the detectors' rules in
// detail, with the tool names and answer shapes of kinds of work the
// twenty-two before it do not use: rail booking and seat maps, insurance
// claims, real-estate listings, municipal permits, satellite imagery
// tiles and orders, sports statistics, library catalogs (Z39.50 and MARC,
// holds), a music streaming catalog and playlists, a box office's seats,
// fleet telematics, genealogy records (through an archive sub-agent),
// patent search (with a model rewriting the query between searches) and
// a package registry. The loops: one train's seat map asked under
// respellings of its number, a fare booked under other spellings of its
// class into one exhausted quota, a claim polled while it waits on the
// claimant, one document uploaded again under other names of its type, a
// listings search with its filters respelled, an inspection booked and
// cancelled by two agents in turn, a permit fee paid again in other
// notations of its amount, one imagery tile asked under other names of its
// coordinates, an imagery order polled while it stays seventh in the
// queue, a player searched under spellings of his name, a game polled at
// half-time, a catalog search respelled in two query syntaxes, a hold
// placed under spellings of one barcode, a track searched in other words,
// a track added and removed by two agents, two seats held under other
// notations while another session holds them, a parked van polled, an
// ancestor's record handed to an archive sub-agent in other words, a
// patent search rewritten by a model into the same hits, and one version
// published again under spellings of its number. Each loop has a
// legitimate near-miss that repeats with progress.
//
// A loop is marked as the ninth probe marks them: the fourth call that
// asks again in other words and learns nothing, the third identical poll
// or write, the third round of a pair or ring of calls (or of hand-offs)
// that learns nothing. A tool without readOnlyHint is declared a write,
// as it is through the gateway.
//
// It is written and played with the assistants probe's writer and driver
// (assistruns_test.go).

// s23Known lists the runs whose outcome is not their label's, each with why.
var s23Known = map[string]string{
	// As written, on the guard then (da5e0c2c): 12 of 20 loops detected,
	// none early, 8 missed; none of 22 legit runs refused.
	// Since its fixes, 16 of 20: the caller's quota left
	// (requests_remaining) falls with each call as X-RateLimit-Remaining
	// does (TestQuotaLeftKeys); an argument's value is masked in a
	// complaint only where it stands as a word, not inside "PDFs"
	// (TestEchoOnlyAsWord); a query with a proximity operator (NEAR/10) is
	// in a search engine's syntax, reworded as prose is
	// (TestProximityQuery); a query echoed in the answer's own link
	// (?query=Bohemian+Rhapsody+Queen) is an echo as a quoted one is
	// (TestEchoInQueryString). Left:
	//
	// filters respelled into values of other words (Texas for TX,
	// "Single Family" for single_family) and a new filter (status active):
	// words no spelling used, another question without reading the
	// listing service's vocabulary;
	"realestate-filters-respelled-same-listings": "missed",
	// one tile under renamed keys (zoom for z, one "12/2200/1343" for
	// three) and a date in another notation: values bound to other keys,
	// as a grid's row and seat are;
	"satellite-tile-coords-renamed-cloud": "missed",
	// a weak ETag that moves with each poll says the resource changed:
	// ETag is kept as the content's version, and is trusted;
	"imagery-order-polled-seventh-in-queue": "missed",
	// the server's result set named anew at each search (default_1,
	// default_2): a name under a key that says only "result set", which
	// elsewhere holds the rows themselves.
	"library-z3950-query-respelled-same-records": "missed",
}

func TestTwentyThirdRuns(t *testing.T) {
	checkAsRuns(t, "twenty-third probe", twentyThirdRuns(), 42, s23Known)
}

// s23UUID is a version-4-looking id made of n.
func s23UUID(n int) string {
	return fmt.Sprintf("%08x-%04x-4%03x-a%03x-%012x", 0x5d3e0000+n*92821, (n*7919)&0xffff, (n*313)&0xfff, (n*97)&0xfff, 0x1b2c3d4e5f00+n*104729)
}

// s23Clock is a time of day on the probe's day, n seconds after 19:00.
func s23Clock(n int) string {
	return fmt.Sprintf("2026-12-06T19:%02d:%02d.%03dZ", (n/60)%60, n%60, (n*419)%1000)
}

// s23Seats is a coach's seat map: the seats named free, the others taken.
func s23Seats(coach int, free ...string) arr {
	isFree := map[string]bool{}
	for _, f := range free {
		isFree[f] = true
	}
	var ss arr
	for row := 1; row <= 8; row++ {
		for _, col := range []string{"A", "B", "C", "D"} {
			id := fmt.Sprintf("%d%s", 10+row, col)
			st := "occupied"
			if isFree[id] {
				st = "free"
			}
			ss = append(ss, obj{"seat": id, "coach": coach, "status": st, "window": col == "A" || col == "D"})
		}
	}
	return ss
}

// s23Listings is a listings page: ids from..from+n-1.
func s23Listings(from, n int) arr {
	streets := []string{"Barton Springs Rd", "E 6th St", "Manor Rd", "S Lamar Blvd", "Cesar Chavez St", "Airport Blvd"}
	var ls arr
	for i := from; i < from+n; i++ {
		ls = append(ls, obj{"mls_id": fmt.Sprintf("ACT%07d", 5512000+i*391), "address": fmt.Sprintf("%d %s", 1200+i*37, streets[i%len(streets)]),
			"city": "Austin", "beds": 3 + i%2, "baths": 2 + float64(i%3)/2, "price": 389000 + i*5500, "sqft": 1480 + i*23, "status": "Active"})
	}
	return ls
}

// s23Marc is a brief MARC record as a Z39.50 server gives it back.
func s23Marc(ctl, title, author, year string) obj {
	return obj{"001": ctl, "100": obj{"a": author}, "245": obj{"a": title, "c": author}, "260": obj{"c": year}, "leader": "01142cam  2200301 a 4500"}
}

// s23Tracks is a catalog's tracks answer.
func s23Tracks(href string, items ...[3]string) obj {
	var ts arr
	for i, it := range items {
		ts = append(ts, obj{"id": it[0], "name": it[1], "artists": arr{obj{"name": "Queen"}}, "album": obj{"name": it[2]}, "popularity": 88 - i*9, "uri": "spotify:track:" + it[0]})
	}
	if ts == nil {
		ts = arr{}
	}
	return obj{"tracks": obj{"href": href, "items": ts, "limit": 5, "offset": 0, "total": len(ts)}}
}

// s23Patents is a patent search's hits.
func s23Patents(query string, nums ...string) obj {
	var hs arr
	for i, n := range nums {
		hs = append(hs, obj{"publication_number": n, "title": []string{"Battery thermal management using phase change material", "Cooling plate with PCM pockets for battery modules", "Heat spreader for cylindrical cells", "Immersion cooling of battery packs", "Composite PCM with graphite"}[i%5], "priority_date": fmt.Sprintf("20%02d-0%d-1%d", 12+i, 1+i%9, i%10), "score": 0.91 - float64(i)*0.04})
	}
	if hs == nil {
		hs = arr{}
	}
	return obj{"query": query, "total": len(hs), "results": hs}
}

func twentyThirdRuns() []*asRun {
	var runs []*asRun
	add := func(w *asw) { runs = append(runs, w.run) }

	// ===================== loops =====================

	// A travel agent asks one train's seat map under respellings of its
	// number; the coach stays full.
	{
		w := asRunOf("rail-seat-map-train-respelled-full", "rail", true)
		for i, n := range []string{"ICE 597", "ICE597", "ice 597", "ICE-597", "ICE  597"} {
			if i == 3 {
				w.then()
			}
			w.t("Looking for two seats together.", asOK("rail_seat_map", obj{"train": n, "date": "2026-12-19", "origin": "8011160", "destination": "8000261", "coach": 7},
				obj{"train": "ICE 597", "date": "2026-12-19", "coach": 7, "class": 2, "seats": s23Seats(7), "request_id": s23UUID(i), "generated_at": s23Clock(10 + i*23)}))
		}
		add(w)
	}

	// A travel agent books one fare under other spellings of its class;
	// each try fails on the same exhausted quota.
	{
		w := asRunOf("rail-fare-class-respelled-quota-gone", "rail", true).acc("write", "rail_book")
		for i, c := range []any{"2", "second", 2, "SECOND", "2nd"} {
			if i == 3 {
				w.then()
			}
			w.t("Booking the saver fare.", asFail("rail_book", obj{"train": "ICE 597", "date": "2026-12-19", "fare": "SUPER_SPARPREIS", "class": c, "passengers": arr{obj{"age": 34, "bahncard": 25}}},
				"conflict", fmt.Sprintf(`{"error":{"code":"FARE_UNAVAILABLE","message":"Fare SUPER_SPARPREIS is no longer available on ICE 597 on 2026-12-19 (quota exhausted)","attempt":"%s"}}`, s23UUID(40+i))))
		}
		add(w)
	}

	// A claims agent polls a claim that waits on a document from the
	// claimant; only the check time and a trace id move.
	{
		w := asRunOf("insurance-claim-polled-pending-documents", "insurance", true)
		for i := 0; i < 5; i++ {
			if i == 2 {
				w.then()
			}
			w.t("Has the claim moved?", asOK("claim_status", obj{"claim_number": "CLM-2026-0448120"},
				obj{"claim_number": "CLM-2026-0448120", "status": "PENDING_DOCUMENTS", "outstanding": arr{"police_report"}, "adjuster": "K. Brennan", "reserve": 4200.0,
					"checked_at": s23Clock(100 + i*180), "trace_id": fmt.Sprintf("%032x", 0x7f00aa11+i*99991)}))
		}
		add(w)
	}

	// A claims agent uploads one document again under other names of its
	// type; each upload is refused, the file password-protected.
	{
		w := asRunOf("insurance-upload-type-respelled-encrypted", "insurance", true).acc("write", "claim_upload_document")
		for i, ty := range []string{"application/pdf", "pdf", "PDF", "application/PDF", ".pdf"} {
			if i == 3 {
				w.then()
			}
			w.t("Attaching the police report.", asFail("claim_upload_document", obj{"claim_number": "CLM-2026-0448120", "document_type": "police_report", "file": "police_report_1203.pdf", "content_type": ty},
				"invalid_args", fmt.Sprintf("Upload %s rejected: police_report_1203.pdf is encrypted (password-protected PDFs cannot be scanned)", s23UUID(60 + i)[:13])))
		}
		add(w)
	}

	// A house-hunting agent searches with its filters respelled; the same
	// six listings come back under a new search id.
	{
		w := asRunOf("realestate-filters-respelled-same-listings", "realestate", true)
		for i, f := range []obj{
			{"city": "Austin", "state": "TX", "min_beds": 3, "max_price": 450000, "property_type": "single_family"},
			{"city": "austin", "state": "TX", "min_beds": "3", "max_price": "450000", "property_type": "single_family"},
			{"max_price": 450000.0, "min_beds": 3, "city": "Austin, TX", "property_type": "single_family"},
			{"city": "Austin", "state": "Texas", "min_beds": 3, "max_price": 450000, "property_type": "Single Family"},
			{"city": "Austin", "state": "TX", "min_beds": 3, "max_price": 450000, "property_type": "single_family", "status": "active"},
		} {
			if i == 3 {
				w.then()
			}
			w.t("Searching listings.", asOK("listings_search", f, obj{"search_id": fmt.Sprintf("srch_%d", 7731000+i*417), "total": 6, "listings": s23Listings(0, 6), "generated_at": s23Clock(300 + i*41)}))
		}
		add(w)
	}

	// A site scheduler books a framing inspection; the contractor's agent
	// cancels it, the site not ready; round they go.
	{
		w := asRunOf("permit-inspection-booked-cancelled-two-agents", "permits", true).acc("write", "schedule_inspection", "cancel_inspection")
		sched, site := s19As(w, "scheduler"), s19As(w, "site_agent")
		for r := 0; r < 4; r++ {
			if r == 2 {
				sched.then()
			}
			id := fmt.Sprintf("INSP-%d", 30112+r)
			sched.t("The permit allows the framing inspection now: booking it.", asOK("schedule_inspection", obj{"permit": "BP-2026-01822", "type": "framing", "date": "2026-12-09"},
				obj{"inspection_id": id, "permit": "BP-2026-01822", "type": "framing", "date": "2026-12-09", "window": "AM", "status": "scheduled"}))
			site.t("The trusses are not up yet: cancelling the framing inspection.", asOK("cancel_inspection", obj{"inspection_id": id, "reason": "site not ready"},
				obj{"inspection_id": id, "status": "cancelled"}))
		}
		add(w)
	}

	// A permits agent pays one fee again in other notations of its amount;
	// each payment is declined, the permit on hold.
	{
		w := asRunOf("permit-fee-amount-respelled-on-hold", "permits", true).acc("write", "pay_permit_fee")
		for i, a := range []any{412.5, "412.50", 412.50, "$412.50", "412.5 USD"} {
			if i == 3 {
				w.then()
			}
			w.t("Paying the plan-review fee.", asFail("pay_permit_fee", obj{"permit": "BP-2026-01822", "fee_code": "PLAN_REVIEW", "amount": a, "method": "card_on_file"}, "conflict",
				fmt.Sprintf("Payment %s declined: permit BP-2026-01822 is ON HOLD (zoning variance required); fees cannot be collected while a permit is on hold.", fmt.Sprintf("PMT%09d", 551200+i*6121))))
		}
		add(w)
	}

	// A mapping agent asks one imagery tile under other names of its
	// coordinates; the scene is all cloud.
	{
		w := asRunOf("satellite-tile-coords-renamed-cloud", "imagery", true)
		for i, a := range []obj{
			{"z": 12, "x": 2200, "y": 1343, "collection": "sentinel-2-l2a", "date": "2026-12-05"},
			{"zoom": 12, "x": 2200, "y": 1343, "collection": "sentinel-2-l2a", "date": "2026-12-05"},
			{"z": "12", "x": "2200", "y": "1343", "collection": "sentinel-2-l2a", "date": "2026-12-05"},
			{"tile": "12/2200/1343", "collection": "sentinel-2-l2a", "date": "2026-12-05"},
			{"z": 12, "x": 2200, "y": 1343, "collection": "Sentinel-2-L2A", "date": "20261205"},
		} {
			if i == 3 {
				w.then()
			}
			w.t("Fetching the tile.", asOK("imagery_tile", a, obj{"scene": "S2B_MSIL2A_20261205T101319_N0511_R022_T32TNS", "cloud_cover": 99.2, "valid_pixels": 0.004,
				"tile": "12/2200/1343", "png_bytes": 1843, "served_by": fmt.Sprintf("tiler-%d", 3+i%4), "rendered_at": s23Clock(500 + i*17)}))
		}
		add(w)
	}

	// A mapping agent polls a tasking order that stays seventh in the
	// queue.
	{
		w := asRunOf("imagery-order-polled-seventh-in-queue", "imagery", true)
		for i := 0; i < 5; i++ {
			if i == 2 {
				w.then()
			}
			w.t("Is the capture scheduled?", asOK("order_status", obj{"order_id": "ord_9Xq2LmT"},
				obj{"order_id": "ord_9Xq2LmT", "state": "queued", "queue_position": 7, "satellite": nil, "aoi_km2": 25, "polled_at": s23Clock(600 + i*300), "etag": fmt.Sprintf("W/\"%x\"", 0x51a0+i*7)}))
		}
		add(w)
	}

	// A sports agent searches one player under spellings of his name; the
	// API finds nobody, its rate counter falling.
	{
		w := asRunOf("sports-player-name-respelled-no-match", "sports", true)
		for i, n := range []string{"Nikola Jokić", "Nikola Jokic", "JOKIC, Nikola", "nikola jokic", "N. Jokic"} {
			if i == 3 {
				w.then()
			}
			w.t("Finding the player.", asOK("players_search", obj{"search": n, "season": 2026, "league": "WNBA"},
				obj{"get": "players", "parameters": obj{"search": n, "season": "2026", "league": "WNBA"}, "errors": arr{}, "results": 0, "response": arr{}, "requests_remaining": 97 - i}))
		}
		add(w)
	}

	// A sports agent polls a game at half-time; the score stays, the feed
	// stamps each answer.
	{
		w := asRunOf("sports-game-polled-at-halftime", "sports", true)
		for i := 0; i < 5; i++ {
			if i == 2 {
				w.then()
			}
			w.t("What's the score?", asOK("game_live", obj{"game_id": 401705112},
				obj{"game_id": 401705112, "status": obj{"type": "STATUS_HALFTIME", "period": 2, "clock": "0:00"}, "home": obj{"team": "DEN", "score": 58}, "away": obj{"team": "LAL", "score": 61},
					"last_play": "End of 2nd Quarter", "feed_ts": 1796583600 + i*45}))
		}
		add(w)
	}

	// A library agent searches one title in two query syntaxes; the same
	// three records come back in a new result set each time.
	{
		w := asRunOf("library-z3950-query-respelled-same-records", "library", true)
		recs := arr{s23Marc("ocm00123456", "Moby-Dick, or, The whale /", "Melville, Herman, 1819-1891.", "1851"),
			s23Marc("ocm21874411", "Moby Dick /", "Melville, Herman, 1819-1891.", "1992"),
			s23Marc("ocm44001822", "Moby-Dick : a Norton critical edition /", "Melville, Herman, 1819-1891.", "2002")}
		for i, q := range []string{`@attr 1=4 "moby dick"`, `@attr 1=4 "Moby-Dick"`, `title="moby dick"`, `@attr 1=4 @attr 4=1 "moby dick"`, `dc.title = "Moby Dick"`} {
			if i == 3 {
				w.then()
			}
			w.t("Searching the catalog.", asOK("z3950_search", obj{"target": "lx2.loc.gov:210/LCDB", "query": q, "syntax": "USMARC", "max": 10},
				obj{"result_set": fmt.Sprintf("default_%d", i+1), "hits": 3, "records": recs, "elapsed_ms": 212 + i*31}))
		}
		add(w)
	}

	// A library agent places one hold under spellings of a barcode; the
	// patron already holds the title.
	{
		w := asRunOf("library-hold-barcode-respelled-already-held", "library", true).acc("write", "place_hold")
		for i, b := range []string{"31234001234567", "3123 4001 2345 67", "31234-001234567", " 31234001234567", "031234001234567"} {
			if i == 3 {
				w.then()
			}
			w.t("Placing the hold.", asFail("place_hold", obj{"patron": "21234000998812", "item_barcode": b, "pickup": "CENTRAL"}, "conflict",
				"Hold not placed: patron 21234000998812 already has a hold on this title (hold 88123, position 2 of 5)."))
		}
		add(w)
	}

	// A music agent searches one track in other words; the same versions
	// come back, the query echoed in the link.
	{
		w := asRunOf("music-track-search-reworded-same-versions", "music", true)
		items := [][3]string{{"4u7EnebtmKWzUH433cf5Qv", "Bohemian Rhapsody - Remastered 2011", "A Night At The Opera (2011 Remaster)"},
			{"7tFiyTwD0nx5a1eklYtX2J", "Bohemian Rhapsody", "Bohemian Rhapsody (The Original Soundtrack)"},
			{"1AhDOtG9vPSOmsWgNW0BEY", "Bohemian Rhapsody - Live Aid", "Bohemian Rhapsody (The Original Soundtrack)"}}
		for i, q := range []string{"Bohemian Rhapsody Queen", "queen bohemian rhapsody", "track:Bohemian Rhapsody artist:Queen", "Queen - Bohemian Rhapsody", "bohemian rhapsody by queen"} {
			if i == 3 {
				w.then()
			}
			w.t("Finding the studio version.", asOK("catalog_search", obj{"q": q, "type": "track", "limit": 5},
				s23Tracks("https://api.music.example/v1/search?query="+strings.ReplaceAll(q, " ", "+")+"&type=track&offset=0&limit=5", items...)))
		}
		add(w)
	}

	// A curator adds an explicit track to a family playlist; a content
	// filter removes it; round they go, the snapshot moving each time.
	{
		w := asRunOf("playlist-track-added-removed-two-agents", "music", true).acc("write", "playlist_add", "playlist_remove")
		cur, filt := s19As(w, "curator"), s19As(w, "content_filter")
		for r := 0; r < 4; r++ {
			if r == 2 {
				cur.then()
			}
			cur.t("It fits the road-trip mood: adding it.", asOK("playlist_add", obj{"playlist_id": "37i9dQZF1DX0family", "uris": arr{"spotify:track:0VjIjW4GlUZAMYd2vXMi3b"}},
				obj{"snapshot_id": fmt.Sprintf("MTYsZjQ%08x", 0x1000+r*2)}))
			filt.t("The track is explicit and the playlist is for the family: removing it.", asOK("playlist_remove", obj{"playlist_id": "37i9dQZF1DX0family", "tracks": arr{obj{"uri": "spotify:track:0VjIjW4GlUZAMYd2vXMi3b"}}},
				obj{"snapshot_id": fmt.Sprintf("MTYsZjQ%08x", 0x1001+r*2)}))
		}
		add(w)
	}

	// A ticketing agent holds two seats under other notations while
	// another session holds them.
	{
		w := asRunOf("boxoffice-seat-hold-respelled-held-elsewhere", "ticketing", true).acc("write", "hold_seats")
		for i, s := range []any{arr{"A12", "A13"}, arr{"A13", "A12"}, arr{"a12", "a13"}, "A12,A13", arr{"Row A Seat 12", "Row A Seat 13"}} {
			if i == 3 {
				w.then()
			}
			w.t("Holding the seats.", asFail("hold_seats", obj{"performance": "PERF-20261219-2000", "section": "ORCH", "seats": s}, "conflict",
				fmt.Sprintf(`{"status":409,"code":"SEATS_UNAVAILABLE","detail":"Seats ORCH A12, A13 are held by another session until 19:%02d:00","request":"%s"}`, 24, s23UUID(80+i))))
		}
		add(w)
	}

	// A fleet agent polls a parked van; its GPS fix never changes, only
	// the server's clock.
	{
		w := asRunOf("fleet-van-polled-parked", "fleet", true)
		for i := 0; i < 5; i++ {
			if i == 2 {
				w.then()
			}
			w.t("Where is van 14 now?", asOK("vehicle_location", obj{"vehicle_id": "VAN-14"},
				obj{"vehicle_id": "VAN-14", "lat": 47.60621, "lng": -122.33207, "speed_kmh": 0, "heading": 212, "ignition": "off", "gps_time": "2026-12-06T18:41:07Z",
					"odometer_km": 88412.6, "server_time": s23Clock(700 + i*120)}))
		}
		add(w)
	}

	// A family-history lead hands one ancestor's birth record to an
	// archive sub-agent in other words; it finds nothing each time.
	{
		w := asRunOf("genealogy-handoff-reworded-no-record", "genealogy", true)
		qs := [][2]string{
			{"Find the baptism or birth record of Johann Georg Weber, born about 1852 in Baden.", "No birth or baptism record for Johann Georg Weber around 1852 in Baden."},
			{"Search for a birth entry: Weber, Johann Georg, ca. 1852, Grand Duchy of Baden.", "I found no birth entry for Johann Georg Weber (c. 1852, Baden)."},
			{"Look up when and where Georg Weber was born (Baden, early 1850s).", "Nothing: no record of a Johann Georg Weber born in Baden in the early 1850s."},
			{"Can you find Johann G. Weber's birth in the Baden church books, around 1852?", "The church-book index has no Johann Georg Weber born around 1852."},
		}
		for i, q := range qs {
			if i == 2 {
				w.then()
			}
			w.hand("Asking the archive agent.", "archive_agent", q[0], q[1], func(s *asw) {
				s.t("Searching the records.", asOK("records_search", obj{"given": "Johann Georg", "surname": "Weber", "event": "birth", "year": 1852, "year_range": 2, "place": "Baden, Germany"},
					obj{"count": 0, "results": arr{}, "collections_searched": arr{"Baden, Germany, Lutheran Baptisms 1502-1985", "Germany Births and Baptisms 1558-1898"}}))
			})
		}
		add(w)
	}

	// A patent agent asks a model to rewrite its query before each search;
	// the rewrites differ and the hits do not.
	{
		w := asRunOf("patent-query-rewritten-by-model-same-hits", "patents", true)
		rewrites := []string{
			`("phase change material" OR PCM) AND battery AND (cooling OR "thermal management")`,
			`battery AND ("thermal management" OR cooling) AND (PCM OR "phase change material")`,
			`(PCM OR "phase-change material") AND (battery OR cell) AND (cooling OR "thermal management")`,
			`battery NEAR/10 ("phase change material" OR PCM) AND cooling`,
		}
		for r, q := range rewrites {
			w.t("Asking for a broader query.", asOK("chat_completion", obj{"model": "gpt-4.1-mini", "messages": arr{obj{"role": "system", "content": "Rewrite the patent search query to find more prior art. Output only the query."},
				obj{"role": "user", "content": "Battery pack cooled by a phase change material. Last query found 5 results."}}},
				s19Chat(fmt.Sprintf("chatcmpl-Q%05d", 4100+r*17), q, 64, 28+r)))
			if r == 3 {
				w.then()
			}
			w.t("Searching prior art.", asOK("patent_search", obj{"q": q, "cpc": "H01M10/6569", "before": "2024-06-01"},
				s23Patents(q, "US11245123B2", "EP3561932A1", "CN110112345A", "US10950914B2", "WO2020123456A1")))
		}
		add(w)
	}

	// A release agent publishes one version again under spellings of its
	// number; the registry refuses to publish over it.
	{
		w := asRunOf("registry-publish-version-respelled-exists", "packages", true).acc("write", "registry_publish")
		for i, v := range []string{"1.4.2", "v1.4.2", "=1.4.2", "1.4.2 ", "01.4.2"} {
			if i == 3 {
				w.then()
			}
			w.t("Publishing the release.", asFail("registry_publish", obj{"package": "@northwind/geo-utils", "version": v, "tag": "latest", "tarball": "geo-utils-1.4.2.tgz"}, "forbidden",
				"npm ERR! code E403\nnpm ERR! 403 403 Forbidden - PUT /@northwind%2fgeo-utils - You cannot publish over the previously published versions: 1.4.2."))
		}
		add(w)
	}

	// ===================== legit =====================

	// Seat maps for other dates: the free seats differ.
	{
		w := asRunOf("rail-seat-map-dates-differ", "rail", false)
		frees := [][]string{{"11A"}, {"12C", "12D"}, {"14A", "14B", "15D"}, {}, {"11B", "13C"}}
		for i, f := range frees {
			d := fmt.Sprintf("2026-12-%02d", 17+i)
			w.t("Looking for two seats together.", asOK("rail_seat_map", obj{"train": "ICE 597", "date": d, "origin": "8011160", "destination": "8000261", "coach": 7},
				obj{"train": "ICE 597", "date": d, "coach": 7, "class": 2, "seats": s23Seats(7, f...), "request_id": s23UUID(100 + i), "generated_at": s23Clock(20 + i*23)}))
		}
		add(w)
	}

	// A group booked: one booking per passenger.
	{
		w := asRunOf("rail-bookings-per-passenger", "rail", false).acc("write", "rail_book")
		for i, p := range []obj{{"name": "A. Keller", "age": 34}, {"name": "B. Keller", "age": 36}, {"name": "C. Keller", "age": 9}, {"name": "D. Keller", "age": 6}, {"name": "E. Vogt", "age": 67}} {
			w.t("Booking the next passenger.", asOK("rail_book", obj{"train": "ICE 597", "date": "2026-12-19", "fare": "FLEXPREIS", "class": 2, "passengers": arr{p}},
				obj{"booking": fmt.Sprintf("DB-%06X", 0xA1B200+i*389), "passenger": p["name"], "seat": fmt.Sprintf("7/%dA", 11+i), "price_eur": 129.9 - float64(i%3)*20}))
		}
		add(w)
	}

	// A claim polled while it moves through review to payment.
	{
		w := asRunOf("insurance-claim-polled-progresses", "insurance", false)
		for i, st := range []string{"PENDING_DOCUMENTS", "UNDER_REVIEW", "APPRAISAL_SCHEDULED", "APPROVED", "PAID"} {
			out := arr{}
			if i == 0 {
				out = arr{"police_report"}
			}
			w.t("Has the claim moved?", asOK("claim_status", obj{"claim_number": "CLM-2026-0448120"},
				obj{"claim_number": "CLM-2026-0448120", "status": st, "outstanding": out, "adjuster": "K. Brennan", "reserve": 4200.0,
					"checked_at": s23Clock(100 + i*900), "trace_id": fmt.Sprintf("%032x", 0x7f10aa11+i*99991)}))
		}
		add(w)
	}

	// A claim's documents uploaded one by one.
	{
		w := asRunOf("insurance-documents-uploaded", "insurance", false).acc("write", "claim_upload_document")
		for i, f := range []string{"police_report_1203.pdf", "repair_estimate.pdf", "photo_front.jpg", "photo_rear.jpg", "rental_receipt.pdf"} {
			ty := "application/pdf"
			if strings.HasSuffix(f, ".jpg") {
				ty = "image/jpeg"
			}
			w.t("Attaching the next document.", asOK("claim_upload_document", obj{"claim_number": "CLM-2026-0448120", "document_type": strings.TrimSuffix(strings.Split(f, ".")[0], "_1203"), "file": f, "content_type": ty},
				obj{"document_id": s23UUID(120 + i), "file": f, "status": "accepted", "pages": 1 + i%3}))
		}
		add(w)
	}

	// Listings paged by cursor.
	{
		w := asRunOf("realestate-listings-cursor-pages", "realestate", false)
		cur := ""
		for i := 0; i < 5; i++ {
			args := obj{"city": "Austin", "state": "TX", "min_beds": 3, "max_price": 450000, "page_size": 6}
			if cur != "" {
				args["cursor"] = cur
			}
			next := fmt.Sprintf("eyJvZmZzZXQiOj%d", (i+1)*6)
			w.t("Next page of listings.", asOK("listings_search", args, obj{"search_id": "srch_7731000", "total": 30, "listings": s23Listings(i*6, 6), "next_cursor": next}))
			cur = next
		}
		add(w)
	}

	// A search refined as the buyer's wishes come in: fewer listings each
	// time.
	{
		w := asRunOf("realestate-search-refined", "realestate", false)
		steps := []struct {
			f obj
			n int
		}{
			{obj{"city": "Austin", "state": "TX", "min_beds": 3, "max_price": 450000}, 6},
			{obj{"city": "Austin", "state": "TX", "min_beds": 4, "max_price": 450000}, 4},
			{obj{"city": "Austin", "state": "TX", "min_beds": 4, "max_price": 450000, "garage": true}, 3},
			{obj{"city": "Austin", "state": "TX", "min_beds": 4, "max_price": 450000, "garage": true, "school_rating_min": 8}, 2},
			{obj{"city": "Austin", "state": "TX", "min_beds": 4, "max_price": 430000, "garage": true, "school_rating_min": 8}, 1},
		}
		for i, s := range steps {
			w.t("Narrowing the search.", asOK("listings_search", s.f, obj{"search_id": fmt.Sprintf("srch_%d", 7741000+i*417), "total": s.n, "listings": s23Listings(6-s.n, s.n), "generated_at": s23Clock(300 + i*41)}))
		}
		add(w)
	}

	// An inspection booked, read back, moved after a conflict, read back.
	{
		w := asRunOf("permit-inspection-booked-read-back", "permits", false).acc("write", "schedule_inspection", "reschedule_inspection")
		read := func(date, st string, n int) asCall {
			return asOK("permit_detail", obj{"permit": "BP-2026-01822"}, obj{"permit": "BP-2026-01822", "status": "ISSUED", "inspections": arr{obj{"inspection_id": "INSP-30112", "type": "framing", "date": date, "status": st}}, "fetched_at": s23Clock(800 + n*60)})
		}
		w.t("Booking the framing inspection.", asOK("schedule_inspection", obj{"permit": "BP-2026-01822", "type": "framing", "date": "2026-12-09"},
			obj{"inspection_id": "INSP-30112", "permit": "BP-2026-01822", "type": "framing", "date": "2026-12-09", "window": "AM", "status": "scheduled"}))
		w.t("Checking the permit.", read("2026-12-09", "scheduled", 0))
		w.t("The inspector's day is full: moving it.", asOK("reschedule_inspection", obj{"inspection_id": "INSP-30112", "date": "2026-12-10"}, obj{"inspection_id": "INSP-30112", "date": "2026-12-10", "status": "scheduled"}))
		w.t("Checking the permit.", read("2026-12-10", "scheduled", 1))
		w.t("Moving it to the afternoon.", asOK("reschedule_inspection", obj{"inspection_id": "INSP-30112", "date": "2026-12-10", "window": "PM"}, obj{"inspection_id": "INSP-30112", "date": "2026-12-10", "window": "PM", "status": "scheduled"}))
		w.t("Checking the permit.", read("2026-12-10", "scheduled (PM)", 2))
		add(w)
	}

	// Permits issued, day by day.
	{
		w := asRunOf("permits-issued-by-day", "permits", false)
		for i := 0; i < 5; i++ {
			d := fmt.Sprintf("2026-11-%02d", 23+i)
			var ps arr
			for k := 0; k < 2+i%3; k++ {
				ps = append(ps, obj{"permit": fmt.Sprintf("BP-2026-%05d", 1700+i*9+k), "type": []string{"residential_addition", "deck", "reroof", "solar"}[(i+k)%4], "issued": d})
			}
			w.t("Permits issued that day.", asOK("permits_search", obj{"issued_on": d, "jurisdiction": "city-of-austin"}, obj{"date": d, "count": len(ps), "permits": ps}))
		}
		add(w)
	}

	// Tiles of an area fetched one by one.
	{
		w := asRunOf("satellite-tiles-of-an-area", "imagery", false)
		for i := 0; i < 6; i++ {
			x, y := 2200+i%3, 1343+i/3
			w.t("Fetching the next tile.", asOK("imagery_tile", obj{"z": 12, "x": x, "y": y, "collection": "sentinel-2-l2a", "date": "2026-11-28"},
				obj{"scene": "S2A_MSIL2A_20261128T101401_N0511_R022_T32TNS", "cloud_cover": 3.1 + float64(i), "valid_pixels": 0.99, "tile": fmt.Sprintf("12/%d/%d", x, y), "png_bytes": 201433 + i*7717,
					"served_by": fmt.Sprintf("tiler-%d", 3+i%4), "rendered_at": s23Clock(500 + i*17)}))
		}
		add(w)
	}

	// An order polled as it moves up the queue, is captured and delivered.
	{
		w := asRunOf("imagery-order-polled-progresses", "imagery", false)
		for i, st := range []obj{{"state": "queued", "queue_position": 7}, {"state": "queued", "queue_position": 3}, {"state": "scheduled", "queue_position": 0, "satellite": "SkySat-C14"},
			{"state": "captured", "queue_position": 0, "satellite": "SkySat-C14"}, {"state": "delivered", "queue_position": 0, "satellite": "SkySat-C14", "assets": arr{"ortho_visual.tif"}}} {
			st["order_id"] = "ord_9Xq2LmT"
			st["aoi_km2"] = 25
			st["polled_at"] = s23Clock(600 + i*1300)
			st["etag"] = fmt.Sprintf("W/\"%x\"", 0x61a0+i*7)
			w.t("Is the capture scheduled?", asOK("order_status", obj{"order_id": "ord_9Xq2LmT"}, st))
		}
		add(w)
	}

	// Box scores for a week, one date at a time.
	{
		w := asRunOf("sports-scoreboard-by-date", "sports", false)
		for i := 0; i < 6; i++ {
			d := fmt.Sprintf("2026-11-%02d", 20+i)
			w.t("Scores for the day.", asOK("scoreboard", obj{"date": d, "league": "NBA"}, obj{"date": d, "events": arr{
				obj{"id": 401705000 + i*11, "home": obj{"team": "DEN", "score": 101 + i*3}, "away": obj{"team": []string{"PHX", "UTA", "MIN", "OKC", "SAC", "POR"}[i], "score": 97 + i*5%11}, "status": "final"}}}))
		}
		add(w)
	}

	// A live game polled while the score moves.
	{
		w := asRunOf("sports-game-polled-score-moves", "sports", false)
		for i := 0; i < 5; i++ {
			w.t("What's the score?", asOK("game_live", obj{"game_id": 401705112},
				obj{"game_id": 401705112, "status": obj{"type": "STATUS_IN_PROGRESS", "period": 3, "clock": fmt.Sprintf("%d:%02d", 11-i*2, (i*17)%60)}, "home": obj{"team": "DEN", "score": 58 + i*4}, "away": obj{"team": "LAL", "score": 61 + i*3},
					"last_play": fmt.Sprintf("Play %d of the 3rd", i+1), "feed_ts": 1796584500 + i*90}))
		}
		add(w)
	}

	// A result set's records presented ten at a time.
	{
		w := asRunOf("library-z3950-present-pages", "library", false)
		for i := 0; i < 4; i++ {
			var recs arr
			for k := 0; k < 10; k++ {
				n := i*10 + k
				recs = append(recs, s23Marc(fmt.Sprintf("ocm%08d", 11000000+n*7919), fmt.Sprintf("Whaling in New England, vol. %d /", n+1), "Starbuck, Alexander.", fmt.Sprint(1878+n)))
			}
			w.t("Next records.", asOK("z3950_present", obj{"target": "lx2.loc.gov:210/LCDB", "result_set": "default_1", "start": 1 + i*10, "count": 10}, obj{"result_set": "default_1", "start": 1 + i*10, "records": recs}))
		}
		add(w)
	}

	// Holds placed for a reading list, one title each.
	{
		w := asRunOf("library-holds-reading-list", "library", false).acc("write", "place_hold")
		for i := 0; i < 5; i++ {
			b := fmt.Sprintf("312340012%05d", 34567+i*811)
			w.t("Placing the next hold.", asOK("place_hold", obj{"patron": "21234000998812", "item_barcode": b, "pickup": "CENTRAL"}, obj{"hold_id": 88200 + i, "item_barcode": b, "queue_position": 1 + i%3}))
		}
		add(w)
	}

	// A track search refined until the live version is found.
	{
		w := asRunOf("music-search-refined-to-version", "music", false)
		for _, c := range []struct {
			q     string
			items [][3]string
		}{
			{"Bohemian Rhapsody", [][3]string{{"4u7EnebtmKWzUH433cf5Qv", "Bohemian Rhapsody - Remastered 2011", "A Night At The Opera (2011 Remaster)"}, {"3z8h0TU7ReDPLIbEnYhWZb", "Bohemian Rhapsody", "Bohemian Rhapsody (Panic! cover)"}}},
			{"Bohemian Rhapsody live", [][3]string{{"1AhDOtG9vPSOmsWgNW0BEY", "Bohemian Rhapsody - Live Aid", "Bohemian Rhapsody (The Original Soundtrack)"}, {"6l8GvAyoUZwWDgF1e4822w", "Bohemian Rhapsody - Live At Wembley '86", "Live At Wembley Stadium"}}},
			{"Bohemian Rhapsody live Wembley 1986", [][3]string{{"6l8GvAyoUZwWDgF1e4822w", "Bohemian Rhapsody - Live At Wembley '86", "Live At Wembley Stadium"}}},
		} {
			w.t("Finding the version.", asOK("catalog_search", obj{"q": c.q, "type": "track", "limit": 5}, s23Tracks("https://api.music.example/v1/search?query="+strings.ReplaceAll(c.q, " ", "+")+"&type=track&offset=0&limit=5", c.items...)))
		}
		add(w)
	}

	// A playlist built: distinct tracks, the snapshot moving.
	{
		w := asRunOf("playlist-built-track-by-track", "music", false).acc("write", "playlist_add")
		for i, id := range []string{"4u7EnebtmKWzUH433cf5Qv", "2ZWlPOoWh0626oTaHrnl2a", "5T8EDUDqKcs6OSOwEsfqG7", "3z8h0TU7ReDPLIbEnYhWZb", "7hQJA50XrCWABAu5v6QZ4i", "1AhDOtG9vPSOmsWgNW0BEY"} {
			w.t("Adding the next song.", asOK("playlist_add", obj{"playlist_id": "37i9dQZF1DX0family", "uris": arr{"spotify:track:" + id}}, obj{"snapshot_id": fmt.Sprintf("MTYsZjQ%08x", 0x2000+i)}))
		}
		add(w)
	}

	// Seats held, the map read, released, the map read again.
	{
		w := asRunOf("boxoffice-hold-release-map-read", "ticketing", false).acc("write", "hold_seats", "release_seats")
		seatmap := func(held []string, n int) asCall {
			return asOK("seat_map", obj{"performance": "PERF-20261219-2000", "section": "ORCH"}, obj{"performance": "PERF-20261219-2000", "section": "ORCH", "held_by_you": held, "available": 212 - len(held) - n, "as_of": s23Clock(900 + n*40)})
		}
		w.t("Seeing what's free.", seatmap(nil, 0))
		w.t("Holding two.", asOK("hold_seats", obj{"performance": "PERF-20261219-2000", "section": "ORCH", "seats": arr{"F7", "F8"}}, obj{"hold": "H-55120", "seats": arr{"F7", "F8"}, "expires": "19:31:00"}))
		w.t("Checking the map.", seatmap([]string{"F7", "F8"}, 1))
		w.t("The customer wants the aisle: releasing.", asOK("release_seats", obj{"hold": "H-55120"}, obj{"hold": "H-55120", "released": arr{"F7", "F8"}}))
		w.t("Checking the map.", seatmap(nil, 2))
		w.t("Holding the aisle pair.", asOK("hold_seats", obj{"performance": "PERF-20261219-2000", "section": "ORCH", "seats": arr{"F1", "F2"}}, obj{"hold": "H-55127", "seats": arr{"F1", "F2"}, "expires": "19:33:00"}))
		w.t("Checking the map.", seatmap([]string{"F1", "F2"}, 3))
		add(w)
	}

	// A van on its route, polled: it moves.
	{
		w := asRunOf("fleet-van-polled-moving", "fleet", false)
		for i := 0; i < 5; i++ {
			w.t("Where is van 14 now?", asOK("vehicle_location", obj{"vehicle_id": "VAN-14"},
				obj{"vehicle_id": "VAN-14", "lat": 47.60621 + float64(i)*0.0041, "lng": -122.33207 + float64(i)*0.0027, "speed_kmh": 32 + i*3, "heading": 28, "ignition": "on",
					"gps_time": s23Clock(700 + i*120), "odometer_km": 88412.6 + float64(i)*0.7, "server_time": s23Clock(702 + i*120)}))
		}
		add(w)
	}

	// A fleet's diagnostics read vehicle by vehicle.
	{
		w := asRunOf("fleet-diagnostics-each-vehicle", "fleet", false)
		for i := 0; i < 8; i++ {
			v := fmt.Sprintf("VAN-%02d", 10+i)
			w.t("Reading the next van's codes.", asOK("vehicle_diagnostics", obj{"vehicle_id": v}, obj{"vehicle_id": v, "dtc": arr{[]string{"P0420", "P0171", "U0100"}[i%3]}[:i%2], "battery_v": 12.1 + float64(i)*0.1, "fuel_pct": 30 + i*7}))
		}
		add(w)
	}

	// Distinct ancestors handed to the archive sub-agent: each found.
	{
		w := asRunOf("genealogy-handoffs-distinct-ancestors", "genealogy", false)
		for i, p := range [][3]any{{"Johann Georg", "Weber", 1852}, {"Maria Anna", "Weber", 1855}, {"Katharina", "Schmitt", 1829}, {"Franz Xaver", "Weber", 1824}} {
			given, sur, year := p[0].(string), p[1].(string), p[2].(int)
			w.hand("Asking the archive agent.", "archive_agent", fmt.Sprintf("Find the birth record of %s %s, born about %d in Baden.", given, sur, year),
				fmt.Sprintf("Found: %s %s, baptised %d-0%d-1%d in Durlach.", given, sur, year, 1+i, i), func(s *asw) {
					s.t("Searching the records.", asOK("records_search", obj{"given": given, "surname": sur, "event": "birth", "year": year, "year_range": 2, "place": "Baden, Germany"},
						obj{"count": 1, "results": arr{obj{"record_id": fmt.Sprintf("QV%05d-%d", 91000+i*311, i), "name": given + " " + sur, "event_date": fmt.Sprintf("%d-0%d-1%d", year, 1+i, i), "place": "Durlach, Baden"}}}))
				})
		}
		add(w)
	}

	// A model narrows a patent query after each search: the hits shrink
	// and change.
	{
		w := asRunOf("patent-query-narrowed-by-model", "patents", false)
		steps := []struct {
			q    string
			hits []string
		}{
			{`("phase change material" OR PCM) AND battery`, []string{"US11245123B2", "EP3561932A1", "CN110112345A", "US10950914B2", "WO2020123456A1"}},
			{`("phase change material" OR PCM) AND battery AND "cooling plate"`, []string{"EP3561932A1", "US11702211B1", "KR102288811B1"}},
			{`("phase change material" OR PCM) AND battery AND "cooling plate" AND graphite`, []string{"US11702211B1", "JP2021150222A"}},
		}
		for r, s := range steps {
			w.t("Asking for a narrower query.", asOK("chat_completion", obj{"model": "gpt-4.1-mini", "messages": arr{obj{"role": "system", "content": "Narrow the patent search query. Output only the query."},
				obj{"role": "user", "content": fmt.Sprintf("Battery pack cooled by a phase change material in a cooling plate with graphite. Last query found %d results.", 9-r*3)}}},
				s19Chat(fmt.Sprintf("chatcmpl-N%05d", 5100+r*17), s.q, 64+r*10, 28+r)))
			w.t("Searching prior art.", asOK("patent_search", obj{"q": s.q, "cpc": "H01M10/6569", "before": "2024-06-01"}, s23Patents(s.q, s.hits...)))
		}
		add(w)
	}

	// A publish refused over an existing version, the version bumped, the
	// package read back, then the workspace's other packages published.
	{
		w := asRunOf("registry-publish-bumped-then-workspace", "packages", false).acc("write", "registry_publish")
		w.t("Publishing the release.", asFail("registry_publish", obj{"package": "@northwind/geo-utils", "version": "1.4.2", "tag": "latest", "tarball": "geo-utils-1.4.2.tgz"}, "forbidden",
			"npm ERR! code E403\nnpm ERR! 403 403 Forbidden - PUT /@northwind%2fgeo-utils - You cannot publish over the previously published versions: 1.4.2."))
		w.t("Bumping to 1.4.3 and publishing.", asOK("registry_publish", obj{"package": "@northwind/geo-utils", "version": "1.4.3", "tag": "latest", "tarball": "geo-utils-1.4.3.tgz"}, obj{"ok": true, "id": "@northwind/geo-utils@1.4.3"}))
		w.t("Checking the registry.", asOK("registry_view", obj{"package": "@northwind/geo-utils"}, obj{"name": "@northwind/geo-utils", "dist-tags": obj{"latest": "1.4.3"}, "versions": arr{"1.4.0", "1.4.1", "1.4.2", "1.4.3"}}))
		for i, p := range []string{"geo-tiles", "geo-cli", "geo-proj", "geo-tests"} {
			w.t("Publishing the next workspace package.", asOK("registry_publish", obj{"package": "@northwind/" + p, "version": "1.4.3", "tag": "latest", "tarball": p + "-1.4.3.tgz"}, obj{"ok": true, "id": fmt.Sprintf("@northwind/%s@1.4.3", p), "size": 18211 + i*977}))
		}
		add(w)
	}

	return runs
}
