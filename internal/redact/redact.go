// Package redact is the one redactor (P6): what the model, the logs, the
// audit log and every view (the request API, the graph, the UI) see of a
// secret is decided here, by one rule set, with one mask.
//
//	red, _ := redact.New(&redact.Options{Secrets: []string{os.Getenv("GITHUB_TOKEN")}})
//	rt := reach.New(&reach.Options{Redactor: red}) // results, frames, events
//	red.Redact([]byte(`{"user":"bob","password":"hunter2"}`)) // {"user":"bob","password":"[REDACTED]"}
//	red.RedactString("GET /x?api_key=abc&q=1")                // GET /x?api_key=[REDACTED]&q=1
//
// # What is masked
//
// Every masked value becomes [Mask]. The rules:
//
//   - Registered values ([Options.Secrets], [Redactor.Add], at least
//     [MinSecretLen] bytes) wherever they appear: in text, in JSON strings
//     however they are escaped, percent-encoded as in a URL, in base64
//     (values of 12 bytes or more; wrapped in lines as MIME and PEM wrap
//     it, and percent-encoded, too), in hex (lower or upper case), spelled
//     with escapes each byte its own way (percent-encoding, JSON's \u,
//     HTML's character references: spell.go), in member names, as
//     numbers, and as the cut end of a text when that end gives away
//     enough of one (at least 8 bytes, or half of it).
//   - The value of every member whose name is secret, whatever its type
//     (a string, a number, an array, an object), at any depth. A name is
//     compared lower-cased without '_', '-', '.' and spaces; it is secret
//     when it contains password, passwd, passphrase, passcode, secret,
//     token, jwt, apikey, accesskey, privatekey, reachkey, authorization,
//     credential, cookie, sessionid, signature or connectionstring (or one
//     of [Options.Keys]), or is auth, pwd, pass, pin, otp, bearer, session
//     or dsn. A number under a name whose only secret part is "token" and
//     that counts tokens (max_tokens, input_tokens, token_count) is kept.
//   - A key that is a credential: the word "key" after a word that says
//     what it authenticates, signs or encrypts or whose account it opens
//     (Ocp-Apim-Subscription-Key, X-Auth-Key, signingKey, ssh_keys: the
//     words are in keys.go). A bare key and a key that names data
//     (primary_key, sort_key, idempotency_key, public_key, issueKey) are
//     ordinary names.
//   - The same in text: "name: value" and "name=value" with a secret name,
//     the name and the value quoted or not, escaped or not (JSON inside a
//     string: \"password\":\"...\"), the value a word, a quoted string,
//     or a whole array or object ("password":["..."]).
//   - The credential after "Bearer", and after "Basic" or "token" when it
//     looks like one (a digit, one of -._~+/=, or mixed case).
//   - Text that is an escaped JSON string is read unescaped (up to 16
//     levels deep), and JSON documents inside text are read as JSON.
//
// Valid JSON stays valid JSON, in its layout; input with nothing to mask is
// returned as it is, without a copy or an allocation.
//
// A text given in pieces is masked as the whole text would be: the texts
// of a tool result's content blocks ([Redactor.Blocks], and the "content"
// arrays [Redactor.Redact] finds), and a stream of chunks ([Stream]).
//
// [Redactor.Values] masks only the registered values: for data whose member
// names are not the caller's, such as a model's answer, in which "token" is
// a word (logprobs) and key=value a program's text.
package redact

import (
	"bytes"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/agentreach/reach/internal/jsonscan"
)

// Mask replaces every masked value.
const Mask = "[REDACTED]"

// MinSecretLen is the length below which a value is not registered: a
// shorter one would mask ordinary text everywhere and protects nothing.
const MinSecretLen = 4

// Options configure New. A nil *Options means the defaults.
type Options struct {
	// Keys are more parts of member names that say a value is secret,
	// compared as the built-in ones are (case, '_', '-', '.' and spaces
	// ignored): a name that contains one is secret.
	Keys []string
	// Secrets are values to mask wherever they appear (see Add).
	Secrets []string
}

// Redactor masks secrets in JSON, text and streams. The zero value is not
// usable; make one with New. Safe for concurrent use; values may be added
// at any time.
type Redactor struct {
	keys    keyRules
	mu      sync.Mutex // serializes Add
	secrets atomic.Pointer[secretSet]
}

// secretSet is the registered values, replaced whole on Add.
type secretSet struct {
	secs []secret   // longest first
	idx  *formIndex // their forms, when there are many
	// inForms holds the bytes of their forms: an escape that stands for
	// none of them spells no part of a value (mayEscape).
	inForms [256]bool
}

// newSecretSet returns the set of secs, longest first.
func newSecretSet(secs []secret) *secretSet {
	set := &secretSet{secs: secs, idx: newIndex(secs)}
	for _, s := range secs {
		for _, f := range s.forms {
			for _, c := range f {
				set.inForms[c] = true
			}
		}
	}
	return set
}

type secret struct {
	raw   []byte
	forms [][]byte // raw, then the forms it takes inside a JSON string, if different
	b64   [][]byte // of forms, those in base64 (read across line breaks too)
}

// New returns a Redactor with the built-in key names, opts' keys and
// opts' secrets. It fails when a secret is shorter than MinSecretLen.
func New(opts *Options) (*Redactor, error) {
	r := &Redactor{}
	var extra []string
	if opts != nil {
		extra = opts.Keys
	}
	r.keys = newKeyRules(extra)
	r.secrets.Store(&secretSet{})
	if opts != nil && len(opts.Secrets) > 0 {
		if err := r.Add(opts.Secrets...); err != nil {
			return nil, err
		}
	}
	return r, nil
}

// Add registers secret values, to be masked in everything redacted after it
// returns. Values shorter than MinSecretLen are not registered; the error
// says how many (never which). The empty string is ignored.
func (r *Redactor) Add(values ...string) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	old := r.secrets.Load()
	secs := slices.Clone(old.secs)
	short := 0
	for _, v := range values {
		switch {
		case v == "":
		case len(v) < MinSecretLen:
			short++
		case !slices.ContainsFunc(secs, func(s secret) bool { return string(s.raw) == v }):
			secs = append(secs, newSecret(v))
		}
	}
	// Longest first, so that a secret containing another is masked whole.
	slices.SortStableFunc(secs, func(a, b secret) int { return len(b.raw) - len(a.raw) })
	r.secrets.Store(newSecretSet(secs))
	if short > 0 {
		return fmt.Errorf("%d secret value(s) shorter than %d bytes were not registered: a value that short would mask ordinary text", short, MinSecretLen)
	}
	return nil
}

func newSecret(v string) secret {
	s := secret{raw: []byte(v)}
	s.forms = append(s.forms, s.raw)
	esc := jsonscan.AppendEscaped(nil, v)
	add := func(f []byte) {
		if !slices.ContainsFunc(s.forms, func(g []byte) bool { return bytes.Equal(f, g) }) {
			s.forms = append(s.forms, f)
		}
	}
	add(esc)
	// JSON may escape a slash, and encoding/json escapes <, > and &.
	add(bytes.ReplaceAll(esc, []byte("/"), []byte(`\/`)))
	var html bytes.Buffer
	json.HTMLEscape(&html, esc)
	add(html.Bytes())
	// In a URL a value is percent-encoded, and a token of base64 (an AWS
	// secret key, a signature) has '/', '+' and '=' to encode: as a query
	// value (Go's QueryEscape; Python's quote with safe="", JavaScript's
	// encodeURIComponent), as a path segment, or keeping its slashes
	// (Python's quote), in upper or lower case hex.
	percent := func(v string, plus bool) {
		for _, keep := range []string{"", "!'()*", "/", "$&+,:;=@", "!$&'()*+,/:;=?@"} {
			for _, hex := range []string{"0123456789ABCDEF", "0123456789abcdef"} {
				add(percentEncode(v, keep, hex, false))
				if plus {
					add(percentEncode(v, keep, hex, true))
				}
			}
		}
	}
	percent(v, true)
	// In hex, as a tool dumps bytes (hex.EncodeToString, xxd -p, a
	// digest's form), in lower or upper case. (Percent-encoded every
	// byte, or with character references, is read by the view, spell.go.)
	h := hex.EncodeToString(s.raw)
	add([]byte(h))
	add([]byte(strings.ToUpper(h)))
	// In base64 (a Basic credential echoed without its scheme, a header
	// an upstream shows encoded, a blob the value is inside), at each of
	// the three places it may begin in the encoded bytes: the characters
	// that encode its bits alone. A model reads base64 as easily as text.
	// Not for short values, whose few characters could be anyone's.
	if len(v) >= minBase64Len {
		for _, enc := range []*base64.Encoding{base64.RawStdEncoding, base64.RawURLEncoding} {
			for k := range 3 {
				e := enc.EncodeToString(append(make([]byte, k), v...))
				f := []byte(e[(8*k+5)/6 : 8*(k+len(v))/6])
				add(f)
				s.b64 = append(s.b64, f)
				// Passed in a URL, base64's '+' and '/' are
				// percent-encoded too.
				percent(string(f), false)
			}
		}
	}
	return s
}

// minBase64Len is the least length of a value masked in base64 too: its
// forms have at least 14 characters.
const minBase64Len = 12

// percentEncode escapes every byte of v but the unreserved ones of RFC 3986
// and those in keep, as %XX in the digits hex; plus writes a space as '+',
// as a query's form encoding does. It returns v as it is when nothing is
// escaped.
func percentEncode(v, keep, hex string, plus bool) []byte {
	var out []byte
	for i := range len(v) {
		switch c := v[i]; {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9', c == '-', c == '.', c == '_', c == '~', strings.IndexByte(keep, c) >= 0:
			out = append(out, c)
		case c == ' ' && plus:
			out = append(out, '+')
		default:
			out = append(out, '%', hex[c>>4], hex[c&15])
		}
	}
	return out
}

// Len returns the number of registered values.
func (r *Redactor) Len() int { return len(r.secrets.Load().secs) }

// SecretKey reports whether a member or parameter of this name holds a
// secret.
func (r *Redactor) SecretKey(name string) bool {
	secret, _ := r.keys.match([]byte(name))
	return secret
}

// CountKey reports whether a number under this secret name is a count of
// tokens, which is kept (max_tokens, input_tokens, token_count).
func (r *Redactor) CountKey(name string) bool {
	_, count := r.keys.match([]byte(name))
	return count
}

// Redact returns b with its secrets masked: as JSON when b is valid JSON
// (which it stays), else as text (see RedactString). b is returned as it
// is when nothing was masked.
func (r *Redactor) Redact(b []byte) []byte { return r.redact(b, true) }

// RedactString returns s with its secrets masked (see the package doc).
func (r *Redactor) RedactString(s string) string {
	set := r.secrets.Load()
	b := unsafeBytes(s)
	if !r.mayMask(b, set, true) {
		return s
	}
	out, changed := r.text(nil, b, set, true, 0)
	if !changed {
		return s
	}
	return string(out)
}

// Values returns b with only the registered values masked (see the
// package doc): as JSON when b is valid JSON, else as text.
func (r *Redactor) Values(b []byte) []byte { return r.redact(b, false) }

func (r *Redactor) redact(b []byte, full bool) []byte {
	set := r.secrets.Load()
	if !r.mayMask(b, set, full) {
		return b
	}
	var out []byte
	var changed bool
	if isJSON(b) {
		out, changed = r.json(nil, b, set, full, 0)
	} else {
		out, changed = r.text(nil, b, set, full, 0)
	}
	if !changed {
		return b
	}
	return out
}

// Blocks returns the texts of one result's content blocks, masked as their
// concatenation would be: a secret (or a name and its value) that one block
// ends and the next begins is masked too. A masked piece that spans blocks
// is written in the block where it begins; what it covers of the next ones
// is dropped. texts itself is returned when nothing was masked.
func (r *Redactor) Blocks(texts []string) []string { return r.blocks(texts, r.secrets.Load(), true) }

func (r *Redactor) blocks(texts []string, set *secretSet, full bool) []string {
	if len(texts) == 1 {
		if m, changed := r.text(nil, unsafeBytes(texts[0]), set, full, 0); changed {
			return []string{string(m)}
		}
	}
	if len(texts) < 2 {
		return texts
	}
	n := 0
	for _, t := range texts {
		n += len(t)
	}
	whole := make([]byte, 0, n)
	for _, t := range texts {
		whole = append(whole, t...)
	}
	if !r.mayMask(whole, set, full) {
		return texts
	}
	eds := r.textEdits(nil, whole, set, full, 0)
	if len(eds) == 0 {
		return texts
	}
	eds = merge(eds)
	out := make([]string, len(texts))
	start := 0
	for i, t := range texts {
		out[i] = string(applyRange(nil, whole, eds, start, start+len(t)))
		start += len(t)
	}
	return out
}

// Spells reports whether the name s holds a registered value whole: as it
// is or in a form the text rules find (escaped, percent-encoded, with
// character references, in base64). Unlike Values, an end of s that only
// begins a value does not count: a name is whole, no text cut in the
// middle of a secret.
func (r *Redactor) Spells(s string) bool {
	set := r.secrets.Load()
	b := unsafeBytes(s)
	if len(set.secs) == 0 || !r.mayMask(b, set, false) {
		return false
	}
	if len(valueEdits(nil, b, set, false)) > 0 || len(escapedEdits(nil, b, set, false)) > 0 {
		return true
	}
	if bytes.IndexByte(b, '\\') >= 0 {
		// A name that is an escaped JSON string spells what it stands for.
		if u, ok := appendUnescaped(nil, b); ok && len(u) < len(b) {
			return r.Spells(string(u))
		}
	}
	return false
}
