package loops

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The held-out probe: trajectories written by a generator, not taken from the
// benchmark's public sets nor from testdata, in the benchmark's v2 format and
// of its classes, with what those sets do not vary: other tool names and
// argument shapes (nested objects, arrays, numbers as strings, keys in another
// order, strings in another case), wording in other languages and reworded
// with synonyms, answers that differ only in fetch metadata the detectors have
// not been told of by name (an HTTP Date header, a nested meta object) against
// answers with new items, polling whose status finally moves, pagination by
// cursor, offset and page token, transient failures that then succeed, agents
// handing a task back and forth, and long tasks of many similar productive
// calls. Each trace is labelled by the benchmark's rules (FORMAT-v2.md, R1 to
// R6): loop or legit, and for a loop the first event a runtime may refuse.
//
// go test -run TestHeldOutProbe -probe.dump DIR writes the traces as files,
// for reach bench loops DIR.
var probeDump = flag.String("probe.dump", "", "write the held-out probe's traces as JSON files into this folder")

// gen writes one trace. Every step of an agent is a model turn and, for a
// call, the tool call it chose; a sub-agent's turns descend from the hand-off
// that started it.
type gen struct {
	tr  *trace
	n   int
	ctx map[string]string // agent -> the hand-off its turns descend from
	at  map[string]string // mark -> event id
}

func newGen(id, kind string, loop bool, desc string) *gen {
	return &gen{
		tr:  &trace{ID: "probe-" + id, Description: desc, Tools: map[string]toolSpec{}, Label: label{Loop: loop, Kind: kind}},
		ctx: map[string]string{},
		at:  map[string]string{},
	}
}

func (g *gen) tool(name, access string, key ...string) *gen {
	g.tr.Tools[name] = toolSpec{Access: access, Reentrancy: "reentrant", Key: key}
	return g
}

func (g *gen) retryable(name string) *gen {
	s := g.tr.Tools[name]
	s.Retryable = true
	g.tr.Tools[name] = s
	return g
}

func (g *gen) add(e event) string {
	g.n++
	e.ID = fmt.Sprintf("e%d", g.n)
	g.tr.Events = append(g.tr.Events, e)
	return e.ID
}

func ptr(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

// raw takes JSON as written (so that key order and spacing stay the
// generator's) or, for anything that is not a string, marshals it.
func raw(v any) json.RawMessage {
	if s, ok := v.(string); ok && json.Valid([]byte(s)) {
		return json.RawMessage(s)
	}
	return json.RawMessage(marshal(v))
}

// say is a model turn of agent with text.
func (g *gen) say(agent, text string) string {
	return g.add(event{Parent: ptr(g.ctx[agent]), Type: "model", Agent: agent, Tokens: 900, Text: text})
}

// call is a model turn of agent and the call it chose, which returned result.
func (g *gen) call(agent, tool string, args, result any) string {
	m := g.say(agent, "")
	return g.add(event{Parent: ptr(m), Type: "tool_call", Agent: agent, Tool: tool, Args: raw(args), Status: "ok", Result: raw(result)})
}

// fail is a call that failed with errType and result.
func (g *gen) fail(agent, tool string, args any, errType string, result any) string {
	m := g.say(agent, "")
	return g.add(event{Parent: ptr(m), Type: "tool_call", Agent: agent, Tool: tool, Args: raw(args), Status: "error", ErrorType: errType, Result: raw(result)})
}

// hand is a model turn of from and its hand-off of task to to; to's turns
// descend from it until the next hand-off to it.
func (g *gen) hand(from, to, task string) string {
	m := g.say(from, "delegate: "+task)
	d := g.add(event{Parent: ptr(m), Type: "delegate", Agent: from, To: to, Task: task})
	g.ctx[to] = d
	return d
}

// mark names the last event added.
func (g *gen) mark(name string) { g.at[name] = fmt.Sprintf("e%d", g.n) }

// earliest labels a loop: the first event its rules let a runtime refuse, and
// the one by which a good runtime has.
func (g *gen) done(earliest, onset string) *trace {
	if g.tr.Label.Loop {
		g.tr.Label.Earliest, g.tr.Label.Onset = earliest, onset
	}
	return g.tr
}

func hexid(i, salt int) string {
	return fmt.Sprintf("%08x%04x", uint32(i*2654435761+salt*40503), uint16(i*7919+salt))
}

func stamp(i int) string {
	return fmt.Sprintf("2026-03-%02dT%02d:%02d:%02dZ", 10+i%9, 8+i%11, (i*7)%60, (i*13)%60)
}

func httpDate(i int) string {
	return fmt.Sprintf("Tue, %02d Mar 2026 %02d:%02d:%02d GMT", 10+i%9, 8+i%11, (i*7)%60, (i*13)%60)
}

// probeTraces is the probe: every class with its variations.
func probeTraces() []*trace {
	var out []*trace
	add := func(t *trace) { out = append(out, t) }

	// --- loops -----------------------------------------------------------

	// The same lookup, nested arguments in another key order each time, the
	// answer's metadata in a nested object under camelCase names.
	{
		g := newGen("noisy_repeat-nested-meta", "noisy_repeat", true, "the same nested lookup; only meta.requestId, meta.generatedAt and meta.durationMs change").
			tool("crm.fetch_account", "read")
		args := []string{
			`{"account":{"id":"AC-991","fields":["owner","plan"]}}`,
			`{ "account" : { "fields":["owner","plan"], "id":"AC-991" } }`,
			`{"account":{"id":"AC-991","fields":["owner","plan"]}}`,
			`{"account":{"fields":["owner","plan"],"id":"AC-991"}}`,
			`{"account":{"id":"AC-991","fields":["owner","plan"]}}`,
		}
		for i, a := range args {
			g.call("main", "crm.fetch_account", a, fmt.Sprintf(`{"account":{"id":"AC-991","owner":"Dana Ruiz","plan":"enterprise","seats":40},"meta":{"requestId":"%s","generatedAt":"%s","durationMs":%d}}`, hexid(i, 1), stamp(i), 40+i*7))
			g.mark(fmt.Sprint(i + 1))
		}
		add(g.done(g.at["3"], g.at["4"]))
	}
	// An HTTP fetch tool: the body is the same, the headers that say when and
	// by whom it was served change.
	{
		g := newGen("noisy_repeat-http-headers", "noisy_repeat", true, "an HTTP GET whose body stays the same; Date, X-Request-Id and Age headers change").
			tool("http_get", "read")
		for i := range 5 {
			g.call("main", "http_get", `{"url":"https://status.example.org/api/v2/summary.json"}`,
				fmt.Sprintf(`{"status":200,"headers":{"Date":"%s","X-Request-Id":"%s","Age":"%d","Content-Type":"application/json"},"body":{"page":"Example Status","indicator":"minor","description":"Partially Degraded Service","components":[{"name":"API","status":"degraded_performance"},{"name":"Dashboard","status":"operational"}]}}`,
					httpDate(i), hexid(i, 2), 10+i*31))
			g.mark(fmt.Sprint(i + 1))
		}
		add(g.done(g.at["3"], g.at["4"]))
	}
	// A plain-text answer in Spanish with its retrieval stamp and id at the end.
	{
		g := newGen("noisy_repeat-es-text", "noisy_repeat", true, "the same page read again; only the trailing retrieval stamp and id change").
			tool("leer_pagina", "read")
		for i := range 5 {
			g.call("main", "leer_pagina", `{"url":"https://intranet.example.es/politicas/reembolsos"}`,
				fmt.Sprintf("Política de reembolsos\nLos reembolsos se tramitan en un plazo de 14 días hábiles.\nLos productos digitales no son reembolsables.\n(consultado %s · id %s)", stamp(i), hexid(i, 3)))
			g.mark(fmt.Sprint(i + 1))
		}
		add(g.done(g.at["3"], g.at["4"]))
	}
	// The same question with its arguments spelled differently each time
	// (number as a string, another case): not the same call as written, so
	// only R6 holds (two answers that brought nothing new).
	{
		g := newGen("noisy_repeat-respelled-args", "noisy_repeat", true, "the same stock check, the SKU in other cases and the quantity as a number or a string; the same answer").
			tool("stock_check", "read")
		args := []string{`{"sku":"ab-1200","qty":2,"site":"FRA"}`, `{"sku":"AB-1200","qty":"2","site":"FRA"}`, `{"sku":"Ab-1200","qty":2.0,"site":"fra"}`, `{"sku":"AB-1200","qty":"02","site":"FRA"}`, `{"sku":"ab-1200","qty":"2","site":"Fra"}`, `{"sku":"AB-1200 ","qty":2,"site":"FRA"}`, `{"qty":"2","sku":"ab-1200","site":"FRA"}`}
		for i, a := range args {
			g.call("main", "stock_check", a, fmt.Sprintf(`{"sku":"AB-1200","site":"FRA","available":0,"backorder_eta":"2026-04-02","note":"supplier delay, next inbound shipment pending","checked":"%s"}`, stamp(i)))
			g.mark(fmt.Sprint(i + 1))
		}
		add(g.done(g.at["4"], g.at["5"]))
	}
	// Reworded searches with synonyms only (no shared content word), the same
	// documents back in another order, rescored, the query echoed.
	{
		g := newGen("paraphrase_loop-en-synonyms", "paraphrase_loop", true, "synonym rewordings of one question; the same three articles each time").
			tool("kb_lookup", "read")
		qs := []string{"how do I cancel my subscription", "terminate membership plan", "stop the recurring charge on my account", "end automatic renewal", "quit paying monthly fee", "unsubscribe from premium tier"}
		docs := []string{`{"id":"KB-311","title":"Managing your plan","url":"https://help.example.com/a/311"}`, `{"id":"KB-107","title":"Billing cycles explained","url":"https://help.example.com/a/107"}`, `{"id":"KB-452","title":"Refunds and credits","url":"https://help.example.com/a/452"}`}
		for i, q := range qs {
			d := []string{docs[i%3], docs[(i+1)%3], docs[(i+2)%3]}
			g.call("main", "kb_lookup", fmt.Sprintf(`{"q":%q,"k":"3"}`, q), fmt.Sprintf(`{"query":%q,"hits":[%s],"took":%d}`, q, strings.Join(d, ","), 11+i))
			g.mark(fmt.Sprint(i + 1))
		}
		add(g.done(g.at["4"], g.at["5"]))
	}
	// German rewordings that share words, the free text nested in the arguments.
	{
		g := newGen("paraphrase_loop-de-nested", "paraphrase_loop", true, "German rewordings under input.text; the same two documents, relevance changing").
			tool("docs.search", "read")
		qs := []string{"Wie ändere ich die Rechnungsadresse", "Rechnungsadresse im Kundenkonto ändern", "Adresse auf der Rechnung aktualisieren", "neue Rechnungsadresse hinterlegen", "Rechnungsanschrift korrigieren lassen"}
		for i, q := range qs {
			g.call("main", "docs.search", fmt.Sprintf(`{"input":{"text":%q,"lang":"de"},"options":{"limit":5,"highlight":true}}`, q),
				fmt.Sprintf(`{"results":[{"doc":"billing/address-de","title":"Rechnungsadresse ändern","relevance":0.%d},{"doc":"account/profile-de","title":"Profil bearbeiten","relevance":0.%d}],"total":2}`, 91-i, 62+i))
			g.mark(fmt.Sprint(i + 1))
		}
		add(g.done(g.at["4"], g.at["5"]))
	}
	// A payment tool probed with new dates, one template of invalid_args,
	// the error as an object.
	{
		g := newGen("probe_same_error-object", "probe_same_error", true, "new start times each try; the same RFC 3339 complaint as an error object").
			tool("calendar.create_event", "write")
		starts := []string{"2026-13-01 25:00", "01/14/2026 9am", "tomorrow 10:00", "2026-01-14 10h", "14.01.2026 10:00"}
		for i, s := range starts {
			g.fail("main", "calendar.create_event", fmt.Sprintf(`{"event":{"title":"Sync","start":%q,"attendees":["a@x.io"]}}`, s), "invalid_args",
				fmt.Sprintf(`{"error":{"code":"INVALID_ARGUMENT","message":"event.start: %q is not a valid RFC 3339 date-time"}}`, s))
			g.mark(fmt.Sprint(i + 1))
		}
		add(g.done(g.at["4"], g.at["5"]))
	}
	// German permission probe over projects.
	{
		g := newGen("probe_same_error-de-forbidden", "probe_same_error", true, "another project each try; the same German permission error").
			tool("projekt_lesen", "read")
		for i, p := range []string{"apollo", "zeus", "hermes", "athene", "hera"} {
			g.fail("main", "projekt_lesen", fmt.Sprintf(`{"projekt":%q}`, p), "forbidden",
				fmt.Sprintf("Zugriff verweigert: Benutzer 'm.keller' darf das Projekt '%s' nicht lesen", p))
			g.mark(fmt.Sprint(i + 1))
		}
		add(g.done(g.at["4"], g.at["5"]))
	}
	// A write retried with the same revision in a nested options object and
	// a new payload each time.
	{
		g := newGen("stale_write_retry-nested-rev", "stale_write_retry", true, "kv.put with options.ifRevision 17 after two conflicts, a new value each time").
			tool("kv.get", "read", "key").tool("kv.put", "write", "key")
		g.call("main", "kv.get", `{"key":"cfg/app"}`, `{"key":"cfg/app","revision":17,"value":{"replicas":3}}`)
		for i := range 4 {
			g.fail("main", "kv.put", fmt.Sprintf(`{"key":"cfg/app","value":{"replicas":%d},"options":{"ifRevision":"17"}}`, 4+i), "conflict",
				`{"error":"revision mismatch: current 18, expected 17"}`)
			g.mark(fmt.Sprint(i + 1))
		}
		add(g.done(g.at["3"], g.at["4"]))
	}
	// A ticket update with expected_version as a number, a new patch each time.
	{
		g := newGen("stale_write_retry-expected-version", "stale_write_retry", true, "update_ticket with expected_version 4 after two conflicts").
			tool("get_ticket", "read", "ticket_id").tool("update_ticket", "write", "ticket_id")
		g.call("main", "get_ticket", `{"ticket_id":"T-88"}`, `{"ticket_id":"T-88","version":4,"status":"open"}`)
		for i, st := range []string{"closed", "resolved", "done", "closed"} {
			g.fail("main", "update_ticket", fmt.Sprintf(`{"ticket_id":"T-88","expected_version":4,"patch":{"status":%q}}`, st), "conflict",
				fmt.Sprintf(`"version conflict on T-88 (attempt %d)"`, i+1))
			g.mark(fmt.Sprint(i + 1))
		}
		add(g.done(g.at["3"], g.at["4"]))
	}
	// French three-agent cycle with reworded tasks.
	{
		g := newGen("delegation_cycle-fr-three", "delegation_cycle", true, "coordinateur -> juriste -> comptable -> coordinateur, the task reworded at each hop").
			tool("chercher", "read")
		g.hand("coordinateur", "juriste", "Vérifier la conformité TVA des factures de mars")
		g.call("juriste", "chercher", `{"q":"TVA factures mars"}`, `{"n":0}`)
		g.say("juriste", "Le comptable est mieux placé; je transmets.")
		g.hand("juriste", "comptable", "Contrôler la TVA sur les factures du mois de mars")
		g.say("comptable", "Cela relève de la coordination; je renvoie.")
		g.hand("comptable", "coordinateur", "Examiner la conformité fiscale des factures de mars")
		g.mark("close")
		g.say("coordinateur", "Je redonne au juriste.")
		g.hand("coordinateur", "juriste", "Vérifier la TVA des factures de mars, s'il vous plaît")
		g.mark("next")
		g.say("juriste", "Je transmets au comptable.")
		add(g.done(g.at["close"], g.at["next"]))
	}
	// Reworded hand-offs in Spanish, the reviewer's rejection paraphrased.
	{
		g := newGen("reworded_delegation-es", "reworded_delegation", true, "redactor reworded, revisor rejects with the same two points each round").
			tool("buscar_datos", "read")
		tasks := []string{"Redacta el resumen del informe trimestral de ventas", "Escribe la síntesis del informe de ventas del trimestre", "Prepara el resumen trimestral de ventas para dirección", "Elabora el resumen del informe de ventas trimestral"}
		rejects := []string{"RECHAZADO: faltan las cifras de ventas por región; el tono es demasiado informal", "RECHAZADO: siguen faltando las cifras por región; el tono sigue siendo informal", "RECHAZADO: faltan las cifras de ventas por región; el tono es demasiado informal", "RECHAZADO: faltan las cifras por región; tono informal"}
		for i, t := range tasks {
			g.hand("planificador", "redactor", t)
			g.mark(fmt.Sprint(i + 1))
			g.call("redactor", "buscar_datos", fmt.Sprintf(`{"informe":"ventas-T1","seccion":"s%d"}`, i), `{"ventas_total":"1.2M","regiones":4}`)
			g.say("redactor", fmt.Sprintf("borrador v%d listo", i+1))
			g.hand("planificador", "revisor", "Revisa el borrador nuevo")
			g.say("revisor", rejects[i])
		}
		add(g.done(g.at["3"], g.at["4"]))
	}
	// A hidden loop: three lookups of one user by id, e-mail and team, each
	// answering what the agent already has.
	{
		g := newGen("hidden_loop-three-keys", "hidden_loop", true, "the same user looked up by id, e-mail and team, round and round").
			tool("users.get", "read").tool("users.find", "read").tool("teams.members", "read")
		user := `{"id":"u-204","name":"Priya Natarajan","email":"priya@example.com","team":"payments","role":"staff engineer"}`
		for r := range 4 {
			g.call("main", "users.get", `{"id":"u-204"}`, `{"user":`+user+`}`)
			g.mark(fmt.Sprintf("get%d", r+1))
			g.call("main", "users.find", fmt.Sprintf(`{"by":{"email":"%s"}}`, []string{"priya@example.com", "PRIYA@example.com", "priya@Example.com", "Priya@example.com"}[r]), `{"matches":[`+user+`]}`)
			g.call("main", "teams.members", `{"team":"payments","filter":{"name":"Priya"}}`, `{"team":"payments","members":[`+user+`]}`)
		}
		// users.get: first new; 2nd and 3rd bring nothing new; the fourth is R1/R6.
		add(g.done(g.at["get3"], g.at["get4"]))
	}
	// Widening a log query's window given as a string with a unit, and then
	// its limit as a string: the same two lines each time.
	{
		g := newGen("resource_amplification-strings", "resource_amplification", true, "logs.query with window 15m -> 1h -> 6h -> 24h -> 7d; the same two lines").
			tool("logs.query", "read")
		for i, w := range []string{"15m", "1h", "6h", "24h", "7d"} {
			g.call("main", "logs.query", fmt.Sprintf(`{"expr":"service=api level=error","window":%q,"limit":"100"}`, w),
				`{"lines":["2026-03-10T08:00:01Z api ERROR upstream reset by peer","2026-03-10T08:00:09Z api ERROR upstream reset by peer"],"count":2}`)
			g.mark(fmt.Sprint(i + 1))
		}
		add(g.done(g.at["4"], g.at["5"]))
	}
	{
		g := newGen("resource_amplification-limit-string", "resource_amplification", true, "page_size as a string doubled each call; the same three rows").
			tool("db.select", "read")
		for i, n := range []string{"50", "100", "200", "400", "800"} {
			g.call("main", "db.select", fmt.Sprintf(`{"table":"orders","where":{"status":"stuck"},"page_size":%q}`, n),
				`{"rows":[{"id":"o-1","status":"stuck"},{"id":"o-7","status":"stuck"},{"id":"o-9","status":"stuck"}]}`)
			g.mark(fmt.Sprint(i + 1))
		}
		add(g.done(g.at["4"], g.at["5"]))
	}
	// Transient failures past the budget.
	{
		g := newGen("error_retry_loop-timeouts", "error_retry_loop", true, "the same geocode timing out six times").
			tool("geo.lookup", "read")
		for i := range 6 {
			g.fail("main", "geo.lookup", `{"address":{"street":"Hauptstr. 5","city":"Bern"}}`, "timeout", `"upstream timed out after 10s"`)
			g.mark(fmt.Sprint(i + 1))
		}
		add(g.done(g.at["5"], g.at["5"]))
	}
	// Two reads alternating, the same answers each round.
	{
		g := newGen("ping_pong-shuffled", "ping_pong", true, "get_shipment and carrier_status alternating, arguments in another order each round").
			tool("get_shipment", "read").tool("carrier_status", "read")
		for r := range 3 {
			g.call("main", "get_shipment", []string{`{"id":"S-5","expand":["items"]}`, `{"expand":["items"],"id":"S-5"}`, `{"id":"S-5","expand":["items"]}`}[r],
				`{"id":"S-5","carrier":"DHL","tracking":"JD0146","items":[{"sku":"X1","qty":1}]}`)
			g.mark(fmt.Sprintf("a%d", r+1))
			g.call("main", "carrier_status", `{"carrier":"DHL","tracking":"JD0146"}`, `{"state":"in transit","last_scan":"Leipzig hub"}`)
		}
		add(g.done(g.at["a3"], g.at["a3"]))
	}

	// A framework that hands the model a tool's JSON as a string (its
	// result serialised once more), the metadata inside it.
	{
		g := newGen("noisy_repeat-json-in-string", "noisy_repeat", true, "the same job status as a JSON string; latency_ms, request_id and fetched_at inside it change").
			tool("job_status", "read")
		for i := range 5 {
			inner := fmt.Sprintf(`{"job": "etl-nightly", "state": "failed", "error": "disk quota exceeded on /data", "request_id": "%s", "latency_ms": %d, "fetched_at": "%s"}`, hexid(i, 7), 30+i*17, stamp(i))
			g.call("main", "job_status", `{"job":"etl-nightly"}`, string(marshal(inner)))
			g.mark(fmt.Sprint(i + 1))
		}
		add(g.done(g.at["3"], g.at["4"]))
	}
	// Two-word rewordings under a key a framework names "input".
	{
		g := newGen("paraphrase_loop-input-two-words", "paraphrase_loop", true, "two-word Spanish rewordings under input; the same two answers").
			tool("buscar", "read")
		for i, q := range []string{"política reembolsos", "devolución dinero", "reembolso compra", "devolver pedido", "reintegro pago"} {
			g.call("main", "buscar", fmt.Sprintf(`{"input":%q}`, q),
				`{"resultados":[{"titulo":"Política de devoluciones","url":"https://ayuda.example.es/devoluciones"},{"titulo":"Plazos de reembolso","url":"https://ayuda.example.es/plazos"}]}`)
			g.mark(fmt.Sprint(i + 1))
		}
		add(g.done(g.at["4"], g.at["5"]))
	}
	// A phone number probed in Japanese, one template.
	{
		g := newGen("probe_same_error-ja", "probe_same_error", true, "a new phone spelling each try; the same Japanese format error").
			tool("kaiin.touroku", "write")
		for i, ph := range []string{"090-1234-567", "0901234567", "+81 90 1234 567", "(090)1234-567", "81-90-1234-567"} {
			g.fail("main", "kaiin.touroku", fmt.Sprintf(`{"氏名":"山田太郎","電話":%q}`, ph), "invalid_args", fmt.Sprintf(`"電話番号の形式が正しくありません: %s"`, ph))
			g.mark(fmt.Sprint(i + 1))
		}
		add(g.done(g.at["4"], g.at["5"]))
	}
	// A hidden loop inside a sub-agent while its parent works on.
	{
		g := newGen("hidden_loop-sub-agent", "hidden_loop", true, "a researcher sub-agent reads the same two pages by other routes; the parent's own calls are fresh").
			tool("web.fetch", "read").tool("web.cached", "read").tool("calc", "read")
		g.call("main", "calc", `{"expr":"17*23"}`, `{"value":391}`)
		g.hand("main", "researcher", "Find the 2025 market share of heat pumps in Norway")
		page := `"Heat pumps in Norway\nMarket share of new heating installs in 2025: 62 percent\nSource: national energy agency"`
		for r := range 4 {
			g.call("researcher", "web.fetch", `{"url":"https://energy.example.no/report"}`, page)
			g.mark(fmt.Sprintf("f%d", r+1))
			g.call("researcher", "web.cached", fmt.Sprintf(`{"url":"https://energy.example.no/report","variant":"%d"}`, r), page)
		}
		add(g.done(g.at["f3"], g.at["f4"]))
	}

	// Ping-pong with the arguments respelled each round.
	{
		g := newGen("ping_pong-respelled", "ping_pong", true, "get_invoice and get_payment alternating, the ids in another case each round").
			tool("get_invoice", "read").tool("get_payment", "read")
		pays := []string{"pay-9", "PAY-9", "Pay-9", "pay-9 "}
		for r, id := range []string{"inv-77", "INV-77", "Inv-77", "inv-77 "} {
			g.call("main", "get_invoice", fmt.Sprintf(`{"invoice":%q}`, id), `{"invoice":"INV-77","customer":"Nordlicht GmbH","amount":"310.00","status":"unpaid","payment":"PAY-9"}`)
			g.mark(fmt.Sprintf("a%d", r+1))
			g.call("main", "get_payment", fmt.Sprintf(`{"payment":%q}`, pays[r]), `{"payment":"PAY-9","state":"pending review","amount":"310.00"}`)
		}
		add(g.done(g.at["a4"], g.at["a4"]))
	}
	// A date range widened backwards, the same three messages each time.
	{
		g := newGen("resource_amplification-date-range", "resource_amplification", true, "mail.search since a date moved back a week, a month, a quarter; the same messages").
			tool("mail.search", "read")
		for i, since := range []string{"2026-03-01", "2026-02-22", "2026-02-01", "2025-12-01", "2025-06-01"} {
			g.call("main", "mail.search", fmt.Sprintf(`{"from":"billing@vendor.example","since":%q}`, since),
				`{"messages":[{"id":"m1","subject":"Invoice March overdue"},{"id":"m2","subject":"Reminder: invoice overdue"},{"id":"m3","subject":"Final notice"}]}`)
			g.mark(fmt.Sprint(i + 1))
		}
		add(g.done(g.at["4"], g.at["5"]))
	}
	// A write whose precondition is a header of its request.
	{
		g := newGen("stale_write_retry-if-match-header", "stale_write_retry", true, "PUT with headers.If-Match the same etag after two 412s").
			tool("http_put", "write", "url")
		for i := range 4 {
			g.fail("main", "http_put", fmt.Sprintf(`{"url":"https://api.example.com/docs/42","headers":{"If-Match":"\"a1b2c3\""},"body":{"title":"Q1 plan v%d"}}`, i+2), "conflict",
				`{"status":412,"error":"Precondition Failed"}`)
			g.mark(fmt.Sprint(i + 1))
		}
		add(g.done(g.at["3"], g.at["4"]))
	}
	// Two agents passing one task back and forth in the same words.
	{
		g := newGen("livelock_agents-same-words", "livelock_agents", true, "billing and support hand the same ticket back and forth").
			tool("crm.note", "read")
		for r := range 4 {
			g.hand("dispatcher", "billing", "Resolve ticket 5521: customer charged twice")
			if r == 0 {
				g.mark("b1")
			}
			g.mark(fmt.Sprintf("b%d", r+1))
			g.say("billing", "This is a support matter, not billing.")
			g.hand("dispatcher", "support", "Resolve ticket 5521: customer charged twice")
			g.say("support", "This is a billing matter, not support.")
		}
		add(g.done(g.at["b3"], g.at["b3"]))
	}

	// Tools that take the model's reason for each call (an IDE agent's
	// "explanation"): the same read, in other words each time.
	{
		g := newGen("noisy_repeat-explanation-arg", "noisy_repeat", true, "read_file of one file with a new explanation each call; the same content").
			tool("read_file", "read")
		why := []string{"Read the config to find the port", "Check the configuration file again for the port setting", "Look once more at the config for where the port is set", "Verify the port value in the config file", "Re-open the config to confirm the port"}
		for i, w := range why {
			g.call("main", "read_file", fmt.Sprintf(`{"target_file":"config/app.yaml","explanation":%q}`, w), `"server:\n  host: 0.0.0.0\n  port: 8080\nlogging:\n  level: info"`)
			g.mark(fmt.Sprint(i + 1))
		}
		add(g.done(g.at["4"], g.at["5"]))
	}

	// --- legit -----------------------------------------------------------

	// A date range widened backwards that finds older messages each time,
	// and a listing paged back by date.
	{
		g := newGen("widening-date-range-finds", "revisit_with_progress", false, "mail.search since a date moved back, an older message each time; then pages before a date").
			tool("mail.search", "read").tool("mail.list", "read")
		for i, since := range []string{"2026-03-01", "2026-02-22", "2026-02-01", "2025-12-01"} {
			g.call("main", "mail.search", fmt.Sprintf(`{"from":"billing@vendor.example","since":%q}`, since),
				fmt.Sprintf(`{"messages":[{"id":"m1","subject":"Invoice March overdue"},{"id":"old%d","subject":"Invoice %d"}]}`, i, i))
		}
		for i, before := range []string{"2026-03-08T00:00:00Z", "2026-03-01T00:00:00Z", "2026-02-22T00:00:00Z", "2026-02-15T00:00:00Z"} {
			g.call("main", "mail.list", fmt.Sprintf(`{"folder":"INBOX","before":%q,"limit":"2"}`, before),
				fmt.Sprintf(`{"messages":[{"id":"p%da","subject":"Weekly digest %d"},{"id":"p%db","subject":"Team update %d"}]}`, i, i, i, i))
		}
		add(g.done("", ""))
	}
	// The same, with an edit between the reads.
	{
		g := newGen("reread-explanation-after-edit", "revisit_with_progress", false, "read_file with an explanation, edit_file, read again; three times").
			tool("read_file", "read").tool("edit_file", "write", "target_file")
		for i := range 3 {
			g.call("main", "read_file", fmt.Sprintf(`{"target_file":"config/app.yaml","explanation":"Check the port setting, pass %d"}`, i+1), fmt.Sprintf(`"server:\n  host: 0.0.0.0\n  port: %d\nlogging:\n  level: info"`, 8080+i))
			g.call("main", "edit_file", fmt.Sprintf(`{"target_file":"config/app.yaml","explanation":"Bump the port","code_edit":"port: %d"}`, 8081+i), `"applied"`)
		}
		add(g.done("", ""))
	}

	// The same JSON-as-a-string status while the job makes progress.
	{
		g := newGen("polling-json-in-string", "polling_with_noise", false, "a job polled as a JSON string; its processed count grows, then it succeeds").
			tool("job_status", "read")
		for i := range 5 {
			state := "running"
			if i == 4 {
				state = "succeeded"
			}
			inner := fmt.Sprintf(`{"job": "etl-nightly", "state": %q, "processed": %d, "request_id": "%s", "latency_ms": %d}`, state, i*2500, hexid(i, 8), 30+i*17)
			g.call("main", "job_status", `{"job":"etl-nightly"}`, string(marshal(inner)))
		}
		add(g.done("", ""))
	}
	// Two agents read the same brief once each, then work on their own.
	{
		g := newGen("fanout-same-brief", "revisit_with_progress", false, "two sub-agents each read the same brief, then different sources").
			tool("read_doc", "read").tool("search", "read")
		brief := `"Brief: compare three CRM vendors on price, API limits and EU hosting.\nDeadline: Friday."`
		for k, who := range []string{"analyst_a", "analyst_b"} {
			g.hand("lead", who, fmt.Sprintf("Research vendor group %d", k+1))
			g.call(who, "read_doc", `{"doc":"brief-7"}`, brief)
			for j := range 3 {
				g.call(who, "search", fmt.Sprintf(`{"query":"vendor %d%d pricing EU hosting"}`, k, j), fmt.Sprintf(`{"hits":[{"title":"Vendor %d%d pricing page","url":"https://v%d%d.example/pricing"}]}`, k, j, k, j))
			}
			g.say(who, "done")
		}
		add(g.done("", ""))
	}
	// Retries at the edge of the budget: the fourth attempt succeeds (a
	// fifth, after four failures, is past it: error_retry_loop).
	{
		g := newGen("transient_retry-four", "transient_retry", false, "three transient failures of one call (timeout, timeout, unavailable); the fourth attempt succeeds").
			tool("bank.balance", "read")
		for range 2 {
			g.fail("main", "bank.balance", `{"account":{"iban":"DE02120300000000202051"}}`, "timeout", `"gateway timeout"`)
		}
		g.fail("main", "bank.balance", `{"account":{"iban":"DE02120300000000202051"}}`, "unavailable", `"503 service unavailable"`)
		g.call("main", "bank.balance", `{"account":{"iban":"DE02120300000000202051"}}`, `{"balance":"1204.55","currency":"EUR"}`)
		add(g.done("", ""))
	}
	// Long research: many searches, each with one new document among the known.
	{
		g := newGen("query_refinement-long", "query_refinement", false, "ten searches; each returns three known documents and one new").
			tool("scholar.search", "read")
		for i := range 10 {
			hits := []string{`{"doi":"10.1000/a1","title":"Survey of loop detection"}`, `{"doi":"10.1000/a2","title":"Agents that repeat"}`, `{"doi":"10.1000/a3","title":"Livelock in multi-agent systems"}`,
				fmt.Sprintf(`{"doi":"10.1000/n%d","title":"Study %d of agent progress"}`, i, i)}
			g.call("main", "scholar.search", fmt.Sprintf(`{"q":"agent loop detection aspect %d","page_size":"4"}`, i), fmt.Sprintf(`{"hits":[%s]}`, strings.Join(hits, ",")))
		}
		add(g.done("", ""))
	}

	// Polling where the status finally moves; each poll also reports a
	// counter that moves, and metadata under names it was not told of.
	{
		g := newGen("polling-status-moves", "polling_with_noise", false, "an export polled; rows_exported grows as a string, the status ends done").
			tool("start_export", "write").tool("export_status", "read")
		g.call("main", "start_export", `{"dataset":"events","format":"parquet"}`, `{"job":"x-77"}`)
		for i, st := range []struct{ s, n string }{{"queued", "0"}, {"running", "1200"}, {"running", "5400"}, {"running", "9100"}, {"done", "12000"}} {
			g.call("main", "export_status", `{"job":"x-77"}`, fmt.Sprintf(`{"job":"x-77","state":%q,"rows_exported":%q,"meta":{"requestId":"%s","servedAt":"%s"}}`, st.s, st.n, hexid(i, 5), stamp(i)))
		}
		add(g.done("", ""))
	}
	{
		g := newGen("polling-http-progress", "polling_with_noise", false, "an HTTP poll; Date headers change and so does the body's progress").
			tool("http_get", "read")
		for i := range 5 {
			g.call("main", "http_get", `{"url":"https://api.example.org/v1/builds/311"}`,
				fmt.Sprintf(`{"status":200,"headers":{"Date":"%s","X-Request-Id":"%s"},"body":{"build":311,"phase":%q,"percent":%d}}`, httpDate(i), hexid(i, 6), []string{"compile", "compile", "test", "test", "publish"}[i], i*22))
		}
		add(g.done("", ""))
	}
	// Pagination three ways.
	{
		g := newGen("pagination-cursor-nested", "pagination", false, "issues listed by an opaque cursor in page.after; new issues each page").
			tool("issues.list", "read")
		cur := ""
		for p := range 5 {
			args := `{"repo":"acme/api","page":{"size":3}}`
			if cur != "" {
				args = fmt.Sprintf(`{"repo":"acme/api","page":{"size":3,"after":%q}}`, cur)
			}
			var items []string
			for k := range 3 {
				n := 100 + p*3 + k
				items = append(items, fmt.Sprintf(`{"number":%d,"title":"Flaky test in module %d","state":"open"}`, n, n%7))
			}
			cur = fmt.Sprintf("Y3Vyc29yOnYyOpK5MjAyNi0wMy0xMFQw%02dOjAwOjAw", p)
			g.call("main", "issues.list", args, fmt.Sprintf(`{"items":[%s],"pageInfo":{"endCursor":%q,"hasNextPage":%v}}`, strings.Join(items, ","), cur, p < 4))
		}
		add(g.done("", ""))
	}
	{
		g := newGen("pagination-offset-string", "pagination", false, "offset as a string, 20 a page; new rows each page, the last empty").
			tool("audit.search", "read")
		for p := range 5 {
			var rows []string
			if p < 4 {
				for k := range 4 {
					rows = append(rows, fmt.Sprintf(`{"actor":"user%d","action":"login","at":"%s"}`, p*4+k, stamp(p*4+k)))
				}
			}
			g.call("main", "audit.search", fmt.Sprintf(`{"filter":{"action":"login"},"offset":"%d","limit":"20"}`, p*20), fmt.Sprintf(`{"rows":[%s]}`, strings.Join(rows, ",")))
		}
		add(g.done("", ""))
	}
	{
		g := newGen("pagination-page-token", "pagination", false, "a drive listing by pageToken; new files each page").
			tool("drive.files.list", "read")
		tok := ""
		for p := range 4 {
			args := `{"q":"mimeType='application/pdf'","pageSize":2}`
			if tok != "" {
				args = fmt.Sprintf(`{"q":"mimeType='application/pdf'","pageSize":2,"pageToken":%q}`, tok)
			}
			tok = fmt.Sprintf("CkQKCmZpbGVfbmFtZRI2GjQK%dMHgtZmlsZQ", p)
			g.call("main", "drive.files.list", args, fmt.Sprintf(`{"files":[{"id":"f%da","name":"report-%d-a.pdf"},{"id":"f%db","name":"report-%d-b.pdf"}],"nextPageToken":%q}`, p, p, p, p, tok))
		}
		add(g.done("", ""))
	}
	// Transient failures that then succeed.
	{
		g := newGen("transient_retry-429-then-ok", "transient_retry", false, "rate limited three times, then the answer").
			tool("fx.rate", "read")
		for range 3 {
			g.fail("main", "fx.rate", `{"pair":"EUR/CHF"}`, "rate_limited", `{"error":"429 Too Many Requests","retry_after":"2"}`)
		}
		g.call("main", "fx.rate", `{"pair":"EUR/CHF"}`, `{"pair":"EUR/CHF","rate":0.9412}`)
		g.call("main", "fx.rate", `{"pair":"EUR/USD"}`, `{"pair":"EUR/USD","rate":1.0821}`)
		add(g.done("", ""))
	}
	{
		g := newGen("transient_retry-untyped-503", "transient_retry", false, "a retryable tool fails with 503 twice (typed unavailable), then succeeds; then another city").
			tool("weather", "read").retryable("weather")
		for range 2 {
			g.fail("main", "weather", `{"city":"Oslo"}`, "unavailable", `"HTTP 503 Service Unavailable"`)
		}
		g.call("main", "weather", `{"city":"Oslo"}`, `{"city":"Oslo","temp_c":-3,"sky":"snow showers"}`)
		g.call("main", "weather", `{"city":"Bergen"}`, `{"city":"Bergen","temp_c":4,"sky":"rain"}`)
		add(g.done("", ""))
	}
	// A coder and a reviewer handing a change back and forth; each review
	// finds fewer problems, the last approves. The coder's task carries the
	// remarks still open, as a lead passes them on; the same task text a
	// third time is refusable by R1 whatever came back in between (the
	// -same-task variant).
	for _, same := range []bool{false, true} {
		id := "handoff-back-and-forth-fr"
		if same {
			id += "-same-task"
		}
		g := newGen(id, "iterative_refinement", false, "développeur and relecteur, four rounds, fewer remarks each time").
			tool("lire_fichier", "read").tool("ecrire_fichier", "write", "chemin")
		reviews := []string{"REFUSÉ : gestion d'erreur absente ; pas de tests ; nommage incohérent", "REFUSÉ : pas de tests ; nommage incohérent", "REFUSÉ : nommage incohérent", "APPROUVÉ : rien à signaler"}
		for r := range 4 {
			task := "Corriger le module de paiement selon la relecture"
			if r > 0 && !same {
				task += " : " + strings.TrimPrefix(reviews[r-1], "REFUSÉ : ")
			}
			g.hand("chef", "développeur", task)
			g.call("développeur", "lire_fichier", `{"chemin":"paiement/module.go"}`, fmt.Sprintf(`"package paiement\n// version %d\nfunc Payer() error { return nil }"`, r))
			g.call("développeur", "ecrire_fichier", fmt.Sprintf(`{"chemin":"paiement/module.go","contenu":"version %d"}`, r+1), `{"ok":true}`)
			g.say("développeur", fmt.Sprintf("correctif %d appliqué", r+1))
			g.hand("chef", "relecteur", "Relire le module de paiement")
			g.say("relecteur", reviews[r])
		}
		add(g.done("", ""))
	}
	// A long task: many similar calls, each productive.
	{
		g := newGen("long_task-migration", "long_task", false, "a schema migration of 12 tables: describe, migrate, verify each").
			tool("db.describe", "read").tool("db.migrate", "write", "table").tool("db.count", "read")
		for t := range 12 {
			name := fmt.Sprintf("tbl_%02d", t)
			g.call("main", "db.describe", fmt.Sprintf(`{"table":%q}`, name), fmt.Sprintf(`{"table":%q,"columns":["id","created_at","payload_v1"],"rows":%d}`, name, 1000+t*37))
			g.call("main", "db.migrate", fmt.Sprintf(`{"table":%q,"rename":{"payload_v1":"payload"}}`, name), `{"ok":true}`)
			g.call("main", "db.count", fmt.Sprintf(`{"table":%q}`, name), fmt.Sprintf(`{"table":%q,"rows":%d}`, name, 1000+t*37))
		}
		add(g.done("", ""))
	}
	{
		g := newGen("long_task-coding", "long_task", false, "edit, run the same test command, read the failure, edit again; the failure moves each time").
			tool("read_file", "read").tool("edit_file", "write", "path").tool("bash", "read")
		for r := range 6 {
			g.call("main", "read_file", `{"path":"src/parser.ts"}`, fmt.Sprintf(`"export function parse(s: string) {\n  // attempt %d\n  return tokens(s)\n}"`, r))
			g.call("main", "edit_file", fmt.Sprintf(`{"path":"src/parser.ts","old":"attempt %d","new":"attempt %d"}`, r, r+1), `"ok"`)
			res := fmt.Sprintf(`"FAIL parser.test.ts\n  ✕ case %d: expected 'x' got 'y'\nTests: 1 failed, %d passed"`, r+3, 10+r)
			if r == 5 {
				res = `"PASS parser.test.ts\nTests: 16 passed"`
			}
			g.call("main", "bash", `{"command":"npm test -- parser"}`, res)
		}
		add(g.done("", ""))
	}
	// Query refinement with synonyms, each search bringing one new document.
	{
		g := newGen("query_refinement-synonyms", "query_refinement", false, "synonym rewordings; each finds at least one new article").
			tool("kb_lookup", "read")
		qs := []string{"how do I cancel my subscription", "terminate membership plan", "stop the recurring charge on my account", "end automatic renewal"}
		for i, q := range qs {
			g.call("main", "kb_lookup", fmt.Sprintf(`{"q":%q,"k":"3"}`, q),
				fmt.Sprintf(`{"query":%q,"hits":[{"id":"KB-311","title":"Managing your plan"},{"id":"KB-%d","title":"Article %d on plans"}],"took":%d}`, q, 500+i, i, 10+i))
		}
		add(g.done("", ""))
	}
	// Searching until found: not_found for distinct candidates, and a format
	// error fixed on the second try.
	{
		g := newGen("search_until_found-mixed", "search_until_found", false, "orders looked up by guessed ids until one exists; a date fixed after one invalid_args").
			tool("orders.get", "read").tool("orders.search", "read")
		for _, id := range []string{"100231", "100232", "100213", "100321"} {
			g.fail("main", "orders.get", fmt.Sprintf(`{"order":{"id":%q}}`, id), "not_found", fmt.Sprintf(`"order %s not found"`, id))
		}
		g.call("main", "orders.get", `{"order":{"id":"103221"}}`, `{"id":"103221","status":"shipped","total":"49.90"}`)
		g.fail("main", "orders.search", `{"placed_after":"03/01/2026"}`, "invalid_args", `"placed_after: '03/01/2026' is not a date (YYYY-MM-DD)"`)
		g.call("main", "orders.search", `{"placed_after":"2026-03-01"}`, `{"ids":["103221","103240"]}`)
		add(g.done("", ""))
	}
	// A deep delegation tree: no agent twice on a chain.
	{
		g := newGen("deep_delegation-tree", "deep_delegation", false, "lead -> analyst -> scraper -> parser, then lead -> writer").
			tool("fetch", "read")
		g.hand("lead", "analyst", "Analyse competitor pricing in the Nordics")
		g.hand("analyst", "scraper", "Collect the price pages of three competitors")
		g.hand("scraper", "parser", "Extract the price tables from the collected pages")
		g.call("parser", "fetch", `{"url":"https://a.example/pricing"}`, `{"plans":[{"name":"Pro","eur":"29"}]}`)
		g.say("parser", "extracted 1 table")
		g.say("scraper", "collected 3 pages")
		g.say("analyst", "analysis done")
		g.hand("lead", "writer", "Write the board summary of Nordic pricing")
		g.say("writer", "summary written")
		add(g.done("", ""))
	}
	// Optimistic concurrency: conflict, read the new revision, write with it.
	{
		g := newGen("optimistic_retry-nested", "optimistic_retry", false, "kv.put conflicts, kv.get reads the new revision, kv.put succeeds; three keys").
			tool("kv.get", "read", "key").tool("kv.put", "write", "key")
		for k := range 3 {
			key := fmt.Sprintf("cfg/svc-%d", k)
			g.call("main", "kv.get", fmt.Sprintf(`{"key":%q}`, key), fmt.Sprintf(`{"key":%q,"revision":%d}`, key, 10+k))
			g.fail("main", "kv.put", fmt.Sprintf(`{"key":%q,"value":{"on":true},"options":{"ifRevision":"%d"}}`, key, 10+k), "conflict", `{"error":"revision mismatch"}`)
			g.call("main", "kv.get", fmt.Sprintf(`{"key":%q}`, key), fmt.Sprintf(`{"key":%q,"revision":%d}`, key, 11+k))
			g.call("main", "kv.put", fmt.Sprintf(`{"key":%q,"value":{"on":true},"options":{"ifRevision":"%d"}}`, key, 11+k), `{"ok":true}`)
		}
		add(g.done("", ""))
	}
	// A batch of items through one tool, the same answer shape each time.
	{
		g := newGen("batch_progress-nested", "batch_progress", false, "labels applied to ten messages; the same ok each time, a new id each").
			tool("mail.label", "write", "message")
		for i := range 10 {
			g.call("main", "mail.label", fmt.Sprintf(`{"message":{"id":"m-%d"},"labels":["Invoices"]}`, 300+i), fmt.Sprintf(`{"ok":true,"message":"m-%d"}`, 300+i))
		}
		add(g.done("", ""))
	}
	{
		g := newGen("batch_progress-reads", "batch_progress", false, "twelve invoices read one by one, each with its own lines").
			tool("invoice.get", "read")
		for i := range 12 {
			g.call("main", "invoice.get", fmt.Sprintf(`{"number":"%d"}`, 2026001+i), fmt.Sprintf(`{"number":"%d","customer":"C-%d","total":"%d.00","lines":[{"sku":"S-%d","qty":%d}]}`, 2026001+i, 40+i, 100+i*13, i, 1+i%3))
		}
		add(g.done("", ""))
	}
	// Research across tools whose answers overlap, each bringing something new.
	{
		g := newGen("revisit_with_progress-overlap", "revisit_with_progress", false, "web search, then pages that repeat the search's snippets and add their own text").
			tool("web.search", "read").tool("web.fetch", "read")
		g.call("main", "web.search", `{"query":"heat pump efficiency cold climate"}`, `{"results":[{"url":"https://a.example/hp","title":"Heat pumps in the cold"},{"url":"https://b.example/cop","title":"COP at -15C"}]}`)
		for i, u := range []string{"https://a.example/hp", "https://b.example/cop"} {
			g.call("main", "web.fetch", fmt.Sprintf(`{"url":%q}`, u), fmt.Sprintf(`"Heat pumps in the cold\nCOP at -15C\nFinding %d: measured seasonal COP %d.%d in field trials."`, i, 2+i, 4+i))
		}
		g.call("main", "web.search", `{"query":"heat pump efficiency cold climate field trial"}`, `{"results":[{"url":"https://a.example/hp","title":"Heat pumps in the cold"},{"url":"https://c.example/trial","title":"Nordic field trial 2025"}]}`)
		g.call("main", "web.fetch", `{"url":"https://c.example/trial"}`, `"Nordic field trial 2025\n60 homes, seasonal COP 2.9"`)
		add(g.done("", ""))
	}
	// Re-reads after writes.
	{
		g := newGen("keyed_legit-reread-after-write", "revisit_with_progress", false, "a setting read, written, read again, three times").
			tool("settings.get", "read").tool("settings.set", "write", "name")
		for i := range 3 {
			g.call("main", "settings.get", `{"name":"max_conn"}`, fmt.Sprintf(`{"name":"max_conn","value":"%d"}`, 100+i*20))
			g.call("main", "settings.set", fmt.Sprintf(`{"name":"max_conn","value":"%d"}`, 120+i*20), `{"ok":true}`)
		}
		add(g.done("", ""))
	}
	// Recursion over a tree, nested calls of one tool with new nodes.
	{
		g := newGen("legit_recursion-tree", "legit_recursion", false, "a directory walk: list_dir nested in list_dir, new entries each level").
			tool("list_dir", "read")
		m := g.say("main", "")
		p := g.add(event{Parent: ptr(m), Type: "tool_call", Agent: "main", Tool: "list_dir", Args: raw(`{"path":"/srv"}`), Status: "ok", Result: raw(`{"dirs":["a","b"]}`)})
		for _, d := range []string{"a", "b"} {
			q := g.add(event{Parent: ptr(p), Type: "tool_call", Agent: "main", Tool: "list_dir", Args: raw(fmt.Sprintf(`{"path":"/srv/%s"}`, d)), Status: "ok", Result: raw(fmt.Sprintf(`{"dirs":["%s1"],"files":["%s.txt"]}`, d, d))})
			g.add(event{Parent: ptr(q), Type: "tool_call", Agent: "main", Tool: "list_dir", Args: raw(fmt.Sprintf(`{"path":"/srv/%s/%s1"}`, d, d)), Status: "ok", Result: raw(fmt.Sprintf(`{"files":["%s1.log"]}`, d))})
		}
		add(g.done("", ""))
	}
	return out
}

// probeOutcome is what the detector does with one probe trace.
func probeOutcome(tr *trace) (state string, sc score) {
	sc = judge(tr, replay(New(nil), tr))
	switch {
	case sc.falseK:
		return "false_kill", sc
	case sc.missed:
		return "missed", sc
	case sc.detected:
		return "detected", sc
	}
	return "ok", sc
}

// TestHeldOutProbe replays the probe: every loop refused at or after its
// earliest event, and no legit trace refused, except the outcomes listed in
// probeKnown, which say what is left and why.
func TestHeldOutProbe(t *testing.T) {
	traces := probeTraces()
	if *probeDump != "" {
		for _, tr := range traces {
			b, err := json.MarshalIndent(tr, "", " ")
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(*probeDump, tr.ID+".json"), b, 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	type agg struct{ n, detected, missed, falseK int }
	kinds := map[string]*agg{}
	var order []string
	for _, tr := range traces {
		state, sc := probeOutcome(tr)
		t.Log(sc)
		if sc.r.verdict != nil {
			t.Logf("    %s: %s", sc.r.verdict.Detector, sc.r.verdict.Message)
		}
		class := "loop"
		if !tr.Label.Loop {
			class = "legit"
		}
		k := class + " " + tr.Label.Kind
		a := kinds[k]
		if a == nil {
			a = &agg{}
			kinds[k] = a
			order = append(order, k)
		}
		a.n++
		switch state {
		case "detected":
			a.detected++
		case "missed":
			a.missed++
		case "false_kill":
			a.falseK++
		}
		want := "detected"
		if !tr.Label.Loop {
			want = "ok"
		}
		if w, ok := probeKnown[tr.ID]; ok {
			want = w
		}
		if state != want {
			t.Errorf("%s: %s, want %s", tr.ID, state, want)
		}
	}
	var b strings.Builder
	fmt.Fprintf(&b, "\n%-34s %3s %8s %6s %11s\n", "class", "n", "detected", "missed", "false kills")
	for _, k := range order {
		a := kinds[k]
		fmt.Fprintf(&b, "%-34s %3d %8d %6d %11d\n", k, a.n, a.detected, a.missed, a.falseK)
	}
	t.Log(b.String())
}

// probeKnown lists the probe traces whose outcome is not the label's, each
// with why it is left so.
var probeKnown = map[string]string{
	// None left. The benchmark's R1 lets a runtime refuse the third
	// hand-off of one sub-task to one agent whatever came back in between;
	// a lead that resends the same words while the reviews shrink was
	// refused until the receiver's verdict naming a number the last two
	// did not ("correctif 3 appliqué") counted as news (the nineteenth
	// probe's fixes, docs/LOOPS.md).
}
