package front

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"
)

// TestSDKLinesAtDebug: the SDK's INFO lines (three or four a session) are
// logged at DEBUG, shown only when the log level asks for them; its
// warnings stay warnings. A session id in them is its short hash.
func TestSDKLinesAtDebug(t *testing.T) {
	const id = "JDW6HKQFVNLGJTEWXSBBSPET7X"
	for _, level := range []slog.Level{slog.LevelInfo, slog.LevelDebug} {
		var buf bytes.Buffer
		s := &Server{log: slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: level}))}
		log := s.sdkLogger("mcp")
		log.Info("server session connected", "session_id", id)
		log.Warn("failed to connect", "session_id", id)
		out := buf.String()
		if got := strings.Contains(out, "server session connected"); got != (level == slog.LevelDebug) {
			t.Errorf("at %v the SDK's INFO line is shown: %v\n%s", level, got, out)
		}
		if level == slog.LevelDebug && !strings.Contains(out, `level=DEBUG msg="server session connected"`) {
			t.Errorf("at DEBUG the SDK's INFO line is not a DEBUG one:\n%s", out)
		}
		if !strings.Contains(out, `level=WARN msg="failed to connect" component=mcp session_id=`+string(SessionRefOf(id))) {
			t.Errorf("at %v the SDK's warning is not shown with the session's hash:\n%s", level, out)
		}
		if strings.Contains(out, id) {
			t.Errorf("the log shows the session id:\n%s", out)
		}
	}
}
