package redact_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/agentreach/reach/internal/redact"
)

// The property of the redactor: no configured secret, and no value under a
// secret-named key, appears in any output.

// fuzzSecrets are registered in every fuzz test: plain, with characters
// JSON escapes, with a slash, numeric, one beginning another.
var fuzzSecrets = []string{"s3cr3tVALUE42", `tok"with\quote`, "sk/live-7Hq2x9Zr", "98765432", "abcd1234", "abcd1234efgh5678", "pä$$wörd-ünï", "k<ey>&val-99"}

// secretNames are names the rules call secret (none of them a count).
var secretNames = []string{"password", "Password", "API_KEY", "x-api-key", "client_secret", "access_token", "Authorization",
	"refresh-token", "db.passwd", "Cookie", "private_key", "credentials", "sessionId", "token_type", "x-api-token",
	"accessToken", "pin", "session", "dsn", "Proxy-Authorization", "set-cookie", "signature"}

// leaks returns what of the secrets and markers out still shows.
func leaks(out []byte, markers []string) []string {
	var found []string
	for _, s := range fuzzSecrets {
		esc, _ := json.Marshal(s)
		if bytes.Contains(out, []byte(s)) || bytes.Contains(out, esc[1:len(esc)-1]) {
			found = append(found, s)
		}
	}
	for _, m := range markers {
		if bytes.Contains(out, []byte(m)) {
			found = append(found, m)
		}
	}
	return found
}

// doc builds a random document from rng: secret-named members holding
// marked values of every shape (strings, arrays, objects, numbers),
// registered secrets in strings, names and numbers, JSON escaped inside
// strings (up to three levels), and the same in text ("name=value",
// "name: value", "Bearer x", JSON inside prose).
type doc struct {
	rng     *rand.Rand
	markers []string
}

func (d *doc) mark() string {
	m := fmt.Sprintf("mk%04dq7", len(d.markers))
	d.markers = append(d.markers, m)
	return m
}

func (d *doc) secret() string { return fuzzSecrets[d.rng.IntN(len(fuzzSecrets))] }
func (d *doc) name() string   { return secretNames[d.rng.IntN(len(secretNames))] }

// hidden is a value for a secret name: every marker in it must go.
func (d *doc) hidden(depth int) any {
	switch d.rng.IntN(6) {
	case 0:
		return d.mark()
	case 1:
		return []any{d.mark(), map[string]any{"k": d.mark()}}
	case 2:
		return map[string]any{"user": d.mark(), "deep": []any{d.mark(), []any{d.mark()}}}
	case 3:
		var n json.Number = json.Number(fmt.Sprintf("7%07d", len(d.markers)))
		d.markers = append(d.markers, string(n))
		return n
	case 4:
		if depth < 3 {
			return d.value(depth + 1)
		}
		return d.mark()
	default:
		return "Bearer " + d.mark()
	}
}

func (d *doc) value(depth int) any {
	k := d.rng.IntN(10)
	switch {
	case depth > 3 || k == 0:
		return "v " + d.secret() + " end"
	case k == 1:
		return []any{d.value(depth + 1), d.secret(), 7}
	case k == 2:
		return map[string]any{d.name(): d.hidden(depth), "n": d.value(depth + 1)}
	case k == 3:
		return map[string]any{"a": []any{map[string]any{d.name(): d.hidden(depth)}}}
	case k == 4: // JSON escaped inside a string
		b, _ := json.Marshal(d.value(depth + 1))
		return "cfg " + string(b)
	case k == 5:
		return fmt.Sprintf("%s=%s; q=1", d.name(), d.mark())
	case k == 6:
		return fmt.Sprintf("login failed, %s: %s (retry)", d.name(), d.mark())
	case k == 7:
		return map[string]any{d.secret(): "as a name"}
	case k == 8:
		return json.Number("1" + fuzzSecrets[3])
	default:
		b, _ := json.Marshal(map[string]any{d.name(): d.hidden(depth)})
		return "prose before " + string(b) + " and after"
	}
}

func newDoc(seed uint64) (*doc, []byte) {
	d := &doc{rng: rand.New(rand.NewPCG(seed, seed^0x9e3779b9))}
	v := map[string]any{"query": "keep", "x": d.value(0), "y": d.value(0)}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(d.rng.IntN(2) == 0)
	enc.Encode(v)
	return d, bytes.TrimSpace(buf.Bytes())
}

// cuts returns n random cut points of b, in order.
func cuts(rng *rand.Rand, b []byte, n int) []int {
	out := make([]int, n)
	for i := range out {
		out[i] = rng.IntN(len(b) + 1)
	}
	for i := 1; i < n; i++ {
		for j := i; j > 0 && out[j] < out[j-1]; j-- {
			out[j], out[j-1] = out[j-1], out[j]
		}
	}
	return out
}

func split(b []byte, at []int) []string {
	var out []string
	prev := 0
	for _, c := range at {
		out = append(out, string(b[prev:c]))
		prev = c
	}
	return append(out, string(b[prev:]))
}

// checkStructured redacts the document of seed in every way the runtime
// and the gateway do and fails if a secret or a marked value is left.
func checkStructured(t *testing.T, r *redact.Redactor, seed uint64) {
	d, in := newDoc(seed)
	fail := func(how string, out []byte) {
		t.Helper()
		if l := leaks(out, d.markers); len(l) > 0 {
			t.Fatalf("seed %d, %s: %q left in\n%s\nfrom\n%s", seed, how, l, out, in)
		}
	}
	out := r.Redact(in)
	if !json.Valid(out) {
		t.Fatalf("seed %d: JSON became %s", seed, out)
	}
	fail("Redact", out)
	fail("RedactString", []byte(r.RedactString(string(in))))
	// As a tool's text: a JSON string.
	str, _ := json.Marshal(string(in))
	fail("Redact of the document as a string", r.Redact(str))
	// Cut short, as a preview is.
	cut := in[:d.rng.IntN(len(in)+1)]
	fail("Redact of a cut document", r.Redact(cut))
	// Split across content blocks, as one result's texts.
	pieces := split(in, cuts(d.rng, in, 1+d.rng.IntN(4)))
	fail("Blocks", []byte(strings.Join(r.Blocks(pieces), "")))
	blocks := make([]map[string]string, len(pieces))
	for i, p := range pieces {
		blocks[i] = map[string]string{"type": "text", "text": p}
	}
	res, _ := json.Marshal(map[string]any{"content": blocks})
	masked := r.Redact(res)
	var got struct{ Content []struct{ Text string } }
	if err := json.Unmarshal(masked, &got); err != nil {
		t.Fatalf("seed %d: content blocks became %s", seed, masked)
	}
	var joined strings.Builder
	for _, c := range got.Content {
		joined.WriteString(c.Text)
	}
	fail("Redact of content blocks", []byte(joined.String()))
	// Streamed in chunks: registered values only (a model's answer).
	s := r.Stream()
	var streamed strings.Builder
	for _, p := range split(in, cuts(d.rng, in, 1+d.rng.IntN(6))) {
		streamed.WriteString(s.Next(p))
	}
	streamed.WriteString(s.Flush())
	if l := leaks([]byte(streamed.String()), nil); len(l) > 0 {
		t.Fatalf("seed %d, Stream: %q left in\n%s", seed, l, streamed.String())
	}
	if l := leaks(r.Values(in), nil); len(l) > 0 {
		t.Fatalf("seed %d, Values: %q left in", seed, l)
	}
	if !bytes.Contains(out, []byte("keep")) {
		t.Fatalf("seed %d: the harmless value was masked: %s", seed, out)
	}
}

// TestStructuredSecrets runs the property over many generated documents.
func TestStructuredSecrets(t *testing.T) {
	r := mustNew(t, &redact.Options{Secrets: fuzzSecrets})
	n := uint64(2000)
	if testing.Short() {
		n = 200
	}
	for seed := range n {
		checkStructured(t, r, seed)
	}
}

// FuzzStructuredSecrets lets the fuzzer pick the documents' seeds.
func FuzzStructuredSecrets(f *testing.F) {
	for _, s := range []uint64{0, 1, 42, 1 << 40, 0xdeadbeef} {
		f.Add(s)
	}
	r := mustNew(f, &redact.Options{Secrets: fuzzSecrets})
	f.Fuzz(func(t *testing.T, seed uint64) { checkStructured(t, r, seed) })
}

// FuzzRedact: on any input, no registered secret is left in the output of
// Redact, RedactString, Values, Blocks or a Stream (the input in one to
// three pieces), valid JSON stays valid, and in valid JSON every member
// with a secret name holds only the mask.
func FuzzRedact(f *testing.F) {
	for _, s := range []string{
		`{"a":"s3cr3tVALUE42"}`, `["x s3cr3tVALUE42 y",{"s3cr3tVALUE42":1}]`, `{"password":"p"}`,
		`{"k":"s3cr\u0033tVALUE42"}`, `s3cr3tVALUE42`, `{"a":[1,2,{"token":"`, `{"a":"\`,
		`{"x":1e5,"y":-0.5,"z":[true,false,null]}`, `"Bearer s3cr3tVALUE42"`, `{"a":{"api_key":[1,2]}}`,
		`not json tok"with\quote`, `{"k":198765432}`, `cfg {\"password\":[\"hunter2hunter2\"]}`,
		`{"content":[{"type":"text","text":"Bearer s3cr3t"},{"type":"text","text":"VALUE42"}]}`,
		`{"q":"{\"a\":\"{\\\"password\\\":\\\"x\\\"}\"}"}`, "pä$$wörd-ün", `{"x":"sk\/live-7Hq2x9Zr"}`,
		`x s%33cr3tVAL%55E42 "q"`, `k&lt;ey&#x3e;&amp;val-99`, `&#115;k/live-7Hq2x9Zr`, `7333637233745641`, `%6b%3C`,
		`{"Ocp-Apim-Subscription-Key":"v","appKeywords":["k"],"HMACKey":1}`, `jwt: eyJ0eXAi.x9 and jwt: reading`,
		`X-Auth-Key: s3cr3tVALUE42`, `{"ssh_keys":{"primary_key":2}}`,
	} {
		f.Add([]byte(s))
	}
	r := mustNew(f, &redact.Options{Secrets: fuzzSecrets})
	f.Fuzz(func(t *testing.T, in []byte) {
		out := r.Redact(in)
		if l := leaks(out, nil); len(l) > 0 {
			t.Fatalf("Redact(%q) = %q still holds %q", in, out, l)
		}
		if txt := r.RedactString(string(in)); len(leaks([]byte(txt), nil)) > 0 {
			t.Fatalf("RedactString(%q) = %q still holds a secret", in, txt)
		}
		if v := r.Values(in); len(leaks(v, nil)) > 0 {
			t.Fatalf("Values(%q) = %q still holds a secret", in, v)
		}
		for n := 1; n <= 3 && n <= len(in); n++ { // streamed in n pieces
			st := r.Stream()
			var sb strings.Builder
			for i := range n {
				sb.WriteString(st.Next(string(in[i*len(in)/n : (i+1)*len(in)/n])))
			}
			sb.WriteString(st.Flush())
			if len(leaks([]byte(sb.String()), nil)) > 0 {
				t.Fatalf("a Stream of %q in %d pieces gave %q", in, n, sb.String())
			}
		}
		if len(in) > 1 {
			half := len(in) / 2
			if bl := r.Blocks([]string{string(in[:half]), string(in[half:])}); len(leaks([]byte(strings.Join(bl, "")), nil)) > 0 {
				t.Fatalf("Blocks(%q) = %q still holds a secret", in, bl)
			}
		}
		if !json.Valid(in) {
			return
		}
		if !json.Valid(out) {
			t.Fatalf("JSON %q became %q", in, out)
		}
		var v any
		json.Unmarshal(out, &v)
		var walk func(any)
		walk = func(v any) {
			switch v := v.(type) {
			case []any:
				for _, x := range v {
					walk(x)
				}
			case map[string]any:
				for k, x := range v {
					if r.SecretKey(k) && x != redact.Mask && !isCount(k, x) {
						t.Fatalf("member %s kept %v: %q -> %q", k, x, in, out)
					}
					walk(x)
				}
			}
		}
		walk(v)
	})
}

// isCount reports whether a member's value may be a count of tokens, which
// a name that says "token" keeps.
func isCount(k string, x any) bool {
	_, ok := x.(float64)
	return ok && strings.Contains(strings.ToLower(k), "token")
}
