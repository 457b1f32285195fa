package gateway

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The fixture server of the MCP conformance suite's server scenarios
// (@modelcontextprotocol/conformance, `conformance server`): the tools,
// resources and prompts its scenarios call by name, with the results they
// check. TestConformance serves it directly and behind the gateway.

// conformancePNG is a 1x1 red PNG.
func conformancePNG() []byte {
	img := image.NewRGBA(image.Rect(0, 0, 1, 1))
	img.Set(0, 0, color.RGBA{R: 255, A: 255})
	var b bytes.Buffer
	if err := png.Encode(&b, img); err != nil {
		panic(err)
	}
	return b.Bytes()
}

// conformanceWAV is a WAV file of one silent 8 kHz, 8-bit mono sample.
func conformanceWAV() []byte {
	var b bytes.Buffer
	le := func(v any) { _ = binary.Write(&b, binary.LittleEndian, v) }
	b.WriteString("RIFF")
	le(uint32(36 + 1))
	b.WriteString("WAVEfmt ")
	le(uint32(16))   // fmt chunk size
	le(uint16(1))    // PCM
	le(uint16(1))    // channels
	le(uint32(8000)) // sample rate
	le(uint32(8000)) // byte rate
	le(uint16(1))    // block align
	le(uint16(8))    // bits per sample
	b.WriteString("data")
	le(uint32(1))
	b.WriteByte(128)
	return b.Bytes()
}

func textResult(s string) *mcp.CallToolResult {
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: s}}}
}

// newConformanceServer builds the fixture server.
func newConformanceServer() *mcp.Server {
	pngData, wavData := conformancePNG(), conformanceWAV()
	s := mcp.NewServer(&mcp.Implementation{Name: "reach-conformance-fixture", Version: "1.0.0"}, &mcp.ServerOptions{
		Capabilities: &mcp.ServerCapabilities{Logging: &mcp.LoggingCapabilities{}},
		CompletionHandler: func(_ context.Context, req *mcp.CompleteRequest) (*mcp.CompleteResult, error) {
			var vals []string
			for _, v := range []string{"paris", "park", "party", "test", "testing"} {
				if strings.HasPrefix(v, req.Params.Argument.Value) {
					vals = append(vals, v)
				}
			}
			if vals == nil {
				vals = []string{}
			}
			return &mcp.CompleteResult{Completion: mcp.CompletionResultDetails{Values: vals, Total: len(vals)}}, nil
		},
		SubscribeHandler:   func(context.Context, *mcp.SubscribeRequest) error { return nil },
		UnsubscribeHandler: func(context.Context, *mcp.UnsubscribeRequest) error { return nil },
	})
	noArgs := json.RawMessage(`{"type":"object","properties":{}}`)
	add := func(name, desc string, schema json.RawMessage, h mcp.ToolHandler) {
		if schema == nil {
			schema = noArgs
		}
		s.AddTool(&mcp.Tool{Name: name, Description: desc, InputSchema: schema}, h)
	}
	add("test_simple_text", "Returns simple text.", nil, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return textResult("This is a simple text response for testing."), nil
	})
	add("test_image_content", "Returns an image.", nil, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.ImageContent{Data: pngData, MIMEType: "image/png"}}}, nil
	})
	add("test_audio_content", "Returns audio.", nil, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.AudioContent{Data: wavData, MIMEType: "audio/wav"}}}, nil
	})
	add("test_embedded_resource", "Returns an embedded resource.", nil, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.EmbeddedResource{Resource: &mcp.ResourceContents{
			URI: "test://embedded-resource", MIMEType: "text/plain", Text: "This is an embedded resource content.",
		}}}}, nil
	})
	add("test_multiple_content_types", "Returns text, an image and a resource.", nil, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{
			&mcp.TextContent{Text: "Multiple content types test:"},
			&mcp.ImageContent{Data: pngData, MIMEType: "image/png"},
			&mcp.EmbeddedResource{Resource: &mcp.ResourceContents{URI: "test://mixed-content-resource", MIMEType: "application/json", Text: `{"test":"data","value":123}`}},
		}}, nil
	})
	add("test_tool_with_logging", "Logs three messages.", nil, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		for i, msg := range []string{"Tool execution started", "Tool processing data", "Tool execution completed"} {
			if i > 0 {
				time.Sleep(50 * time.Millisecond)
			}
			_ = req.Session.Log(ctx, &mcp.LoggingMessageParams{Level: "info", Logger: "conformance", Data: msg})
		}
		return textResult("Tool with logging executed successfully"), nil
	})
	add("test_error_handling", "Always fails.", nil, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		res := textResult("This tool intentionally returns an error for testing")
		res.IsError = true
		return res, nil
	})
	add("test_tool_with_progress", "Reports progress.", nil, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		tok := req.Params.GetProgressToken()
		for i, p := range []float64{0, 50, 100} {
			if i > 0 {
				time.Sleep(50 * time.Millisecond)
			}
			if tok != nil {
				_ = req.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{ProgressToken: tok, Progress: p, Total: 100})
			}
		}
		return textResult("Tool with progress executed successfully"), nil
	})
	add("test_sampling", "Asks the client's model.", json.RawMessage(`{"type":"object","properties":{"prompt":{"type":"string"}},"required":["prompt"]}`),
		func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			var in struct {
				Prompt string `json:"prompt"`
			}
			_ = json.Unmarshal(req.Params.Arguments, &in)
			res, err := req.Session.CreateMessage(ctx, &mcp.CreateMessageParams{
				Messages:  []*mcp.SamplingMessage{{Role: "user", Content: &mcp.TextContent{Text: in.Prompt}}},
				MaxTokens: 100,
			})
			if err != nil {
				return nil, err
			}
			text := ""
			if t, ok := res.Content.(*mcp.TextContent); ok {
				text = t.Text
			}
			return textResult("LLM response: " + text), nil
		})
	add("test_elicitation", "Asks the user.", json.RawMessage(`{"type":"object","properties":{"message":{"type":"string"}},"required":["message"]}`),
		func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			var in struct {
				Message string `json:"message"`
			}
			_ = json.Unmarshal(req.Params.Arguments, &in)
			return elicit(ctx, req, in.Message, json.RawMessage(`{"type":"object","properties":{
				"username":{"type":"string","description":"User's response"},
				"email":{"type":"string","description":"User's email address"}},"required":["username","email"]}`), "User response: ")
		})
	add("test_elicitation_sep1034_defaults", "Asks the user, with defaults.", nil, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return elicit(ctx, req, "Please review the defaults", json.RawMessage(`{"type":"object","properties":{
			"name":{"type":"string","default":"John Doe"},
			"age":{"type":"integer","default":30},
			"score":{"type":"number","default":95.5},
			"status":{"type":"string","enum":["active","inactive","pending"],"default":"active"},
			"verified":{"type":"boolean","default":true}}}`), "Elicitation completed: ")
	})
	add("test_elicitation_sep1330_enums", "Asks the user to choose.", nil, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return elicit(ctx, req, "Please choose", json.RawMessage(`{"type":"object","properties":{
			"untitledSingle":{"type":"string","enum":["option1","option2","option3"]},
			"titledSingle":{"type":"string","oneOf":[{"const":"value1","title":"First Option"},{"const":"value2","title":"Second Option"},{"const":"value3","title":"Third Option"}]},
			"legacyEnum":{"type":"string","enum":["opt1","opt2","opt3"],"enumNames":["Option One","Option Two","Option Three"]},
			"untitledMulti":{"type":"array","items":{"type":"string","enum":["option1","option2","option3"]}},
			"titledMulti":{"type":"array","items":{"anyOf":[{"const":"value1","title":"First Choice"},{"const":"value2","title":"Second Choice"},{"const":"value3","title":"Third Choice"}]}}}}`), "Elicitation completed: ")
	})
	add("json_schema_2020_12_tool", "Tool with JSON Schema 2020-12 features", json.RawMessage(`{
		"$schema":"https://json-schema.org/draft/2020-12/schema","type":"object",
		"$defs":{"address":{"type":"object","properties":{"street":{"type":"string"},"city":{"type":"string"}}}},
		"properties":{"name":{"type":"string"},"address":{"$ref":"#/$defs/address"}},
		"additionalProperties":false}`), func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return textResult("ok"), nil
	})
	add("test_reconnection", "Closes its SSE stream before answering.", nil, func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		if req.Extra != nil && req.Extra.CloseSSEStream != nil {
			req.Extra.CloseSSEStream(mcp.CloseSSEStreamArgs{RetryAfter: 500 * time.Millisecond})
			time.Sleep(100 * time.Millisecond)
		}
		return textResult("Reconnection test completed successfully"), nil
	})

	// Resources.
	readText := func(uri, mime, text string) mcp.ResourceHandler {
		return func(context.Context, *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
			return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: uri, MIMEType: mime, Text: text}}}, nil
		}
	}
	s.AddResource(&mcp.Resource{URI: "test://static-text", Name: "static-text", Description: "A static text resource", MIMEType: "text/plain"},
		readText("test://static-text", "text/plain", "This is the content of the static text resource."))
	s.AddResource(&mcp.Resource{URI: "test://static-binary", Name: "static-binary", Description: "A static binary resource", MIMEType: "image/png"},
		func(context.Context, *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
			return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: "test://static-binary", MIMEType: "image/png", Blob: pngData}}}, nil
		})
	s.AddResource(&mcp.Resource{URI: "test://watched-resource", Name: "watched-resource", Description: "A resource to subscribe to", MIMEType: "text/plain"},
		readText("test://watched-resource", "text/plain", "Watched resource content."))
	s.AddResourceTemplate(&mcp.ResourceTemplate{URITemplate: "test://template/{id}/data", Name: "template-data", Description: "Data by id", MIMEType: "application/json"},
		func(_ context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
			uri := req.Params.URI
			id := strings.TrimSuffix(strings.TrimPrefix(uri, "test://template/"), "/data")
			b, _ := json.Marshal(map[string]any{"id": id, "templateTest": true, "data": "Data for ID: " + id})
			return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: uri, MIMEType: "application/json", Text: string(b)}}}, nil
		})

	// Prompts.
	user := func(c mcp.Content) *mcp.PromptMessage { return &mcp.PromptMessage{Role: "user", Content: c} }
	s.AddPrompt(&mcp.Prompt{Name: "test_simple_prompt", Description: "A simple prompt"},
		func(context.Context, *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
			return &mcp.GetPromptResult{Messages: []*mcp.PromptMessage{user(&mcp.TextContent{Text: "This is a simple prompt for testing."})}}, nil
		})
	s.AddPrompt(&mcp.Prompt{Name: "test_prompt_with_arguments", Description: "A prompt with arguments", Arguments: []*mcp.PromptArgument{
		{Name: "arg1", Description: "First test argument", Required: true},
		{Name: "arg2", Description: "Second test argument", Required: true},
	}}, func(_ context.Context, req *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
		a := req.Params.Arguments
		return &mcp.GetPromptResult{Messages: []*mcp.PromptMessage{user(&mcp.TextContent{
			Text: fmt.Sprintf("Prompt with arguments: arg1='%s', arg2='%s'", a["arg1"], a["arg2"])})}}, nil
	})
	s.AddPrompt(&mcp.Prompt{Name: "test_prompt_with_embedded_resource", Description: "A prompt with an embedded resource", Arguments: []*mcp.PromptArgument{
		{Name: "resourceUri", Description: "URI of the resource to embed", Required: true},
	}}, func(_ context.Context, req *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
		return &mcp.GetPromptResult{Messages: []*mcp.PromptMessage{
			user(&mcp.EmbeddedResource{Resource: &mcp.ResourceContents{URI: req.Params.Arguments["resourceUri"], MIMEType: "text/plain", Text: "Embedded resource content for testing."}}),
			user(&mcp.TextContent{Text: "Please process the embedded resource above."}),
		}}, nil
	})
	s.AddPrompt(&mcp.Prompt{Name: "test_prompt_with_image", Description: "A prompt with an image"},
		func(context.Context, *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
			return &mcp.GetPromptResult{Messages: []*mcp.PromptMessage{
				user(&mcp.ImageContent{Data: pngData, MIMEType: "image/png"}),
				user(&mcp.TextContent{Text: "Please analyze the image above."}),
			}}, nil
		})
	return s
}

// elicit asks the client with schema and reports its answer.
func elicit(ctx context.Context, req *mcp.CallToolRequest, msg string, schema json.RawMessage, prefix string) (*mcp.CallToolResult, error) {
	var sch any
	if err := json.Unmarshal(schema, &sch); err != nil {
		return nil, err
	}
	res, err := req.Session.Elicit(ctx, &mcp.ElicitParams{Message: msg, RequestedSchema: sch})
	if err != nil {
		return nil, err
	}
	content, _ := json.Marshal(res.Content)
	return textResult(fmt.Sprintf("%saction=%s, content=%s", prefix, res.Action, content)), nil
}
