package loops

import (
	"fmt"
	"strings"
	"testing"
)

// The nineteenth probe: written before reading the detectors' rules in
// detail, with the tool names and answer shapes of cloud CLIs, package
// managers, CI pipelines, spreadsheets, mail, vector search and
// retrieval, code review, customer support, a planner that re-plans,
// supervisor/worker graphs and handoffs between agents, in kinds of work
// the eighteen before it cover little: a deploy retried under respellings
// of its region while the permission stays missing, a pip install whose
// pins are respelled into one conflict, a CI run re-run into the same
// failing test, a spreadsheet formula respelled into the same #N/A, a
// mailbox searched under synonyms that brings the same two messages, a
// vector search reworded that brings the same chunks, a supervisor
// sending a coder and a reviewer round while the head commit never moves,
// triage and billing agents handing a customer to each other, a refund
// respelled into the same refusal, a planner re-planning the same plan in
// other words while its first step fails alike, an S3 copy denied under
// respellings of its path, a retrieval and an answer asked again while
// the documents say nothing, a CI run polled while it stays queued, an
// Excel range read under respellings, a poetry lock retried under flags
// into one solver failure, a supervisor rewording a task its worker
// fails alike, a SOQL query reworded that brings the same first page, an
// SMS sent under spellings of one unsubscribed number, a conversation
// reassigned back and forth between two agents, and a row appended again
// and again while each answer names another range. Each loop has a
// legitimate near-miss: the role granted, a pin loosened, failures fixed
// test by test, the lookup key trimmed, a search refined, a retrieval that
// brings new chunks, a review that moves, a handoff that ends, the
// refundable amount taken, a plan that advances, the right profile,
// questions that find their answer, a run that progresses, a year's
// sheets read one by one, the dependency upgraded, the replica used, a
// listing paged, a batch of SMS, a conversation handed on with news, and
// a batch of orders appended.
//
// A loop is marked as the ninth probe marks them: the fourth call that
// asks again in other words and learns nothing, the third identical poll
// or write, the third round of a pair or ring of calls (or of hand-offs)
// that learns nothing. A tool without readOnlyHint is declared a write,
// as it is through the gateway.
//
// It is written and played with the assistants probe's writer and driver
// (assistruns_test.go).

// s19Known lists the runs whose outcome is not their label's, each with why.
var s19Known = map[string]string{
	// As written, on the guard then (8237a60f): 12 of 20 loops detected,
	// none early, 8 missed; 1 of 20 legit runs refused (a supervisor's
	// coder pushing another head each round, its task the same words).
	// Since its fixes, 15 of 20 and none refused; since the twentieth
	// probe's, 16: pins respelled (==2.31, ==2.31.0, ==2.31.*) into one
	// conflict that names its packages (namedThings). Left:
	// a log whose last line counts the attempt, and a re-run whose answer
	// does: a counter that moves reads as news;
	"gh-rerun-same-test-fails": "missed",
	// a formula respelled beyond case and spaces ($A:$B, 0 for FALSE,
	// 'Prices'!): each write is of other contents;
	"sheets-formula-respelled-na": "missed",
	// a run polled whose updated_at moves: when something happened is
	// the answer's (docs/LOOPS.md), and says the run changed;
	"gh-run-polled-stays-queued": "missed",
	// a query language's text respelled (fields reordered, lower-cased, a
	// clause that filters nothing): not free text, so other questions;
	"soql-reworded-first-page": "missed",
}

func TestNineteenthRuns(t *testing.T) {
	checkAsRuns(t, "nineteenth probe", nineteenthRuns(), 40, s19Known)
}

// s19As writes turns of another agent into the same run (an OpenAI Agents
// SDK run whose agents hand the conversation to each other).
func s19As(w *asw, agent string) *asw { return &asw{run: w.run, agent: agent, out: w.out} }

// s19Chat is an OpenAI-style chat completion through the model proxy.
func s19Chat(id, content string, prompt, completion int) string {
	return egJSON(obj{"id": id, "object": "chat.completion", "created": 1796198400 + prompt, "model": "gpt-4.1-2025-04-14",
		"choices": arr{obj{"index": 0, "message": obj{"role": "assistant", "content": content}, "finish_reason": "stop"}},
		"usage":   obj{"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion}})
}

// s19Chunks is a Chroma MCP server's query answer: ids, documents and
// distances, one list per query text.
func s19Chunks(ids []string, docs []string, dist []float64) string {
	return egJSON(obj{"ids": arr{ids}, "documents": arr{docs}, "distances": arr{dist}, "metadatas": arr{func() arr {
		var m arr
		for _, id := range ids {
			m = append(m, obj{"source": "handbook/" + strings.SplitN(id, "#", 2)[0] + ".md"})
		}
		return m
	}()}})
}

// s19Run is a GitHub Actions workflow run.
func s19Run(id int, status, conclusion, updated string) string {
	o := obj{"id": id, "name": "ci", "head_branch": "main", "head_sha": "4be1d07c2a9e", "status": status, "event": "push",
		"html_url": fmt.Sprintf("https://github.com/shop/api/actions/runs/%d", id), "updated_at": updated, "run_attempt": 1}
	if conclusion != "" {
		o["conclusion"] = conclusion
	} else {
		o["conclusion"] = nil
	}
	return egJSON(o)
}

// s19Mail is a Microsoft Graph message list.
func s19Mail(ms ...[3]string) string {
	var v arr
	for _, m := range ms {
		v = append(v, obj{"id": "AAMkAGI2" + m[0], "subject": m[1], "from": obj{"emailAddress": obj{"address": m[2]}}, "receivedDateTime": "2026-11-" + m[0][:2] + "T09:12:00Z", "hasAttachments": false})
	}
	if v == nil {
		v = arr{}
	}
	return egJSON(obj{"@odata.context": "https://graph.microsoft.com/v1.0/$metadata#users('me')/messages", "value": v})
}

// s19Records is a Salesforce query answer.
func s19Records(from, n, total int, next string) string {
	var rs arr
	for i := from; i < from+n; i++ {
		rs = append(rs, obj{"attributes": obj{"type": "Account"}, "Id": fmt.Sprintf("001Hs00003Xq%04dAAA", i), "Name": fmt.Sprintf("Account %d", i), "Industry": []string{"Retail", "Logistics", "Food"}[i%3]})
	}
	o := obj{"totalSize": total, "done": next == "", "records": rs}
	if next != "" {
		o["nextRecordsUrl"] = next
	}
	return egJSON(o)
}

func nineteenthRuns() []*asRun {
	var runs []*asRun
	add := func(w *asw) { runs = append(runs, w.run) }

	// ===================== loops =====================

	// A cloud agent deploys to Cloud Run under respellings of its region
	// and flags; the same permission is missing each time.
	{
		w := asRunOf("gcloud-deploy-region-respelled", "cloud", true).acc("write", "run_command")
		for i, c := range []string{
			"gcloud run deploy orders-api --image=europe-docker.pkg.dev/shop/api/orders:1.14 --region=europe-west1",
			"gcloud run deploy orders-api --region europe-west1 --image europe-docker.pkg.dev/shop/api/orders:1.14",
			"gcloud run deploy orders-api --image=europe-docker.pkg.dev/shop/api/orders:1.14 --region=europe-west1 --quiet",
			"gcloud run deploy orders-api --image=europe-docker.pkg.dev/shop/api/orders:1.14 --region=EUROPE-WEST1 --platform=managed",
			"gcloud --quiet run deploy orders-api --region=europe-west1 --image=europe-docker.pkg.dev/shop/api/orders:1.14",
		} {
			if i == 3 {
				w.then()
			}
			w.t("Deploying again.", asOK("run_command", obj{"command": c}, s17Shell(1, "",
				"Deploying container to Cloud Run service [orders-api] in project [shop-prod] region [europe-west1]\nX Deploying...\nERROR: (gcloud.run.deploy) PERMISSION_DENIED: Permission 'run.services.update' denied on resource 'namespaces/shop-prod/services/orders-api' (or it may not exist).")))
		}
		add(w)
	}

	// A Python agent installs pins respelled (==2.31 and ==2.31.0, order
	// shuffled); pip's resolver names the same conflict each time.
	{
		w := asRunOf("pip-pins-respelled-conflict", "packages", true).acc("write", "run_command")
		for i, c := range []string{
			"pip install requests==2.31.0 urllib3==1.26.18 botocore==1.34.10",
			"pip install urllib3==1.26.18 requests==2.31 botocore==1.34.10",
			"pip install 'requests==2.31.*' 'urllib3==1.26.18' 'botocore==1.34.10'",
			"python -m pip install botocore==1.34.10 requests==2.31.0 urllib3==1.26.18",
			"pip install --no-cache-dir requests==2.31.0 urllib3==1.26.18 botocore==1.34.10",
		} {
			if i == 3 {
				w.then()
			}
			w.t("Installing the pins.", asOK("run_command", obj{"command": c, "cwd": "/workspace/etl"}, s17Shell(1, "Collecting requests==2.31.0\n  Using cached requests-2.31.0-py3-none-any.whl (62 kB)\n",
				"ERROR: Cannot install botocore==1.34.10 and urllib3==1.26.18 because these package versions have conflicting dependencies.\n\nThe conflict is caused by:\n    The user requested urllib3==1.26.18\n    botocore 1.34.10 depends on urllib3<2.1 and >=1.25.4; python_version >= \"3.10\"\n\nERROR: ResolutionImpossible: for help visit https://pip.pypa.io/en/latest/topics/dependency-resolution/#dealing-with-dependency-conflicts")))
		}
		add(w)
	}

	// A CI agent re-runs a failed workflow and reads its log; the same test
	// fails the same way in each new attempt.
	{
		w := asRunOf("gh-rerun-same-test-fails", "ci", true).acc("write", "rerun_failed_jobs")
		for r := 0; r < 4; r++ {
			if r == 2 {
				w.then()
			}
			w.t("Re-running the failed jobs.", asOK("rerun_failed_jobs", obj{"owner": "shop", "repo": "api", "run_id": 11873402215}, obj{"message": "Re-run of failed jobs requested", "run_attempt": r + 2}))
			w.t("Reading the job's log.", asOK("get_job_logs", obj{"owner": "shop", "repo": "api", "run_id": 11873402215, "failed_only": true},
				fmt.Sprintf("2026-12-06T06:%02d:14.118Z ============================= FAILURES =============================\n2026-12-06T06:%02d:14.119Z ____________ test_refund_rounds_half_even ____________\n2026-12-06T06:%02d:14.120Z >       assert refund(Decimal('10.005')) == Decimal('10.00')\n2026-12-06T06:%02d:14.120Z E       AssertionError: assert Decimal('10.01') == Decimal('10.00')\n2026-12-06T06:%02d:14.121Z FAILED tests/test_refunds.py::test_refund_rounds_half_even - AssertionError\n2026-12-06T06:%02d:14.121Z ======== 1 failed, 412 passed in 38.%02ds ========\nAttempt %d", 20+r*4, 20+r*4, 20+r*4, 20+r*4, 20+r*4, 20+r*4, 11+r*7, r+2)))
		}
		add(w)
	}

	// A spreadsheet agent writes one lookup formula respelled; the cell
	// reads back #N/A each time.
	{
		w := asRunOf("sheets-formula-respelled-na", "spreadsheet", true).acc("write", "sheets_update_values")
		for r, f := range []string{
			"=VLOOKUP(A2,Prices!A:B,2,FALSE)",
			"=vlookup(A2, Prices!A:B, 2, false)",
			"=VLOOKUP(A2,Prices!$A:$B,2,0)",
			"=VLOOKUP($A2,'Prices'!A:B,2,FALSE)",
		} {
			if r == 3 {
				w.then()
			}
			w.t("Writing the price lookup.", asOK("sheets_update_values", obj{"spreadsheetId": "1hQk9vOrdersQ4", "range": "Orders!C2", "values": arr{arr{f}}, "valueInputOption": "USER_ENTERED"},
				obj{"spreadsheetId": "1hQk9vOrdersQ4", "updatedRange": "Orders!C2", "updatedRows": 1, "updatedColumns": 1, "updatedCells": 1}))
			w.t("Reading it back.", asOK("sheets_get_values", obj{"spreadsheetId": "1hQk9vOrdersQ4", "range": "Orders!A2:C2"}, obj{"range": "Orders!A2:C2", "majorDimension": "ROWS", "values": arr{arr{"SKU-1042 ", "3", "#N/A"}}}))
		}
		add(w)
	}

	// A mail assistant searches for an invoice under synonyms; the same
	// two newsletters come back.
	{
		w := asRunOf("outlook-search-synonyms-same-two", "mail", true)
		res := s19Mail([3]string{"28aQ1", "Your November statement is ready", "news@bank.example"}, [3]string{"21bX7", "Billing changes coming in 2027", "updates@cloudhost.example"})
		for i, q := range []string{"invoice Hetzner November", "Hetzner bill November", "November Hetzner invoice PDF", "hetzner rechnung november", "Hetzner billing statement Nov"} {
			if i == 3 {
				w.then()
			}
			w.t("Searching for the invoice.", asOK("search_messages", obj{"query": q, "top": 10}, res))
		}
		add(w)
	}

	// A RAG agent rewords its retrieval query; the same three chunks come
	// back, their distances moving in the third decimal.
	{
		w := asRunOf("chroma-query-reworded-same-chunks", "rag", true)
		ids := []string{"leave-policy#4", "leave-policy#5", "benefits#12"}
		docs := []string{"Employees accrue 2.08 days of paid leave per month worked.", "Unused leave may be carried over until 31 March of the following year.", "Parental leave is covered in the parental leave policy."}
		for i, q := range []string{"How many days of sick leave do contractors get?", "sick leave entitlement for contractors", "contractor sick days allowance", "Do freelancers get paid sick leave?", "sick leave rules for external contractors"} {
			if i == 3 {
				w.then()
			}
			w.t("Retrieving.", asOK("chroma_query_documents", obj{"collection_name": "hr-handbook", "query_texts": arr{q}, "n_results": 3},
				s19Chunks(ids, docs, []float64{0.412 + float64(i)*0.003, 0.455 - float64(i)*0.002, 0.501 + float64(i)*0.001})))
		}
		add(w)
	}

	// A supervisor graph sends a pull request to a coder and a reviewer in
	// turn; the coder says it addressed the review, the head commit never
	// moves, and the reviewer asks for the same change in other words.
	{
		w := asRunOf("supervisor-coder-reviewer-head-stays", "graph", true)
		for r, rv := range []string{
			"Changes requested on PR #412 (head 9f3c2e1): apply_discount crashes when voucher is None (shop/basket.py:88).",
			"Still changes requested on PR #412 at 9f3c2e1: a None voucher makes apply_discount raise (shop/basket.py line 88).",
			"PR #412, head 9f3c2e1: requesting changes again, apply_discount must handle voucher=None (basket.py:88).",
			"Requesting changes on #412 (9f3c2e1): shop/basket.py:88 still fails on a missing voucher in apply_discount.",
		} {
			if r == 2 {
				w.then()
			}
			w.hand("Sending the review to the coder.", "coder", "Address the latest review on PR #412.", "Addressed the review on PR #412; head is 9f3c2e1.", nil)
			w.hand("Asking for a review.", "reviewer", "Review PR #412 again.", rv, nil)
		}
		add(w)
	}

	// An OpenAI Agents SDK run: the triage agent hands the customer to
	// billing, which hands them back as a technical matter, and so on.
	{
		w := asRunOf("agents-sdk-handoff-ping-pong", "handoff", true)
		tri, bil := s19As(w, "triage_agent"), s19As(w, "billing_agent")
		for r := 0; r < 4; r++ {
			if r == 2 {
				tri.then()
			}
			tri.t("This is about a charge; transferring to billing.", asOK("transfer_to_billing_agent", obj{}, obj{"assistant": "Billing Agent"}))
			bil.t("The charge failed because the app crashed at checkout; that is technical, transferring back.", asOK("transfer_to_triage_agent", obj{}, obj{"assistant": "Triage Agent"}))
		}
		add(w)
	}

	// A support agent refunds a charge under respellings of its amount;
	// Stripe answers each time that it is already refunded.
	{
		w := asRunOf("refund-amount-respelled-already", "support", true).acc("write", "create_refund")
		for i, a := range []any{4990, "4990", 4990.0, obj{"value": 4990, "currency": "eur"}, " 4990"} {
			if i == 3 {
				w.then()
			}
			w.t("Refunding the order.", asFail("create_refund", obj{"charge": "ch_3QkR8sLq2vTz1a0b", "amount": a, "reason": "requested_by_customer"}, "invalid_request_error",
				"Charge ch_3QkR8sLq2vTz1a0b has already been refunded."))
		}
		add(w)
	}

	// A planner model re-plans after each failure; the plan comes back in
	// other words and its first step fails alike.
	{
		w := asRunOf("planner-replans-same-first-step", "planner", true).acc("write", "create_bucket")
		for r, plan := range []string{
			"Plan: 1. Create bucket shop-exports-eu. 2. Upload the export. 3. Share a signed URL.",
			"Revised plan: first create the shop-exports-eu bucket, then upload the export, then send a signed link.",
			"New plan: (1) make bucket shop-exports-eu; (2) put the export in it; (3) generate a signed URL to share.",
			"Plan v4: create the bucket shop-exports-eu, upload the export file, share it by signed URL.",
		} {
			if r == 2 {
				w.then()
			}
			w.t("Re-planning.", asOK("chat_completion", obj{"model": "gpt-4.1", "messages": arr{obj{"role": "system", "content": "You are a planner. Output a numbered plan."}, obj{"role": "user", "content": fmt.Sprintf("Goal: share the November export with the auditors. Attempt %d failed at step 1.", r+1)}}},
				s19Chat(fmt.Sprintf("chatcmpl-B%05d", 7100+r*31), plan, 140+r*18, 40)))
			w.t("Step 1.", asFail("create_bucket", obj{"name": "shop-exports-eu", "location": "EU"}, "tool_error",
				"409 Conflict: The requested bucket name is not available. The bucket namespace is shared by all users of the system. Please select a different name and try again."))
		}
		add(w)
	}

	// An agent copies a file to S3 through the AWS API server under
	// respellings of its destination; access is denied alike.
	{
		w := asRunOf("aws-s3-cp-path-respelled-denied", "cloud", true).acc("write", "call_aws")
		for i, c := range []string{
			"aws s3 cp ./report.parquet s3://shop-analytics/reports/2026-11/report.parquet",
			"aws s3 cp ./report.parquet s3://shop-analytics/reports/2026-11/",
			"aws s3 cp report.parquet s3://shop-analytics//reports/2026-11/report.parquet",
			"aws s3 cp ./report.parquet s3://shop-analytics/reports/2026-11/report.parquet --region eu-central-1",
			"aws s3 cp ./report.parquet \"s3://shop-analytics/reports/2026-11/report.parquet\"",
		} {
			if i == 3 {
				w.then()
			}
			w.t("Uploading the report.", asFail("call_aws", obj{"cli_command": c}, "tool_error",
				"upload failed: ./report.parquet to s3://shop-analytics/reports/2026-11/report.parquet An error occurred (AccessDenied) when calling the PutObject operation: User: arn:aws:iam::381492650117:user/etl-bot is not authorized to perform: s3:PutObject on resource: \"arn:aws:s3:::shop-analytics/reports/2026-11/report.parquet\" because no identity-based policy allows the s3:PutObject action"))
		}
		add(w)
	}

	// A RAG pipeline retrieves and asks the model again under reworded
	// questions; the same passages come back and the answer says the
	// documents do not cover it.
	{
		w := asRunOf("rag-retrieve-generate-no-answer", "rag", true)
		passages := "[1] Orders ship within 2 business days. [2] Returns are accepted for 30 days. [3] Gift cards cannot be refunded."
		for r, q := range []string{"Do you ship to Norway?", "Can I get delivery to Norway?", "Is shipping to Norway available?", "Norway shipping: possible?"} {
			if r == 2 {
				w.then()
			}
			w.t("Retrieving.", asOK("retrieve", obj{"index": "help-center", "query": q, "k": 3}, passages))
			w.t("Answering.", asOK("chat_completion", obj{"model": "gpt-4.1-mini", "messages": arr{obj{"role": "system", "content": "Answer from the passages only.\n" + passages}, obj{"role": "user", "content": q}}},
				s19Chat(fmt.Sprintf("chatcmpl-R%05d", 2200+r*13), "The provided documents do not say whether we ship to Norway.", 96+r, 14)))
		}
		add(w)
	}

	// A CI agent polls a workflow run that stays queued; only its clock
	// moves.
	{
		w := asRunOf("gh-run-polled-stays-queued", "ci", true)
		for i := 0; i < 6; i++ {
			if i == 2 {
				w.then()
			}
			w.t("Waiting for the run.", asOK("get_workflow_run", obj{"owner": "shop", "repo": "api", "run_id": 11873990041}, s19Run(11873990041, "queued", "", fmt.Sprintf("2026-12-06T07:%02d:%02dZ", 10+i, 3+i*9))))
		}
		add(w)
	}

	// An agent reads one Excel range through Microsoft Graph under
	// respellings of its address; the values never change.
	{
		w := asRunOf("excel-range-respelled", "spreadsheet", true)
		vals := obj{"address": "Budget!A1:D4", "values": arr{arr{"Team", "Q1", "Q2", "Q3"}, arr{"Support", 120000, 118500, 121000}, arr{"Ops", 88000, 91000, 90500}, arr{"Sales", 150000, 149000, 162000}}}
		for i, a := range []string{"Budget!A1:D4", "'Budget'!A1:D4", "budget!a1:d4", "Budget!$A$1:$D$4", "Budget!A1:D4 "} {
			if i == 3 {
				w.then()
			}
			w.t("Reading the budget.", asOK("excel_get_range", obj{"drive_item": "01BQ7Z3GBUDGET2027", "address": a}, vals))
		}
		add(w)
	}

	// A Python agent runs poetry lock under other flags; the solver fails
	// alike each time.
	{
		w := asRunOf("poetry-lock-flags-same-solver-error", "packages", true).acc("write", "run_command")
		for i, c := range []string{"poetry lock", "poetry lock --no-update", "poetry lock --no-cache", "poetry lock --no-interaction", "poetry lock --regenerate"} {
			if i == 3 {
				w.then()
			}
			w.t("Locking again.", asOK("run_command", obj{"command": c, "cwd": "/workspace/api"}, s17Shell(1, "Updating dependencies\nResolving dependencies...\n",
				"Because fastapi (0.95.2) depends on pydantic (>=1.6.2,<2.0.0)\n and shop-api depends on pydantic (^2.5), fastapi is forbidden.\nSo, because shop-api depends on fastapi (0.95.2), version solving failed.")))
		}
		add(w)
	}

	// A supervisor rewords a task for its SQL worker; the worker tries the
	// same query, is denied, and says so.
	{
		w := asRunOf("supervisor-worker-denied-reworded", "graph", true)
		for r, task := range []string{
			"Get last week's order count per store.",
			"Count orders per store for the past 7 days.",
			"How many orders did each store have last week?",
			"Per-store order totals, previous week, please.",
		} {
			if r == 2 {
				w.then()
			}
			w.hand("Delegating to the SQL worker.", "sql_worker", task, "I could not read the orders table: permission denied for table orders.", func(s *asw) {
				s.t("Querying.", asFail("run_query", obj{"sql": "SELECT store_id, count(*) FROM orders WHERE created_at >= now() - interval '7 days' GROUP BY store_id"}, "tool_error",
					"ERROR:  permission denied for table orders"))
			})
		}
		add(w)
	}

	// A CRM agent reruns a SOQL query reworded (fields reordered, a
	// redundant clause) and never follows nextRecordsUrl; the first page
	// comes back each time.
	{
		w := asRunOf("soql-reworded-first-page", "crm", true)
		p1 := s19Records(1, 200, 1384, "/services/data/v60.0/query/01gHs0000A8kX2AAR-200")
		for i, q := range []string{
			"SELECT Id, Name, Industry FROM Account",
			"SELECT Name, Id, Industry FROM Account",
			"SELECT Id, Name, Industry FROM Account WHERE Id != null",
			"select id, name, industry from account",
			"SELECT Id, Industry, Name FROM Account ORDER BY Id",
		} {
			if i == 3 {
				w.then()
			}
			w.t("Querying accounts.", asOK("soql_query", obj{"query": q}, p1))
		}
		add(w)
	}

	// A notifications agent texts a customer under spellings of one
	// number; Twilio refuses each as unsubscribed.
	{
		w := asRunOf("twilio-number-respelled-unsubscribed", "support", true).acc("write", "send_sms")
		for i, n := range []string{"+14155550134", "+1 415-555-0134", "(415) 555-0134", "14155550134", "+1 (415) 555 0134"} {
			if i == 3 {
				w.then()
			}
			w.t("Texting the customer.", asFail("send_sms", obj{"to": n, "from": "+14155550100", "body": "Your order #70412 has shipped."}, "tool_error",
				"Twilio error 21610: Attempt to send to unsubscribed recipient +14155550134"))
		}
		add(w)
	}

	// Two support agents reassign one conversation to each other, each
	// with a note in other words; the customer's last message never
	// changes.
	{
		w := asRunOf("intercom-reassign-ping-pong", "support", true).acc("write", "assign_conversation")
		a, b := s19As(w, "tier1_agent"), s19As(w, "billing_agent")
		notesA := []string{"Customer asks about a double charge; billing should look.", "Double charge question, over to billing.", "Billing please: customer reports being charged twice.", "Sending to billing: duplicate charge."}
		notesB := []string{"No duplicate in Stripe; this is a login issue, back to tier 1.", "Stripe shows one charge; looks like an account problem, tier 1.", "Only one charge exists; tier 1 should handle the login.", "Nothing duplicated on our side; returning to tier 1."}
		for r := 0; r < 4; r++ {
			if r == 2 {
				a.then()
			}
			a.t("Reassigning.", asOK("assign_conversation", obj{"conversation_id": "215469873", "assignee_id": "team_billing", "body": notesA[r]}, obj{"type": "conversation", "id": "215469873", "state": "open", "admin_assignee_id": nil, "team_assignee_id": "team_billing"}))
			b.t("Reassigning.", asOK("assign_conversation", obj{"conversation_id": "215469873", "assignee_id": "team_tier1", "body": notesB[r]}, obj{"type": "conversation", "id": "215469873", "state": "open", "admin_assignee_id": nil, "team_assignee_id": "team_tier1"}))
		}
		add(w)
	}

	// A sheets agent appends one row again and again: each append answers
	// with the next range, and the agent, reading no error, appends again.
	{
		w := asRunOf("sheets-append-same-row-again", "spreadsheet", true).acc("write", "sheets_append_values")
		for i := 0; i < 5; i++ {
			if i == 2 {
				w.then()
			}
			w.t("Recording the order.", asOK("sheets_append_values", obj{"spreadsheetId": "1hQk9vOrdersQ4", "range": "Orders!A:D", "values": arr{arr{"70412", "2026-12-05", "SKU-1042", 3}}, "valueInputOption": "RAW"},
				obj{"spreadsheetId": "1hQk9vOrdersQ4", "tableRange": fmt.Sprintf("Orders!A1:D%d", 41+i), "updates": obj{"updatedRange": fmt.Sprintf("Orders!A%d:D%d", 42+i, 42+i), "updatedRows": 1, "updatedCells": 4}}))
		}
		add(w)
	}

	// ===================== legit =====================

	// The deploy denied, the role granted, the deploy done.
	{
		w := asRunOf("gcloud-role-granted-then-deploy", "cloud", false).acc("write", "run_command")
		w.t("Deploying.", asOK("run_command", obj{"command": "gcloud run deploy orders-api --image=europe-docker.pkg.dev/shop/api/orders:1.14 --region=europe-west1"}, s17Shell(1, "",
			"ERROR: (gcloud.run.deploy) PERMISSION_DENIED: Permission 'run.services.update' denied on resource 'namespaces/shop-prod/services/orders-api' (or it may not exist).")))
		w.t("Checking my roles.", asOK("run_command", obj{"command": "gcloud projects get-iam-policy shop-prod --flatten=bindings[].members --filter=bindings.members:deploy-bot@shop-prod.iam.gserviceaccount.com --format=value(bindings.role)"}, s17Shell(0, "roles/artifactregistry.reader\nroles/logging.viewer\n", "")))
		w.t("Granting the developer role.", asOK("run_command", obj{"command": "gcloud projects add-iam-policy-binding shop-prod --member=serviceAccount:deploy-bot@shop-prod.iam.gserviceaccount.com --role=roles/run.developer"}, s17Shell(0, "Updated IAM policy for project [shop-prod].\nbindings:\n- members:\n  - serviceAccount:deploy-bot@shop-prod.iam.gserviceaccount.com\n  role: roles/run.developer\netag: BwYk3vQ0Zf4=\nversion: 1\n", "")))
		w.t("Deploying again.", asOK("run_command", obj{"command": "gcloud run deploy orders-api --image=europe-docker.pkg.dev/shop/api/orders:1.14 --region=europe-west1"}, s17Shell(0, "Service [orders-api] revision [orders-api-00042-xuz] has been deployed and is serving 100 percent of traffic.\nService URL: https://orders-api-5k2j3x-ew.a.run.app\n", "")))
		add(w)
	}

	// A pip conflict, a pin loosened, another conflict, resolved.
	{
		w := asRunOf("pip-pin-loosened-resolves", "packages", false).acc("write", "run_command")
		w.t("Installing.", asOK("run_command", obj{"command": "pip install requests==2.31.0 urllib3==1.26.18 botocore==1.34.10", "cwd": "/workspace/etl"}, s17Shell(1, "",
			"ERROR: Cannot install botocore==1.34.10 and urllib3==1.26.18 because these package versions have conflicting dependencies.\nERROR: ResolutionImpossible")))
		w.t("Letting pip choose urllib3.", asOK("run_command", obj{"command": "pip install requests==2.31.0 'urllib3<2' botocore==1.34.10", "cwd": "/workspace/etl"}, s17Shell(1, "",
			"ERROR: Cannot install requests==2.31.0 and s3transfer==0.9.0 because these package versions have conflicting dependencies.\n    s3transfer 0.9.0 depends on botocore<2.0a.0 and >=1.33.2\nERROR: ResolutionImpossible")))
		w.t("Dropping the botocore pin.", asOK("run_command", obj{"command": "pip install requests==2.31.0 'urllib3<2' boto3", "cwd": "/workspace/etl"}, s17Shell(0, "Successfully installed boto3-1.34.12 botocore-1.34.12 requests-2.31.0 s3transfer-0.10.0 urllib3-1.26.18\n", "")))
		w.t("Checking.", asOK("run_command", obj{"command": "pip check", "cwd": "/workspace/etl"}, s17Shell(0, "No broken requirements found.\n", "")))
		add(w)
	}

	// A CI run re-run after each fix; the failures shrink to none.
	{
		w := asRunOf("gh-rerun-after-fixes", "ci", false).acc("write", "rerun_failed_jobs", "push_files")
		fails := [][]string{{"test_refund_rounds_half_even", "test_refund_partial", "test_refund_currency"}, {"test_refund_currency"}, {}}
		for r, f := range fails {
			if r > 0 {
				w.t("Pushing a fix.", asOK("push_files", obj{"owner": "shop", "repo": "api", "branch": "main", "message": fmt.Sprintf("Fix refunds (%d)", r), "files": arr{obj{"path": "api/refunds.py", "content": fmt.Sprintf("# refunds v%d\n", r)}}}, obj{"commit": fmt.Sprintf("c0ffee%d", r)}))
			}
			w.t("Re-running.", asOK("rerun_failed_jobs", obj{"owner": "shop", "repo": "api", "run_id": 11873402215 + r}, obj{"message": "Re-run of failed jobs requested"}))
			var log string
			for _, x := range f {
				log += "FAILED tests/test_refunds.py::" + x + " - AssertionError\n"
			}
			log += fmt.Sprintf("======== %d failed, %d passed in 38.2s ========", len(f), 413-len(f))
			w.t("Reading the log.", asOK("get_job_logs", obj{"owner": "shop", "repo": "api", "run_id": 11873402215 + r, "failed_only": true}, log))
		}
		add(w)
	}

	// The #N/A traced to a trailing space; the key trimmed, the prices
	// come.
	{
		w := asRunOf("sheets-lookup-key-trimmed", "spreadsheet", false).acc("write", "sheets_update_values")
		w.t("Writing the lookup.", asOK("sheets_update_values", obj{"spreadsheetId": "1hQk9vOrdersQ4", "range": "Orders!C2", "values": arr{arr{"=VLOOKUP(A2,Prices!A:B,2,FALSE)"}}, "valueInputOption": "USER_ENTERED"}, obj{"updatedRange": "Orders!C2", "updatedCells": 1}))
		w.t("Reading it back.", asOK("sheets_get_values", obj{"spreadsheetId": "1hQk9vOrdersQ4", "range": "Orders!A2:C2"}, obj{"range": "Orders!A2:C2", "values": arr{arr{"SKU-1042 ", "3", "#N/A"}}}))
		w.t("Looking at the price list.", asOK("sheets_get_values", obj{"spreadsheetId": "1hQk9vOrdersQ4", "range": "Prices!A1:B4"}, obj{"range": "Prices!A1:B4", "values": arr{arr{"SKU", "Price"}, arr{"SKU-1041", "12.50"}, arr{"SKU-1042", "8.90"}, arr{"SKU-1043", "4.20"}}}))
		w.t("Trimming the key.", asOK("sheets_update_values", obj{"spreadsheetId": "1hQk9vOrdersQ4", "range": "Orders!C2:C4", "values": arr{arr{"=VLOOKUP(TRIM(A2),Prices!A:B,2,FALSE)"}, arr{"=VLOOKUP(TRIM(A3),Prices!A:B,2,FALSE)"}, arr{"=VLOOKUP(TRIM(A4),Prices!A:B,2,FALSE)"}}, "valueInputOption": "USER_ENTERED"}, obj{"updatedRange": "Orders!C2:C4", "updatedCells": 3}))
		w.t("Reading it back.", asOK("sheets_get_values", obj{"spreadsheetId": "1hQk9vOrdersQ4", "range": "Orders!A2:C4"}, obj{"range": "Orders!A2:C4", "values": arr{arr{"SKU-1042 ", "3", "8.90"}, arr{"SKU-1041", "1", "12.50"}, arr{"SKU-1043 ", "6", "4.20"}}}))
		add(w)
	}

	// A mailbox search refined until the invoice is found.
	{
		w := asRunOf("outlook-search-refined", "mail", false)
		w.t("Searching.", asOK("search_messages", obj{"query": "invoice Hetzner November", "top": 10}, s19Mail([3]string{"28aQ1", "Your November statement is ready", "news@bank.example"})))
		w.t("By sender.", asOK("search_messages", obj{"query": "from:hetzner.com", "top": 10}, s19Mail([3]string{"03cK2", "Hetzner Online: Invoice 083291 for October", "billing@hetzner.com"}, [3]string{"02dL9", "Hetzner: maintenance notice", "support@hetzner.com"})))
		w.t("By sender and month.", asOK("search_messages", obj{"query": "from:billing@hetzner.com received>=2026-12-01", "top": 10}, s19Mail([3]string{"02eM4", "Hetzner Online: Invoice 085117 for November", "billing@hetzner.com"})))
		w.t("Opening it.", asOK("get_message", obj{"id": "AAMkAGI202eM4"}, obj{"id": "AAMkAGI202eM4", "subject": "Hetzner Online: Invoice 085117 for November", "body": obj{"content": "Invoice 085117, amount due EUR 412.77, due 2026-12-15."}}))
		add(w)
	}

	// A retrieval reworded, each time with new chunks, until the answer.
	{
		w := asRunOf("chroma-query-new-chunks", "rag", false)
		for i, c := range []struct {
			q   string
			ids []string
		}{
			{"How many days of sick leave do contractors get?", []string{"leave-policy#4", "leave-policy#5", "benefits#12"}},
			{"contractor agreement sick days", []string{"contractors#2", "contractors#3", "leave-policy#9"}},
			{"external staff absence illness clause", []string{"contractors#7", "contractors#8", "sla#1"}},
			{"statutory sick pay freelancers Germany", []string{"legal-de#14", "legal-de#15", "contractors#8"}},
		} {
			docs := []string{fmt.Sprintf("Passage %d-a on %s.", i, c.ids[0]), fmt.Sprintf("Passage %d-b on %s.", i, c.ids[1]), fmt.Sprintf("Passage %d-c on %s.", i, c.ids[2])}
			w.t("Retrieving.", asOK("chroma_query_documents", obj{"collection_name": "hr-handbook", "query_texts": arr{c.q}, "n_results": 3}, s19Chunks(c.ids, docs, []float64{0.31 + float64(i)*0.02, 0.35, 0.42})))
		}
		add(w)
	}

	// A supervisor's coder and reviewer rounds while the head moves and
	// the findings change, until approval.
	{
		w := asRunOf("supervisor-review-moves", "graph", false)
		for r, c := range []struct{ head, verdict string }{
			{"9f3c2e1", "Changes requested on PR #412 (head 9f3c2e1): apply_discount crashes when voucher is None (shop/basket.py:88)."},
			{"b71d0a4", "Changes requested on PR #412 (head b71d0a4): the None guard is fine; add a test for an expired voucher."},
			{"e2c95f8", "Changes requested on PR #412 (head e2c95f8): the new test passes; rename test_voucher2 to test_expired_voucher."},
			{"5a0e7bd", "Approved PR #412 at 5a0e7bd."},
		} {
			if r > 0 {
				w.hand("Sending the review to the coder.", "coder", "Address the latest review on PR #412.", "Pushed "+c.head+" to PR #412.", nil)
			}
			w.hand("Asking for a review.", "reviewer", "Review PR #412 again.", c.verdict, nil)
		}
		add(w)
	}

	// An Agents SDK run whose handoffs end: triage to billing, billing
	// answers, then triage to the technical agent for another question.
	{
		w := asRunOf("agents-sdk-handoffs-end", "handoff", false).acc("write", "issue_credit")
		tri, bil, tec := s19As(w, "triage_agent"), s19As(w, "billing_agent"), s19As(w, "technical_agent")
		tri.t("A charge question; transferring to billing.", asOK("transfer_to_billing_agent", obj{}, obj{"assistant": "Billing Agent"}))
		bil.t("Looking up the charge.", asOK("get_charges", obj{"customer": "cus_Q81xK"}, arr{obj{"id": "ch_1", "amount": 4990, "status": "succeeded"}, obj{"id": "ch_2", "amount": 4990, "status": "succeeded"}}))
		bil.t("Crediting the duplicate.", asOK("issue_credit", obj{"charge": "ch_2", "amount": 4990}, obj{"id": "cn_77", "status": "issued"}))
		bil.t("Done; the customer also reports a crash, back to triage.", asOK("transfer_to_triage_agent", obj{}, obj{"assistant": "Triage Agent"}))
		tri.t("A crash; transferring to technical.", asOK("transfer_to_technical_agent", obj{}, obj{"assistant": "Technical Agent"}))
		tec.t("Reading the crash report.", asOK("get_crash_reports", obj{"customer": "cus_Q81xK"}, arr{obj{"app": "ios", "version": "4.12.0", "error": "NullPointer in CheckoutView"}}))
		tec.t("Sharing the fix.", asOK("get_kb_article", obj{"query": "ios 4.12.0 checkout crash"}, obj{"title": "Update to 4.12.1", "body": "4.12.1 fixes the checkout crash."}))
		add(w)
	}

	// A refund refused over the refundable amount, then the right amount,
	// then another customer's refund.
	{
		w := asRunOf("refund-amount-corrected", "support", false).acc("write", "create_refund")
		w.t("Refunding.", asFail("create_refund", obj{"charge": "ch_3QkR8sLq2vTz1a0b", "amount": 4990}, "invalid_request_error", "Refund amount (€49.90) is greater than unrefunded amount on charge (€39.90)."))
		w.t("Refunding what is left.", asOK("create_refund", obj{"charge": "ch_3QkR8sLq2vTz1a0b", "amount": 3990}, obj{"id": "re_3QkR9", "amount": 3990, "status": "succeeded"}))
		w.t("Next customer.", asOK("create_refund", obj{"charge": "ch_3QkS2aBc9dEf4g5h", "amount": 1250}, obj{"id": "re_3QkS3", "amount": 1250, "status": "succeeded"}))
		add(w)
	}

	// A planner re-plans as steps succeed; each plan starts further on.
	{
		w := asRunOf("planner-replans-forward", "planner", false).acc("write", "create_bucket", "upload_object", "sign_url")
		steps := []struct {
			plan string
			call asCall
		}{
			{"Plan: 1. Create bucket shop-exports-eu. 2. Upload the export. 3. Share a signed URL.", asFail("create_bucket", obj{"name": "shop-exports-eu", "location": "EU"}, "tool_error", "409 Conflict: The requested bucket name is not available.")},
			{"Revised plan: 1. Create bucket shop-exports-eu-2026. 2. Upload. 3. Share.", asOK("create_bucket", obj{"name": "shop-exports-eu-2026", "location": "EU"}, obj{"name": "shop-exports-eu-2026", "location": "EU"})},
			{"Remaining: 2. Upload export-2026-11.csv to shop-exports-eu-2026. 3. Share.", asOK("upload_object", obj{"bucket": "shop-exports-eu-2026", "name": "export-2026-11.csv"}, obj{"name": "export-2026-11.csv", "size": "18234112"})},
			{"Remaining: 3. Sign a URL for export-2026-11.csv valid 7 days.", asOK("sign_url", obj{"bucket": "shop-exports-eu-2026", "name": "export-2026-11.csv", "expires": "7d"}, obj{"url": "https://storage.example/shop-exports-eu-2026/export-2026-11.csv?sig=a91f"})},
		}
		for r, s := range steps {
			w.t("Planning.", asOK("chat_completion", obj{"model": "gpt-4.1", "messages": arr{obj{"role": "user", "content": fmt.Sprintf("Goal: share the November export. Done so far: %d steps.", r)}}}, s19Chat(fmt.Sprintf("chatcmpl-P%05d", 300+r), s.plan, 120+r*30, 40)))
			w.t("Executing.", s.call)
		}
		add(w)
	}

	// S3 denied under one profile, the profile switched, then a batch of
	// files copied one by one.
	{
		w := asRunOf("aws-s3-profile-then-batch", "cloud", false).acc("write", "call_aws")
		w.t("Uploading.", asFail("call_aws", obj{"cli_command": "aws s3 cp ./report.parquet s3://shop-analytics/reports/2026-11/report.parquet"}, "tool_error", "upload failed: An error occurred (AccessDenied) when calling the PutObject operation"))
		w.t("Who am I?", asOK("call_aws", obj{"cli_command": "aws sts get-caller-identity"}, obj{"Account": "381492650117", "Arn": "arn:aws:iam::381492650117:user/etl-bot"}))
		for _, f := range []string{"report.parquet", "orders.parquet", "refunds.parquet", "stores.parquet", "returns.parquet"} {
			w.t("Uploading with the analytics profile.", asOK("call_aws", obj{"cli_command": "aws s3 cp ./" + f + " s3://shop-analytics/reports/2026-11/" + f + " --profile analytics-writer"}, "upload: ./"+f+" to s3://shop-analytics/reports/2026-11/"+f))
		}
		add(w)
	}

	// A RAG pipeline whose questions, each refined, bring new passages and
	// finally the answer.
	{
		w := asRunOf("rag-questions-find-answer", "rag", false)
		for r, c := range []struct{ q, p, a string }{
			{"Do you ship to Norway?", "[1] Orders ship within 2 business days. [2] Returns are accepted for 30 days.", "The provided documents do not say whether we ship to Norway."},
			{"Which countries outside the EU do you ship to?", "[4] We ship to the UK, Switzerland and Norway from our Oslo partner. [5] Duties are paid by the customer.", "We ship to Norway through an Oslo partner; duties are paid by the customer."},
			{"How long does delivery to Norway take?", "[6] Deliveries via the Oslo partner take 4-6 business days.", "Delivery to Norway takes 4-6 business days."},
		} {
			w.t("Retrieving.", asOK("retrieve", obj{"index": "help-center", "query": c.q, "k": 3}, c.p))
			w.t("Answering.", asOK("chat_completion", obj{"model": "gpt-4.1-mini", "messages": arr{obj{"role": "system", "content": "Answer from the passages only.\n" + c.p}, obj{"role": "user", "content": c.q}}}, s19Chat(fmt.Sprintf("chatcmpl-A%05d", 500+r), c.a, 90+r*10, 16)))
		}
		add(w)
	}

	// A CI run polled while it moves from queued through its steps to done.
	{
		w := asRunOf("gh-run-polled-progresses", "ci", false)
		for i, s := range []struct{ status, conclusion string }{{"queued", ""}, {"queued", ""}, {"in_progress", ""}, {"in_progress", ""}, {"in_progress", ""}, {"completed", "success"}} {
			o := s19Run(11873990041, s.status, s.conclusion, fmt.Sprintf("2026-12-06T07:%02d:00Z", 10+i*2))
			if s.status == "in_progress" {
				o = strings.TrimSuffix(o, "}") + fmt.Sprintf(",\"steps_completed\":%d,\"steps_total\":9}", i*2)
			}
			w.t("Waiting for the run.", asOK("get_workflow_run", obj{"owner": "shop", "repo": "api", "run_id": 11873990041}, o))
		}
		add(w)
	}

	// A year's monthly sheets read one by one, the same range in each.
	{
		w := asRunOf("excel-months-read-one-by-one", "spreadsheet", false)
		for i, m := range []string{"Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"} {
			w.t("Reading "+m+".", asOK("excel_get_range", obj{"drive_item": "01BQ7Z3GBUDGET2027", "address": m + "!A1:B3"}, obj{"address": m + "!A1:B3", "values": arr{arr{"Team", "Spend"}, arr{"Support", 9800 + i*130}, arr{"Ops", 7100 + i*95}}}))
		}
		add(w)
	}

	// The solver's conflict answered by upgrading the dependency it names.
	{
		w := asRunOf("poetry-upgrade-resolves", "packages", false).acc("write", "run_command")
		w.t("Locking.", asOK("run_command", obj{"command": "poetry lock", "cwd": "/workspace/api"}, s17Shell(1, "", "Because fastapi (0.95.2) depends on pydantic (>=1.6.2,<2.0.0)\n and shop-api depends on pydantic (^2.5), fastapi is forbidden.\nSo, because shop-api depends on fastapi (0.95.2), version solving failed.")))
		w.t("Upgrading fastapi.", asOK("run_command", obj{"command": "poetry add fastapi@^0.110", "cwd": "/workspace/api"}, s17Shell(0, "Updating dependencies\nResolving dependencies...\nPackage operations: 0 installs, 2 updates, 0 removals\n  - Updating starlette (0.27.0 -> 0.36.3)\n  - Updating fastapi (0.95.2 -> 0.110.3)\nWriting lock file\n", "")))
		w.t("Locking.", asOK("run_command", obj{"command": "poetry lock --no-update", "cwd": "/workspace/api"}, s17Shell(0, "Resolving dependencies...\nWriting lock file\n", "")))
		w.t("Testing.", asOK("run_command", obj{"command": "poetry run pytest -q", "cwd": "/workspace/api"}, s17Shell(0, "413 passed in 37.90s\n", "")))
		add(w)
	}

	// A worker denied, then told to use the reporting replica; two
	// questions answered there.
	{
		w := asRunOf("supervisor-worker-replica", "graph", false)
		w.hand("Delegating to the SQL worker.", "sql_worker", "Get last week's order count per store.", "I could not read the orders table: permission denied for table orders.", func(s *asw) {
			s.t("Querying.", asFail("run_query", obj{"sql": "SELECT store_id, count(*) FROM orders WHERE created_at >= now() - interval '7 days' GROUP BY store_id"}, "tool_error", "ERROR:  permission denied for table orders"))
		})
		w.hand("Delegating to the SQL worker.", "sql_worker", "Get last week's order count per store from the reporting replica (database reporting).", "Store 1: 412, store 2: 388, store 3: 501.", func(s *asw) {
			s.t("Querying.", asOK("run_query", obj{"database": "reporting", "sql": "SELECT store_id, count(*) FROM orders WHERE created_at >= now() - interval '7 days' GROUP BY store_id"}, "store_id | count\n1 | 412\n2 | 388\n3 | 501"))
		})
		w.hand("Delegating to the SQL worker.", "sql_worker", "From the reporting replica, last week's refunds per store.", "Store 1: 12, store 2: 9, store 3: 20.", func(s *asw) {
			s.t("Querying.", asOK("run_query", obj{"database": "reporting", "sql": "SELECT store_id, count(*) FROM refunds WHERE created_at >= now() - interval '7 days' GROUP BY store_id"}, "store_id | count\n1 | 12\n2 | 9\n3 | 20"))
		})
		add(w)
	}

	// A SOQL listing followed through nextRecordsUrl to its end.
	{
		w := asRunOf("soql-next-records-followed", "crm", false)
		w.t("Querying accounts.", asOK("soql_query", obj{"query": "SELECT Id, Name, Industry FROM Account"}, s19Records(1, 200, 700, "/services/data/v60.0/query/01gHs0000A8kX2AAR-200")))
		for i, n := range []string{"/services/data/v60.0/query/01gHs0000A8kX2AAR-400", "/services/data/v60.0/query/01gHs0000A8kX2AAR-600", ""} {
			from := 201 + i*200
			cnt := 200
			if n == "" {
				cnt = 100
			}
			w.t("Next records.", asOK("soql_query_more", obj{"next_records_url": fmt.Sprintf("/services/data/v60.0/query/01gHs0000A8kX2AAR-%d", 200+i*200)}, s19Records(from, cnt, 700, n)))
		}
		add(w)
	}

	// A batch of shipping texts, one body to many numbers; one
	// unsubscribed number skipped.
	{
		w := asRunOf("twilio-batch-one-skipped", "support", false).acc("write", "send_sms")
		for i := 0; i < 8; i++ {
			n := fmt.Sprintf("+1415555%04d", 134+i*17)
			if i == 3 {
				w.t("Texting.", asFail("send_sms", obj{"to": n, "from": "+14155550100", "body": "Your order has shipped."}, "tool_error", "Twilio error 21610: Attempt to send to unsubscribed recipient "+n))
				continue
			}
			w.t("Texting.", asOK("send_sms", obj{"to": n, "from": "+14155550100", "body": "Your order has shipped."}, obj{"sid": fmt.Sprintf("SM%032x", 0xa1b2c3+i), "status": "queued", "to": n}))
		}
		add(w)
	}

	// A conversation handed from tier 1 to billing and on to engineering,
	// each with what was found.
	{
		w := asRunOf("intercom-handed-on-with-news", "support", false).acc("write", "assign_conversation", "reply_conversation")
		a, b, c := s19As(w, "tier1_agent"), s19As(w, "billing_agent"), s19As(w, "eng_agent")
		a.t("Reassigning.", asOK("assign_conversation", obj{"conversation_id": "215469873", "assignee_id": "team_billing", "body": "Customer reports a double charge."}, obj{"id": "215469873", "team_assignee_id": "team_billing"}))
		b.t("Looking.", asOK("get_charges", obj{"customer": "cus_Q81xK"}, arr{obj{"id": "ch_1", "amount": 4990}, obj{"id": "ch_2", "amount": 4990, "status": "pending", "note": "retried by app after crash"}}))
		b.t("Reassigning.", asOK("assign_conversation", obj{"conversation_id": "215469873", "assignee_id": "team_eng", "body": "Second charge ch_2 was created by the app retrying after a crash; please check the iOS retry logic."}, obj{"id": "215469873", "team_assignee_id": "team_eng"}))
		c.t("Replying.", asOK("reply_conversation", obj{"conversation_id": "215469873", "body": "We found the cause (an app retry) and voided the pending charge."}, obj{"id": "215469873", "state": "open"}))
		c.t("Reassigning.", asOK("assign_conversation", obj{"conversation_id": "215469873", "assignee_id": "team_tier1", "body": "Fixed in 4.12.1; pending charge voided. Tier 1 can close after the customer confirms."}, obj{"id": "215469873", "team_assignee_id": "team_tier1"}))
		add(w)
	}

	// A batch of orders appended row by row; one order appears twice in
	// the batch as two lines of the same order (two SKUs).
	{
		w := asRunOf("sheets-append-batch-of-orders", "spreadsheet", false).acc("write", "sheets_append_values")
		rows := [][]any{{"70412", "2026-12-05", "SKU-1042", 3}, {"70413", "2026-12-05", "SKU-1041", 1}, {"70413", "2026-12-05", "SKU-1043", 2}, {"70414", "2026-12-05", "SKU-1042", 1}, {"70415", "2026-12-06", "SKU-1044", 5}, {"70416", "2026-12-06", "SKU-1042", 3}}
		for i, row := range rows {
			w.t("Recording the order.", asOK("sheets_append_values", obj{"spreadsheetId": "1hQk9vOrdersQ4", "range": "Orders!A:D", "values": arr{arr(row)}, "valueInputOption": "RAW"},
				obj{"spreadsheetId": "1hQk9vOrdersQ4", "tableRange": fmt.Sprintf("Orders!A1:D%d", 41+i), "updates": obj{"updatedRange": fmt.Sprintf("Orders!A%d:D%d", 42+i, 42+i), "updatedRows": 1, "updatedCells": 4}}))
		}
		add(w)
	}

	return runs
}
