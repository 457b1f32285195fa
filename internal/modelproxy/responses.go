package modelproxy

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strconv"
	"strings"

	"github.com/agentreach/reach/internal/httpjson"
	"github.com/agentreach/reach/internal/jsonscan"
	"github.com/agentreach/reach/internal/openai"
	"github.com/agentreach/reach/internal/redact"
)

// The Responses API (POST /v1/responses), which the OpenAI SDKs' agent
// frameworks (@openai/agents, the AI SDK's openai(model)) call by default,
// is a model turn as a chat completion is, through the same ServeHTTP:
// admitted, budgeted, sent to the endpoint and its fallbacks, masked and
// linked alike. What differs is where things are: the history is input (a
// turn's function_call items and the function_call_output items that
// answer them) or, with previous_response_id, kept by the endpoint; the
// cap is max_output_tokens; the usage is input_tokens and output_tokens;
// the tool calls a turn chose are its function_call output items; and a
// stream is named events, each text streamed as .delta events and repeated
// whole by .done ones.

// apiKind is the API a model turn is asked through.
type apiKind int

const (
	chatAPI      apiKind = iota // POST /v1/chat/completions
	responsesAPI                // POST /v1/responses
)

// inputIDs returns the call ids of the function_call and
// function_call_output items a Responses API request's input holds, in
// their order.
func inputIDs(input json.RawMessage) []string {
	var items []struct {
		Type   string `json:"type"`
		CallID string `json:"call_id"`
	}
	if json.Unmarshal(input, &items) != nil { // a string: a first turn
		return nil
	}
	var ids []string
	for _, it := range items {
		if it.CallID != "" && (it.Type == "function_call" || it.Type == "function_call_output") {
			ids = append(ids, it.CallID)
		}
	}
	return ids
}

// responseBody is what the proxy reads of a Responses API answer: a whole
// one, or the response a stream's response.created and response.completed
// events carry.
type responseBody struct {
	ID     string       `json:"id"`
	Model  string       `json:"model"`
	Output []outputItem `json:"output"`
	Usage  *struct {
		InputTokens  int64 `json:"input_tokens"`
		OutputTokens int64 `json:"output_tokens"`
	} `json:"usage"`
}

// outputItem is one item of an answer's output: a message (its content's
// texts) or a function call.
type outputItem struct {
	Type string `json:"type"`
	ID   string `json:"id"`
	// ContainerID is a code interpreter call's container, whose files
	// and state the endpoint keeps.
	ContainerID string `json:"container_id"`
	CallID      string `json:"call_id"`
	Name        string `json:"name"`
	Arguments   string `json:"arguments"`
	Content     []struct {
		Text string `json:"text"`
	} `json:"content"`
	// words counts the words of the text the model wrote in the item (of
	// the types generated names: its content's texts and refusals, a
	// reasoning summary, a call's arguments or input; openai.PromptWords
	// reads those members), wherever the endpoint put it: the floor of a
	// reported usage.
	words int64
}

// generated are the output items whose text the model wrote, counted as
// output tokens; a hosted tool's items (a search's results, an MCP call's
// output, a list of tools) hold text the endpoint fetched, not counted as
// output, so they are not counted in the floor (which must stay at or below
// a real endpoint's count).
var generated = map[string]bool{"message": true, "reasoning": true, "function_call": true, "custom_tool_call": true}

// UnmarshalJSON reads an output item and counts its words.
func (it *outputItem) UnmarshalJSON(b []byte) error {
	type plain outputItem
	if err := json.Unmarshal(b, (*plain)(it)); err != nil {
		return err
	}
	if generated[it.Type] {
		it.words = openai.PromptWords(b)
	}
	return nil
}

// noteResponse reads a whole answer: its id, model, usage, texts and the
// function calls it chose.
func (a *answer) noteResponse(r *responseBody) {
	a.noteUsage(r)
	a.noteWritten(r)
	for _, it := range r.Output {
		a.noteItem(&it)
		switch it.Type {
		case "message":
			for _, c := range it.Content {
				a.say(c.Text)
			}
		case "function_call":
			a.call(&it)
		}
	}
}

// noteWritten counts the words of a whole response's output items (a
// whole answer's, a stream's final event's): the most any one such
// response held is a floor of the answer's output, as the deltas are
// (usage).
func (a *answer) noteWritten(r *responseBody) {
	n := int64(0)
	for i := range r.Output {
		n += r.Output[i].words
	}
	a.written = max(a.written, n)
}

// noteDone counts the words of an item a stream gave whole
// (response.output_item.done), once for each id (the most of its
// givings): the items' sum is a floor of the answer's output too.
func (a *answer) noteDone(it *outputItem) {
	if it.ID == "" {
		a.doneWords += it.words
		return
	}
	if a.done == nil {
		a.done = map[string]int64{}
	}
	if w, seen := a.done[it.ID]; !seen || it.words > w {
		if seen {
			a.doneWords -= w
		} else if len(a.done) >= maxParts {
			a.doneWords += it.words // not recorded, as noteItem
			return
		}
		a.done[it.ID] = it.words
		a.doneWords += it.words
	}
}

// noteUsage reads an answer's id, model and usage.
func (a *answer) noteUsage(r *responseBody) {
	if r.ID != "" && r.ID != a.respID && a.responded != nil {
		a.respID = r.ID
		a.responded(r.ID)
	}
	if r.Model != "" {
		a.use.Model = r.Model
	}
	if u := r.Usage; u != nil && u.InputTokens >= 0 && u.OutputTokens >= 0 { // a count below zero is no count: estimated
		a.use.Input, a.use.Output = u.InputTokens, u.OutputTokens
		a.reported = true
	}
}

// noteItem tells gave an output item's id (and its container's, a code
// interpreter call's), once: a stream gives it in
// response.output_item.added, again when the item is done and in
// response.completed.
func (a *answer) noteItem(it *outputItem) {
	for _, id := range [...]string{it.ID, it.ContainerID} {
		if id == "" || a.gave == nil || a.items[id] || len(a.items) >= maxParts {
			// Past maxParts, not recorded: a store write each, and no
			// model's answer has so many items.
			continue
		}
		if a.items == nil {
			a.items = map[string]bool{}
		}
		a.items[id] = true
		a.gave(id)
	}
}

// call records a function call the answer chose, once: a stream gives it
// in response.output_item.done and again in response.completed.
func (a *answer) call(it *outputItem) {
	if it.CallID == "" || a.called[it.CallID] || len(a.called) >= maxParts {
		return
	}
	if a.called == nil {
		a.called = map[string]bool{}
	}
	a.called[it.CallID] = true
	a.argue(it.Arguments)
	if a.tools.record != nil {
		a.tools.record(it.CallID, it.Name, []byte(it.Arguments))
	} else if a.chose != nil {
		a.chose(it.CallID)
	}
}

// event is what the proxy reads of a Responses API stream's event.
type event struct {
	Type     string          `json:"type"`
	Delta    json.RawMessage `json:"delta"` // a string, in the .delta events of a text
	Item     *outputItem     `json:"item"`
	Response *responseBody   `json:"response"`
	Seq      *int64          `json:"sequence_number"`
}

// noteEvent reads one event of a stream: the texts as they pass (for the
// estimate when no usage comes), each function call once it is done (its
// id as soon as it is added: an agent may run it while the answer still
// streams), and the answer's id and usage.
func (a *answer) noteEvent(e *event) {
	switch e.Type {
	case "response.output_text.delta", "response.refusal.delta":
		var s string
		json.Unmarshal(e.Delta, &s)
		a.say(s)
	case "response.output_item.added":
		if it := e.Item; it != nil {
			a.noteItem(it)
			if it.Type == "function_call" && it.CallID != "" && a.chose != nil {
				a.chose(it.CallID)
			}
		}
	case "response.output_item.done":
		if it := e.Item; it != nil {
			a.noteItem(it)
			a.noteDone(it)
			if it.Type == "function_call" {
				a.call(it)
			}
		}
	case "response.created", "response.completed", "response.incomplete", "response.failed":
		if r := e.Response; r != nil {
			a.noteUsage(r)
			a.noteWritten(r)
			for i := range r.Output {
				a.noteItem(&r.Output[i])
				if r.Output[i].Type == "function_call" {
					a.call(&r.Output[i])
				}
			}
		}
	}
}

// final reports whether a Responses API stream's event of type typ is its
// last, which carries the answer's usage.
func final(typ string) bool {
	return typ == "response.completed" || typ == "response.incomplete" || typ == "response.failed"
}

// passEvents copies a Responses API stream event by event, flushing each,
// with its texts masked (eventMask), and reads its usage, function calls
// and id on the way.
func (p *Proxy) passEvents(w http.ResponseWriter, resp *http.Response, a *answer) error {
	rc, sc := startStream(w, resp)
	mask := newEventMask(p.opts.Redactor)
	next := int64(0)                     // the model's number of the event after the last one read
	ended := false                       // a final event, or the endpoint's own error, came
	pass := func(lines [][]byte) error { // the lines of one event
		if len(lines) == 0 {
			return nil
		}
		var out bytes.Buffer
		data, has := eventData(lines)
		var e event
		if json.Unmarshal(data, &e) == nil {
			if e.Seq != nil {
				next = *e.Seq + 1
			}
			a.noteEvent(&e)
			if final(e.Type) {
				a.end()
			}
			ended = ended || final(e.Type) || e.Type == "error"
		} else {
			a.raw += len(data)
			a.unread += openai.AnswerWords(data)
		}
		masked := data
		if mask != nil {
			var before [][]byte
			before, masked = mask.event(&e, data)
			for _, b := range before {
				fmt.Fprintf(&out, "event: %s\ndata: %s\n\n", eventType(b), b)
			}
		}
		masked = p.redact(masked)
		for _, l := range lines {
			if bytes.HasPrefix(l, []byte("data:")) {
				if has { // the data where its first line was
					writeData(&out, masked)
					has = false
				}
				continue
			}
			out.Write(p.redact(l))
			out.WriteByte('\n')
		}
		if a.parts()+mask.parts() >= maxParts {
			return errStreamTooLarge // this event not passed on: its texts may not be masked whole
		}
		out.WriteByte('\n')
		if _, err := w.Write(out.Bytes()); err != nil {
			return fmt.Errorf("the client went away: %w", err)
		}
		rc.Flush()
		return nil
	}
	err := eachEvent(sc, pass)
	if err != nil && !streamBroken(err) {
		return err // the client went away
	}
	if mask != nil { // a stream that ended before its texts' .done events
		for _, b := range mask.end() {
			if _, err := fmt.Fprintf(w, "event: %s\ndata: %s\n\n", eventType(b), b); err != nil {
				return fmt.Errorf("the client went away: %w", err)
			}
		}
		next += mask.added
	}
	err = streamOutcome(sc, err, ended)
	if err != nil {
		// The client is told with the API's error event, numbered after
		// the last event it got. Its "error" repeats the code and message
		// as a chat stream's error chunk holds them: the OpenAI SDKs that
		// read only that (openai-node 6, whose stream yields an error
		// event without it as an event, so that OpenAI Agents ended the
		// run with "unsuccessful terminal state", reach's words lost)
		// raise it as an APIError with reach's message.
		var typ, code, msg string
		err, typ, code, msg = brokenStream(err, a)
		b, _ := json.Marshal(map[string]any{"type": "error", "code": code, "message": msg, "param": nil, "sequence_number": next,
			"error": map[string]any{"type": typ, "code": code, "message": msg, "param": nil}})
		fmt.Fprintf(w, "event: error\ndata: %s\n\n", b)
	}
	rc.Flush()
	return err
}

func eventType(data []byte) string {
	var e event
	json.Unmarshal(data, &e)
	return e.Type
}

// eventMask masks the configured secret values in a Responses API stream,
// where the model may spell a secret across the .delta events of one text
// (an output text, a refusal, a function call's arguments, a reasoning
// summary or text): each text goes through a redact.Stream, which holds
// back the end of a delta that may begin a secret until the next one. What
// a text still holds goes out as a .delta event of its own just before the
// text's .done event (or before its part's content_part.done or
// reasoning_summary_part.done, its item's output_item.done, or the
// answer's response.completed, whichever comes first); the .done events,
// which repeat the whole text, are masked as they are. Such a delta takes
// the next number, and the events after it are numbered on, so that a
// client still reads sequence_number 0, 1, 2, ...: the openai SDKs resume
// a stream after the last number they read, and one that skips what it
// has seen would drop the event that shared a delta's number. An output
// text's log probabilities (logprobs.go) spell it token by token: the
// tokens of its deltas go through a stream of their own, and every other
// event's lists are masked whole.
type eventMask struct {
	red   *redact.Redactor
	texts map[string]*heldDelta
	order []string // the keys of texts, in the order they began
	added int64    // the deltas put in so far: how far the numbers after them move
	next  int64    // the model's number of the event after the last one read
}

// heldDelta is one text's stream and the members that place its .delta
// events (type, item_id, output_index, content_index, summary_index,
// command_index).
type heldDelta struct {
	s      *redact.Stream
	place  map[string]json.RawMessage
	item   string       // item_id, as JSON
	tokens tokenStreams // the tokens of its deltas' logprobs
}

// maskTokens masks the logprobs list raw of one of the text's deltas (end:
// the text ends, and what the tokens' stream holds is added to the list),
// and returns it anew when that changed it.
func (h *heldDelta) maskTokens(red *redact.Redactor, raw json.RawMessage, end bool) (json.RawMessage, bool) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var arr []any
	if dec.Decode(&arr) != nil {
		return nil, false
	}
	lp := map[string]any{"content": arr}
	if !h.tokens.mask(red, 0, lp, end) {
		return nil, false
	}
	b, err := httpjson.Marshal(lp["content"])
	return b, err == nil
}

// placing members place a text's delta in the answer: command_index is a
// shell call's command (response.shell_call_command.delta), each a text of
// its own.
var placing = []string{"item_id", "output_index", "content_index", "summary_index", "command_index"}

func newEventMask(red *redact.Redactor) *eventMask {
	if red == nil || red.Len() == 0 {
		return nil
	}
	return &eventMask{red: red, texts: map[string]*heldDelta{}}
}

// parts is how many texts the mask follows.
func (m *eventMask) parts() int {
	if m == nil {
		return 0
	}
	return len(m.texts)
}

// textKey names the text an event of it streams or ends: its type without
// .delta or .done, and where it is placed.
func textKey(m map[string]json.RawMessage, base string) string {
	var b strings.Builder
	b.WriteString(base)
	for _, k := range placing {
		b.WriteByte('|')
		b.Write(m[k])
	}
	return b.String()
}

// event returns the events to write before data (what texts it ends still
// hold), and data with its delta masked and its number moved past them
// (data itself when unchanged).
func (m *eventMask) event(e *event, data []byte) (before [][]byte, out []byte) {
	out = data
	var fields map[string]json.RawMessage
	if e.Type == "" || json.Unmarshal(data, &fields) != nil {
		return nil, out
	}
	seq, numbered := int64(-1), false
	if n, err := strconv.ParseInt(string(fields["sequence_number"]), 10, 64); err == nil {
		seq, numbered = n, true
		m.next = n + 1
	}
	changed := false
	if base, ok := strings.CutSuffix(e.Type, ".delta"); ok {
		var piece string
		if json.Unmarshal(e.Delta, &piece) == nil {
			key := textKey(fields, base)
			h := m.texts[key]
			if h == nil {
				h = &heldDelta{s: m.red.Stream(), place: map[string]json.RawMessage{"type": fields["type"]}, item: string(fields["item_id"]), tokens: tokenStreams{}}
				for _, k := range placing {
					if v, ok := fields[k]; ok {
						h.place[k] = v
					}
				}
				m.texts[key] = h
				m.order = append(m.order, key)
			}
			if masked := h.s.Next(piece); masked != piece {
				fields["delta"], _ = json.Marshal(masked)
				changed = true
			}
			if lp, ok := h.maskTokens(m.red, fields["logprobs"], false); ok {
				fields["logprobs"] = lp
				changed = true
			}
		}
	} else {
		// A .done event's, an item's, the answer's log probabilities: whole.
		if masked := maskResponseLogprobs(m.red, data); len(masked) != len(data) || string(masked) != string(data) {
			var mf map[string]json.RawMessage
			if json.Unmarshal(masked, &mf) == nil {
				fields, out = mf, masked
			}
		}
		var which func(string, *heldDelta) bool
		switch {
		case e.Type == "response.content_part.done" || e.Type == "response.reasoning_summary_part.done":
			// The end of a part ends its texts, where a server sends no
			// text's .done: the SDKs set the part's text whole from it.
			which = func(_ string, h *heldDelta) bool {
				return h.item == string(fields["item_id"]) && string(h.place["content_index"]) == string(fields["content_index"]) &&
					string(h.place["summary_index"]) == string(fields["summary_index"])
			}
		case strings.HasSuffix(e.Type, ".done") && e.Type != "response.output_item.done":
			key := textKey(fields, strings.TrimSuffix(e.Type, ".done"))
			which = func(k string, _ *heldDelta) bool { return k == key }
		case e.Type == "response.output_item.done":
			item := ""
			if e.Item != nil {
				var id struct {
					ID json.RawMessage `json:"id"`
				}
				json.Unmarshal(fields["item"], &id)
				item = string(id.ID)
			}
			which = func(_ string, h *heldDelta) bool { return item != "" && h.item == item }
		case e.Type == "response.completed" || e.Type == "response.incomplete" || e.Type == "response.failed":
			which = func(string, *heldDelta) bool { return true }
		}
		if which != nil {
			before = m.flush(which, seq, numbered)
		}
	}
	if numbered && m.added > 0 {
		if !changed {
			// Only the number moves: it is rewritten in place, the rest
			// as the model wrote it, not the whole event encoded again
			// (each event after an added delta is).
			if b, ok := renumber(out, seq+m.added); ok {
				return before, b
			}
		}
		fields["sequence_number"] = json.RawMessage(strconv.FormatInt(seq+m.added, 10))
		changed = true
	}
	if changed {
		if b, err := httpjson.Marshal(fields); err == nil {
			out = b
		}
	}
	return before, out
}

// flush returns a .delta event with what each text which accepts still
// holds, and forgets those texts. Each goes out just before the event the
// model numbered seq (if numbered), and takes its number as moved; the
// events after it move by one more.
func (m *eventMask) flush(which func(string, *heldDelta) bool, seq int64, numbered bool) [][]byte {
	var evs [][]byte
	m.order = slices.DeleteFunc(m.order, func(k string) bool {
		h := m.texts[k]
		if !which(k, h) {
			return false
		}
		delete(m.texts, k)
		if rest := h.s.Flush(); rest != "" || h.tokens.holding(0) {
			ev := maps.Clone(h.place)
			ev["delta"], _ = json.Marshal(rest)
			if numbered {
				ev["sequence_number"] = json.RawMessage(strconv.FormatInt(seq+m.added, 10))
				m.added++
			}
			if string(ev["type"]) == `"response.output_text.delta"` {
				// A member of its every delta: the tokens still held, or
				// empty as when none were asked for.
				ev["logprobs"] = json.RawMessage("[]")
				if lp, ok := h.maskTokens(m.red, ev["logprobs"], true); ok {
					ev["logprobs"] = lp
				}
			}
			if b, err := httpjson.Marshal(ev); err == nil {
				evs = append(evs, b)
			}
		}
		return true
	})
	return evs
}

// end returns a .delta event with what each text still holds, at the end of
// a stream that ended before their .done events, numbered after the last
// event.
func (m *eventMask) end() [][]byte {
	return m.flush(func(string, *heldDelta) bool { return true }, m.next, m.next > 0)
}

// renumber returns a copy of data, a JSON object, with the value of its
// member sequence_number (the first at its top level) n; false if it has
// none, or is not an object.
func renumber(data []byte, n int64) ([]byte, bool) {
	i := jsonscan.SkipSpace(data, 0)
	if i >= len(data) || data[i] != '{' {
		return nil, false
	}
	for i++; ; i++ {
		i = jsonscan.SkipSpace(data, i)
		if i >= len(data) || data[i] != '"' {
			return nil, false
		}
		k := i
		i = jsonscan.SkipString(data, i)
		key := data[k:i]
		if i = jsonscan.SkipSpace(data, i); i >= len(data) || data[i] != ':' {
			return nil, false
		}
		v := jsonscan.SkipSpace(data, i+1)
		i = jsonscan.SkipValue(data, v)
		if string(key) == `"sequence_number"` {
			out := make([]byte, 0, len(data)+4)
			out = append(out, data[:v]...)
			out = strconv.AppendInt(out, n, 10)
			return append(out, data[i:]...), true
		}
		if i = jsonscan.SkipSpace(data, i); i >= len(data) || data[i] != ',' {
			return nil, false
		}
	}
}
