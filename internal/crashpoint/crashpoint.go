// Package crashpoint stops the process at a named durable point, for the
// crash tests that kill it there:
//
//	crashpoint.Reached("executing") // after the "executing" checkpoint is durable
//
// Only the environment variable REACH_TEST_CRASH_AT, which the tests set,
// arms it: "NAME" stops at the first time the point NAME is reached,
// "NAME#N" at the Nth. Then Reached writes "reach: crash point NAME#N" to
// stderr and stops the whole process (SIGSTOP, where there is one), so
// that the test kills it (kill -9) with nothing run after the point.
// "NAME#N+go" pauses there instead: the process stops (SIGSTOP) and,
// continued (SIGCONT), goes on past the point, as after a VM pause.
// Unarmed, as always in production, Reached compares a string and returns.
package crashpoint

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync/atomic"
)

// Env is the environment variable that arms a crash point.
const Env = "REACH_TEST_CRASH_AT"

var (
	point, nth, resume = parseEnv(os.Getenv(Env))
	seen               atomic.Int64
)

func parseEnv(v string) (string, int64, bool) {
	v, resume := strings.CutSuffix(v, "+go")
	name, n := parse(v)
	return name, n, resume
}

func parse(v string) (string, int64) {
	name, n, ok := strings.Cut(v, "#")
	if !ok {
		return name, 1
	}
	i, err := strconv.ParseInt(n, 10, 64)
	if err != nil || i < 1 {
		return name, 1
	}
	return name, i
}

// Reached marks the point name: when it is the armed point, reached for
// the armed time, the process stops there. Unarmed it is one load and one
// comparison, inlined where it is called: the rest is in reached.
func Reached(name string) {
	if point != "" {
		reached(name)
	}
}

func reached(name string) {
	if name != point || seen.Add(1) != nth {
		return
	}
	if resume {
		fmt.Fprintf(os.Stderr, "reach: crash point %s#%d+go\n", name, nth)
		pause()
		return
	}
	fmt.Fprintf(os.Stderr, "reach: crash point %s#%d\n", name, nth)
	stop()
}
