//go:build !unix

package crashpoint

// stop blocks the goroutine at the point until the process is killed.
func stop() { select {} }

// pause does nothing where a process cannot stop itself.
func pause() {}
