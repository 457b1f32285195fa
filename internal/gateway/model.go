package gateway

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	neturl "net/url"
	"strings"
	"time"

	"github.com/agentreach/reach"
)

// Model answers the model calls that built-in tools make (the formatter).
// Implementations must be safe for concurrent use.
type Model interface {
	// Name is the model's name, recorded on its frames.
	Name() string
	// Complete answers one model call: text, or tool calls to make first.
	Complete(ctx context.Context, msgs []Message, tools []string) (*Reply, error)
}

// Message is one message of a model conversation.
type Message struct {
	Role    string `json:"role"` // system, user, assistant or tool
	Content string `json:"content"`
}

// Reply is a model's answer: text, or tool calls (each run through the
// runtime under the model's frame, their results sent back as tool
// messages).
type Reply struct {
	Text      string
	ToolCalls []reach.Call
	Usage     reach.TokenUsage
}

// ScriptedModel is the stand-in used when no model is configured: it first
// asks for search_kb with the user's text (when offered), then formats the
// text with the first result as its source. Deterministic and free.
type ScriptedModel struct{}

// Name implements Model.
func (ScriptedModel) Name() string { return "scripted" }

// Complete implements Model.
func (ScriptedModel) Complete(_ context.Context, msgs []Message, tools []string) (*Reply, error) {
	var user, tool string
	for _, m := range msgs {
		switch m.Role {
		case "user":
			user = m.Content
		case "tool":
			tool = m.Content
		}
	}
	in := int64(len(strings.Fields(user)) + len(strings.Fields(tool)) + 20)
	if tool == "" && contains(tools, "search_kb") {
		args, _ := json.Marshal(map[string]any{"query": user, "limit": 1})
		return &Reply{ToolCalls: []reach.Call{{ID: "kb", Tool: "search_kb", Arguments: args}},
			Usage: reach.TokenUsage{Input: in, Output: 12}}, nil
	}
	text := "**Answer:** " + strings.TrimSpace(user)
	var found struct {
		Results []struct {
			Title string `json:"title"`
		} `json:"results"`
	}
	if json.Unmarshal([]byte(tool), &found) == nil && len(found.Results) > 0 {
		text += "\n\n_Source: " + found.Results[0].Title + "_"
	}
	return &Reply{Text: text, Usage: reach.TokenUsage{Input: in, Output: int64(len(strings.Fields(text))), Text: text}}, nil
}

func contains(s []string, v string) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}

// openAIModel calls an OpenAI-compatible /chat/completions endpoint
// (without tools: it formats text).
type openAIModel struct {
	cfg    ModelConfig
	client *http.Client
}

func newOpenAIModel(c *ModelConfig) *openAIModel {
	timeout := time.Duration(c.Timeout)
	if timeout == 0 {
		timeout = 60 * time.Second
	}
	return &openAIModel{cfg: *c, client: &http.Client{Timeout: timeout}}
}

func (m *openAIModel) Name() string {
	if m.cfg.Name != "" {
		return m.cfg.Name
	}
	return "gpt-4o-mini"
}

func (m *openAIModel) Complete(ctx context.Context, msgs []Message, _ []string) (*Reply, error) {
	body, _ := json.Marshal(map[string]any{"model": m.Name(), "messages": msgs})
	url := chatURL(m.cfg.BaseURL)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	if f, ok := reach.FrameFrom(ctx); ok { // the model's spans join the trace, under this call's
		req.Header.Set(HeaderTraceparent, traceparent(f.Request, f.ID))
	}
	if k := m.cfg.APIKey.Reveal(); k != "" {
		req.Header.Set("Authorization", "Bearer "+k)
	}
	resp, err := m.client.Do(req)
	if err != nil {
		return nil, &reach.ToolError{Type: "unavailable", Message: "the model endpoint did not answer: " + redactURL(err.Error(), url)}
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, 4<<20))
	if err != nil {
		return nil, &reach.ToolError{Type: "unavailable", Message: "reading the model's answer failed"}
	}
	if resp.StatusCode != http.StatusOK {
		typ := "model_error"
		if resp.StatusCode == http.StatusTooManyRequests || resp.StatusCode >= 500 {
			typ = "unavailable"
		}
		return nil, &reach.ToolError{Type: typ, Message: fmt.Sprintf("the model endpoint answered %s", resp.Status)}
	}
	var out struct {
		Model   string `json:"model"`
		Choices []struct {
			Message struct {
				Content string `json:"content"`
			} `json:"message"`
		} `json:"choices"`
		Usage struct {
			Prompt     int64 `json:"prompt_tokens"`
			Completion int64 `json:"completion_tokens"`
		} `json:"usage"`
	}
	if err := json.Unmarshal(data, &out); err != nil || len(out.Choices) == 0 {
		return nil, &reach.ToolError{Type: "model_error", Message: "the model's answer is not a chat completion"}
	}
	text := out.Choices[0].Message.Content
	return &Reply{Text: text, Usage: reach.TokenUsage{Input: out.Usage.Prompt, Output: out.Usage.Completion, Model: out.Model, Text: text}}, nil
}

// redactURL keeps a transport error from echoing the endpoint's query.
// chatURL is the chat completions endpoint under an OpenAI-compatible base
// URL, which may carry a query (api-version=…): the path goes before it.
func chatURL(base string) string {
	u, err := neturl.Parse(base)
	if err != nil {
		return strings.TrimSuffix(base, "/") + "/chat/completions" // refused when the request is made
	}
	return u.JoinPath("chat/completions").String()
}

func redactURL(msg, url string) string {
	if i := strings.IndexByte(url, '?'); i >= 0 {
		msg = strings.ReplaceAll(msg, url[i:], "?…")
	}
	return msg
}

// runModel runs a small agent loop inside a tool's Func: each model call is
// a model frame under the tool's frame (so reach sees the nesting), the tool
// calls the model asks for run through the runtime under that model frame,
// and their results go back to the model. At most rounds model calls.
func runModel(ctx context.Context, rt *reach.Runtime, m Model, msgs []Message, tools []string, rounds int) (string, error) {
	for range rounds {
		mctx, turn, err := rt.BeginModel(ctx, m.Name())
		if err != nil {
			return "", err
		}
		reply, err := m.Complete(mctx, msgs, tools)
		if err != nil {
			turn.FailModel(err)
			return "", err
		}
		if len(reply.ToolCalls) == 0 {
			turn.EndModel(reply.Usage)
			return reply.Text, nil
		}
		for _, c := range reply.ToolCalls {
			res := rt.Call(mctx, &c)
			msgs = append(msgs, Message{Role: "tool", Content: res.ModelText()})
		}
		turn.EndModel(reply.Usage)
	}
	return "", errors.New("the model did not answer within its rounds")
}
