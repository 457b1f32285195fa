package loops

import (
	"bytes"
	"encoding/json"
)

// A read's arguments may carry, beside what it asks, what names the
// exchange: the request's own id (request_id, correlationId, traceId, a
// nonce), when the client sent it (client_time, sent_at, request_ts), and
// which attempt it is (attempt, retry_count). A client or a framework
// stamps each call anew, so the same question reads as another each time
// while nothing is learned: a flight-ops agent fetching an airport's
// notices with a fresh request id, its clock and an attempt counter is
// asking the same thing (TestExchangeArgs). A read's key leaves them out;
// a write's keeps them (an idempotency key or a nonce tells two payments
// apart).

// exchangeClockWords are the words that, before a time ("client_time",
// "sent_at", "request_ts"), say the time is when the call was made.
var exchangeClockWords = map[string]bool{
	"client": true, "sent": true, "request": true, "req": true, "local": true,
}

// exchangeCounters are the keys, alone or as their last word, that count
// the caller's attempts at the call.
var exchangeCounters = map[string]bool{
	"attempt": true, "attempts": true, "retry": true, "retries": true,
}

// What an argument's key names (exchangeKind): the question, an id of
// the exchange, or another stamp of it (a nonce, the client's clock, the
// attempt's number).
const (
	askedKey = iota
	exchangeIDKey
	exchangeStampKey
)

// exchangeArgKey reports whether argument key k names the exchange rather
// than the question (exchangeKind).
func exchangeArgKey(k []byte) bool { return exchangeKind(k) != askedKey }

// exchangeKind says what argument key k names: the request's own id (its
// one word, as volatileAlone's requestid, or an id after a word of
// volatileIDWords that names an exchange: request, trace, correlation,
// ...) is exchangeIDKey; a nonce, the client's clock (a time after a word
// of exchangeClockWords) or the attempt's number (attempt, retry_count,
// attempt_number; a limit such as max_retries is the caller's setting,
// kept) is exchangeStampKey; any other is askedKey.
func exchangeKind(k []byte) int {
	var w keyWords
	if !w.split(k) || w.n == 0 {
		return askedKey
	}
	n := w.n
	last := string(w.word(n - 1))
	if n == 1 {
		switch last {
		case "rid", "reqid", "requestid", "traceid", "spanid":
			return exchangeIDKey
		case "nonce":
			return exchangeStampKey
		}
		if exchangeCounters[last] {
			return exchangeStampKey
		}
		return askedKey
	}
	first := string(w.word(0))
	if first == "max" || first == "min" {
		return askedKey
	}
	if exchangeCounters[last] || (last == "count" || last == "number" || last == "no") && exchangeCounters[string(w.word(n-2))] {
		return exchangeStampKey
	}
	var in map[string]bool
	kind := exchangeStampKey
	switch last {
	case "id", "ids", "uuid", "guid":
		in, kind = exchangeIDWords, exchangeIDKey
	case "time", "ts", "at", "timestamp":
		in = exchangeClockWords
	case "nonce":
		return exchangeStampKey
	default:
		return askedKey
	}
	for i := range n - 1 {
		if in[string(w.word(i))] {
			return kind
		}
	}
	return askedKey
}

// exchangeIDWords are the words of volatileIDWords that, before an id in
// a call's arguments, name an exchange: a search's, a query's or a
// quote's id asks for that search, query or quote.
var exchangeIDWords = map[string]bool{
	"request": true, "req": true, "trace": true, "span": true, "correlation": true,
	"rpc": true, "invocation": true, "nonce": true, "poll": true,
}

// readKey is callKey of a read's arguments with the members that name the
// exchange left out (exchangeArgKey, and metaCounter in a metadata
// object), at any depth; a write's, or a read's that holds none, is
// callKey. A read that, its stamps left out, would ask nothing (asksAny)
// asks for what its ids of the exchange name (a trace by its trace_id, a
// ticket by its request_id): its key keeps them, and leaves out only its
// other stamps (a nonce, the clock, the attempt, a step counter); so a
// read stamped with a nonce alone asks nothing, as before.
func readKey(tool string, write bool, args []byte) uint64 {
	k, _ := readKeyIDs(tool, write, args)
	return k
}

// readKeyIDs is readKey, and whether it kept the ids of the exchange
// because they were all the read asked.
func readKeyIDs(tool string, write bool, args []byte) (uint64, bool) {
	if write || !holdsExchangeKey(args) {
		return callKey(tool, args), false
	}
	v, ok := decodeArgs(args)
	if !ok || !dropExchange(v, false, false) {
		return callKey(tool, args), false
	}
	kept := !asksAny(v)
	if kept {
		// The stamps were all it asked: decoded anew, the ids stay.
		if v, ok = decodeArgs(args); !ok || !dropExchange(v, false, true) {
			return callKey(tool, args), false
		}
	}
	b, err := json.Marshal(v)
	if err != nil {
		return callKey(tool, args), false
	}
	return callKey(tool, b), kept
}

// decodeArgs decodes a call's JSON arguments, its numbers as written.
func decodeArgs(args []byte) (any, bool) {
	var v any
	dec := json.NewDecoder(bytes.NewReader(args))
	dec.UseNumber()
	return v, dec.Decode(&v) == nil
}

// asksAny reports whether decoded arguments v hold a value at any depth
// other than a null: an empty object or list, or a null, asks nothing.
func asksAny(v any) bool {
	switch x := v.(type) {
	case nil:
		return false
	case map[string]any:
		for _, e := range x {
			if asksAny(e) {
				return true
			}
		}
		return false
	case []any:
		for _, e := range x {
			if asksAny(e) {
				return true
			}
		}
		return false
	}
	return true
}

// metaCounter reports whether key k, in an object of a read's arguments
// under a key that names metadata (metadata, meta, _meta: what a
// framework passes along of its own run), counts the caller's steps: a
// graph's step, a turn, an iteration. The same key elsewhere (a solver's
// step, a game's turn) is what the call asks.
func metaCounter(k []byte) bool {
	var w keyWords
	if !w.split(k) || w.n == 0 {
		return false
	}
	switch string(w.word(w.n - 1)) {
	case "step", "turn", "iteration":
		return true
	}
	return false
}

// metaKey reports whether key k names an object of metadata.
func metaKey(k []byte) bool {
	var w keyWords
	if !w.split(k) || w.n == 0 {
		return false
	}
	switch string(w.word(w.n - 1)) {
	case "meta", "metadata":
		return true
	}
	return false
}

// holdsExchangeKey is a pass over canonical JSON arguments: whether one of
// their keys names the exchange.
func holdsExchangeKey(args []byte) bool {
	for i := 0; i < len(args); i++ {
		if args[i] != '"' {
			continue
		}
		j := i + 1
		for j < len(args) && args[j] != '"' {
			if args[j] == '\\' {
				j++
			}
			j++
		}
		if j+1 < len(args) && args[j+1] == ':' && (exchangeArgKey(args[i+1:j]) || metaCounter(args[i+1:j]) || a2aMessageID(args[i+1:j], args)) {
			return true
		}
		i = j
	}
	return false
}

// dropExchange deletes from decoded arguments v the members that name the
// exchange (but its ids when keepIDs is true), inside an object of
// metadata when meta is true too its step counters, and reports whether
// it deleted any.
func dropExchange(v any, meta, keepIDs bool) bool {
	dropped := false
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			kind := exchangeKind([]byte(k))
			if k == "messageId" && a2aMessage(x) {
				kind = exchangeIDKey // an A2A message's own id (a2a.go)
			}
			if kind == exchangeStampKey || kind == exchangeIDKey && !keepIDs || meta && metaCounter([]byte(k)) {
				delete(x, k)
				dropped = true
				continue
			}
			dropped = dropExchange(e, metaKey([]byte(k)), keepIDs) || dropped
		}
	case []any:
		for _, e := range x {
			dropped = dropExchange(e, false, keepIDs) || dropped
		}
	}
	return dropped
}

// exchangeAside is what a refusal of call s says of the arguments its key
// left out, when it left some out: a model that stamped each call anew
// reads why another stamp is no other call.
func exchangeAside(s *Step) string {
	if isWrite(s.Access) || !holdsExchangeKey(s.Args) {
		return ""
	}
	k, kept := readKeyIDs(s.Tool, false, s.Args)
	switch {
	case k == callKey(s.Tool, s.Args):
		return ""
	case kept:
		return " (its clock and attempt or step counters aside)"
	}
	return " (its request ids, clock and attempt or step counters aside)"
}
