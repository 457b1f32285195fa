package audit

import (
	"bytes"
	"encoding/json"
	"testing"
)

func TestCompactValid(t *testing.T) {
	for _, s := range []string{`{}`, `[]`, `{"a":1,"b":[true,false,null,-0.5e+3,"x\u00e9\n"]}`, `"é"`, `0`, `-12.5E-3`} {
		if !compactValid([]byte(s)) {
			t.Errorf("compactValid(%s) = false, want true", s)
		}
	}
	for _, s := range []string{``, `{ }`, `{"a": 1}`, `[1,]`, `{"a":1,}`, `01`, `1.`, `.5`, `tru`, `"\x"`, `"a` + "\x01" + `"`,
		`"\ud8"`, "\"\xff\"", `{"a":1}x`, `[1 2]`, `+1`, `1e`, `{1:2}`} {
		if compactValid([]byte(s)) {
			t.Errorf("compactValid(%q) = true, want false", s)
		}
	}
}

func FuzzCompactValid(f *testing.F) {
	for _, s := range []string{`{"a":[1,2,{"b":null}],"c":"d\"e"}`, `[ 1 ]`, `-0.0e-0`, `"\u0041"`, `{"a":1}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		if !compactValid(b) {
			return
		}
		if !json.Valid(b) {
			t.Fatalf("compactValid(%q) but json.Valid refuses it", b)
		}
		var buf bytes.Buffer
		if err := json.Compact(&buf, b); err != nil || !bytes.Equal(buf.Bytes(), b) {
			t.Fatalf("compactValid(%q) but json.Compact gives %q, %v", b, buf.Bytes(), err)
		}
	})
}
