//go:build race

package mcpwire

// raceEnabled: sync.Pool drops items at random under the race detector,
// so allocation counts of pooled paths are not measured then.
const raceEnabled = true
