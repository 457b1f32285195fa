// Package origin keeps a request's key to the origin it was sent to when
// net/http follows a redirect.
//
// net/http's client carries a request's Authorization through a redirect
// to the same host on any port or scheme (https down to plain http
// included) and to its subdomains. A key reach sends (a model endpoint's,
// a client's passed on, an upstream's headers, the CLI's key for the
// gateway) goes to the origin it was meant for (scheme, host and port) and
// to the upgrade to https of that host, never elsewhere.
package origin

import (
	"errors"
	"net"
	"net/http"
	"net/url"
	"strings"
)

// KeepKey returns a CheckRedirect that drops the Authorization of a
// redirect off the first request's origin (KeyGoesTo) and then asks next,
// or, if next is nil, stops after 10 redirects as net/http does.
func KeepKey(next func(*http.Request, []*http.Request) error) func(*http.Request, []*http.Request) error {
	return func(req *http.Request, via []*http.Request) error {
		if !KeyGoesTo(via[0].URL, req.URL) {
			req.Header.Del("Authorization")
		}
		if next != nil {
			return next(req, via)
		}
		if len(via) >= 10 {
			return errors.New("stopped after 10 redirects")
		}
		return nil
	}
}

// KeyGoesTo reports whether the key sent to from goes with a redirect to
// to: the same scheme, host and port, or from http to https on the same
// host (port 80 to 443, another port to itself).
func KeyGoesTo(from, to *url.URL) bool {
	if !strings.EqualFold(from.Hostname(), to.Hostname()) {
		return false
	}
	fs, ts := strings.ToLower(from.Scheme), strings.ToLower(to.Scheme)
	switch {
	case fs == ts:
		return portOf(from) == portOf(to)
	case fs == "http" && ts == "https":
		if p := portOf(from); p != "80" {
			return portOf(to) == p
		}
		return portOf(to) == "443"
	}
	return false
}

// portOf returns u's port, or its scheme's default (http 80, https 443).
func portOf(u *url.URL) string {
	if p := u.Port(); p != "" {
		return p
	}
	if strings.EqualFold(u.Scheme, "https") {
		return "443"
	}
	return "80"
}

// PlainOffLoopback reports whether u is a plain http URL of a host other
// than loopback (localhost, 127.0.0.0/8, ::1): what is sent to it crosses
// the network in the clear.
func PlainOffLoopback(u *url.URL) bool {
	return strings.EqualFold(u.Scheme, "http") && !Loopback(u.Hostname())
}

// Loopback reports whether host (without port) is localhost or a
// loopback address: what is sent to it does not cross the network.
func Loopback(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
