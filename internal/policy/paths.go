package policy

import (
	"net/url"
	"path"
	"regexp"
	"strings"
)

// Paths in arguments. A rule such as
//
//	permit (...) when { context.arguments.path like "/safe/*" };
//
// would let /safe/../etc/passwd through, and a forbid of "/etc/*" would
// miss //etc/passwd or /./etc/passwd. So a string argument that is a path
// with "." or ".." segments or doubled slashes reaches the policies
// cleaned (pathView); the tool still gets the string as it was sent.

// pathView returns how policies see a string argument: a path with "." or
// ".." segments or doubled slashes (after decoding percent-escapes, so that
// %2e%2e is ..) cleaned lexically, as path.Clean does but keeping a
// trailing slash (/safe/../etc/passwd is /etc/passwd, /safe/./a/ is
// /safe/a/); in a URL (scheme://host/path?query), its path alone, and its
// scheme and host in lower case. Any other
// string is unchanged. Cleaning is lexical: a symbolic link inside an
// allowed folder still leads out of it, which only the tool can see.
// Backslashes are not separators here.
func pathView(s string) string {
	if strings.IndexByte(s, '/') < 0 {
		return s
	}
	if m := urlPrefixRE.FindString(s); m != "" {
		rest := s[len(m):]
		// Its scheme and host in lower case, as every server reads them
		// (RFC 3986, 6.2.2.1): HTTPS://Intranet/admin is
		// https://intranet/admin. Not a user's name before '@'.
		authEnd := len(rest)
		if i := strings.IndexAny(rest, "/?#"); i >= 0 {
			authEnd = i
		}
		at := strings.LastIndexByte(rest[:authEnd], '@') + 1
		lm, lhost := lowerASCII(m), lowerASCII(rest[at:authEnd])
		cased := lm != m || lhost != rest[at:authEnd]
		slash := strings.IndexByte(rest, '/')
		p, end, changed := "", 0, false
		if slash >= 0 {
			end = len(rest)
			if i := strings.IndexAny(rest[slash:], "?#"); i >= 0 {
				end = slash + i
			}
			p, changed = cleanPath(rest[slash:end])
		}
		switch {
		case !changed && !cased:
			return s
		case !changed:
			return lm + rest[:at] + lhost + rest[authEnd:]
		}
		return lm + rest[:at] + lhost + rest[authEnd:slash] + p + rest[end:]
	}
	if p, changed := cleanPath(s); changed {
		return p
	}
	return s
}

// lowerASCII returns s with its ASCII letters in lower case (s itself when
// it has none in upper case).
func lowerASCII(s string) string {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c >= 'A' && c <= 'Z' {
			b := []byte(s)
			for j := i; j < len(b); j++ {
				if c := b[j]; c >= 'A' && c <= 'Z' {
					b[j] = c + 'a' - 'A'
				}
			}
			return string(b)
		}
	}
	return s
}

// resourceView returns how policies see a resource's URI: as pathView sees
// a string argument, and a URI of a scheme without "//" (custom:a/../b)
// with the part after its scheme cleaned, its scheme kept
// (custom:b): an upstream reads the path its URI names.
func resourceView(uri string) string {
	if urlPrefixRE.MatchString(uri) {
		return pathView(uri)
	}
	m := schemeRE.FindString(uri)
	if m == "" {
		return pathView(uri)
	}
	rest := uri[len(m):]
	end := len(rest)
	if i := strings.IndexAny(rest, "?#"); i >= 0 {
		end = i
	}
	if strings.IndexByte(rest[:end], '/') < 0 {
		return uri
	}
	p, changed := cleanPath(rest[:end])
	if !changed {
		return uri
	}
	return m + p + rest[end:]
}

// resourceReading returns a resource URI as an upstream that reads it
// most loosely reads it, or "" when that is how resourceView sees it: its
// fragment and query dropped, its escapes decoded again and again
// (%252e%252e is ..), each path segment without its ";" parameters
// (..;/ is ../, private;v=1 is private, as Java's servlet containers read
// them), its scheme in lower case (CUSTOM: is custom:), a file URI's host
// dropped (file://localhost/p is file:///p, as RFC 8089 reads it, and a
// reader of its path alone any host), then cleaned as
// resourceView cleans. A forbid holds against this reading as well as
// against resourceView's, so that a forbid of file:///private/key holds
// against file:///private/key?x, file:///private;x/key and
// file:///public/..;/private/key, whichever way the upstream reads them.
func resourceReading(uri string) string {
	m := schemeRE.FindString(uri)
	lm := lowerASCII(m)
	fileHost := lm == "file:" && strings.HasPrefix(uri[len(m):], "//") && !strings.HasPrefix(uri[len(m):], "///")
	if strings.IndexAny(uri, "%;?#") < 0 && lm == m && !fileHost {
		return ""
	}
	rest := uri[len(m):]
	if i := strings.IndexAny(rest, "?#"); i >= 0 {
		rest = rest[:i]
	}
	if fileHost { // file://localhost/p, file://any/p: the path /p to a reader of file URIs
		if i := strings.IndexByte(rest[2:], '/'); i >= 0 {
			rest = "//" + rest[2+i:]
		} else {
			rest = "///"
		}
	}
	for range 4 {
		if strings.IndexByte(rest, '%') < 0 {
			break
		}
		d, err := url.PathUnescape(rest)
		if err != nil || d == rest {
			break
		}
		rest = d
	}
	if strings.IndexByte(rest, ';') >= 0 {
		segs := strings.Split(rest, "/")
		for i, seg := range segs {
			if j := strings.IndexByte(seg, ';'); j >= 0 {
				segs[i] = seg[:j]
			}
		}
		rest = strings.Join(segs, "/")
	}
	return resourceView(lowerASCII(m) + rest)
}

// schemeRE matches the scheme of a URI and its colon.
var schemeRE = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9+.\-]*:`)

// urlPrefixRE matches the scheme and "//" of a URL.
var urlPrefixRE = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9+.\-]*://`)

// cleanPath cleans p (see pathView) and reports whether that changed it.
func cleanPath(p string) (string, bool) {
	changed := false
	if strings.IndexByte(p, '%') >= 0 {
		if u, err := url.PathUnescape(p); err == nil && needsCleaning(u) {
			p = u
		} else if n := unreservedDecoded(p); n != p {
			// %70rivate is private to the server that decodes it (RFC
			// 3986, 6.2.2.2), and to the policies so.
			p, changed = n, true
		}
	}
	if !needsCleaning(p) {
		return p, changed
	}
	c := path.Clean(p)
	if strings.HasSuffix(p, "/") && c != "/" {
		c += "/"
	}
	return c, true
}

// unreservedDecoded returns p with its percent-escapes of unreserved
// characters (letters, digits, '-', '.', '_', '~') decoded: the same path
// to every server (RFC 3986, 6.2.2.2). Other escapes (%2F, %20) are kept.
func unreservedDecoded(p string) string {
	var b []byte
	for i := 0; i < len(p); i++ {
		if p[i] == '%' && i+2 < len(p) {
			if c, ok := unhex(p[i+1], p[i+2]); ok && unreserved(c) {
				if b == nil {
					b = append(make([]byte, 0, len(p)), p[:i]...)
				}
				b = append(b, c)
				i += 2
				continue
			}
		}
		if b != nil {
			b = append(b, p[i])
		}
	}
	if b == nil {
		return p
	}
	return string(b)
}

func unhex(h, l byte) (byte, bool) {
	v := func(c byte) (byte, bool) {
		switch {
		case c >= '0' && c <= '9':
			return c - '0', true
		case c >= 'a' && c <= 'f':
			return c - 'a' + 10, true
		case c >= 'A' && c <= 'F':
			return c - 'A' + 10, true
		}
		return 0, false
	}
	a, ok1 := v(h)
	b, ok2 := v(l)
	return a<<4 | b, ok1 && ok2
}

func unreserved(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '.' || c == '_' || c == '~'
}

// needsCleaning reports whether p has a "." or ".." segment or an empty
// segment inside (a doubled slash).
func needsCleaning(p string) bool {
	for i, seg := range strings.Split(p, "/") {
		switch {
		case seg == "." || seg == "..":
			return true
		case seg == "" && i > 0 && i < strings.Count(p, "/"):
			return true
		}
	}
	return false
}
