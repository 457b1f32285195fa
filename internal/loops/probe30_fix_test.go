package loops

import (
	"fmt"
	"testing"
)

// TestCursorEmptyPagesWithMore: a listing filtered server-side hands back
// empty pages, each saying there is more and where it goes on. Nothing
// in them is named but their flags and cursor: the cursor moved is the
// only thing such a page can say, so three in a row are not a page
// handed back alike. A page of the same records under a re-encoded
// cursor still is (TestCursorUnderNext).
func TestCursorEmptyPagesWithMore(t *testing.T) {
	next := func(p int) string { return fmt.Sprintf("bmV4dF90czoxNzk2%06d", 512000+p*8640) }
	var ops []op
	for p := 0; p < 6; p++ {
		args := `{"channel":"C04INCIDENT","limit":50,"user":"U07KX"}`
		if p > 0 {
			args = fmt.Sprintf(`{"channel":"C04INCIDENT","cursor":"%s","limit":50,"user":"U07KX"}`, next(p-1))
		}
		msgs := `[]`
		if p == 0 || p == 5 {
			msgs = fmt.Sprintf(`[{"text":"rollback? (%d)","ts":"1796634%03d.000013","user":"U07KX"}]`, p, p)
		}
		ops = append(ops, call("conversations_history", args, fmt.Sprintf(`{"has_more":true,"messages":%s,"ok":true,"response_metadata":{"next_cursor":"%s"}}`, msgs, next(p))))
	}
	runCases(t, []testCase{{"empty pages, each with more after it", nil, ops}})
}
