package redact

import (
	"bytes"
	"slices"
)

// Names are compared normalized: lower-case, without '_', '-', '.' and
// spaces, so "API_KEY", "api-key", "Api Key" and "ApiKey" are one name.
var (
	// A name whose normalized form contains one of these is secret.
	defaultParts = []string{"password", "passwd", "passphrase", "secret", "token", "apikey", "accesskey",
		"privatekey", "reachkey", "authorization", "credential", "cookie", "sessionid", "signature", "connectionstring"}
	// A name whose normalized form is one of these is secret.
	defaultExact = []string{"auth", "pwd", "pass", "pin", "otp", "bearer", "session", "dsn"}
	// Every secret name holds one of these (and so does a text with a
	// credential after a scheme): a text without any, separators
	// ignored, has no secret name in it.
	defaultStems = []string{"pass", "pwd", "secret", "token", "key", "auth", "credential", "cookie", "session",
		"signature", "connection", "pin", "otp", "bearer", "basic", "dsn"}
)

// keyRules decides which names are secret.
type keyRules struct {
	parts   []string
	byFirst [256][]string // parts by their first byte
	exact   []string
	stems   [256][]string  // stems by their first byte
	first   [256]bool      // the first bytes of the stems, in either case
	pairs   [256][4]uint64 // the first two bytes of the stems, as a set
}

func newKeyRules(extra []string) keyRules {
	k := keyRules{parts: slices.Clone(defaultParts), exact: defaultExact}
	stems := slices.Clone(defaultStems)
	for _, e := range extra {
		if n := normalize(nil, []byte(e)); len(n) > 0 {
			k.parts = append(k.parts, string(n))
			stems = append(stems, string(n))
		}
	}
	for _, p := range k.parts {
		k.byFirst[p[0]] = append(k.byFirst[p[0]], p)
	}
	for _, s := range stems {
		k.stems[s[0]] = append(k.stems[s[0]], s)
		for c := range 256 {
			if lowerOf[c] == s[0] {
				k.first[c] = true
			}
		}
		second := byte(0) // a one-byte stem matches whatever follows
		if len(s) > 1 {
			second = s[1]
		}
		for c := range 256 {
			if len(s) == 1 || byte(c) == second || isSep(byte(c)) { // a separator may come between
				k.pairs[s[0]][c>>6] |= 1 << (c & 63)
			}
		}
	}
	return k
}

func isSep(c byte) bool { return c == '_' || c == '-' || c == '.' || c == ' ' }

// normalize appends the normalized form of a name to dst.
func normalize(dst, name []byte) []byte {
	for _, c := range name {
		switch {
		case isSep(c):
		case 'A' <= c && c <= 'Z':
			dst = append(dst, c+'a'-'A')
		default:
			dst = append(dst, c)
		}
	}
	return dst
}

// match reports whether name is secret, and whether it names a count of
// tokens (whose numeric value is kept): its only secret part is "token"
// and it says tokens or count (max_tokens, input_tokens, token_count).
func (k *keyRules) match(name []byte) (secret, count bool) {
	var buf [64]byte
	n := normalize(buf[:0], name)
	onlyToken := true
	for i := range n {
		for _, p := range k.byFirst[n[i]] {
			if bytes.HasPrefix(n[i:], []byte(p)) {
				secret = true
				if p != "token" {
					onlyToken = false
				}
			}
		}
	}
	if secret {
		return true, onlyToken && (bytes.Contains(n, []byte("tokens")) || bytes.HasSuffix(n, []byte("count")))
	}
	for _, e := range k.exact {
		if string(n) == e {
			return true, false
		}
	}
	return false, false
}

// mayHold reports whether b may hold a secret name or a scheme's
// credential: it holds a stem, in any case, with separators anywhere in it.
func (k *keyRules) mayHold(b []byte) bool {
	if len(b) == 0 {
		return false
	}
	for i, c := range b[:len(b)-1] {
		if !k.first[c] {
			continue
		}
		c, d := lowerOf[c], lowerOf[b[i+1]]
		if k.pairs[c][d>>6]&(1<<(d&63)) == 0 {
			continue // no stem begins here
		}
		for _, s := range k.stems[c] {
			if stemAt(b, i, s) {
				return true
			}
		}
	}
	return false
}

// lowerOf maps a byte to its lower case.
var lowerOf = func() (t [256]byte) {
	for c := range 256 {
		t[c] = byte(c)
		if 'A' <= c && c <= 'Z' {
			t[c] = byte(c + 'a' - 'A')
		}
	}
	return t
}()

// stemAt reports whether the stem s (lower-case) begins at b[i], in any
// case, with separators between its letters.
func stemAt(b []byte, i int, s string) bool {
	for j := 0; j < len(s); i++ {
		if i >= len(b) {
			return false
		}
		c := b[i]
		if j > 0 && isSep(c) {
			continue
		}
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		if c != s[j] {
			return false
		}
		j++
	}
	return true
}
