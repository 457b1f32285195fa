// Package reachmeta names reach's own metadata keys ("reach/request",
// "reach/frame", "reach/status", "reach/error", ...). They are reach's word:
// a client links its calls by them and takes reach/status "refused" (or an
// A2A reach/refusal) for reach's refusal, so neither an upstream nor an
// agent nor a caller writes them for reach.
package reachmeta

import (
	"maps"
	"strings"
)

// Prefix begins every key of reach's own.
const Prefix = "reach/"

// IsKey reports whether k is one of reach's metadata keys.
func IsKey(k string) bool { return strings.HasPrefix(k, Prefix) }

// Without returns md without reach's keys: md itself when it has none,
// else a copy (md may be another's, or shared).
func Without(md map[string]any) map[string]any {
	for k := range md {
		if IsKey(k) {
			c := maps.Clone(md)
			maps.DeleteFunc(c, func(k string, _ any) bool { return IsKey(k) })
			return c
		}
	}
	return md
}
