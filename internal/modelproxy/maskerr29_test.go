package modelproxy

import (
	"bytes"
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/agentreach/reach"
	"github.com/agentreach/reach/internal/config"
	"github.com/agentreach/reach/internal/link"
	"github.com/agentreach/reach/internal/redact"
)

// failingRemote is a shared store whose lookups fail with an error that
// quotes what the store was given: a DSN with its password, and a key.
type failingRemote struct{ err error }

func (f failingRemote) Frame(context.Context, reach.FrameID) (string, []reach.Ancestor, error) {
	return "", nil, f.err
}

const (
	plantedKey  = "sk-planted-0123456789abcdef"
	plantedPass = "hunter2-store-pass"
)

func plantedError() error {
	return errors.New("dial postgres://reach:" + plantedPass + "@db.internal/reach?sslmode=disable: api_key=" + plantedKey + " refused")
}

func maskingProxy(t *testing.T, remote link.Remote, log io.Writer) *Proxy {
	t.Helper()
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		t.Errorf("the model was asked: %s", r.URL.Path)
	}))
	t.Cleanup(up.Close)
	red, err := redact.New(&redact.Options{Secrets: []string{plantedKey}})
	if err != nil {
		t.Fatal(err)
	}
	rt := reach.New(nil)
	owned := link.NewOwned(context.Background(), rt, time.Minute, link.Budgets{})
	if remote != nil {
		owned.WithRemote(remote)
	}
	return New(&Options{Model: &config.ModelConfig{BaseURL: up.URL + "/v1", Name: "gpt-test"}, Choices: &link.ModelChoices{},
		Models: rt, Breakers: rt, Owned: owned, Redactor: red, Logger: slog.New(slog.NewTextHandler(log, nil))})
}

func assertMasked(t *testing.T, what, s string) {
	t.Helper()
	for _, secret := range []string{plantedKey, plantedPass} {
		if strings.Contains(s, secret) {
			t.Errorf("%s holds %q: %s", what, secret, s)
		}
	}
}

// assertNoStoreText fails if s tells any of the store's own error.
func assertNoStoreText(t *testing.T, what, s string) {
	t.Helper()
	assertMasked(t, what, s)
	for _, text := range []string{"db.internal", "postgres://", "refused"} {
		if strings.Contains(s, text) {
			t.Errorf("%s tells the store's error (%q): %s", what, text, s)
		}
	}
}

// TestProxyInternalErrorMasked: the 500 a model turn gets when it cannot
// be placed in a request for a reason that is no refusal says what
// happened and what to do, without the error (a store's, a driver's own
// text), which the log has, its secrets masked.
func TestProxyInternalErrorMasked(t *testing.T) {
	var log bytes.Buffer
	p := maskingProxy(t, nil, &log)
	w := httptest.NewRecorder()
	p.internalError(w, plantedError())
	body := w.Body.String()
	if w.Code != http.StatusInternalServerError || !strings.Contains(body, `"code":"internal"`) ||
		!strings.Contains(body, "Nothing was sent to the model") {
		t.Fatalf("answer %d %s, want a 500 internal that says what happened", w.Code, body)
	}
	assertNoStoreText(t, "the answer", body)
	if !strings.Contains(log.String(), "model turn not placed") || !strings.Contains(log.String(), "db.internal") || !strings.Contains(log.String(), redact.Mask) {
		t.Fatalf("log %q, want the error logged, its secrets masked", log.String())
	}
	assertMasked(t, "the log", log.String())
}

// TestProxyLinkRefusalMasked: a turn naming a parent frame that the
// shared store fails to look up is refused (503, store_unavailable) as a
// served answer that says what to do and tells nothing of the store's
// error.
func TestProxyLinkRefusalMasked(t *testing.T) {
	var log bytes.Buffer
	p := maskingProxy(t, failingRemote{plantedError()}, &log)
	srv := httptest.NewServer(p)
	t.Cleanup(srv.Close)
	req, _ := http.NewRequest(http.MethodPost, srv.URL+"/v1/chat/completions",
		strings.NewReader(`{"model":"gpt-test","messages":[{"role":"user","content":"hi"}]}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set(link.HeaderParent, "00000000000000ff")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusServiceUnavailable || !strings.Contains(string(b), "store_unavailable") || !strings.Contains(string(b), "Try again") {
		t.Fatalf("answer %d %s, want a 503 store_unavailable that says to try again", resp.StatusCode, b)
	}
	assertNoStoreText(t, "the answer", string(b))
}
