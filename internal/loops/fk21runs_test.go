package loops

import (
	"fmt"
	"strings"
	"testing"
)

// fk21's hunt for false kills in loops21's rules (an address named by a
// complaint, a read paged past its end, an opaque id in a web address, a
// unit's bare name): legitimate runs an agent on a framework default
// makes, in the shapes real MCP servers answer, each of which a careless
// rule would refuse.

// fk21Known lists the runs whose outcome is not their label's, each with why.
var fk21Known = map[string]string{
	// The guard's standing rules, not loops21's (refused before it too,
	// on 46ab123d): a tool that fails with one template whatever the
	// arguments (a greylisting notice, untyped) is refused at the fourth;
	// a complaint naming a number of four digits or more ("Error 10009")
	// names a thing. Reads answered alike but for what each echoes of its
	// address's query (gid=, node-id=) were one question asked again
	// until loops22: a query parameter that names an id is part of the
	// page (queryIDs).
	// Since loops23 a mail server's 4yz reply (451 4.7.1 greylisted) is
	// a transient failure, worth a retry (smtpTransient).
	"waf-one-ip-each-zone-already": "false_kill",
}

func TestFK21Runs(t *testing.T) {
	checkAsRuns(t, "fk21 legit runs", fk21Runs(), 10, fk21Known)
}

func fk21Runs() []*asRun {
	var runs []*asRun
	add := func(w *asw) { runs = append(runs, w.run) }

	// --- an address named by a complaint ---

	// A mailer sends the day's different alerts to one on-call address;
	// the receiving server greylists the first ones, then takes them.
	{
		w := asRunOf("mail-alerts-one-address-greylisted", "mail", false).acc("write", "send_email")
		for i, s := range []string{"Disk 91% on db-1", "Backup finished late", "Certificate expires in 7 days", "Queue depth above 10k", "Error rate back to normal"} {
			a := obj{"to": arr{"oncall@acme.example"}, "subject": s, "body": s + ". Details in the dashboard."}
			if i < 3 {
				w.t("", asFail("send_email", a, "tool_error", "SMTP 451 4.7.1 <oncall@acme.example>: Recipient address rejected: Greylisted, see https://postgrey.example/help"))
				continue
			}
			w.t("", asOK("send_email", a, fmt.Sprintf("Email sent successfully. Message ID: <%x@mail.acme.example>", 0x7a1b2c+i*911)))
		}
		add(w)
	}
	// A newsletter to several subscribers while the provider rate-limits
	// the sender's IP, then lets mail through.
	{
		w := asRunOf("mail-newsletter-sender-ip-unknown-then-ok", "mail", false).acc("write", "send_email")
		for i, to := range []string{"ana@shop.example", "ben@acme.example", "cy@north.example", "dee@loop.example", "ed@west.example"} {
			a := obj{"to": arr{to}, "subject": "December news", "body": "Hello! Here is what changed this month."}
			if i < 4 {
				w.t("", asFail("send_email", a, "tool_error", "SMTP 550 5.7.1 Service unavailable; Client host [203.0.113.7] blocked using zen.spamhaus.example; unknown sender reputation"))
				continue
			}
			w.t("", asOK("send_email", a, fmt.Sprintf("Email sent successfully. Message ID: <%x@mail.shop.example>", 0x51a2b3+i)))
		}
		add(w)
	}
	// A database agent runs different checks; the server does not know
	// the client's address (its own, not the thing asked) until the
	// allowlist is fixed by the user.
	{
		w := asRunOf("db-checks-client-ip-not-found-then-ok", "database", false)
		qs := []string{"SELECT count(*) FROM orders", "SELECT count(*) FROM refunds", "SELECT max(created_at) FROM events", "SELECT count(*) FROM sessions WHERE active", "SELECT count(*) FROM users"}
		for i, q := range qs {
			if i < 4 {
				w.t("", asFail("query", obj{"sql": q}, "tool_error", `FATAL: no pg_hba.conf entry for host "10.0.3.17", user "report", database "shop", SSL off (entry not found)`))
				continue
			}
			w.t("", asOK("query", obj{"sql": q}, egJSON(arr{obj{"count": 40213}})))
		}
		add(w)
	}
	// A security agent blocks one abusive IP in each zone; four zones
	// already hold it, the fifth takes it.
	{
		w := asRunOf("waf-one-ip-each-zone-already", "ops", false).acc("write", "create_ip_access_rule")
		for i, z := range []string{"shop.example", "api.shop.example", "blog.shop.example", "status.shop.example", "docs.shop.example"} {
			a := obj{"zone": z, "mode": "block", "ip": "198.51.100.23", "notes": "credential stuffing"}
			if i < 4 {
				w.t("", asFail("create_ip_access_rule", a, "tool_error", "Error 10009: an access rule for 198.51.100.23 already exists"))
				continue
			}
			w.t("", asOK("create_ip_access_rule", a, egJSON(obj{"id": fmt.Sprintf("92f17%05x", i*7), "mode": "block", "configuration": obj{"target": "ip", "value": "198.51.100.23"}})))
		}
		add(w)
	}
	// A firewall agent adds rules for one office IP on different ports;
	// the ports are other rules, each refused for its own port.
	{
		w := asRunOf("firewall-one-ip-several-ports", "ops", false).acc("write", "add_firewall_rule")
		for i, p := range []string{"22", "80", "443", "5432", "6379"} {
			a := obj{"firewall": "office-fw", "direction": "in", "protocol": "tcp", "port": p, "source_ips": arr{"203.0.113.40/32"}}
			if i%2 == 0 {
				w.t("", asFail("add_firewall_rule", a, "tool_error", "hcloud: firewall rule already exists: in tcp "+p+" from 203.0.113.40/32 (uniqueness_error)"))
				continue
			}
			w.t("", asOK("add_firewall_rule", a, egJSON(obj{"action": obj{"id": 81234400 + i, "status": "running"}})))
		}
		add(w)
	}
	// An agent fetching different pages from a site that logs the
	// client's address in its not-found page.
	{
		w := asRunOf("fetch-pages-not-found-client-ip", "web", false)
		for _, p := range []string{"about", "pricing", "careers", "press", "contact"} {
			w.t("", asFail("fetch", obj{"url": "https://old.acme.example/" + p}, "tool_error", "Not Found: the requested resource was not found on this server. Client 192.0.2.44 logged."))
		}
		add(w)
	}

	// --- a read paged past its end ---

	// An SRE agent walks an error metric hour by hour for the start of an
	// outage: quiet hours answer alike, then the errors appear.
	{
		w := asRunOf("metrics-hour-by-hour-quiet-then-errors", "ops", false)
		for i := 0; i < 7; i++ {
			res := egJSON(obj{"metric": "http_5xx_total", "values": arr{}})
			if i >= 5 {
				res = egJSON(obj{"metric": "http_5xx_total", "values": arr{arr{1733389200 + i*3600, fmt.Sprint(40 * i)}}})
			}
			w.t("", asOK("query_metric", obj{"metric": "http_5xx_total", "start": 1733370000 + i*3600, "step": 60}, res))
		}
		add(w)
	}
	// A call-centre agent transcribes a recording in segments; the first
	// minutes are hold music.
	{
		w := asRunOf("transcribe-segments-hold-music", "media", false)
		for i := 0; i < 7; i++ {
			res := "[Music]"
			if i >= 5 {
				res = fmt.Sprintf("Agent: Thanks for holding, this is Mia. (segment %d)", i)
			}
			w.t("", asOK("transcribe_segment", obj{"recording_id": "rec_8812", "start": i * 60, "duration": 60}, res))
		}
		add(w)
	}
	// A paginated API read to its end, then one page beyond, once.
	{
		w := asRunOf("api-pages-one-beyond-the-end", "crm", false)
		for p := 1; p <= 4; p++ {
			var rows arr
			for j := 0; p < 4 && j < 3; j++ {
				rows = append(rows, obj{"id": p*10 + j, "name": fmt.Sprintf("Account %d", p*10+j)})
			}
			w.t("", asOK("list_accounts", obj{"page": p, "per_page": 3}, egJSON(obj{"data": rows})))
		}
		add(w)
	}
	// A feed read by offset while new items land at its top: pages
	// shifted, then later pages new.
	{
		w := asRunOf("feed-offset-items-pushed", "news", false)
		for i := 0; i < 6; i++ {
			var items []string
			for j := 0; j < 3; j++ {
				items = append(items, fmt.Sprintf("Story %d", 100-(i*3+j)))
			}
			if i == 1 || i == 2 {
				items = []string{"Story 97", "Story 96", "Story 95"} // new stories pushed these down
			}
			w.t("", asOK("get_feed", obj{"feed": "newest", "offset": i * 3, "limit": 3}, strings.Join(items, "\n")))
		}
		add(w)
	}

	// A travel agent asks the forecast day by day for a week away: the
	// same snowy days, then a clear one.
	{
		w := asRunOf("forecast-day-offset-same-weather", "travel", false)
		for i := 0; i < 6; i++ {
			res := egJSON(obj{"city": "Tromsø", "summary": "Snow showers", "high_c": -3, "low_c": -8, "wind_ms": 5})
			if i == 5 {
				res = egJSON(obj{"city": "Tromsø", "summary": "Clear, aurora likely", "high_c": -6, "low_c": -12, "wind_ms": 2})
			}
			w.t("", asOK("get_forecast", obj{"city": "Tromsø", "day_offset": i}, res))
		}
		add(w)
	}

	// --- an opaque id in a web address ---

	// A finance agent reads each month's tab of one template workbook as
	// CSV: the tabs not yet filled answer their header alone.
	{
		w := asRunOf("sheet-tabs-one-workbook-empty-then-data", "office", false)
		const doc = "1BxiMVs0XRA5nFMdKvBdBZjgmUUqptlbs74OgvE2upms"
		for i, gid := range []string{"0", "1834729", "220471", "99120", "771203", "51934"} {
			res := "Date,Amount,Note\n"
			if i >= 4 {
				res += fmt.Sprintf("2026-0%d-03,120.00,Coffee beans\n", i+1)
			}
			w.t("", asOK("fetch", obj{"url": "https://docs.google.com/spreadsheets/d/" + doc + "/export?format=csv&gid=" + gid}, res))
		}
		add(w)
	}
	// A design agent reads different frames of one Figma file; the
	// unfinished frames are empty.
	{
		w := asRunOf("figma-frames-one-file-empty", "design", false)
		for i, n := range []string{"12-34", "12-80", "14-2", "15-77", "16-3"} {
			res := egJSON(obj{"nodes": obj{}, "message": "Frame has no children"})
			if i == 4 {
				res = egJSON(obj{"nodes": obj{"16:3": obj{"name": "Checkout", "type": "FRAME"}}})
			}
			w.t("", asOK("get_figma_data", obj{"url": "https://www.figma.com/design/Xk3Qa9LmP2bRt7Yc/Shop-app?node-id=" + n}, res))
		}
		add(w)
	}

	// A shopping agent follows a newsletter's product links, each
	// carrying the campaign's id: four products sold out, then one in
	// stock.
	{
		w := asRunOf("product-links-one-campaign-id", "shopping", false)
		for i, p := range []string{"blue-linen-shirt", "red-wool-scarf", "grey-canvas-tote", "green-rain-jacket", "black-leather-belt"} {
			res := "This product is currently sold out. Sign up to be notified when it is back."
			if i == 4 {
				res = "Black leather belt: 39.00 EUR. In stock, ships in 2 days."
			}
			w.t("", asOK("fetch", obj{"url": "https://shop.example/products/" + p + "?utm_source=newsletter&utm_campaign=Dec26Xmas4Ab"}, res))
		}
		add(w)
	}
	// A finance agent asks a quote API for several old tickers, the API
	// key in the address: the delisted ones answer empty.
	{
		w := asRunOf("quotes-api-key-in-url-delisted", "finance", false)
		for i, sym := range []string{"TWTR", "ATVI", "SPLK", "VMW", "AAPL"} {
			res := egJSON(obj{"Global Quote": obj{}})
			if i == 4 {
				res = egJSON(obj{"Global Quote": obj{"01. symbol": "AAPL", "05. price": "241.30"}})
			}
			w.t("", asOK("fetch", obj{"url": "https://www.alphavantage.example/query?function=GLOBAL_QUOTE&symbol=" + sym + "&apikey=Q7xK2mLp9RtV4wZb"}, res))
		}
		add(w)
	}

	// --- a unit by its bare name ---

	// An ops agent checks which services of a host are running: several
	// are stopped, each its own unit.
	{
		w := asRunOf("systemctl-is-active-several-units", "ops", false)
		for _, u := range []string{"redis.service", "redis-sentinel.service", "memcached.service", "postgresql.service", "nginx.service"} {
			w.t("", asOK("run_command", obj{"command": "systemctl is-active " + u}, fiShell(3, "inactive")))
		}
		add(w)
	}
	// The same by bare names.
	{
		w := asRunOf("systemctl-is-active-bare-names", "ops", false)
		for _, u := range []string{"redis", "redis-sentinel", "memcached", "postgresql", "nginx"} {
			w.t("", asOK("run_command", obj{"command": "systemctl is-active " + u}, fiShell(3, "inactive")))
		}
		add(w)
	}
	// A socket-activated service: the socket and the service are two
	// units, asked two ways each.
	{
		w := asRunOf("systemctl-socket-and-service", "ops", false)
		for _, u := range []string{"api.socket", "api.service", "api", "api.socket"} {
			w.t("", asOK("run_command", obj{"command": "systemctl status --no-pager " + u}, fiShell(3, "○ "+u+" - API\n     Active: inactive (dead)")))
		}
		add(w)
	}
	// Units started one after another, each failing alike (a shared
	// dependency is down), then the dependency is started.
	{
		w := asRunOf("systemctl-start-units-dependency", "ops", false).acc("write", "run_command")
		for _, u := range []string{"api.service", "worker.service", "scheduler.service", "web.service"} {
			w.t("", asOK("run_command", obj{"command": "sudo systemctl start " + u}, fiShell(1, "A dependency job for the unit failed. See 'journalctl -xe' for details.")))
		}
		w.t("", asOK("run_command", obj{"command": "sudo systemctl start postgresql.service"}, fiShell(0, "")))
		w.t("", asOK("run_command", obj{"command": "sudo systemctl start api.service"}, fiShell(0, "")))
		add(w)
	}
	return runs
}
