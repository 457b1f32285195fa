package servebench

import (
	"slices"
	"strconv"
	"strings"
	"testing"
)

// ev is one StateTransition of `go tool trace -d=parsed`, with its
// goroutine's stack (innermost first) when it has one.
func ev(goid, at int, tr string, stack ...string) string {
	var b strings.Builder
	b.WriteString("M=1 P=0 G=" + strconv.Itoa(goid) + " StateTransition Time=" + strconv.Itoa(at) + " GoID=" + strconv.Itoa(goid) + " " + tr + " Reason=\"\"\n")
	if len(stack) > 0 {
		b.WriteString("TransitionStack=\n")
		for _, f := range stack {
			b.WriteString("\t" + f + " @ 0x1\n\t\t/src/x.go:1\n")
		}
	}
	return b.String()
}

// A served write laid out in its stages: the times between the client's
// write, reach's wake-ups and writes, and the client's read loop's wake,
// and, inside reach's stages, its goroutine's states by what it did.
func TestAccountStages(t *testing.T) {
	const (
		fast   = "github.com/agentreach/reach/internal/httpapi.(*Server).answerFast"
		serve  = "github.com/valyala/fasthttp.(*Server).serveConnCounted"
		upRead = "github.com/agentreach/reach/internal/mcpwire.(*source).Read"
		rt     = "github.com/agentreach/reach/internal/mcpwire.(*Conns).RoundTrip"
		sqlite = "github.com/mattn/go-sqlite3._Cfunc__sqlite3_step_row_internal"
		wl     = "net/http.(*persistConn).writeLoop"
		rl     = "net/http.(*persistConn).readLoop"
	)
	served := ev(7, 900, "Running->Waiting", "internal/poll.(*FD).Read", "github.com/valyala/fasthttp.acquireByteReader", serve) +
		ev(7, 1000, "Waiting->Runnable") + // the request: a
		ev(7, 1010, "Runnable->Running") +
		ev(7, 1100, "Running->Syscall", sqlite, fast) +
		ev(7, 1180, "Syscall->Running") +
		ev(7, 1200, "Running->Waiting", "runtime.selectgo", "github.com/agentreach/reach/internal/store/sqlcore.(*Writer).Do", fast) +
		ev(7, 1230, "Waiting->Runnable") +
		ev(7, 1240, "Runnable->Running") +
		ev(7, 1300, "Running->Syscall", "syscall.write", rt, fast, serve) + // b
		ev(7, 1310, "Syscall->Running") +
		ev(7, 1320, "Running->Waiting", "internal/poll.(*FD).Read", upRead, rt, fast) +
		ev(7, 1700, "Waiting->Runnable") + // c
		ev(7, 1705, "Runnable->Running") +
		ev(7, 1800, "Running->Syscall", "syscall.write", "bufio.(*Writer).Flush", serve) + // d
		ev(7, 1815, "Syscall->Running") +
		ev(7, 1820, "Running->Waiting", "internal/poll.(*FD).Read", "github.com/valyala/fasthttp.acquireByteReader", serve)
	client := ev(3, 940, "Running->Syscall", "syscall.write", "bufio.(*Writer).Flush", wl) +
		ev(3, 950, "Syscall->Running") +
		ev(4, 960, "Running->Waiting", "internal/poll.(*FD).Read", "bufio.(*Reader).Peek", rl) +
		ev(4, 1850, "Waiting->Runnable")
	s, err := parseTransitions(strings.NewReader(served))
	if err != nil {
		t.Fatal(err)
	}
	c, err := parseTransitions(strings.NewReader(client))
	if err != nil {
		t.Fatal(err)
	}
	acc := account(s, c)
	if len(acc["read"]) != 0 {
		t.Errorf("a write counted as a read: %v", acc["read"])
	}
	want := map[string]int64{
		stages[0]: 60, stages[1]: 300,
		stages[2]: 90 + 20 + 60, stages[3]: 80, stages[4]: 0, stages[5]: 10 + 10, stages[6]: 30,
		stages[7]: 400, stages[8]: 100,
		stages[9]: 95, stages[10]: 0, stages[11]: 5, stages[12]: 0,
		stages[13]: 50, stages[14]: 910,
	}
	for _, st := range stages {
		if got := acc["write"][st]; !slices.Equal(got, []int64{want[st]}) {
			t.Errorf("%s: %v, want [%d]", st, got, want[st])
		}
	}
}
