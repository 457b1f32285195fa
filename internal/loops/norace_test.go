//go:build !race

package loops

const raceEnabled = false
