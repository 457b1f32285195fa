// Package testport hands tests loopback ports for servers that a process
// other than the test binds later (a reach serve the test starts, a
// PostgreSQL cluster), and binds again after a kill or a halt.
//
// A port taken with a listen on port 0 and closed is in the kernel's
// ephemeral range (ip_local_port_range): the kernel hands ports of that
// range to every listener on port 0 and to every outbound connection, of
// this process and of the other packages' tests that run beside it. One
// taken between the check and the server's bind, or while the server is
// down for a restart, fails the bind with "address already in use"; an
// outbound connection holds its port a minute more in TIME_WAIT, which a
// listener's SO_REUSEADDR does not pass. So the ports come from below that
// range, where the kernel hands out none, are checked free, and no port is
// handed out twice in one process.
//
// Nor by two processes: the test binaries of several packages run at once
// (go test ./...), and each hands out ports that a server of its own binds
// later, or binds again after a restart, while the port is free. The span
// below the range is cut in blocks of blockSize ports; a process hands out
// the ports of the blocks it claimed only, and claims a block for as long
// as it lives with a unix socket of the abstract namespace named after the
// block (Linux), which another process's claim of the same block fails on,
// and which the kernel drops when the process ends, killed too.
package testport

import (
	"errors"
	"math/rand/v2"
	"net"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
)

// blockSize is how many ports a claim holds: one file descriptor for
// that many ports, not one for each.
const blockSize = 64

var given struct {
	sync.Mutex
	ports  map[int]bool   // handed out here, or found in use
	blocks []int          // the blocks claimed here, by their first port, in the order claimed
	claims []net.Listener // their claims (claim), held until the process ends
}

// claimPrefix names a block's claim in the abstract namespace.
const claimPrefix = "@agentreach-testport/"

// claim claims the block of ports from first for this process, with given
// held, and reports whether no other process claimed it. Where the
// abstract namespace is missing (not Linux), or a claim cannot be made (no
// file descriptor left), it reports true: its ports are checked free, as
// before claims.
func claim(first int) bool {
	if runtime.GOOS != "linux" {
		return true
	}
	ln, err := net.Listen("unix", claimPrefix+strconv.Itoa(first))
	if err != nil {
		return !errors.Is(err, syscall.EADDRINUSE)
	}
	given.claims = append(given.claims, ln)
	return true
}

// Free returns a loopback port nobody listens on, below the kernel's
// ephemeral range when it can read it (Linux), not returned before in this
// process, nor by another process using this package. Elsewhere it returns
// a port the kernel chose (port 0).
func Free() (int, error) {
	given.Lock()
	defer given.Unlock()
	if given.ports == nil {
		given.ports = map[int]bool{}
	}
	if low := ephemeralLow(); low > 2048 {
		first := max(1024, low-16384)
		n := (low - first) / blockSize
		for {
			for _, b := range given.blocks {
				if p, ok := freeIn(b); ok {
					return p, nil
				}
			}
			// A new block, at random: two processes rarely try the same
			// one, and the claim settles it when they do. One another
			// process holds may be free later (it ended): it is not
			// remembered.
			claimed := false
			for range 4 * n {
				b := first + rand.IntN(n)*blockSize
				if slices.Contains(given.blocks, b) || !claim(b) {
					continue
				}
				claimed = true
				given.blocks = append(given.blocks, b)
				break
			}
			if !claimed {
				break // every block handed out here, or held by others
			}
		}
	}
	for range 100 {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return 0, err
		}
		p := ln.Addr().(*net.TCPAddr).Port
		ln.Close()
		if !given.ports[p] {
			given.ports[p] = true
			return p, nil
		}
	}
	return 0, errors.New("testport: no free loopback port")
}

// freeIn returns a port of the block from first not handed out before and
// free now, with given held.
func freeIn(first int) (int, bool) {
	for p := first; p < first+blockSize; p++ {
		if given.ports[p] {
			continue
		}
		given.ports[p] = true // handed out, or in use by a process that claims nothing
		ln, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(p)))
		if err != nil {
			continue
		}
		ln.Close()
		return p, true
	}
	return 0, false
}

// Addr is Free's port as a loopback host:port.
func Addr() (string, error) {
	p, err := Free()
	if err != nil {
		return "", err
	}
	return net.JoinHostPort("127.0.0.1", strconv.Itoa(p)), nil
}

// ephemeralLow is the first port of the kernel's ephemeral range, or 0 if
// it cannot be read.
func ephemeralLow() int {
	b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if err != nil {
		return 0
	}
	f := strings.Fields(string(b))
	if len(f) == 0 {
		return 0
	}
	n, err := strconv.Atoi(f[0])
	if err != nil {
		return 0
	}
	return n
}
