package a2a

import (
	"github.com/a2aproject/a2a-go/v2/a2a"

	"github.com/agentreach/reach/internal/reachmeta"
)

// Reach's metadata keys ("reach/request", "reach/frame", "reach/refusal",
// ...) are reach's word: a client links its calls by them and acts on
// reach/refusal as reach's refusal. Neither side writes them for reach:
// an agent's are dropped from what it sends (unforged), a caller's from
// what reach passes on (forward), where reach sets its own.

// reachKey reports whether k is one of reach's metadata keys.
func reachKey(k string) bool { return reachmeta.IsKey(k) }

// withoutReachKeys returns md without reach's keys: md itself when it has
// none, else a copy (md may be the caller's, or shared).
func withoutReachKeys(md map[string]any) map[string]any { return reachmeta.Without(md) }

// unforged drops, in place, the metadata keys of reach's that an agent
// wrote anywhere in ev: the task's, its messages', artifacts', parts' and
// the events' own.
func unforged(ev a2a.Event) {
	msg := func(m *a2a.Message) {
		if m == nil {
			return
		}
		m.Metadata = withoutReachKeys(m.Metadata)
		unforgedParts(m.Parts)
	}
	art := func(a *a2a.Artifact) {
		if a == nil {
			return
		}
		a.Metadata = withoutReachKeys(a.Metadata)
		unforgedParts(a.Parts)
	}
	switch e := ev.(type) {
	case *a2a.Message:
		msg(e)
	case *a2a.Task:
		if e == nil {
			return
		}
		e.Metadata = withoutReachKeys(e.Metadata)
		msg(e.Status.Message)
		for _, m := range e.History {
			msg(m)
		}
		for _, a := range e.Artifacts {
			art(a)
		}
	case *a2a.TaskStatusUpdateEvent:
		if e != nil {
			e.Metadata = withoutReachKeys(e.Metadata)
			msg(e.Status.Message)
		}
	case *a2a.TaskArtifactUpdateEvent:
		if e != nil {
			e.Metadata = withoutReachKeys(e.Metadata)
			art(e.Artifact)
		}
	}
}

func unforgedParts(ps a2a.ContentParts) {
	for _, p := range ps {
		if p != nil {
			p.Metadata = withoutReachKeys(p.Metadata)
		}
	}
}
