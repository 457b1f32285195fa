package modelproxy

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentreach/reach"
	"github.com/agentreach/reach/internal/config"
	"github.com/agentreach/reach/internal/link"
)

// TestModelKeyNotRedirectedElsewhere: an https model endpoint that
// redirects (307, the body sent again) to plain http on the same host and
// another port, or to another host, gets the call's Authorization, and the
// place it sends the call to does not: net/http kept it for any port and
// scheme of the same host, so a redirect to http:// put the endpoint's
// api_key (or the client's key) on the network in the clear. A redirect
// within the endpoint's origin keeps it. For chat completions (the
// gateway's key) and GET /v1/models (the client's key passed on).
func TestModelKeyNotRedirectedElsewhere(t *testing.T) {
	const answer = `{"id":"c1","object":"chat.completion","model":"m","choices":[{"index":0,"message":{"role":"assistant","content":"ok"},"finish_reason":"stop"}],"usage":{"prompt_tokens":1,"completion_tokens":1,"total_tokens":2}}`
	var mu sync.Mutex
	seen := map[string]string{} // where -> Authorization it got
	note := func(where string, r *http.Request) {
		mu.Lock()
		seen[where] = r.Header.Get("Authorization")
		mu.Unlock()
	}
	serve := func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json")
		if strings.HasSuffix(r.URL.Path, "/models") {
			io.WriteString(w, `{"object":"list","data":[]}`)
			return
		}
		io.WriteString(w, answer)
	}
	plain := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { note("plain", r); serve(w, r) }))
	defer plain.Close()
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { note("other host", r); serve(w, r) }))
	defer other.Close()
	otherURL, _ := url.Parse(other.URL)
	otherURL.Host = "localhost:" + otherURL.Port() // another host name of the machine
	var target string
	tls := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasPrefix(r.URL.Path, "/moved/") {
			note("same origin", r)
			serve(w, r)
			return
		}
		http.Redirect(w, r, target+r.URL.Path, http.StatusTemporaryRedirect)
	}))
	defer tls.Close()
	for _, c := range []struct{ name, to, where string }{
		{"down to plain http", plain.URL, "plain"},
		{"to another host", otherURL.String(), "other host"},
		{"within the origin", tls.URL + "/moved", "same origin"},
	} {
		for _, route := range []struct{ name, method, path, body, key, clientKey, want string }{
			{"chat", "POST", "/v1/chat/completions", `{"model":"m","messages":[{"role":"user","content":"go"}]}`, "sk-gateway-key-1", "", "Bearer sk-gateway-key-1"},
			{"models", "GET", "/v1/models", "", "", "Bearer sk-client-key-2", "Bearer sk-client-key-2"},
		} {
			t.Run(c.name+"/"+route.name, func(t *testing.T) {
				target = c.to
				mu.Lock()
				clear(seen)
				mu.Unlock()
				rt := reach.New(&reach.Options{})
				p := New(&Options{Model: &config.ModelConfig{BaseURL: tls.URL + "/v1", Name: "m", APIKey: config.Secret(route.key)},
					Client: tls.Client(), Choices: &link.ModelChoices{}, Models: rt, Breakers: rt,
					Owned: link.NewOwned(context.Background(), rt, time.Minute, link.Budgets{})})
				srv := httptest.NewServer(p)
				defer srv.Close()
				req, _ := http.NewRequest(route.method, srv.URL+route.path, strings.NewReader(route.body))
				req.Header.Set("Content-Type", "application/json")
				if route.clientKey != "" {
					req.Header.Set("Authorization", route.clientKey)
				}
				resp, err := http.DefaultClient.Do(req)
				if err != nil {
					t.Fatal(err)
				}
				b, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				if resp.StatusCode != http.StatusOK {
					t.Fatalf("status %d: %s", resp.StatusCode, b)
				}
				mu.Lock()
				defer mu.Unlock()
				got, ok := seen[c.where]
				switch {
				case !ok:
					t.Fatalf("the call did not reach %s (%v)", c.where, seen)
				case c.where == "same origin" && got != route.want:
					t.Errorf("within the origin the endpoint got Authorization %q, want %q", got, route.want)
				case c.where != "same origin" && got != "":
					t.Errorf("%s got the key: Authorization %q", c.where, got)
				}
			})
		}
	}
}
