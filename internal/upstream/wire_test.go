package upstream

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agentreach/reach/internal/config"
	"github.com/agentreach/reach/internal/redact"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestErrorBodyCutInsideSecretMasked: an upstream's HTTP error to a call
// is passed on with the first 512 bytes of its body, and that cut may fall
// inside a secret the body spells (an endpoint echoing the token it was
// sent). The body was masked only later, in the error's message, where
// the runtime ends it with a period: its cut end, the secret's first part,
// was no text's end then, and reached the model. Each cut from 8 bytes
// into the secret to its last byte shows no 8 bytes of it in a row.
func TestErrorBodyCutInsideSecretMasked(t *testing.T) {
	const secret = "sk-live-ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789abcd"
	var pad int
	sdk := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return echoServer() }, nil)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		if bytes.Contains(b, []byte(`"tools/call"`)) {
			w.WriteHeader(http.StatusInternalServerError)
			io.WriteString(w, strings.Repeat("x", pad)+secret+" was refused")
			return
		}
		r.Body = io.NopCloser(bytes.NewReader(b))
		sdk.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	red, err := redact.New(&redact.Options{Secrets: []string{secret}})
	if err != nil {
		t.Fatal(err)
	}
	p := newPoolMasking(t, &config.Config{Upstreams: []config.Upstream{{Name: "up", URL: srv.URL}}}, red)
	for pad = 512 - len(secret) + 1; pad <= 512-8; pad++ {
		msg := echo(t, p, "up__echo", "hi")
		if !strings.Contains(msg, "500") {
			t.Fatalf("padded %d: %q, want the upstream's 500", pad, msg)
		}
		for i := 0; i+8 <= len(secret); i++ {
			if strings.Contains(msg, secret[i:i+8]) {
				t.Fatalf("padded %d: the error shows %q of the secret: ...%s", pad, secret[i:i+8], msg[max(0, len(msg)-80):])
			}
		}
	}
}

// TestToolNamedBySecretSkipped: an upstream's tool whose name spells a
// secret (a masked name could not be called) is not offered: its name went
// to every client's model as it was, the rest of its definition masked. A
// name that only ends in a secret's start is offered: the redactor masks
// such an end in a text (cut mid-secret), and the check asked it, so a
// header secret flood-test hid the tool f__flood.
func TestToolNamedBySecretSkipped(t *testing.T) {
	const secret = "sk-live-ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789abcd"
	s := echoServer()
	mcp.AddTool(s, &mcp.Tool{Name: "key_" + secret, Description: "Its name is a key."},
		func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, any, error) {
			return &mcp.CallToolResult{}, nil, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: secret[:12], Description: "Its name begins the key."},
		func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, any, error) {
			return &mcp.CallToolResult{}, nil, nil
		})
	srv := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, nil))
	t.Cleanup(srv.Close)
	red, err := redact.New(&redact.Options{Secrets: []string{secret}})
	if err != nil {
		t.Fatal(err)
	}
	p := newPoolMasking(t, &config.Config{Upstreams: []config.Upstream{{Name: "up", URL: srv.URL}}}, red)
	var names []string
	for _, tool := range p.Tools() {
		names = append(names, tool.Name)
	}
	slices.Sort(names)
	if want := []string{"up__echo", "up__" + secret[:12]}; !slices.Equal(names, want) {
		t.Errorf("tools %q, want %q", names, want)
	}
}

// TestPromptNamedBySecretSkipped: prompts share the tools' name check: one
// whose name holds a secret is not put on the gateway's server, one whose
// name only begins it is.
func TestPromptNamedBySecretSkipped(t *testing.T) {
	const secret = "sk-live-ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789abcd"
	s := echoServer()
	for _, name := range []string{"key_" + secret, secret[:12]} {
		s.AddPrompt(&mcp.Prompt{Name: name}, func(context.Context, *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
			return &mcp.GetPromptResult{}, nil
		})
	}
	srv := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, nil))
	t.Cleanup(srv.Close)
	red, err := redact.New(&redact.Options{Secrets: []string{secret}})
	if err != nil {
		t.Fatal(err)
	}
	p := newPoolMasking(t, &config.Config{Upstreams: []config.Upstream{{Name: "up", URL: srv.URL}}}, red)
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second) // a bound on a hang, no speed asked
	defer cancel()
	for p.Owner(true, "up__"+secret[:12]) == "" {
		select {
		case <-ctx.Done():
			t.Fatal("the prompt named by a secret's start was not offered")
		case <-time.After(10 * time.Millisecond):
		}
	}
	if o := p.Owner(true, "up__key_"+secret); o != "" {
		t.Errorf("the prompt named by the secret is offered, by %q", o)
	}
}
