//go:build !unix

package mcpwire

import "syscall"

// idleProbe cannot look at a socket without blocking here: an idle
// connection counts as open, and a call on one the server closed fails
// (and is retried when its tool allows it).
type idleProbe struct{}

func newIdleProbe() *idleProbe { return nil }

func (*idleProbe) peekIdle(syscall.RawConn) bool { return true }

// readIdle cannot read without blocking here: nothing arrived, as far as
// it can tell (a connection whose answer's end is to come has it read in
// the background).
func (*idleProbe) readIdle(syscall.RawConn, []byte) (int, bool) { return 0, true }
