package front

import (
	"bufio"
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentreach/reach"
	"github.com/agentreach/reach/internal/link"
	"github.com/agentreach/reach/internal/mcpwire"
)

// holdConnect is a log handler that holds the first SDK log line of a
// session being connected ("server session connected", which the SDK
// logs once the session is in its server's list but before its connect
// has the session to end it by): held tells that it is held, release
// lets it go on.
type holdConnect struct {
	once    *sync.Once
	held    chan struct{}
	release chan struct{}
}

func (h holdConnect) Enabled(context.Context, slog.Level) bool { return true }
func (h holdConnect) WithAttrs([]slog.Attr) slog.Handler       { return h }
func (h holdConnect) WithGroup(string) slog.Handler            { return h }
func (h holdConnect) Handle(_ context.Context, r slog.Record) error {
	if r.Message == "server session connected" {
		h.once.Do(func() {
			close(h.held)
			<-h.release
		})
	}
	return nil
}

// shutdownServer is a front whose SDK log lines go to hold, served.
func shutdownServer(t *testing.T, hold holdConnect) (*Server, string) {
	t.Helper()
	rt := reach.New(nil)
	rt.MustRegister(echoTool)
	life, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	owned := link.NewOwned(life, rt, time.Minute, link.Budgets{Default: &reach.Budget{}})
	t.Cleanup(owned.EndAll)
	s := New(&Options{Runtime: rt, Owned: owned, Choices: &link.ModelChoices{}, Tools: allTools{rt}, Levels: &Levels{},
		Logger: slog.New(hold)})
	s.SyncTools()
	t.Cleanup(s.Close)
	srv := httptest.NewServer(s.Handler())
	t.Cleanup(srv.Close)
	return s, srv.URL
}

// sdkSessions counts the SDK's sessions of s.
func sdkSessions(s *Server) int {
	n := 0
	for range s.MCP().Sessions() {
		n++
	}
	return n
}

// waitNoSessions waits, for up to the test's deadline, until the SDK
// keeps no session of s.
func waitNoSessions(t *testing.T, s *Server) {
	t.Helper()
	for sdkSessions(s) != 0 {
		if dl, ok := t.Deadline(); ok && time.Until(dl) < time.Second {
			t.Fatalf("the SDK still keeps %d sessions after Close", sdkSessions(s))
		}
		time.Sleep(time.Millisecond)
	}
}

// Close while a client's initialize has its session in the SDK's list but
// not yet connected (the SDK's connect has not returned it): Close leaves
// that session alone (closing it there ended it with no session to end,
// a nil pointer in the SDK that crashed the process), the initialize is
// refused as the server shutting down, and the SDK drops the session.
func TestCloseWhileSessionConnects(t *testing.T) {
	hold := holdConnect{once: &sync.Once{}, held: make(chan struct{}), release: make(chan struct{})}
	s, url := shutdownServer(t, hold)
	answer := make(chan string, 1)
	go func() {
		body := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"` + mcpwire.SessionProtocol +
			`","capabilities":{},"clientInfo":{"name":"late","version":"1"}}}`
		req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			answer <- err.Error()
			return
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		answer <- string(b)
	}()
	select {
	case <-hold.held:
	case got := <-answer:
		// Bounded, not hung: an SDK that no longer logs this line inside
		// bind answers the initialize with nothing held.
		t.Fatalf("the initialize was answered (%q) with no session held in the SDK's connect: the SDK no longer logs %q there; hold it elsewhere",
			got, "server session connected")
	}
	s.Close()
	close(hold.release)
	got := <-answer
	if !strings.Contains(got, "shutting down") || !strings.Contains(got, `"error"`) {
		t.Errorf("an initialize under Close was answered %q, want an error saying the server is shutting down", got)
	}
	waitNoSessions(t, s)
}

// Close ends an /sse stream whose client has not initialized its session
// yet: the stream's GET returns, and the SDK keeps no session.
func TestCloseEndsUninitializedSSEStream(t *testing.T) {
	hold := holdConnect{once: &sync.Once{}, held: make(chan struct{}), release: make(chan struct{})}
	close(hold.release)
	s, url := shutdownServer(t, hold)
	resp, err := http.Get(strings.TrimSuffix(url, "/") + SSEPath)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	rd := bufio.NewReader(resp.Body)
	for {
		line, err := rd.ReadString('\n')
		if err != nil {
			t.Fatalf("the stream ended before its endpoint event: %v", err)
		}
		if strings.HasPrefix(line, "event: endpoint") {
			break
		}
	}
	s.Close()
	if _, err := io.Copy(io.Discard, rd); err != nil {
		t.Logf("the stream ended with %v", err)
	}
	waitNoSessions(t, s)
	// A stream opened after Close is refused.
	resp2, err := http.Get(strings.TrimSuffix(url, "/") + SSEPath)
	if err != nil {
		t.Fatal(err)
	}
	resp2.Body.Close()
	if resp2.StatusCode != http.StatusServiceUnavailable {
		t.Errorf("an /sse stream opened after Close got %d, want 503", resp2.StatusCode)
	}
}
