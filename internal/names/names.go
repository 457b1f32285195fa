// Package names measures how close two names are, for suggestions such as
// "did you mean get_order?".
package names

import (
	"iter"
	"sort"
	"strings"
)

// Closest returns up to n of candidates closest to name, closest first
// (then by name): those within an edit distance of max(3, len(name)/3),
// case aside, or that contain name or are contained in it.
func Closest(name string, candidates iter.Seq[string], n int) []string {
	type cand struct {
		name string
		d    int
	}
	var cs []cand
	for other := range candidates {
		d := Distance(strings.ToLower(name), strings.ToLower(other))
		if d <= max(3, len(name)/3) || strings.Contains(other, name) || strings.Contains(name, other) {
			cs = append(cs, cand{other, d})
		}
	}
	sort.Slice(cs, func(i, j int) bool { return cs[i].d < cs[j].d || (cs[i].d == cs[j].d && cs[i].name < cs[j].name) })
	var out []string
	for i := 0; i < len(cs) && i < n; i++ {
		out = append(out, cs[i].name)
	}
	return out
}

// Distance returns the Levenshtein distance between a and b (bytes). Names
// longer than 64 bytes are never close: it returns a large number for them.
func Distance(a, b string) int {
	if len(a) > 64 || len(b) > 64 {
		return 1 << 20
	}
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

// List spells items as a reader reads them: "a", "a and b", "a, b and c",
// with conj ("and", "or") before the last; "" for none. For the lists in
// messages, where %v would print a Go slice ("[a b c]").
func List(items []string, conj string) string {
	switch len(items) {
	case 0:
		return ""
	case 1:
		return items[0]
	}
	return strings.Join(items[:len(items)-1], ", ") + " " + conj + " " + items[len(items)-1]
}
