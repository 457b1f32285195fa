package gateway

import (
	"context"
	"fmt"
	"log/slog"
	"net/url"
	"strings"

	"github.com/agentreach/reach/internal/config"
	"github.com/agentreach/reach/internal/front"
	"github.com/agentreach/reach/internal/redact"
)

// newRedactor makes the gateway's one redactor (P6), with every secret of
// the configuration registered: the secrets file's values and every
// upstream header and env value, the model's key, and the credentials in
// the upstreams', agents' and model's URLs (urlSecrets). The runtime masks
// with it what it lets out (results and errors for the model, what frames
// keep and events carry, for the API, the graph, the UI and the audit
// log), the approval queue what it shows, the model proxy the answers it
// passes on, the relays what an upstream sends the client, and the log
// handler every line. With no secret configured it still masks values
// under secret names, so that the model and the audit log see the same.
func newRedactor(c *config.Config) (*redact.Redactor, error) {
	r, err := redact.New(nil)
	if err != nil {
		return nil, err
	}
	var vals []string
	for _, v := range c.SecretValues() {
		if len(v) >= redact.MinSecretLen {
			vals = append(vals, v)
		}
	}
	for _, u := range c.Upstreams {
		vals = append(vals, urlSecrets(r, u.URL, true)...)
	}
	for _, a := range c.Agents { // an agent's errors quote its card's URL, with its query
		vals = append(vals, urlSecrets(r, a.URL, true)...)
	}
	if c.Model != nil { // a model's path names a deployment (gpt-4o-2024-08-06), no credential
		vals = append(vals, urlSecrets(r, c.Model.BaseURL, false)...)
		for _, f := range c.Model.Fallbacks {
			vals = append(vals, urlSecrets(r, f.BaseURL, false)...)
		}
	}
	if err := r.Add(vals...); err != nil {
		return nil, fmt.Errorf("registering secrets: %w", err)
	}
	return r, nil
}

// urlSecrets returns the credentials an endpoint's URL carries, written
// out in the configuration (${VAR} is not expanded in a URL) and quoted by
// every error of a dial: its userinfo's password, the value of a query
// parameter with a secret name or one that ends in "key" (api_key, key), and,
// with paths, a query value or
// path segment that looks like a token (.../s/<token>/mcp, ?key=<token>).
// Words such as json, v2 or mcp are no credential, and masked they would
// be hidden everywhere.
func urlSecrets(r *redact.Redactor, raw string, paths bool) []string {
	u, err := url.Parse(raw)
	if err != nil || raw == "" {
		return nil
	}
	var out []string
	if p, ok := u.User.Password(); ok && len(p) >= redact.MinSecretLen {
		out = append(out, p, url.UserPassword(u.User.Username(), p).String())
	}
	for name, vs := range u.Query() {
		for _, v := range vs {
			// In an endpoint's query, a key is a credential (?key=,
			// ?subscription-key=); a keyword is not.
			secret := r.SecretKey(name) || strings.HasSuffix(strings.ToLower(name), "key")
			if (secret && len(v) >= redact.MinSecretLen) || (paths && tokenLike(v)) {
				out = append(out, v)
			}
		}
	}
	if !paths {
		return out
	}
	for seg := range strings.SplitSeq(u.EscapedPath(), "/") {
		if v, err := url.PathUnescape(seg); err == nil && tokenLike(v) {
			out = append(out, v, seg)
		}
	}
	return out
}

// tokenLike reports whether a part of a URL looks like a credential: 16
// bytes or more with a digit, and mixed case (base64, base62) but not
// words joined (Meta-Llama-3.1-8B-Instruct), or one run of letters and
// digits (a hex or base36 key), or at least 8 digits (a UUID); not a slug
// with a version in it (github-mcp-server-v2).
func tokenLike(v string) bool {
	if len(v) < 16 {
		return false
	}
	var lower, upper, digit, other int
	for _, c := range []byte(v) {
		switch {
		case 'a' <= c && c <= 'z':
			lower++
		case 'A' <= c && c <= 'Z':
			upper++
		case '0' <= c && c <= '9':
			digit++
		default:
			other++
		}
	}
	switch {
	case digit == 0:
		return false
	case lower > 0 && upper > 0 && other > 0 && named(v):
		// Words and a version joined by dashes or dots: a name.
	case lower > 0 && upper > 0, other == 0 && lower+upper > 0:
		return true
	}
	return digit >= 8
}

// named reports whether every part of v between the characters that join
// words (-, ., _, ~) is shaped as a word is: a word capitalized or not,
// maybe with a number (Llama, Qwen2, api03), an acronym (MCP), or a number
// with a unit (8B, 32B). A token's parts mix cases where no word does
// (Xk2pQr9...): one such part, and v is not a name.
func named(v string) bool {
	for part := range strings.FieldsFuncSeq(v, func(c rune) bool { return c == '-' || c == '.' || c == '_' || c == '~' }) {
		i, n := 0, len(part)
		letters := func(lo, hi byte) {
			for i < n && lo <= part[i] && part[i] <= hi {
				i++
			}
		}
		switch c := part[0]; {
		case '0' <= c && c <= '9': // 8B, 32B, 3
			letters('0', '9')
			if i < n && ('a' <= part[i] && part[i] <= 'z' || 'A' <= part[i] && part[i] <= 'Z') {
				i++
			}
		default: // Llama, api03, MCP, Qwen2
			if 'A' <= c && c <= 'Z' {
				letters('A', 'Z')
			}
			if i <= 1 { // no acronym: a word, capitalized or not
				letters('a', 'z')
			}
			letters('0', '9')
		}
		if i < n {
			return false
		}
	}
	return true
}

// redactHandler masks secrets in a log record's message and attributes:
// the value of an attribute with a secret name whole, and every text, in
// which each URL is quoted as the banner quotes one (redact.URLsShown: its
// query as ?…, whatever its parameters' names or looks).
type redactHandler struct {
	h slog.Handler
	r *redact.Redactor
}

func (h redactHandler) Enabled(ctx context.Context, l slog.Level) bool { return h.h.Enabled(ctx, l) }

func (h redactHandler) Handle(ctx context.Context, rec slog.Record) error {
	out := slog.NewRecord(rec.Time, rec.Level, h.text(rec.Message), rec.PC)
	rec.Attrs(func(a slog.Attr) bool {
		out.AddAttrs(h.attr(a))
		return true
	})
	return h.h.Handle(ctx, out)
}

func (h redactHandler) attr(a slog.Attr) slog.Attr {
	if a.Equal(slog.Attr{}) {
		return a // left out, as the handlers leave out an empty attribute
	}
	v := a.Value.Resolve()
	if ref, ok := v.Any().(front.SessionRef); ok && v.Kind() == slog.KindAny { // a hash, made to be shown
		return slog.String(a.Key, string(ref))
	}
	if v.Kind() == slog.KindString && front.SessionKey(a.Key) {
		// One rule for a session id in the log, whoever logs it: its
		// short hash (front.SessionRefOf), never the id, never a mask;
		// none (a stdio session's) is left out.
		if v.String() == "" {
			return slog.Attr{}
		}
		return slog.String(a.Key, string(front.SessionRefOf(v.String())))
	}
	switch v.Kind() {
	case slog.KindGroup:
	case slog.KindInt64, slog.KindUint64, slog.KindFloat64:
		if h.r.SecretKey(a.Key) && !h.r.CountKey(a.Key) {
			return slog.String(a.Key, redact.Mask)
		}
	default:
		if h.r.SecretKey(a.Key) {
			return slog.String(a.Key, redact.Mask)
		}
	}
	switch v.Kind() {
	case slog.KindString:
		return slog.String(a.Key, h.text(v.String()))
	case slog.KindGroup:
		as := v.Group()
		out := make([]any, 0, len(as))
		for _, x := range as {
			out = append(out, h.attr(x))
		}
		return slog.Group(a.Key, out...)
	case slog.KindAny:
		return slog.String(a.Key, h.text(fmt.Sprint(v.Any())))
	}
	return slog.Attr{Key: a.Key, Value: v}
}

// text is a log text masked.
func (h redactHandler) text(s string) string { return redact.URLsShown(h.r.RedactString(s)) }

func (h redactHandler) WithAttrs(as []slog.Attr) slog.Handler {
	out := make([]slog.Attr, len(as))
	for i, a := range as {
		out[i] = h.attr(a)
	}
	return redactHandler{h.h.WithAttrs(out), h.r}
}

func (h redactHandler) WithGroup(name string) slog.Handler {
	return redactHandler{h.h.WithGroup(name), h.r}
}

// maskedError is an error whose text is masked by the redactor; errors.Is
// and errors.As still see the error it masks.
type maskedError struct {
	err error
	msg string
}

func (e *maskedError) Error() string { return e.msg }
func (e *maskedError) Unwrap() error { return e.err }

// maskError returns err with its text masked by red, err itself when
// nothing in it is secret.
func maskError(red *redact.Redactor, err error) error {
	msg := err.Error()
	if masked := red.RedactString(msg); masked != msg {
		return &maskedError{err, masked}
	}
	return err
}
