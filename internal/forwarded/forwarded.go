// Package forwarded reads what a proxy in front of reach says of how a
// client asked: whether over https.
//
// reach serves plain HTTP, so a gateway reached over the network sits
// behind a proxy that ends TLS; what it writes back that depends on the
// scheme (a Secure, __Host- cookie; the https:// address an agent card
// names) follows what that proxy says.
package forwarded

import (
	"net/http"
	"strings"
)

// HTTPS reports whether the client asked r over https: r came over TLS,
// or the proxy nearest the client says so, in the first entry of
// X-Forwarded-Proto (each proxy on the way appends its own: "https, http"
// is a client's https through a second proxy) or, when there is no
// X-Forwarded-Proto, the proto of the first element of Forwarded (RFC
// 7239). A client that says https over plain HTTP gets a Secure cookie
// its browser will not send back over http, or a card naming an address
// it cannot reach: no worse.
func HTTPS(r *http.Request) bool {
	return r.TLS != nil || header(r.Header)
}

// header reports whether h says https (HTTPS).
func header(h http.Header) bool {
	if v := h.Get("X-Forwarded-Proto"); v != "" {
		first, _, _ := strings.Cut(v, ",")
		return strings.EqualFold(strings.TrimSpace(first), "https")
	}
	first, _, _ := strings.Cut(h.Get("Forwarded"), ",")
	for pair := range strings.SplitSeq(first, ";") {
		k, v, ok := strings.Cut(strings.TrimSpace(pair), "=")
		if ok && strings.EqualFold(strings.TrimSpace(k), "proto") {
			return strings.EqualFold(strings.Trim(strings.TrimSpace(v), `"`), "https")
		}
	}
	return false
}
