package a2a

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/a2aproject/a2a-go/v2/a2a"

	"github.com/agentreach/reach/internal/redact"
)

// TestAttack33FilePartsMasked: what an agent sends in a file part, its URL,
// its file name and its media type, is masked as its texts are, in a
// message, a status and an artifact: an agent reached with a key in its
// URL (?key=...) may link its files with that key, and the caller's model
// reads the link as it reads the text. Only the text, data and metadata
// were masked.
func TestAttack33FilePartsMasked(t *testing.T) {
	const key = "ak-agent-attack33-5e4d3c2b1a"
	red, err := redact.New(nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := red.Add(key); err != nil {
		t.Fatal(err)
	}
	g := &Gateway{opts: Options{Redactor: red}}
	file := func() *a2a.Part {
		p := a2a.NewFileURLPart(a2a.URL("https://agent.example/files/report.pdf?key="+key), "application/pdf; k="+key)
		p.Filename = "report-" + key + ".pdf"
		return p
	}
	raw := a2a.NewRawPart([]byte("%PDF-1.7"))
	raw.Filename = key + ".bin"
	msg := a2a.NewMessage(a2a.MessageRoleAgent, a2a.NewTextPart("here"), file())
	for _, ev := range []a2a.Event{
		msg,
		&a2a.Task{ID: "t1", ContextID: "c1", Status: a2a.TaskStatus{State: a2a.TaskStateCompleted, Message: a2a.NewMessage(a2a.MessageRoleAgent, file())},
			Artifacts: []*a2a.Artifact{{ID: "a1", Parts: a2a.ContentParts{file(), raw}}}},
		&a2a.TaskArtifactUpdateEvent{TaskID: "t1", ContextID: "c1", Artifact: &a2a.Artifact{ID: "a2", Parts: a2a.ContentParts{file()}}},
	} {
		g.mask(ev)
		b, err := json.Marshal(ev)
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(string(b), key) {
			t.Errorf("the agent's key is in what reach passes on: %s", b)
		}
		if !strings.Contains(string(b), "https://agent.example/files/report.pdf?key=") {
			t.Errorf("the file's link lost what was not secret: %s", b)
		}
	}
}
