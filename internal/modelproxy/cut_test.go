package modelproxy

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
)

// TestStreamCutInsideAnEvent: a model stream (chat completions or
// Responses) that ends inside an event, here one that spells the start of
// a secret, does not pass that event on (it could not be masked whole):
// the client gets the events before it and then the API's error event,
// which says the answer is incomplete. A last event that is whole but
// lacks its blank line ([DONE], a whole JSON value) still passes, with no
// error.
func TestStreamCutInsideAnEvent(t *testing.T) {
	part := respSecret[:len(respSecret)-3]
	for _, tc := range []struct {
		name, path, body, stream string
		cut                      bool
	}{
		{"chat, cut", "/v1/chat/completions", `{"model":"m","stream":true,"messages":[]}`,
			"data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"hello\"}}]}\n\ndata: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"the key is " + part, true},
		{"chat, cut after a line", "/v1/chat/completions", `{"model":"m","stream":true,"messages":[]}`,
			"data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"hello\"}}]}\n\ndata: {\"choices\":[{\"index\":0,\"delta\":\n", true},
		{"chat, [DONE] without its blank line", "/v1/chat/completions", `{"model":"m","stream":true,"messages":[]}`,
			"data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"hello\"}}]}\n\ndata: [DONE]", false},
		{"responses, cut", "/v1/responses", `{"model":"m","stream":true,"input":"x"}`,
			"event: response.output_text.delta\ndata: {\"type\":\"response.output_text.delta\",\"sequence_number\":0,\"item_id\":\"m1\",\"output_index\":0,\"content_index\":0,\"delta\":\"hello\"}\n\n" +
				"event: response.output_text.delta\ndata: {\"type\":\"response.output_text.delta\",\"sequence_number\":1,\"item_id\":\"m1\",\"output_index\":0,\"content_index\":0,\"delta\":\"the key is " + part, true},
		{"responses, whole last event without its blank line", "/v1/responses", `{"model":"m","stream":true,"input":"x"}`,
			"event: response.output_text.delta\ndata: {\"type\":\"response.output_text.delta\",\"sequence_number\":0,\"item_id\":\"m1\",\"output_index\":0,\"content_index\":0,\"delta\":\"hello\"}\n\n" +
				"event: response.completed\ndata: {\"type\":\"response.completed\",\"sequence_number\":1,\"response\":{\"id\":\"resp_1\",\"output\":[]}}\n", false},
	} {
		srv, _, _ := newResponsesProxy(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/event-stream")
			w.Write([]byte(tc.stream))
		}), nil)
		req, _ := http.NewRequest("POST", srv.URL+tc.path, strings.NewReader(tc.body))
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		raw, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		b := string(raw)
		events := clientEvents(raw)
		if strings.Contains(b, part[len(part)-6:]) || !strings.Contains(b, "hello") {
			t.Errorf("%s: the client got %q, want the first event and nothing of the cut one", tc.name, b)
			continue
		}
		var last struct {
			Type  string `json:"type"`
			Code  string `json:"code"`
			Seq   *int64 `json:"sequence_number"`
			Error *struct {
				Code, Message string
			} `json:"error"`
		}
		if len(events) > 0 {
			json.Unmarshal([]byte(events[len(events)-1]), &last)
		}
		switch {
		case !tc.cut && (last.Type == "error" || last.Error != nil):
			t.Errorf("%s: a whole stream ended with an error: %q", tc.name, b)
		case tc.cut && strings.HasPrefix(tc.path, "/v1/chat") && (last.Error == nil || last.Error.Code != "model_stream_cut" || !strings.Contains(last.Error.Message, "incomplete")):
			t.Errorf("%s: the client got %q, want an error chunk saying the answer is incomplete", tc.name, b)
		case tc.cut && tc.path == "/v1/responses" && (last.Type != "error" || last.Code != "model_stream_cut" || last.Seq == nil || *last.Seq != 1 || !strings.Contains(b, "event: error\n")):
			t.Errorf("%s: the client got %q, want an error event numbered 1 saying the answer is incomplete", tc.name, b)
		case tc.cut && tc.path == "/v1/responses" && (last.Error == nil || last.Error.Code != "model_stream_cut" || !strings.Contains(last.Error.Message, "incomplete")):
			// openai-node 6 raises an error event's "error" and yields one without it.
			t.Errorf("%s: the client got %q, want the error event's \"error\" to hold its code and message", tc.name, b)
		}
	}
}

// TestStreamEndedBeforeItsEnd: a model stream that ends between events
// before it said it was done (a chat stream with neither [DONE] nor a
// finish_reason, a Responses stream with no final event) ends with the
// API's error saying the answer may be incomplete: the client's SDK would
// take what came for the whole answer. One whose choice finished, or that
// ended with its final event, ends without an error.
func TestStreamEndedBeforeItsEnd(t *testing.T) {
	delta := "event: response.output_text.delta\ndata: {\"type\":\"response.output_text.delta\",\"sequence_number\":0,\"item_id\":\"m1\",\"output_index\":0,\"content_index\":0,\"delta\":\"hello\"}\n\n"
	for _, tc := range []struct {
		name, path, body, stream string
		ended                    bool
	}{
		{"chat, no [DONE], no finish_reason", "/v1/chat/completions", `{"model":"m","stream":true,"messages":[]}`,
			"data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"hello\"}}]}\n\n", true},
		{"chat, a finish_reason, no [DONE]", "/v1/chat/completions", `{"model":"m","stream":true,"messages":[]}`,
			"data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"hello\"}}]}\n\ndata: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}\n\n", false},
		{"chat, the endpoint's own error", "/v1/chat/completions", `{"model":"m","stream":true,"messages":[]}`,
			"data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"hello\"}}]}\n\ndata: {\"error\":{\"message\":\"overloaded\",\"type\":\"server_error\"}}\n\n", false},
		{"responses, no final event", "/v1/responses", `{"model":"m","stream":true,"input":"x"}`, delta, true},
		{"responses, its final event", "/v1/responses", `{"model":"m","stream":true,"input":"x"}`,
			delta + "event: response.completed\ndata: {\"type\":\"response.completed\",\"sequence_number\":1,\"response\":{\"id\":\"resp_1\",\"output\":[]}}\n\n", false},
	} {
		srv, _, _ := newResponsesProxy(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/event-stream")
			w.Write([]byte(tc.stream))
		}), nil)
		req, _ := http.NewRequest("POST", srv.URL+tc.path, strings.NewReader(tc.body))
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		raw, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		b := string(raw)
		if !strings.Contains(b, "hello") {
			t.Errorf("%s: the client got %q, want what the model sent", tc.name, b)
			continue
		}
		got := strings.Contains(b, "model_stream_ended")
		switch {
		case got != tc.ended:
			t.Errorf("%s: the client got %q; an error saying the stream ended early: %v, want %v", tc.name, b, got, tc.ended)
		case tc.ended && tc.path == "/v1/responses" && !strings.Contains(b, "event: error\n"):
			t.Errorf("%s: the client got %q, want the API's error event", tc.name, b)
		case tc.ended && !strings.Contains(b, "may be incomplete"):
			t.Errorf("%s: the client got %q, want a text saying the answer may be incomplete", tc.name, b)
		}
	}
}

// TestStreamEndedNumbersItsError: the error event that ends a Responses
// stream cut short takes the number after the last event the client got,
// the deltas reach put in to release a text it held back (a secret's
// possible beginning) counted; and a stream that ended with the
// endpoint's own error event gets no second error.
func TestStreamEndedNumbersItsError(t *testing.T) {
	held := "event: response.output_text.delta\ndata: {\"type\":\"response.output_text.delta\",\"sequence_number\":0,\"item_id\":\"m1\",\"output_index\":0,\"content_index\":0,\"delta\":\"hello " + respSecret[:5] + "\"}\n\n"
	for _, tc := range []struct {
		name, stream string
		errors       int // error events the client gets
	}{
		{"a text held back at the cut", held, 1},
		{"the endpoint's own error", held + "event: error\ndata: {\"type\":\"error\",\"sequence_number\":1,\"code\":\"server_error\",\"message\":\"overloaded\",\"param\":null}\n\n", 1},
	} {
		srv, _, _ := newResponsesProxy(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/event-stream")
			w.Write([]byte(tc.stream))
		}), nil)
		req, _ := http.NewRequest("POST", srv.URL+"/v1/responses", strings.NewReader(`{"model":"m","stream":true,"input":"x"}`))
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		raw, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		b := string(raw)
		var seqs []int64
		errs := 0
		for _, l := range strings.Split(b, "\n") {
			d, ok := strings.CutPrefix(l, "data: ")
			if !ok {
				continue
			}
			var e struct {
				Type string `json:"type"`
				Seq  *int64 `json:"sequence_number"`
			}
			if json.Unmarshal([]byte(d), &e) != nil || e.Seq == nil {
				t.Errorf("%s: an event without its number: %q", tc.name, d)
				continue
			}
			seqs = append(seqs, *e.Seq)
			if e.Type == "error" {
				errs++
			}
		}
		for i, s := range seqs {
			if s != int64(i) {
				t.Errorf("%s: the client got the numbers %v, want 0, 1, 2, ... (%q)", tc.name, seqs, b)
				break
			}
		}
		if errs != tc.errors {
			t.Errorf("%s: %d error events, want %d (%q)", tc.name, errs, tc.errors, b)
		}
	}
}
