package loops

import (
	"fmt"
	"testing"
)

// TestCursorUnderNext: an answer that hands its next page's cursor back
// under "next" (as many collection APIs do) is read as one under
// next_cursor is: the same works for each cursor, the fifth call is
// refused (TestCursorIgnored); pages that move go on.
func TestCursorUnderNext(t *testing.T) {
	works := func(from int) string {
		s := ""
		for i := from; i < from+4; i++ {
			if s != "" {
				s += ","
			}
			s += fmt.Sprintf(`{"objectNumber":"SK-A-%d","title":"Still Life %d"}`, 1800+i*13, i)
		}
		return "[" + s + "]"
	}
	next := func(p int) string { return fmt.Sprintf("eyJvIjo40LCJ0IjoxNzY1MTAwM%05dfQ", 10000+p*713) }
	pages := func(moving bool) []op {
		var ops []op
		for p := 0; p < 6; p++ {
			args := `{"pageSize":4,"q":"still life"}`
			if p > 0 {
				args = fmt.Sprintf(`{"cursor":"%s","pageSize":4,"q":"still life"}`, next(p-1))
			}
			from := 4
			if p == 0 {
				from = 0
			} else if moving {
				from = 4 * p
			}
			ops = append(ops, call("collection_search", args, fmt.Sprintf(`{"artObjects":%s,"count":212,"next":"%s"}`, works(from), next(p))))
		}
		return ops
	}
	stuck := pages(false)
	stuck[4] = refused(stuck[4], "repeat")
	runCases(t, []testCase{
		{"the same works for each cursor", nil, stuck[:5]},
		{"pages that move", nil, pages(true)},
	})
}
