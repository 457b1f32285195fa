package callgraph

import "testing"

func TestKeyValue(t *testing.T) {
	same := [][]string{
		{"7", "7.0", "7e0", "70e-1", "0.7e1"},
		{"0", "-0", "0.0"},
		{"7.5", "7.50", "75e-1"},
		{`"7"`},
	}
	seen := map[string]string{}
	for _, group := range same {
		want := string(KeyValue([]byte(group[0])))
		for _, v := range group {
			got := string(KeyValue([]byte(v)))
			if got != want {
				t.Errorf("KeyValue(%s) = %s, want %s (as %s)", v, got, want, group[0])
			}
		}
		if other, ok := seen[want]; ok {
			t.Errorf("%s and %s are one key", group[0], other)
		}
		seen[want] = group[0]
	}
	// Two large numbers differ however close they are; a huge exponent is
	// kept as written.
	if a, b := KeyValue([]byte("12345678901234567890.1")), KeyValue([]byte("12345678901234567890.2")); string(a) == string(b) {
		t.Errorf("two close large numbers are one key: %s", a)
	}
	if got := string(KeyValue([]byte("1e999999"))); got != "1e999999" {
		t.Errorf("KeyValue(1e999999) = %s, want it as written", got)
	}
}

func TestKeys(t *testing.T) {
	a, b := []byte(`{"id":7,"region":"eu","x":1}`), []byte(`{"id":7.0,"region":"eu","x":2}`)
	keys := []string{"id", "region"}
	if !SameKey(keys, a, b) || SameKey([]string{"x"}, a, b) {
		t.Error("SameKey: want the same id and region, not the same x")
	}
	h := HashString("t").Sep()
	if KeyHash(h, keys, a) != KeyHash(h, keys, b) || KeyHash(h, []string{"x"}, a) == KeyHash(h, []string{"x"}, b) {
		t.Error("KeyHash: want one hash for the same key values, two for others")
	}
	if got := KeyValues(a, keys); got != `id=7, region="eu"` {
		t.Errorf("KeyValues = %s", got)
	}
}

func TestNormTask(t *testing.T) {
	for in, want := range map[string]string{
		"Verify the order.":        "verify the order",
		" verify  the\tORDER ":     "verify the order",
		"¿Qué pasó?":               "qué pasó",
		"--":                       "",
		"check order #7, then pay": "check order #7, then pay",
	} {
		if got := NormTask(in); got != want {
			t.Errorf("NormTask(%q) = %q, want %q", in, got, want)
		}
	}
}
