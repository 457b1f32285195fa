package loops

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/agentreach/reach/internal/callgraph"
	"github.com/agentreach/reach/internal/fault"
	"github.com/agentreach/reach/internal/records"
)

// observedBefore is observed as it was before its fast path for plain
// strings and its texts written into the Detector's buffer: every result
// through Normalize, every text through encoding/json.
func observedBefore(data []byte) []byte { return observedOld(data, nil) }

// observedOld is observed before, line for line, its buffer included.
func observedOld(data []byte, buf *[]byte) []byte {
	var dst []byte
	if buf != nil && len(data) <= maxObservation {
		dst = (*buf)[:0]
	}
	if dst == nil {
		dst = make([]byte, 0, len(data))
	}
	c, err := callgraph.Normalize(dst, data)
	if err != nil {
		b, _ := json.Marshal(string(data))
		return b
	}
	if buf != nil && cap(c) <= maxObservation {
		*buf = c[:0]
	}
	return c
}

// BenchmarkObserved compares observed with observedOld, and appendText
// with Text, in one run: a served echo's answer, a text of 2 KiB, an
// object (no fast path: the same work), a failure's message.
//
//	go test -run '^$' -bench 'Observed' -benchmem -count 6 ./internal/loops/
func BenchmarkObserved(b *testing.B) {
	long := `"` + strings.Repeat("line of a text answer, ", 90) + `"`
	inputs := []struct{ name, data string }{
		{"echo", `"call 12345"`}, {"text2k", long}, {"object", `{"status":"ok","id":"ord-1","items":[1,2]}`},
	}
	for _, in := range inputs {
		data := []byte(in.data)
		for _, v := range []struct {
			name string
			f    func([]byte, *[]byte) []byte
		}{{"old", observedOld}, {"new", observed}} {
			b.Run(in.name+"/"+v.name, func(b *testing.B) {
				var buf []byte
				b.ReportAllocs()
				for b.Loop() {
					v.f(data, &buf)
				}
			})
		}
	}
	msg := "invoice inv-12345 was not found"
	b.Run("error/old", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			Text(msg)
		}
	})
	b.Run("error/new", func(b *testing.B) {
		var buf []byte
		b.ReportAllocs()
		for b.Loop() {
			appendText(&buf, msg)
		}
	})
}

// observationSamples are results and messages whose canonical JSON or
// quoting is easy to get wrong: escapes, control characters, invalid and
// valid UTF-8 past ASCII, HTML characters, U+2028, whitespace around a
// string, a string that does not end, quotes inside.
var observationSamples = []string{
	`""`, `"call 1"`, `"a\"b"`, `"a\\b"`, `"tab	in"`, "\"nl\nin\"", `"\u00e9t\u00e9"`, `"été"`,
	"\"bad \xff utf8\"", "\"surrogate \xed\xa0\x80\"", `"<b>&amp;</b>"`, "\"line\u2028sep\"", `"\ufffd"`, "\"\xef\xbf\xbd\"",
	` "lead"`, `"trail" `, `"`, `"open`, `"a"b"`, `""""`, `"x"y`, `{"b":1,"a":"\u0041"}`, `[1.0, 2e3, -0]`,
	`not json`, ``, `null`, `{"text":"call 2"}`, "\"del\x7f\"", `"\/slash"`, "\"\x00\"",
}

// TestObservedAsBefore: the observation of a result, and the text of an
// error, are byte for byte what they were before, read into a reused
// buffer (one call after another) or into none.
func TestObservedAsBefore(t *testing.T) {
	var buf []byte
	for _, s := range observationSamples {
		want := observedBefore([]byte(s))
		if got := observed([]byte(s), &buf); !bytes.Equal(got, want) {
			t.Errorf("observed(%q) with a buffer = %q, want %q", s, got, want)
		}
		if got := observed([]byte(s), nil); !bytes.Equal(got, want) {
			t.Errorf("observed(%q) = %q, want %q", s, got, want)
		}
		if got, want := appendText(&buf, s), Text(s); !bytes.Equal(got, want) {
			t.Errorf("appendText(%q) = %q, want %q", s, got, want)
		}
	}
}

// TestToolOutcomeErrorText: a failure's message is the observation Text
// makes of it, and the next result read into the same buffer does not
// change an outcome already judged (each outcome is read before the next).
func TestToolOutcomeErrorText(t *testing.T) {
	var buf []byte
	msg := `invoice <inv-7> "not" found` + "\n\u2028"
	o := toolOutcome(&records.Result{Status: records.StatusError, Error: &fault.Error{Code: "not_found", Type: fault.TypeTool, Message: msg}}, nil, &buf)
	if !o.Error || o.ErrorType != "not_found" || !bytes.Equal(o.Result, Text(msg)) {
		t.Fatalf("outcome = %+v (%q), want an error not_found with %q", o, o.Result, Text(msg))
	}
	o = toolOutcome(&records.Result{Status: records.StatusSuccess, Data: []byte(`"plain answer"`)}, nil, &buf)
	if o.Error || string(o.Result) != `"plain answer"` {
		t.Fatalf("outcome = %+v (%q), want the plain answer", o, o.Result)
	}
}

// FuzzObservedAsBefore compares observed and appendText with what they
// were before on any input, through one buffer reused across inputs.
func FuzzObservedAsBefore(f *testing.F) {
	for _, s := range observationSamples {
		f.Add([]byte(s))
	}
	var buf []byte
	f.Fuzz(func(t *testing.T, data []byte) {
		want := observedBefore(data)
		if got := observed(data, &buf); !bytes.Equal(got, want) {
			t.Fatalf("observed(%q) = %q, want %q", data, got, want)
		}
		if got, want := appendText(&buf, string(data)), Text(string(data)); !bytes.Equal(got, want) {
			t.Fatalf("appendText(%q) = %q, want %q", data, got, want)
		}
	})
}

// FuzzDoneToolAsBefore runs one stream of calls through two Detectors:
// one told each outcome by DoneTool, the other by Done with the outcome
// as it was read before (observedBefore, Text). Their verdicts on every
// call must be the same. The stream repeats two calls, so that repeats,
// no_progress and same_error are judged on what was observed.
func FuzzDoneToolAsBefore(f *testing.F) {
	f.Add([]byte(`"call 1"|"call 1"|"call 1"|"call 1"|"call 1"`), uint8(0))
	f.Add([]byte("\"a\\u00e9\"|\"bad \xff\"|not json|{\"b\":1,\"a\":2}|\"<x>\""), uint8(3))
	f.Add([]byte(`"same"|"same"|"same"|"same"|"same"|"same"`), uint8(0xff))
	f.Add([]byte(`"r1"|"r2"|"r3"|"r4"|"r5"|"r6"|"r7"|"r8"`), uint8(0))
	f.Fuzz(func(t *testing.T, data []byte, fail uint8) {
		parts := bytes.Split(data, []byte("|"))
		if len(parts) > 24 {
			parts = parts[:24]
		}
		now, before := New(nil), New(nil)
		for i, p := range parts {
			args := []byte(`{"q":"` + string(rune('a'+i%2)) + `"}`)
			s1 := Step{Tool: "look", Args: args, Access: "read"}
			s2 := s1
			v1, v2 := now.Check(&s1), before.Check(&s2)
			if (v1 == nil) != (v2 == nil) || v1 != nil && (v1.Detector != v2.Detector || v1.Message != v2.Message) {
				t.Fatalf("call %d: verdict %+v, before %+v", i, v1, v2)
			}
			if v1 != nil {
				continue
			}
			if fail>>(i%8)&1 == 1 {
				msg := string(p)
				now.DoneTool(&s1, &records.Result{Status: records.StatusError, Error: &fault.Error{Code: "bad_input", Type: fault.TypeTool, Message: msg}}, nil)
				before.Done(&s2, Outcome{Error: true, ErrorType: "bad_input", Result: Text(msg)})
			} else {
				now.DoneTool(&s1, &records.Result{Status: records.StatusSuccess, Data: p}, nil)
				before.Done(&s2, Outcome{Result: observedBefore(p)})
			}
		}
	})
}
