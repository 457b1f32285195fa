//go:build pprof

package main

// A build with `-tags pprof` serves net/http/pprof on the loopback address
// REACH_PPROF names (e.g. 127.0.0.1:6060), to profile `reach serve` under
// load (docs/BENCHMARKS.md). Release builds do not have it.

import (
	"fmt"
	"net"
	"net/http"
	_ "net/http/pprof"
	"os"
)

func init() {
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
