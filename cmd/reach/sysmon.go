package main

import "strings"

// sysmonAwake is the GODEBUG setting `reach serve` runs under unless
// GODEBUG sets schedtrace itself. With every P idle, the Go runtime's
// monitor thread (sysmon) sleeps until a goroutine enters a system call,
// which then wakes it (a futex wake, and a thread run on another core):
// one call at a time every P is idle between calls and while the upstream
// answers, so each call woke it twice, on the request's goroutine, as its
// first read after each wait (the client's request, the upstream's
// answer). A schedtrace period keeps sysmon from that deep sleep: it then
// polls, every 20 µs to 10 ms as it finds nothing to do, and no system
// call wakes it. The period is the largest (about 24.8 days): the runtime
// prints its scheduler line (and, in a fatal error, the scheduler's state)
// once per period, the first as soon as the machine has been up that long.
// Under load no P stays idle, sysmon never sleeps that way, and nothing
// changes (docs/BENCHMARKS.md, "read16: a read one at a time, where its
// wall time goes").
const sysmonAwake = "schedtrace=2147483647"

// reexecServe lets `reach serve` run itself again under sysmonAwake
// (awakeSysmon): main sets it, and the tests that run their binary as
// `reach serve`; in-process tests, which call run, never replace their
// process.
var reexecServe bool

// sysmonEnv returns env with sysmonAwake added to its GODEBUG, and false
// when GODEBUG sets schedtrace already (whatever its value: GODEBUG=
// schedtrace=0 runs with the runtime's default).
func sysmonEnv(env []string) ([]string, bool) {
	out := make([]string, 0, len(env)+1)
	found := false
	for _, kv := range env {
		v, ok := strings.CutPrefix(kv, "GODEBUG=")
		if !ok {
			out = append(out, kv)
			continue
		}
		for f := range strings.SplitSeq(v, ",") {
			if strings.HasPrefix(f, "schedtrace=") {
				return env, false
			}
		}
		if !found {
			found = true
			if v != "" {
				v += ","
			}
			out = append(out, "GODEBUG="+v+sysmonAwake)
		}
	}
	if !found {
		out = append(out, "GODEBUG="+sysmonAwake)
	}
	return out, true
}
