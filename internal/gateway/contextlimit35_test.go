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

// contextScript sends one long chat turn to reach's model proxy (its URL
// the first argument) with the openai SDK and with the AI SDK (retries
// at their defaults), and prints what each surfaced: the status and the
// message.
const contextScript = `
import OpenAI from "openai";
import { generateText } from "ai";
import { createOpenAI } from "@ai-sdk/openai";
const base = process.argv[2];
const long = "the quarterly figures again ".repeat(2000);
const out = {};
try {
  await new OpenAI({ baseURL: base, apiKey: "unused" }).chat.completions.create({ model: "small", messages: [{ role: "user", content: long }] });
  out.openai = { status: 200 };
} catch (e) { out.openai = { status: e.status, message: String(e.message) }; }
try {
  await generateText({ model: createOpenAI({ baseURL: base, apiKey: "unused" }).chat("small"), prompt: long });
  out.aisdk = { status: 200 };
} catch (e) { out.aisdk = { status: e.statusCode ?? e.lastError?.statusCode, message: String(e.message) }; }
console.log(JSON.stringify(out));
`

// TestFrameworksContextLimit35 (model.context_limits): a turn past the
// listed model's context window, sent by the openai SDK and by the AI SDK
// with their default retries, is refused by reach once each (no retry:
// 403 with x-should-retry: false), the model never asked, and each SDK
// surfaces reach's words: the window and to shorten the history. Before,
// the turn was sent to the model.
func TestFrameworksContextLimit35(t *testing.T) {
	dir, node := frameworksCacheOf(t, "openai", "ai", "@ai-sdk/openai")
	var asked, served atomic.Int64
	ms := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		asked.Add(1)
		twiceModel{}.ServeHTTP(w, r)
	}))
	t.Cleanup(ms.Close)
	cfg, err := config.Parse([]byte(fmt.Sprintf("model: {base_url: '%s/v1', name: small, context_limits: {small: 4000}}\n", ms.URL)), os.LookupEnv)
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
	script := writeScript(t, dir, "reach-context35", []byte(contextScript))
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
	for _, sdk := range []string{"openai", "aisdk"} {
		r := out[sdk]
		if r.Status != http.StatusForbidden || !strings.Contains(r.Message, "context window") || !strings.Contains(r.Message, "Shorten the conversation's history") {
			t.Errorf("%s surfaced %d %q, want 403 with reach's words", sdk, r.Status, r.Message)
		}
	}
	if n := served.Load(); n != 2 {
		t.Errorf("reach served %d model turns, want 2 (one an SDK, no retry)", n)
	}
	if n := asked.Load(); n != 0 {
		t.Errorf("the model was asked %d times, want 0", n)
	}
}
