//go:build !race

package mcpwire

const raceEnabled = false
