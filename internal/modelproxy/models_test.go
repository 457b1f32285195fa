package modelproxy

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/agentreach/reach/internal/config"
	"github.com/agentreach/reach/internal/redact"
)

// TestModelsPassedThrough: GET /v1/models and GET /v1/models/{id} (the
// OpenAI SDKs' models.list and models.retrieve, and what a tool set to an
// OpenAI-compatible base URL asks first) are answered with the endpoint's
// answer to GET models[/{id}] under its base URL, its query kept, secrets
// masked, its status passed on. The endpoint gets model.api_key when one is
// configured (never the client's), else the client's Authorization, unless
// the gateway authenticates its clients (their key is reach's). Before,
// reach answered 404 "There is nothing at GET /v1/models".
func TestModelsPassedThrough(t *testing.T) {
	const list = `{"object":"list","data":[{"id":"gpt-4o-mini","object":"model","owned_by":"` + respSecret + `"}]}`
	var mu sync.Mutex
	var got []string // path?query authorization
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		got = append(got, r.Method+" "+r.URL.RequestURI()+" "+r.Header.Get("Authorization"))
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		switch r.URL.Path {
		case "/v1/models":
			io.WriteString(w, list)
		case "/v1/models/org/m-1":
			io.WriteString(w, `{"id":"org/m-1","object":"model"}`)
		default:
			w.WriteHeader(http.StatusNotFound)
			io.WriteString(w, `{"error":{"message":"The model does not exist","type":"invalid_request_error","code":"model_not_found"}}`)
		}
	}))
	defer up.Close()
	red, err := redact.New(&redact.Options{Secrets: []string{respSecret}})
	if err != nil {
		t.Fatal(err)
	}
	get := func(p *Proxy, path, authz string) (int, string) {
		t.Helper()
		srv := httptest.NewServer(p)
		defer srv.Close()
		req, _ := http.NewRequest("GET", srv.URL+path, nil)
		if authz != "" {
			req.Header.Set("Authorization", authz)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	for _, c := range []struct {
		name          string
		key           string
		authenticates bool
		client, want  string // the client's Authorization, the endpoint's
	}{
		{"model.api_key", "sk-reach", false, "Bearer sk-client", "Bearer sk-reach"},
		{"the client's key", "", false, "Bearer sk-client", "Bearer sk-client"},
		{"a reach key", "", true, "Bearer rk_alice", ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			mu.Lock()
			got = nil
			mu.Unlock()
			p := New(&Options{Model: &config.ModelConfig{BaseURL: up.URL + "/v1?api-version=2", APIKey: config.Secret(c.key)}, Redactor: red, Authenticates: c.authenticates})
			code, b := get(p, "/v1/models", c.client)
			var l struct {
				Object string
				Data   []struct{ ID string }
			}
			if err := json.Unmarshal([]byte(b), &l); code != 200 || err != nil || l.Object != "list" || len(l.Data) != 1 || l.Data[0].ID != "gpt-4o-mini" {
				t.Errorf("GET /v1/models: %d %s", code, b)
			}
			if strings.Contains(b, respSecret) {
				t.Errorf("the list shows a secret: %s", b)
			}
			if code, b := get(p, "/v1/models/org/m-1", c.client); code != 200 || !strings.Contains(b, `"id":"org/m-1"`) {
				t.Errorf("GET /v1/models/org/m-1: %d %s", code, b)
			}
			if code, b := get(p, "/v1/models/nope", c.client); code != 404 || !strings.Contains(b, "model_not_found") {
				t.Errorf("GET /v1/models/nope: %d %s, want the endpoint's 404", code, b)
			}
			want := []string{
				"GET /v1/models?api-version=2 " + c.want,
				"GET /v1/models/org/m-1?api-version=2 " + c.want,
				"GET /v1/models/nope?api-version=2 " + c.want,
			}
			mu.Lock()
			defer mu.Unlock()
			if strings.Join(got, "\n") != strings.Join(want, "\n") {
				t.Errorf("the endpoint was asked:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
			}
		})
	}
	// An id that would leave models/ is refused before the endpoint is
	// asked with its key.
	mu.Lock()
	got = nil
	mu.Unlock()
	p0 := New(&Options{Model: &config.ModelConfig{BaseURL: up.URL + "/v1", APIKey: "sk-reach"}})
	for _, path := range []string{"/v1/models/../files", "/v1/models/a/../../files", "/v1/models/a//b", "/v1/models/./m"} {
		if code, b := get(p0, path, ""); code != 400 || !strings.Contains(b, "bad_model_id") {
			t.Errorf("GET %s: %d %s, want 400 bad_model_id", path, code, b)
		}
	}
	mu.Lock()
	if len(got) != 0 {
		t.Errorf("the endpoint was asked %q", got)
	}
	mu.Unlock()
	// An endpoint that does not answer: a 502 that says what to do, and
	// nothing of its address.
	dead := httptest.NewServer(http.NotFoundHandler())
	deadURL := dead.URL
	dead.Close()
	p := New(&Options{Model: &config.ModelConfig{BaseURL: deadURL + "/v1"}})
	if code, b := get(p, "/v1/models", ""); code != http.StatusBadGateway || !strings.Contains(b, "model_unreachable") || !strings.Contains(b, "check model.base_url") || strings.Contains(b, deadURL) {
		t.Errorf("an endpoint that does not answer: %d %s", code, b)
	}
	// No model configured: the proxy's 404 that says to configure one.
	if code, b := get(New(&Options{}), "/v1/models", ""); code != 404 || !strings.Contains(b, "no_model") {
		t.Errorf("no model: %d %s", code, b)
	}
}

// TestModelIDSentEscaped: a model's id is passed on as the id the client
// named, each segment escaped, so an id that holds an escaped dot or slash
// (GET /v1/models/%252e%252e/%252e%252e/files, id "%2e%2e/%2e%2e/files")
// stays under models/ at the endpoint. It was joined unescaped, and the
// endpoint, which decodes %2e as ".", was asked for /v1/files with
// model.api_key.
func TestModelIDSentEscaped(t *testing.T) {
	var mu sync.Mutex
	var got []string // the endpoint's decoded paths
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		got = append(got, r.URL.Path)
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"object":"model"}`)
	}))
	defer up.Close()
	srv := httptest.NewServer(New(&Options{Model: &config.ModelConfig{BaseURL: up.URL + "/v1", APIKey: "sk-reach"}}))
	defer srv.Close()
	for _, path := range []string{"/v1/models/%252e%252e/%252e%252e/files", "/v1/models/a%252F..%252F..%252Ffiles", "/v1/models/ft:gpt-4o:org%3Fx"} {
		resp, err := http.Get(srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
	want := []string{"/v1/models/%2e%2e/%2e%2e/files", "/v1/models/a%2F..%2F..%2Ffiles", "/v1/models/ft:gpt-4o:org?x"}
	mu.Lock()
	defer mu.Unlock()
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("the endpoint was asked for:\n%s\nwant (the ids as named, under models/):\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}
