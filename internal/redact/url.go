package redact

import "net/url"

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
