package testport

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"testing"
)

// The ports handed out are free (a listener binds each), differ from one
// another, and, where the kernel's ephemeral range can be read, lie below
// it: no listener on port 0 nor outbound connection can take one between
// Free and the bind.
func TestFree(t *testing.T) {
	low := ephemeralLow()
	seen := map[int]bool{}
	for range 200 {
		p, err := Free()
		if err != nil {
			t.Fatal(err)
		}
		if seen[p] {
			t.Fatalf("port %d handed out twice", p)
		}
		seen[p] = true
		if low > 2048 && (p >= low || p < 1024) {
			t.Fatalf("port %d is not below the ephemeral range (from %d)", p, low)
		}
		ln, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(p)))
		if err != nil {
			t.Fatalf("port %d handed out as free: %v", p, err)
		}
		ln.Close()
	}
	if a, err := Addr(); err != nil || seen[mustPort(t, a)] {
		t.Fatalf("Addr = %q, %v; want a loopback address not handed out before", a, err)
	}
}

func mustPort(t *testing.T, addr string) int {
	t.Helper()
	_, p, err := net.SplitHostPort(addr)
	if err != nil {
		t.Fatal(err)
	}
	n, err := strconv.Atoi(p)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// TestFreeNotTwiceAcrossProcesses: another test binary (this one run
// again) takes 8,192 ports (half the span) and stays; the 512 ports this
// one takes then are none of its, though none of them is bound yet (as the
// servers that bind them later are not). Without claims the two processes
// shared ports in 255 runs of 256: this one's 8 blocks, drawn at random,
// all missed the other's 128 once in 256.
func TestFreeNotTwiceAcrossProcesses(t *testing.T) {
	if os.Getenv("TESTPORT_CHILD") == "1" {
		for range 8192 {
			p, err := Free()
			if err != nil {
				fmt.Println("error", err)
				os.Exit(1)
			}
			fmt.Println(p)
		}
		fmt.Println("done")
		io.Copy(io.Discard, os.Stdin) // the claims held until the parent lets go
		os.Exit(0)
	}
	if runtime.GOOS != "linux" || ephemeralLow() <= 2048 {
		t.Skip("claims across processes are made on Linux")
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(exe, "-test.run", "^TestFreeNotTwiceAcrossProcesses$")
	cmd.Env = append(os.Environ(), "TESTPORT_CHILD=1")
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Wait()
	defer stdin.Close()
	theirs := map[int]bool{}
	lines := bufio.NewScanner(out)
	for lines.Scan() && lines.Text() != "done" {
		p, err := strconv.Atoi(lines.Text())
		if err != nil {
			t.Fatalf("the other process: %q", lines.Text())
		}
		theirs[p] = true
	}
	if len(theirs) != 8192 {
		t.Fatalf("the other process took %d ports, want 8192", len(theirs))
	}
	for range 512 {
		p, err := Free()
		if err != nil {
			t.Fatal(err)
		}
		// A port the kernel chose (port 0, once the span is used up: by
		// this process's earlier runs under -count) is claimed by nobody.
		if theirs[p] && p < ephemeralLow() {
			t.Fatalf("port %d handed out here while another process holds it", p)
		}
	}
}
