package callgraph

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestCaseTwins: NormalizeArguments finds names that encoding/json reads
// as one field (case folded, the Kelvin sign a k, the long s an s) at any
// depth, in the order written (encoding/json keeps the later), and not
// what it tells apart; its canonical form is Normalize's.
func TestCaseTwins(t *testing.T) {
	for _, tc := range []struct {
		in   string
		a, b string // as written, in order; "" for none
	}{
		{`{"path":"/tmp/ok","PATH":"/etc/passwd"}`, "path", "PATH"},
		{`{"kind":"read","\u212aind":"write"}`, "kind", "\u212aind"},
		{`{"q":{"user":"me","uſer":"root"}}`, "user", "uſer"},
		{`{"items":[{"a":1},{"Id":1,"iD":2}]}`, "Id", "iD"},
		{`{"orderId":"1","order_id":"2","OrderID":"3"}`, "orderId", "OrderID"},
		{`{"orderId":"1","order_id":"2","userId":3}`, "", ""},
		{`{"a":1,"b":{"A":1},"c":[2]}`, "", ""},
		{`{"é":1,"e":2}`, "", ""},
		{`["A","a",{"x":"X"}]`, "", ""},
		{`{"\"":1,"\\":2,"k\n":3,"K\n":4}`, "k\\n", "K\\n"},
		{`{"a0":0,"a1":1,"a2":2,"a3":3,"a4":4,"a5":5,"a6":6,"a7":7,"a8":8,"a9":9,"b0":0,"b1":1,"b2":2,"b3":3,"b4":4,"b5":5,"b6":6,"A7":7}`, "a7", "A7"},
		{`{"a0":0,"a1":1,"a2":2,"a3":3,"a4":4,"a5":5,"a6":6,"a7":7,"a8":8,"a9":9,"b0":0,"b1":1,"b2":2,"b3":3,"b4":4,"b5":5,"b6":6,"B7":7}`, "", ""},
	} {
		canon, nm, err := NormalizeArguments(nil, []byte(tc.in))
		tw := nm.Twins
		if err != nil {
			t.Fatalf("%s: %v", tc.in, err)
		}
		if want, _ := Normalize(nil, []byte(tc.in)); string(canon) != string(want) {
			t.Errorf("NormalizeArguments(%s) = %s, Normalize %s", tc.in, canon, want)
		}
		if nm.Fold != keysFold(tc.in) {
			t.Errorf("NormalizeArguments(%s) Fold %v", tc.in, nm.Fold)
		}
		if (tw != nil) != (tc.a != "") || tw != nil && (tw.A != tc.a || tw.B != tc.b) {
			t.Errorf("NormalizeArguments(%s) twins %+v, want %q %q", tc.in, tw, tc.a, tc.b)
		}
	} // What makes them twins: encoding/json binds both to one field.
	var v struct {
		Path string `json:"path"`
	}
	if json.Unmarshal([]byte(`{"path":"/tmp/ok","PATH":"/etc/passwd"}`), &v) != nil || v.Path != "/etc/passwd" {
		t.Errorf("encoding/json read path as %q", v.Path)
	}
}

// keysFold reports whether a member name of the JSON in has an upper case
// letter or a character past ASCII.
func keysFold(in string) bool {
	var v any
	json.Unmarshal([]byte(in), &v)
	var walk func(any) bool
	walk = func(v any) bool {
		switch v := v.(type) {
		case []any:
			for _, x := range v {
				if walk(x) {
					return true
				}
			}
		case map[string]any:
			for k, x := range v {
				if strings.ToLower(k) != k || strings.ContainsFunc(k, func(r rune) bool { return r > 127 }) || walk(x) {
					return true
				}
			}
		}
		return false
	}
	return walk(v)
}
