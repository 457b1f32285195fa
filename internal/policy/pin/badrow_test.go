package pin

import (
	"encoding/json"
	"testing"
)

// FuzzDecodePin: whatever a row of the pins table holds, reading it never
// panics, and what it accepts is a pin of that row's tool with a hash;
// what the store writes it reads back.
func FuzzDecodePin(f *testing.F) {
	good, _ := json.Marshal(&Pin{Tool: "a__b", Hash: "sha256:1", Definition: Definition{Description: "d"}})
	for _, s := range []string{string(good), `{not`, `{}`, `{"tool":"a__c","sha256":"x"}`, `{"tool":"a__b","sha256":"x","pending":{}}`, `null`} {
		f.Add("a__b", s)
	}
	f.Fuzz(func(t *testing.T, tool, data string) {
		p, err := decodePin(tool, []byte(data))
		if err != nil {
			return
		}
		if p.Tool != tool || p.Hash == "" || (p.Pending != nil && p.Pending.Hash == "") {
			t.Fatalf("accepted %q for tool %q: %+v", data, tool, p)
		}
		again, _ := json.Marshal(p)
		if _, err := decodePin(tool, again); err != nil {
			t.Fatalf("what it read does not read back: %v", err)
		}
	})
}
