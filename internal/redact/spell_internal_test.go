package redact

import (
	"bytes"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
)

// respell spells each byte of s one of the ways an upstream or a tool may:
// as it is, percent-encoded (either case), a JSON \u escape, an HTML
// character reference (hex in either case, decimal, by name).
func respell(rng *rand.Rand, s string, ways int) string {
	var b strings.Builder
	for i := range len(s) {
		c := s[i]
		switch rng.IntN(ways) {
		case 0:
			b.WriteByte(c)
		case 1:
			fmt.Fprintf(&b, "%%%02X", c)
		case 2:
			fmt.Fprintf(&b, "%%%02x", c)
		case 3:
			fmt.Fprintf(&b, `\u%04x`, c)
		case 4:
			fmt.Fprintf(&b, "&#x%x;", c)
		case 5:
			fmt.Fprintf(&b, "&#X%02X;", c)
		case 6:
			fmt.Fprintf(&b, "&#%d;", c)
		default:
			name := ""
			for _, k := range []string{"amp", "lt", "gt", "quot", "apos", "sol", "bsol", "plus", "equals", "colon", "lowbar", "period", "hyphen"} {
				if namedRef([]byte(k)) == rune(c) {
					name = k
				}
			}
			if name == "" {
				b.WriteByte(c)
			} else {
				b.WriteString("&" + name + ";")
			}
		}
	}
	return b.String()
}

// TestSecretRespelled: a registered value is masked however it is
// spelled: in hex (either case), percent-encoded, with JSON's \u escapes
// or HTML's character references, each byte its own way, in base64 (both
// alphabets, the three alignments, padded); in text (a quote in it, so
// that it is no JSON string), in a JSON document's string, in a URL,
// through Redact, RedactString, Values, Blocks and a Stream cut
// anywhere. What is left, read with its escapes, holds no value.
func TestSecretRespelled(t *testing.T) {
	secrets := []string{"s3cr3t-t0ken/Value+42", "k<ey>&val-99_x", "ghp_Xk2pQ9rLm4Tz7Wv1", "tok3n&Value"}
	r, err := New(&Options{Secrets: secrets})
	if err != nil {
		t.Fatal(err)
	}
	leaks := func(out string) string {
		view, _ := unescaped([]byte(out), true)
		for _, s := range secrets {
			if bytes.Contains(view, []byte(s)) || strings.Contains(out, s) {
				return s
			}
		}
		return ""
	}
	rng := rand.New(rand.NewPCG(14, 4))
	var spellings []string
	whole := map[string]bool{} // hex and base64 spellings, which the view does not read
	for _, s := range secrets {
		encoded := []string{hex.EncodeToString([]byte(s)), strings.ToUpper(hex.EncodeToString([]byte(s))),
			base64.StdEncoding.EncodeToString([]byte(s)), base64.URLEncoding.EncodeToString([]byte("ab" + s)),
			base64.StdEncoding.EncodeToString([]byte("a" + s + "z"))}
		spellings = append(spellings, encoded...)
		if len(s) < minBase64Len { // base64 is looked for from minBase64Len bytes
			encoded = encoded[:2]
		}
		for _, e := range encoded {
			whole[e] = true
		}
		for ways := 2; ways <= 8; ways++ {
			for range 6 {
				spellings = append(spellings, respell(rng, s, ways))
			}
		}
	}
	for _, sp := range spellings {
		q, _ := json.Marshal(sp)
		// The view reads escapes, not hex or base64: such a spelling
		// passed on whole is a leak too (without this, no hex or base64
		// case could fail).
		leaks := func(out string) string {
			if whole[sp] && strings.Contains(out, sp) {
				return sp
			}
			return leaks(out)
		}
		for _, in := range []string{
			`he said "` + sp + `" & left`,
			`ends with ` + sp,
			`https://api.example/v1?key=` + sp + `&q=1`,
			`{"note":` + string(q) + `,"n":1}`,
			`log: {"token_echo":` + string(q) + `}`,
		} {
			if l := leaks(r.RedactString(in)); l != "" {
				t.Fatalf("RedactString(%q) left %q: %q", in, l, r.RedactString(in))
			}
			if out := string(r.Redact([]byte(in))); leaks(out) != "" {
				t.Fatalf("Redact(%q) = %q", in, out)
			}
			if out := string(r.Values([]byte(in))); leaks(out) != "" {
				t.Fatalf("Values(%q) = %q", in, out)
			}
			cut := 1 + rng.IntN(len(in)-1)
			if out := strings.Join(r.Blocks([]string{in[:cut], in[cut:]}), ""); leaks(out) != "" {
				t.Fatalf("Blocks(%q | %q) = %q", in[:cut], in[cut:], out)
			}
			st := r.Stream()
			var sb strings.Builder
			for rest := in; rest != ""; {
				n := min(len(rest), 1+rng.IntN(9))
				sb.WriteString(st.Next(rest[:n]))
				rest = rest[n:]
			}
			sb.WriteString(st.Flush())
			if out := sb.String(); leaks(out) != "" {
				t.Fatalf("a Stream of %q gave %q", in, out)
			}
		}
	}
	// Text with escapes that spell no value is left as it is.
	for _, in := range []string{"50% off &amp; more: a%20b &#x41;&#66; C:\\temp", "https://x.example/?a=1&b=%2F&c=&lt;d&gt;"} {
		if out := r.RedactString(in); out != in {
			t.Errorf("RedactString(%q) = %q", in, out)
		}
	}
}

// TestCharRef: the character references read, and those that are not.
func TestCharRef(t *testing.T) {
	for in, want := range map[string]rune{"&#x73;": 's', "&#X4A;": 'J', "&#115;": 's', "&#0000115;": 's', "&amp;": '&', "&sol;": '/',
		"&#x10FFFF;": 0x10FFFF, "&#x110000;": 0, "&#xD800;": 0, "&#0;": 0, "&#;": 0, "&#x;": 0, "&amp": 0, "&foo;": 0, "&#x73": 0, "&#12345678;": 0} {
		r, n := charRef([]byte(in))
		if r != want || (want != 0) != (n == len(in)) {
			t.Errorf("charRef(%q) = %q %d, want %q", in, r, n, want)
		}
	}
}

// FuzzRespelled: a value respelled (respell) inside any text, whole or
// streamed in pieces of any size, leaves nothing that reads as a value.
func FuzzRespelled(f *testing.F) {
	f.Add(uint64(1), "he said \"", "\" & left", uint8(3))
	f.Add(uint64(2), "key=", "&q=1", uint8(1))
	f.Add(uint64(3), "&am", "p;", uint8(7))
	secrets := []string{"s3cr3t-t0ken/Value+42", "k<ey>&val-99_x", "tok3n&Value"}
	r, err := New(&Options{Secrets: secrets})
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, seed uint64, before, after string, piece uint8) {
		rng := rand.New(rand.NewPCG(seed, 14))
		sp := respell(rng, secrets[rng.IntN(len(secrets))], 8)
		in := before + sp + after
		leaks := func(out string) bool {
			view, _ := unescaped([]byte(out), true)
			for _, s := range secrets {
				if bytes.Contains(view, []byte(s)) {
					return true
				}
			}
			return false
		}
		if !leaks(in) {
			return // the text around it made it another text (an escape that took its first byte)
		}
		if out := r.RedactString(in); leaks(out) {
			t.Fatalf("RedactString(%q) = %q", in, out)
		}
		if out := string(r.Values([]byte(in))); leaks(out) {
			t.Fatalf("Values(%q) = %q", in, out)
		}
		st := r.Stream()
		var sb strings.Builder
		n := 1 + int(piece)%16
		for rest := in; rest != ""; {
			k := min(len(rest), n)
			sb.WriteString(st.Next(rest[:k]))
			rest = rest[k:]
		}
		sb.WriteString(st.Flush())
		if out := sb.String(); leaks(out) {
			t.Fatalf("a Stream of %q in pieces of %d gave %q", in, n, out)
		}
	})
}
