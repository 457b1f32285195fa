//go:build race

package upstream

// raceEnabled: the race detector allocates on its own and sync.Pool drops
// items at random under it, so allocation counts are not measured then.
const raceEnabled = true
