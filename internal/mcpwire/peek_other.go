//go:build !unix

package mcpwire

import "syscall"

// idleProbe cannot look at a socket without blocking here: an idle
// connection counts as open, and a call on one the server closed fails
// (and is retried when its tool allows it).
type idleProbe struct{}

func newIdleProbe() *idleProbe { return nil }

func (*idleProbe) peekIdle(syscall.RawConn) bool { return true }
