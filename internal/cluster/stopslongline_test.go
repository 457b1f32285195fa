package cluster

import (
	"bytes"
	"testing"
)

// TestReadStopsPastALongLine: a line of a stops file longer than
// maxStopLine (bytes of a broken disk with no line end among them) is
// skipped and named like any line that is not a stop, and the stops after
// it are read: the scan used to end there, the stops after it lost once
// the file was removed.
func TestReadStopsPastALongLine(t *testing.T) {
	for _, long := range []int{maxStopLine - 1, maxStopLine, maxStopLine + 1, 3*maxStopLine + 7} {
		var file bytes.Buffer
		file.WriteString(`{"request":"r1","mode":1}` + "\n")
		file.Write(bytes.Repeat([]byte{'x'}, long))
		file.WriteString("\n" + `{"request":"r2","mode":2}` + "\r\n")
		file.WriteString(`{"request":"r3","mode":1}`) // no line end: the last line, cut short or not
		var skipped []int
		got, err := readStops(bytes.NewReader(file.Bytes()), func(n int, err error) {
			if err == nil {
				t.Errorf("line %d skipped with no error", n)
			}
			skipped = append(skipped, n)
		})
		if err != nil {
			t.Fatalf("a line of %d bytes: readStops: %v", long, err)
		}
		if len(got) != 3 || got[0].Request != "r1" || got[1].Request != "r2" || got[2].Request != "r3" {
			t.Fatalf("a line of %d bytes: read %+v, want r1, r2 and r3", long, got)
		}
		if len(skipped) != 1 || skipped[0] != 2 {
			t.Errorf("a line of %d bytes: lines %v skipped, want [2]", long, skipped)
		}
	}
	// The last line, long and with no end.
	var skipped []int
	got, err := readStops(bytes.NewReader(append([]byte(`{"request":"r1","mode":1}`+"\n"), bytes.Repeat([]byte{'y'}, maxStopLine+5)...)),
		func(n int, err error) { skipped = append(skipped, n) })
	if err != nil || len(got) != 1 || got[0].Request != "r1" || len(skipped) != 1 || skipped[0] != 2 {
		t.Errorf("a long last line: read %+v, %v, lines %v skipped; want r1 and [2]", got, err, skipped)
	}
}
