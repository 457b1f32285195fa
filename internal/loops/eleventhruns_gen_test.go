package loops

import (
	"fmt"
	"strings"
)

func eleventhRuns() []*asRun {
	var runs []*asRun
	add := func(w *asw) { runs = append(runs, w.run) }

	// --- legit ---

	// A shell agent fixes a build error by error: the same command, a new
	// error each time, an edit between, then a clean build and tests.
	{
		w := asRunOf("shell-build-fixed-error-by-error", "shell", false).acc("write", "edit_block")
		errs := []string{
			"# example.com/shop/cart\ninternal/cart/cart.go:41:9: undefined: decimal.NewFromFloat64",
			"# example.com/shop/cart\ninternal/cart/cart.go:57:14: cannot use total (variable of type decimal.Decimal) as float64 value in return statement",
			"# example.com/shop/api\ninternal/api/handlers.go:112:22: too many arguments in call to cart.Total\n\thave (*cart.Cart, string)\n\twant (*cart.Cart)",
		}
		for i, e := range errs {
			w.t("", asOK("execute_command", obj{"command": "go build ./...", "timeout_ms": 60000}, elExec(i, e)))
			w.t("Fixing that.", asOK("edit_block", obj{"file_path": []string{"internal/cart/cart.go", "internal/cart/cart.go", "internal/api/handlers.go"}[i], "old_string": fmt.Sprintf("line %d old", i), "new_string": fmt.Sprintf("line %d new", i)},
				fmt.Sprintf("Successfully applied 1 edit to %s", []string{"internal/cart/cart.go", "internal/cart/cart.go", "internal/api/handlers.go"}[i])))
		}
		w.t("", asOK("execute_command", obj{"command": "go build ./...", "timeout_ms": 60000}, elExec(3, "")))
		w.t("", asOK("execute_command", obj{"command": "go test ./...", "timeout_ms": 120000}, elExec(4, "ok  \texample.com/shop/api\t0.412s\nok  \texample.com/shop/cart\t0.097s")))
		add(w)
	}

	// A shell agent lists one directory after another down a tree.
	{
		w := asRunOf("shell-ls-down-a-tree", "shell", false)
		dirs := []string{".", "src", "src/components", "src/components/cart", "src/lib", "src/pages", "public", "scripts", "tests", "tests/e2e"}
		for i, d := range dirs {
			var es []string
			for j := 0; j < 3+i%4; j++ {
				es = append(es, fmt.Sprintf("-rw-r--r--  1 dev dev %5d Dec  4 1%d:0%d %s_%d.ts", 300+i*91+j*17, j, i%10, strings.ReplaceAll(d, "/", "_"), j))
			}
			w.t("", asOK("run_command", obj{"command": "ls -la " + d}, elRun(fmt.Sprintf("total %d\n", 8+i)+strings.Join(es, "\n"), "", 0)))
		}
		add(w)
	}

	// A shell agent tails a server's log while it starts: the same
	// command, new lines each time, then the server listening.
	{
		w := asRunOf("shell-tail-log-while-starting", "shell", false)
		var lines []string
		steps := []string{"loading config from /etc/shop/config.yaml", "connecting to postgres at db:5432", "running 14 migrations", "migrations done in 2.31s", "warming cache (12000 keys)", "cache warm in 4.02s", "listening on :8080"}
		for i, s := range steps {
			lines = append(lines, fmt.Sprintf("2026-12-05T01:%02d:%02dZ INFO %s", 10+i/4, i*13%60, s))
			from := 0
			if len(lines) > 5 {
				from = len(lines) - 5
			}
			w.t("", asOK("execute_command", obj{"command": "tail -n 5 /var/log/shop/server.log"}, elExec(i, strings.Join(lines[from:], "\n"))))
		}
		add(w)
	}

	// A knowledge-graph agent builds a graph: people, their team, their
	// relations, one observation each.
	{
		w := asRunOf("memory-graph-built", "memory", false).acc("write", "create_entities", "create_relations", "add_observations")
		people := []string{"Ana Ruiz", "Bo Lindqvist", "Chen Wei", "Dee Okafor", "Eli Haddad", "Fay Moreau"}
		ents := arr{}
		for i, p := range people {
			ents = append(ents, obj{"name": p, "entityType": "person", "observations": arr{[]string{"Engineer", "Designer", "PM", "Engineer", "SRE", "Data scientist"}[i]}})
		}
		w.t("", asOK("create_entities", obj{"entities": ents}, egJSON(ents)))
		rels := arr{}
		for i := 1; i < len(people); i++ {
			rels = append(rels, obj{"from": people[i], "to": people[0], "relationType": "reports_to"})
		}
		w.t("", asOK("create_relations", obj{"relations": rels}, egJSON(rels)))
		for i, p := range people {
			o := []string{"Leads the checkout rewrite", "Owns the design system", "Runs the Q1 planning", "On call the week of 7 Dec", "Migrated alerts to Grafana", "Built the churn model"}[i]
			w.t("", asOK("add_observations", obj{"observations": arr{obj{"entityName": p, "contents": arr{o}}}}, egJSON(arr{obj{"entityName": p, "addedObservations": arr{o}}})))
		}
		add(w)
	}

	// A knowledge-graph agent searches, finds nothing, records the fact,
	// and finds it.
	{
		w := asRunOf("memory-search-create-find", "memory", false).acc("write", "create_entities")
		w.t("", asOK("search_nodes", obj{"query": "Globex"}, egJSON(obj{"entities": arr{}, "relations": arr{}})))
		e := arr{obj{"name": "Globex", "entityType": "organization", "observations": arr{"Customer since 2024", "Renewal due March 2027"}}}
		w.t("I'll remember this customer.", asOK("create_entities", obj{"entities": e}, egJSON(e)))
		w.t("", asOK("search_nodes", obj{"query": "Globex"}, egJSON(obj{"entities": e, "relations": arr{}})))
		add(w)
	}

	// A travel agent plans a multi-city itinerary: each city geocoded,
	// then the legs between them.
	{
		w := asRunOf("maps-multi-city-itinerary", "maps", false)
		cities := []struct {
			name, id string
			lat, lng float64
		}{{"Lisbon, Portugal", "ChIJO_PkYRozGQ0R0DaQ5L3rAAQ", 38.7223, -9.1393}, {"Porto, Portugal", "ChIJwVPhxKtlJA0RvBSxQFbZSKY", 41.1579, -8.6291}, {"Salamanca, Spain", "ChIJ1a2_w-84Pw0Rt3g9q3o9i7I", 40.9701, -5.6635},
			{"Madrid, Spain", "ChIJgTwKgJcpQg0RaSKMYcHeNsQ", 40.4168, -3.7038}, {"Zaragoza, Spain", "ChIJB3g0TEsVWQ0RnOu2G3Kjn0Q", 41.6488, -0.8891}, {"Barcelona, Spain", "ChIJ5TCOcRaYpBIRCmZHTz37sEQ", 41.3874, 2.1686}}
		for _, c := range cities {
			w.t("", asOK("maps_geocode", obj{"address": strings.Split(c.name, ",")[0]}, elGeocode(c.name, c.id, c.lat, c.lng)))
		}
		for i := 1; i < len(cities); i++ {
			km := 150 + i*97
			w.t("", asOK("maps_directions", obj{"origin": cities[i-1].name, "destination": cities[i].name, "mode": "driving"},
				egJSON(obj{"routes": arr{obj{"summary": []string{"A1", "A-62", "A-50", "A-2", "AP-2"}[i-1], "distance": obj{"text": fmt.Sprintf("%d km", km), "value": km * 1000}, "duration": obj{"text": fmt.Sprintf("%d hours %d mins", km/90, km%60), "value": km * 40}}}})))
		}
		add(w)
	}

	// A maps agent's ambiguous name answers several places; it asks again
	// with the state, twice, and gets one place each time.
	{
		w := asRunOf("maps-ambiguous-disambiguated", "maps", false)
		w.t("", asOK("maps_search_places", obj{"query": "Springfield"}, egJSON(obj{"places": arr{elPlace("Springfield", "Springfield, IL, USA", "ChIJs1", 0), elPlace("Springfield", "Springfield, MA, USA", "ChIJs2", 0), elPlace("Springfield", "Springfield, MO, USA", "ChIJs3", 0)}})))
		w.t("Which Springfield? The user said the one with the Lincoln museum.", asOK("maps_geocode", obj{"address": "Springfield, IL"}, elGeocode("Springfield, IL, USA", "ChIJs1", 39.7817, -89.6501)))
		w.t("", asOK("maps_search_places", obj{"query": "Abraham Lincoln Presidential Museum", "location": obj{"latitude": 39.7817, "longitude": -89.6501}, "radius": 2000},
			egJSON(obj{"places": arr{elPlace("Abraham Lincoln Presidential Library and Museum", "212 N 6th St, Springfield, IL 62701, USA", "ChIJalplm", 4.8)}})))
		add(w)
	}

	// A shop agent fills a cart item by item.
	{
		w := asRunOf("shop-cart-filled-item-by-item", "shop", false).acc("write", "update_cart")
		items := []struct {
			id, title string
			price     float64
		}{{"gid://shopify/ProductVariant/4401", "Trail Runner 2 / 43", 129}, {"gid://shopify/ProductVariant/5120", "Merino socks / M", 19}, {"gid://shopify/ProductVariant/6033", "Rain shell / L", 189},
			{"gid://shopify/ProductVariant/6210", "Running cap", 25}, {"gid://shopify/ProductVariant/7001", "Water bottle 750 ml", 15}, {"gid://shopify/ProductVariant/7188", "Headlamp 400 lm", 49}}
		var in [][3]any
		for _, it := range items {
			w.t("", asOK("search_shop_catalog", obj{"query": strings.Split(it.title, " /")[0], "context": "trail running kit"}, egJSON(obj{"products": arr{obj{"title": it.title, "variant_id": it.id, "price": it.price, "available": true}}})))
			in = append(in, [3]any{it.id, it.title, it.price})
			w.t("", asOK("update_cart", obj{"cart_id": "gid://shopify/Cart/c1-7f3a9e", "add_items": arr{obj{"product_variant_id": it.id, "quantity": 1}}}, elCart(in...)))
		}
		add(w)
	}

	// A shop agent's size is out of stock, the next too; the third is in.
	{
		w := asRunOf("shop-third-size-in-stock", "shop", false).acc("write", "update_cart")
		for i, sz := range []string{"42", "43", "44"} {
			id := "gid://shopify/ProductVariant/44" + sz
			if i < 2 {
				w.t("That size is out; trying the next.", asFail("update_cart", obj{"cart_id": "gid://shopify/Cart/c1-9b2d11", "add_items": arr{obj{"product_variant_id": id, "quantity": 1}}}, "tool_error",
					fmt.Sprintf("The merchandise with id %s is out of stock (Trail Runner 2 / %s).", id, sz)))
				continue
			}
			w.t("", asOK("update_cart", obj{"cart_id": "gid://shopify/Cart/c1-9b2d11", "add_items": arr{obj{"product_variant_id": id, "quantity": 1}}}, elCart([3]any{id, "Trail Runner 2 / " + sz, 129.0})))
		}
		add(w)
	}

	// A document agent reads a book five pages at a time.
	{
		w := asRunOf("doc-book-page-by-page", "document", false)
		for p := 1; p <= 96; p += 5 {
			w.t("", asOK("read_pdf", obj{"path": "contracts/msa-2026.pdf", "pages": fmt.Sprintf("%d-%d", p, p+4)}, elPages(p, p+4)))
		}
		add(w)
	}

	// A monitoring agent narrows a spike: a day, then two hours, then
	// thirty minutes, then the pods within it.
	{
		w := asRunOf("monitoring-spike-narrowed", "monitoring", false)
		q := func(expr, start, end string, step int, res string) {
			w.t("", asOK("query_prometheus", obj{"datasourceUid": "prometheus", "expr": expr, "startTime": start, "endTime": end, "stepSeconds": step, "queryType": "range"}, res))
		}
		e := `sum(rate(http_requests_total{service="checkout",code=~"5.."}[5m]))`
		q(e, "now-24h", "now", 3600, elProm(elSeries("", 1764810000, 3600, 0.1, 0.1, 0.2, 0.1, 0.1, 0.2, 0.1, 0.1, 0.1, 0.2, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.2, 0.1, 0.1, 0.1, 14.2, 0.3, 0.1, 0.1)))
		q(e, "2026-12-04T19:00:00Z", "2026-12-04T21:00:00Z", 300, elProm(elSeries("", 1764874800, 300, 0.1, 0.1, 0.2, 0.1, 0.1, 0.2, 0.3, 2.1, 9.8, 31.0, 28.4, 12.2, 0.4, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.2, 0.1, 0.1, 0.1)))
		q(e, "2026-12-04T19:30:00Z", "2026-12-04T20:00:00Z", 60, elProm(elSeries("", 1764876600, 60, 0.2, 0.9, 1.7, 2.4, 3.9, 6.2, 8.8, 9.9, 10.1, 12.4, 18.0, 24.6, 30.2, 31.8, 33.0, 32.1, 30.9, 29.4, 28.8, 27.0, 22.3, 18.1, 14.0, 12.5, 12.2, 9.1, 5.0, 2.2, 0.6, 0.3)))
		e2 := `sum by (pod) (rate(http_requests_total{service="checkout",code=~"5.."}[5m]))`
		q(e2, "2026-12-04T19:30:00Z", "2026-12-04T20:00:00Z", 300, elProm(elSeries("checkout-7d9f-abc12", 1764876600, 300, 0.1, 0.2, 0.1, 0.1, 0.2, 0.1), elSeries("checkout-7d9f-xk2p9", 1764876600, 300, 0.1, 6.1, 28.7, 31.4, 12.0, 0.2)))
		w.t("", asOK("query_loki_logs", obj{"datasourceUid": "loki", "logql": `{app="checkout", pod="checkout-7d9f-xk2p9"} |= "error"`, "startRfc3339": "2026-12-04T19:35:00Z", "endRfc3339": "2026-12-04T19:50:00Z", "limit": 20},
			egJSON(arr{obj{"timestamp": "1764877200000000000", "line": "error: pq: too many connections for role \"checkout\""}, obj{"timestamp": "1764877260000000000", "line": "error: pq: too many connections for role \"checkout\""}})))
		add(w)
	}

	// A monitoring agent polls a firing alert until it resolves: its
	// value falls and its stamps move.
	{
		w := asRunOf("monitoring-alert-resolves", "monitoring", false)
		vals := []string{"31.8", "22.4", "9.7", "3.1", "0.4"}
		for i, v := range vals {
			st := "firing"
			if i == len(vals)-1 {
				st = "resolved"
			}
			w.t("", asOK("list_alert_rules", obj{"label_selectors": arr{obj{"filters": arr{obj{"name": "alertname", "type": "=", "value": "CheckoutErrorRate"}}}}},
				egJSON(arr{obj{"uid": "ce7x1", "title": "CheckoutErrorRate", "state": st, "health": "ok", "lastEvaluation": fmt.Sprintf("2026-12-04T20:%02d:00Z", 2+i*2), "value": v, "labels": obj{"severity": "page"}}})))
		}
		add(w)
	}

	// An agent asks its human three things it does not know.
	{
		w := asRunOf("ask-user-three-questions", "human", false)
		for _, qa := range [][2]string{{"Which dates are you travelling?", "12 to 19 December"}, {"What is your budget for hotels per night?", "Around 150 euros"}, {"Do you prefer the train or driving between cities?", "Train where it's under 4 hours"}} {
			w.t("", asOK("ask_human", obj{"question": qa[0]}, qa[1]))
		}
		add(w)
	}

	// An agent asks its human a question, gets a vague answer, and asks
	// a narrower one that settles it.
	{
		w := asRunOf("ask-user-narrowed", "human", false)
		w.t("", asOK("ask_human", obj{"question": "When should I schedule the migration?"}, "Sometime next week, not Monday"))
		w.t("", asOK("ask_human", obj{"question": "Next week, not Monday: Tuesday 8 Dec or Thursday 10 Dec, morning or evening?"}, "Thursday evening, after 18:00"))
		w.t("", asOK("ask_human", obj{"question": "Thursday 10 Dec at 18:30 UTC, with a 2-hour window. OK?"}, "Yes"))
		add(w)
	}

	// A planner delegates research, then writing, then review, then a
	// second draft: each sub-agent's verdict new.
	{
		w := asRunOf("planner-research-write-review", "delegation", false)
		w.hand("", "researcher", "Collect 2026 figures on EU heat-pump sales by country.", "Sales by country for 2026 H1: DE 212k, FR 180k, IT 121k, PL 88k (EHPA, Nov 2026).", func(s *asw) {
			s.t("", asOK("web_search", obj{"query": "EHPA heat pump sales 2026 H1 by country"}, egJSON(arr{obj{"title": "Heat pump sales H1 2026", "url": "https://ehpa.example/h1-2026"}})))
			s.t("", asOK("fetch", obj{"url": "https://ehpa.example/h1-2026"}, "DE 212k; FR 180k; IT 121k; PL 88k; total 14 countries 801k."))
		})
		w.hand("", "writer", "Write a 300-word brief from: DE 212k, FR 180k, IT 121k, PL 88k (EHPA, Nov 2026).", "Draft 1 (298 words): 'Heat pumps held up in 2026 …'", nil)
		w.hand("", "reviewer", "Review draft 1 of the heat-pump brief for accuracy and tone.", "Two fixes: PL's figure is H1 only; the headline overstates growth.", nil)
		w.hand("", "writer", "Revise draft 1: PL is H1 only; soften the headline.", "Draft 2 (301 words): 'Heat-pump sales steady in 2026 …'", nil)
		w.hand("", "reviewer", "Review draft 2 of the heat-pump brief.", "Approved.", nil)
		add(w)
	}

	// A shell agent watches services start: docker compose ps, the
	// uptimes moving and one more service healthy each time.
	{
		w := asRunOf("shell-compose-services-become-healthy", "shell", false)
		svcs := []string{"db", "cache", "api", "worker", "web"}
		for i := 0; i < 6; i++ {
			var b []string
			b = append(b, "NAME      IMAGE              STATUS")
			for j, s := range svcs {
				st := "health: starting"
				if j < i {
					st = "healthy"
				}
				b = append(b, fmt.Sprintf("shop-%s-1  shop/%s:1.4  Up %d seconds (%s)", s, s, 3+i*7, st))
			}
			w.t("", asOK("run_command", obj{"command": "docker compose ps"}, elRun(strings.Join(b, "\n"), "", 0)))
		}
		add(w)
	}

	// A shop agent watches a price drop: the same product asked each
	// hour, its price and stock moving.
	{
		w := asRunOf("shop-price-watched", "shop", false)
		for i, p := range []string{"189.00", "189.00", "174.00", "159.00", "159.00"} {
			w.t("", asOK("get_product_details", obj{"product_id": "gid://shopify/Product/6033"}, egJSON(obj{"title": "Rain shell", "price": p, "inventory": 40 - i*7, "updated_at": fmt.Sprintf("2026-12-05T%02d:00:00Z", i)})))
		}
		add(w)
	}

	// A document agent searches a contract for a clause and reads the two
	// pages it is on, one at a time.
	{
		w := asRunOf("doc-search-then-read-hits", "document", false)
		w.t("", asOK("search_pdf", obj{"path": "contracts/msa-2026.pdf", "query": "termination for convenience"}, egJSON(obj{"matches": arr{obj{"page": 34, "snippet": "…either party may terminate for convenience on 90 days' notice…"}, obj{"page": 61, "snippet": "…fees for termination for convenience are set out in Schedule D…"}}})))
		w.t("", asOK("read_pdf", obj{"path": "contracts/msa-2026.pdf", "pages": "34"}, elPages(34, 34)))
		w.t("", asOK("read_pdf", obj{"path": "contracts/msa-2026.pdf", "pages": "61"}, elPages(61, 61)))
		add(w)
	}

	// --- loops ---

	// A shell agent lists the same directory by relative and absolute
	// path, with and without a trailing slash, its flags reordered.
	{
		w := asRunOf("shell-ls-same-dir-respelled", "shell", true)
		out := elRun("total 24\ndrwxr-xr-x 2 dev dev 4096 Dec  4 10:00 .\ndrwxr-xr-x 9 dev dev 4096 Dec  4 09:58 ..\n-rw-r--r-- 1 dev dev  812 Dec  4 10:00 cart.ts\n-rw-r--r-- 1 dev dev 1430 Dec  4 10:00 checkout.ts", "", 0)
		for i, c := range []string{"ls -la src/lib", "ls -al ./src/lib/", "ls -la /home/dev/shop/src/lib", "ls src/lib -la", "ls -l -a /home/dev/shop/src/lib/"} {
			if i == 3 {
				w.then()
			}
			w.t("The config file should be here somewhere.", asOK("run_command", obj{"command": c}, out))
		}
		add(w)
	}

	// A shell agent re-runs a failing build with its flags reordered and
	// its output piped through another pager; the same error each time.
	{
		w := asRunOf("shell-build-rerun-other-pager", "shell", true)
		e := "# example.com/shop/cart\ninternal/cart/cart.go:41:9: undefined: decimal.NewFromFloat64"
		for i, c := range []string{"go build ./...", "go build ./... 2>&1 | cat", "go build -v ./... 2>&1 | head -n 50", "go build ./... 2>&1 | tail -50", "go build ./... 2>&1 | less -FRX"} {
			if i == 3 {
				w.then()
			}
			out := e
			if strings.Contains(c, "-v") {
				out = "example.com/shop/cart\n" + e
			}
			w.t("Let me see the full error.", asOK("execute_command", obj{"command": c, "timeout_ms": 60000}, elExec(i, out)))
		}
		add(w)
	}

	// A shell agent lists git's log through one pager after another.
	{
		w := asRunOf("shell-git-log-pagers", "shell", true)
		var l []string
		for i := 0; i < 10; i++ {
			l = append(l, fmt.Sprintf("%07x %s", 0xa1b2c3d+i*4099, []string{"cart: totals in decimal", "api: pass currency", "web: price format", "ci: go 1.23"}[i%4]))
		}
		out := strings.Join(l, "\n")
		for i, c := range []string{"git log --oneline -10", "git --no-pager log --oneline -10", "git log -n 10 --oneline | cat", "PAGER=cat git log --oneline -n10", "git log --oneline --max-count=10 --no-color"} {
			if i == 3 {
				w.then()
			}
			w.t("Checking recent commits.", asOK("run_command", obj{"command": c}, elRun(out, "", 0)))
		}
		add(w)
	}

	// A knowledge-graph agent records the same fact again and again in
	// other words.
	{
		w := asRunOf("memory-same-fact-reworded", "memory", true).acc("write", "add_observations")
		for i, o := range []string{"Prefers email over phone calls", "Likes to be contacted by email rather than phone", "Email is the preferred contact channel, not phone", "Would rather get emails than calls", "Contact preference: email (not phone)"} {
			if i == 3 {
				w.then()
			}
			w.t("I'll make sure this is remembered.", asOK("add_observations", obj{"observations": arr{obj{"entityName": "Dee Okafor", "contents": arr{o}}}}, egJSON(arr{obj{"entityName": "Dee Okafor", "addedObservations": arr{o}}})))
		}
		add(w)
	}

	// A knowledge-graph agent searches an empty graph with the question
	// reworded.
	{
		w := asRunOf("memory-search-reworded-empty", "memory", true)
		for i, q := range []string{"Dee employer", "Dee Okafor company", "where does Dee work", "Dee's workplace", "employer of Dee Okafor"} {
			if i == 3 {
				w.then()
			}
			w.t("Let me search memory differently.", asOK("search_nodes", obj{"query": q}, egJSON(obj{"entities": arr{}, "relations": arr{}})))
		}
		add(w)
	}

	// A knowledge-graph agent reads the whole graph again and again with
	// nothing written between.
	{
		w := asRunOf("memory-read-graph-polled", "memory", true)
		g := egJSON(obj{"entities": arr{obj{"name": "Dee Okafor", "entityType": "person", "observations": arr{"On call the week of 7 Dec"}}}, "relations": arr{}})
		for i := 0; i < 4; i++ {
			if i == 2 {
				w.then()
			}
			w.t("Let me check what I know.", asOK("read_graph", obj{}, g))
		}
		add(w)
	}

	// A maps agent geocodes one city spelt in three languages.
	{
		w := asRunOf("maps-city-in-three-languages", "maps", true)
		res := elGeocode("Munich, Germany", "ChIJ2V-Mo_l1nkcRfZixfUq4DAE", 48.1351, 11.582)
		for i, a := range []string{"Munich", "München, Deutschland", "Monaco di Baviera", "Muenchen Germany", "Munich, Bavaria"} {
			if i == 3 {
				w.then()
			}
			w.t("Let me pin down the location.", asOK("maps_geocode", obj{"address": a}, res))
		}
		add(w)
	}

	// A maps agent asks for directions with no route, the places
	// respelled.
	{
		w := asRunOf("maps-no-route-respelled", "maps", true)
		for i, od := range [][2]string{{"Honolulu, HI", "Tokyo, Japan"}, {"Honolulu", "Tokyo"}, {"Honolulu, Hawaii, USA", "Tokyo 東京"}, {"HNL", "Tokyo, JP"}, {"Honolulu HI 96813", "Tokyo Station"}} {
			if i == 3 {
				w.then()
			}
			w.t("No route; let me try other names.", asFail("maps_directions", obj{"origin": od[0], "destination": od[1], "mode": "driving"}, "tool_error", "Directions request failed: ZERO_RESULTS"))
		}
		add(w)
	}

	// A maps agent stretches its search radius over the same two places.
	{
		w := asRunOf("maps-radius-stretched-same-places", "maps", true)
		res := egJSON(obj{"places": arr{elPlace("Green Leaf Vegan", "412 SW 10th Ave, Portland, OR", "ChIJgl1", 4.6), elPlace("Plant Bar", "88 NW 5th Ave, Portland, OR", "ChIJpb2", 4.3)}})
		for i, r := range []int{500, 1000, 2000, 5000, 10000} {
			if i == 3 {
				w.then()
			}
			w.t("Only two; widening the search.", asOK("maps_search_places", obj{"query": "vegan restaurant", "location": obj{"latitude": 45.52, "longitude": -122.68}, "radius": r}, res))
		}
		add(w)
	}

	// A shop agent tries a sold-out product in one size after another;
	// the answer says every size is sold out.
	{
		w := asRunOf("shop-sold-out-every-size", "shop", true).acc("write", "update_cart")
		for i, sz := range []string{"42", "43", "41", "44", "40"} {
			if i == 3 {
				w.then()
			}
			id := "gid://shopify/ProductVariant/45" + sz
			w.t("Maybe another size is available.", asFail("update_cart", obj{"cart_id": "gid://shopify/Cart/c1-9b2d11", "add_items": arr{obj{"product_variant_id": id, "quantity": 1}}}, "tool_error",
				"Trail Runner 3 is sold out in all sizes; restock expected 19 December."))
		}
		add(w)
	}

	// A shop agent respells a coupon that is invalid.
	{
		w := asRunOf("shop-coupon-respelled", "shop", true).acc("write", "apply_discount_code")
		for i, c := range []string{"WELCOME10", "welcome10", "Welcome10", "WELCOME-10", " WELCOME10 "} {
			if i == 3 {
				w.then()
			}
			w.t("Let me try the code again.", asFail("apply_discount_code", obj{"cart_id": "gid://shopify/Cart/c1-9b2d11", "discount_code": c}, "tool_error", fmt.Sprintf("Discount code %q is not applicable to this cart.", c)))
		}
		add(w)
	}

	// A shop agent searches the catalog with the query reworded; the same
	// three products come back.
	{
		w := asRunOf("shop-search-reworded-same-products", "shop", true)
		res := egJSON(obj{"products": arr{obj{"title": "Aria Buds ANC", "variant_id": "gid://shopify/ProductVariant/9101", "price": 129.0, "available": true}, obj{"title": "Pulse Pods 2", "variant_id": "gid://shopify/ProductVariant/9130", "price": 89.0, "available": true}, obj{"title": "Quiet Loop", "variant_id": "gid://shopify/ProductVariant/9177", "price": 159.0, "available": false}}})
		for i, q := range []string{"wireless earbuds noise cancelling", "noise-cancelling wireless earbuds", "ANC earbuds wireless", "earbuds with noise cancellation", "bluetooth earbuds active noise cancelling"} {
			if i == 3 {
				w.then()
			}
			w.t("I want more options.", asOK("search_shop_catalog", obj{"query": q, "context": "gift under 200 USD"}, res))
		}
		add(w)
	}

	// A document agent looks for a clause by shifting its page range by
	// one over pages it has read.
	{
		w := asRunOf("doc-page-range-shifted", "document", true)
		for i, r := range [][2]int{{11, 15}, {12, 16}, {11, 14}, {12, 15}, {13, 16}} {
			if i == 3 {
				w.then()
			}
			w.t("The termination clause must be near here.", asOK("read_pdf", obj{"path": "contracts/msa-2026.pdf", "pages": fmt.Sprintf("%d-%d", r[0], r[1])}, elPages(r[0], r[1])))
		}
		add(w)
	}

	// A monitoring agent stretches its time range while the answer is
	// no data.
	{
		w := asRunOf("monitoring-range-stretched-no-data", "monitoring", true)
		for i, st := range []string{"now-1h", "now-6h", "now-24h", "now-7d", "now-30d"} {
			if i == 3 {
				w.then()
			}
			w.t("No data; widening the range.", asOK("query_prometheus", obj{"datasourceUid": "prometheus", "expr": `sum(rate(payment_failures_total{provider="adyen"}[5m]))`, "startTime": st, "endTime": "now", "stepSeconds": 60, "queryType": "range"}, elProm()))
		}
		add(w)
	}

	// A monitoring agent respells a PromQL selector: quotes, spaces, an
	// aggregation; no data each time.
	{
		w := asRunOf("monitoring-promql-respelled-no-data", "monitoring", true)
		for i, e := range []string{`up{job="payments"}`, `up{job='payments'}`, `up{ job = "payments" }`, `sum(up{job="payments"})`, `up{job=~"payments"}`} {
			if i == 3 {
				w.then()
			}
			w.t("Nothing; maybe the selector is off.", asOK("query_prometheus", obj{"datasourceUid": "prometheus", "expr": e, "startTime": "now-1h", "endTime": "now", "stepSeconds": 60, "queryType": "range"}, elProm()))
		}
		add(w)
	}

	// An agent asks its human the same question reworded; the human says
	// so.
	{
		w := asRunOf("ask-user-same-question-reworded", "human", true)
		for i, qa := range [][2]string{{"What is your budget for hotels per night?", "Around 150 euros"}, {"Could you confirm your nightly hotel budget?", "I already told you: about 150 euros."},
			{"How much would you like to spend per night on accommodation?", "Again, 150 euros a night."}, {"What's the maximum nightly rate you're comfortable with?", "I've said it three times: 150."}, {"Just to be sure, what is your hotel budget?", "150. Please stop asking."}} {
			if i == 3 {
				w.then()
			}
			w.t("", asOK("ask_human", obj{"question": qa[0]}, qa[1]))
		}
		add(w)
	}

	// A planner delegates to a researcher who hands the task to a writer
	// who hands it back, round after round, the task paraphrased.
	{
		w := asRunOf("planner-two-subagents-hand-back", "delegation", true)
		tasks := [][2]string{
			{"Find 2026 EU heat-pump sales by country.", "The writer needs the figures framed as a brief; handing over."},
			{"Frame 2026 EU heat-pump sales by country as a brief.", "I need the sales figures first; handing back to research."},
			{"Research heat-pump sales in the EU for 2026, per country.", "The writer should turn this into a brief; handing over."},
			{"Write a brief on EU heat-pump sales per country in 2026.", "Need the figures from research; handing back."},
			{"Look up per-country EU heat-pump sales for 2026.", "Handing to the writer for the brief."},
			{"Brief: EU heat-pump sales 2026 by country.", "No figures to write from; back to research."},
		}
		for i, tk := range tasks {
			if i == 4 {
				w.then()
			}
			to := "researcher"
			if i%2 == 1 {
				to = "writer"
			}
			w.hand("", to, tk[0], tk[1], nil)
		}
		add(w)
	}

	// A shell agent re-runs the same failing test under other spellings of
	// the command; only the timing line moves.
	{
		w := asRunOf("shell-tests-rerun-respelled", "shell", true)
		for i, c := range []string{"npm test", "npm run test", "npx jest", "npx jest --ci", "npm test -- --silent"} {
			if i == 3 {
				w.then()
			}
			out := fmt.Sprintf("FAIL src/lib/cart.test.ts\n  \u25cf cart \u203a applies coupon\n\n    expect(received).toBe(expected)\n\n    Expected: 90\n    Received: 100\n\nTests:       1 failed, 23 passed, 24 total\nTime:        %d.%03d s", 2+i%2, 341+i*97)
			w.t("Let me run the tests again.", asOK("run_command", obj{"command": c}, elRun("", out, 1)))
		}
		add(w)
	}

	return runs
}
