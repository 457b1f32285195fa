package main

import (
	"strings"
	"testing"
)

// TestStoreFlagErrorSaysTheFlag: a store named by --store that does not
// answer is reported as --store's, what the user typed, for each command
// that takes it; it said "check the store: URL", the configuration's key.
func TestStoreFlagErrorSaysTheFlag(t *testing.T) {
	url := "postgres://reach@" + freeAddr(t) + "/reach?sslmode=disable&connect_timeout=2"
	for _, args := range [][]string{
		{"tools", "list", "--store", url},
		{"deadletters", "list", "--store", url},
		{"audit", "verify", "--store", url},
	} {
		_, err := runCLI(t, args...)
		if err == nil {
			t.Fatalf("%v: no error with nothing listening", args)
		}
		msg := err.Error()
		if !strings.HasPrefix(msg, "--store: connecting to PostgreSQL at ") || !strings.Contains(msg, "check its URL and that the server runs") ||
			strings.Contains(msg, "store: URL") {
			t.Errorf("%v: %q; want it to begin --store: and say to check its URL", args, msg)
		}
	}
}
