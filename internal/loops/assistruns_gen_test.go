package loops

import (
	"fmt"
	"strings"
)

// The writer of the assistants probe (assistruns_test.go). Each run is one
// block: what the agent does, then why it is a loop or why it is not.

type obj = map[string]any

// snapshot is a browser page as an accessibility tree whose element refs
// are numbered from first in the order the page lays them out: the same
// page read again after any change to the DOM numbers them from another
// point.
func snapshot(url, title string, first int, items ...string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "- Page URL: %s\n- Page Title: %s\n- Page Snapshot:\n```yaml\n", url, title)
	ref := first
	fmt.Fprintf(&b, "- banner [ref=e%d]:\n  - link \"Docs home\" [ref=e%d]\n  - searchbox \"Search docs\" [ref=e%d]\n", ref, ref+1, ref+2)
	ref += 3
	fmt.Fprintf(&b, "- main [ref=e%d]:\n", ref)
	ref++
	for _, it := range items {
		if strings.HasPrefix(it, "#") {
			fmt.Fprintf(&b, "  - heading \"%s\" [level=2] [ref=e%d]\n", strings.TrimPrefix(it, "#"), ref)
		} else if strings.HasPrefix(it, ">") {
			fmt.Fprintf(&b, "  - link \"%s\" [ref=e%d]\n", strings.TrimPrefix(it, ">"), ref)
		} else if strings.HasPrefix(it, "!") {
			fmt.Fprintf(&b, "  - button \"%s\" [ref=e%d]\n", strings.TrimPrefix(it, "!"), ref)
		} else {
			fmt.Fprintf(&b, "  - paragraph [ref=e%d]: %s\n", ref, it)
		}
		ref++
	}
	b.WriteString("```")
	return b.String()
}

func assistantRuns() []*asRun {
	var runs []*asRun
	add := func(w *asw) { runs = append(runs, w.run) }

	// ---------------------------------------------------------------
	// Legit runs.

	// A research agent reads six pages of a documentation site by
	// clicking links; every snapshot numbers its refs anew and shows
	// another page.
	{
		w := asRunOf("browse-docs-six-pages", "research-browser", false).acc("write", "nav_goto", "dom_click")
		w.t("Open the pgvector docs.", asOK("nav_goto", obj{"url": "https://docs.pgvector.example/"}, "Navigated to https://docs.pgvector.example/"))
		pages := []struct{ slug, title, body string }{
			{"", "pgvector", "Open-source vector similarity search for Postgres. Store embeddings with the rest of your data."},
			{"install", "Installation", "Compile and install the extension, then run CREATE EXTENSION vector in each database."},
			{"indexing", "Indexing", "By default pgvector performs exact nearest neighbor search. Add an approximate index to trade recall for speed."},
			{"hnsw", "HNSW", "An HNSW index creates a multilayer graph. Options: m (default 16) and ef_construction (default 64)."},
			{"ivfflat", "IVFFlat", "An IVFFlat index divides vectors into lists; choose lists = rows / 1000 for up to 1M rows."},
			{"filtering", "Filtering", "Filtering with an approximate index is applied after the index is scanned; raise hnsw.ef_search to get more rows."},
		}
		for i, p := range pages {
			first := 1 + 7*i
			w.t("Read the page.", asOK("dom_snapshot", obj{}, snapshot("https://docs.pgvector.example/"+p.slug, p.title+" - pgvector docs", first, "#"+p.title, p.body, ">Next: "+pages[(i+1)%len(pages)].title)))
			if i+1 < len(pages) {
				ref := fmt.Sprintf("e%d", first+6)
				w.t("Follow the next link.", asOK("dom_click", obj{"element": "Next: " + pages[i+1].title + " link", "ref": ref}, "Clicked link \"Next: "+pages[i+1].title+"\". Page URL: https://docs.pgvector.example/"+pages[i+1].slug))
			}
		}
		add(w)
	}

	// A training cell polled while it runs: the clock runs, and so do the
	// epoch and the losses.
	{
		w := asRunOf("notebook-training-poll", "data-science", false).acc("write", "nb_run_cell")
		w.t("Start training.", asOK("nb_run_cell", obj{"notebook": "churn.ipynb", "cell_id": "c7", "code": "trainer.fit(model, train_dl, val_dl, epochs=12)"}, obj{"status": "started", "execution_count": 7, "kernel_id": "k-3f9a"}))
		for i := 0; i < 9; i++ {
			clock := fmt.Sprintf("00:%02d:%02d", (70+95*i)/60, (70+95*i)%60)
			text := fmt.Sprintf("Kernel k-3f9a busy · cell [7] running for %s\nepoch %d/12  train_loss %.4f  val_loss %.4f  val_auc %.3f", clock, i+2, 0.6812-0.031*float64(i), 0.6955-0.024*float64(i), 0.701+0.013*float64(i))
			w.t("Still training; check again.", asOK("kernel_poll", obj{"kernel_id": "k-3f9a"}, text))
		}
		w.t("Done.", asOK("kernel_poll", obj{"kernel_id": "k-3f9a"}, "Kernel k-3f9a idle · cell [7] finished in 00:14:52\nepoch 12/12  train_loss 0.3991  val_loss 0.4822  val_auc 0.824\nBest checkpoint: checkpoints/epoch=11.ckpt"))
		add(w)
	}

	// Fourteen columns of one frame profiled; many share their type, their
	// count and their nulls.
	{
		w := asRunOf("notebook-profile-columns", "data-science", false)
		cols := []struct {
			name, dtype, top string
			uniq             int
		}{
			{"order_id", "int64", "", 48210}, {"customer_id", "int64", "", 9321}, {"region", "object", "EU", 5},
			{"channel", "object", "web", 4}, {"amount", "float64", "", 20318}, {"currency", "object", "EUR", 3},
			{"status", "object", "delivered", 6}, {"created_at", "datetime64[ns]", "", 47002}, {"shipped_at", "datetime64[ns]", "", 45117},
			{"items", "int64", "", 14}, {"discount", "float64", "", 38}, {"coupon", "object", "NONE", 212},
			{"is_gift", "bool", "False", 2}, {"rating", "float64", "", 9},
		}
		for _, c := range cols {
			res := obj{"column": c.name, "dtype": c.dtype, "non_null": 48210, "nulls": 0, "unique": c.uniq}
			if c.top != "" {
				res["top"] = c.top
			}
			w.t("Profile the next column.", asOK("df_profile", obj{"frame": "orders", "column": c.name}, res))
		}
		add(w)
	}

	// A support agent sweeps the unassigned queue: three pages, eight
	// tickets read (each with the same signature and SLA lines), each
	// assigned.
	{
		w := asRunOf("desk-queue-sweep", "support-desk", false).acc("write", "desk_ticket_update").key("desk_ticket_update", "ticket_id")
		ids := []int{48190, 48193, 48197, 48201, 48204, 48208, 48211, 48213}
		subjects := []string{"Cannot log in after password reset", "Invoice INV-2291 charged twice", "Export to CSV times out", "Add a second admin to our workspace", "Webhook deliveries failing with 410", "Dark mode resets after logout", "Refund for annual plan", "SSO with Okta: user not provisioned"}
		for p := 0; p < 3; p++ {
			var rows []obj
			for i := p * 3; i < p*3+3 && i < len(ids); i++ {
				rows = append(rows, obj{"id": ids[i], "subject": subjects[i], "status": "new", "priority": "normal"})
			}
			res := obj{"tickets": rows, "count": 8}
			if p < 2 {
				res["next_page"] = fmt.Sprintf("https://acme.desk.example/api/v2/views/360/tickets.json?page=%d", p+2)
			}
			w.t("List the unassigned view.", asOK("desk_search_tickets", obj{"view": "unassigned", "page": p + 1}, res))
		}
		for i, id := range ids {
			body := fmt.Sprintf("Ticket #%d · New · Priority normal\nSubject: %s\nRequester: customer%d@example.org\nSLA: first reply due in 4h (business hours)\n--\nSent from Acme Support · Reply above this line", id, subjects[i], i+3)
			w.t("Read it.", asOK("desk_ticket_get", obj{"ticket_id": id}, body))
			w.t("Assign it to Maria.", asOK("desk_ticket_update", obj{"ticket_id": id, "assignee": "maria.k", "status": "open"}, obj{"ok": true, "ticket": obj{"id": id, "status": "open", "assignee": "maria.k"}}))
		}
		add(w)
	}

	// Waiting for a customer's reply: read twice alike, a note added (a
	// write), read again, and the reply is there and answered.
	{
		w := asRunOf("desk-await-reply", "support-desk", false).acc("write", "desk_reply", "desk_note")
		for _, ago := range []string{"12 minutes ago", "19 minutes ago"} {
			w.t("Has the customer replied?", asOK("desk_ticket_get", obj{"ticket_id": 48193}, "Ticket #48193 · Pending · Priority high\nSubject: Invoice INV-2291 charged twice\nLast update: "+ago+" by Maria (agent)\nLast comment: Could you send us the last four digits of the card that was charged?"))
		}
		w.t("Not yet; note that I called the customer.", asOK("desk_note", obj{"ticket_id": 48193, "body": "Called Jonas, left a voicemail asking for the card's last four digits."}, obj{"ok": true, "note_id": 9910230}))
		w.t("Check once more.", asOK("desk_ticket_get", obj{"ticket_id": 48193}, "Ticket #48193 · Open · Priority high\nSubject: Invoice INV-2291 charged twice\nLast update: 1 minute ago by Jonas Weber (requester)\nLast comment: It is the Visa ending 7781, charged on 28 Nov and 29 Nov."))
		w.t("Reply.", asOK("desk_reply", obj{"ticket_id": 48193, "body": "Thanks Jonas, I found the duplicate charge of 29 Nov and refunded it; it shows within 5 business days."}, obj{"ok": true, "comment_id": 9910231}))
		add(w)
	}

	// Three pages of offers, then eight offers opened, each with the same
	// delivery line and a price of its own.
	{
		w := asRunOf("shop-compare-headphones", "shopping", false)
		brands := []string{"Sony WH-1000XM5", "Bose QC Ultra", "Sennheiser Momentum 4", "Apple AirPods Max", "Jabra Elite 85h", "Anker Soundcore Q45", "Bowers & Wilkins Px7 S2e", "JBL Tour One M2", "Nothing Headphone (1)"}
		cursor := ""
		for p := 0; p < 3; p++ {
			var offers []obj
			for i := p * 3; i < p*3+3; i++ {
				offers = append(offers, obj{"offer_id": fmt.Sprintf("OF-%d", 88200+i*7), "title": brands[i], "price": fmt.Sprintf("%d.00 EUR", 199+i*23)})
			}
			args := obj{"q": "noise cancelling headphones", "sort": "relevance"}
			if cursor != "" {
				args["cursor"] = cursor
			}
			cursor = fmt.Sprintf("eyJvZmZzZXQiOjMsInEiOi%02dJ9", (p+1)*3)
			w.t("Search offers.", asOK("shop_search", args, obj{"offers": offers, "next_cursor": cursor}))
		}
		for i := 0; i < 8; i++ {
			w.t("Open the offer.", asOK("shop_offer", obj{"offer_id": fmt.Sprintf("OF-%d", 88200+i*7)}, fmt.Sprintf("%s\nPrice: %d.00 EUR (incl. VAT)\nSeller: %s\nRating: %.1f (%d reviews)\nFree delivery Thu 4 Dec · Returns within 30 days", brands[i], 199+i*23, []string{"Acme Audio", "SoundHouse", "MediaWorld"}[i%3], 4.1+0.1*float64(i%7), 120+i*311)))
		}
		add(w)
	}

	// Rooms asked for six dates; four answer "fully booked" alike, the
	// fifth has a room, which is reserved.
	{
		w := asRunOf("booking-hotel-dates", "booking", false).acc("write", "cart_reserve")
		full := obj{"available": false, "rooms": []any{}, "message": "No rooms available for the selected dates. The property is fully booked; try nearby properties or other dates."}
		for i, d := range []string{"2026-12-18", "2026-12-19", "2026-12-20", "2026-12-26", "2027-01-08"} {
			res := full
			if i == 4 {
				res = obj{"available": true, "rooms": []obj{{"room_id": "R-DBL-12", "type": "Double, courtyard view", "price_per_night": "142.00 EUR"}}, "message": "1 room type available."}
			}
			w.t("Try these dates.", asOK("stay_availability", obj{"hotel": "Hotel Lumen Porto", "check_in": d, "nights": 2, "guests": 2}, res))
		}
		w.t("Reserve it.", asOK("cart_reserve", obj{"hotel": "Hotel Lumen Porto", "room_id": "R-DBL-12", "check_in": "2027-01-08", "nights": 2}, obj{"reservation": "HLP-55120", "status": "held for 15 minutes"}))
		add(w)
	}

	// A memory agent recalls six things; one memory answers three of them,
	// never twice in a row, and a new memory is stored between.
	{
		w := asRunOf("memory-recall-topics", "memory", false).acc("write", "memo_store")
		travel := obj{"memories": []obj{{"id": "mem_1a7c", "text": "Ana flies TAP or Lufthansa (Star Alliance Gold, Miles&More 992 211 045); prefers aisle seats, never red-eye flights.", "created": "2026-09-14"}}}
		asks := []struct {
			q   string
			res any
		}{
			{"preferred airline", travel},
			{"dietary restrictions", obj{"memories": []obj{{"id": "mem_33e0", "text": "Vegetarian; allergic to walnuts. Book restaurants with vegan options.", "created": "2026-06-02"}}}},
			{"seat preference on planes", travel},
			{"home airport", obj{"memories": []obj{{"id": "mem_52b9", "text": "Lives in Porto; home airport OPO, Lisbon (LIS) acceptable for long haul.", "created": "2026-03-30"}}}},
			{"hotel budget per night", obj{"memories": []obj{{"id": "mem_6d01", "text": "Hotel budget up to 160 EUR a night in Europe, 220 USD in the US; likes boutique hotels.", "created": "2026-10-11"}}}},
			{"frequent flyer number", travel},
		}
		for _, a := range asks {
			w.t("Recall.", asOK("memo_recall", obj{"query": a.q, "top_k": 1}, a.res))
		}
		w.t("Remember the new trip.", asOK("memo_store", obj{"text": "Trip to Berlin 12-14 Jan 2027 for the Acme offsite; flights not booked yet."}, obj{"id": "mem_7f3a", "status": "stored"}))
		w.t("Recall.", asOK("memo_recall", obj{"query": "upcoming trips", "top_k": 3}, obj{"memories": []obj{{"id": "mem_7f3a", "text": "Trip to Berlin 12-14 Jan 2027 for the Acme offsite; flights not booked yet.", "created": "2026-12-03"}}}))
		add(w)
	}

	// A database agent explores: schema, counts, a wrong column fixed, top
	// customers, a plan.
	{
		w := asRunOf("sql-analysis-session", "database", false)
		w.t("Schema.", asOK("db_sql", obj{"database": "analytics", "sql": "SELECT column_name, data_type FROM information_schema.columns WHERE table_name = 'orders'"}, obj{"rows": []obj{{"column_name": "id", "data_type": "bigint"}, {"column_name": "customer_id", "data_type": "bigint"}, {"column_name": "amount", "data_type": "numeric"}, {"column_name": "status", "data_type": "text"}, {"column_name": "created_at", "data_type": "timestamp with time zone"}}, "row_count": 5}))
		w.t("Monthly counts.", asFail("db_sql", obj{"database": "analytics", "sql": "SELECT date_trunc('month', created) AS m, count(*) FROM orders GROUP BY 1 ORDER BY 1"}, "invalid_args", "ERROR: column \"created\" does not exist\nLINE 1: SELECT date_trunc('month', created) AS m, count(*) FROM orders...\nHINT: Perhaps you meant to reference the column \"orders.created_at\"."))
		w.t("Fix the column.", asOK("db_sql", obj{"database": "analytics", "sql": "SELECT date_trunc('month', created_at) AS m, count(*) FROM orders GROUP BY 1 ORDER BY 1"}, obj{"rows": []obj{{"m": "2026-09-01T00:00:00Z", "count": 14022}, {"m": "2026-10-01T00:00:00Z", "count": 15310}, {"m": "2026-11-01T00:00:00Z", "count": 18877}}, "row_count": 3}))
		w.t("Top customers.", asOK("db_sql", obj{"database": "analytics", "sql": "SELECT customer_id, sum(amount) AS total FROM orders WHERE created_at >= '2026-11-01' GROUP BY 1 ORDER BY 2 DESC LIMIT 5"}, obj{"rows": []obj{{"customer_id": 7731, "total": "18220.50"}, {"customer_id": 1209, "total": "15102.00"}, {"customer_id": 8830, "total": "9920.75"}, {"customer_id": 4410, "total": "8815.10"}, {"customer_id": 3002, "total": "8001.00"}}, "row_count": 5}))
		w.t("Their regions.", asOK("db_sql", obj{"database": "analytics", "sql": "SELECT id, region, segment FROM customers WHERE id IN (7731, 1209, 8830, 4410, 3002)"}, obj{"rows": []obj{{"id": 7731, "region": "EU", "segment": "enterprise"}, {"id": 1209, "region": "US", "segment": "enterprise"}, {"id": 8830, "region": "EU", "segment": "mid"}, {"id": 4410, "region": "APAC", "segment": "mid"}, {"id": 3002, "region": "US", "segment": "smb"}}, "row_count": 5}))
		w.t("Why is the monthly query slow?", asOK("db_explain", obj{"database": "analytics", "sql": "SELECT date_trunc('month', created_at) AS m, count(*) FROM orders GROUP BY 1 ORDER BY 1"}, "Sort  (cost=4210.11..4210.61 rows=200 width=16)\n  ->  HashAggregate  (cost=4198.00..4200.50 rows=200 width=16)\n        ->  Seq Scan on orders  (cost=0.00..3956.10 rows=48210 width=8)\nPlanning Time: 0.211 ms\nExecution Time: 38.402 ms"))
		add(w)
	}

	// Keyset pagination over an export: each page starts after the last
	// id of the one before.
	{
		w := asRunOf("sql-keyset-export", "database", false)
		last := 0
		for p := 0; p < 9; p++ {
			var rows []obj
			for i := 1; i <= 3; i++ {
				rows = append(rows, obj{"id": last + i*67, "email": fmt.Sprintf("user%d@example.org", last+i*67), "plan": []string{"free", "pro", "team"}[(p+i)%3]})
			}
			next := last + 200*67
			w.t("Next page.", asOK("db_sql", obj{"database": "crm", "sql": fmt.Sprintf("SELECT id, email, plan FROM users WHERE id > %d ORDER BY id LIMIT 200", last)}, obj{"rows": rows, "rows_omitted": 197, "row_count": 200, "last_id": next}))
			last = next
		}
		add(w)
	}

	// A rover in a simulation: act, observe, twelve times; the world moves.
	{
		w := asRunOf("sim-rover-explore", "simulation", false).acc("write", "sim_act")
		x, y, bat := 0, 0, 100
		dirs := []string{"north", "north", "east", "east", "east", "south", "east", "north", "north", "west", "north", "east"}
		for i, d := range dirs {
			switch d {
			case "north":
				y++
			case "south":
				y--
			case "east":
				x++
			case "west":
				x--
			}
			bat -= 3
			w.t("Move.", asOK("sim_act", obj{"action": "move", "dir": d, "steps": 1}, obj{"accepted": true}))
			w.t("Look around.", asOK("sim_observe", obj{}, obj{"tick": 40 + i, "pos": []int{x, y}, "battery": bat, "terrain": []string{"sand", "rock", "sand", "crater rim"}[i%4], "visible": []string{fmt.Sprintf("sample site S%d at (%d,%d)", i+1, x+2, y+1)}}))
		}
		add(w)
	}

	// A chess agent: move, read the board, eight times; the clocks run and
	// the position changes.
	{
		w := asRunOf("chess-game", "game", false).acc("write", "board_move")
		moves := []string{"e2e4", "g1f3", "f1b5", "b5a4", "e1g1", "f1e1", "a4b3", "c2c3"}
		fens := []string{
			"rnbqkbnr/pppp1ppp/8/4p3/4P3/8/PPPP1PPP/RNBQKBNR w KQkq e6 0 2",
			"r1bqkbnr/pppp1ppp/2n5/4p3/4P3/5N2/PPPP1PPP/RNBQKB1R w KQkq - 2 3",
			"r1bqkbnr/1ppp1ppp/p1n5/1B2p3/4P3/5N2/PPPP1PPP/RNBQK2R w KQkq - 0 4",
			"r1bqkb1r/1ppp1ppp/p1n2n2/4p3/B3P3/5N2/PPPP1PPP/RNBQK2R w KQkq - 2 5",
			"r1bqk2r/1pppbppp/p1n2n2/4p3/B3P3/5N2/PPPP1PPP/RNBQ1RK1 w kq - 4 6",
			"r1bqk2r/2ppbppp/p1n2n2/1p2p3/B3P3/5N2/PPPP1PPP/RNBQR1K1 w kq b6 0 7",
			"r1bqk2r/2p1bppp/p1np1n2/1p2p3/4P3/1B3N2/PPPP1PPP/RNBQR1K1 w kq - 0 8",
			"r1bq1rk1/2p1bppp/p1np1n2/1p2p3/4P3/1BP2N2/PP1P1PPP/RNBQR1K1 w - - 1 9",
		}
		for i, m := range moves {
			w.t("Play.", asOK("board_move", obj{"game_id": "g-5531", "uci": m}, obj{"ok": true}))
			w.t("Board.", asOK("board_state", obj{"game_id": "g-5531"}, fmt.Sprintf("FEN: %s\nLast move (black): %s\nTo move: white\nClock: white 00:%02d:%02d · black 00:%02d:%02d", fens[i], []string{"e7e5", "b8c6", "a7a6", "g8f6", "f8e7", "b7b5", "d7d6", "e8g8"}[i], 9-i/2, 59-7*i, 9-i/3, 58-6*i)))
		}
		add(w)
	}

	// A file organiser: two pages of PDFs, eight files looked at (owner,
	// mode and kind alike) and each moved to its folder.
	{
		w := asRunOf("files-tidy-downloads", "files", false).acc("write", "fs_rename").key("fs_rename", "from")
		names := []string{"invoice_acme_nov.pdf", "scan0042.pdf", "boarding-pass-TP1347.pdf", "contract_v3_signed.pdf", "invoice_hetzner_2026-11.pdf", "payslip_2026_11.pdf", "manual_dishwasher.pdf", "tax_receipt_2025.pdf"}
		w.t("List PDFs.", asOK("fs_find", obj{"dir": "Downloads", "pattern": "*.pdf", "limit": 4}, obj{"files": names[:4], "next_page_token": "ZmlsZTo0"}))
		w.t("Next page.", asOK("fs_find", obj{"dir": "Downloads", "pattern": "*.pdf", "limit": 4, "page_token": "ZmlsZTo0"}, obj{"files": names[4:], "next_page_token": nil}))
		dest := []string{"Documents/Invoices", "Documents/Scans", "Travel", "Documents/Contracts", "Documents/Invoices", "Documents/Payroll", "Documents/Manuals", "Documents/Tax"}
		for i, n := range names {
			w.t("Look at it.", asOK("fs_info", obj{"path": "Downloads/" + n}, fmt.Sprintf("path: Downloads/%s\nsize: %d bytes\nmodified: 2026-11-%02dT09:%02d:00Z\nowner: ana\nmode: -rw-r--r--\nkind: PDF document, version 1.7", n, 48211+i*90113, 3+i*3, 10+i)))
			w.t("Move it.", asOK("fs_rename", obj{"from": "Downloads/" + n, "to": dest[i] + "/" + n}, obj{"ok": true}))
		}
		add(w)
	}

	// A lead has a scout assess four vendors; each assessment reads the
	// vendor's pages and answers with its own findings.
	{
		w := asRunOf("lead-vendor-scouting", "delegation", false)
		vendors := []struct{ name, sec, price string }{
			{"Qdrant Cloud", "SOC 2 Type II, ISO 27001", "usage-based, from 0.014 USD per GB-hour"},
			{"Pinecone", "SOC 2 Type II, HIPAA", "serverless, 0.33 USD per GB-month plus reads and writes"},
			{"Weaviate Cloud", "SOC 2 Type II", "per dimension stored, from 25 USD a month"},
			{"Zilliz Cloud", "SOC 2 Type II, ISO 27001, GDPR DPA", "compute units, from 0.15 USD per CU-hour"},
		}
		for _, v := range vendors {
			v := v
			w.hand("Have the scout assess "+v.name+".", "scout", "Assess "+v.name+" for our RAG platform: security certifications, pricing model, data residency in the EU.", v.name+": "+v.sec+"; pricing "+v.price+"; EU region available.", func(s *asw) {
				s.t("Security page.", asOK("vendor_page", obj{"vendor": v.name, "section": "security"}, v.name+" Trust Center\nCertifications: "+v.sec+"\nEncryption at rest (AES-256) and in transit (TLS 1.2+)\nSubprocessors list updated 2026-10-01"))
				s.t("Pricing page.", asOK("vendor_page", obj{"vendor": v.name, "section": "pricing"}, v.name+" pricing\nModel: "+v.price+"\nFree tier available; enterprise plans on request"))
			})
		}
		add(w)
	}

	// A traveller's boarding counted down by the airport's board.
	{
		w := asRunOf("trip-boarding-countdown", "booking", false)
		for _, s := range []string{"Boarding starts in 25m", "Boarding starts in 18m", "Boarding starts in 12m", "Boarding starts in 6m", "Boarding now · gate closes in 15m"} {
			w.t("Check the gate.", asOK("flight_gate", obj{"flight": "TP 1347", "date": "2026-12-04"}, "TP 1347 Lisbon (LIS) → Porto (OPO)\nGate 14 · "+s+"\nScheduled 18:40 · Estimated 18:40 · On time"))
		}
		add(w)
	}

	// A Spark job's executors watched: their CPU in millicores and memory
	// climb while the stage runs.
	{
		w := asRunOf("notebook-executors-usage", "data-science", false)
		for i := 0; i < 6; i++ {
			w.t("How busy are the executors?", asOK("cluster_usage", obj{"app": "spark-etl-7"}, fmt.Sprintf("EXECUTOR             CPU    MEMORY\nspark-etl-7-exec-1   %dm   %dMi\nspark-etl-7-exec-2   %dm   %dMi\nspark-etl-7-exec-3   %dm   %dMi\nstage 4/9 running", 340+85*i, 1812+96*i, 310+91*i, 1790+88*i, 296+77*i, 1755+102*i)))
		}
		add(w)
	}

	// An incident's public thread: an update posted, the thread read back
	// (its last three posts), four times.
	{
		w := asRunOf("desk-incident-thread", "support-desk", false).acc("write", "status_post")
		posts := []string{
			"We are investigating elevated error rates on the EU API.",
			"The cause is a failed database failover in eu-west-1; we are restoring the primary.",
			"The primary is restored; error rates are back to normal. We keep monitoring.",
			"Resolved: the EU API has been stable for 60 minutes. A post-mortem follows within 5 days.",
		}
		for i, p := range posts {
			w.t("Post the update.", asOK("status_post", obj{"incident": "INC-2291", "body": p}, obj{"ok": true, "post_id": 7710 + i}))
			lo := i - 2
			if lo < 0 {
				lo = 0
			}
			var thread []obj
			for j := i; j >= lo; j-- {
				thread = append(thread, obj{"post_id": 7710 + j, "body": posts[j], "posted": fmt.Sprintf("2026-12-03T1%d:%02d:00Z", 4+j/2, 5+20*(j%2))})
			}
			w.t("Read the thread back.", asOK("status_thread", obj{"incident": "INC-2291", "limit": 3}, obj{"incident": "INC-2291", "title": "Elevated error rates on the EU API", "posts": thread}))
		}
		add(w)
	}

	// A long paper read page by page, each with the same running head.
	{
		w := asRunOf("research-paper-pages", "research-browser", false)
		for p := 1; p <= 8; p++ {
			w.t("Read on.", asOK("doc_read", obj{"doc_id": "arxiv:2410.01234", "page": p}, fmt.Sprintf("Preprint. Under review.\n%d\nSection %d. %s\nWe evaluate on %d queries with recall@10 of %.3f at %d QPS.", p, p, []string{"Introduction", "Background", "Graph construction", "Search", "Filtering", "Experiments", "Ablations", "Conclusion"}[p-1], 1000*p, 0.9+0.01*float64(p), 1200-90*p)))
		}
		add(w)
	}

	// ---------------------------------------------------------------
	// Loops.

	// "Load more" clicked under a new ref each time; the page after each
	// click is the same page, its refs renumbered.
	{
		w := asRunOf("browse-load-more-refs-renumber", "research-browser", true).acc("write", "dom_click")
		items := []string{"#Search results for \"hnsw recall\"", ">HNSW - pgvector docs", ">Filtering - pgvector docs", ">Tuning ef_search", "!Load more results"}
		first := 1
		w.t("Read the results.", asOK("dom_snapshot", obj{}, snapshot("https://docs.pgvector.example/search?q=hnsw+recall", "Search - pgvector docs", first, items...)))
		for i := 0; i < 5; i++ {
			if i == 2 {
				w.then()
			}
			ref := fmt.Sprintf("e%d", first+8)
			w.t("Load more.", asOK("dom_click", obj{"element": "Load more results button", "ref": ref}, "Clicked button \"Load more results\". Page URL: https://docs.pgvector.example/search?q=hnsw+recall"))
			first += 9
			w.t("Read the results.", asOK("dom_snapshot", obj{}, snapshot("https://docs.pgvector.example/search?q=hnsw+recall", "Search - pgvector docs", first, items...)))
		}
		add(w)
	}

	// A docs search reworded while it finds the same three pages.
	{
		w := asRunOf("browse-site-search-reworded", "research-browser", true)
		found := obj{"results": []obj{
			{"title": "HNSW", "url": "https://docs.pgvector.example/hnsw", "snippet": "Options: m (default 16) and ef_construction (default 64)."},
			{"title": "Indexing", "url": "https://docs.pgvector.example/indexing", "snippet": "Add an approximate index to trade recall for speed."},
			{"title": "Filtering", "url": "https://docs.pgvector.example/filtering", "snippet": "raise hnsw.ef_search to get more rows"},
		}}
		for i, q := range []string{"configure HNSW index parameters", "HNSW index configuration options", "how do I set the parameters of an hnsw index", "hnsw index settings m and ef_construction", "parameters to tune for HNSW indexes"} {
			if i == 3 {
				w.then()
			}
			w.t("Search the docs.", asOK("site_search", obj{"site": "docs.pgvector.example", "query": q}, found))
		}
		add(w)
	}

	// A kernel stuck in one cell, polled: only its clock moves.
	{
		w := asRunOf("notebook-kernel-stuck-clock", "data-science", true)
		for i := 0; i < 6; i++ {
			if i == 2 {
				w.then()
			}
			s := 190 + 30*i
			w.t("Is the grid search done?", asOK("kernel_poll", obj{"kernel_id": "k-77c1"}, fmt.Sprintf("Kernel k-77c1 busy · cell [12] running for 00:%02d:%02d\nlast output: Fitting 5 folds for each of 48 candidates, totalling 240 fits", s/60, s%60)))
		}
		add(w)
	}

	// A cell retried with cosmetic changes, failing each time with the
	// same KeyError.
	{
		w := asRunOf("notebook-keyerror-storm", "data-science", true).acc("write", "nb_run_cell")
		codes := []string{
			"df.groupby('region')['revenue'].sum()",
			"df.groupby(by='region')['revenue'].sum()",
			"df.groupby(['region'])[\"revenue\"].agg('sum')",
			"(df.groupby('region')['revenue']).sum()",
			"df.groupby('region', sort=False)['revenue'].sum()",
			"df.groupby('region')['revenue'].sum(numeric_only=True)",
		}
		for i, c := range codes {
			if i == 3 {
				w.then()
			}
			n := 14 + i
			w.t("Try the aggregation again.", asFail("nb_run_cell", obj{"notebook": "sales.ipynb", "cell_id": "c9", "code": c}, "tool_error", fmt.Sprintf("Traceback (most recent call last):\n  Cell In[%d], line 1\n    %s\nKeyError: 'revenue'", n, c)))
		}
		add(w)
	}

	// Tickets searched with the same question under other argument names.
	{
		w := asRunOf("desk-search-renamed-args", "support-desk", true)
		found := obj{"tickets": []obj{
			{"id": 48102, "subject": "Refund not received after 10 days", "status": "open"},
			{"id": 48155, "subject": "Where is my refund?", "status": "open"},
			{"id": 48170, "subject": "Refund for order 55821 missing", "status": "open"},
		}, "count": 3}
		asks := []obj{
			{"query": "refund not received", "status": "open"},
			{"q": "refund not received", "state": "open"},
			{"text": "Refund not received ", "ticket_status": "OPEN"},
			{"search": "refund not received", "status": "open"},
			{"query": "refund not received", "filter": "status:open"},
		}
		for i, a := range asks {
			if i == 3 {
				w.then()
			}
			w.t("Find the refund tickets.", asOK("desk_search_tickets", a, found))
		}
		add(w)
	}

	// A pending ticket polled while only its relative time moves.
	{
		w := asRunOf("desk-poll-relative-time", "support-desk", true)
		for i, m := range []int{12, 14, 17, 21, 26, 32} {
			if i == 2 {
				w.then()
			}
			w.t("Has the customer replied yet?", asOK("desk_ticket_get", obj{"ticket_id": 48213}, fmt.Sprintf("Ticket #48213 · Pending · Priority normal\nSubject: SSO with Okta: user not provisioned\nRequester: Jonas Weber <jonas@weber-bau.example>\nLast update: %d minutes ago by Maria (agent)\nLast comment: Could you send the SAML response from your browser's network tab?", m)))
		}
		add(w)
	}

	// Pagination whose third page's cursor leads back to the first page.
	{
		w := asRunOf("shop-cursor-resets", "shopping", true)
		page := func(n int) []obj {
			var o []obj
			for i := 0; i < 3; i++ {
				o = append(o, obj{"offer_id": fmt.Sprintf("OF-%d", 77100+n*10+i), "title": fmt.Sprintf("USB-C dock 4K %c%d", 'A'+n, i), "price": fmt.Sprintf("%d.99 EUR", 89+n*20+i*5)})
			}
			return o
		}
		cursors := []string{"", "b2Zmc2V0OjM=", "b2Zmc2V0OjY=", "b2Zmc2V0OjA="}
		next := []string{"b2Zmc2V0OjM=", "b2Zmc2V0OjY=", "b2Zmc2V0OjA="}
		n := 0
		for round := 0; round < 3; round++ {
			for p := 0; p < 3; p++ {
				c := cursors[p]
				if round > 0 && p == 0 {
					c = cursors[3]
				}
				if round == 1 && p == 2 {
					w.then()
				}
				args := obj{"q": "usb-c dock 4k"}
				if c != "" {
					args["cursor"] = c
				}
				w.t("Next page of docks.", asOK("shop_search", args, obj{"offers": page(p), "next_cursor": next[p]}))
				n++
			}
		}
		add(w)
	}

	// A day asked again as its midnight, and as its midnight in UTC.
	{
		w := asRunOf("booking-day-midnight", "booking", true)
		none := obj{"hotel": "Casa Azul Sevilla", "available": false, "rooms": []any{}, "message": "No rooms available for the selected dates. Nearby: Hotel Triana (4 rooms), Oasis Backpackers (12 beds)."}
		asks := []obj{
			{"hotel": "Casa Azul Sevilla", "check_in": "2026-12-18", "check_out": "2026-12-20", "guests": 2},
			{"hotel": "Casa Azul Sevilla", "check_in": "2026-12-18T00:00:00", "check_out": "2026-12-20T00:00:00", "guests": 2},
			{"hotel": "Casa Azul Sevilla", "check_in": "2026-12-18T00:00:00Z", "check_out": "2026-12-20T00:00:00Z", "guests": 2},
			{"hotel": "Casa Azul Sevilla", "check_in": "2026-12-18", "check_out": "2026-12-20T00:00:00Z", "guests": "2"},
			{"hotel": "casa azul sevilla", "check_in": "2026-12-18T00:00", "check_out": "2026-12-20T00:00", "guests": 2},
		}
		for i, a := range asks {
			if i == 3 {
				w.then()
			}
			w.t("Maybe the date format was the problem.", asOK("stay_availability", a, none))
		}
		add(w)
	}

	// A declined payment retried with cosmetic changes.
	{
		w := asRunOf("booking-payment-retry-storm", "booking", true).acc("high_risk", "cart_checkout")
		asks := []obj{
			{"offer_id": "OF-88231", "card": "tok_visa_4242", "amount": "189.00", "currency": "EUR", "name": "Ana Silva"},
			{"offer_id": "OF-88231", "card": "tok_visa_4242", "amount": 189, "currency": "EUR", "name": "Ana Silva"},
			{"offer_id": "OF-88231", "card": "tok_visa_4242", "amount": "189.0", "currency": "eur", "name": "ANA SILVA"},
			{"offer_id": "OF-88231", "card": "tok_visa_4242", "amount": "189.00", "currency": "EUR", "name": "Ana M. Silva"},
			{"offer_id": "OF-88231", "card": "tok_visa_4242", "amount": "189", "currency": "EUR", "name": "Silva, Ana"},
			{"offer_id": "OF-88231", "card": "tok_visa_4242", "amount": 189.0, "currency": "EUR", "name": "Ana Silva", "save_card": false},
		}
		for i, a := range asks {
			if i == 3 {
				w.then()
			}
			w.t("Try the payment again.", asFail("cart_checkout", a, "tool_error", fmt.Sprintf("Payment declined by issuer: do_not_honor (card ending 4242). Ask the customer for another payment method. [attempt %d, ref pay_%x]", i+1, 0x5a1c93e0+i*7919)))
		}
		add(w)
	}

	// A memory recalled and a note opened in turn, the question reworded.
	{
		w := asRunOf("memory-note-oscillation", "memory", true)
		mem := obj{"memories": []obj{{"id": "mem_c1d2", "text": "The Q4 launch is planned for 15 Dec; the deadline for the press kit is 8 Dec.", "created": "2026-11-20"}}}
		note := "# Launch plan\n- Launch: 15 Dec\n- Press kit due: 8 Dec (owner: Rui)\n- Beta feedback closes 5 Dec\n- Open question: pricing page copy"
		qs := []string{"Q4 launch deadline", "deadline for the Q4 launch", "when is the Q4 launch deadline", "Q4 launch date and deadline"}
		for i, q := range qs {
			if i == 2 {
				w.then()
			}
			w.t("What is the deadline again?", asOK("memo_recall", obj{"query": q, "top_k": 1}, mem))
			w.t("Check the note.", asOK("notes_open", obj{"note": "Projects/Launch plan.md"}, note))
		}
		add(w)
	}

	// One query respelled: case, spacing, its conditions' order, a table
	// alias, a limit larger than its rows.
	{
		w := asRunOf("sql-query-respelled", "database", true)
		rows := obj{"rows": []obj{{"region": "EU", "total": "48210.00"}, {"region": "US", "total": "39922.50"}, {"region": "APAC", "total": "12011.75"}, {"region": "LATAM", "total": "4410.00"}}, "row_count": 4}
		qs := []string{
			"SELECT region, SUM(amount) AS total FROM orders WHERE status = 'late' AND created_at >= '2026-11-01' GROUP BY region ORDER BY total DESC",
			"select region, sum(amount) as total from orders where created_at >= '2026-11-01' and status='late' group by region order by total desc",
			"SELECT region, SUM(amount) AS total\nFROM orders\nWHERE status = 'late'\n  AND created_at >= '2026-11-01'\nGROUP BY region\nORDER BY total DESC",
			"SELECT o.region, SUM(o.amount) AS total FROM orders o WHERE o.status = 'late' AND o.created_at >= '2026-11-01' GROUP BY o.region ORDER BY total DESC",
			"SELECT region, SUM(amount) AS total FROM orders WHERE (status = 'late') AND (created_at >= '2026-11-01') GROUP BY region ORDER BY total DESC LIMIT 100",
		}
		for i, q := range qs {
			if i == 3 {
				w.then()
			}
			w.t("Run the late-orders query again.", asOK("db_sql", obj{"database": "analytics", "sql": q}, rows))
		}
		add(w)
	}

	// A heavy query that times out, retried ten times with cosmetic
	// changes.
	{
		w := asRunOf("sql-timeout-cosmetic-storm", "database", true)
		base := "SELECT customer_id, count(*) FROM events WHERE ts > now() - interval '90 days' GROUP BY customer_id"
		for i := 0; i < 10; i++ {
			if i == 4 {
				w.then()
			}
			q := base
			switch i % 3 {
			case 1:
				q = fmt.Sprintf("/* attempt %d */ %s", i+1, base)
			case 2:
				q = strings.ToLower(base) + ";"
			}
			w.t("Try the query again.", asFail("db_sql", obj{"database": "analytics", "sql": q}, "timeout", "ERROR: canceling statement due to statement timeout (statement_timeout = 30s)"))
		}
		add(w)
	}

	// A rover sent east and west in turn, the world the same after each
	// pair of moves but for its tick.
	{
		w := asRunOf("sim-rover-oscillates", "simulation", true).acc("write", "sim_act")
		for i := 0; i < 4; i++ {
			if i == 2 {
				w.then()
			}
			w.t("Go east.", asOK("sim_act", obj{"action": "move", "dir": "east", "steps": 1}, obj{"accepted": true}))
			w.t("Look.", asOK("sim_observe", obj{}, obj{"tick": 80 + 4*i, "pos": []int{5, 3}, "battery": 61, "terrain": "rock", "visible": []string{"boulder blocking east at (6,3)"}}))
			w.t("Go west.", asOK("sim_act", obj{"action": "move", "dir": "west", "steps": 1}, obj{"accepted": true}))
			w.t("Look.", asOK("sim_observe", obj{}, obj{"tick": 82 + 4*i, "pos": []int{4, 3}, "battery": 61, "terrain": "sand", "visible": []string{"boulder blocking east at (6,3)"}}))
		}
		add(w)
	}

	// One folder listed with its arguments renamed and respelled.
	{
		w := asRunOf("files-find-renamed", "files", true)
		files := obj{"files": []string{"invoice_acme_nov.pdf", "scan0042.pdf", "boarding-pass-TP1347.pdf", "contract_v3_signed.pdf", "invoice_hetzner_2026-11.pdf"}, "next_page_token": nil}
		asks := []obj{
			{"dir": "Downloads", "pattern": "*.pdf"},
			{"path": "Downloads/", "glob": "*.pdf"},
			{"folder": "./Downloads", "pattern": "*.pdf"},
			{"dir": "Downloads", "name": "*.pdf", "recursive": false},
			{"directory": "Downloads", "pattern": "*.pdf"},
		}
		for i, a := range asks {
			if i == 3 {
				w.then()
			}
			w.t("List the PDFs.", asOK("fs_find", a, files))
		}
		add(w)
	}

	// A claim handed to a fact checker reworded each time, the verdict the
	// same.
	{
		w := asRunOf("lead-factcheck-reworded", "delegation", true)
		verdict := "Unverified: no primary source for the 40% figure. The 0.7.0 changelog mentions faster HNSW index builds without a number."
		for i, task := range []string{
			"Verify the claim that pgvector 0.7 builds HNSW indexes 40% faster.",
			"Check whether pgvector 0.7 made HNSW index builds 40% faster.",
			"Confirm the 40% faster HNSW build claim for pgvector 0.7.",
			"Find a source for pgvector 0.7 HNSW index builds being 40% faster.",
		} {
			if i == 2 {
				w.then()
			}
			w.hand("Ask the fact checker.", "fact_checker", task, verdict, func(s *asw) {
				s.t("Changelog.", asOK("changelog_get", obj{"project": "pgvector", "version": "0.7.0"}, "## 0.7.0 (2024-04-29)\n- Added halfvec and sparsevec types\n- Improved HNSW index build performance\n- Added binary quantization"))
			})
		}
		add(w)
	}

	// One paper opened again and again under other spellings of its URL.
	{
		w := asRunOf("research-url-respelled", "research-browser", true)
		abs := "Title: Filtered Graph Search at Scale\nAuthors: M. Costa, L. Brandt\nAbstract: We study approximate nearest neighbour search with filters over graph indexes and show that ..."
		for i, u := range []string{"https://arxiv.org/abs/2410.01234", "https://arxiv.org/abs/2410.01234/", "http://arxiv.org/abs/2410.01234", "https://www.arxiv.org/abs/2410.01234#abstract", "https://arxiv.org/abs/2410.01234?context=cs.DB"} {
			if i == 3 {
				w.then()
			}
			w.t("Read the abstract.", asOK("page_text", obj{"url": u}, abs))
		}
		add(w)
	}

	// Two offers compared back and forth.
	{
		w := asRunOf("shop-offers-ping-pong", "shopping", true)
		a := "Sony WH-1000XM5\nPrice: 299.00 EUR (incl. VAT)\nSeller: Acme Audio\nFree delivery Thu 4 Dec · Returns within 30 days"
		b := "Bose QC Ultra\nPrice: 329.00 EUR (incl. VAT)\nSeller: SoundHouse\nFree delivery Fri 5 Dec · Returns within 30 days"
		for i := 0; i < 4; i++ {
			if i == 2 {
				w.then()
			}
			w.t("Compare.", asOK("shop_offer", obj{"offer_id": "OF-88200"}, a))
			w.t("And the other.", asOK("shop_offer", obj{"offer_id": "OF-88207"}, b))
		}
		add(w)
	}

	// A sample widened while it keeps finding nothing.
	{
		w := asRunOf("notebook-sample-widened", "data-science", true)
		for i, n := range []int{1000, 5000, 20000, 100000, 500000} {
			if i == 3 {
				w.then()
			}
			w.t("Look at a bigger sample.", asOK("df_anomalies", obj{"frame": "events", "sample": n, "z": 4}, fmt.Sprintf("Scanned %d sampled rows of events (columns: latency_ms, bytes, status).\nNo anomalies found above z=4.0.", n)))
		}
		add(w)
	}

	return runs
}
