// Package servebench measures reach as users run it: the reach binary
// (`reach serve`, its data folder and store on) in front of a real go-sdk
// upstream, side by side in one run with a direct call, a raw TCP relay (the
// floor of any hop), an HTTP pass-through on fasthttp (a hop that parses
// HTTP and checks nothing) and, when one is named, an outside gateway.
//
// The package holds only benchmarks (served_test.go); see
// docs/BENCHMARKS.md for the commands and the figures.
package servebench
