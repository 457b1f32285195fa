package loops

import (
	"fmt"
	"strings"
	"testing"
)

// The twenty-first probe: written before reading the detectors' rules in
// detail, with the tool names and answer shapes of kinds of work the
// twenty before it do not use: clinical records (FHIR), e-signature
// (DocuSign), bookkeeping (QuickBooks), hosted image models (Replicate),
// speech-to-text queues, an Ethereum node's JSON-RPC, literature search
// (PubMed's E-utilities), sequence search (NCBI BLAST), robot navigation
// (ROS 2 Nav2), 3D printing (OctoPrint), a proof assistant (Lean 4),
// secrets (HashiCorp Vault), a learning platform's gradebook (Canvas),
// recruiting (Greenhouse), video encoding (ffmpeg), a chat bot's update
// queue (Telegram), computer algebra (SymPy), purchasing in an ERP
// (Odoo), certificates (certbot) and nutrition facts asked of a
// sub-agent. The loops: a patient searched under respellings of one
// name, an envelope resent while its signer never opens it, an invoice
// created again respelled into one duplicate number, an image prompt
// respelled into the same out-of-memory failure, a transcription polled
// while only its elapsed time moves, one signed transaction sent in other
// notations into the same nonce error, a literature search reworded into
// the same articles, one sequence submitted to BLAST respelled with no
// hit each round, a navigation goal respelled into the same failed plan,
// a printer connected under respellings of its port, a proof reformatted
// into the same unsolved goal, a secret read under respellings of its
// path, one grade posted in other notations, a candidate searched under
// spellings of one name, an encode re-run with its flags reordered into
// one missing encoder, a bot's updates fetched without moving the offset
// and answered again, an expression simplified and expanded in turn, a
// purchase order confirmed, cancelled and reset round by two agents, a
// certificate asked for under respellings of its domains while rate
// limited, and one nutrition question reworded to a sub-agent. Each loop
// has a legitimate near-miss that repeats with progress: pages of
// observations, a record re-read after each update, an envelope polled
// while its signers sign, invoices for distinct customers, a prediction
// whose log grows, a queue that advances, blocks that grow, a search
// paged and a search refined, a BLAST job polled until ready, waypoints
// driven one by one, a print whose progress moves, a proof whose goals
// change, a secret written and read back by version, one grade for many
// students, applications paged, renditions encoded one by one, updates
// fetched with the offset moved, an equation solved step by step,
// purchase orders taken through their workflow, a certificate after its
// DNS record appears, and several foods asked of the sub-agent.
//
// A loop is marked as the ninth probe marks them: the fourth call that
// asks again in other words and learns nothing, the third identical poll
// or write, the third round of a pair or ring of calls (or of hand-offs)
// that learns nothing. A tool without readOnlyHint is declared a write,
// as it is through the gateway.
//
// It is written and played with the assistants probe's writer and driver
// (assistruns_test.go).

// s21Known lists the runs whose outcome is not their label's, each with why.
var s21Known = map[string]string{
	// As written, on the guard then (0e057b11): 9 of 20 loops detected,
	// none early, 11 missed; 2 of 22 legit runs refused.
	// Since its fixes, 13 of 20: a JSON-RPC error response handed on as
	// the answer is a failure whose complaint is its error member
	// (rpcErrorAnswer, TestJSONRPCErrorAnswer); so is a write's answer
	// that says what it started failed at once (startFailedAnswer,
	// TestWriteStartedFailed); a number written as a string and echoed
	// with more digits is one value (TestEchoedNumberString); a memory
	// address in a command's failing output names no thing
	// (TestMemoryAddressNoThing); a path echoed is masked with the
	// slashes around it (TestEchoedPathSlashes). Left:
	"fhir-patient-search-respelled":        "missed",
	"replicate-prompt-respelled-oom":       "missed",
	"pubmed-search-reworded-same-articles": "missed",
	"blast-sequence-respelled-no-hits":     "missed",
	"octoprint-connect-respelled-port":     "missed",
	"lean-proof-reformatted-same-goal":     "missed",
	"canvas-grade-respelled-same-grade":    "missed",
	// The two legit runs refused poll twice, answered the same, before
	// their answer moves: the benchmark's own rule (a third identical
	// call after two identical answers, nothing written since, may
	// always be refused) refuses the third poll, as the probe's own mark
	// (the third identical poll) would mark it. They are kept as written,
	// as a real envelope or BLAST job is polled, and stay refused.
	"docusign-envelope-polled-until-signed": "false_kill",
	"blast-polled-until-ready":              "false_kill",
}

func TestTwentyFirstRuns(t *testing.T) {
	checkAsRuns(t, "twenty-first probe", twentyFirstRuns(), 42, s21Known)
}

// s21UUID is a UUID made of n.
func s21UUID(n int) string {
	return fmt.Sprintf("%08x-%04x-4%03x-8%03x-%012x", 0x5e1c0000+n*7919, 0x1a2b+n*31, (0x3c4+n*13)&0xfff, (0x9d1+n*17)&0xfff, 0x7e2f00a1b2c3+int64(n)*104729)
}

// s21Bundle is a FHIR searchset Bundle.
func s21Bundle(id int, total int, self, next string, res ...obj) string {
	links := arr{obj{"relation": "self", "url": self}}
	if next != "" {
		links = append(links, obj{"relation": "next", "url": next})
	}
	var entries arr
	for _, r := range res {
		entries = append(entries, obj{"fullUrl": "https://fhir.clinic.example/r4/" + r["resourceType"].(string) + "/" + r["id"].(string), "resource": r, "search": obj{"mode": "match"}})
	}
	b := obj{"resourceType": "Bundle", "id": s21UUID(id), "meta": obj{"lastUpdated": fmt.Sprintf("2026-12-06T10:%02d:%02d.%03d+00:00", id%60, (id*7)%60, id*37%1000)},
		"type": "searchset", "total": total, "link": links}
	if entries != nil {
		b["entry"] = entries
	}
	return egJSON(b)
}

// s21Patient is a FHIR Patient.
func s21Patient(id, family, given, birth, version, phone string) obj {
	p := obj{"resourceType": "Patient", "id": id, "meta": obj{"versionId": version, "lastUpdated": "2026-11-2" + version + "T08:14:03.221+00:00"},
		"name": arr{obj{"use": "official", "family": family, "given": arr{given}}}, "gender": "female", "birthDate": birth,
		"identifier": arr{obj{"system": "urn:oid:2.16.840.1.113883.2.4.6.3", "value": "MRN-" + id}}}
	if phone != "" {
		p["telecom"] = arr{obj{"system": "phone", "value": phone, "use": "mobile"}}
	}
	return p
}

// s21Envelope is a DocuSign envelope with its signers' statuses.
func s21Envelope(status, changed string, signers ...[2]string) string {
	var ss arr
	for i, s := range signers {
		ss = append(ss, obj{"recipientId": fmt.Sprint(i + 1), "name": s[0], "email": strings.ToLower(strings.ReplaceAll(s[0], " ", ".")) + "@law.example", "status": s[1], "routingOrder": "1"})
	}
	return egJSON(obj{"envelopeId": "8f3c2a71-4b0e-4d6a-9c55-1e7d2b90aa14", "status": status, "emailSubject": "Please sign: Master Services Agreement",
		"sentDateTime": "2026-12-04T16:02:11.3970000Z", "statusChangedDateTime": changed, "recipients": obj{"signers": ss}})
}

// s21Prediction is a Replicate prediction.
func s21Prediction(n int, status, logs, errMsg string, output any) string {
	id := fmt.Sprintf("q7%02dkx3vbnrm%02dc1tz8", n, n*3)
	p := obj{"id": id, "model": "stability-ai/sdxl", "version": "7762fd07cf82c948538e41f63f77d685e02b063e37e496e96eefd46c929f9bdc", "status": status,
		"created_at": fmt.Sprintf("2026-12-06T10:%02d:%02d.%03dZ", 10+n, n*7%60, n*131%1000), "logs": logs, "error": nil, "output": output,
		"urls": obj{"get": "https://api.replicate.com/v1/predictions/" + id, "cancel": "https://api.replicate.com/v1/predictions/" + id + "/cancel"}}
	if errMsg != "" {
		p["error"] = errMsg
	}
	return egJSON(p)
}

// s21RPC is an Ethereum JSON-RPC answer.
func s21RPC(id int, result any, errMsg string) string {
	if errMsg != "" {
		return egJSON(obj{"jsonrpc": "2.0", "id": id, "error": obj{"code": -32000, "message": errMsg}})
	}
	return egJSON(obj{"jsonrpc": "2.0", "id": id, "result": result})
}

// s21ESearch is an E-utilities esearch answer.
func s21ESearch(count, retstart int, translation string, ids ...string) string {
	return egJSON(obj{"header": obj{"type": "esearch", "version": "0.3"}, "esearchresult": obj{"count": fmt.Sprint(count), "retmax": fmt.Sprint(len(ids)),
		"retstart": fmt.Sprint(retstart), "idlist": ids, "querytranslation": translation}})
}

// s21PMIDs are n PubMed ids from the k-th.
func s21PMIDs(k, n int) []string {
	var ids []string
	for i := k; i < k+n; i++ {
		ids = append(ids, fmt.Sprint(38912047-i*1733))
	}
	return ids
}

// s21Nav is a Nav2 NavigateToPose result.
func s21Nav(n int, status string, code int, msg string, secs float64) string {
	return egJSON(obj{"goal_id": s21UUID(900 + n), "status": status, "result": obj{"error_code": code, "error_msg": msg},
		"feedback": obj{"navigation_time": obj{"sec": int(secs), "nanosec": int((secs - float64(int(secs))) * 1e9)}, "number_of_recoveries": 2 * code / 100}})
}

// s21Lean is a Lean 4 checker's answer.
func s21Lean(msgs ...string) string {
	var ms arr
	for _, m := range msgs {
		ms = append(ms, obj{"severity": "error", "data": m})
	}
	if ms == nil {
		ms = arr{}
	}
	return egJSON(obj{"env": 0, "messages": ms})
}

// s21Submission is a Canvas submission as its grade PUT answers it.
func s21Submission(user int, grade string, score float64, at string) string {
	return egJSON(obj{"id": 88120 + user, "assignment_id": 40417, "user_id": user, "grade": grade, "score": score, "entered_grade": grade, "entered_score": score,
		"graded_at": at, "grader_id": 3301, "workflow_state": "graded", "grade_matches_current_submission": true, "late": false, "missing": false})
}

// s21FF is ffmpeg's output.
func s21FF(code int, tail string) string {
	return s17Shell(code, "", "ffmpeg version 7.1 Copyright (c) 2000-2024 the FFmpeg developers\n  built with gcc 13.2.0\n  configuration: --enable-gpl --enable-libx264 --enable-libopus\n"+
		"Input #0, mov,mp4,m4a,3gp,3g2,mj2, from 'talk.mov':\n  Duration: 00:41:17.20, start: 0.000000, bitrate: 18311 kb/s\n  Stream #0:0[0x1](und): Video: h264 (High), yuv420p, 3840x2160, 29.97 fps\n  Stream #0:1[0x2](und): Audio: aac (LC), 48000 Hz, stereo\n"+tail)
}

// s21Updates is a Telegram getUpdates answer.
func s21Updates(from int, texts ...string) string {
	var us arr
	for i, t := range texts {
		us = append(us, obj{"update_id": 731880400 + from + i, "message": obj{"message_id": 5120 + from + i, "date": 1796550000 + (from+i)*47,
			"chat": obj{"id": 408812731, "type": "private", "first_name": "Ines"}, "from": obj{"id": 408812731, "is_bot": false, "first_name": "Ines"}, "text": t}})
	}
	if us == nil {
		us = arr{}
	}
	return egJSON(obj{"ok": true, "result": us})
}

// s21Sent is a Telegram sendMessage answer.
func s21Sent(n int, text string) string {
	return egJSON(obj{"ok": true, "result": obj{"message_id": 6200 + n, "date": 1796550100 + n*53, "chat": obj{"id": 408812731, "type": "private"},
		"from": obj{"id": 7788112233, "is_bot": true, "first_name": "StockBot"}, "text": text}})
}

func twentyFirstRuns() []*asRun {
	var runs []*asRun
	add := func(w *asw) { runs = append(runs, w.run) }

	// ===================== loops =====================

	// A clinical assistant searches one patient under respellings of her
	// name and birth date; the same two namesakes come back, each bundle
	// with a new id and the query it ran.
	{
		w := asRunOf("fhir-patient-search-respelled", "clinical", true)
		pts := []obj{s21Patient("pt-20931", "Okafor", "Adaeze", "1984-03-07", "3", "+44 7700 900412"), s21Patient("pt-88410", "Okafor", "Adaeze", "1984-03-07", "1", "")}
		for i, q := range []obj{
			{"family": "Okafor", "birthdate": "1984-03-07"},
			{"family": "okafor", "birthdate": "1984-03-07"},
			{"name": "Okafor", "birthdate": "1984-03-07"},
			{"family": "Okafor", "birthdate": "eq1984-03-07"},
			{"family": "OKAFOR", "birthdate": "1984-03-07", "_count": 20},
		} {
			if i == 3 {
				w.then()
			}
			var parts []string
			for _, k := range []string{"family", "name", "birthdate", "_count"} {
				if v, ok := q[k]; ok {
					parts = append(parts, fmt.Sprintf("%s=%v", k, v))
				}
			}
			w.t("Finding the patient.", asOK("fhir_search", obj{"resourceType": "Patient", "params": q},
				s21Bundle(10+i, 2, "https://fhir.clinic.example/r4/Patient?"+strings.Join(parts, "&"), "", pts...)))
		}
		add(w)
	}

	// A contracts agent resends an envelope again and again; its signer
	// never opens it, only the resend's clock moves.
	{
		w := asRunOf("docusign-resend-signer-never-opens", "esign", true).acc("write", "docusign_resend_envelope")
		for i := 0; i < 5; i++ {
			if i == 2 {
				w.then()
			}
			w.t("Nudging the signer.", asOK("docusign_resend_envelope", obj{"envelopeId": "8f3c2a71-4b0e-4d6a-9c55-1e7d2b90aa14", "resend_envelope": true},
				obj{"envelopeId": "8f3c2a71-4b0e-4d6a-9c55-1e7d2b90aa14", "status": "sent", "statusDateTime": fmt.Sprintf("2026-12-06T10:%02d:%02d.%07dZ", 5+i*4, 13+i*9, 4410000+i*77311)}))
			w.t("Checking.", asOK("docusign_get_envelope", obj{"envelopeId": "8f3c2a71-4b0e-4d6a-9c55-1e7d2b90aa14", "include": "recipients"},
				s21Envelope("sent", "2026-12-04T16:02:11.3970000Z", [2]string{"Marta Lindqvist", "sent"})))
		}
		add(w)
	}

	// A bookkeeping agent creates one invoice again under respellings of
	// its amount and lines; the same duplicate number refuses each.
	{
		w := asRunOf("quickbooks-invoice-respelled-duplicate", "accounting", true).acc("write", "qbo_create_invoice")
		line := func(amt any, desc string) obj {
			return obj{"DetailType": "SalesItemLineDetail", "Amount": amt, "Description": desc, "SalesItemLineDetail": obj{"ItemRef": obj{"value": "21"}, "Qty": 3}}
		}
		for i, inv := range []obj{
			{"DocNumber": "INV-1042", "CustomerRef": obj{"value": "58"}, "Line": arr{line(450, "Consulting, 3 h")}},
			{"DocNumber": "INV-1042", "CustomerRef": obj{"value": "58"}, "Line": arr{line("450.00", "Consulting, 3 h")}},
			{"CustomerRef": obj{"value": "58"}, "DocNumber": "INV-1042", "Line": arr{line(450.0, "Consulting (3 h)")}},
			{"DocNumber": "INV-1042", "CustomerRef": obj{"value": "58", "name": "Birchwood Dental"}, "Line": arr{line(450, "Consulting, 3 h")}},
			{"DocNumber": "inv-1042", "CustomerRef": obj{"value": "58"}, "Line": arr{line(450, "Consulting, 3h")}},
		} {
			if i == 3 {
				w.then()
			}
			w.t("Creating the invoice.", asFail("qbo_create_invoice", inv, "tool_error", egJSON(obj{"Fault": obj{"Error": arr{obj{
				"Message": "Duplicate Document Number Error", "Detail": "Duplicate Document Number Error : You must specify a different number. This number has already been used. DocNumber=INV-1042 is assigned to TxnType=Invoice with TxnId=3317", "code": "6140", "element": ""}}, "type": "ValidationFault"},
				"time": fmt.Sprintf("2026-12-06T02:%02d:%02d.%03d-08:00", 14+i, 3+i*11, 120+i*97)})))
		}
		add(w)
	}

	// A design agent runs one image prompt under respellings; each new
	// prediction fails out of memory.
	{
		w := asRunOf("replicate-prompt-respelled-oom", "images", true).acc("write", "replicate_run")
		for i, in := range []obj{
			{"prompt": "isometric cutaway of a cozy bakery, warm light, 4k", "width": 2048, "height": 2048, "num_inference_steps": 50},
			{"prompt": "Isometric cutaway of a cozy bakery, warm light, 4K", "width": 2048, "height": 2048, "num_inference_steps": 50},
			{"prompt": "isometric cutaway of a cosy bakery, warm light, 4k", "width": "2048", "height": "2048", "num_inference_steps": 50},
			{"prompt": "isometric cutaway of a cozy bakery , warm light , 4k", "width": 2048, "height": 2048, "num_inference_steps": "50"},
			{"prompt": "isometric cutaway of a cozy bakery, warm lighting, 4k", "width": 2048, "height": 2048, "num_inference_steps": 50, "seed": nil},
		} {
			if i == 3 {
				w.then()
			}
			w.t("Generating.", asOK("replicate_run", obj{"model": "stability-ai/sdxl", "input": in},
				s21Prediction(i, "failed", fmt.Sprintf("Using seed: %d\nPrompt: %s\n", 41177+i*9301, in["prompt"]), "CUDA out of memory. Tried to allocate 16.00 GiB (GPU 0; 39.39 GiB total capacity; 31.02 GiB already allocated)", nil)))
		}
		add(w)
	}

	// A transcription job polled while it sits at one place in the queue;
	// only its elapsed time grows.
	{
		w := asRunOf("transcribe-queue-stuck-elapsed-grows", "speech", true)
		for i := 0; i < 5; i++ {
			if i == 2 {
				w.then()
			}
			w.t("Is it done?", asOK("transcription_status", obj{"job_id": "tr_01JEZ8K3W6"},
				obj{"job_id": "tr_01JEZ8K3W6", "status": "queued", "queue_position": 7, "elapsed_seconds": 64 + i*61, "audio_duration": 2477.2, "model": "large-v3"}))
		}
		add(w)
	}

	// A wallet agent sends one signed transaction in other notations; the
	// node refuses each on the same nonce.
	{
		w := asRunOf("eth-sendraw-respelled-nonce-low", "ethereum", true).acc("write", "eth_sendRawTransaction")
		raw := "0xf86b2a8504a817c80082520894c4e1b3a2d5f60718293a4b5c6d7e8f9012345678880de0b6b3a76400008025a0b1f2e3d4c5b6a79881726354a5b6c7d8e9f00112233445566778899aabbccddeea06e5d4c3b2a19f8e7d6c5b4a392817160f0e1d2c3b4a5968778695a4b3c2d1"
		for i, tx := range []string{raw, strings.ToUpper(raw[:2]) + strings.ToUpper(raw[2:]), raw[2:], " " + raw, "0x" + strings.ToUpper(raw[2:])} {
			if i == 3 {
				w.then()
			}
			w.t("Broadcasting.", asOK("eth_sendRawTransaction", obj{"jsonrpc": "2.0", "id": 40 + i, "method": "eth_sendRawTransaction", "params": arr{tx}},
				s21RPC(40+i, nil, "nonce too low: next nonce 43, tx nonce 42")))
		}
		add(w)
	}

	// A research agent rewords one literature search; PubMed maps each
	// wording to the same articles, its query translation echoing it.
	{
		w := asRunOf("pubmed-search-reworded-same-articles", "literature", true)
		for i, q := range [][2]string{
			{"aspirin heart attack secondary prevention", "(\"aspirin\"[MeSH Terms] OR \"aspirin\"[All Fields]) AND (\"myocardial infarction\"[MeSH Terms] OR (\"heart\"[All Fields] AND \"attack\"[All Fields]) OR \"heart attack\"[All Fields]) AND (\"secondary prevention\"[MeSH Terms] OR \"secondary prevention\"[All Fields])"},
			{"aspirin myocardial infarction secondary prevention", "(\"aspirin\"[MeSH Terms] OR \"aspirin\"[All Fields]) AND (\"myocardial infarction\"[MeSH Terms] OR (\"myocardial\"[All Fields] AND \"infarction\"[All Fields]) OR \"myocardial infarction\"[All Fields]) AND (\"secondary prevention\"[MeSH Terms] OR \"secondary prevention\"[All Fields])"},
			{"secondary prevention of MI with aspirin", "(\"secondary prevention\"[MeSH Terms] OR \"secondary prevention\"[All Fields]) AND (\"myocardial infarction\"[MeSH Terms] OR \"MI\"[All Fields]) AND (\"aspirin\"[MeSH Terms] OR \"aspirin\"[All Fields])"},
			{"acetylsalicylic acid after myocardial infarction secondary prevention", "(\"aspirin\"[MeSH Terms] OR \"acetylsalicylic acid\"[All Fields]) AND \"after\"[All Fields] AND (\"myocardial infarction\"[MeSH Terms] OR \"myocardial infarction\"[All Fields]) AND (\"secondary prevention\"[MeSH Terms] OR \"secondary prevention\"[All Fields])"},
			{"Aspirin AND \"Myocardial Infarction\"[Mesh] AND secondary prevention", "\"aspirin\"[All Fields] AND \"myocardial infarction\"[MeSH Terms] AND (\"secondary prevention\"[MeSH Terms] OR \"secondary prevention\"[All Fields])"},
		} {
			if i == 3 {
				w.then()
			}
			w.t("Searching PubMed.", asOK("pubmed_search", obj{"term": q[0], "retmax": 20, "sort": "relevance"}, s21ESearch(1843, 0, q[1], s21PMIDs(0, 20)...)))
		}
		add(w)
	}

	// A bioinformatics agent submits one sequence to BLAST respelled, then
	// fetches its result: a new request id, no hit, each round.
	{
		w := asRunOf("blast-sequence-respelled-no-hits", "bioinfo", true).acc("write", "blast_submit")
		seq := "ATGGCGTTAGCCGTAACCTTGAGGCTAAGGTCGATCGTTAGCCATGCAGGCTTACGAATTCG"
		for r, s := range []string{seq, strings.ToLower(seq), ">query1\n" + seq[:30] + "\n" + seq[30:], seq + "\n"} {
			if r == 2 {
				w.then()
			}
			rid := fmt.Sprintf("%c%cK7VR4M0%d3", 'A'+r, 'H'+r*2, r+1)
			w.t("Submitting.", asOK("blast_submit", obj{"program": "blastn", "database": "core_nt", "query": s}, obj{"RID": rid, "RTOE": 27 + r*4}))
			w.t("Fetching the hits.", asOK("blast_get", obj{"RID": rid, "format": "JSON2"},
				obj{"BlastOutput2": arr{obj{"report": obj{"program": "blastn", "version": "BLASTN 2.16.1+", "search_target": obj{"db": "core_nt"},
					"results": obj{"search": obj{"query_id": "Query_" + fmt.Sprint(83120+r*17), "query_len": 62, "hits": arr{}, "stat": obj{"db_num": 112844103, "db_len": 1190000000000}, "message": "No hits found"}}}}}}))
		}
		add(w)
	}

	// A warehouse robot is sent one goal under respellings of its pose;
	// the planner fails on the same occupied cell each time.
	{
		w := asRunOf("nav2-goal-respelled-no-plan", "robotics", true).acc("write", "navigate_to_pose")
		for i, p := range []obj{
			{"x": 4.2, "y": -1.5, "yaw": 1.5708, "frame_id": "map"},
			{"x": "4.2", "y": "-1.5", "yaw": "1.5708", "frame_id": "map"},
			{"x": 4.20, "y": -1.50, "yaw": 1.571, "frame_id": "map"},
			{"frame_id": "/map", "x": 4.2, "y": -1.5, "yaw": 1.5708},
			{"x": 4.2, "y": -1.5, "yaw": 1.5708, "frame_id": "map", "behavior_tree": ""},
		} {
			if i == 3 {
				w.then()
			}
			w.t("Driving to the pick station.", asOK("navigate_to_pose", p, s21Nav(i, "ABORTED", 104, "GridBased: failed to create plan with tolerance 0.50: goal (4.20, -1.50) is in an occupied cell", 0.8+float64(i)*0.37)))
		}
		add(w)
	}

	// A print farm agent connects a printer under respellings of its port
	// and reads the connection back; the same error each round.
	{
		w := asRunOf("octoprint-connect-respelled-port", "printing", true).acc("write", "octoprint_connect")
		for r, port := range []string{"/dev/ttyUSB0", "ttyUSB0", "/dev/ttyUSB0/", "AUTO"} {
			if r == 2 {
				w.then()
			}
			w.t("Connecting.", asOK("octoprint_connect", obj{"command": "connect", "port": port, "baudrate": 115200, "printerProfile": "_default"}, obj{"status": 204}))
			w.t("Checking the connection.", asOK("octoprint_connection", obj{},
				obj{"current": obj{"state": "Error: Failed to autodetect serial port, please set it manually.", "port": nil, "baudrate": nil, "printerProfile": "_default"},
					"options": obj{"ports": arr{}, "baudrates": arr{250000, 230400, 115200, 57600}, "portPreference": "/dev/ttyUSB0"}}))
		}
		add(w)
	}

	// A proof agent reformats one proof; Lean reports the same unsolved
	// goal, its position moving with the layout.
	{
		w := asRunOf("lean-proof-reformatted-same-goal", "proofs", true)
		goal := "unsolved goals\ncase cons\nα : Type u_1\nx : α\nxs : List α\nih : (xs ++ []).reverse = xs.reverse\n⊢ (xs ++ []).reverse ++ [x] = xs.reverse ++ [x]"
		for i, p := range [][2]string{
			{"theorem rev_nil (xs : List α) : (xs ++ []).reverse = xs.reverse := by\n  induction xs with\n  | nil => rfl\n  | cons x xs ih => simp only [List.reverse_cons]", "2:2"},
			{"theorem rev_nil (xs : List α) : (xs ++ []).reverse = xs.reverse := by\n  induction xs with\n  | nil => rfl\n  | cons x xs ih =>\n    simp only [List.reverse_cons]", "2:2"},
			{"theorem rev_nil (xs : List α) :\n    (xs ++ []).reverse = xs.reverse := by\n  induction xs with\n  | nil => rfl\n  | cons x xs ih => simp only [List.reverse_cons]", "3:2"},
			{"theorem rev_nil (xs : List α) : (xs ++ []).reverse = xs.reverse := by\n  induction xs with\n  | nil => rfl\n  | cons x xs ih => simp only [List.reverse_cons] -- reverse of cons", "2:2"},
			{"theorem rev_nil (xs : List α) : (xs ++ []).reverse = xs.reverse := by\n    induction xs with\n    | nil => rfl\n    | cons x xs ih => simp only [List.reverse_cons]", "2:4"},
		} {
			if i == 3 {
				w.then()
			}
			w.t("Checking the proof.", asOK("lean_check", obj{"cmd": p[0]}, s21Lean("<input>:"+p[1]+": "+goal)))
		}
		add(w)
	}

	// A deploy agent reads one secret under respellings of its path;
	// Vault denies each.
	{
		w := asRunOf("vault-secret-path-respelled-denied", "secrets", true)
		for i, path := range []string{"secret/data/payments/stripe", "/secret/data/payments/stripe", "secret/data/payments/stripe/", "secret//data/payments/stripe", "secret/data/payments/./stripe"} {
			if i == 3 {
				w.then()
			}
			w.t("Reading the key.", asFail("vault_read", obj{"path": path}, "tool_error", "Error reading "+path+": Error making API request.\n\nURL: GET https://vault.internal:8200/v1/"+strings.TrimPrefix(path, "/")+"\nCode: 403. Errors:\n\n* 1 error occurred:\n\t* permission denied\n\n"))
		}
		add(w)
	}

	// A teaching assistant posts one student's grade in other notations;
	// each answer is the same grade, graded anew.
	{
		w := asRunOf("canvas-grade-respelled-same-grade", "education", true).acc("write", "canvas_grade_submission")
		for i, g := range []any{"9", 9, "9.0", "90%", "9/10"} {
			if i == 3 {
				w.then()
			}
			w.t("Grading.", asOK("canvas_grade_submission", obj{"course_id": 7731, "assignment_id": 40417, "user_id": 120954, "submission": obj{"posted_grade": g}},
				s21Submission(120954, "9", 9.0, fmt.Sprintf("2026-12-06T10:%02d:%02dZ", 31+i, 12+i*7))))
		}
		add(w)
	}

	// A recruiter agent searches a candidate under spellings of one name;
	// none is found.
	{
		w := asRunOf("greenhouse-candidate-name-respelled", "recruiting", true)
		for i, n := range []string{"Priya Raman", "priya raman", "Raman, Priya", "Priya  Raman", "PRIYA RAMAN"} {
			if i == 3 {
				w.then()
			}
			w.t("Looking her up.", asOK("greenhouse_search_candidates", obj{"query": n, "per_page": 50}, arr{}))
		}
		add(w)
	}

	// A video agent re-runs one encode with its flags reordered; the same
	// encoder is missing each time.
	{
		w := asRunOf("ffmpeg-flags-reordered-missing-encoder", "video", true).acc("write", "run_command")
		for i, c := range []string{
			"ffmpeg -i talk.mov -c:v libx264 -crf 20 -c:a libfdk_aac -b:a 128k talk.mp4",
			"ffmpeg -i talk.mov -c:a libfdk_aac -b:a 128k -c:v libx264 -crf 20 talk.mp4",
			"ffmpeg -y -i talk.mov -c:v libx264 -crf 20 -c:a libfdk_aac -b:a 128k talk.mp4",
			"ffmpeg -i talk.mov -vcodec libx264 -crf 20 -acodec libfdk_aac -b:a 128k talk.mp4",
			"ffmpeg -hide_banner -i talk.mov -c:v libx264 -crf 20 -c:a libfdk_aac -b:a 128k -movflags +faststart talk.mp4",
		} {
			if i == 3 {
				w.then()
			}
			w.t("Encoding.", asOK("run_command", obj{"command": c, "cwd": "/data/media"},
				s21FF(8, "[aost#0:1 @ 0x5598f4c2a"+fmt.Sprintf("%03x", 0x1c0+i*0x40)+"] Unknown encoder 'libfdk_aac'\n[aost#0:1 @ 0x5598f4c2a"+fmt.Sprintf("%03x", 0x1c0+i*0x40)+"] Error selecting an encoder\nError opening output file talk.mp4.\nError opening output files: Encoder not found\n")))
		}
		add(w)
	}

	// A chat bot fetches its updates without moving the offset and answers
	// the same message again each round.
	{
		w := asRunOf("telegram-offset-not-advanced-reply-again", "chatbot", true).acc("write", "telegram_send_message")
		for r := 0; r < 4; r++ {
			if r == 2 {
				w.then()
			}
			w.t("Fetching updates.", asOK("telegram_get_updates", obj{"offset": 731880400, "timeout": 30}, s21Updates(0, "/price AAPL")))
			w.t("Replying.", asOK("telegram_send_message", obj{"chat_id": 408812731, "text": "AAPL: 241.18 USD (+0.6%)"}, s21Sent(r, "AAPL: 241.18 USD (+0.6%)")))
		}
		add(w)
	}

	// A math agent simplifies and expands one expression in turn, its
	// spelling changing, its two forms coming back.
	{
		w := asRunOf("sympy-simplify-expand-flip", "algebra", true)
		for r, e := range []string{"x**2 + 2*x + 1", "x^2 + 2x + 1", "1 + 2*x + x**2", "x**2+2*x+1"} {
			if r == 2 {
				w.then()
			}
			w.t("Simplifying.", asOK("sympy_simplify", obj{"expression": e}, obj{"result": "(x + 1)**2", "latex": "\\left(x + 1\\right)^{2}"}))
			w.t("Expanding it back to check.", asOK("sympy_expand", obj{"expression": "(x + 1)**2"}, obj{"result": "x**2 + 2*x + 1", "latex": "x^{2} + 2 x + 1"}))
		}
		add(w)
	}

	// Two agents go round one purchase order: procurement confirms it, the
	// budget agent cancels it and resets it to draft.
	{
		w := asRunOf("odoo-po-confirm-cancel-reset-two-agents", "erp", true).acc("write", "odoo_execute")
		buy, budget := s19As(w, "procurement"), s19As(w, "budget")
		for r := 0; r < 4; r++ {
			if r == 2 {
				buy.then()
			}
			buy.t("Confirming the order.", asOK("odoo_execute", obj{"model": "purchase.order", "method": "button_confirm", "ids": arr{1187}}, obj{"result": true}))
			budget.t("Over this quarter's budget; cancelling.", asOK("odoo_execute", obj{"model": "purchase.order", "method": "button_cancel", "ids": arr{1187}}, obj{"result": true}))
			budget.t("Back to draft for review.", asOK("odoo_execute", obj{"model": "purchase.order", "method": "button_draft", "ids": arr{1187}}, obj{"result": true}))
		}
		add(w)
	}

	// An ops agent asks for one certificate under respellings of its
	// domains while the CA's limit holds.
	{
		w := asRunOf("certbot-domains-respelled-rate-limited", "certs", true).acc("write", "run_command")
		for i, c := range []string{
			"certbot certonly --nginx -d shop.example -d www.shop.example",
			"certbot certonly --nginx -d www.shop.example -d shop.example",
			"certbot certonly --nginx -d shop.example,www.shop.example",
			"certbot certonly --nginx --domains shop.example --domains www.shop.example",
			"certbot certonly --nginx -d SHOP.example -d www.shop.example --non-interactive",
		} {
			if i == 3 {
				w.then()
			}
			w.t("Requesting the certificate.", asOK("run_command", obj{"command": c}, s17Shell(1, "Saving debug log to /var/log/letsencrypt/letsencrypt.log\nRequesting a certificate for shop.example and www.shop.example\n",
				"An unexpected error occurred:\nError creating new order :: too many failed authorizations (5) for \"shop.example\" in the last 1h0m0s, retry after 2026-12-06 11:02:14 UTC: see https://letsencrypt.org/docs/rate-limits/#authorization-failures-per-hostname-per-account\nAsk for help or search for solutions at https://community.letsencrypt.org. See the logfile /var/log/letsencrypt/letsencrypt.log or re-run Certbot with -v for more details.")))
		}
		add(w)
	}

	// A meal planner asks its nutrition sub-agent one question reworded;
	// the sub-agent looks it up in other words and answers alike.
	{
		w := asRunOf("nutrition-question-reworded-to-subagent", "nutrition", true)
		qs := [][3]string{
			{"How much protein is in a cup of cooked lentils?", "1 cup cooked lentils", "A cup of cooked lentils (198 g) has 17.9 g of protein."},
			{"What's the protein content of one cup of lentils, cooked?", "lentils, cooked, 1 cup", "Cooked lentils: 17.9 g protein per cup (198 g)."},
			{"Protein in 1 cup of boiled lentils?", "one cup boiled lentils", "One cup (198 g) of boiled lentils provides 17.9 g protein."},
			{"Tell me the grams of protein in a cup of cooked lentils.", "cooked lentils 1 cup", "17.9 g of protein in one cup (198 g) of cooked lentils."},
			{"How many grams of protein does a cup of cooked lentils have?", "1 cup of cooked lentils", "About 17.9 g protein per 198 g cup of cooked lentils."},
		}
		for i, q := range qs {
			if i == 3 {
				w.then()
			}
			w.hand("Asking the nutritionist.", "nutritionist", q[0], q[2], func(s *asw) {
				s.t("Looking it up.", asOK("nutrition_lookup", obj{"query": q[1]},
					obj{"foods": arr{obj{"food_name": "lentils", "serving_qty": 1, "serving_unit": "cup", "serving_weight_grams": 198, "nf_calories": 230.0, "nf_protein": 17.86, "nf_total_carbohydrate": 39.88, "nf_dietary_fiber": 15.6}}}))
			})
		}
		add(w)
	}

	// ===================== legit =====================

	// A clinician's observations paged by the bundle's next link.
	{
		w := asRunOf("fhir-observations-paged", "clinical", false)
		for pg := 0; pg < 6; pg++ {
			var obs []obj
			for k := 0; k < 5; k++ {
				n := pg*5 + k
				obs = append(obs, obj{"resourceType": "Observation", "id": fmt.Sprintf("obs-%d", 77100+n), "status": "final",
					"code":              obj{"coding": arr{obj{"system": "http://loinc.org", "code": "4548-4", "display": "Hemoglobin A1c"}}},
					"effectiveDateTime": fmt.Sprintf("20%02d-%02d-14", 20+n/12, 1+n%12), "valueQuantity": obj{"value": 6.1 + float64(n%7)/10, "unit": "%"}})
			}
			next := ""
			if pg < 5 {
				next = fmt.Sprintf("https://fhir.clinic.example/r4?_getpages=%s&_getpagesoffset=%d&_count=5", s21UUID(500), (pg+1)*5)
			}
			args := obj{"resourceType": "Observation", "params": obj{"patient": "pt-20931", "code": "4548-4", "_count": 5}}
			if pg > 0 {
				args = obj{"url": fmt.Sprintf("https://fhir.clinic.example/r4?_getpages=%s&_getpagesoffset=%d&_count=5", s21UUID(500), pg*5)}
			}
			w.t("Reading the A1c history.", asOK("fhir_search", args, s21Bundle(500+pg, 30, "https://fhir.clinic.example/r4/Observation?patient=pt-20931&code=4548-4", next, obs...)))
		}
		add(w)
	}

	// A patient's record read back after each of three updates.
	{
		w := asRunOf("fhir-patient-read-after-each-update", "clinical", false).acc("write", "fhir_update")
		phones := []string{"+44 7700 900412", "+44 7700 900988", "+44 7700 900988", "+44 7700 900988"}
		w.t("Reading the record.", asOK("fhir_read", obj{"resourceType": "Patient", "id": "pt-20931"}, egJSON(s21Patient("pt-20931", "Okafor", "Adaeze", "1984-03-07", "3", phones[0]))))
		for v := 4; v <= 6; v++ {
			p := s21Patient("pt-20931", "Okafor", "Adaeze", "1984-03-07", fmt.Sprint(v), phones[v-3])
			switch v {
			case 5:
				p["address"] = arr{obj{"line": arr{"14 Elm Row"}, "city": "Leeds", "postalCode": "LS6 2AB"}}
			case 6:
				p["address"] = arr{obj{"line": arr{"14 Elm Row"}, "city": "Leeds", "postalCode": "LS6 2AB"}}
				p["communication"] = arr{obj{"language": obj{"coding": arr{obj{"system": "urn:ietf:bcp:47", "code": "ig"}}}, "preferred": true}}
			}
			w.t("Updating.", asOK("fhir_update", obj{"resourceType": "Patient", "id": "pt-20931", "resource": p}, egJSON(p)))
			w.t("Reading it back.", asOK("fhir_read", obj{"resourceType": "Patient", "id": "pt-20931"}, egJSON(p)))
		}
		add(w)
	}

	// An envelope polled while its two signers open and sign it.
	{
		w := asRunOf("docusign-envelope-polled-until-signed", "esign", false)
		steps := []struct {
			status, at string
			a, b       string
		}{
			{"sent", "2026-12-04T16:02:11.3970000Z", "sent", "sent"},
			{"sent", "2026-12-04T16:02:11.3970000Z", "sent", "sent"},
			{"delivered", "2026-12-06T09:12:40.1100000Z", "delivered", "sent"},
			{"delivered", "2026-12-06T09:20:02.5400000Z", "completed", "sent"},
			{"delivered", "2026-12-06T09:31:55.0020000Z", "completed", "delivered"},
			{"completed", "2026-12-06T09:40:18.7730000Z", "completed", "completed"},
		}
		for _, s := range steps {
			w.t("Checking the envelope.", asOK("docusign_get_envelope", obj{"envelopeId": "8f3c2a71-4b0e-4d6a-9c55-1e7d2b90aa14", "include": "recipients"},
				s21Envelope(s.status, s.at, [2]string{"Marta Lindqvist", s.a}, [2]string{"Jonas Feld", s.b})))
		}
		add(w)
	}

	// Month-end invoices for distinct customers, alike but for the
	// customer and the number.
	{
		w := asRunOf("quickbooks-invoices-distinct-customers", "accounting", false).acc("write", "qbo_create_invoice")
		for i, c := range []string{"58", "61", "64", "70", "71", "77", "80"} {
			inv := obj{"CustomerRef": obj{"value": c}, "Line": arr{obj{"DetailType": "SalesItemLineDetail", "Amount": 450, "Description": "Monthly retainer", "SalesItemLineDetail": obj{"ItemRef": obj{"value": "21"}, "Qty": 1}}}}
			w.t("Invoicing.", asOK("qbo_create_invoice", inv, obj{"Invoice": obj{"Id": fmt.Sprint(3320 + i), "DocNumber": fmt.Sprintf("INV-%d", 1043+i), "CustomerRef": obj{"value": c}, "TotalAmt": 450, "Balance": 450,
				"MetaData": obj{"CreateTime": fmt.Sprintf("2026-12-06T02:%02d:00-08:00", 20+i)}}, "time": fmt.Sprintf("2026-12-06T02:%02d:00.%03d-08:00", 20+i, 100+i)}))
		}
		add(w)
	}

	// One prediction created, then polled while its log grows step by
	// step, until its image is out.
	{
		w := asRunOf("replicate-prediction-log-grows", "images", false).acc("write", "replicate_create")
		w.t("Generating.", asOK("replicate_create", obj{"model": "stability-ai/sdxl", "input": obj{"prompt": "isometric cutaway of a cozy bakery, warm light", "width": 1024, "height": 1024}},
			s21Prediction(30, "starting", "", "", nil)))
		logs := "Using seed: 8812\n"
		for i := 1; i <= 5; i++ {
			status := "processing"
			var out any
			logs += fmt.Sprintf("%3d%%|%s| %d/50 [00:%02d<00:%02d, 1.9it/s]\n", i*20, strings.Repeat("#", i*2), i*10, i*5, 25-i*5)
			if i == 5 {
				status, out = "succeeded", arr{"https://replicate.delivery/xezq/bakery-0.png"}
			}
			w.t("Waiting.", asOK("replicate_get", obj{"id": "q730kx3vbnrm90c1tz8"}, s21Prediction(30, status, logs, "", out)))
		}
		add(w)
	}

	// A transcription job polled while it moves up the queue, then
	// transcribes.
	{
		w := asRunOf("transcribe-queue-advances", "speech", false)
		for i, s := range []struct {
			st  string
			pos int
			pct int
		}{{"queued", 5, 0}, {"queued", 3, 0}, {"queued", 1, 0}, {"processing", 0, 18}, {"processing", 0, 61}, {"completed", 0, 100}} {
			w.t("Is it done?", asOK("transcription_status", obj{"job_id": "tr_01JEZ9M4Q2"},
				obj{"job_id": "tr_01JEZ9M4Q2", "status": s.st, "queue_position": s.pos, "progress": s.pct, "elapsed_seconds": 60 + i*60, "audio_duration": 1812.4, "model": "large-v3"}))
		}
		add(w)
	}

	// A wallet agent waits for confirmations: the block number grows, the
	// receipt comes, then six confirmations.
	{
		w := asRunOf("eth-confirmations-blocks-grow", "ethereum", false)
		w.t("Any receipt yet?", asOK("eth_getTransactionReceipt", obj{"hash": "0x9c1e4a7b2f03d58e61a4c7b90de21f3a58b6c4d7e0f1a2b3c4d5e6f708192a3b"}, s21RPC(70, nil, "")))
		for i := 0; i < 7; i++ {
			w.t("Watching blocks.", asOK("eth_blockNumber", obj{}, s21RPC(71+i, fmt.Sprintf("0x%x", 21433870+i), "")))
			if i == 1 {
				w.t("Any receipt yet?", asOK("eth_getTransactionReceipt", obj{"hash": "0x9c1e4a7b2f03d58e61a4c7b90de21f3a58b6c4d7e0f1a2b3c4d5e6f708192a3b"},
					s21RPC(90, obj{"status": "0x1", "blockNumber": fmt.Sprintf("0x%x", 21433871), "gasUsed": "0x5208", "transactionHash": "0x9c1e4a7b2f03d58e61a4c7b90de21f3a58b6c4d7e0f1a2b3c4d5e6f708192a3b"}, "")))
			}
		}
		add(w)
	}

	// A literature search paged by retstart.
	{
		w := asRunOf("pubmed-search-paged", "literature", false)
		tr := "(\"aspirin\"[MeSH Terms] OR \"aspirin\"[All Fields]) AND (\"myocardial infarction\"[MeSH Terms] OR \"myocardial infarction\"[All Fields])"
		for pg := 0; pg < 6; pg++ {
			w.t("Next page.", asOK("pubmed_search", obj{"term": "aspirin myocardial infarction", "retmax": 20, "retstart": pg * 20, "sort": "pub_date"}, s21ESearch(1843, pg*20, tr, s21PMIDs(pg*20, 20)...)))
		}
		add(w)
	}

	// A literature search refined by what each answer shows: fewer and
	// other articles each time.
	{
		w := asRunOf("pubmed-search-refined", "literature", false)
		for i, q := range []struct {
			term  string
			count int
		}{
			{"aspirin myocardial infarction", 1843},
			{"aspirin myocardial infarction secondary prevention", 412},
			{"aspirin myocardial infarction secondary prevention randomized controlled trial[pt]", 57},
			{"aspirin myocardial infarction secondary prevention randomized controlled trial[pt] 2015:2026[dp]", 9},
			{"aspirin dose myocardial infarction secondary prevention randomized controlled trial[pt] 2015:2026[dp]", 3},
		} {
			n := 20
			if q.count < n {
				n = q.count
			}
			w.t("Narrowing.", asOK("pubmed_search", obj{"term": q.term, "retmax": 20, "sort": "relevance"}, s21ESearch(q.count, 0, q.term, s21PMIDs(i*37+3, n)...)))
		}
		add(w)
	}

	// One BLAST search polled twice while it waits, then read.
	{
		w := asRunOf("blast-polled-until-ready", "bioinfo", false).acc("write", "blast_submit")
		w.t("Submitting.", asOK("blast_submit", obj{"program": "blastn", "database": "core_nt", "query": "ATGGCGTTAGCCGTAACCTTGAGGCTAAGGTCGATCGTTAGCC"}, obj{"RID": "N2W8JX1M016", "RTOE": 31}))
		for _, st := range []string{"WAITING", "WAITING", "READY"} {
			w.t("Is it ready?", asOK("blast_status", obj{"RID": "N2W8JX1M016"}, obj{"RID": "N2W8JX1M016", "Status": st}))
		}
		w.t("Fetching the hits.", asOK("blast_get", obj{"RID": "N2W8JX1M016", "format": "JSON2"}, obj{"BlastOutput2": arr{obj{"report": obj{"program": "blastn", "results": obj{"search": obj{"query_len": 43,
			"hits": arr{obj{"num": 1, "description": arr{obj{"accession": "MZ021680", "title": "Synthetic construct pUC19-lacZ"}}, "hsps": arr{obj{"evalue": 2.1e-14, "identity": 43}}}}}}}}}}))
		add(w)
	}

	// A robot driven waypoint by waypoint; each goal succeeds alike.
	{
		w := asRunOf("nav2-waypoints-one-by-one", "robotics", false).acc("write", "navigate_to_pose")
		for i, p := range [][3]float64{{1.0, 0.5, 0}, {2.5, 0.5, 0}, {2.5, 3.0, 1.5708}, {4.2, 3.0, 0}, {4.2, 5.5, 1.5708}, {1.0, 5.5, 3.1416}, {1.0, 0.5, -1.5708}} {
			w.t("Next waypoint.", asOK("navigate_to_pose", obj{"x": p[0], "y": p[1], "yaw": p[2], "frame_id": "map"}, s21Nav(20+i, "SUCCEEDED", 0, "", 6.2+float64(i)*1.3)))
		}
		add(w)
	}

	// A print job polled while its progress moves.
	{
		w := asRunOf("octoprint-job-progress-moves", "printing", false)
		for i := 0; i < 7; i++ {
			done := 8.5 + float64(i)*13.1
			w.t("How far along?", asOK("octoprint_job", obj{}, obj{"job": obj{"file": obj{"name": "bracket_v3.gcode"}, "estimatedPrintTime": 5400},
				"progress": obj{"completion": done, "printTime": 460 + i*700, "printTimeLeft": 4940 - i*700}, "state": "Printing"}))
		}
		add(w)
	}

	// A proof refined step by step: each attempt leaves another goal,
	// then none.
	{
		w := asRunOf("lean-proof-refined-goals-change", "proofs", false)
		for _, p := range [][2]string{
			{"theorem rev_nil (xs : List α) : (xs ++ []).reverse = xs.reverse := by\n  induction xs with\n  | nil => rfl\n  | cons x xs ih => simp only [List.reverse_cons]",
				"<input>:2:2: unsolved goals\ncase cons\n⊢ (xs ++ []).reverse ++ [x] = xs.reverse ++ [x]"},
			{"theorem rev_nil (xs : List α) : (xs ++ []).reverse = xs.reverse := by\n  induction xs with\n  | nil => rfl\n  | cons x xs ih => simp only [List.cons_append, List.reverse_cons]",
				"<input>:4:20: unsolved goals\ncase cons\n⊢ (xs ++ []).reverse ++ [x] = xs.reverse ++ [x]\nhint: ih : (xs ++ []).reverse = xs.reverse is unused"},
			{"theorem rev_nil (xs : List α) : (xs ++ []).reverse = xs.reverse := by\n  induction xs with\n  | nil => rfl\n  | cons x xs ih => rw [List.cons_append, List.reverse_cons, ih]",
				"<input>:4:20: unsolved goals\ncase cons\n⊢ xs.reverse ++ [x] = (x :: xs).reverse"},
			{"theorem rev_nil (xs : List α) : (xs ++ []).reverse = xs.reverse := by\n  induction xs with\n  | nil => rfl\n  | cons x xs ih => rw [List.cons_append, List.reverse_cons, ih, List.reverse_cons]", ""},
		} {
			var r string
			if p[1] == "" {
				r = s21Lean()
			} else {
				r = s21Lean(p[1])
			}
			w.t("Checking the proof.", asOK("lean_check", obj{"cmd": p[0]}, r))
		}
		add(w)
	}

	// A secret written and read back, version by version.
	{
		w := asRunOf("vault-secret-written-read-back", "secrets", false).acc("write", "vault_write")
		for v := 1; v <= 4; v++ {
			key := fmt.Sprintf("rk_live_%04dXq%02d", 4417*v%10000, v*13)
			meta := obj{"created_time": fmt.Sprintf("2026-12-06T10:%02d:11.4%02dZ", 10+v*3, v), "version": v, "deletion_time": "", "destroyed": false}
			w.t("Rotating the key.", asOK("vault_write", obj{"path": "secret/data/payments/stripe", "data": obj{"api_key": key}}, obj{"data": meta}))
			w.t("Reading it back.", asOK("vault_read", obj{"path": "secret/data/payments/stripe"}, obj{"data": obj{"data": obj{"api_key": key}, "metadata": meta}}))
		}
		add(w)
	}

	// One grade posted for many students.
	{
		w := asRunOf("canvas-same-grade-many-students", "education", false).acc("write", "canvas_grade_submission")
		for i, u := range []int{120954, 120961, 120977, 121002, 121015, 121033, 121040, 121058} {
			w.t("Grading.", asOK("canvas_grade_submission", obj{"course_id": 7731, "assignment_id": 40417, "user_id": u, "submission": obj{"posted_grade": "9"}},
				s21Submission(u, "9", 9.0, fmt.Sprintf("2026-12-06T11:%02d:%02dZ", 2+i, 40-i*3))))
		}
		add(w)
	}

	// Applications paged through.
	{
		w := asRunOf("greenhouse-applications-paged", "recruiting", false)
		for pg := 1; pg <= 5; pg++ {
			var apps arr
			for k := 0; k < 4; k++ {
				n := (pg-1)*4 + k
				apps = append(apps, obj{"id": 69120400 + n*11, "candidate_id": 53881000 + n*7, "status": "active", "current_stage": obj{"id": 3, "name": []string{"Application Review", "Phone Screen", "Onsite"}[n%3]}, "applied_at": fmt.Sprintf("2026-11-%02dT09:00:00Z", 1+n)})
			}
			w.t("Next page.", asOK("greenhouse_list_applications", obj{"job_id": 4471002, "per_page": 4, "page": pg}, apps))
		}
		add(w)
	}

	// Renditions encoded one by one; each run's output alike but for its
	// size.
	{
		w := asRunOf("ffmpeg-renditions-one-by-one", "video", false).acc("write", "run_command")
		for i, r := range [][3]string{{"1920:1080", "6000k", "1080p"}, {"1280:720", "3500k", "720p"}, {"854:480", "1500k", "480p"}, {"640:360", "800k", "360p"}, {"426:240", "400k", "240p"}} {
			c := fmt.Sprintf("ffmpeg -y -i talk.mov -vf scale=%s -c:v libx264 -b:v %s -c:a aac -b:a 128k talk_%s.mp4", r[0], r[1], r[2])
			w.t("Encoding "+r[2]+".", asOK("run_command", obj{"command": c, "cwd": "/data/media"},
				s21FF(0, fmt.Sprintf("Output #0, mp4, to 'talk_%s.mp4':\n  Stream #0:0: Video: h264, yuv420p, %s\n[out#0/mp4 @ 0x5598f4c2b%03x] video:%dKiB audio:38711KiB muxing overhead: 0.0412%%\nframe=74241 fps=%d q=-1.0 Lsize=%dKiB time=00:41:17.20 bitrate=%s speed=%.2fx\n",
					r[2], strings.Replace(r[0], ":", "x", 1), 0x200+i*0x40, 1800000/(i+1), 60+i*40, 1840000/(i+1), r[1], 2.1+float64(i)*0.9))))
		}
		add(w)
	}

	// A chat bot fetching with the offset moved past what it answered.
	{
		w := asRunOf("telegram-offset-advances", "chatbot", false).acc("write", "telegram_send_message")
		for r, m := range []string{"/price AAPL", "/price MSFT", "/price AAPL", "/alerts", "/price AAPL"} {
			w.t("Fetching updates.", asOK("telegram_get_updates", obj{"offset": 731880400 + r, "timeout": 30}, s21Updates(r, m)))
			reply := map[string]string{"/price AAPL": "AAPL: 241.18 USD (+0.6%)", "/price MSFT": "MSFT: 468.02 USD (-0.2%)", "/alerts": "No alerts set."}[m]
			if r == 4 {
				reply = "AAPL: 242.05 USD (+1.0%)"
			}
			w.t("Replying.", asOK("telegram_send_message", obj{"chat_id": 408812731, "text": reply}, s21Sent(10+r, reply)))
		}
		add(w)
	}

	// An equation solved step by step, each step another expression.
	{
		w := asRunOf("sympy-equation-step-by-step", "algebra", false)
		for _, s := range [][3]string{
			{"sympy_expand", "(x + 1)**2 - 4", "x**2 + 2*x - 3"},
			{"sympy_factor", "x**2 + 2*x - 3", "(x - 1)*(x + 3)"},
			{"sympy_solve", "(x - 1)*(x + 3)", "[-3, 1]"},
			{"sympy_subs", "(x + 1)**2 - 4 at x=-3", "0"},
			{"sympy_subs", "(x + 1)**2 - 4 at x=1", "0"},
			{"sympy_simplify", "(x**2 + 2*x - 3)/(x - 1)", "x + 3"},
		} {
			w.t("Next step.", asOK(s[0], obj{"expression": s[1]}, obj{"result": s[2]}))
		}
		add(w)
	}

	// Purchase orders taken through their workflow, one after another.
	{
		w := asRunOf("odoo-pos-through-workflow", "erp", false).acc("write", "odoo_execute")
		for _, po := range []int{1187, 1188, 1191} {
			w.t("Confirming.", asOK("odoo_execute", obj{"model": "purchase.order", "method": "button_confirm", "ids": arr{po}}, obj{"result": true}))
			w.t("Receiving.", asOK("odoo_execute", obj{"model": "stock.picking", "method": "button_validate", "ids": arr{po + 4000}}, obj{"result": true}))
			w.t("Billing.", asOK("odoo_execute", obj{"model": "purchase.order", "method": "action_create_invoice", "ids": arr{po}},
				obj{"result": obj{"type": "ir.actions.act_window", "res_model": "account.move", "res_id": po + 9000}}))
		}
		add(w)
	}

	// A certificate asked for while DNS is missing, the record created,
	// asked again while it propagates, then issued.
	{
		w := asRunOf("certbot-after-dns-record", "certs", false).acc("write", "run_command", "dns_create_record")
		fail := func(what string) string {
			return s17Shell(1, "Requesting a certificate for api.shop.example\n", "Certbot failed to authenticate some domains (authenticator: nginx).\n  Domain: api.shop.example\n  Type:   dns\n  Detail: "+what+"\n")
		}
		cmd := obj{"command": "certbot certonly --nginx -d api.shop.example --non-interactive"}
		w.t("Requesting.", asOK("run_command", cmd, fail("DNS problem: NXDOMAIN looking up A for api.shop.example - check that a DNS record exists for this domain")))
		w.t("Creating the record.", asOK("dns_create_record", obj{"zone": "shop.example", "type": "A", "name": "api", "content": "203.0.113.40", "ttl": 300}, obj{"id": "rec_81f2", "name": "api.shop.example", "content": "203.0.113.40"}))
		w.t("Checking it resolves.", asOK("dns_lookup", obj{"name": "api.shop.example", "type": "A"}, obj{"answers": arr{}}))
		w.t("Checking it resolves.", asOK("dns_lookup", obj{"name": "api.shop.example", "type": "A"}, obj{"answers": arr{"203.0.113.40"}}))
		w.t("Requesting.", asOK("run_command", cmd, s17Shell(0, "Requesting a certificate for api.shop.example\n\nSuccessfully received certificate.\nCertificate is saved at: /etc/letsencrypt/live/api.shop.example/fullchain.pem\nThis certificate expires on 2027-03-06.\n", "")))
		add(w)
	}

	// A meal planner asks its nutritionist about each ingredient in turn.
	{
		w := asRunOf("nutrition-ingredients-to-subagent", "nutrition", false)
		for i, f := range [][2]string{{"cooked lentils", "17.9"}, {"cooked brown rice", "5.5"}, {"firm tofu", "21.8"}, {"cooked chickpeas", "14.5"}, {"cooked quinoa", "8.1"}} {
			w.hand("Asking the nutritionist.", "nutritionist", "How much protein is in a cup of "+f[0]+"?", "A cup of "+f[0]+" has "+f[1]+" g of protein.", func(s *asw) {
				s.t("Looking it up.", asOK("nutrition_lookup", obj{"query": "1 cup " + f[0]},
					obj{"foods": arr{obj{"food_name": f[0], "serving_qty": 1, "serving_unit": "cup", "serving_weight_grams": 160 + i*19, "nf_protein": f[1]}}}))
			})
		}
		add(w)
	}

	return runs
}
