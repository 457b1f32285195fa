package openai

import (
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// TestClient: the client speaks the chat completions wire format, and
// says what went wrong in an *Error.
func TestClient(t *testing.T) {
	var got Request
	var query string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/v1/chat/completions" || r.Header.Get("Authorization") != "Bearer k" {
			http.Error(w, "bad request line", 400)
			return
		}
		query = r.URL.RawQuery
		body, _ := io.ReadAll(r.Body)
		json.Unmarshal(body, &got)
		switch got.Model {
		case "m":
			io.WriteString(w, `{"choices":[{"message":{"role":"assistant","content":"","tool_calls":[{"id":"c1","type":"function","function":{"name":"get_order","arguments":"{\"id\":\"7\"}"}}]}}],"usage":{"prompt_tokens":12,"completion_tokens":3}}`)
		case "none":
			io.WriteString(w, `{"choices":[]}`)
		default:
			io.WriteString(w, `<html>`)
		}
	}))
	defer srv.Close()
	m := &Client{BaseURL: srv.URL + "/v1?api-version=1", APIKey: "k"}
	resp, err := m.Complete(t.Context(), &Request{Model: "m", Messages: []Message{{Role: "user", Content: "hi"}}})
	if err != nil {
		t.Fatal(err)
	}
	if got.Model != "m" || got.Messages[0].Content != "hi" || query != "api-version=1" {
		t.Errorf("request = %+v, query %q", got, query)
	}
	if tc := resp.Message.ToolCalls; len(tc) != 1 || tc[0].Function.Name != "get_order" || resp.Usage.PromptTokens != 12 {
		t.Errorf("response = %+v", resp)
	}
	for _, tc := range []struct {
		c                 *Client
		model, kind, says string
	}{
		{&Client{BaseURL: srv.URL + "/v1", APIKey: "wrong"}, "m", BadStatus, "400"},
		{m, "none", NotACompletion, "no choices"},
		{m, "html", NotACompletion, "decoding"},
		{&Client{BaseURL: "http://127.0.0.1:1/v1?key=secret"}, "m", Unreachable, "calling the model"},
	} {
		_, err := tc.c.Complete(t.Context(), &Request{Model: tc.model})
		var e *Error
		if !errors.As(err, &e) || e.Kind != tc.kind || !strings.Contains(err.Error(), tc.says) || strings.Contains(err.Error(), "secret") {
			t.Errorf("%s: error = %v, want a %s error saying %q (and no key)", tc.model, err, tc.kind, tc.says)
		}
	}
}

func TestChatURL(t *testing.T) {
	for base, want := range map[string]string{
		"http://h/v1":                    "http://h/v1/chat/completions",
		"http://h/v1/":                   "http://h/v1/chat/completions",
		"https://h/openai?api-version=2": "https://h/openai/chat/completions?api-version=2",
	} {
		if got := ChatURL(base); got != want {
			t.Errorf("ChatURL(%q) = %q, want %q", base, got, want)
		}
	}
}
