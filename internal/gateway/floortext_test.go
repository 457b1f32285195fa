package gateway

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/agentreach/reach/internal/link"
)

// TestModelProxyFloorCountsEveryText: the floor of a reported usage (the
// words reach can count) counts the answer's text wherever the endpoint
// puts it for the client to read, not only where reach's own reader looked
// first. A hostile endpoint that reports 0 tokens had its answer's words
// charged nothing when it put them in a Responses stream's final event (or
// its items' done events) without deltas, in a refusal, in a reasoning
// summary, or in a chat answer's refusal, reasoning, legacy
// function_call, custom tool call's input or audio transcript, or in a
// stream's chunks or events that reach's decoder rejected and the SDKs
// read: a token budget never stopped it.
func TestModelProxyFloorCountsEveryText(t *testing.T) {
	const said = 500 // words of each answer
	text := strings.Repeat("word ", said)
	q, _ := json.Marshal(text)
	qargs, _ := json.Marshal(fmt.Sprintf(`{"q":%s}`, q))
	msg := fmt.Sprintf(`{"type":"message","id":"msg_1","role":"assistant","content":[{"type":"output_text","text":%s}]}`, q)
	answers := map[string]func(w http.ResponseWriter){
		// A Responses stream whose text comes only with its final event.
		"completed": func(w http.ResponseWriter) {
			w.Header().Set("Content-Type", "text/event-stream")
			fmt.Fprint(w, "event: response.created\ndata: {\"type\":\"response.created\",\"response\":{\"id\":\"resp_c\",\"output\":[]}}\n\n")
			fmt.Fprintf(w, "event: response.completed\ndata: {\"type\":\"response.completed\",\"response\":{\"id\":\"resp_c\",\"output\":[%s],\"usage\":{\"input_tokens\":0,\"output_tokens\":0}}}\n\n", msg)
		},
		// The same with no usage at all: the estimate counts that text too.
		"completed_nousage": func(w http.ResponseWriter) {
			w.Header().Set("Content-Type", "text/event-stream")
			fmt.Fprintf(w, "event: response.completed\ndata: {\"type\":\"response.completed\",\"response\":{\"id\":\"resp_n\",\"output\":[%s]}}\n\n", msg)
		},
		// A Responses stream whose text comes only in its item's done event.
		"itemdone": func(w http.ResponseWriter) {
			w.Header().Set("Content-Type", "text/event-stream")
			fmt.Fprintf(w, "event: response.output_item.done\ndata: {\"type\":\"response.output_item.done\",\"output_index\":0,\"item\":%s}\n\n", msg)
			fmt.Fprint(w, "event: response.completed\ndata: {\"type\":\"response.completed\",\"response\":{\"id\":\"resp_d\",\"output\":[],\"usage\":{\"input_tokens\":0,\"output_tokens\":0}}}\n\n")
		},
		// A whole Responses answer that refuses, in words.
		"refusal": func(w http.ResponseWriter) {
			fmt.Fprintf(w, `{"id":"resp_r","output":[{"type":"message","id":"msg_r","role":"assistant","content":[{"type":"refusal","refusal":%s}]}],"usage":{"input_tokens":0,"output_tokens":0}}`, q)
		},
		// A whole Responses answer of a reasoning summary.
		"reasoning": func(w http.ResponseWriter) {
			fmt.Fprintf(w, `{"id":"resp_s","output":[{"type":"reasoning","id":"rs_1","summary":[{"type":"summary_text","text":%s}]}],"usage":{"input_tokens":0,"output_tokens":0}}`, q)
		},
		// A whole chat answer that refuses.
		"chatrefusal": func(w http.ResponseWriter) {
			fmt.Fprintf(w, `{"choices":[{"index":0,"message":{"role":"assistant","content":null,"refusal":%s}}],"usage":{"prompt_tokens":0,"completion_tokens":0}}`, q)
		},
		// A whole chat answer of a legacy function call.
		"function_call": func(w http.ResponseWriter) {
			fmt.Fprintf(w, `{"choices":[{"index":0,"message":{"role":"assistant","content":null,"function_call":{"name":"search","arguments":%s}}}],"usage":{"prompt_tokens":0,"completion_tokens":0}}`, qargs)
		},
		// A whole chat answer of reasoning alone (reasoning_content, as
		// servers of reasoning models send it).
		"chatreasoning": func(w http.ResponseWriter) {
			fmt.Fprintf(w, `{"choices":[{"index":0,"message":{"role":"assistant","content":"","reasoning_content":%s}}],"usage":{"prompt_tokens":0,"completion_tokens":0}}`, q)
		},
		// A chat stream of reasoning alone (reasoning, as a string).
		"streamreasoning": func(w http.ResponseWriter) { chatDeltas(w, text, `{"reasoning":%q}`) },
		// A chat stream that refuses.
		"streamrefusal": func(w http.ResponseWriter) { chatDeltas(w, text, `{"refusal":%q}`) },
		// A whole chat answer of a custom tool's call (free-form input).
		"chatcustom": func(w http.ResponseWriter) {
			fmt.Fprintf(w, `{"choices":[{"index":0,"message":{"role":"assistant","content":null,"tool_calls":[{"id":"call_c","type":"custom","custom":{"name":"run","input":%s}}]}}],"usage":{"prompt_tokens":0,"completion_tokens":0}}`, q)
		},
		// A whole chat answer spoken (an audio model's), its transcript the text.
		"chataudio": func(w http.ResponseWriter) {
			fmt.Fprintf(w, `{"choices":[{"index":0,"message":{"role":"assistant","content":null,"audio":{"id":"audio_1","data":"UklGRg==","transcript":%s}}}],"usage":{"prompt_tokens":0,"completion_tokens":0}}`, q)
		},
		// The same two streamed.
		"streamcustom": func(w http.ResponseWriter) {
			chatDeltas(w, text, `{"tool_calls":[{"index":0,"type":"custom","custom":{"input":%q}}]}`)
		},
		"streamaudio": func(w http.ResponseWriter) { chatDeltas(w, text, `{"audio":{"transcript":%q}}`) },
		// A chat stream whose text chunks reach's decoder rejects (a member
		// of another type than the API's, which the SDKs pass over), ended
		// by a usage chunk it reads.
		"streamunread": func(w http.ResponseWriter) {
			w.Header().Set("Content-Type", "text/event-stream")
			for range said {
				fmt.Fprint(w, "data: {\"model\":5,\"choices\":[{\"index\":0,\"delta\":{\"content\":\"word \"}}]}\n\n")
			}
			fmt.Fprint(w, "data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}],\"usage\":{\"prompt_tokens\":0,\"completion_tokens\":0}}\n\ndata: [DONE]\n\n")
		},
		// The same of a Responses stream's text deltas.
		"unreadevents": func(w http.ResponseWriter) {
			w.Header().Set("Content-Type", "text/event-stream")
			for range said {
				fmt.Fprint(w, "event: response.output_text.delta\ndata: {\"type\":\"response.output_text.delta\",\"sequence_number\":\"x\",\"item_id\":\"msg_u\",\"output_index\":0,\"content_index\":0,\"delta\":\"word \"}\n\n")
			}
			fmt.Fprint(w, "event: response.completed\ndata: {\"type\":\"response.completed\",\"response\":{\"id\":\"resp_u\",\"output\":[],\"usage\":{\"input_tokens\":0,\"output_tokens\":0}}}\n\n")
		},
		// A chat stream of a legacy function call.
		"streamfunction": func(w http.ResponseWriter) {
			var args string
			json.Unmarshal(qargs, &args)
			chatDeltas(w, args, `{"function_call":{"arguments":%q}}`)
		},
	}
	g, url := modelGateway(t, func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		for name, answer := range answers {
			if strings.Contains(string(b), `"case:`+name+`"`) {
				answer(w)
				return
			}
		}
		http.Error(w, "no case", http.StatusBadRequest)
	}, "")
	for name := range answers {
		path, body := "/v1/responses", `{"stream":true,"input":"case:`+name+`"}`
		if strings.HasPrefix(name, "chat") || name == "function_call" {
			path, body = "/v1/chat/completions", `{"messages":[{"role":"user","content":"case:`+name+`"}]}`
		} else if strings.HasPrefix(name, "stream") {
			path, body = "/v1/chat/completions", `{"stream":true,"messages":[{"role":"user","content":"case:`+name+`"}]}`
		}
		req, _ := http.NewRequest("POST", url+path, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set(link.HeaderRequest, "floor-"+name)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("%s: %d %s", name, resp.StatusCode, b)
		}
		if !strings.Contains(string(b), "word") {
			t.Fatalf("%s: the client was not given the answer's text: %s", name, b)
		}
		if got := requestTokens(t, g, "floor-"+name); got < said {
			t.Errorf("%s: an answer of %d words the client reads, reported as 0 tokens, was charged %d tokens, want at least %d", name, said, got, said)
		}
	}
}

// TestModelProxyFloorCountsWideSpaces: words joined by the Unicode spaces a
// tokenizer splits at as at a space (a no-break space, an ideographic
// space: NFKC makes them one, and tiktoken's \s is them) are words of the
// floor. An endpoint reporting 0 tokens whose answer of 500 words was
// joined by them (it reads as spaced text), to a prompt of 200 so joined,
// was charged 17 tokens (a word for each 256 bytes).
func TestModelProxyFloorCountsWideSpaces(t *testing.T) {
	const said = 500
	text := strings.Repeat("word\u00a0", said/2) + strings.Repeat("word\u3000", said/2)
	g, url := modelGateway(t, func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, `{"choices":[{"index":0,"message":{"role":"assistant","content":%q}}],"usage":{"prompt_tokens":0,"completion_tokens":0}}`, text)
	}, "")
	// Written raw and as escapes (\u3000), as a client's JSON may.
	prompt := `"` + strings.Repeat("ask\u00a0", 100) + strings.Repeat(`ask\u3000`, 100) + `"`
	resp, b := postChat(t, url, `{"messages":[{"role":"user","content":`+prompt+`}]}`, map[string]string{link.HeaderRequest: "wide"})
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("%d %s", resp.StatusCode, b)
	}
	if got := requestTokens(t, g, "wide"); got < said+200 {
		t.Errorf("a prompt of 200 words and an answer of %d, joined by no-break and ideographic spaces and reported as 0 tokens, were charged %d tokens, want at least %d", said, got, said+200)
	}
}

// TestModelProxyFloorCountsReasoningOnce: a chat answer that carries its
// reasoning twice, as reasoning_content and as reasoning (vLLM while it
// renamed the one the other, gateways that copy one to the other), is one
// text: the floor counts it once, so that an honest count of it (600
// tokens for 500 words) is charged as reported, not raised to 1,000.
func TestModelProxyFloorCountsReasoningOnce(t *testing.T) {
	const said, reported = 500, 600
	text := strings.Repeat("word ", said)
	g, url := modelGateway(t, func(w http.ResponseWriter, r *http.Request) {
		if strings.Contains(readAll(r), `"stream":true`) {
			w.Header().Set("Content-Type", "text/event-stream")
			for i := 0; i < len(text); i += 7 {
				d := text[i:min(i+7, len(text))]
				fmt.Fprintf(w, "data: {\"choices\":[{\"index\":0,\"delta\":{\"reasoning_content\":%q,\"reasoning\":%q}}]}\n\n", d, d)
			}
			fmt.Fprintf(w, "data: {\"choices\":[],\"usage\":{\"prompt_tokens\":50,\"completion_tokens\":%d}}\n\n", reported)
			fmt.Fprint(w, "data: [DONE]\n\n")
			return
		}
		fmt.Fprintf(w, `{"choices":[{"index":0,"message":{"role":"assistant","content":"","reasoning_content":%q,"reasoning":%q}}],"usage":{"prompt_tokens":50,"completion_tokens":%d}}`, text, text, reported)
	}, "")
	for _, stream := range []bool{false, true} {
		id := fmt.Sprintf("twice-%v", stream)
		resp, b := postChat(t, url, fmt.Sprintf(`{"stream":%v,"messages":[{"role":"user","content":"think"}]}`, stream), map[string]string{link.HeaderRequest: id})
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("%s: %d %s", id, resp.StatusCode, b)
		}
		if got := requestTokens(t, g, id); got != 50+reported {
			t.Errorf("%s: reasoning of %d words given twice, reported as %d tokens, was charged %d tokens, want %d", id, said, reported, got, 50+reported)
		}
	}
}

// chatDeltas writes s as a chat stream, 7 bytes a chunk, each chunk's
// delta the format delta of its piece, then a usage of 0 tokens.
func chatDeltas(w http.ResponseWriter, s, delta string) {
	w.Header().Set("Content-Type", "text/event-stream")
	for i := 0; i < len(s); i += 7 {
		fmt.Fprintf(w, "data: {\"choices\":[{\"index\":0,\"delta\":"+delta+"}]}\n\n", s[i:min(i+7, len(s))])
	}
	fmt.Fprint(w, "data: {\"choices\":[],\"usage\":{\"prompt_tokens\":0,\"completion_tokens\":0}}\n\n")
	fmt.Fprint(w, "data: [DONE]\n\n")
}

func readAll(r *http.Request) string {
	b, _ := io.ReadAll(r.Body)
	return string(b)
}
