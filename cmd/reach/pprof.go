//go:build pprof

package main

// A build with `-tags pprof` serves net/http/pprof on the loopback address
// REACH_PPROF names (e.g. 127.0.0.1:6060), to profile `reach serve` under
// load (docs/BENCHMARKS.md), and sets runtime.MemProfileRate from
// REACH_MEMPROFILERATE (1: every allocation in the heap profile; 0: none,
// as in a release build, which still maps the 1.4 MB bucket table for the
// one allocation sampled before the runtime turns profiling off). Release
// builds do not have either.

import (
	"fmt"
	"net"
	"net/http"
	_ "net/http/pprof"
	"os"
	"runtime"
	"strconv"
)

func init() {
	if v := os.Getenv("REACH_MEMPROFILERATE"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 {
			fmt.Fprintf(os.Stderr, "reach: REACH_MEMPROFILERATE must be a number of bytes, 0 or more, not %q\n", v)
			os.Exit(2)
		}
		runtime.MemProfileRate = n // for what is allocated from here on (the imported packages' inits ran before)
	}
	addr := os.Getenv("REACH_PPROF")
	if addr == "" {
		return
	}
	if host, _, err := net.SplitHostPort(addr); err != nil || !net.ParseIP(host).IsLoopback() {
		fmt.Fprintf(os.Stderr, "reach: REACH_PPROF must be a loopback host:port such as 127.0.0.1:6060, not %q\n", addr)
		os.Exit(2)
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		fmt.Fprintln(os.Stderr, "reach: REACH_PPROF:", err)
		os.Exit(2)
	}
	go http.Serve(ln, http.DefaultServeMux)
}
