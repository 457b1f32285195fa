package a2a

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"

	"github.com/a2aproject/a2a-go/v2/a2a"
)

// upContext is the context id the agent gets for owner's context ctxID.
// The agent sees every caller as reach, so a context id passed on as the
// caller sent it would let one caller join another's conversation (its
// history, its tasks' content) by naming it. Each principal has its own
// context ids at the agent instead: a hash of the tenant, the principal
// and the caller's id, in one namespace per owner. Whatever a caller
// names, even a context id of the agent's it has seen, is hashed with its
// own principal, and so never lands in another's. The same on every
// instance and after a restart, with nothing to store: a caller that
// names its context again continues its conversation there.
func upContext(owner Owner, ctxID string) string {
	h := sha256.New()
	for _, s := range []string{owner.Tenant, owner.Principal, ctxID} {
		var n [8]byte
		binary.BigEndian.PutUint64(n[:], uint64(len(s)))
		h.Write(n[:])
		h.Write([]byte(s))
	}
	return "reach-ctx-" + hex.EncodeToString(h.Sum(nil)[:16])
}

// toCaller puts the caller's context id ctxID in place of the agent's in
// what the agent sent of a task: the caller sees only its own.
func toCaller(ev a2a.Event, ctxID string) {
	if ctxID == "" {
		return
	}
	msg := func(m *a2a.Message) {
		if m != nil && m.ContextID != "" {
			m.ContextID = ctxID
		}
	}
	switch e := ev.(type) {
	case *a2a.Message:
		e.ContextID = ctxID
	case *a2a.Task:
		e.ContextID = ctxID
		msg(e.Status.Message)
		for _, m := range e.History {
			msg(m)
		}
	case *a2a.TaskStatusUpdateEvent:
		e.ContextID = ctxID
		msg(e.Status.Message)
	case *a2a.TaskArtifactUpdateEvent:
		e.ContextID = ctxID
	}
}
