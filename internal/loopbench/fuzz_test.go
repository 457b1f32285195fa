package loopbench

import (
	"os"
	"path/filepath"
	"testing"
)

// FuzzTrace reads any trace file `reach bench loops DIR` may be given and
// replays what it accepts through the runtime and the baselines: never a
// panic or a hang, and each detector's flag, if any, names an event of the
// trace.
func FuzzTrace(f *testing.F) {
	files, _ := filepath.Glob("testdata/*.json")
	for _, p := range files {
		if b, err := os.ReadFile(p); err == nil {
			f.Add(b)
		}
	}
	f.Add([]byte(`{"id":"t","events":[{"id":"a","type":"tool_call","tool":"x","arguments":{}},{"id":"b","type":"tool_call","tool":"x","arguments":{},"parent":"a"}],"label":{"loop":true,"earliest":"b"}}`))
	f.Add([]byte(`{"id":"t","events":[{"id":"a","type":"delegate"},{"id":"b","type":"model","parent":"a"},{"id":"c","type":"tool_call","tool":"y","parent":"b","result":7}]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		tr, err := Decode(data)
		if err != nil {
			return
		}
		if len(tr.Events) > 300 {
			return // a long trace is no new shape, only a slow one
		}
		r := Run([]*Trace{tr}, nil)
		for name, flags := range r.Flags {
			if len(flags) != 1 {
				t.Fatalf("%s: %d flags for one trace", name, len(flags))
			}
			if at := flags[0].Flagged; at != nil && tr.Index(*at) < 0 {
				t.Fatalf("%s flagged %q, not an event of the trace", name, *at)
			}
		}
		Score(tr, r.Flags["reach"][0])
	})
}
