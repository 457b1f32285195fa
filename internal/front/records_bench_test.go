package front

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/agentreach/reach"
	"github.com/agentreach/reach/internal/link"
	"github.com/agentreach/reach/internal/mcpwire"
	"github.com/agentreach/reach/internal/store"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// BenchmarkFastCallSession: a tools/call on a known session through the
// /mcp handler (the fast lane as net/http serves it), with its sessions
// recorded in a store and without: a known session's call never reads the
// store, and marks its use with a flag.
//
// Each call has arguments of its own (the same call again would be
// refused as a loop). Run the two one after the other, a fixed number of
// calls each, in processes of their own (one session's request grows
// with its calls):
//
//	go test -c -o front.test ./internal/front
//	for i in 1 2 3 4 5 6 7 8; do for v in off on; do
//		./front.test -test.run '^$' -test.bench "FastCallSession/records=$v" -test.benchtime 20000x -test.benchmem
//	done; done | benchstat -col /records -
func BenchmarkFastCallSession(b *testing.B) {
	for _, recorded := range []bool{false, true} {
		name := "records=off"
		if recorded {
			name = "records=on"
		}
		b.Run(name, func(b *testing.B) {
			rt := reach.New(nil)
			rt.MustRegister(echoTool)
			life, cancel := context.WithCancel(context.Background())
			defer cancel()
			owned := link.NewOwned(life, rt, time.Minute, link.Budgets{})
			defer owned.EndAll()
			o := &Options{Runtime: rt, Owned: owned, Choices: &link.ModelChoices{}, Tools: allTools{rt}, Levels: &Levels{}, IdleAfter: time.Minute}
			if recorded {
				o.Records = store.NewMemory()
			}
			s := New(o)
			s.SyncTools()
			defer s.Close()
			h := s.Handler()
			srv := httptest.NewServer(h)
			defer srv.Close()
			c := mcp.NewClient(&mcp.Implementation{Name: "bench", Version: "1"}, nil)
			cs, err := c.Connect(b.Context(), &mcp.StreamableClientTransport{Endpoint: srv.URL, DisableStandaloneSSE: true},
				&mcp.ClientSessionOptions{ProtocolVersion: mcpwire.SessionProtocol})
			if err != nil {
				b.Fatal(err)
			}
			defer cs.Close()
			hd := http.Header{}
			hd.Set(mcpwire.HeaderSession, cs.ID())
			hd.Set(mcpwire.HeaderProtocol, mcpwire.SessionProtocol)
			hd.Set("Content-Type", "application/json")
			hd.Set("Accept", "application/json, text/event-stream")
			n := 0
			for b.Loop() {
				n++
				body := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hi ` + strconv.Itoa(n) + `"}}}`
				r := httptest.NewRequest(http.MethodPost, "/", strings.NewReader(body))
				r.Header = hd
				w := httptest.NewRecorder()
				h.ServeHTTP(w, r)
				if w.Code != http.StatusOK {
					b.Fatalf("status %d: %s", w.Code, w.Body)
				}
			}
			if s.FastCalls() == 0 {
				b.Fatal("the calls did not take the fast lane")
			}
		})
	}
}
