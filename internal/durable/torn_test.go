package durable

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/agentreach/reach/internal/store"
)

// TestCrashTornUpstreamLine is the kill TestCrashRecovery once failed on
// (chain 23 there): the child was killed while its tool wrote the line of
// a chain's second write, and left it half written; the restarted
// gateway's undo of the first write was appended to that half line, and
// the checker read the two as one "do" line, so the undo that ran looked
// missing ("step 1 completed but was not undone", "write 23/1 ... neither
// undone nor reported"), while recovery had run it. The upstream's file,
// reopened, ends the torn line first; the checker reads whole lines only,
// and wants the torn write among the calls that may have run.
func TestCrashTornUpstreamLine(t *testing.T) {
	const torn = "do chain=2 step=2 key=book:4522b247" // the kill cut it off here
	child := "" +
		"do chain=1 step=1 key=book:9d401f0343f1a945bb71ca3dacb395c0\n" +
		"do chain=1 step=2 key=book:cb9d8124ad3ec8255c4afa851f25b094\n" +
		"do chain=1 step=3 key=book:3ed3411a598658007e751b8839356d28\n" +
		"do chain=2 step=1 key=book:3a383d27c95fd4950390111951897033\n" + torn
	undo := fmt.Sprintf(upstreamLine+"\n", "undo", 2, 1, "unbook:undo:6b14e5cf9afe7a3c")
	frame := func(step int, state string) *store.Frame {
		return &store.Frame{Request: "chain-2", Name: "book", State: state, Args: json.RawMessage(fmt.Sprintf(`{"chain":2,"step":%d}`, step))}
	}
	cut := frame(2, "cancelled")
	frames := map[string][]*store.Frame{"chain-2": {frame(1, "completed"), cut}}
	rep := &Report{Interrupted: []string{"chain-2"}, MayHaveRun: []*store.Frame{cut}}

	// The restarted gateway reopens the file and undoes the first write.
	path := filepath.Join(t.TempDir(), "upstream.log")
	if err := os.WriteFile(path, []byte(child), 0o644); err != nil {
		t.Fatal(err)
	}
	u := upstreamFile(t, path)
	if u.torn != torn {
		t.Fatalf("the torn line read as %q, want %q", u.torn, torn)
	}
	u.f.WriteString(undo)
	u.f.Close()
	log, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if want := child + "\n" + undo; string(log) != want {
		t.Fatalf("upstream after the restart:\n%s\nwant:\n%s", log, want)
	}
	if p := sideEffectProblems(log, u.torn, rep, frames); len(p) > 0 {
		t.Errorf("recovery that undid the completed write and reported the torn one: %q", p)
	}

	// The checker still fails what is wrong.
	for _, tc := range []struct {
		what  string
		log   string
		torn  string
		rep   *Report
		wants []string
	}{
		{what: "the undo never ran", log: child + "\n", torn: torn, rep: rep,
			wants: []string{"chain-2 step 1 completed but was not undone", "write 2/1 of an interrupted chain was neither undone nor reported"}},
		{what: "the torn write not reported", log: child + "\n" + undo, torn: torn, rep: &Report{Interrupted: []string{"chain-2"}},
			wants: []string{`the write the kill tore ("do chain=2 step=2 key=book:4522b247") is not among the calls that may have run`}},
		{what: "the undo appended to the torn line", log: child + undo, rep: rep,
			wants: []string{"bad line \"do chain=2 step=2 key=book:4522b247undo chain=2 step=1 key=unbook:undo:6b14e5cf9afe7a3c\"",
				"chain-2 step 1 completed but was not undone", "write 2/1 of an interrupted chain was neither undone nor reported"}},
		{what: "a write run twice", log: child + "\n" + undo + strings.SplitAfter(child, "\n")[0], torn: torn, rep: rep,
			wants: []string{"do ran twice under key book:9d401f0343f1a945bb71ca3dacb395c0"}},
	} {
		got := sideEffectProblems([]byte(tc.log), tc.torn, tc.rep, frames)
		want := slices.Sorted(slices.Values(tc.wants))
		if !slices.Equal(got, want) {
			t.Errorf("%s: problems %q, want %q", tc.what, got, want)
		}
	}
}
