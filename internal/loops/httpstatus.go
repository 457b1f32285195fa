package loops

import (
	"bytes"
	"encoding/json"
	"sort"
)

// httpFailedAnswer reports whether b, a successful answer, is an HTTP
// response that failed, handed back as the tool's output: an HTTP client
// tool's object with the response's status (status, status_code,
// statusCode) of 400 or more beside its body or headers. The tool ran; the
// request did not: a 401 for an expired token, however the request's
// headers are respelled, says the same thing each time, as an error result
// would have. Its class is the status's: 401 and 403 forbidden, 409 and
// 412 conflict, 400 and 422 invalid_args, 404 and 410 not_found; transient
// (unavailable) when the status says so (408, 425, 429, 5xx): worth a
// retry; any other untyped. Only small answers are read whole.
func httpFailedAnswer(b []byte) (class string) {
	b = bytes.TrimSpace(b)
	if len(b) < 16 || len(b) > maxExceptionBytes || b[0] != '{' ||
		!bytes.Contains(b, []byte(`"body"`)) && !bytes.Contains(b, []byte(`"headers"`)) {
		return ""
	}
	// A cheap look before the parse: a status key with 4 or 5 after it.
	status := false
	for _, k := range [...]string{`"status"`, `"status_code"`, `"statusCode"`} {
		if c := valueAfterKey(b, k); c == '4' || c == '5' {
			status = true
			break
		}
	}
	if !status {
		return ""
	}
	var top map[string]json.RawMessage
	if json.Unmarshal(b, &top) != nil {
		return ""
	}
	code, response := int64(0), false
	for k, v := range top {
		switch foldKey(k) {
		case "status", "statuscode":
			var n json.Number
			d := json.NewDecoder(bytes.NewReader(v))
			d.UseNumber()
			if d.Decode(&n) != nil {
				return ""
			}
			i, err := n.Int64()
			if err != nil {
				return ""
			}
			code = i
		case "body", "headers":
			response = true
		}
	}
	if !response || code < 400 || code > 599 {
		return ""
	}
	switch {
	case code == 401 || code == 403:
		return "forbidden"
	case code == 409 || code == 412:
		return "conflict"
	case code == 400 || code == 422:
		return "invalid_args"
	case code == 404 || code == 410:
		return "not_found"
	case code == 408 || code == 425 || code == 429 || code >= 500:
		return "unavailable"
	}
	return untypedStreak
}

// requestKey hashes an HTTP client tool's arguments but its headers: the
// request's method, address and body, however its headers are spelled.
// Arguments that are not one object are hashed whole.
func requestKey(args []byte) uint64 {
	var top map[string]json.RawMessage
	if json.Unmarshal(args, &top) != nil {
		return hashBytes(args)
	}
	keys := make([]string, 0, len(top))
	for k := range top {
		if f := foldKey(k); f != "headers" && f != "header" {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	h := uint64(0x72657175657374)
	for _, k := range keys {
		h = mix(h, mix(hashString(k), hashBytes(top[k])))
	}
	return h
}
