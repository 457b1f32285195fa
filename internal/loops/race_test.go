//go:build race

package loops

// raceEnabled: the race detector allocates on its own, so allocation
// counts are not measured then.
const raceEnabled = true
