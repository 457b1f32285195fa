package main

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestRequestsShowIsReadable: reach requests show prints the request as
// indented JSON, a field a line, as a person reads it at a terminal and a
// script still parses it: it printed the API's answer on one line (4 KB
// for seven calls), which a new user had to pipe through a formatter to
// read.
func TestRequestsShowIsReadable(t *testing.T) {
	base, _, _ := startServe(t, "--listen", "127.0.0.1:0", "--data", t.TempDir())
	getJSON(t, "POST", base+"/v1/calls", `{"request_id":"r-show","tool_calls":[{"call_id":"a","tool":"get_order","arguments":{"order_id":"1001"}}]}`)
	out, err := runCLI(t, "requests", "show", "r-show", "--api", base)
	if err != nil {
		t.Fatalf("reach requests show r-show: %v\n%s", err, out)
	}
	var got struct {
		ID     string           `json:"id"`
		Frames []map[string]any `json:"frames"`
	}
	if err := json.Unmarshal([]byte(out), &got); err != nil || got.ID != "r-show" || len(got.Frames) != 1 {
		t.Fatalf("reach requests show r-show printed no request with its one frame (%v):\n%s", err, out)
	}
	if !strings.Contains(out, "\n  \"frames\": [\n") || !strings.Contains(out, "\n      \"name\": \"get_order\",\n") {
		t.Errorf("reach requests show r-show is not indented, a field a line:\n%s", out)
	}
}
