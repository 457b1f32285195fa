// Package openai is reach's one codec and client of the OpenAI chat
// completions API (POST {base_url}/chat/completions), which most model
// servers speak: the reference agent loop (internal/agent) and the
// built-in tools' model (internal/builtin) call it through Client, and the
// model proxy (internal/modelproxy) reads the answers it passes on with
// Completion.
//
//	c := &openai.Client{BaseURL: "http://127.0.0.1:8000/v1", APIKey: key}
//	resp, err := c.Complete(ctx, &openai.Request{Model: "m", Messages: msgs})
package openai

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// Message is one chat message.
type Message struct {
	Role       string     `json:"role"` // system, user, assistant, tool
	Content    string     `json:"content"`
	ToolCalls  []ToolCall `json:"tool_calls,omitempty"`
	ToolCallID string     `json:"tool_call_id,omitempty"`
	// Refusal is an answer's refusal, in words, and FunctionCall the
	// legacy (functions) form of a call: text the client reads, so the
	// floor of a reported usage counts them.
	Refusal      string        `json:"refusal,omitempty"`
	FunctionCall *FunctionCall `json:"function_call,omitempty"`
	// Audio is an answer's spoken part (an audio model's): its
	// transcript is text the client reads, which the floor counts too.
	Audio *Audio `json:"audio,omitempty"`
}

// Audio is the audio of an answer: Transcript is what it says.
type Audio struct {
	ID         string `json:"id,omitempty"`
	Transcript string `json:"transcript,omitempty"`
}

// ToolCall is a function call the model chose, or a call of a custom
// tool (Type "custom": its free-form input in Custom).
type ToolCall struct {
	ID       string       `json:"id"`
	Type     string       `json:"type"` // "function"
	Function FunctionCall `json:"function"`
	Custom   *CustomCall  `json:"custom,omitempty"`
}

// CustomCall names the custom tool of a call and its input (free text).
type CustomCall struct {
	Name  string `json:"name"`
	Input string `json:"input"`
}

// FunctionCall names the function of a tool call and its arguments.
type FunctionCall struct {
	Name      string `json:"name"`
	Arguments string `json:"arguments"` // JSON text
}

// ToolDef is a function the model may call.
type ToolDef struct {
	Type     string      `json:"type"` // "function"
	Function FunctionDef `json:"function"`
}

// FunctionDef describes a function the model may call.
type FunctionDef struct {
	Name        string          `json:"name"`
	Description string          `json:"description,omitempty"`
	Parameters  json.RawMessage `json:"parameters,omitempty"`
}

// Request is a chat completions request.
type Request struct {
	Model    string    `json:"model"`
	Messages []Message `json:"messages"`
	Tools    []ToolDef `json:"tools,omitempty"`
}

// Usage counts a completion's tokens.
type Usage struct {
	PromptTokens     int64 `json:"prompt_tokens"`
	CompletionTokens int64 `json:"completion_tokens"`
}

// Completion is a chat completion, or one chunk of a streamed one: its
// choices (a whole answer's Message, a chunk's Delta) and its usage (in a
// stream, the final chunk's, when asked for with
// stream_options.include_usage).
type Completion struct {
	Model   string   `json:"model"` // the model that answered, if the endpoint says
	Choices []Choice `json:"choices"`
	Usage   *Usage   `json:"usage"`
	// Error is an endpoint's error, sent as a chunk of a stream.
	Error json.RawMessage `json:"error,omitempty"`
}

// Choice is one choice of a Completion.
type Choice struct {
	Index   int      `json:"index"` // which of the answer's choices (n) it is
	Message *Message `json:"message"`
	Delta   *Message `json:"delta"`
	// FinishReason says why a choice ended (stop, length, tool_calls, ...):
	// a stream's chunk that carries one is its choice's last.
	FinishReason string `json:"finish_reason,omitempty"`
}

// Response is the first choice of a chat completion, its usage, and the
// model that answered (if the endpoint said).
type Response struct {
	Message Message
	Usage   Usage
	Model   string
}

// ChatURL returns the chat completions endpoint under an OpenAI-compatible
// base URL, which may carry a query (api-version=…): the path goes before
// it.
func ChatURL(base string) string { return under(base, "chat/completions") }

// ResponsesURL returns the Responses API endpoint under an OpenAI-compatible
// base URL, as ChatURL does chat completions'.
func ResponsesURL(base string) string { return under(base, "responses") }

func under(base, path string) string {
	u, err := url.Parse(base)
	if err != nil {
		return strings.TrimSuffix(base, "/") + "/" + path // refused when the request is made
	}
	return u.JoinPath(path).String()
}

// RedactQuery keeps a transport error's message from echoing the query of
// the endpoint's URL (which may carry a key).
func RedactQuery(msg, url string) string {
	if i := strings.IndexByte(url, '?'); i >= 0 {
		msg = strings.ReplaceAll(msg, url[i:], "?…")
	}
	return msg
}

// Client calls an OpenAI-compatible chat completions endpoint. The zero
// value is not usable: set BaseURL (e.g. http://127.0.0.1:8000/v1). Safe
// for concurrent use.
type Client struct {
	BaseURL string
	APIKey  string       // sent as a bearer token, if set
	HTTP    *http.Client // if nil, a client with a 2-minute timeout
	Header  http.Header  // extra headers, e.g. traceparent for nesting
	// MaxAnswer bounds the answer's size; if zero, 16 MiB.
	MaxAnswer int64
}

// What went wrong with a chat completion (Error.Kind).
const (
	Unreachable    = "unreachable"      // the request could not be made or got no answer
	Unreadable     = "unreadable"       // reading the answer failed
	BadStatus      = "status"           // the endpoint answered with another status than 200
	NotACompletion = "not_a_completion" // the answer is not a chat completion with a choice
)

// Error is a chat completion that failed: its Kind, and for BadStatus the
// endpoint's status and (the start of) what it said.
type Error struct {
	Kind       string
	Status     string // "429 Too Many Requests"
	StatusCode int
	Body       string
	Err        error
}

func (e *Error) Error() string {
	switch e.Kind {
	case Unreachable:
		return fmt.Sprintf("calling the model: %v", e.Err)
	case Unreadable:
		return fmt.Sprintf("reading the model's answer: %v", e.Err)
	case BadStatus:
		return fmt.Sprintf("the model answered %s: %s", e.Status, e.Body)
	}
	if e.Err != nil {
		return fmt.Sprintf("decoding the model's answer: %v", e.Err)
	}
	return "the model's answer has no choices"
}

func (e *Error) Unwrap() error { return e.Err }

// Complete sends req and returns the first choice of the answer, and the
// usage to charge (counted: the endpoint's, raised to the words of the
// text; an estimate when it reports none). A failure is an *Error.
func (c *Client) Complete(ctx context.Context, req *Request) (*Response, error) {
	body, err := json.Marshal(req)
	if err != nil {
		return nil, err
	}
	endpoint := ChatURL(c.BaseURL)
	hr, err := http.NewRequestWithContext(ctx, http.MethodPost, endpoint, bytes.NewReader(body))
	if err != nil {
		return nil, &Error{Kind: Unreachable, Err: err}
	}
	hr.Header.Set("Content-Type", "application/json")
	if c.APIKey != "" {
		hr.Header.Set("Authorization", "Bearer "+c.APIKey)
	}
	for k, vs := range c.Header {
		for _, v := range vs {
			hr.Header.Add(k, v)
		}
	}
	hc := c.HTTP
	if hc == nil {
		hc = &http.Client{Timeout: 2 * time.Minute}
	}
	resp, err := hc.Do(hr)
	if err != nil {
		return nil, &Error{Kind: Unreachable, Err: errors.New(RedactQuery(err.Error(), endpoint))}
	}
	defer resp.Body.Close()
	limit := c.MaxAnswer
	if limit == 0 {
		limit = 16 << 20
	}
	data, err := io.ReadAll(io.LimitReader(resp.Body, limit))
	if err != nil {
		return nil, &Error{Kind: Unreadable, Err: err}
	}
	if resp.StatusCode != http.StatusOK {
		return nil, &Error{Kind: BadStatus, Status: resp.Status, StatusCode: resp.StatusCode, Body: strings.TrimSpace(string(data))}
	}
	var out Completion
	if err := json.Unmarshal(data, &out); err != nil {
		return nil, &Error{Kind: NotACompletion, Err: err}
	}
	if len(out.Choices) == 0 {
		return nil, &Error{Kind: NotACompletion}
	}
	r := &Response{Model: out.Model}
	if m := out.Choices[0].Message; m != nil {
		r.Message = *m
	}
	r.Usage = counted(out.Usage, body, out.Choices[0].Message)
	return r, nil
}

// DefaultModel is the model asked for when neither the client nor the
// configuration names one.
const DefaultModel = "gpt-4o-mini"
