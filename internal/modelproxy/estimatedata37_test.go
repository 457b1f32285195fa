package modelproxy

import (
	"strings"
	"testing"
)

// Only a base64 data URL (in an image part: TestAttack37DataURLInTextCountsAsText)
// counts its bytes four a token: a string that only
// begins "data:" (an SSE line in a tool's result, a message) is text, and
// counts as the same text without the prefix does, or more. Before, any
// string beginning "data:" counted four bytes a token: digits apart
// behind "data: " were a quarter of what they count.
func TestPromptEstimateDataPrefixIsText(t *testing.T) {
	body := func(text string) []byte {
		return []byte(`{"model":"m","messages":[{"role":"tool","content":"` + text + `"}]}`)
	}
	digits := strings.Repeat("7 ", 2000)
	for _, text := range []string{"data: " + digits, "data:" + digits, `data: {\"n\": ` + digits + `}`, "data:text/plain;base64," + digits} {
		if got, plain := promptTokens(body(text)), promptTokens(body(digits)); got < plain {
			t.Errorf("%.40q... estimated %d, under the %d of its text without the prefix", text, got, plain)
		}
	}
	b64 := strings.Repeat("QUJD", 4000)
	for _, url := range []string{"data:image/png;base64," + b64, "data:application/pdf;name=a.pdf;base64," + b64, `data:image\/png;base64,` + b64, "data:image/png;base64," + strings.Repeat(`QU\/D`, 4000)} {
		image := []byte(`{"model":"m","messages":[{"role":"user","content":[{"type":"image_url","image_url":{"url":"` + url + `"}}]}]}`)
		got := promptTokens(image)
		if limit := int64(len(image))/4 + 64; got > limit {
			t.Errorf("a data URL of %d bytes estimated %d, want four bytes a token (%d)", len(url), got, limit)
		}
	}
}
