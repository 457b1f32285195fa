package a2a

import (
	"encoding/json"
	"maps"
	"slices"

	"github.com/a2aproject/a2a-go/v2/a2a"

	"github.com/agentreach/reach/internal/redact"
)

// Redactor masks secrets (internal/redact's Redactor): what an agent says
// is masked as a tool's result is, before reach keeps it, records it or
// passes it on.
type Redactor interface {
	RedactString(s string) string
	Redact(b []byte) []byte
	// Values masks the configured secret values in b only (an agent's
	// card, JSON whose members are the card's, not the caller's).
	Values(b []byte) []byte
	// Blocks masks texts as their concatenation would be (a value one
	// ends and the next begins is masked too).
	Blocks(texts []string) []string
	// Stream masks a text that comes in pieces (joinChunks).
	Stream() *redact.Stream
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
// metadata of each; a file's URL, name and media type as texts (an agent
// may write a link with the key reach reaches it with, and the caller's
// model reads them as it reads the text); the bytes of a file are masked
// of the configured values only (Values: a name alone says nothing of
// bytes), and left as they are when they hold none.
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
		red := g.opts.Redactor
		p.Filename, p.MediaType = red.RedactString(p.Filename), red.RedactString(p.MediaType)
		switch c := p.Content.(type) {
		case a2a.Text:
			run, texts = append(run, p), append(texts, string(c))
			continue
		case a2a.Data:
			p.Content = a2a.Data{Value: maskData(g, c.Value)}
		case a2a.URL:
			if m := red.RedactString(string(c)); m != string(c) {
				p.Content = a2a.URL(m)
			}
		case a2a.Raw:
			// A file's bytes: the configured values in them masked, as
			// in a text (a settings file, a log with the agent's key);
			// bytes that hold none are passed on as they are.
			if m := red.Values(c); string(m) != string(c) {
				p.Content = a2a.Raw(m)
			}
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

// joinChunks masks the text of an artifact the agent streams in chunks as
// one text (t.mu held), before the event is masked whole (mask): a value
// that one chunk ends and the next begins is masked, as the model route
// masks its deltas, where a caller that joins the chunks would see it
// whole. Each chunk passes on its text but for the end of it that may
// begin a value, held for the next; its last chunk, a new version of the
// artifact, or the task's stop (flushChunks) lets it go. It returns an
// event to pass on before e: the end held of the version e replaces.
func (t *task) joinChunks(e *a2a.TaskArtifactUpdateEvent) (before *a2a.TaskArtifactUpdateEvent) {
	red := t.g.opts.Redactor
	if red == nil || e.Artifact == nil || t.snap == nil || e.TaskID != t.id || t.state.Terminal() {
		// Nor for an event the task does not take (apply): another task's
		// chunk would have its end let go as this task's, and chunks
		// streamed after the end would each keep a stream here.
		return nil
	}
	id := e.Artifact.ID
	st := t.chunks[id]
	if st != nil && !e.Append {
		before = t.heldChunk(id, st)
		st = nil
	}
	if st == nil {
		if e.LastChunk {
			delete(t.chunks, id)
			return before // the artifact whole: masked so
		}
		st = red.Stream()
	}
	// The end held moves to the next text part, in this chunk or the
	// next; before a part of another kind, or at the artifact's end, it
	// is let go into the text part before, or a text part of its own.
	var parts a2a.ContentParts
	letGo := func() {
		rest := st.Flush()
		if rest == "" {
			return
		}
		if n := len(parts); n > 0 && parts[n-1] != nil {
			if c, ok := parts[n-1].Content.(a2a.Text); ok {
				parts[n-1].Content = c + a2a.Text(rest)
				return
			}
		}
		parts = append(parts, a2a.NewTextPart(rest))
	}
	for _, p := range e.Artifact.Parts {
		var text a2a.Text
		ok := false
		if p != nil {
			text, ok = p.Content.(a2a.Text)
		}
		if !ok {
			letGo()
			parts = append(parts, p)
			continue
		}
		p.Content = a2a.Text(st.Next(string(text)))
		parts = append(parts, p)
	}
	if e.LastChunk {
		letGo()
		delete(t.chunks, id)
	} else {
		if t.chunks == nil {
			t.chunks = map[a2a.ArtifactID]*redact.Stream{}
		}
		t.chunks[id] = st
	}
	e.Artifact.Parts = parts
	return before
}

// heldChunk is an event that appends the end held of artifact id's text,
// masked (t.mu held); nil when none is held.
func (t *task) heldChunk(id a2a.ArtifactID, st *redact.Stream) *a2a.TaskArtifactUpdateEvent {
	delete(t.chunks, id)
	rest := st.Flush()
	if rest == "" {
		return nil
	}
	ev := &a2a.TaskArtifactUpdateEvent{TaskID: t.id, ContextID: t.ctxID, Append: true,
		Artifact: &a2a.Artifact{ID: id, Parts: a2a.ContentParts{a2a.NewTextPart(rest)}}}
	t.g.mask(ev)
	return ev
}

// flushChunks passes on what is held of the artifacts streamed in chunks
// (t.mu held), before the task stops: its listeners' streams end there.
func (t *task) flushChunks() {
	for _, id := range slices.Sorted(maps.Keys(t.chunks)) {
		if ev := t.heldChunk(id, t.chunks[id]); ev != nil && t.snap != nil {
			t.held += addArtifact(t.snap, &t.arts, ev)
			t.push(ev)
		}
	}
}
