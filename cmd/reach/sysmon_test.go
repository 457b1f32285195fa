package main

import (
	"bytes"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
)

func TestSysmonEnv(t *testing.T) {
	for _, c := range []struct {
		env  []string
		want []string // nil: unchanged, no re-exec
	}{
		{[]string{"HOME=/h"}, []string{"HOME=/h", "GODEBUG=" + sysmonAwake}},
		{[]string{"GODEBUG=", "A=b"}, []string{"GODEBUG=" + sysmonAwake, "A=b"}},
		{[]string{"GODEBUG=madvdontneed=1", "A=b"}, []string{"GODEBUG=madvdontneed=1," + sysmonAwake, "A=b"}},
		{[]string{"GODEBUG=schedtrace=0"}, nil},
		{[]string{"GODEBUG=gctrace=1,schedtrace=1000"}, nil},
		{[]string{"GODEBUG=myschedtrace=1"}, []string{"GODEBUG=myschedtrace=1," + sysmonAwake}},
	} {
		got, ok := sysmonEnv(c.env)
		if c.want == nil {
			if ok || !slices.Equal(got, c.env) {
				t.Errorf("sysmonEnv(%q) = %q, %v; want it unchanged, false", c.env, got, ok)
			}
			continue
		}
		if !ok || !slices.Equal(got, c.want) {
			t.Errorf("sysmonEnv(%q) = %q, %v; want %q, true", c.env, got, ok, c.want)
		}
	}
}

// TestServeRunsWithSysmonAwake starts `reach serve` as a user would and
// reads the environment of the process that serves (the same process id:
// it ran itself again): sysmonAwake is in its GODEBUG, beside what the
// user set, and a GODEBUG that sets schedtrace is left as it is.
func TestServeRunsWithSysmonAwake(t *testing.T) {
	if _, err := os.Stat("/proc/self/environ"); err != nil {
		t.Skip("no /proc to read a process's environment from")
	}
	for _, c := range []struct{ godebug, want string }{
		{"", "GODEBUG=" + sysmonAwake},
		{"madvdontneed=1", "GODEBUG=madvdontneed=1," + sysmonAwake},
		{"schedtrace=0", "GODEBUG=schedtrace=0"},
	} {
		t.Run(fmt.Sprintf("GODEBUG=%s", c.godebug), func(t *testing.T) {
			addr := freeAddr(t)
			cmd := serveCmd(t, "", addr, t.TempDir(), "GODEBUG="+c.godebug)
			var out bytes.Buffer
			cmd.Stdout, cmd.Stderr = &out, &out
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
			if !serving(addr, 3000) {
				t.Fatalf("reach serve did not start on %s", addr)
			}
			b, err := os.ReadFile(fmt.Sprintf("/proc/%d/environ", cmd.Process.Pid))
			if err != nil {
				t.Fatal(err)
			}
			var godebug []string
			for kv := range strings.SplitSeq(string(b), "\x00") {
				if strings.HasPrefix(kv, "GODEBUG=") {
					godebug = append(godebug, kv)
				}
			}
			if !slices.Equal(godebug, []string{c.want}) {
				t.Errorf("the serving process's GODEBUG is %q, want %q", godebug, c.want)
			}
		})
	}
}
