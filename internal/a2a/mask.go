package a2a

import (
	"encoding/json"

	"github.com/a2aproject/a2a-go/v2/a2a"
)

// Redactor masks secrets (internal/redact's Redactor): what an agent says
// is masked as a tool's result is, before reach keeps it, records it or
// passes it on.
type Redactor interface {
	RedactString(s string) string
	Redact(b []byte) []byte
	// Blocks masks texts as their concatenation would be (a value one
	// ends and the next begins is masked too).
	Blocks(texts []string) []string
}

// mask masks, in place, the texts and data an agent sent in ev: its
// messages', its status messages' and its artifacts' parts, and the
// metadata of each. An event is the gateway's own once read from the
// agent's stream or answer.
func (g *Gateway) mask(ev a2a.Event) {
	if g.opts.Redactor == nil {
		return
	}
	switch e := ev.(type) {
	case *a2a.Message:
		g.maskMessage(e)
	case *a2a.Task:
		e.Metadata = maskData(g, e.Metadata)
		g.maskMessage(e.Status.Message)
		for _, m := range e.History {
			g.maskMessage(m)
		}
		for _, a := range e.Artifacts {
			g.maskArtifact(a)
		}
	case *a2a.TaskStatusUpdateEvent:
		e.Metadata = maskData(g, e.Metadata)
		g.maskMessage(e.Status.Message)
	case *a2a.TaskArtifactUpdateEvent:
		e.Metadata = maskData(g, e.Metadata)
		g.maskArtifact(e.Artifact)
	}
}

func (g *Gateway) maskMessage(m *a2a.Message) {
	if m != nil {
		m.Metadata = maskData(g, m.Metadata)
		g.maskParts(m.Parts)
	}
}

func (g *Gateway) maskArtifact(a *a2a.Artifact) {
	if a != nil {
		a.Name = g.opts.Redactor.RedactString(a.Name)
		a.Description = g.opts.Redactor.RedactString(a.Description)
		a.Metadata = maskData(g, a.Metadata)
		g.maskParts(a.Parts)
	}
}

// maskParts masks text parts as text and a data part as JSON, and the
// metadata of each; the bytes of a file and a URL are left as they are.
// Text parts one after another are masked as their concatenation is, as a
// tool result's blocks are: a reader joins them (the SDKs' Text of a
// message or an artifact), and a value one ends and the next begins would
// show whole there.
func (g *Gateway) maskParts(ps a2a.ContentParts) {
	var run []*a2a.Part // text parts one after another
	var texts []string
	for _, p := range ps {
		if p == nil {
			continue
		}
		p.Metadata = maskData(g, p.Metadata)
		switch c := p.Content.(type) {
		case a2a.Text:
			run, texts = append(run, p), append(texts, string(c))
			continue
		case a2a.Data:
			p.Content = a2a.Data{Value: maskData(g, c.Value)}
		}
		g.maskTexts(run, texts)
		run, texts = run[:0], texts[:0]
	}
	g.maskTexts(run, texts)
}

// maskTexts masks the text parts run, whose texts are texts, as one text.
func (g *Gateway) maskTexts(run []*a2a.Part, texts []string) {
	if len(run) == 0 {
		return
	}
	for i, s := range g.opts.Redactor.Blocks(texts) {
		if s != texts[i] {
			run[i].Content = a2a.Text(s)
		}
	}
}

// maskData returns v (a JSON value) masked as JSON: v itself when nothing
// was masked.
func maskData[T any](g *Gateway, v T) T {
	b, err := json.Marshal(v)
	if err != nil {
		return v
	}
	m := g.opts.Redactor.Redact(b)
	if string(m) == string(b) {
		return v
	}
	var out T
	if json.Unmarshal(m, &out) != nil {
		return v
	}
	return out
}
