package loops

import (
	"fmt"
	"testing"
)

// fk20's hunt for false kills in loops20's rules (one name in other
// punctuation, one write said again in other words, a heartbeat as
// metadata, '|' without spaces): legitimate runs an agent on a framework
// default makes, in the shapes real MCP servers answer, each of which a
// careless rule would refuse.

// fk20Known lists the runs whose outcome is not their label's, each with why.
var fk20Known = map[string]string{
	// The guard's standing rule, not loops20's: a poll answered twice the
	// same (a stage held while only a clock moves: a heartbeat, as an
	// uptime) is refused at the third; with no clock at all it is too.
	"job-heartbeat-and-stage": "false_kill",
}

func TestFK20Runs(t *testing.T) {
	checkAsRuns(t, "fk20 legit runs", fk20Runs(), 10, fk20Known)
}

func fk20Runs() []*asRun {
	var runs []*asRun
	add := func(w *asw) { runs = append(runs, w.run) }

	// Hosts whose names differ only in punctuation are different
	// machines (a legacy naming scheme beside a new one): each healthy.
	{
		w := asRunOf("hosts-web-1-web.1-web_1-web:1", "ops", false)
		for _, h := range []string{"web-1", "web.1", "web_1", "web:1", "web/1"} {
			w.t("", asOK("get_host_status", obj{"host": h}, obj{"host": h, "status": "healthy", "checks": obj{"ping": "ok", "disk": "ok"}}))
		}
		add(w)
	}
	// Pods named alike in other namespaces' conventions, described.
	{
		w := asRunOf("k8s-pods-punctuation", "ops", false)
		for _, p := range []string{"api-v2-0", "api.v2.0", "api_v2_0", "api-v2.0"} {
			w.t("", asOK("pods_get", obj{"namespace": "prod", "name": p}, obj{"metadata": obj{"name": p, "namespace": "prod"}, "status": obj{"phase": "Running"}}))
		}
		add(w)
	}
	// Versions 1.2.3 and 1-2-3 (a release and a Docker tag of a build),
	// looked up in a registry: none published yet.
	{
		w := asRunOf("versions-dot-and-dash", "code", false)
		for _, v := range []string{"1.2.3", "1-2-3", "1_2_3", "v1.2.3", "1.2.3-rc"} {
			w.t("", asOK("get_release", obj{"repo": "acme/widget", "tag": v}, obj{"tag": v, "found": false}))
		}
		add(w)
	}
	// Dated log indices on two systems: Elasticsearch's daily index
	// logs-2026.12.05 and a file store's logs/2026/12/05, each empty.
	{
		w := asRunOf("dated-indices-other-systems", "ops", false)
		for _, ix := range []string{"logs-2026.12.05", "logs-2026-12-05", "logs_2026_12_05", "logs/2026/12/05"} {
			w.t("", asOK("count", obj{"index": ix, "query": obj{"match": obj{"level": "error"}}}, obj{"count": 0, "index": ix}))
		}
		add(w)
	}
	// A Java package and a folder: a code search for com.acme.billing
	// and com/acme/billing and the Kotlin module com_acme_billing.
	{
		w := asRunOf("java-package-and-folder", "code", false)
		for _, q := range []string{"com.acme.billing", "com/acme/billing", "com_acme_billing", "com-acme-billing"} {
			w.t("", asOK("search_code", obj{"query": q, "path": "."}, obj{"matches": []any{}, "query": q}))
		}
		add(w)
	}
	// A setting grepped in each of its notations (an env var, YAML,
	// a Java property, Python) while a refactor looks for its uses.
	{
		w := asRunOf("setting-grepped-in-notations", "code", false)
		for _, q := range []string{"max_connections", "max-connections", "MAX_CONNECTIONS", "max.connections", "maxConnections"} {
			w.t("", asOK("search_files", obj{"pattern": q, "path": "/repo"}, "No matches found"))
		}
		add(w)
	}
	// Status filters a|b and a | b on different views.
	{
		w := asRunOf("filters-pipes-other-views", "tasks", false)
		for i, v := range []string{"board", "list", "calendar", "inbox"} {
			f := "today|overdue"
			if i%2 == 1 {
				f = "today | overdue"
			}
			w.t("", asOK("get_tasks", obj{"view": v, "filter": f}, obj{"tasks": []any{}, "view": v}))
		}
		add(w)
	}
	// The same filter each time on one view, the tasks list moving.
	{
		w := asRunOf("filter-pipes-tasks-move", "tasks", false)
		for i := 0; i < 5; i++ {
			f := []string{"today|overdue", "today | overdue"}[i%2]
			var ts []any
			for j := 0; j < 4-i; j++ {
				ts = append(ts, obj{"id": fmt.Sprint(8100 + j + i), "content": fmt.Sprintf("task %d", j+i)})
			}
			w.t("", asOK("get_tasks", obj{"filter": f}, obj{"tasks": ts}))
		}
		add(w)
	}
	// A job whose heartbeat moves while its progress also moves.
	{
		w := asRunOf("job-heartbeat-and-progress", "ops", false)
		for i := 0; i < 7; i++ {
			w.t("", asOK("get_job", obj{"job_id": "exp-7731"}, obj{"id": "exp-7731", "status": "running", "progress": 0.1 * float64(i+1), "heartbeat": fmt.Sprintf("2026-12-05T10:4%d:0%dZ", i, i), "last_heartbeat": fmt.Sprintf("2026-12-05T10:4%d:00Z", i)}))
		}
		add(w)
	}
	// A job whose heartbeat moves and whose stage changes.
	{
		w := asRunOf("job-heartbeat-and-stage", "ops", false)
		for i, st := range []string{"queued", "fetching", "fetching", "transforming", "writing", "done"} {
			w.t("", asOK("get_job", obj{"job_id": "etl-17"}, obj{"id": "etl-17", "stage": st, "lastHeartbeatAt": fmt.Sprintf("2026-12-05T10:5%d:00Z", i)}))
		}
		add(w)
	}
	// A to-do agent adding several tasks about one project in similar
	// words.
	{
		w := asRunOf("todo-project-tasks-similar-words", "tasks", false).acc("write", "add_task")
		for i, c := range []string{"Website relaunch: draft the homepage copy", "Website relaunch: review the homepage copy", "Website relaunch: proofread the homepage copy", "Website relaunch: publish the homepage copy", "Website relaunch: translate the homepage copy"} {
			w.t("", asOK("add_task", obj{"project_id": "2203306141", "content": c}, obj{"id": fmt.Sprint(7025000000 + i*7919), "content": c, "project_id": "2203306141", "url": fmt.Sprintf("https://todoist.com/showTask?id=%d", 7025000000+i*7919)}))
		}
		add(w)
	}
	// The same with an Obsidian note's to-do list appended.
	{
		w := asRunOf("obsidian-todos-one-project", "tasks", false).acc("write", "append_content")
		for _, c := range []string{"- [ ] Q1 hiring plan: collect headcount requests", "- [ ] Q1 hiring plan: budget review with finance", "- [ ] Q1 hiring plan: write the job descriptions", "- [ ] Q1 hiring plan: send to the leadership team", "- [ ] Q1 hiring plan: schedule the kickoff"} {
			w.t("", asOK("append_content", obj{"filepath": "Projects/Hiring.md", "content": c + "\n"}, "Successfully appended content to Projects/Hiring.md"))
		}
		add(w)
	}
	// A support agent replying in one shared inbox thread per customer:
	// the same template reworded, each to its own ticket.
	{
		w := asRunOf("support-template-per-ticket", "support", false).acc("write", "reply_ticket")
		for i, b := range []string{"Hi Ana, thanks for reaching out. Your refund is on its way.", "Hello Bo, thank you for reaching out: your refund is on its way.", "Hi Cy, thanks for writing in. The refund is on its way to you.", "Dear Dee, thanks for reaching out. Your refund is on the way.", "Hi Ed, thanks for reaching out; your refund is on its way."} {
			w.t("", asOK("reply_ticket", obj{"ticket_id": 48100 + i, "body": b}, obj{"ok": true, "comment_id": 9900 + i}))
		}
		add(w)
	}
	// A notifier posting alike alerts for different incidents to one
	// Slack channel: the host named in words, no number.
	{
		w := asRunOf("slack-alerts-different-hosts", "ops", false).acc("write", "slack_post_message")
		for i, h := range []string{"alpha", "bravo", "charlie", "delta", "echo"} {
			txt := "Disk almost full on " + h
			w.t("", asOK("slack_post_message", obj{"channel_id": "C07OPSALERT", "text": txt}, obj{"ok": true, "channel": "C07OPSALERT", "ts": fmt.Sprintf("1733392%03d.000%d00", i*17, i), "message": obj{"text": txt, "type": "message"}}))
		}
		add(w)
	}
	// A CI bot announcing one build result per service, read once.
	{
		w := asRunOf("slack-build-passed-per-service", "ops", false).acc("write", "slack_post_message")
		w.t("", asOK("list_workflow_runs", obj{"repo": "acme/mono", "branch": "main"}, obj{"runs": []any{obj{"name": "api", "conclusion": "success"}, obj{"name": "web", "conclusion": "success"}, obj{"name": "worker", "conclusion": "success"}, obj{"name": "docs", "conclusion": "success"}, obj{"name": "billing", "conclusion": "success"}}}))
		var calls []asCall
		for i, s := range []string{"api", "web", "worker", "docs", "billing"} {
			txt := "Build passed for " + s + " on main"
			calls = append(calls, asOK("slack_post_message", obj{"channel_id": "C01BUILDS", "text": txt}, obj{"ok": true, "channel": "C01BUILDS", "ts": fmt.Sprintf("1733393%03d.000%d00", i*13, i)}))
		}
		w.t("", calls...)
		add(w)
	}
	// A deploy narrated to one channel, step by step, nothing read between.
	{
		w := asRunOf("slack-deploy-narrated", "ops", false).acc("write", "slack_post_message")
		for i, s := range []string{"Deploy of the api started", "Deploy of the api: migrations applied", "Deploy of the api: canary healthy", "Deploy of the api finished", "Deploy of the api verified in all regions"} {
			w.t("", asOK("slack_post_message", obj{"channel_id": "C02DEPLOY", "text": s}, obj{"ok": true, "channel": "C02DEPLOY", "ts": fmt.Sprintf("1733394%03d.000%d00", i*11, i)}))
		}
		add(w)
	}
	// PR comments: the same review note on different PRs.
	{
		w := asRunOf("pr-comments-different-prs", "code", false).acc("write", "add_issue_comment")
		for i, b := range []string{"Please add a CHANGELOG entry for this change.", "Could you add a CHANGELOG entry for this change?", "This change needs a CHANGELOG entry, please.", "Please add an entry to the CHANGELOG for this change."} {
			w.t("", asOK("add_issue_comment", obj{"owner": "acme", "repo": "widget", "issue_number": 410 + i, "body": b}, obj{"id": 2000 + i, "html_url": fmt.Sprintf("https://github.com/acme/widget/pull/%d#issuecomment-%d", 410+i, 2000+i)}))
		}
		add(w)
	}
	// Commit messages alike, each commit its own change (a file written
	// between).
	{
		w := asRunOf("commits-typo-fixes", "code", false).acc("write", "git_commit", "write_file")
		for i, f := range []string{"README", "CONTRIBUTING", "SECURITY", "CODE_OF_CONDUCT"} {
			w.t("", asOK("write_file", obj{"path": f + ".md", "content": fmt.Sprintf("# %s\n\nfixed %d\n", f, i)}, "Successfully wrote to "+f+".md"))
			w.t("", asOK("git_commit", obj{"repo_path": "/repo", "message": "Fix a typo in " + f}, fmt.Sprintf("Changes committed successfully with hash %07x", 0xa1b2c3+i*977)))
		}
		add(w)
	}
	// Commits alike with nothing between (files staged before, one commit
	// each with --only).
	{
		w := asRunOf("commits-typo-fixes-no-write-between", "code", false).acc("write", "git_commit")
		for i, f := range []string{"readme", "contributing", "security", "changelog", "license"} {
			w.t("", asOK("git_commit", obj{"repo_path": "/repo", "message": "docs: fix typos in the " + f}, fmt.Sprintf("Changes committed successfully with hash %07x", 0xb1b2c3+i*977)))
		}
		add(w)
	}
	// A translator writing one sentence into several languages, one
	// key, the language a value.
	{
		w := asRunOf("translate-one-sentence-languages", "code", false).acc("write", "set_translation")
		for i, l := range [][2]string{{"fr", "Votre commande est prête."}, {"es", "Su pedido está listo."}, {"pt", "O seu pedido está pronto."}, {"it", "Il tuo ordine è pronto."}, {"de", "Ihre Bestellung ist bereit."}} {
			w.t("", asOK("set_translation", obj{"key": "order.ready", "locale": l[0], "text": l[1]}, obj{"ok": true, "revision": 300 + i}))
		}
		add(w)
	}
	// Translations appended to one file, the language only in the text.
	{
		w := asRunOf("translate-appended-one-file", "code", false).acc("write", "append_file")
		for _, l := range []string{"fr: Votre commande est prête à être retirée.", "es: Su pedido está listo para ser retirado.", "pt: O seu pedido está pronto para ser levantado.", "it: Il tuo ordine è pronto per il ritiro.", "ca: La teva comanda està llesta per ser recollida."} {
			w.t("", asOK("append_file", obj{"path": "i18n/order_ready.txt", "content": l + "\n"}, "Appended to i18n/order_ready.txt"))
		}
		add(w)
	}
	// Release notes: similar bullets for different features appended.
	{
		w := asRunOf("release-notes-bullets", "code", false).acc("write", "append_file")
		for _, l := range []string{"- Added export to CSV for invoices", "- Added export to CSV for orders", "- Added export to CSV for customers", "- Added export to CSV for refunds", "- Added export to CSV for payouts"} {
			w.t("", asOK("append_file", obj{"path": "CHANGELOG.md", "content": l + "\n"}, "Appended to CHANGELOG.md"))
		}
		add(w)
	}
	// Linear issues filed for one epic, each a different sub-task.
	{
		w := asRunOf("linear-subtasks-one-epic", "tasks", false).acc("write", "create_issue")
		for i, ti := range []string{"Checkout redesign: update the cart page", "Checkout redesign: update the payment page", "Checkout redesign: update the shipping page", "Checkout redesign: update the confirmation page", "Checkout redesign: update the receipt email"} {
			w.t("", asOK("create_issue", obj{"teamId": "ENG", "parentId": "ENG-1800", "title": ti}, obj{"id": fmt.Sprintf("a1b2c3d4-0000-4000-8000-%012x", i), "identifier": fmt.Sprintf("ENG-%d", 1841+i), "title": ti, "url": fmt.Sprintf("https://linear.app/acme/issue/ENG-%d", 1841+i)}))
		}
		add(w)
	}
	return runs
}
