package loops

import (
	"fmt"
	"strings"
	"testing"
)

// fk19's hunt for false kills in the thirteenth probe's rules (a command
// that exited non-zero, an HTTP status of 400 or more, one thing complained
// of, writes answered with the one thing they acted on): legitimate runs an
// agent on a framework default makes, in the shapes real MCP servers
// answer, each of which a careless rule would refuse.

// fkKnown lists the runs whose outcome is not their label's, each with why.
var fkKnown = map[string]string{
	// Refused before the thirteenth probe's rules too (3e15e35), and
	// left: an error result of a streak class (conflict, invalid_args),
	// the same text word for word on other records that it does not name,
	// is a value tried for the same complaint.
	"import-users-409-iserror":        "false_kill",
	"jira-different-issues-same-text": "false_kill",
}

func TestFK19Runs(t *testing.T) {
	checkAsRuns(t, "fk19 legit runs", fk19Runs(), 10, fkKnown)
}

func fkHTTP(status int, body string, req int) string {
	return egJSON(obj{"status": status, "headers": obj{"content-type": "text/html; charset=utf-8", "x-request-id": fmt.Sprintf("req_%06x", 0x3c10+req*4099)}, "body": body})
}

func fkSh(stdout, stderr string, code int) string {
	return egJSON(obj{"stdout": stdout, "stderr": stderr, "exit_code": code})
}

func fk19Runs() []*asRun {
	var runs []*asRun
	add := func(w *asw) { runs = append(runs, w.run) }

	// A link checker fetches a page's outbound links; several sites in a
	// row sit behind a bot wall (403, 401), then one answers.
	{
		w := asRunOf("linkcheck-bot-walls-http", "web", false)
		st := []int{403, 403, 401, 403, 403, 200, 404, 200}
		for i, s := range st {
			body := map[int]string{403: "<html><head><title>Just a moment...</title></head><body>Checking your browser before accessing the site.</body></html>", 401: "<html><body>401 Authorization Required</body></html>", 404: "<html><body><h1>Not Found</h1></body></html>", 200: fmt.Sprintf("<html><head><title>Docs page %d</title></head><body>...</body></html>", i)}[s]
			w.t("", asOK("http_request", obj{"method": "HEAD", "url": fmt.Sprintf("https://site%d.example/docs/page-%d", i, i*7)}, fkHTTP(s, body, i)))
		}
		add(w)
	}
	// The same run with a fetch tool that answers failures as isError
	// results.
	{
		w := asRunOf("linkcheck-bot-walls-iserror", "web", false)
		st := []int{403, 403, 401, 403, 403, 200, 404, 200}
		for i, s := range st {
			u := fmt.Sprintf("https://site%d.example/docs/page-%d", i, i*7)
			if s == 200 {
				w.t("", asOK("fetch", obj{"url": u}, fmt.Sprintf("Contents of %s:\n# Docs page %d\n...", u, i)))
				continue
			}
			w.t("", asFail("fetch", obj{"url": u}, "tool_error", fmt.Sprintf("Failed to fetch %s - status code %d", u, s)))
		}
		add(w)
	}
	// A crawler whose pages all sit on one CDN that answers 403 to bots:
	// the same body on distinct pages.
	{
		w := asRunOf("crawler-one-site-403s-then-sitemap", "web", false)
		for i, p := range []string{"/pricing", "/about", "/blog", "/careers", "/contact"} {
			w.t("", asOK("http_request", obj{"method": "GET", "url": "https://vendor.example" + p}, fkHTTP(403, "<html><body>Access denied. Error code 1020</body></html>", i)))
		}
		w.t("", asOK("http_request", obj{"method": "GET", "url": "https://vendor.example/sitemap.xml"}, fkHTTP(200, "<urlset><url><loc>https://vendor.example/pricing</loc></url></urlset>", 9)))
		add(w)
	}
	// Dead links, one after another.
	{
		w := asRunOf("linkcheck-dead-links-404", "web", false)
		for i := 0; i < 6; i++ {
			w.t("", asOK("http_request", obj{"method": "GET", "url": fmt.Sprintf("https://blog.example/2019/%02d/post-%d", i+1, 30+i)}, fkHTTP(404, "<html><body><h1>404 Not Found</h1></body></html>", i)))
		}
		add(w)
	}
	// A status checker: several hosts down for maintenance.
	{
		w := asRunOf("uptime-several-hosts-503", "web", false)
		for i, h := range []string{"api", "auth", "cdn", "search", "status", "www"} {
			s := 503
			if i == 5 {
				s = 200
			}
			w.t("", asOK("http_request", obj{"method": "GET", "url": "https://" + h + ".corp.example/healthz"}, fkHTTP(s, map[int]string{503: "Service Unavailable", 200: "ok"}[s], i)))
		}
		add(w)
	}
	// An importer creating users; several exist already (409 on each).
	{
		w := asRunOf("import-users-409-each-different", "api", false).acc("write", "http_request")
		for i, e := range []string{"ana", "bo", "cy", "dee", "ed", "flo"} {
			s, body := 409, egJSON(obj{"error": "conflict", "message": "A user with this email already exists"})
			if i >= 4 {
				s, body = 201, egJSON(obj{"id": fmt.Sprintf("usr_%04d", 100+i)})
			}
			w.t("", asOK("http_request", obj{"method": "POST", "url": "https://api.corp.example/v1/users", "body": obj{"email": e + "@corp.example", "name": strings.ToUpper(e[:1]) + e[1:]}}, egJSON(obj{"status": s, "headers": obj{"x-request-id": fmt.Sprintf("r%d", i)}, "body": body})))
		}
		add(w)
	}
	// The same with a tool that refuses with an error result.
	{
		w := asRunOf("import-users-409-iserror", "api", false).acc("write", "create_user")
		for i, e := range []string{"ana", "bo", "cy", "dee", "ed", "flo"} {
			if i >= 4 {
				w.t("", asOK("create_user", obj{"email": e + "@corp.example"}, egJSON(obj{"id": fmt.Sprintf("usr_%04d", 100+i)})))
				continue
			}
			w.t("", asFail("create_user", obj{"email": e + "@corp.example"}, "conflict", "A user with this email already exists"))
		}
		add(w)
	}
	// A test-driven coding loop: the same test fails while the agent adds
	// the pieces it needs in other files, then passes.
	{
		w := asRunOf("tdd-same-failure-edits-other-files", "code", false).acc("write", "execute_command", "write_file")
		fail := fkSh("--- FAIL: TestInvoiceTotal (0.00s)\n    invoice_test.go:14: got 0, want 312.40\nFAIL\nFAIL\tshop/invoice\t0.004s", "", 1)
		for i, f := range []string{"invoice/line.go", "invoice/tax.go", "invoice/discount.go", "invoice/round.go"} {
			w.t("", asOK("execute_command", obj{"command": "go test ./invoice/"}, fail))
			w.t("", asOK("write_file", obj{"path": f, "content": fmt.Sprintf("package invoice\n\n// step %d\nfunc f%d() {}\n", i, i)}, "Successfully wrote to "+f))
		}
		w.t("", asOK("execute_command", obj{"command": "go test ./invoice/"}, fkSh("ok  \tshop/invoice\t0.004s", "", 0)))
		add(w)
	}
	// The same with the test run through pytest and edits by edit_block on
	// other files.
	{
		w := asRunOf("tdd-pytest-same-failure-edit-blocks", "code", false).acc("write", "execute_command", "edit_block")
		fail := fkSh("============ FAILURES ============\n___ test_checkout ___\nE   AssertionError: assert 404 == 200\nFAILED tests/test_api.py::test_checkout - AssertionError: assert 404 == 200\n1 failed in 0.31s", "", 1)
		for i, f := range []string{"app/routes.py", "app/views.py", "app/urls.py", "app/__init__.py"} {
			w.t("", asOK("execute_command", obj{"command": "pytest -x tests/test_api.py"}, fail))
			w.t("", asOK("edit_block", obj{"file_path": f, "old_string": fmt.Sprintf("# end %d", i), "new_string": fmt.Sprintf("checkout_%d = True\n# end %d", i, i)}, "Successfully applied 1 edit to "+f))
		}
		w.t("", asOK("execute_command", obj{"command": "pytest -x tests/test_api.py"}, fkSh("1 passed in 0.29s", "", 0)))
		add(w)
	}
	// grep finding nothing for several patterns.
	{
		w := asRunOf("grep-no-match-several-patterns", "shell", false).acc("write", "execute_command")
		for _, p := range []string{"OrderService", "order_service", "orderSvc", "OrdersClient", "ordersClient"} {
			w.t("", asOK("execute_command", obj{"command": "grep -rn " + p + " src"}, fkSh("", "", 1)))
		}
		w.t("", asOK("execute_command", obj{"command": "grep -rln orders src"}, fkSh("src/api/orders.py", "", 0)))
		add(w)
	}
	// grep over logs for error lines that are not there, under other
	// patterns (the command names error; the output is empty).
	{
		w := asRunOf("grep-logs-for-errors-none", "shell", false).acc("write", "execute_command")
		for _, p := range []string{"ERROR", "Traceback", "FATAL", "panic:", "OOMKilled"} {
			w.t("", asOK("execute_command", obj{"command": "grep -c '" + p + "' /var/log/app/app.log"}, fkSh("0\n", "", 1)))
		}
		add(w)
	}
	// git diff --exit-code on several files whose changes touch error
	// handling: exit 1 says "changed", and the diff names errors.
	{
		w := asRunOf("git-diff-exit-code-error-handling", "shell", false).acc("write", "execute_command")
		for i, f := range []string{"api/orders.go", "api/users.go", "api/cart.go", "api/tax.go", "api/ship.go"} {
			diff := fmt.Sprintf("diff --git a/%s b/%s\n--- a/%s\n+++ b/%s\n@@ -%d,3 +%d,3 @@\n-\t\treturn err\n+\t\treturn fmt.Errorf(\"load %d: %%w\", err)", f, f, f, f, 10+i*7, 10+i*7, i)
			w.t("", asOK("execute_command", obj{"command": "git diff --exit-code " + f}, fkSh(diff, "", 1)))
		}
		add(w)
	}
	// test -f on candidate config paths.
	{
		w := asRunOf("test-f-candidate-configs", "shell", false).acc("write", "execute_command")
		for i, p := range []string{"./config.yaml", "./config/app.yaml", "~/.config/app/config.yaml", "/etc/app/config.yaml", "/etc/app.yaml"} {
			c := 1
			if i == 4 {
				c = 0
			}
			w.t("", asOK("execute_command", obj{"command": "test -f " + p + " && echo found"}, fkSh(map[int]string{0: "found", 1: ""}[c], "", c)))
		}
		add(w)
	}
	// ls on candidate paths: each not there (stderr says so).
	{
		w := asRunOf("ls-candidate-paths-not-found", "shell", false).acc("write", "execute_command")
		for i, p := range []string{"./config.yaml", "./config/app.yaml", "/etc/app/config.yaml", "/opt/app/etc/config.yaml", "/srv/app/config.yaml"} {
			if i == 4 {
				w.t("", asOK("execute_command", obj{"command": "ls -l " + p}, fkSh("-rw-r--r-- 1 app app 812 Dec  1 09:12 "+p, "", 0)))
				continue
			}
			w.t("", asOK("execute_command", obj{"command": "ls -l " + p}, fkSh("", "ls: cannot access '"+p+"': No such file or directory", 2)))
		}
		add(w)
	}
	// pip show for several packages, most not installed.
	{
		w := asRunOf("pip-show-several-not-installed", "shell", false).acc("write", "execute_command")
		for i, p := range []string{"numpy", "pandas", "scipy", "polars", "pyarrow"} {
			if i == 4 {
				w.t("", asOK("execute_command", obj{"command": "pip show " + p}, fkSh("Name: pyarrow\nVersion: 17.0.0", "", 0)))
				continue
			}
			w.t("", asOK("execute_command", obj{"command": "pip show " + p}, fkSh("", "WARNING: Package(s) not found: "+p, 1)))
		}
		add(w)
	}
	// A which on several binaries, none there (some shells print to
	// stderr).
	{
		w := asRunOf("which-several-binaries-missing", "shell", false).acc("write", "execute_command")
		for _, b := range []string{"rg", "fd", "jq", "yq", "bat"} {
			w.t("", asOK("execute_command", obj{"command": "which " + b}, fkSh("", "which: no "+b+" in (/usr/local/bin:/usr/bin:/bin)", 1)))
		}
		add(w)
	}
	// diff of expected outputs that name failures: exit 1 means they
	// differ.
	{
		w := asRunOf("diff-golden-files-naming-failures", "shell", false).acc("write", "execute_command")
		for i, c := range []string{"timeout", "refused", "reset", "dns", "tls"} {
			w.t("", asOK("execute_command", obj{"command": fmt.Sprintf("diff testdata/%s.golden out/%s.txt", c, c)}, fkSh(fmt.Sprintf("%dc%d\n< connect failed: %s\n---\n> connect failed: %s (attempt %d)", 3+i, 3+i, c, c, i+1), "", 1)))
		}
		add(w)
	}
	// Lights turned on one by one, each answered "ok".
	{
		w := asRunOf("lights-several-answered-ok", "smart-home", false).acc("write", "turn_on")
		on := []string{}
		for _, l := range []string{"Kitchen", "Hall", "Porch", "Garage", "Study"} {
			w.t("", asOK("turn_on", obj{"name": l + " light"}, "ok"))
			on = append(on, l)
			w.t("", asOK("get_states", obj{"domain": "light"}, "on: "+strings.Join(on, ", ")))
		}
		add(w)
	}
	// Lights turned on one by one, each answered with the hub's id; the
	// agent reads the weather between (another thing, unchanged).
	{
		w := asRunOf("lights-answered-hub-id", "smart-home", false).acc("write", "HassTurnOn")
		for _, l := range []string{"Kitchen", "Hall", "Porch", "Garage", "Study"} {
			w.t("", asOK("HassTurnOn", obj{"name": l + " light"}, egJSON(obj{"success": true, "hub_id": "hue-bridge-01"})))
			w.t("", asOK("GetLiveContext", obj{}, "- names: "+l+" light\n  domain: light\n  state: 'on'\n- names: Outdoor\n  domain: weather\n  state: cloudy"))
		}
		add(w)
	}
	// Lights turned on by area, each answered with the same scene id.
	{
		w := asRunOf("lights-areas-answered-same-id", "smart-home", false).acc("write", "HassTurnOn")
		for _, a := range []string{"kitchen", "hall", "porch", "garage", "study"} {
			w.t("", asOK("HassTurnOn", obj{"area": a, "domain": "light"}, egJSON(obj{"response_type": "action_done", "data": obj{"success": arr{obj{"id": "scene.evening", "type": "scene"}}}})))
			w.t("", asOK("GetLiveContext", obj{}, "evening scene active"))
		}
		add(w)
	}
	// A notes tool creating new objects: a new id each time.
	{
		w := asRunOf("create-notes-new-ids", "notes", false).acc("write", "create_note")
		for i, n := range []string{"Buy milk", "Call Bo", "Pay invoice", "Book flight", "Renew passport"} {
			w.t("", asOK("create_note", obj{"title": n}, egJSON(obj{"id": fmt.Sprintf("note_%05d", 4100+i), "title": n})))
			w.t("", asOK("list_notes", obj{}, egJSON(obj{"count": i + 1})))
		}
		add(w)
	}
	// Jira: several issues, each refused with the same workflow error
	// naming its key.
	{
		w := asRunOf("jira-different-issues-same-workflow-error", "tracker", false).acc("write", "jira_transition_issue")
		for i, k := range []string{"SHOP-401", "SHOP-402", "SHOP-405", "SHOP-409", "SHOP-411"} {
			if i == 4 {
				w.t("", asOK("jira_transition_issue", obj{"issue_key": k, "transition_id": "31"}, egJSON(obj{"success": true, "issue": obj{"key": k, "status": "Done"}})))
				continue
			}
			w.t("", asFail("jira_transition_issue", obj{"issue_key": k, "transition_id": "31"}, "invalid_args", fmt.Sprintf("Transition '31' is not valid for issue %s in status 'Blocked'", k)))
		}
		add(w)
	}
	// Jira: several issues, each refused with the same text word for word.
	{
		w := asRunOf("jira-different-issues-same-text", "tracker", false).acc("write", "jira_transition_issue")
		for i, k := range []string{"SHOP-401", "SHOP-402", "SHOP-405", "SHOP-409", "SHOP-411"} {
			if i == 4 {
				w.t("", asOK("jira_transition_issue", obj{"issue_key": k, "transition_id": "31"}, egJSON(obj{"success": true, "issue": obj{"key": k, "status": "Done"}})))
				continue
			}
			w.t("", asFail("jira_transition_issue", obj{"issue_key": k, "transition_id": "31"}, "invalid_args", "Field 'resolution' is required"))
		}
		add(w)
	}
	// Items added by name to one cart, answered with the cart's id; the
	// shipping estimate (a flat rate) read after each does not change.
	{
		w := asRunOf("cart-items-by-name-answered-cart-id", "shop", false).acc("write", "add_to_cart")
		for _, p := range []string{"Blue mug", "Tea towel", "Oak coaster", "Linen napkin", "Teapot"} {
			w.t("", asOK("add_to_cart", obj{"product_name": p, "qty": 1}, egJSON(obj{"cart_id": "cart_77", "status": "added"})))
			w.t("", asOK("shipping_estimate", obj{"zip": "1000-001"}, egJSON(obj{"carrier": "CTT", "days": 2, "price": "4.90"})))
		}
		add(w)
	}
	// Songs queued by title to one playlist, answered with its id.
	{
		w := asRunOf("playlist-songs-by-title-answered-playlist-id", "music", false).acc("write", "add_to_playlist")
		for _, p := range []string{"So What", "Blue in Green", "Freddie Freeloader", "All Blues", "Flamenco Sketches"} {
			w.t("", asOK("add_to_playlist", obj{"query": p + " Miles Davis"}, egJSON(obj{"snapshot": "ok", "playlist": obj{"id": "37i9dQZF1DX4wta20PHgwo", "name": "Evening"}})))
			w.t("", asOK("get_playback_state", obj{}, egJSON(obj{"is_playing": true, "item": "Kind of Blue (intro)", "device": "Living room"})))
		}
		add(w)
	}
	// curl -f on a page's links through a shell: several dead, curl's
	// stderr the same for each.
	{
		w := asRunOf("curl-f-dead-links-shell", "shell", false).acc("write", "execute_command")
		for i := 0; i < 6; i++ {
			u := fmt.Sprintf("https://blog.example/2019/%02d/post-%d", i+1, 30+i)
			if i == 5 {
				w.t("", asOK("execute_command", obj{"command": "curl -sSfI " + u}, fkSh("HTTP/2 200\ncontent-type: text/html", "", 0)))
				continue
			}
			w.t("", asOK("execute_command", obj{"command": "curl -sSfI " + u}, fkSh("", "curl: (22) The requested URL returned error: 404", 22)))
		}
		add(w)
	}
	// git cat-file -e on several candidate commits from a changelog, most
	// gone after a squash.
	{
		w := asRunOf("git-cat-file-candidate-commits", "shell", false).acc("write", "execute_command")
		for i, c := range []string{"3f9a2c1", "a1b2c3d", "9e8d7c6", "0badf00", "6f1621d"} {
			if i == 4 {
				w.t("", asOK("execute_command", obj{"command": "git cat-file -e " + c + "^{commit} && echo yes"}, fkSh("yes", "", 0)))
				continue
			}
			w.t("", asOK("execute_command", obj{"command": "git cat-file -e " + c + "^{commit} && echo yes"}, fkSh("", "fatal: Not a valid object name "+c+"^{commit}", 128)))
		}
		add(w)
	}
	// Lint each package in turn; several fail the same way (a config
	// missing in each), which the agent reports.
	{
		w := asRunOf("lint-each-package-same-config-error", "shell", false).acc("write", "execute_command")
		for _, p := range []string{"packages/api", "packages/web", "packages/cli", "packages/worker", "packages/shared"} {
			w.t("", asOK("execute_command", obj{"command": "cd " + p + " && npx eslint ."}, fkSh("", "Oops! Something went wrong! :(\n\nESLint: 9.14.0\n\nESLint couldn't find an eslint.config.(js|mjs|cjs) file.", 2)))
		}
		add(w)
	}
	// ping a list of hosts; several down.
	{
		w := asRunOf("ping-hosts-several-down", "shell", false).acc("write", "execute_command")
		for i, h := range []string{"10.0.0.11", "10.0.0.12", "10.0.0.13", "10.0.0.14", "10.0.0.15"} {
			if i == 4 {
				w.t("", asOK("execute_command", obj{"command": "ping -c1 -W1 " + h}, fkSh("1 packets transmitted, 1 received, 0% packet loss", "", 0)))
				continue
			}
			w.t("", asOK("execute_command", obj{"command": "ping -c1 -W1 " + h}, fkSh("PING "+h+" 56(84) bytes of data.\n\n--- "+h+" ping statistics ---\n1 packets transmitted, 0 received, 100% packet loss, time 0ms", "", 1)))
		}
		add(w)
	}
	return runs
}
