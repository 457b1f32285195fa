package shape

import (
	"encoding/json"
	"strings"
	"testing"
)

func TestApply(t *testing.T) {
	orders := `[{"id":1,"customer":{"name":"Ann","email":"a@x"},"total":5},{"id":2,"customer":{"name":"Bo"}}]`
	tests := []struct {
		name     string
		data     string
		fields   []string
		flat     bool
		max      int
		want     string
		wantNote string
	}{
		{name: "as is", data: orders, want: orders},
		{name: "fields", data: orders, fields: []string{"id", "customer.name"},
			want: `[{"customer":{"name":"Ann"},"id":1},{"customer":{"name":"Bo"},"id":2}]`},
		{name: "fields flattened", data: orders, fields: []string{"id", "customer.name"}, flat: true,
			want: `[{"customer.name":"Ann","id":1},{"customer.name":"Bo","id":2}]`},
		{name: "a list cut to its first items", data: `[1,2,3,4,5,6,7,8,9,10]`, max: 8,
			want: `[1,2,3]`, wantNote: "the result had 10 items (22 bytes); only the first 3 are shown"},
		{name: "text cut, escaped within max", data: `{"log":"a\nb\nc\nd"}`, max: 16,
			want: `"{\"log\":\"…"`, wantNote: "only the first 8 are shown, as text"},
		{name: "not JSON, only cut", data: `not json at all`, fields: []string{"x"}, max: 8,
			want: `"not…"`, wantNote: "the result was 15 bytes"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, note := Apply([]byte(tt.data), tt.fields, tt.flat, tt.max)
			if string(got) != tt.want {
				t.Errorf("data = %s, want %s", got, tt.want)
			}
			if tt.max > 0 && (len(got) > tt.max || !json.Valid(got)) {
				t.Errorf("data %s: %d bytes (max %d), valid JSON %v", got, len(got), tt.max, json.Valid(got))
			}
			if (tt.wantNote == "") != (note == "") || !strings.Contains(note, tt.wantNote) {
				t.Errorf("note = %q, want it to say %q", note, tt.wantNote)
			}
		})
	}
}

func TestSummarize(t *testing.T) {
	for data, want := range map[string]string{
		``:                               "ok",
		`[]`:                             "0 items",
		`[{"a":[1,2]}]`:                  "1 item",
		`[1, "x,y", {"b":2}]`:            "3 items",
		`{"id":1,"s":{"x":1},"t":"a:b"}`: "object {id, s, t}",
		`{"a":1,"b":2,"c":3,"d":4,"e":5,"f":6,"g":7}`: "object {a, b, c, d, e, f, …}",
		`"a  long\nline"`: "a long line",
		`12.5`:            "12.5",
	} {
		if got := Summarize([]byte(data)); got != want {
			t.Errorf("Summarize(%s) = %q, want %q", data, got, want)
		}
	}
}

// A string's summary is the same whether plainLine reads it or it is
// decoded and collapsed; a plain one costs one allocation.
func TestSummarizeString(t *testing.T) {
	long := strings.Repeat("word ", 30)
	for _, s := range []string{"call 12", "a b c", " lead", "trail ", "two  spaces", "tab\\there", `a \"q\" b`,
		"caf\u00e9", "\u00a0nbsp", "x\u2028y", strings.TrimSpace(long), long, "", "1", "del\u007f"} {
		data := []byte(`"` + s + `"`)
		var dec string
		if err := json.Unmarshal(data, &dec); err != nil {
			t.Fatalf("%s: %v", data, err)
		}
		if got, want := Summarize(data), OneLine(dec, 100); got != want {
			t.Errorf("Summarize(%s) = %q, want %q", data, got, want)
		}
	}
	data := []byte(`"call 12345, all fine"`)
	if n := testing.AllocsPerRun(100, func() { Summarize(data) }); n > 1 {
		t.Errorf("Summarize(%s): %v allocations, want 1", data, n)
	}
}

func FuzzSummarizeString(f *testing.F) {
	for _, s := range []string{"call 12", " a", "a  b", "caf\u00e9", `"`, "a\\b"} {
		f.Add([]byte(`"` + s + `"`))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var dec string
		if json.Unmarshal(data, &dec) != nil || len(data) == 0 || data[0] != '"' {
			return
		}
		if got, want := Summarize(data), OneLine(dec, 100); got != want {
			t.Errorf("Summarize(%q) = %q, want %q", data, got, want)
		}
	})
}

func TestOneLine(t *testing.T) {
	if got := OneLine(" a\n\tb  c ", 100); got != "a b c" {
		t.Errorf("OneLine = %q, want %q", got, "a b c")
	}
	if got := OneLine("abcdef", 3); got != "abc…" {
		t.Errorf("OneLine cut = %q, want %q", got, "abc…")
	}
}
