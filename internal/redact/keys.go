package redact

import (
	"bytes"
	"slices"
)

// Names are compared normalized: lower-case, without '_', '-', '.' and
// spaces, so "API_KEY", "api-key", "Api Key" and "ApiKey" are one name.
var (
	// A name whose normalized form contains one of these is secret.
	defaultParts = []string{"password", "passwd", "passphrase", "passcode", "secret", "token", "jwt", "apikey", "accesskey",
		"privatekey", "reachkey", "authorization", "credential", "cookie", "sessionid", "signature", "connectionstring"}
	// A name whose normalized form is one of these is secret.
	defaultExact = []string{"auth", "pwd", "pass", "pin", "otp", "bearer", "session", "dsn"}
	// Every secret name holds one of these (and so does a text with a
	// credential after a scheme): a text without any, separators
	// ignored, has no secret name in it.
	defaultStems = []string{"pass", "pwd", "secret", "token", "jwt", "key", "auth", "credential", "cookie", "session",
		"signature", "connection", "pin", "otp", "bearer", "basic", "dsn"}
	// A key is a credential when a word before it says what it
	// authenticates, signs or encrypts, or whose account it opens: a name
	// with one of these words followed by the word "key" or "keys"
	// (Ocp-Apim-Subscription-Key, X-Auth-Key, x-functions-key,
	// signingKey), or one word that is one of them with "key" after it
	// (authkey, sshkeys), is secret. Words are split at '_', '-', '.',
	// spaces and a lower-case letter before a capital. A key that names
	// data (key, primary_key, sort_key, partition_key, idempotency_key,
	// public_key, issue_key, cache_key) and words that only begin with
	// "key" (keyword, keyboard) are not.
	defaultKeyWords = []string{"auth", "subscription", "master", "signing", "encryption", "decryption", "encrypt",
		"crypto", "cipher", "hmac", "client", "consumer", "app", "application", "account", "service", "server",
		"functions", "admin", "root", "shared", "session", "webhook", "deploy", "storage", "license", "licence",
		"product", "ssh", "priv", "integration", "developer", "recovery", "sas"}
)

// keyWords is defaultKeyWords as a set.
var keyWords = func() map[string]bool {
	m := make(map[string]bool, len(defaultKeyWords))
	for _, w := range defaultKeyWords {
		m[w] = true
	}
	return m
}()

// credentialKey reports whether name, whose normalized form is n, says a
// credential key (defaultKeyWords).
func credentialKey(name, n []byte) bool {
	if !bytes.Contains(n, []byte("key")) {
		return false
	}
	var prev, word [32]byte
	prevLen := -1 // no word before, or one too long to be a key word
	for i := 0; i < len(name); {
		for i < len(name) && isSep(name[i]) {
			i++
		}
		j := i
		for j < len(name) && !isSep(name[j]) && (j == i || !wordStart(name, j)) {
			j++
		}
		if j == i {
			break
		}
		w := word[:0]
		if j-i <= len(word) {
			for _, c := range name[i:j] {
				w = append(w, lowerOf[c])
			}
			base := w
			if bytes.HasSuffix(base, []byte("s")) {
				base = base[:len(base)-1]
			}
			if q, ok := bytes.CutSuffix(base, []byte("key")); ok {
				if len(q) == 0 && prevLen >= 0 && keyWords[string(prev[:prevLen])] {
					return true
				}
				if len(q) > 0 && keyWords[string(q)] {
					return true
				}
			}
			prevLen = copy(prev[:], w)
		} else {
			prevLen = -1
		}
		i = j
	}
	return false
}

// wordStart reports whether a new word begins at name[j] (j > 0): a
// capital after a lower-case letter or a digit, or the last capital of a
// run before a lower-case letter (the K of APIKey).
func wordStart(name []byte, j int) bool {
	c, p := name[j], name[j-1]
	if c < 'A' || c > 'Z' {
		return false
	}
	if 'a' <= p && p <= 'z' || '0' <= p && p <= '9' {
		return true
	}
	return 'A' <= p && p <= 'Z' && j+1 < len(name) && 'a' <= name[j+1] && name[j+1] <= 'z'
}

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
	if credentialKey(name, n) {
		return true, false
	}
	for _, e := range k.exact {
		if string(n) == e {
			return true, false
		}
	}
	return false, false
}

// onlyJWT reports whether name's only secret part is "jwt": a name of a
// credential's format, which in text ("jwt: reading the key set") is as
// often prose's as a credential's, so there its value is masked when it
// looks like one (text.go).
func (k *keyRules) onlyJWT(name []byte) bool {
	var buf [64]byte
	n := normalize(buf[:0], name)
	jwt := false
	for i := range n {
		for _, p := range k.byFirst[n[i]] {
			if bytes.HasPrefix(n[i:], []byte(p)) {
				if p != "jwt" {
					return false
				}
				jwt = true
			}
		}
	}
	return jwt && !credentialKey(name, n)
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
