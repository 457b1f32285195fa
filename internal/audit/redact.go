package audit

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"unsafe"

	"github.com/agentreach/reach/internal/jsonscan"
)

// Mask replaces every redacted value.
const Mask = "[REDACTED]"

// MinSecretLen is the length below which AddSecret refuses a value: a
// shorter one would mask innocent text everywhere and protects nothing.
const MinSecretLen = 4

// Key names are compared normalized: lower-case, without '_', '-', '.' and
// spaces, so "API_KEY", "api-key" and "ApiKey" are one name.
var (
	// A key whose normalized name contains one of these is secret.
	defaultKeyParts = []string{"password", "passwd", "passphrase", "secret", "token", "apikey",
		"accesskey", "privatekey", "authorization", "credential", "cookie", "sessionid", "signature"}
	// A key whose normalized name is one of these is secret.
	defaultKeyExact = []string{"auth", "pwd", "pass", "pin", "otp", "bearer"}
)

// RedactorOptions configure NewRedactor. A nil *RedactorOptions means the
// defaults.
type RedactorOptions struct {
	// Keys adds key names to the defaults (password, passwd, passphrase,
	// secret, token, apikey, accesskey, privatekey, authorization,
	// credential, cookie, sessionid, signature as parts of a name; auth,
	// pwd, pass, pin, otp, bearer as whole names). A key whose normalized
	// name contains one of them is secret.
	Keys []string
	// Secrets are values to remove wherever they appear (see AddSecret).
	Secrets []string
}

// Redactor removes secrets from what the audit log stores (P6): the value
// of every field whose key name is secret, in JSON and in "key: value" or
// "key=value" text, whatever its type or nesting, and every occurrence of a
// registered secret value. A numeric value under a key whose normalized
// name ends in "tokens" (max_tokens, input_tokens) is a count and is kept.
// The zero value is not usable; make one with NewRedactor. Safe for
// concurrent use.
type Redactor struct {
	parts   []string
	byFirst [256][]string // parts by their first byte
	exact   []string
	mu      sync.Mutex // serializes AddSecret
	secrets atomic.Pointer[[]secret]
}

type secret struct {
	raw    []byte // the value
	esc    []byte // the value as it appears inside a JSON string, if different
	str    string // raw, as a string
	escStr string // esc, as a string
}

// NewRedactor returns a Redactor with the default key names and opts.
func NewRedactor(opts *RedactorOptions) (*Redactor, error) {
	r := &Redactor{parts: slices.Clone(defaultKeyParts), exact: slices.Clone(defaultKeyExact)}
	r.secrets.Store(&[]secret{})
	if opts != nil {
		for _, k := range opts.Keys {
			if n := normalize(nil, []byte(k)); len(n) > 0 {
				r.parts = append(r.parts, string(n))
			}
		}
	}
	for _, p := range r.parts {
		r.byFirst[p[0]] = append(r.byFirst[p[0]], p)
	}
	if opts == nil {
		return r, nil
	}
	for _, s := range opts.Secrets {
		if err := r.AddSecret(s); err != nil {
			return nil, err
		}
	}
	return r, nil
}

// AddSecret registers a value to remove from everything recorded after it:
// the gateway calls it for every upstream credential it injects. It refuses
// values shorter than MinSecretLen.
func (r *Redactor) AddSecret(value string) error {
	if len(value) < MinSecretLen {
		return fmt.Errorf("a secret must have at least %d bytes to be redacted; got %d", MinSecretLen, len(value))
	}
	s := secret{raw: []byte(value), str: value}
	if esc := jsonscan.AppendEscaped(nil, value); !bytes.Equal(esc, s.raw) {
		s.esc, s.escStr = esc, string(esc)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	old := *r.secrets.Load()
	for _, o := range old {
		if bytes.Equal(o.raw, s.raw) {
			return nil
		}
	}
	next := append(slices.Clip(old), s)
	// Longest first, so a secret containing another is masked whole.
	slices.SortStableFunc(next, func(a, b secret) int { return len(b.raw) - len(a.raw) })
	r.secrets.Store(&next)
	return nil
}

// unsafeString views b as a string, for searching it without a copy.
func unsafeString(b []byte) string { return unsafe.String(unsafe.SliceData(b), len(b)) }

// normalize appends the normalized form of a key name to dst.
func normalize(dst, key []byte) []byte {
	for _, c := range key {
		switch {
		case c == '_' || c == '-' || c == '.' || c == ' ':
		case 'A' <= c && c <= 'Z':
			dst = append(dst, c+'a'-'A')
		default:
			dst = append(dst, c)
		}
	}
	return dst
}

// SecretKey reports whether a field of this name holds a secret.
func (r *Redactor) SecretKey(key string) bool {
	secret, _ := r.secretKey([]byte(key))
	return secret
}

// secretKey reports whether key is secret, and whether it names a count
// of tokens (whose numeric value is kept).
func (r *Redactor) secretKey(key []byte) (secret, count bool) {
	var buf [64]byte
	n := normalize(buf[:0], key)
	for i := range n {
		for _, p := range r.byFirst[n[i]] {
			if bytes.HasPrefix(n[i:], []byte(p)) {
				return true, bytes.HasSuffix(n, []byte("tokens"))
			}
		}
	}
	for _, e := range r.exact {
		if string(n) == e {
			return true, false
		}
	}
	return false, false
}

// mayHide is a quick test: could text() change s? Only if s holds a
// registered value, a "key: value" or "key=value" separator, or "earer".
func mayHide(s string, secs []secret) bool {
	if strings.IndexByte(s, ':') >= 0 || strings.IndexByte(s, '=') >= 0 || hasBearer(s) {
		return true
	}
	for _, sec := range secs {
		if strings.Contains(s, sec.str) || (sec.escStr != "" && strings.Contains(s, sec.escStr)) {
			return true
		}
		// A value cut at the end of s.
		if len(s) >= MinSecretLen && (strings.Contains(sec.str, s[len(s)-MinSecretLen:]) ||
			sec.escStr != "" && strings.Contains(sec.escStr, s[len(s)-MinSecretLen:])) {
			return true
		}
	}
	return false
}

// Text returns s with secrets removed: registered values (also in their
// JSON-escaped form, and a prefix of one at the very end, where a preview
// was cut), the values of "key: value" and "key=value" pairs with a secret
// key (quoted or not), and the token after "Bearer".
func (r *Redactor) Text(s string) string {
	secs := *r.secrets.Load()
	if !mayHide(s, secs) {
		return s
	}
	out, changed := r.text([]byte(s), secs)
	if !changed {
		return s
	}
	return string(out)
}

// JSON returns the JSON document b with secrets removed: the value of every
// member whose key is secret (whatever its type), every string (key or
// value) run through Text, and every number or literal that contains a
// registered value. It never fails: input that is not JSON, or is cut
// short, is redacted as far as it can be read, and a secret member whose
// value is cut short is masked. b is returned as is when nothing changed.
func (r *Redactor) JSON(b []byte) []byte {
	w := rewriter{src: b}
	secs := *r.secrets.Load()
	n := len(b)
	for i := 0; i < n; {
		c := b[i]
		switch {
		case c == '"':
			j := jsonscan.SkipString(b, i)
			k := jsonscan.SkipSpace(b, j)
			if k < n && b[k] == ':' {
				// A member name.
				key := unquote(b[i:j])
				if red, changed := r.text(key, secs); changed {
					w.replace(i, j, appendQuoted(nil, red))
				}
				i = k + 1
				if secret, count := r.secretKey(key); secret {
					v := jsonscan.SkipSpace(b, i)
					end := jsonscan.SkipValue(b, v)
					if !(count && isNumber(b[v:end])) {
						w.replace(v, end, []byte(`"`+Mask+`"`))
					}
					i = end
				}
				continue
			}
			if red, changed := r.text(unquote(b[i:j]), secs); changed {
				w.replace(i, j, appendQuoted(nil, red))
			}
			i = j
		case c == '-' || ('0' <= c && c <= '9') || ('a' <= c && c <= 'z') || ('A' <= c && c <= 'Z'):
			j := jsonscan.SkipValue(b, i) // a number, literal or bare word
			hit := false
			for _, s := range secs {
				if bytes.Contains(b[i:j], s.raw) {
					w.replace(i, j, []byte(`"`+Mask+`"`))
					hit = true
					break
				}
			}
			if !hit && bytes.IndexByte(b[i:j], '=') >= 0 {
				// Not JSON: "key=value" text.
				if red, ok := r.pairs(b[i:j]); ok {
					w.replace(i, j, red)
				}
			}
			i = j
		default:
			i++
		}
	}
	return w.result()
}

// rewriter builds a copy of src with some ranges replaced, copying only if
// a replacement is made.
type rewriter struct {
	src []byte
	out []byte
	pos int // src[:pos] is in out
	hit bool
}

func (w *rewriter) replace(from, to int, with []byte) {
	if !w.hit {
		w.out = make([]byte, 0, len(w.src)+16)
		w.hit = true
	}
	w.out = append(w.out, w.src[w.pos:from]...)
	w.out = append(w.out, with...)
	w.pos = to
}

func (w *rewriter) result() []byte {
	if !w.hit {
		return w.src
	}
	return append(w.out, w.src[w.pos:]...)
}

func isNumber(b []byte) bool {
	var f float64
	return len(b) > 0 && (b[0] == '-' || ('0' <= b[0] && b[0] <= '9')) && json.Unmarshal(b, &f) == nil
}

// unquote returns the contents of the JSON string token q (quotes
// included, possibly unterminated), decoded.
func unquote(q []byte) []byte {
	c := q[1:]
	if len(c) > 0 && c[len(c)-1] == '"' && (len(c) < 2 || c[len(c)-2] != '\\') {
		c = c[:len(c)-1]
	}
	if bytes.IndexByte(c, '\\') < 0 {
		return c
	}
	var s string
	if json.Unmarshal(append(append([]byte{'"'}, c...), '"'), &s) == nil {
		return []byte(s)
	}
	return c
}

// appendQuoted appends s as a JSON string.
func appendQuoted(dst, s []byte) []byte {
	dst = append(dst, '"')
	dst = jsonscan.AppendEscaped(dst, string(s))
	return append(dst, '"')
}

// text redacts b (see Text) and reports whether anything changed. b is
// not modified.
func (r *Redactor) text(b []byte, secs []secret) ([]byte, bool) {
	changed := false
	for _, s := range secs {
		for _, v := range [2][]byte{s.raw, s.esc} {
			if len(v) > 0 && bytes.Contains(b, v) {
				b = bytes.ReplaceAll(b, v, []byte(Mask))
				changed = true
			}
		}
		// A preview cut in the middle of a secret (or of its escaped form).
	cut:
		for _, v := range [2][]byte{s.raw, s.esc} {
			for l := len(v) - 1; l >= MinSecretLen; l-- {
				if bytes.HasSuffix(b, v[:l]) {
					b = append(b[:len(b)-l:len(b)-l], Mask...)
					changed = true
					break cut
				}
			}
		}
	}
	if bytes.IndexByte(b, ':') >= 0 || bytes.IndexByte(b, '=') >= 0 {
		if out, ok := r.pairs(b); ok {
			b, changed = out, true
		}
	}
	if out, ok := bearer(b); ok {
		b, changed = out, true
	}
	return b, changed
}

// escaped reports whether b[i] is the letter of an escape such as \n in
// text that holds a JSON string: it ends a word rather than starts one.
func escaped(b []byte, i int) bool { return i > 0 && b[i-1] == '\\' }

func isWordByte(c byte) bool {
	return c == '_' || c == '-' || c == '.' || ('a' <= c && c <= 'z') || ('A' <= c && c <= 'Z') || ('0' <= c && c <= '9')
}

// pairs masks the values of "key: value" and "key=value" pairs whose key
// is secret. A value is a quoted string, or a run up to a space or one of
// ,;&)]} — with "Bearer x", "Basic x" taken whole.
func (r *Redactor) pairs(b []byte) ([]byte, bool) {
	w := rewriter{src: b}
	for i := 0; i < len(b); i++ {
		if b[i] != ':' && b[i] != '=' {
			continue
		}
		// The key: a word before the separator, maybe quoted, maybe spaced.
		k := i
		for k > 0 && (b[k-1] == ' ' || b[k-1] == '\t') {
			k--
		}
		if k > 0 && (b[k-1] == '"' || b[k-1] == '\'') {
			k--
			if k > 0 && b[k-1] == '\\' && b[k] == '"' { // quoted inside a JSON string: \"key\"
				k--
			}
		}
		end := k
		for k > 0 && isWordByte(b[k-1]) {
			k--
		}
		if k == end || k < w.pos {
			continue
		}
		secret, count := r.secretKey(b[k:end])
		if !secret && escaped(b, k) && k+1 < end {
			secret, count = r.secretKey(b[k+1 : end]) // after an escape such as \n
		}
		if !secret {
			continue
		}
		v := i + 1
		for v < len(b) && (b[v] == ' ' || b[v] == '\t') {
			v++
		}
		if v < len(b) && b[v] == '=' { // "==" or ":="
			continue
		}
		ve := textValueEnd(b, v)
		if q := openQuote(b, v); q != nil {
			// Keep the quotes, mask what is between them.
			in := ve
			if in >= v+2*len(q) && bytes.Equal(b[in-len(q):in], q) {
				in -= len(q)
			}
			if in > v+len(q) {
				w.replace(v+len(q), in, []byte(Mask))
			}
		} else if ve > v && !(count && isNumber(b[v:ve])) {
			w.replace(v, ve, []byte(Mask))
		}
		i = max(i, ve-1)
	}
	if !w.hit {
		return b, false
	}
	return w.result(), true
}

// openQuote returns the quote that opens the text value at b[v]: " or ',
// or \" for a value quoted inside a JSON string; nil if it is not quoted.
func openQuote(b []byte, v int) []byte {
	switch {
	case v < len(b) && (b[v] == '"' || b[v] == '\''):
		return b[v : v+1]
	case v+1 < len(b) && b[v] == '\\' && b[v+1] == '"':
		return b[v : v+2]
	}
	return nil
}

// textValueEnd returns the end of the text value starting at b[v].
func textValueEnd(b []byte, v int) int {
	if v >= len(b) {
		return v
	}
	if q := openQuote(b, v); len(q) == 2 {
		for i := v + 2; i < len(b); i++ {
			if b[i] == '\\' {
				if i+1 < len(b) && b[i+1] == '"' {
					return i + 2
				}
				i++
			}
		}
		return len(b)
	}
	if q := b[v]; q == '"' || q == '\'' {
		for i := v + 1; i < len(b); i++ {
			switch b[i] {
			case '\\':
				i++
			case q:
				return i + 1
			}
		}
		return len(b)
	}
	e := bareEnd(b, v)
	if scheme := strings.ToLower(string(b[v:e])); scheme == "bearer" || scheme == "basic" || scheme == "token" || scheme == "digest" {
		if n := jsonscan.SkipSpace(b, e); n > e && n < len(b) {
			e = bareEnd(b, n)
		}
	}
	return e
}

func bareEnd(b []byte, i int) int {
	for i < len(b) {
		switch b[i] {
		case ' ', '\t', '\r', '\n', ',', ';', '&', ')', ']', '}', '"', '\'':
			return i
		}
		i++
	}
	return i
}

// hasBearer reports whether s holds "bearer", in any case.
func hasBearer(s string) bool {
	for _, c := range [2]byte{'b', 'B'} {
		for t := s; ; {
			i := strings.IndexByte(t, c)
			if i < 0 {
				break
			}
			if len(t)-i >= 6 && strings.EqualFold(t[i:i+6], "bearer") {
				return true
			}
			t = t[i+1:]
		}
	}
	return false
}

// bearer masks the credential after "Bearer " anywhere.
func bearer(b []byte) ([]byte, bool) {
	const word = "bearer"
	if !hasBearer(unsafeString(b)) {
		return b, false
	}
	w := rewriter{src: b}
	for i := 0; i+len(word)+1 < len(b); i++ {
		if b[i]|0x20 != 'b' || (i > 0 && isWordByte(b[i-1]) && !escaped(b, i-1)) ||
			!bytes.EqualFold(b[i:i+len(word)], []byte(word)) || (b[i+len(word)] != ' ' && b[i+len(word)] != '\t') {
			continue
		}
		v := jsonscan.SkipSpace(b, i+len(word))
		e := bareEnd(b, v)
		if e > v && v >= w.pos && string(b[v:e]) != Mask {
			w.replace(v, e, []byte(Mask))
		}
		i = max(i, e-1)
	}
	if !w.hit {
		return b, false
	}
	return w.result(), true
}
