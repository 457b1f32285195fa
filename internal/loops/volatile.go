package loops

import (
	"bytes"
	"hash/maphash"
)

// This file tells the substance of a result from its fetch metadata: the
// request and trace ids, timestamps, latencies, cache flags and nonces that
// change from one answer to the next although the answer does not. Two
// answers that differ only in those are the same answer. Metadata is known
// by name (the key it is under) and by shape (inside any string: a
// date-time, or a random token such as a hex nonce or a UUID).

// volatileWords are the words of a key that name fetch metadata whatever
// else the key says: "latency_ms", "x_cache", "took", "_score". A span of
// time ("elapsed", "queued_duration") grows while nothing else moves: a
// job polled whose answer says only how long it has waited is the same
// answer each time. So does a simulation's or a game server's tick (its
// logical clock): a world polled whose tick alone moves has not changed;
// and a worker's heartbeat, a liveness clock as uptime is (TestHeartbeatPolled).
// A vector search's distances, listed beside the ids they rank, measure the
// query as a score does, and move with each rewording of it
// (TestDistancesListed); one distance alone may be the answer's (a route's).
var volatileWords = map[string]bool{
	"latency": true, "took": true, "elapsed": true, "duration": true, "nonce": true, "timestamp": true, "ts": true,
	"cache": true, "cached": true, "score": true, "scores": true, "relevance": true, "similarity": true, "distances": true,
	"uptime": true, "expires": true, "expiry": true, "signature": true, "tick": true,
	"heartbeat": true, "heartbeats": true, "walltime": true,
}

// volatileIDWords are the words that, before "id" (request_id, traceId,
// x-request-id, search_id), name an id of the exchange rather than of a
// thing. A quote's or an estimate's id (quote_id) is made anew for each
// asking, as a search's is: what it quotes is the answer (TestQuoteIDs).
// So is a long poll's (poll_id): each poll its own (TestPollIDs).
var volatileIDWords = map[string]bool{
	"request": true, "req": true, "trace": true, "span": true, "correlation": true, "search": true,
	"query": true, "response": true, "resp": true, "rpc": true, "invocation": true, "nonce": true,
	"quote": true, "estimate": true, "poll": true,
}

// quotaWords are the words that, beside "remaining" or "left" (or "rate"
// "limit" before them), name the caller's quota of calls to the service:
// how many it has left falls with each call, an account's count and not the
// answer's.
var quotaWords = map[string]bool{
	"requests": true, "calls": true, "ratelimit": true,
}

// volatileWaited are the words that, before a unit of time (waiting_s,
// queued_seconds), name how long something has waited so far: a job
// polled whose answer says only that grows while nothing else moves. A
// count of jobs waiting ("waiting": 5) has no unit and is the answer's.
// So does how old a report is (age_seconds, as HTTP's Age header): the
// time since it was made, counted by the clock while the report stays
// (TestReportAgeKeys); an age in years has no unit here.
var volatileWaited = map[string]bool{
	"wait": true, "waiting": true, "waited": true, "queued": true, "pending": true, "idle": true,
	"age": true, "queue": true,
}

// volatileStamps are the words that, before "at", "on", "of", "time", "ts"
// or "date" (fetched_at, as_of, server_time), name when the answer was
// made, not when something happened. So do when a reading was taken
// (sampled_at, measured_at, observed_at, obs_time): a sensor read anew
// that says what it said is the same answer, its stamp a clock as a
// heartbeat is (TestReadingStamps); when a thing was updated or a report
// made stays the answer's. So do when a metrics answer was collected or
// scraped (collected_at, scrape_time: TestCollectedStamps).
var volatileStamps = map[string]bool{
	"fetched": true, "retrieved": true, "generated": true, "served": true, "received": true,
	"responded": true, "sent": true, "queried": true, "requested": true, "computed": true,
	"checked": true, "polled": true, "response": true, "request": true, "server": true, "current": true,
	"as": true, "cached": true,
	"sampled": true, "measured": true, "observed": true, "obs": true, "observation": true,
	"collected": true, "scraped": true, "scrape": true,
}

// volatileParticiples are the words that, last in a key ("checked",
// "lastFetched", "time_generated"), name when the answer was made if the
// key's value is a date-time: under them a count ("generated": 12) is the
// answer's.
var volatileParticiples = map[string]bool{
	"fetched": true, "retrieved": true, "generated": true, "checked": true, "polled": true,
	"queried": true, "computed": true, "refreshed": true, "served": true, "crawled": true,
	"scraped": true, "rendered": true,
}

// volatileAlone are keys that are metadata on their own: which machine
// answered, and ids of the exchange written as one word.
var volatileAlone = map[string]bool{
	"server": true, "host": true, "hostname": true, "node": true, "pod": true, "instance": true,
	"backend": true, "now": true, "rid": true, "reqid": true, "requestid": true, "traceid": true,
	"spanid": true,
}

// What a result's key says of the value under it.
const (
	keyKept     = iota // the answer's
	keyMeta            // fetch metadata
	keyMetaTime        // fetch metadata when it is a date-time (volatileParticiples)
)

// volatileKind returns what a result's key says of its value.
func volatileKind(k []byte) uint8 {
	if volatileKey(k) {
		return keyMeta
	}
	var w keyWords
	if volatileParticiples[string(w.last(k))] {
		return keyMetaTime
	}
	return keyKept
}

// volatileKey reports whether a result's key names fetch metadata.
func volatileKey(k []byte) bool {
	var w keyWords
	if !w.split(k) || w.n == 0 {
		return false
	}
	n := w.n
	if n == 1 && volatileAlone[string(w.word(0))] {
		return true
	}
	quota, left := false, false
	for i := range n {
		x := string(w.word(i))
		if volatileWords[x] {
			return true
		}
		if x == "time" && i+1 < n && string(w.word(i+1)) == "stamp" {
			return true // time_stamp, data_time_stamp: a timestamp in two words
		}
		if x == "wall" && i+1 < n && (string(w.word(i+1)) == "time" || string(w.word(i+1)) == "clock") {
			// How long the call ran by the clock on the wall
			// (wall_time_s, wallClockMs): measured anew each run.
			return true
		}
		quota = quota || quotaWords[x] || x == "limit" && i > 0 && string(w.word(i-1)) == "rate"
		left = left || x == "remaining" || x == "left"
	}
	if quota && left {
		// The caller's quota left (requests_remaining, x_rate_limit_remaining,
		// api_calls_left): it falls with each call, whatever the answer
		// says, as X-RateLimit-Remaining does in the headers
		// (TestQuotaLeftKeys). Other things left (seats_remaining,
		// days_left) are the answer's.
		return true
	}
	var in map[string]bool
	switch string(w.word(n - 1)) {
	case "ms", "msec", "millis", "us", "ns":
		return true // a measured duration
	case "s", "sec", "secs", "seconds", "min", "mins", "minutes":
		// How long something has waited, in its unit (waiting_s,
		// queued_seconds, idle_min): a span that grows while nothing
		// else moves, as elapsed does. Other spans in a unit (a
		// timeout_s, an eta_s counting down, a clip's length_s) are
		// the answer's (TestWaitedSpanKeys).
		in = volatileWaited
	case "id", "ids", "uuid", "guid":
		in = volatileIDWords
	case "at", "on", "of", "time", "ts", "date":
		in = volatileStamps
	case "by":
		return n == 2 && (string(w.word(0)) == "served" || string(w.word(0)) == "handled")
	default:
		return false
	}
	for i := range n - 1 {
		if in[string(w.word(i))] {
			return true
		}
	}
	return false
}

// headersKey reports whether a result's key holds the headers of an HTTP
// answer ("headers", "responseHeaders", "response_headers"), whose members
// volatileHeader reads.
func headersKey(k []byte) bool {
	n := len(k)
	return n >= 7 && n <= 16 && bytes.EqualFold(k[n-7:], []byte("headers"))
}

// volatileHeader reports whether an HTTP header names the exchange rather
// than the content: when it was served (Date, Age), by what (Via, CF-Ray,
// X-Amz-Cf-Id, X-Served-By), how fast (X-Runtime, Server-Timing), the
// caller's remaining quota (X-RateLimit-*), a session (Set-Cookie), and
// any X-...-Id. Under another key a "date" is the answer's (a slot, a
// due date); ETag and Last-Modified say which version of the content it
// is, and stay.
func volatileHeader(k []byte) bool {
	if len(k) > 64 {
		return false
	}
	var buf [64]byte
	l := buf[:len(k)]
	for i, c := range k {
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		l[i] = c
	}
	switch string(l) {
	case "date", "age", "via", "set-cookie", "cf-ray", "x-runtime", "x-response-time", "server-timing",
		"x-timer", "x-served-by", "x-cache-hits", "report-to", "nel", "x-amz-cf-pop":
		return true
	}
	return bytes.Contains(l, []byte("ratelimit")) || bytes.Contains(l, []byte("rate-limit")) ||
		bytes.HasPrefix(l, []byte("x-")) && (bytes.HasSuffix(l, []byte("-id")) || bytes.HasSuffix(l, []byte("requestid")))
}

// keyWords is a key lower-cased and cut into words (at most 8) at '_',
// '-', '.', spaces and camelCase humps ("x-requestId" is x, request, id;
// "traceID" is trace, id): what every rule that reads a key's name
// matches its words against. It lives on its caller's stack.
type keyWords struct {
	low  [64]byte
	span [8][2]uint8
	n    int // words
}

// split cuts k into w's words. It reports false, with no words, for a key
// empty or longer than 64 bytes: no rule reads those.
func (w *keyWords) split(k []byte) bool {
	w.n = 0
	if len(k) == 0 || len(k) > len(w.low) {
		return false
	}
	w.n = splitKey(k, &w.low, &w.span)
	return true
}

// word is the i-th word, a view of w (compare it as string(w.word(i)),
// which copies nothing).
func (w *keyWords) word(i int) []byte { return w.low[w.span[i][0]:w.span[i][1]] }

// last splits k into w's words and returns the last, or nil if it has
// none (compare it as string(w.last(k)), which copies nothing).
func (w *keyWords) last(k []byte) []byte {
	if !w.split(k) || w.n == 0 {
		return nil
	}
	return w.word(w.n - 1)
}

// splitKey writes k lower-cased into low and cuts it into words (see
// keyWords); it returns how many, their bounds in span.
func splitKey(k []byte, low *[64]byte, span *[8][2]uint8) int {
	n, start := 0, 0
	cut := func(end int) {
		if end > start && n < len(span) {
			span[n] = [2]uint8{uint8(start), uint8(end)}
			n++
		}
		start = end
	}
	for i, c := range k {
		switch {
		case c == '_' || c == '-' || c == '.' || c == ' ' || c == '$' || c == '@':
			cut(i)
			start = i + 1
			low[i] = ' '
			continue
		case 'A' <= c && c <= 'Z':
			// A hump starts a word; in a run of capitals ("URLPath"), the
			// last one starts the next word when a lower-case letter follows.
			prevUpper := i > 0 && 'A' <= k[i-1] && k[i-1] <= 'Z'
			if i > 0 && (!prevUpper || i+1 < len(k) && 'a' <= k[i+1] && k[i+1] <= 'z') {
				cut(i)
			}
			c += 'a' - 'A'
		}
		low[i] = c
	}
	cut(len(k))
	return n
}

// maskedHash hashes the text of a result string (as written) with the
// date-times and random tokens inside it replaced by a placeholder. A
// string that is nothing but one date-time or one token is hashed as is:
// it is the value of a field (a commit, an id, a creation time), and
// metadata fields are known by their keys.
func maskedHash(b []byte) uint64 {
	if !needsMask(b) {
		return hashBytes(b)
	}
	var h maphash.Hash
	h.SetSeed(seed)
	last := 0 // b[last:i] is not written yet
	for i := 0; i < len(b); {
		if !tokenByte[b[i]] || i > 0 && tokenByte[b[i-1]] {
			i++
			continue
		}
		if n := dateTimeLen(b[i:]); n > 0 {
			h.Write(b[last:i])
			h.WriteString("\x00T")
			i += n
			last = i
			continue
		}
		if n := mailDateAt(b, i); n > 0 {
			if i == 0 && n == len(b) {
				break // the whole value: a field's, kept
			}
			if headerValue(b[:i]) {
				// A header's value (Date:, Last-Modified:) at the start
				// of the line: a message's Date is when it was sent,
				// and a new alert that says what the last one said is
				// news (TestClockTimeOfDay).
				i += n
				continue
			}
			h.Write(b[last:i])
			h.WriteString("\x00T")
			i += n
			last = i
			continue
		}
		if n := spanAt(b, i); n > 0 && !(i == 0 && n == len(b)) && !countdown(b, i, i+n) && !partOf(b[i+n:]) {
			h.Write(b[last:i])
			h.WriteString("\x00D")
			i += n
			last = i
			continue
		}
		j := i
		for j < len(b) && tokenByte[b[j]] {
			j++
		}
		if randomToken(b[i:j]) || elementRef(b, i, j) || processID(b, i, j) || tempName(b, i, j) && bytes.ContainsAny(b[i:j], "0123456789") {
			h.Write(b[last:i])
			h.WriteString("\x00R")
			last = j
		}
		i = j
	}
	h.Write(b[last:])
	return h.Sum64()
}

// needsMask reports whether b holds a date-time, a random token or a
// duration, and is not just that: one pass that looks closer only at words
// of eight bytes or more with a digit in them, and at words that start
// with a digit and end in a letter or before a space ("3 minutes ago").
func needsMask(b []byte) bool {
	start, digit := -1, false
	for i, c := range b {
		switch byteClass[c] {
		case 0:
			if start >= 0 {
				if digit && i-start >= 8 && maskable(b, start, i) {
					return true
				}
				if (c == '=' || c == ':') && i-start == 3 && bytes.EqualFold(b[start:i], []byte("ref")) {
					return true
				}
				if isDigit(b[start]) && (byteClass[b[i-1]] == 1 || c == ' ' || c == '.') && durationLen(b[start:]) > 0 {
					return true
				}
				if c == ':' && i-start <= 2 && isDigit(b[start]) && clockLen(b[start:]) > 0 {
					return true
				}
				if (c == ',' && i-start == 3 || c == ' ' && i-start <= 2 && isDigit(b[start])) && mailDateLen(b[start:]) > 0 && !(start == 0 && mailDateLen(b) == len(b)) {
					return true
				}
				if isDigit(b[start]) && processID(b, start, i) {
					return true
				}
				start = -1
			}
		case 2:
			digit = digit || start >= 0
			if start < 0 {
				start, digit = i, true
			}
		default:
			if start < 0 {
				start, digit = i, false
			}
		}
	}
	if start > 0 && isDigit(b[start]) && (byteClass[b[len(b)-1]] == 1 && durationLen(b[start:]) > 0 || processID(b, start, len(b))) {
		return true
	}
	return start >= 0 && digit && len(b)-start >= 8 && maskable(b, start, len(b))
}

// durationLen returns the length of the span of time written at the start
// of b in a command's output (11.2s, 25m, 5m12s, 0m1.234s, 1h2m, 350ms, "3
// minutes ago"), or 0. A line that names how long ago something happened
// or how long the command took (kubectl's ages, a test run's or a plan's
// time) says it anew each time it is asked, as a latency_ms field does;
// the rest of the line is the answer. The number must end at a unit that
// ends the word: "5m" is a span, "5mb" and "k8s" are not.
func durationLen(b []byte) int {
	i := 0
	for {
		d := i
		for i < len(b) && isDigit(b[i]) {
			i++
		}
		if i == d {
			break
		}
		frac := i+1 < len(b) && b[i] == '.' && isDigit(b[i+1])
		if frac {
			i++
			for i < len(b) && isDigit(b[i]) {
				i++
			}
		}
		u := unitLen(b[i:])
		if u == 0 {
			if d == 0 && i+1 < len(b) && b[i] == ' ' {
				if n := agoLen(b[i+1:]); n > 0 {
					return i + 1 + n
				}
				if n := secondsLen(b[i+1:]); frac && n > 0 {
					return i + 1 + n // "Time: 2.341 s", a test run's
				}
			}
			break
		}
		i += u
		if i == len(b) || !tokenByte[b[i]] {
			if d == 0 && u == 1 && b[i-1] == 'm' && manyMinutes(b[:i-1]) {
				// Minutes alone past 179 are not how a span is written
				// (kubectl's ages turn to hours at 3h0m): 340m is a CPU
				// in millicores, a distance, a quantity.
				return 0
			}
			return i
		}
	}
	return 0
}

// secondsLen returns the length of a unit of seconds (s, ms, sec) that
// is all of the word at the start of b, or 0: a time written with a
// fraction and a space before its unit ("2.341 s", jest's) is a span.
func secondsLen(b []byte) int {
	u := unitLen(b)
	if u == 0 || b[u-1] != 's' && b[u-1] != 'c' || u < len(b) && tokenByte[b[u]] {
		return 0
	}
	return u
}

// manyMinutes reports whether the number n (digits, maybe a fraction) is
// 180 or more.
func manyMinutes(n []byte) bool {
	if k := bytes.IndexByte(n, '.'); k >= 0 {
		n = n[:k]
	}
	n = bytes.TrimLeft(n, "0")
	return len(n) > 3 || len(n) == 3 && string(n) >= "180"
}

// unitLen returns the length of the unit of time at the start of b: ns,
// us, ms, s, sec, m, min, h, hr, d.
func unitLen(b []byte) int {
	for _, u := range [...]string{"ms", "ns", "us", "sec", "min", "hr", "s", "m", "h", "d"} {
		if len(b) >= len(u) && string(b[:len(u)]) == u && (len(b) == len(u) || !isLetter(rune(b[len(u)]))) {
			return len(u)
		}
	}
	return 0
}

// agoLen returns the length of "seconds ago" (minutes, hours, days,
// weeks, in the singular too, and sec, min, hr abbreviated) at the start
// of b, or 0.
func agoLen(b []byte) int {
	for _, u := range [...]string{"second", "minute", "hour", "day", "week", "sec", "min", "hr"} {
		if len(b) < len(u) || string(b[:len(u)]) != u {
			continue
		}
		i := len(u)
		if i < len(b) && b[i] == 's' {
			i++
		}
		if len(b) >= i+4 && string(b[i:i+4]) == " ago" && (len(b) == i+4 || !tokenByte[b[i+4]]) {
			return i + 4
		}
	}
	return 0
}

// countdown reports whether the span b[i:j] is a time still to go ("ETA
// 4m", "3m remaining", "2m left", and the words before it: "Time
// remaining: 11m", "left=3m", "Remaining time 5m10s"): that moving is
// progress, and the span stays.
func countdown(b []byte, i, j int) bool {
	rest := bytes.TrimLeft(b[j:], " ~")
	for _, w := range [...]string{"remaining", "left", "to go"} {
		if len(rest) >= len(w) && bytes.EqualFold(rest[:len(w)], []byte(w)) {
			return true
		}
	}
	// The two words before the span.
	before := b[:i]
	for range 2 {
		before = bytes.TrimRight(before, " :~=")
		k := len(before)
		for k > 0 && tokenByte[before[k-1]] {
			k--
		}
		for _, w := range [...]string{"eta", "remaining", "left"} {
			if bytes.EqualFold(before[k:], []byte(w)) {
				return true
			}
		}
		before = before[:k]
	}
	return startsIn(b[:i])
}

// startsIn reports whether the text before a span says that something is
// still to come in that span ("Boarding starts in 25m", "Retrying in
// 30s", "token expires in 5m", "try again in 2m"): a time to go before an
// event, which moving is news. "1 passed in 350ms", "Ran 12 tests in
// 0.41s" and "Done in 3.2s" say how long something took: only the word
// before "in" tells them apart, a verb of what is to come (in the present,
// or in -ing: "starting in", "closing in") against a past or a count.
func startsIn(before []byte) bool {
	w, before := lastWord(bytes.TrimRight(before, " "))
	if !bytes.EqualFold(w, []byte("in")) {
		return false
	}
	w, _ = lastWord(bytes.TrimRight(before, " "))
	if len(w) > 4 && bytes.EqualFold(w[len(w)-3:], []byte("ing")) {
		return true
	}
	var low [12]byte
	if len(w) > len(low) {
		return false
	}
	for k, c := range w {
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		low[k] = c
	}
	return toCome[string(low[:len(w)])]
}

// toCome are the verbs (and words) before "in" and a span that say the
// span is a time to go.
var toCome = map[string]bool{
	"starts": true, "start": true, "begins": true, "begin": true, "opens": true, "closes": true,
	"expires": true, "ends": true, "departs": true, "arrives": true, "leaves": true, "boards": true,
	"resumes": true, "renews": true, "restarts": true, "retries": true, "refreshes": true,
	"due": true, "next": true, "again": true, "back": true, "ready": true, "live": true,
}

// lastWord returns the last word of b (its letters, digits, '_' and '-')
// and what comes before it.
func lastWord(b []byte) (word, before []byte) {
	k := len(b)
	for k > 0 && tokenByte[b[k-1]] {
		k--
	}
	return b[k:], b[:k]
}

// partOf reports whether rest, what follows a span, makes it a part of a
// whole span ("3m12s of 45m0s encoded", "12s/60s"): how much of a video is
// encoded, of a warm-up done. That moving is progress, and the span stays.
func partOf(rest []byte) bool {
	switch {
	case len(rest) > 1 && rest[0] == '/':
		rest = rest[1:]
	case len(rest) > 3 && string(rest[:3]) == " / ":
		rest = rest[3:]
	case len(rest) > 4 && string(rest[:4]) == " of ":
		rest = rest[4:]
	default:
		return false
	}
	return spanLen(rest) > 0
}

// spanLen returns the length of the span of time at the start of b,
// written with units (durationLen) or as a clock (clockLen), or 0.
func spanLen(b []byte) int {
	if n := durationLen(b); n > 0 {
		return n
	}
	return clockLen(b)
}

// spanAt returns the length of the span of time at b[i:], or 0. A clock
// after a number ("10 Mar 2026 08:05:00", "Dec 3 14:02:11") or before a
// zone ("08:05:00 +0000", "08:05:00 UTC") is a time of day, the answer's
// (an e-mail's Date, a log line's time): only a clock on its own is read
// as a span.
func spanAt(b []byte, i int) int {
	if n := durationLen(b[i:]); n > 0 {
		return n
	}
	n := clockLen(b[i:])
	if n == 0 {
		return 0
	}
	if w, _ := lastWord(bytes.TrimRight(b[:i], " ,")); len(w) > 0 && isDigit(w[len(w)-1]) {
		return 0
	}
	rest := b[i+n:]
	if len(rest) > 1 && rest[0] == ' ' && (rest[1] == '+' || rest[1] == '-' || 'A' <= rest[1] && rest[1] <= 'Z' && len(rest) > 3 && 'A' <= rest[2] && rest[2] <= 'Z') {
		return 0
	}
	return n
}

// clockLen returns the length of a span written as a clock at the start of
// b (00:03:10, 1:02:03, 00:03:10.52), or 0: "running for 00:03:10" says
// how long a cell, a job or a call has run, anew each time it is asked,
// as "running for 3m10s" does. Hours, minutes and seconds all three: a
// time of day written 18:40 (a departure, a slot) is the answer's. As
// with any span, a clock that is a part of a whole ("00:03:10 / 00:45:00",
// a media position) or a time to go stays.
func clockLen(b []byte) int {
	i := 0
	for i < len(b) && i < 2 && isDigit(b[i]) {
		i++
	}
	if i == 0 {
		return 0
	}
	for range 2 {
		if len(b) < i+3 || b[i] != ':' || !isDigit(b[i+1]) || !isDigit(b[i+2]) {
			return 0
		}
		i += 3
	}
	if i+1 < len(b) && (b[i] == '.' || b[i] == ',') && isDigit(b[i+1]) {
		i++
		for i < len(b) && isDigit(b[i]) {
			i++
		}
	}
	if i < len(b) && (tokenByte[b[i]] || b[i] == ':') {
		return 0
	}
	return i
}

// elementRef reports whether the word b[i:j] is an element's ref in a
// page's snapshot ("[ref=e14]", "ref:s1e14"): a handle of letters and
// digits, eight bytes at most, after "ref=" or "ref:". A browser numbers
// its elements anew at each snapshot (and after any change to the page),
// so the same page read again names other refs; what the element is
// (its role, its label) is the rest of the line.
func elementRef(b []byte, i, j int) bool {
	if i < 4 || j-i > 8 || b[i-1] != '=' && b[i-1] != ':' || !bytes.EqualFold(b[i-4:i-1], []byte("ref")) || i > 4 && tokenByte[b[i-5]] {
		return false
	}
	for _, c := range b[i:j] {
		if isDigit(c) {
			return true
		}
	}
	return false
}

// maskable reports whether the word b[i:j] starts a date-time or is a
// random token or a temporary name, and b is more than that.
func maskable(b []byte, i, j int) bool {
	if n := dateTimeLen(b[i:]); n > 0 {
		return !(i == 0 && n == len(b))
	}
	return !(i == 0 && j == len(b)) && (randomToken(b[i:j]) || tempName(b, i, j))
}

// processID reports whether the word b[i:j] is a process's id: digits
// after "pid" and a space, '=', ':' or '#' ("pid 48211", "PID: 48211",
// "pid=48211"). A command run again runs as another process; what it
// printed is the rest of the line.
func processID(b []byte, i, j int) bool {
	if j-i > 10 || !digits(b[i:j]) {
		return false
	}
	k := i
	for k > 0 && (b[k-1] == ' ' || b[k-1] == '=' || b[k-1] == ':' || b[k-1] == '#') && i-k < 2 {
		k--
	}
	return k < i && k >= 3 && bytes.EqualFold(b[k-3:k], []byte("pid")) && (k == 3 || !tokenByte[b[k-4]])
}

// tempName reports whether the word b[i:j], eight bytes or more with a
// digit, is a name made for one run in a temporary directory
// (/tmp/go-build2219043871, /tmp/tmpa8x2k9lq): each run makes another.
func tempName(b []byte, i, j int) bool {
	return j-i >= 8 && i >= 5 && string(b[i-5:i]) == "/tmp/"
}

// byteClass is 0 for a byte outside words, 2 for a digit, 1 for the other
// bytes of a word (letters, '_' and '-').
var byteClass = func() (t [256]uint8) {
	for c := range 256 {
		switch {
		case c >= '0' && c <= '9':
			t[c] = 2
		case c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c == '_' || c == '-':
			t[c] = 1
		}
	}
	return t
}()

// tokenByte marks the bytes of a word: letters, digits, '_' and '-'.
var tokenByte = func() (t [256]bool) {
	for c := range 256 {
		t[c] = c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c == '_' || c == '-'
	}
	return t
}()

func isTokenByte(c byte) bool { return tokenByte[c] }

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

// epochLen returns the length of the JSON number at the start of b when it
// is an instant since the Unix epoch: ten digits of seconds (from 2001 to
// 2286, with a fraction or none) or thirteen of milliseconds, as a
// catalog's "generated": 1796558400000 says when it made the answer. Any
// other number (a count, an amount) is 0.
func epochLen(b []byte) int {
	n := 0
	for n < len(b) && isDigit(b[n]) {
		n++
	}
	digits := n
	if digits == 10 && n < len(b) && b[n] == '.' {
		n++
		for n < len(b) && isDigit(b[n]) {
			n++
		}
	}
	if n < len(b) && (b[n] == '.' || b[n] == 'e' || b[n] == 'E') {
		return 0
	}
	if (digits == 10 || digits == 13) && b[0] != '0' {
		return n
	}
	return 0
}

// dateTimeLen returns the length of the ISO 8601 date-time at the start of b
// (2025-01-07T22:32:47Z, 2025-01-07 22:32, with seconds, fractions and a
// zone), or 0. A date alone is not a date-time: it is often what the answer
// is about (a due date, an ETA).
func dateTimeLen(b []byte) int {
	if len(b) < 16 {
		return 0
	}
	for _, k := range [...]int{0, 1, 2, 3, 5, 6, 8, 9, 11, 12, 14, 15} {
		if !isDigit(b[k]) {
			return 0
		}
	}
	if b[4] != '-' || b[7] != '-' || (b[10] != 'T' && b[10] != ' ') || b[13] != ':' {
		return 0
	}
	i := 16
	if i+2 < len(b) && b[i] == ':' && isDigit(b[i+1]) && isDigit(b[i+2]) {
		i += 3
		if i < len(b) && (b[i] == '.' || b[i] == ',') {
			i++
			for i < len(b) && isDigit(b[i]) {
				i++
			}
		}
	}
	switch {
	case i < len(b) && b[i] == 'Z':
		i++
	case i+2 < len(b) && (b[i] == '+' || b[i] == '-') && isDigit(b[i+1]) && isDigit(b[i+2]):
		i += 3
		if i < len(b) && b[i] == ':' {
			i++
		}
		for k := 0; k < 2 && i < len(b) && isDigit(b[i]); k++ {
			i++
		}
	}
	return i
}

// mailDateLen returns the length of the date-time at the start of b as
// HTTP and e-mail write it (RFC 1123, RFC 2822: "Mon, 07 Dec 2026
// 10:00:30 GMT", "7 Dec 2026 10:00 +0000"), with its day's name or
// without, its seconds or not, and its zone if one follows, or 0. As for
// dateTimeLen, a date alone (no time of day) is not one.
func mailDateLen(b []byte) int {
	i := 0
	if len(b) >= 5 && b[3] == ',' && b[4] == ' ' && isLetter3(b[:3]) {
		if !in3(b[:3], weekdays[:]) {
			return 0
		}
		i = 5
	}
	d := i
	for i < len(b) && i-d < 2 && isDigit(b[i]) {
		i++
	}
	if i == d || len(b) < i+18-(i-d) || b[i] != ' ' || !isLetter3(b[i+1:i+4]) || b[i+4] != ' ' {
		return 0
	}
	if !in3(b[i+1:i+4], months[:]) {
		return 0
	}
	i += 5
	for k := range 4 {
		if i+k >= len(b) || !isDigit(b[i+k]) {
			return 0
		}
	}
	i += 4
	if i+6 > len(b) || b[i] != ' ' {
		return 0
	}
	i++
	h := i
	for i < len(b) && i-h < 2 && isDigit(b[i]) {
		i++
	}
	if i == h || i+3 > len(b) || b[i] != ':' || !isDigit(b[i+1]) || !isDigit(b[i+2]) {
		return 0
	}
	i += 3
	if i+2 < len(b) && b[i] == ':' && isDigit(b[i+1]) && isDigit(b[i+2]) {
		i += 3
	}
	if i < len(b) && (tokenByte[b[i]] || b[i] == ':') {
		return 0
	}
	if i+1 < len(b) && b[i] == ' ' {
		z := i + 1
		switch {
		case z+4 < len(b) && (b[z] == '+' || b[z] == '-') && isDigit(b[z+1]) && isDigit(b[z+2]) && isDigit(b[z+3]) && isDigit(b[z+4]):
			if z+5 == len(b) || !tokenByte[b[z+5]] {
				i = z + 5
			}
		default:
			j := z
			for j < len(b) && j-z < 4 && 'A' <= b[j] && b[j] <= 'Z' {
				j++
			}
			if j-z >= 1 && (j == len(b) || !tokenByte[b[j]]) && (j-z >= 2 || b[z] == 'Z') {
				i = j
			}
		}
	}
	return i
}

// headerValue reports whether pre, the text before a value, is a header's
// name and its colon alone ("Date: ", "Last-Modified: "): the value is that
// header's.
func headerValue(pre []byte) bool {
	if len(pre) < 3 || pre[len(pre)-1] != ' ' || pre[len(pre)-2] != ':' {
		return false
	}
	for _, c := range pre[:len(pre)-2] {
		if byteClass[c] != 1 {
			return false
		}
	}
	return true
}

// mailDateAt is mailDateLen(b[i:]), looked at only where one may start: a
// digit, or a word of three letters and a comma.
func mailDateAt(b []byte, i int) int {
	if !isDigit(b[i]) && (i+3 >= len(b) || b[i+3] != ',') {
		return 0
	}
	return mailDateLen(b[i:])
}

var (
	weekdays = [...]string{"mon", "tue", "wed", "thu", "fri", "sat", "sun"}
	months   = [...]string{"jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"}
)

func isLetter3(b []byte) bool {
	return len(b) == 3 && byteClass[b[0]] == 1 && byteClass[b[1]] == 1 && byteClass[b[2]] == 1 && b[0] != '_' && b[0] != '-'
}

// in3 reports whether the three letters b are one of names, in any case.
func in3(b []byte, names []string) bool {
	for _, n := range names {
		if b[0]|0x20 == n[0] && b[1]|0x20 == n[1] && b[2]|0x20 == n[2] {
			return true
		}
	}
	return false
}

// randomToken reports whether a word (letters, digits, '_' and '-') holds a
// part that looks generated rather than chosen: at least eight hex digits
// mixing digits and letters ("af3f617b", the parts of a UUID, the tail of
// "req_cdbd64be8049"), or twenty characters or more mixing upper and lower
// case letters and digits (a base64 nonce). Words of digits alone (order
// numbers, amounts) and words of letters alone are never tokens.
func randomToken(w []byte) bool {
	if len(w) < 8 {
		return false
	}
	start := 0
	for i := 0; i <= len(w); i++ {
		if i < len(w) && w[i] != '_' && w[i] != '-' {
			continue
		}
		if randomPart(w[start:i]) {
			return true
		}
		start = i + 1
	}
	return false
}

func randomPart(p []byte) bool {
	if len(p) < 8 {
		return false
	}
	digits, hexLetters, lower, upper, other := 0, 0, 0, 0, 0
	for _, c := range p {
		switch {
		case isDigit(c):
			digits++
		case c >= 'a' && c <= 'f':
			hexLetters++
			lower++
		case c >= 'A' && c <= 'F':
			hexLetters++
			upper++
		case c >= 'a' && c <= 'z':
			lower++
			other++
		case c >= 'A' && c <= 'Z':
			upper++
			other++
		}
	}
	if digits == 0 {
		return false
	}
	if other == 0 && hexLetters > 0 && (lower == 0 || upper == 0) {
		return true // hex in one case, with digits and letters
	}
	if len(p) >= 16 && upper == 0 && digits >= 4 && lower >= 4 && digits+lower == len(p) && runsAlternate(p) {
		// An id made at random in one case, letters and digits mixed
		// (a calendar event's 5u2k8d0q1ctg3v6hj7m9): a write that makes
		// a new one each time names another in its answer.
		return true
	}
	return len(p) >= 20 && lower > 0 && upper > 0
}

// runsAlternate reports whether p, letters and digits, goes from letters to
// digits and back at least six times, its letters never more than four in
// a row, as a random id does and a word with a number after it
// (build2219043871, invoice20261204, checkout7b5c4d8f9) does not.
func runsAlternate(p []byte) bool {
	n, run := 0, 0
	for i := range p {
		if i > 0 && isDigit(p[i]) != isDigit(p[i-1]) {
			n++
		}
		if isDigit(p[i]) {
			run = 0
		} else if run++; run > 4 {
			return false
		}
	}
	return n >= 6
}
