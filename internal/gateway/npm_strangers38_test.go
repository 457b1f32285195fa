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

// TestNPMOwnSessionResource runs the official TypeScript SDK client
// (testdata/npm-session38.mjs) against reach in front of the real
// server-everything: a client that can sample, whose calls run on an
// upstream session of its own, reads the resource its tool call made for
// that session (gzip-file-as-resource links to it): it was answered that
// the resource did not exist, since reach read it on the session it shares
// with other clients. Another such client still cannot read it.
func TestNPMOwnSessionResource(t *testing.T) {
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
		EchoB, Gzip, ReadA, ReadB map[string]any
		URI                       string
	}
	runNodeClient(t, cache, "npm-session38.mjs", "reach-npm-session38", base, "", &got)
	if got.URI == "" || got.Gzip["isError"] == true {
		t.Fatalf("everything__gzip-file-as-resource = %v, want a resource link", got.Gzip)
	}
	// "hello from a", gzipped, is a blob; its text is not in it.
	if blob, _ := path(got.ReadA, "contents", 0, "blob").(string); blob == "" || path(got.ReadA, "contents", 0, "uri") != got.URI {
		t.Errorf("client A reading %s = %v, want the gzip it made", got.URI, got.ReadA)
	}
	if got.EchoB["isError"] == true {
		t.Fatalf("client B's everything__echo = %v", got.EchoB)
	}
	if got.ReadB["thrown"] == nil {
		t.Errorf("client B read client A's session resource %s: %v", got.URI, got.ReadB)
	}

	// Under the policies, the read on the client's own session is asked of
	// them as any read is: a forbid of the resource refuses it, with its
	// reason.
	url, key := policyGateway(t, "everything", `
@id("calls")
permit (principal, action == Reach::Action::"call", resource)
when { principal.authenticated };

@id("everything")
permit (principal, action == Reach::Action::"read_resource", resource in Reach::Upstream::"everything")
when { principal.authenticated };

@id("not-made")
@reason("what a tool made is not for agents to read")
forbid (principal, action, resource == Reach::Resource::"demo://resource/session/session38.gz");
`, everything)
	got.ReadA = nil
	runNodeClient(t, cache, "npm-session38.mjs", "reach-npm-session38", url, key, &got)
	if got.URI == "" {
		t.Fatalf("under the policies, everything__gzip-file-as-resource = %v, want a resource link", got.Gzip)
	}
	if thrown, _ := got.ReadA["thrown"].(string); !strings.Contains(thrown, "what a tool made is not for agents to read") || got.ReadA["code"] != float64(-32010) {
		t.Errorf("under a forbid, client A reading %s = %v, want refused (-32010) with the forbid's reason", got.URI, got.ReadA)
	}
}
