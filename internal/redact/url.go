package redact

import (
	"net/url"
	"strings"
)

// ShownURL is how a configured URL is quoted where people and models read
// it (a banner, an error, a warning, a view): its user information as
// "xxxxx" (as [url.URL.Redacted] shows a password; a user name alone can
// be a key too), its query, which may hold a key (?key=..., ?api-key=...),
// as "?…", and no fragment.
func ShownURL(s string) string {
	p, err := url.Parse(s)
	if err != nil {
		return "(a URL that does not parse)"
	}
	if p.User != nil {
		p.User = url.User("xxxxx")
	}
	query := ""
	if p.RawQuery != "" || p.ForceQuery {
		query = "?…"
	}
	p.RawQuery, p.ForceQuery, p.Fragment, p.RawFragment = "", false, "", ""
	return p.String() + query
}

// URLsShown returns s with every URL in it (a scheme, "://", and what
// follows up to a space, a quote, a backslash, < or >) quoted as ShownURL
// quotes one: its user as xxxxx, its query as ?… and no fragment. The rest
// of s is as it was; s itself when it has no URL to change. For texts
// that may quote a URL whole, such as a log line's: every query value is
// hidden, not only those a name or a look gives away (?code=abc12).
func URLsShown(s string) string {
	if !strings.Contains(s, "://") {
		return s
	}
	var b strings.Builder
	last := 0 // s[:last] is in b
	for at := 0; ; {
		i := strings.Index(s[at:], "://")
		if i < 0 {
			break
		}
		i += at
		start := i
		for start > 0 && schemeByte(s[start-1]) {
			start--
		}
		end := i + 3
		for end < len(s) && !urlEnd(s[end]) {
			end++
		}
		if tail := s[i+3 : end]; start < i {
			if shown := shownTail(tail); shown != tail {
				b.WriteString(s[last : i+3])
				b.WriteString(shown)
				last = end
			}
		}
		at = end
	}
	if last == 0 {
		return s
	}
	b.WriteString(s[last:])
	return b.String()
}

// shownTail is what follows a URL's "://" as ShownURL shows it.
func shownTail(t string) string {
	auth := t
	if k := strings.IndexAny(t, "/?#"); k >= 0 {
		auth = t[:k]
	}
	user := strings.LastIndexByte(auth, '@')
	k := strings.IndexAny(t, "?#")
	if user < 0 && k < 0 {
		return t
	}
	var b strings.Builder
	if user >= 0 {
		b.WriteString("xxxxx")
		t = t[user:]
		k = strings.IndexAny(t, "?#")
	}
	if k < 0 {
		b.WriteString(t)
		return b.String()
	}
	b.WriteString(t[:k])
	if t[k] == '?' {
		b.WriteString("?…")
	}
	return b.String()
}

func schemeByte(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '+' || c == '-' || c == '.'
}

func urlEnd(c byte) bool {
	switch c {
	case ' ', '\t', '\n', '\r', '"', '\'', '`', '\\', '<', '>':
		return true
	}
	return false
}
