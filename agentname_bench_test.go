package reach

import "testing"

// BenchmarkAgentName: what naming a request's agent adds to Begin, for a
// client's usual name (printable ASCII, kept as it is).
func BenchmarkAgentName(b *testing.B) {
	for b.Loop() {
		agentName("@modelcontextprotocol/inspector-cli")
	}
}
