package main

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
)

// An app whose OpenAI client was pointed at reach (base URL) with auth:
// keeps sending its OpenAI key (OPENAI_API_KEY, sk-...), which the SDKs
// show as "401 The API key is unknown or revoked.": the user took their
// OpenAI key for revoked. A credential that is no reach key at all now says
// so, and that the client sends a reach key while reach sends the model
// its own; a reach key unknown or revoked is still said to be that.
func TestNotAReachKeySaysWhatToSend(t *testing.T) {
	cfg := writeConfig(t, "listen: 127.0.0.1:0\nauth: {keys: true}\nmodel:\n  base_url: http://127.0.0.1:9/v1\n  api_key: sk-upstream\n")
	base, stop, _ := startServe(t, "--config", cfg)
	defer stop()
	ask := func(key string) (int, string) {
		req, _ := http.NewRequest("POST", base+"/v1/chat/completions", strings.NewReader(`{"model":"gpt-4o-mini","messages":[{"role":"user","content":"hi"}]}`))
		req.Header.Set("Authorization", "Bearer "+key)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		var e struct {
			Error struct{ Message string } `json:"error"`
		}
		json.Unmarshal(b, &e)
		return resp.StatusCode, e.Error.Message
	}
	status, msg := ask("sk-proj-0123456789abcdef")
	if status != http.StatusUnauthorized || !strings.Contains(msg, "not a reach API key") || !strings.Contains(msg, "model.api_key") || strings.Contains(msg, "revoked") {
		t.Errorf("an OpenAI key sent to reach: %d %q; want 401 saying it is not a reach API key, what to send, and that reach sends the model's own", status, msg)
	}
	status, msg = ask("rk_notakeyofthisgateway")
	if status != http.StatusUnauthorized || !strings.Contains(msg, "unknown or revoked") {
		t.Errorf("an unknown reach key: %d %q; want 401 unknown or revoked", status, msg)
	}
}
