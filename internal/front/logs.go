package front

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"log/slog"
	"strings"
)

// sdkLogger is the logger of a part of the SDK (its server, its HTTP
// handlers): the gateway's, with session ids hidden (hideSessionIDs) and
// the SDK's INFO lines logged at DEBUG.
func (s *Server) sdkLogger(component string) *slog.Logger {
	return slog.New(hideSessionIDs{s.log.Handler()}).With("component", component)
}

// SessionRef is a session id's short hash in the log: no secret, so the
// log's redactor (the gateway's) leaves it as it is.
type SessionRef string

// SessionRefOf is how a session id appears in reach's log, whoever logs
// it: "#" and the first 12 hex digits of its SHA-256.
func SessionRefOf(id string) SessionRef {
	sum := sha256.Sum256([]byte(id))
	return SessionRef("#" + hex.EncodeToString(sum[:6]))
}

// SessionKey reports whether a log attribute's key names a session id
// (session_id, sessionId, session-id, ...).
func SessionKey(key string) bool {
	return strings.EqualFold(strings.NewReplacer("_", "", "-", "").Replace(key), "sessionid")
}

// sdkLevel is the level reach logs an SDK line at: its INFO lines (a
// session connecting, connected, initialized, disconnected: three or four
// a session) at DEBUG, shown when the log level asks for them; its
// warnings and errors as they are.
func sdkLevel(l slog.Level) slog.Level {
	if l < slog.LevelWarn {
		return slog.LevelDebug
	}
	return l
}

// hideSessionIDs replaces the value of every session_id attribute (the SDK
// logs one when a session connects, subscribes, ...) by a short hash of it:
// an Mcp-Session-Id is all a client on loopback needs to take a session
// over, and the hash still tells sessions apart in the log.
type hideSessionIDs struct{ h slog.Handler }

func (h hideSessionIDs) Enabled(ctx context.Context, l slog.Level) bool {
	return h.h.Enabled(ctx, sdkLevel(l))
}

func (h hideSessionIDs) Handle(ctx context.Context, rec slog.Record) error {
	out := slog.NewRecord(rec.Time, sdkLevel(rec.Level), rec.Message, rec.PC)
	rec.Attrs(func(a slog.Attr) bool {
		out.AddAttrs(hideSessionID(a))
		return true
	})
	return h.h.Handle(ctx, out)
}

func (h hideSessionIDs) WithAttrs(as []slog.Attr) slog.Handler {
	out := make([]slog.Attr, len(as))
	for i, a := range as {
		out[i] = hideSessionID(a)
	}
	return hideSessionIDs{h.h.WithAttrs(out)}
}

func (h hideSessionIDs) WithGroup(name string) slog.Handler {
	return hideSessionIDs{h.h.WithGroup(name)}
}

func hideSessionID(a slog.Attr) slog.Attr {
	v := a.Value.Resolve()
	switch {
	case v.Kind() == slog.KindGroup:
		as := v.Group()
		out := make([]any, len(as))
		for i, x := range as {
			out[i] = hideSessionID(x)
		}
		return slog.Group(a.Key, out...)
	case SessionKey(a.Key):
		if _, ok := v.Any().(SessionRef); ok {
			return a
		}
		s := v.String()
		if s == "" {
			return slog.Attr{} // a session without an id (stdio): none to show, and no mask either
		}
		return slog.Any(a.Key, SessionRefOf(s))
	}
	return a
}
