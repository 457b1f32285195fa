package reach

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"
	"unicode"
	"unicode/utf8"
)

// maxAgentName bounds the name of a request's agent, in bytes.
const maxAgentName = 128

// agentName is the name a request's agent is shown and recorded by: the
// name its client gave (an MCP client's clientInfo.name, free text the
// client picks) without control and format characters (a right-to-left
// override or a zero-width space would make one agent look like another on
// the UI's pages and in the audit), and at most maxAgentName bytes: it is
// written into every audit event of the request, and a 4 MiB name (within
// a request body's bound) made each call of a session write 4 MiB. A longer
// name keeps its start and a hash of the whole, so two names stay two.
// Empty, "main".
func agentName(s string) string {
	if plain(s) {
		return orMain(s)
	}
	var b strings.Builder
	for _, r := range strings.ToValidUTF8(s, "\uFFFD") {
		if unicode.IsControl(r) || unicode.Is(unicode.Cf, r) || r == '\u2028' || r == '\u2029' {
			continue
		}
		b.WriteRune(r)
	}
	clean := strings.TrimSpace(b.String())
	if len(clean) <= maxAgentName {
		return orMain(clean)
	}
	sum := sha256.Sum256([]byte(s))
	tail := "…" + hex.EncodeToString(sum[:4])
	cut := maxAgentName - len(tail)
	for cut > 0 && !utf8.RuneStart(clean[cut]) {
		cut--
	}
	return clean[:cut] + tail
}

// plain reports whether s is a name agentName keeps as it is: printable
// ASCII within the bound, not starting or ending with a space.
func plain(s string) bool {
	if len(s) > maxAgentName || s != "" && (s[0] == ' ' || s[len(s)-1] == ' ') {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < 0x20 || s[i] > 0x7e {
			return false
		}
	}
	return true
}

func orMain(s string) string {
	if s == "" {
		return "main"
	}
	return s
}
