package gateway

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/agentreach/reach/internal/config"
)

// estimateScript sends, through reach's model proxy (its URL the first
// argument), a prompt of digits one apart with the AI SDK and with the
// openai SDK, and a chat turn naming a file by id with the openai SDK
// (retries at their defaults), and prints what each surfaced.
const estimateScript = `
import OpenAI from "openai";
import { generateText } from "ai";
import { createOpenAI } from "@ai-sdk/openai";
const base = process.argv[2];
const digits = Array.from({ length: 1000 }, (_, i) => String(i % 10)).join(" ");
const out = {};
const client = new OpenAI({ baseURL: base, apiKey: "unused" });
try {
  await generateText({ model: createOpenAI({ baseURL: base, apiKey: "unused" }).chat("small"), prompt: digits });
  out.aisdk = { status: 200 };
} catch (e) { out.aisdk = { status: e.statusCode ?? e.lastError?.statusCode, message: String(e.message) }; }
try {
  await client.chat.completions.create({ model: "small", messages: [{ role: "user", content: digits }] });
  out.openai = { status: 200 };
} catch (e) { out.openai = { status: e.status, message: String(e.message) }; }
try {
  await client.chat.completions.create({ model: "small", messages: [{ role: "user", content: [
    { type: "text", text: "Summarize the report." }, { type: "file", file: { file_id: "file-report" } }] }] });
  out.file = { status: 200 };
} catch (e) { out.file = { status: e.status, message: String(e.message) }; }
console.log(JSON.stringify(out));
`

// TestFrameworksBudgetEstimate37: under a token budget of 1,500, a prompt
// of digits one apart (about 2,000 tokens to the model, 500 at four bytes
// a token) sent by the AI SDK and by the openai SDK, and a turn naming a
// file by id (counted as the model's context window, 128,000), are each
// refused by reach once (402, no retry), the model never asked, and each
// SDK surfaces reach's words. Before, the digits were sent and spent the
// budget past its end, and so was the file.
func TestFrameworksBudgetEstimate37(t *testing.T) {
	dir, node := frameworksCacheOf(t, "openai", "ai", "@ai-sdk/openai")
	var asked, served atomic.Int64
	ms := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		asked.Add(1)
		twiceModel{}.ServeHTTP(w, r)
	}))
	t.Cleanup(ms.Close)
	cfg, err := config.Parse([]byte(fmt.Sprintf("model: {base_url: '%s/v1', name: small}\nbudgets:\n  default: {tokens: 1500}\n", ms.URL)), os.LookupEnv)
	if err != nil {
		t.Fatal(err)
	}
	g := newTestGateway(t, cfg)
	h := g.Handler()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasSuffix(r.URL.Path, "/chat/completions") {
			served.Add(1)
		}
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	script := writeScript(t, dir, "reach-estimate37", []byte(estimateScript))
	cmd := exec.CommandContext(t.Context(), node, script, srv.URL+"/v1")
	cmd.Dir = dir
	raw, err := cmd.Output()
	if err != nil {
		t.Fatalf("the script: %v\n%s", err, raw)
	}
	var out map[string]struct {
		Status  int    `json:"status"`
		Message string `json:"message"`
	}
	if err := json.Unmarshal(raw, &out); err != nil {
		t.Fatalf("the script printed %s: %v", raw, err)
	}
	for _, c := range []struct{ turn, words string }{
		{"aisdk", "this prompt alone is about"}, {"openai", "this prompt alone is about"}, {"file", "Send the file's text"},
	} {
		r := out[c.turn]
		if r.Status != http.StatusPaymentRequired || !strings.Contains(r.Message, c.words) {
			t.Errorf("%s surfaced %d %q, want 402 with reach's words (%q)", c.turn, r.Status, r.Message, c.words)
		}
	}
	if n := served.Load(); n != 3 {
		t.Errorf("reach served %d model turns, want 3 (one a turn, no retry)", n)
	}
	if n := asked.Load(); n != 0 {
		t.Errorf("the model was asked %d times, want 0", n)
	}
}
