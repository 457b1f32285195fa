package httpapi

import (
	"fmt"
	"net/http"
	"strings"

	"github.com/agentreach/reach/internal/httpjson"
)

// A program whose model client is pointed at reach sends it more than the
// agent's turns, and not always where the proxy is: an app that sets its
// OpenAI client's base URL to reach (OPENAI_BASE_URL) embeds, moderates and
// transcribes through that client too; a base URL that leaves out /v1 or
// doubles it puts every call at another path; a client of another model
// API (Anthropic's Messages, Gemini's generateContent, Ollama's /api) sends
// its own routes. Each got "There is nothing at POST /v1/embeddings.", and
// the SDKs show only the error's message, so the user read that and not
// the list of routes in the suggestion. modelAPICall recognises these
// calls by the route's shape (never by a client's name) and says in the
// message itself what reach serves and what to change.

// openAIRoutes are the first path segments of the OpenAI API's resources
// (under /v1): the three the proxy serves and those it does not forward.
var openAIRoutes = map[string]bool{
	"chat": true, "responses": true, "models": true, // served at /v1 (chat/completions)
	"embeddings": true, "completions": true, "moderations": true, "audio": true, "images": true, "files": true,
	"uploads": true, "batches": true, "fine_tuning": true, "vector_stores": true, "assistants": true,
	"threads": true, "realtime": true, "conversations": true, "containers": true, "evals": true,
}

// modelAPICall returns what to answer r, a request no route serves, when
// its path is a model API's route: the message (what happened and what to
// do, since SDKs show the message alone) and the suggestion (what to do).
func modelAPICall(r *http.Request) (msg, hint string, ok bool) {
	path := strings.TrimSuffix(r.URL.Path, "/")
	segs := strings.Split(strings.TrimPrefix(path, "/"), "/")
	proxy := "http://" + r.Host + "/v1"
	if r.TLS != nil {
		proxy = "https://" + r.Host + "/v1"
	}
	if len(segs) == 0 || segs[0] == "" {
		return "", "", false
	}
	const served = "POST /v1/chat/completions, POST /v1/responses and GET /v1/models"
	if api := otherAPI(r.Method, segs); api != "" {
		msg = fmt.Sprintf("%s %s is a call of %s; reach's model proxy serves OpenAI's API only (%s).", r.Method, path, api, served)
		hint = fmt.Sprintf("Use an OpenAI-compatible client (your framework's OpenAI or OpenAI-compatible model provider) with base URL %s; reach sends its turns to its model endpoint (model.base_url).", proxy)
		return msg + " " + hint, hint, true
	}
	for i, s := range segs {
		if !openAIRoutes[s] || (s == "chat" && (i+1 >= len(segs) || segs[i+1] != "completions")) {
			continue
		}
		base := "/" + strings.Join(segs[:i], "/")
		route := "/v1/" + strings.Join(segs[i:], "/")
		switch {
		case servedRoute(r.Method, segs[i:]) && base != "/v1":
			msg = fmt.Sprintf("There is nothing at %s %s: reach's model proxy is at /v1, and this client's base URL is %s.", r.Method, path, strings.TrimSuffix(strings.TrimSuffix(proxy, "/v1")+base, "/"))
			hint = fmt.Sprintf("Set the client's base URL to %s (its baseURL or base_url setting, or OPENAI_BASE_URL), where %s %s is.", proxy, r.Method, route)
		case s == "responses" || s == "chat":
			msg = fmt.Sprintf("Reach does not serve %s %s: it keeps no model answers to fetch, list or delete later.", r.Method, route)
			hint = "Read a turn's answer from the turn itself (stream it rather than run it in the background), and go on from it with previous_response_id or the conversation's items."
		default:
			msg = fmt.Sprintf("Reach's model proxy does not forward %s %s: it serves %s only.", r.Method, route, served)
			hint = "Send this call to the model endpoint itself (give this client the endpoint's own base URL and key), and keep reach's /v1 for the agent's chat completions or Responses turns."
		}
		return msg + " " + hint, hint, true
	}
	return "", "", false
}

// servedRoute reports whether method and route (the path from the OpenAI
// resource on) are one the proxy serves, at /v1.
func servedRoute(method string, route []string) bool {
	switch {
	case method == http.MethodPost && len(route) == 2 && route[0] == "chat" && route[1] == "completions":
		return true
	case method == http.MethodPost && len(route) == 1 && route[0] == "responses":
		return true
	case method == http.MethodGet && route[0] == "models":
		return true
	}
	return false
}

// otherAPI names the model API whose route segs is, when it is one of
// another vendor's that clients send to a base URL: Anthropic's Messages
// API (.../messages, .../messages/count_tokens, .../messages/batches,
// .../complete), Gemini's (.../models/NAME:generateContent and the other
// methods after a colon) and Ollama's (/api/chat, /api/generate, ...).
func otherAPI(method string, segs []string) string {
	n := len(segs)
	last := segs[n-1]
	if _, verb, ok := strings.Cut(last, ":"); ok && n >= 2 && segs[n-2] == "models" && verb != "" {
		return "Gemini's API (" + verb + ")"
	}
	if n == 2 && segs[0] == "api" {
		switch last {
		case "chat", "generate", "embed", "embeddings", "show", "pull":
			if method == http.MethodPost {
				return "Ollama's API"
			}
		case "tags", "ps", "version":
			if method == http.MethodGet {
				return "Ollama's API"
			}
		}
	}
	if method != http.MethodPost {
		return ""
	}
	for i := 1; i < n; i++ {
		if segs[i] == "messages" && segs[i-1] == "v1" && (i == n-1 || (i == n-2 && (last == "count_tokens" || last == "batches"))) {
			return "Anthropic's Messages API"
		}
	}
	if last == "complete" && n >= 2 && segs[n-2] == "v1" {
		return "Anthropic's Text Completions API"
	}
	return ""
}

// writeModelAPIError answers a model API's call reach does not serve: 404
// (which SDKs do not retry) in the error shape OpenAI's SDKs and the others
// read, the message saying what to do.
func writeModelAPIError(w http.ResponseWriter, msg, hint string) {
	// The answer may name the base URL the request's Host makes: a shared
	// cache must not give it to a client that asked at another Host.
	w.Header().Set("Cache-Control", "no-store")
	httpjson.Write(w, http.StatusNotFound, map[string]any{"error": map[string]any{
		"code": "not_found", "type": "invalid_request_error", "message": msg, "suggestion": hint}})
}
