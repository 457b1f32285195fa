package modelproxy

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/agentreach/reach/internal/config"
	"github.com/agentreach/reach/internal/link"
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

// A file part whose "type" (the key or its value) is written with \u
// escapes is a file part to the endpoint, which decodes them, as to
// fileRefs: the estimate's look for "type":"file" in the body's bytes
// must not miss it. Before, {"typ\u0065":"file","file":{"file_id":...}}
// counted the bytes of its id, not the model's window, and a budget of
// 2,000 tokens sent a turn that names a file of any size.
func TestAttack37EscapedFilePartCountsAsTheWindow(t *testing.T) {
	p := New(&Options{Model: &config.ModelConfig{Name: "m"}, Choices: &link.ModelChoices{}})
	for _, c := range []struct {
		api  apiKind
		body string
	}{
		{chatAPI, `{"model":"m","messages":[{"role":"user","content":[{"typ\u0065":"file","file":{"file_id":"file-abc"}}]}]}`},
		{chatAPI, `{"model":"m","messages":[{"role":"user","content":[{"type":"fil\u0065","file":{"file_id":"file-abc"}}]}]}`},
		{chatAPI, `{"model":"m","messages":[{"role":"user","content":[{"type":"\u0066\u0069\u006c\u0065","file":{"file_id":"file-abc"}}]}]}`},
		{responsesAPI, `{"model":"m","input":[{"role":"user","content":[{"type":"input\u005ffile","file_id":"file-abc"}]}]}`},
		{responsesAPI, `{"model":"m","input":[{"role":"user","content":[{"\u0074ype":"input_file","file_url":"https://example.com/a.pdf"}]}]}`},
	} {
		var body map[string]json.RawMessage
		if err := json.Unmarshal([]byte(c.body), &body); err != nil {
			t.Fatal(err)
		}
		if got := p.promptEstimate(c.api, body, nil, "m").budget(); got < defaultFileWindow {
			t.Errorf("%s estimated %d, want the model's window (%d): it names a file", c.body, got, defaultFileWindow)
		}
	}
}

// json.Marshal's own escapes (<, >, &) do not make the estimate read a
// body for files again: only an escaped letter or '_' does.
func TestAttack37HTMLEscapesAreNotLetters(t *testing.T) {
	if escapesALetter([]byte(`{"text":"a \u003cb\u003e \u0026 \u2028 \\u0026"}`)) {
		t.Error("json.Marshal's escapes taken for an escaped letter")
	}
	for _, b := range []string{`"typ\u0065"`, `"input\u005ffile"`, `"\u0046ILE"`} {
		if !escapesALetter([]byte(b)) {
			t.Errorf("%s: its escaped letter missed", b)
		}
	}
}

// The Responses API takes a function call's output as parts too
// (function_call_output's output: input_text, input_image, input_file):
// a file there is read by the model as one in a message is, and counts as
// the window; an image there as an image. Before, only an item's content
// was read: a tool's output naming a file by id counted its id's bytes.
func TestAttack37FileInFunctionCallOutputCountsAsTheWindow(t *testing.T) {
	p := New(&Options{Model: &config.ModelConfig{Name: "m"}, Choices: &link.ModelChoices{}})
	var body map[string]json.RawMessage
	json.Unmarshal([]byte(`{"model":"m","input":[{"type":"function_call","call_id":"c1","name":"get","arguments":"{}"},`+
		`{"type":"function_call_output","call_id":"c1","output":[{"type":"input_file","file_id":"file-abc"}]}]}`), &body)
	if got := p.promptEstimate(responsesAPI, body, nil, "m").budget(); got < defaultFileWindow {
		t.Errorf("a file in a function call's output estimated %d, want the model's window (%d)", got, defaultFileWindow)
	}
	json.Unmarshal([]byte(`{"model":"m","input":[{"type":"function_call_output","call_id":"c1","output":[{"type":"input_image","image_url":"https://example.com/a.png"}]}]}`), &body)
	if got := imageTokens(responsesAPI, body); got < imageTokensHigh-32 {
		t.Errorf("an image in a function call's output counted %d past its bytes, want about %d", got, imageTokensHigh)
	}
}

// Numbers outside the JSON's strings (a tool schema's enum, its defaults
// and examples) are text to the model, which reads a tool's schema
// rendered with them: a number is a token at least (one a run of three
// digits), as it is in a message. Before, they counted as the JSON's
// punctuation, a quarter of a token a byte: a schema's enum of 20,000
// six-digit numbers was estimated 35,086 tokens, under the 40,000 of its
// digits alone (and the separators between them).
func TestAttack37NumbersOutsideStringsCountAsDigits(t *testing.T) {
	var enum strings.Builder
	const n = 20000
	for i := range n {
		if i > 0 {
			enum.WriteByte(',')
		}
		fmt.Fprintf(&enum, "%d", 100000+i*7919%900000)
	}
	body := `{"model":"m","messages":[{"role":"user","content":"pick"}],"tools":[{"type":"function","function":{"name":"pick","parameters":{"type":"object","properties":{"n":{"type":"integer","enum":[` + enum.String() + `]}}}}}]}`
	// Each number is two pieces of three digits, as in text.
	if got := promptTokens([]byte(body)); got < 2*n {
		t.Errorf("an enum of %d six-digit numbers estimated %d tokens, under the %d of its digits as text", n, got, 2*n)
	}
	if got, text := promptTokens([]byte(`{"a":[1.5,-2.25e3]}`)), promptTokens([]byte(`{"a":"1.5 -2.25e3"}`)); got < text-1 {
		t.Errorf("numbers estimated %d, under the %d of their text", got, text)
	}
}
