package gateway

import (
	"strings"
	"testing"
)

// TestNPMStrictClientLogging runs the official TypeScript SDK client on its
// strict setting (testdata/npm-logging38.mjs) against reach in front of
// the real server-everything:
//
//   - reach declares the logging capability: it takes logging/setLevel and
//     passes log messages on, and a client that holds a server to its
//     capabilities refused to send logging/setLevel without it;
//   - a client with an upstream session of its own (it can sample) gets
//     the log messages the upstream sends on that session outside any
//     call (server-everything's simulated logging, turned on by a tool
//     call, logs every 5 seconds after it returned): they were dropped;
//   - another such client gets none of them.
func TestNPMStrictClientLogging(t *testing.T) {
	if testing.Short() {
		t.Skip("starts node processes")
	}
	cache := npmCache(t)
	everything := startEverything(t, cache)
	base := serveNPM(t, `upstreams:
  - name: everything
    url: `+everything+`
`)
	var got struct {
		Logging              map[string]any
		SetLevelA, SetLevelB map[string]any
		Toggle, ToggleOff    map[string]any
		A, B                 struct {
			Logs []struct {
				Level, Data string
				AfterCall   bool
			}
			Errors []string
		}
	}
	runNodeClient(t, cache, "npm-logging38.mjs", "reach-npm-logging38", base, "", &got)
	if got.Logging == nil {
		t.Errorf("reach's capabilities have no logging")
	}
	if got.SetLevelA["thrown"] != nil || got.SetLevelB["thrown"] != nil {
		t.Fatalf("logging/setLevel: %v, %v; want both answered", got.SetLevelA, got.SetLevelB)
	}
	if got.Toggle["isError"] == true || got.Toggle["thrown"] != nil {
		t.Fatalf("everything__toggle-simulated-logging = %v", got.Toggle)
	}
	after := 0
	for _, l := range got.A.Logs {
		if l.AfterCall {
			after++
		}
		if !strings.Contains(l.Data, "-level message") && !strings.Contains(l.Data, "level-message") {
			t.Errorf("client A got a log message it did not turn on: %+v", l)
		}
	}
	if after < 2 {
		t.Errorf("client A got %d log messages after its call returned (all: %+v), want the two the upstream sent it within 30s", after, got.A.Logs)
	}
	for _, l := range got.B.Logs {
		t.Errorf("client B got a log message of client A's session: %+v", l)
	}
	for _, e := range append(got.A.Errors, got.B.Errors...) {
		t.Errorf("the client's onerror: %s", e)
	}
}
