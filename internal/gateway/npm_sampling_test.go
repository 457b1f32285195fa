package gateway

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// TestNPMSamplingAndCancel runs the official TypeScript SDK client
// (testdata/npm-sampling.mjs) against reach in front of the real
// server-everything:
//
//   - sampling: everything__trigger-sampling-request makes server-everything
//     ask for a completion; reach forwards it to the client that made the
//     call, which answers; the answer comes back in the tool's result, and
//     reach's graph has the completion as a model frame under the tool frame;
//   - cancel mid-call: everything__trigger-long-running-operation aborted by
//     the client (at its first progress notification, or once reach's API
//     shows it executing) rejects with the client's reason, no progress of
//     it reaches the client after the abort, the session goes on working,
//     and reach's graph shows the tool frame ended, not completed.
func TestNPMSamplingAndCancel(t *testing.T) {
	if testing.Short() {
		t.Skip("starts node processes")
	}
	cache := npmCache(t)
	everything := startEverything(t, cache)
	base := serveNPM(t, `upstreams:
  - name: everything
    url: `+everything+`
tools:
  everything__trigger-long-running-operation: {timeout: 2m}
`)

	src, err := os.ReadFile("testdata/npm-sampling.mjs")
	if err != nil {
		t.Fatal(err)
	}
	script := writeScript(t, cache, "reach-npm-sampling", src) // beside node_modules, so that its imports resolve
	// After each abort the client listens for 5s: two and a half steps of
	// the 30s, 15-step operation, in which progress reach should have
	// dropped would arrive.
	cctx, ccancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer ccancel()
	out, err := exec.CommandContext(cctx, "node", script, base+"/mcp", "5000").CombinedOutput()
	if err != nil {
		t.Fatalf("node client: %v\n%s", err, out)
	}
	t.Logf("node client: %s", out)
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	var got map[string]any
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &got); err != nil {
		t.Fatalf("node client printed %s", out)
	}
	answer, _ := got["answer"].(string)
	reason, _ := got["abortReason"].(string)

	// graph reads a request's call graph through the API; frame finds a
	// frame in it.
	graph := func(t *testing.T, id string) []any {
		t.Helper()
		code, body := do(t, "GET", base+"/v1/requests/"+id+"/graph?format=json", "", nil)
		if code != 200 {
			t.Fatalf("GET /v1/requests/%s/graph: %d %v", id, code, body)
		}
		frames, _ := body["frames"].([]any)
		return frames
	}
	frame := func(frames []any, match func(map[string]any) bool) map[string]any {
		for _, f := range frames {
			if m, ok := f.(map[string]any); ok && match(m) {
				return m
			}
		}
		return nil
	}
	listed := func(t *testing.T, id string) bool {
		t.Helper()
		code, body := do(t, "GET", base+"/v1/requests", "", nil)
		if code != 200 {
			t.Fatalf("GET /v1/requests: %d %v", code, body)
		}
		list, _ := body["requests"].([]any)
		for _, r := range list {
			if path(r, "id") == id {
				return true
			}
		}
		return false
	}

	t.Run("sampling", func(t *testing.T) {
		res := got["sampling"]
		text, _ := path(res, "content", 0, "text").(string)
		if path(res, "isError") == true || answer == "" || !strings.Contains(text, answer) {
			t.Fatalf("everything__trigger-sampling-request = %v, want the client's answer %q in it", res, answer)
		}
		sampled, _ := got["sampled"].([]any)
		if asked, _ := path(sampled, 0, "text").(string); len(sampled) != 1 || !strings.Contains(asked, "say something") {
			t.Fatalf("the client was asked %v, want one sampling/createMessage with the tool's prompt", got["sampled"])
		}
		id, _ := path(res, "_meta", "reach/request").(string)
		if id == "" || !listed(t, id) {
			t.Fatalf("the tool result names request %q; GET /v1/requests should list it", id)
		}
		frames := graph(t, id)
		tool := frame(frames, func(f map[string]any) bool {
			return f["kind"] == "tool" && f["name"] == "everything__trigger-sampling-request"
		})
		if tool == nil {
			t.Fatalf("no tool frame of everything__trigger-sampling-request in %v", frames)
		}
		if tool["status"] != "completed" {
			t.Errorf("the tool frame's status is %v, want completed", tool["status"])
		}
		model := frame(frames, func(f map[string]any) bool { return f["kind"] == "model" && f["parent"] == tool["id"] })
		if model == nil {
			t.Fatalf("no model frame under the tool frame %v in %v", tool["id"], frames)
		}
		if model["status"] != "completed" || model["ended"] == nil {
			t.Errorf("the model frame is %v (ended %v), want completed", model["status"], model["ended"])
		}
		// The sampling request the client got named that model frame.
		if p := path(sampled, 0, "meta", "reach/parent"); p != model["id"] {
			t.Errorf("the sampling request's _meta reach/parent is %v, want the model frame %v", p, model["id"])
		}
	})

	for _, c := range []struct{ key, what string }{
		{"cancelSampling", "a client that can sample, aborting at the first progress (the SDK's path upstream)"},
		{"cancelPlain", "a client that cannot sample, aborting at the first progress (the lean client upstream)"},
		{"cancelFront", "a call without a progress token, aborted once the API shows it executing (the lean front)"},
	} {
		t.Run(c.key, func(t *testing.T) {
			r, _ := got[c.key].(map[string]any)
			t.Logf("%s", c.what)
			if r["aborted"] != true {
				t.Fatalf("the client never aborted: %v", r)
			}
			if c.key == "cancelFront" && r["sawExecuting"] != true {
				t.Errorf("reach's graph never showed the call executing before the abort")
			}
			// The call rejected with the client's reason: it did not run
			// to its end.
			if rej, _ := r["rejected"].(string); r["resolved"] != nil || reason == "" || !strings.Contains(rej, reason) {
				t.Errorf("the aborted call: resolved %v, rejected %q, want a rejection with %q", r["resolved"], rej, reason)
			}
			if c.key != "cancelFront" {
				progress, _ := r["progress"].([]any)
				if len(progress) != 1 {
					t.Errorf("progress handler saw %v, want the one notification before the abort", progress)
				}
			}
			// Nothing on the wire after the abort (the script records every
			// progress notification its transport receives, handled or
			// not). server-everything ignores the cancel and goes on
			// sending progress to reach, which must drop it; a client
			// connected to server-everything directly gets it.
			wire, _ := r["wire"].([]any)
			for _, w := range wire {
				if path(w, "afterAbort") == true {
					t.Errorf("progress reached the client after the abort: %v (all: %v)", w, wire)
				}
			}
			if echo := r["echoAfter"]; path(echo, "isError") == true || path(echo, "content", 0, "text") != "Echo: still here" {
				t.Errorf("the session after the cancel: everything__echo = %v", echo)
			}
			errs, _ := r["errors"].([]any)
			for _, e := range errs {
				t.Logf("the client's onerror: %v", e)
			}
			// The tool frame ended, and not as completed. It is polled
			// until it ends: had reach not cancelled the call, it would
			// end completed when the operation does.
			id, _ := path(r["echoAfter"], "_meta", "reach/request").(string)
			if id == "" || !listed(t, id) {
				t.Fatalf("the echo after the cancel names request %q; GET /v1/requests should list it", id)
			}
			var long map[string]any
			deadline := time.Now().Add(90 * time.Second)
			for {
				long = frame(graph(t, id), func(f map[string]any) bool {
					return f["kind"] == "tool" && f["name"] == "everything__trigger-long-running-operation"
				})
				if long == nil {
					t.Fatalf("no frame of everything__trigger-long-running-operation in request %s", id)
				}
				if long["ended"] != nil || time.Now().After(deadline) {
					break
				}
				time.Sleep(100 * time.Millisecond)
			}
			if long["ended"] == nil {
				t.Fatalf("the cancelled call's frame never ended: %v", long)
			}
			if s := long["status"]; s != "cancelled" && s != "failed" {
				t.Errorf("the cancelled call's frame ended %v (%v), want cancelled or failed", s, long["error"])
			}
		})
	}
}
