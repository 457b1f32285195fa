package modelproxy

import (
	"encoding/base64"
	"math/rand/v2"
	"testing"
)

// A base64 data URL is counted four bytes a token only where the model
// takes it as an image or a file (an image part's url, a file part's
// file_data): in a message's text it is text, and the model counts its
// random letters and digits as text (more than half a token a character).
// Before, a prompt whose text began "data:x;base64," counted its bytes
// four a token wherever it stood, so a megabyte of text passed a budget
// at a quarter of a token a byte, less than half of what it is.
func TestAttack37DataURLInTextCountsAsText(t *testing.T) {
	raw := make([]byte, 30000)
	rng := rand.New(rand.NewPCG(37, 37))
	for i := range raw {
		raw[i] = byte(rng.Uint32())
	}
	b64 := base64.StdEncoding.EncodeToString(raw)
	plain := promptTokens([]byte(`{"model":"m","messages":[{"role":"user","content":"` + b64 + `"}]}`))
	for _, body := range []string{
		`{"model":"m","messages":[{"role":"user","content":"data:text/plain;base64,` + b64 + `"}]}`,
		`{"model":"m","messages":[{"role":"tool","tool_call_id":"c","content":"data:image/png;base64,` + b64 + `"}]}`,
		`{"model":"m","messages":[{"role":"user","content":[{"type":"text","text":"data:image/png;base64,` + b64 + `"}]}]}`,
		`{"model":"m","input":[{"role":"user","content":[{"type":"input_text","text":"data:image/png;base64,` + b64 + `"}]}]}`,
		`{"model":"m","messages":[{"role":"user","content":"{\"url\":\"data:image/png;base64,` + b64 + `\"}"}]}`,
	} {
		if got := promptTokens([]byte(body)); got < plain {
			t.Errorf("%.70s... estimated %d, under the %d of its base64 as text (%d bytes)", body, got, plain, len(body))
		}
	}
	// Where the model takes it as an image or a file, four bytes a token.
	for _, body := range []string{
		`{"model":"m","messages":[{"role":"user","content":[{"type":"image_url","image_url":{"url":"data:image/png;base64,` + b64 + `"}}]}]}`,
		`{"model":"m","input":[{"role":"user","content":[{"type":"input_image","image_url":"data:image/png;base64,` + b64 + `"}]}]}`,
		`{"model":"m","messages":[{"role":"user","content":[{"type":"file","file":{"filename":"a.pdf","file_data":"data:application/pdf;base64,` + b64 + `"}}]}]}`,
		`{"model":"m","input":[{"role":"user","content":[{"type":"input_file","filename":"a.pdf","file_data":"data:application/pdf;base64,` + b64 + `"}]}]}`,
	} {
		if got, limit := promptTokens([]byte(body)), int64(len(body))/4+64; got > limit {
			t.Errorf("%.70s... estimated %d, want four bytes a token (%d)", body, got, limit)
		}
	}
}
