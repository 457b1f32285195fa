// Package secrets keeps secrets out of what the model, the logs and the
// audit record see (P6): a [reach.Redactor] that masks registered secret
// values wherever they appear, and the values of JSON members whose names
// say they hold a secret (password, token, api_key, authorization, cookie,
// ...), in JSON and in plain text.
//
//	red := secrets.New(nil)
//	red.AddEnv("GITHUB_TOKEN", "OPENAI_API_KEY")
//	vals, _ := secrets.ReadFile(".reach/secrets.env")
//	red.Add(slices.Collect(maps.Values(vals))...)
//	rt := reach.New(&reach.Options{Redactor: red})
package secrets

import (
	"bufio"
	"bytes"
	"cmp"
	"encoding/json"
	"fmt"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"unicode/utf8"

	"github.com/agentreach/reach"
	"github.com/agentreach/reach/internal/jsonscan"
)

// Options configure a Redactor. A nil *Options means all defaults.
type Options struct {
	// Keys are more member names whose values are always masked, compared
	// like the built-in ones (case, '-', '_' and '.' ignored).
	Keys []string
	// MinLength is the shortest secret value registered; shorter ones would
	// mask ordinary text. If zero, 4.
	MinLength int
	// Mask replaces what is hidden; if empty, "[redacted]".
	Mask string
}

// Redactor masks secrets in bytes and strings. Safe for concurrent use;
// values may be added at any time.
type Redactor struct {
	mask    string
	minLen  int
	keys    map[string]bool
	mu      sync.Mutex // serializes Add
	secrets atomic.Pointer[secretSet]
}

type secretSet struct {
	vals []string // longest first
	rep  *strings.Replacer
}

var _ reach.Redactor = (*Redactor)(nil)

// New returns a Redactor with the options (nil for defaults).
func New(opts *Options) *Redactor {
	var o Options
	if opts != nil {
		o = *opts
	}
	r := &Redactor{mask: cmp.Or(o.Mask, "[redacted]"), minLen: cmp.Or(o.MinLength, 4), keys: map[string]bool{}}
	for _, k := range o.Keys {
		r.keys[normalize(k)] = true
	}
	r.secrets.Store(&secretSet{})
	return r
}

// Add registers secret values. Values shorter than MinLength are not
// registered; the error says how many (never which).
func (r *Redactor) Add(values ...string) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	old := r.secrets.Load()
	vals := slices.Clone(old.vals)
	short := 0
	for _, v := range values {
		switch {
		case len(v) < r.minLen:
			if v != "" {
				short++
			}
		case !slices.Contains(vals, v):
			vals = append(vals, v)
		}
	}
	// Longest first, so a secret containing another is masked whole.
	slices.SortFunc(vals, func(a, b string) int { return cmp.Or(len(b)-len(a), strings.Compare(a, b)) })
	pairs := make([]string, 0, 2*len(vals))
	for _, v := range vals {
		pairs = append(pairs, v, r.mask)
	}
	r.secrets.Store(&secretSet{vals: vals, rep: strings.NewReplacer(pairs...)})
	if short > 0 {
		return fmt.Errorf("%d secret value(s) shorter than %d characters were not registered", short, r.minLen)
	}
	return nil
}

// AddEnv registers the values of environment variables (unset ones are
// skipped).
func (r *Redactor) AddEnv(names ...string) error {
	var vals []string
	for _, n := range names {
		if v, ok := os.LookupEnv(n); ok {
			vals = append(vals, v)
		}
	}
	return r.Add(vals...)
}

// Len returns the number of registered secret values.
func (r *Redactor) Len() int { return len(r.secrets.Load().vals) }

// ReadFile reads a secrets file: a JSON object of names to strings, or
// lines of NAME=VALUE (blank lines and lines starting with # are skipped,
// "export " is allowed, values may be quoted).
func ReadFile(path string) (map[string]string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("reading secrets: %w", err)
	}
	out := map[string]string{}
	if t := bytes.TrimSpace(b); len(t) > 0 && t[0] == '{' {
		if err := json.Unmarshal(t, &out); err != nil {
			return nil, fmt.Errorf("reading secrets from %s: %w", path, err)
		}
		return out, nil
	}
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(nil, 1<<20)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || line[0] == '#' {
			continue
		}
		line = strings.TrimPrefix(line, "export ")
		name, val, ok := strings.Cut(line, "=")
		name = strings.TrimSpace(name)
		if !ok || name == "" {
			return nil, fmt.Errorf("reading secrets from %s: line %d is not NAME=VALUE", path, n)
		}
		val = strings.TrimSpace(val)
		if len(val) >= 2 && (val[0] == '"' || val[0] == '\'') && val[len(val)-1] == val[0] {
			if val[0] == '"' {
				if u, err := strconv.Unquote(val); err == nil {
					val = u
				} else {
					val = val[1 : len(val)-1]
				}
			} else {
				val = val[1 : len(val)-1]
			}
		}
		out[name] = val
	}
	return out, sc.Err()
}

// normalize lower-cases a member name and drops '-', '_', '.' and spaces.
func normalize(k string) string {
	var b strings.Builder
	for _, c := range strings.ToLower(k) {
		switch c {
		case '-', '_', '.', ' ':
		default:
			b.WriteRune(c)
		}
	}
	return b.String()
}

var exactKeys = map[string]bool{
	"auth": true, "pwd": true, "pin": true, "otp": true, "session": true, "bearer": true,
	"signature": true, "xreachkey": true, "xapikey": true, "dsn": true, "connectionstring": true,
}

// SensitiveKey reports whether a member name says its value is a secret:
// it contains password, passwd, secret, apikey, privatekey or passphrase,
// or ends in token, cookie, credential(s), authorization or sessionid, or
// is one of auth, pwd, pin, otp, session, bearer, signature, dsn,
// connection_string, x-api-key, x-reach-key — case, '-', '_' and '.'
// ignored. "max_tokens" and "token_count" are not secrets.
func SensitiveKey(name string) bool {
	k := normalize(name)
	if exactKeys[k] {
		return true
	}
	for _, s := range []string{"password", "passwd", "secret", "apikey", "privatekey", "passphrase"} {
		if strings.Contains(k, s) {
			return true
		}
	}
	for _, s := range []string{"token", "cookie", "credential", "credentials", "authorization", "sessionid"} {
		if strings.HasSuffix(k, s) {
			return true
		}
	}
	return false
}

func (r *Redactor) sensitive(name string) bool {
	return SensitiveKey(name) || (len(r.keys) > 0 && r.keys[normalize(name)])
}

// stems are lower-case pieces of which every sensitive name has one; a text
// with none of them (and no secret) is returned as it is.
var stems = []string{"pass", "pwd", "secret", "key", "token", "cookie", "credential", "auth", "session",
	"pin", "otp", "bearer", "basic", "signature", "dsn", "connection"}

func mayHaveKey(b []byte) bool {
	for i := 0; i < len(b); i++ {
		c := b[i] | 0x20 // ASCII lower case
		for _, s := range stems {
			if c == s[0] && len(b)-i >= len(s) && bytes.EqualFold(b[i:i+len(s)], []byte(s)) {
				return true
			}
		}
	}
	return false
}

// hasSecret reports whether b may contain a registered secret: literally,
// or (with a backslash in b) in an escaped form.
func (s *secretSet) hasSecret(b []byte) bool {
	if len(s.vals) == 0 {
		return false
	}
	if bytes.IndexByte(b, '\\') >= 0 {
		return true
	}
	for _, v := range s.vals {
		if bytes.Contains(b, []byte(v)) {
			return true
		}
	}
	return false
}

// Redact masks secrets in b. Valid JSON stays valid JSON: a sensitive
// member's value becomes the mask string, and secrets inside strings are
// masked. Anything else is treated as text (see RedactString). b is
// returned as it is when there is nothing to mask.
func (r *Redactor) Redact(b []byte) []byte {
	s := r.secrets.Load()
	if !s.hasSecret(b) && !mayHaveKey(b) {
		return b
	}
	if !json.Valid(b) {
		return []byte(r.redactText(s, string(b)))
	}
	out, _ := r.json(s, make([]byte, 0, len(b)), b, 0, true)
	return out
}

// RedactValues masks only the registered secret values in b, in JSON
// string values (escaped forms included) or in text: not members with
// sensitive names, nor what the text rules find. For data whose member
// names are not the caller's, such as a model's answer, in which "token"
// is a word (logprobs) and key=value a program's text.
func (r *Redactor) RedactValues(b []byte) []byte {
	s := r.secrets.Load()
	if !s.hasSecret(b) {
		return b
	}
	if !json.Valid(b) {
		return []byte(s.rep.Replace(string(b)))
	}
	out, _ := r.json(s, make([]byte, 0, len(b)), b, 0, false)
	return out
}

// RedactString masks secrets in s: registered values, JSON members with
// sensitive names (in whole or partial JSON), "name=value" and
// "name: value" pairs with sensitive names, and bearer credentials.
func (r *Redactor) RedactString(str string) string {
	s := r.secrets.Load()
	if !s.hasSecret([]byte(str)) && !mayHaveKey([]byte(str)) {
		return str
	}
	if t := strings.TrimSpace(str); len(t) > 0 && (t[0] == '{' || t[0] == '[') && json.Valid([]byte(str)) {
		out, _ := r.json(s, make([]byte, 0, len(str)), []byte(str), 0, true)
		return string(out)
	}
	return r.redactText(s, str)
}

var (
	bearerRE = regexp.MustCompile(`(?i)\b(bearer|basic|token)(\s+)[A-Za-z0-9\-._~+/]{8,}=*`)
	pairRE   = regexp.MustCompile(`("?)([A-Za-z][A-Za-z0-9_.\-]*)("?[ \t]*[:=][ \t]*)("(?:[^"\\]|\\.)*"|'[^']*'|[^\s&;,"'}\]]+)`)
)

func (r *Redactor) redactText(s *secretSet, str string) string {
	if s.rep != nil {
		str = s.rep.Replace(str)
	}
	return r.textRules(str, false)
}

// textRules masks what the text rules find in str: the token after
// "Bearer", "Basic" or "token", and the value of a sensitive key=value or
// key: value pair. In prose (a JSON string value: a tool's output, a
// message) the rules are narrower, so that words stay: after "Basic" or
// "token" only what looks like a credential ("basic subscription", "one
// token whenever" stay), and only key=value and "key": value pairs, not
// "Session: Introduction".
func (r *Redactor) textRules(str string, prose bool) string {
	str = bearerRE.ReplaceAllStringFunc(str, func(m string) string {
		sub := bearerRE.FindStringSubmatch(m)
		if prose && !strings.EqualFold(sub[1], "bearer") && !credentialLike(m[len(sub[1])+len(sub[2]):]) {
			return m // "basic subscription", "one token whenever" in a tool's text
		}
		return sub[1] + sub[2] + r.mask
	})
	return r.pairs(str, prose, 2)
}

// pairs masks the values of sensitive pairs in str; the value of another
// pair is looked into too (depth levels), as in https://host/x?api_key=...,
// where "https" and its value are the outer pair.
func (r *Redactor) pairs(str string, prose bool, depth int) string {
	return pairRE.ReplaceAllStringFunc(str, func(m string) string {
		sub := pairRE.FindStringSubmatch(m)
		if !r.sensitive(sub[2]) {
			if depth > 0 && strings.ContainsAny(sub[4], "=:") {
				if v := r.pairs(sub[4], prose, depth-1); v != sub[4] {
					return sub[1] + sub[2] + sub[3] + v
				}
			}
			return m
		}
		if sub[4] == r.mask || sub[4] == `"`+r.mask+`"` {
			return m
		}
		if prose && sub[1] == "" && !strings.Contains(sub[3], "=") {
			return m // key: value in running text
		}
		val := r.mask
		if strings.HasPrefix(sub[4], `"`) {
			val = `"` + r.mask + `"`
		}
		return sub[1] + sub[2] + sub[3] + val
	})
}

// credentialLike reports whether a token looks like a credential rather
// than a word: it has a digit or one of -._~+/=, or capitals past its first
// letter along with small letters (base64).
func credentialLike(tok string) bool {
	upper, lower := false, false
	for i := 0; i < len(tok); i++ {
		c := tok[i]
		switch {
		case c >= '0' && c <= '9', strings.IndexByte("-._~+/=", c) >= 0:
			return true
		case c >= 'A' && c <= 'Z':
			upper = upper || i > 0
		case c >= 'a' && c <= 'z':
			lower = true
		}
	}
	return upper && lower
}

// json copies the valid JSON value at b[i:] to dst with secrets masked and
// returns dst and the index past the value. Without rules only registered
// values are masked.
func (r *Redactor) json(s *secretSet, dst, b []byte, i int, rules bool) ([]byte, int) {
	i = jsonscan.SkipSpace(b, i)
	switch b[i] {
	case '{':
		dst = append(dst, '{')
		i = jsonscan.SkipSpace(b, i+1)
		for first := true; b[i] != '}'; first = false {
			if !first {
				dst = append(dst, ',')
			}
			ks := i
			i = jsonscan.SkipString(b, i)
			key := b[ks:i]
			dst = r.str(s, dst, key, rules)
			i = jsonscan.SkipSpace(b, i) + 1 // ':'
			dst = append(dst, ':')
			if name, ok := unquote(key); ok && rules && r.sensitive(name) {
				i = jsonscan.SkipValue(b, jsonscan.SkipSpace(b, i))
				dst = strconv.AppendQuote(dst, r.mask)
			} else {
				dst, i = r.json(s, dst, b, i, rules)
			}
			i = jsonscan.SkipSpace(b, i)
			if b[i] == ',' {
				i = jsonscan.SkipSpace(b, i+1)
			}
		}
		return append(dst, '}'), i + 1
	case '[':
		dst = append(dst, '[')
		i = jsonscan.SkipSpace(b, i+1)
		for first := true; b[i] != ']'; first = false {
			if !first {
				dst = append(dst, ',')
			}
			dst, i = r.json(s, dst, b, i, rules)
			i = jsonscan.SkipSpace(b, i)
			if b[i] == ',' {
				i = jsonscan.SkipSpace(b, i+1)
			}
		}
		return append(dst, ']'), i + 1
	case '"':
		start := i
		i = jsonscan.SkipString(b, i)
		return r.str(s, dst, b[start:i], rules), i
	default: // number or literal
		start := i
		i = jsonscan.SkipValue(b, i)
		lit := b[start:i]
		if len(s.vals) > 0 && s.rep.Replace(string(lit)) != string(lit) {
			return strconv.AppendQuote(dst, r.mask), i
		}
		return append(dst, lit...), i
	}
}

// str appends the JSON string raw (quotes included) with secrets masked:
// registered values, and with rules, in text (a tool's output as a string
// value, an error message) what the text rules find, password=... or
// Bearer ....
func (r *Redactor) str(s *secretSet, dst, raw []byte, rules bool) []byte {
	inner := raw[1 : len(raw)-1]
	text := rules && mayHaveKey(inner) // a pair or a bearer token may be in it
	if len(s.vals) == 0 && !text {
		return append(dst, raw...)
	}
	if bytes.IndexByte(inner, '\\') < 0 && !text {
		if !s.hasSecret(inner) {
			return append(dst, raw...)
		}
		return appendJSONString(dst, s.rep.Replace(string(inner)))
	}
	v, ok := unquote(raw)
	if !ok {
		return append(dst, raw...)
	}
	m := v
	if len(s.vals) > 0 {
		m = s.rep.Replace(m)
	}
	if rules && (text || mayHaveKey([]byte(m))) {
		m = r.textRules(m, true)
	}
	if m != v {
		return appendJSONString(dst, m)
	}
	return append(dst, raw...)
}

func unquote(raw []byte) (string, bool) {
	var s string
	if json.Unmarshal(raw, &s) != nil {
		return "", false
	}
	return s, true
}

func appendJSONString(dst []byte, s string) []byte {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if !utf8.ValidString(s) {
		s = strings.ToValidUTF8(s, "\uFFFD")
	}
	enc.Encode(s)
	return append(dst, bytes.TrimRight(buf.Bytes(), "\n")...)
}

// Stream masks the registered secret values in a text that arrives in
// pieces, such as a streamed answer, where a secret may be split across
// two pieces. Not safe for concurrent use.
type Stream struct {
	r    *Redactor
	held string
}

// Stream returns a Stream over r's secrets.
func (r *Redactor) Stream() *Stream { return &Stream{r: r} }

// Next returns what of the text may be passed on once piece has arrived:
// the secrets it completes masked, and without the end of it that may
// begin a secret (or a longer one that a shorter ends), which is held for
// the next piece (or Flush). A secret that begins before that end is held
// whole.
func (s *Stream) Next(piece string) string {
	set := s.r.secrets.Load()
	text := s.held + piece
	s.held = ""
	if len(set.vals) == 0 {
		return text
	}
	cut := len(text)
	for _, v := range set.vals { // the longest end of text that a secret begins with
		for n := min(len(v)-1, len(text)); n > len(text)-cut; n-- {
			if strings.HasSuffix(text, v[:n]) {
				cut = len(text) - n
				break
			}
		}
	}
	for moved := true; moved; { // no secret straddles the cut
		moved = false
		for _, v := range set.vals {
			for i := max(0, cut-len(v)+1); i < cut; i++ {
				if strings.HasPrefix(text[i:], v) && i+len(v) > cut {
					cut, moved = i, true
					break
				}
			}
		}
	}
	s.held = text[cut:]
	return set.rep.Replace(text[:cut])
}

// Flush returns the text held back at the end, its secrets masked. A held
// end that is the start of a secret that never came whole is masked when
// it gives away a good part of it (at least half, and 8 bytes): a shorter
// one is more likely a word that happens to begin a secret.
func (s *Stream) Flush() string {
	h := s.held
	s.held = ""
	set := s.r.secrets.Load()
	if set.rep == nil {
		return h
	}
	if m := set.rep.Replace(h); m != h {
		return m
	}
	for _, v := range set.vals {
		if len(h) >= 8 && 2*len(h) >= len(v) && strings.HasPrefix(v, h) {
			return s.r.mask
		}
	}
	return h
}

// Holding reports whether text is held back.
func (s *Stream) Holding() bool { return s.held != "" }
