package cluster

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/agentreach/reach"
	"github.com/agentreach/reach/internal/durable"
)

// FuzzReadStops: whatever a stops file holds around the lines fileStop
// writes (a line cut short by a kill, bytes of a broken disk), its stops
// are read back as written, in order, and every other line is skipped and
// named, never read as a stop of no request.
func FuzzReadStops(f *testing.F) {
	f.Add([]byte(`{"request":"r1","mode":2,"cause":{"reason":"x"}}`), "r-1", "cancelled through the API", 2)
	f.Add([]byte(`{"request":"","mode":1}`), "r", "", 1)
	f.Add([]byte(`{"request":"r","mode":1.5}`), "r\u2028x", "\x00\xff", 3)
	f.Add([]byte(`{"request":`), "a", "b", 0)
	f.Add([]byte("\xff\xfe{}"), "é", "\r", -1)
	f.Fuzz(func(t *testing.T, garbage []byte, id, reason string, mode int) {
		if id == "" || len(garbage) > maxStopLine/2 {
			return
		}
		line := func(id string, n int) []byte {
			cause := reach.Cause{Mode: reach.StopMode(mode), By: "alice", Reason: reason, At: time.Unix(1, 0).UTC(), Request: id}
			b, err := json.Marshal(filedStop{Request: id, Mode: mode, Cause: durable.EncodeCause(cause)})
			if err != nil {
				t.Fatal(err)
			}
			return append(b, '\n')
		}
		var file bytes.Buffer
		file.Write(line(id, 1))
		file.Write(garbage)
		file.WriteByte('\n')
		file.Write(line(id+"-last", 2))
		var skippedLines []int
		got, err := readStops(bytes.NewReader(file.Bytes()), func(n int, err error) {
			if err == nil {
				t.Errorf("line %d skipped with no error", n)
			}
			skippedLines = append(skippedLines, n)
		})
		if err != nil {
			t.Fatalf("readStops: %v", err)
		}
		lines := 2 + strings.Count(string(garbage), "\n") + 1
		if len(got)+len(skippedLines) != lines {
			t.Errorf("%d stops and %d lines skipped of %d lines", len(got), len(skippedLines), lines)
		}
		for _, s := range got {
			if s.Request == "" {
				t.Errorf("a stop of no request read: %+v", s)
			}
		}
		if len(got) < 2 {
			t.Fatalf("%d stops read back, want at least the 2 written", len(got))
		}
		// JSON writes a byte that is not UTF-8 as U+FFFD (reach's
		// request ids are UTF-8).
		valid, wantReason := asJSON(id), asJSON(reason)
		for i, want := range []string{valid, valid + "-last"} {
			s := got[0]
			if i == 1 {
				s = got[len(got)-1]
			}
			c := durable.DecodeCause(s.Cause)
			if s.Request != want || s.Mode != mode || c.Reason != wantReason || c.Request != want {
				t.Errorf("stop %d read back as %+v (cause %+v), want request %q mode %d reason %q", i, s, c, want, mode, reason)
			}
		}
	})
}

// asJSON returns s as JSON gives it back: each byte that is not UTF-8 a
// U+FFFD.
func asJSON(s string) string {
	b, _ := json.Marshal(s)
	var out string
	json.Unmarshal(b, &out)
	return out
}
