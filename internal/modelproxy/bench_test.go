package modelproxy

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"testing"

	"github.com/agentreach/reach/internal/cputime"
	"github.com/agentreach/reach/internal/redact"
)

// discard is a ResponseWriter that keeps nothing.
type discard struct{ h http.Header }

func (d *discard) Header() http.Header         { return d.h }
func (d *discard) Write(b []byte) (int, error) { return len(b), nil }
func (d *discard) WriteHeader(int)             {}
func (d *discard) Flush()                      {}

// benchStream is a Responses API stream: a text whose last delta ends in
// end, then a function call's arguments in 200 deltas, numbered 0, 1, ...
func benchStream(end string) []byte {
	var b bytes.Buffer
	seq := 0
	send := func(ev map[string]any) {
		ev["sequence_number"] = seq
		seq++
		d, _ := json.Marshal(ev)
		fmt.Fprintf(&b, "event: %s\ndata: %s\n\n", ev["type"], d)
	}
	send(map[string]any{"type": "response.created", "response": map[string]any{"id": "resp_1", "status": "in_progress", "output": []any{}}})
	place := func(ev map[string]any) map[string]any {
		ev["item_id"], ev["output_index"], ev["content_index"] = "msg_1", 0, 0
		return ev
	}
	send(place(map[string]any{"type": "response.output_text.delta", "delta": "the answer is here and it ", "logprobs": []any{}}))
	send(place(map[string]any{"type": "response.output_text.delta", "delta": "ends in " + end, "logprobs": []any{}}))
	send(place(map[string]any{"type": "response.output_text.done", "text": "the answer is here and it ends in " + end, "logprobs": []any{}}))
	for i := range 200 {
		send(map[string]any{"type": "response.function_call_arguments.delta", "item_id": "fc_1", "output_index": 1, "delta": fmt.Sprintf(`"k%d":"value %d",`, i, i)})
	}
	send(map[string]any{"type": "response.completed", "response": map[string]any{"id": "resp_1", "status": "completed", "output": []any{},
		"usage": map[string]any{"input_tokens": 40, "output_tokens": 700}}})
	return b.Bytes()
}

// BenchmarkResponsesStream passes a stream of 205 events through the mask:
// Renumbered, where the first text ends in the start of a secret ("sk-"),
// held back and added as a delta of its own, so that the 201 events after
// it are numbered on; Unchanged, where it ends in "xy-", nothing held.
func BenchmarkResponsesStream(b *testing.B) {
	red, err := redact.New(&redact.Options{Secrets: []string{respSecret}})
	if err != nil {
		b.Fatal(err)
	}
	p := New(&Options{Redactor: red})
	for _, c := range []struct{ name, end string }{{"Unchanged", "xy-"}, {"Renumbered", "sk-"}} {
		stream := benchStream(c.end)
		b.Run(c.name, func(b *testing.B) {
			b.SetBytes(int64(len(stream)))
			b.ReportAllocs()
			cpu := cputime.Self() // on a shared machine, steadier than the wall clock
			for b.Loop() {
				resp := &http.Response{Body: io.NopCloser(bytes.NewReader(stream))}
				if err := p.passEvents(&discard{h: http.Header{}}, resp, &answer{}); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(cputime.Self()-cpu)/float64(b.N), "cpu-ns/op")
		})
	}
}
