//go:build !unix

package crashpoint

// stop blocks the goroutine at the point until the process is killed.
func stop() { select {} }
