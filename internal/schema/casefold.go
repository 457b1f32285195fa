package schema

import (
	"encoding/json"
	"reflect"
	"strconv"
	"strings"

	"github.com/agentreach/reach/internal/callgraph"
	"github.com/agentreach/reach/internal/jsonscan"
)

// A tool that binds its arguments with encoding/json (a Go server decoding
// them into a struct) matches a member to a field with case folded: it
// reads "PATH", or "\u212aind" with the Kelvin sign, as the property
// "path" or "kind" its schema names, where reach's checks and policies
// read the name as written and see no "path" at all. So a member that is
// no property of its object's schema but folds to one is a stray: the
// call is refused, naming the property to use.
//
// The properties are read where the schema names them: "properties" at
// the top and nested (an object under a property, the elements of an
// array under "items", its first under "prefixItems" or draft-04's array
// of "items"), what "allOf", "anyOf" and
// "oneOf" join to an object, and a local "$ref" ("#/$defs/x",
// "#/definitions/x"), recursive or not. Whatever additionalProperties
// says: with false the member is unknown anyway, and told by the property
// it spells; with true, absent or a schema, a Go tool would still read it
// as the property. A member that is itself a property (a schema may name
// both "id" and "ID") is no stray; two of them in one call are twins
// (callgraph.Twins), refused before. Members of an object whose schema
// names no properties (a map) are not compared.

// names is what a schema names of the members of an object at one place
// of the arguments.
type names struct {
	props  map[string]*names // property as spelled -> the names of its value
	folded map[string]string // folded -> the property as spelled
	items  *names            // the names of an array's elements
	prefix []*names          // of its first elements, if they have their own
	also   []*names          // joined by allOf, anyOf, oneOf, $ref
}

// compileNames returns the names of the schema doc, or nil when it names
// no property anywhere,
// and whether a property is named in upper case or past ASCII.
func compileNames(doc map[string]any) (*names, bool) {
	b := &namesBuilder{root: doc, memo: map[uintptr]*names{}}
	n := b.build(doc)
	if !b.any {
		return nil, false
	}
	return n, b.foldable
}

type namesBuilder struct {
	root     map[string]any
	foldable bool               // some property has an upper case ASCII letter or a byte past ASCII
	memo     map[uintptr]*names // by schema object, so that a recursive $ref ends
	any      bool               // some property is named
}

func (b *namesBuilder) build(s map[string]any) *names {
	key := reflect.ValueOf(s).Pointer()
	if n, ok := b.memo[key]; ok {
		return n
	}
	n := &names{}
	b.memo[key] = n
	if pm, ok := s["properties"].(map[string]any); ok && len(pm) > 0 {
		b.any = true
		n.props = make(map[string]*names, len(pm))
		n.folded = make(map[string]string, len(pm))
		for name, ps := range pm {
			for _, c := range []byte(name) {
				b.foldable = b.foldable || 'A' <= c && c <= 'Z' || c >= 0x80
			}
			var sub *names
			if psm, ok := ps.(map[string]any); ok {
				sub = b.build(psm)
			}
			n.props[name] = sub
			f := string(callgraph.AppendFolded(nil, []byte(name)))
			if _, dup := n.folded[f]; !dup || f == name {
				n.folded[f] = name
			}
		}
	}
	sub := func(v any) *names {
		if m, ok := v.(map[string]any); ok {
			return b.build(m)
		}
		return nil
	}
	switch it := s["items"].(type) {
	case map[string]any:
		n.items = b.build(it)
	case []any: // draft-04's tuple
		for _, e := range it {
			n.prefix = append(n.prefix, sub(e))
		}
	}
	if pi, ok := s["prefixItems"].([]any); ok {
		for _, e := range pi {
			n.prefix = append(n.prefix, sub(e))
		}
	}
	for _, k := range []string{"allOf", "anyOf", "oneOf"} {
		if arr, ok := s[k].([]any); ok {
			for _, e := range arr {
				if x := sub(e); x != nil {
					n.also = append(n.also, x)
				}
			}
		}
	}
	if ref, ok := s["$ref"].(string); ok {
		if t := b.resolve(ref); t != nil {
			n.also = append(n.also, b.build(t))
		}
	}
	return n
}

// resolve returns the schema a local $ref points to ("#", "#/$defs/x",
// "#/definitions/x", any JSON pointer into the document), or nil.
func (b *namesBuilder) resolve(ref string) map[string]any {
	if ref == "#" {
		return b.root
	}
	p, ok := strings.CutPrefix(ref, "#/")
	if !ok {
		return nil
	}
	var cur any = b.root
	for _, tok := range strings.Split(p, "/") {
		tok = strings.ReplaceAll(strings.ReplaceAll(tok, "~1", "/"), "~0", "~")
		m, ok := cur.(map[string]any)
		if !ok {
			return nil
		}
		cur = m[tok]
	}
	m, _ := cur.(map[string]any)
	return m
}

// each calls f with n and every names joined to it, once each, until f
// returns false.
func (n *names) each(f func(*names) bool) {
	if len(n.also) == 0 {
		f(n)
		return
	}
	seen := map[*names]bool{}
	var walk func(*names) bool
	walk = func(x *names) bool {
		if x == nil || seen[x] {
			return true
		}
		seen[x] = true
		if !f(x) {
			return false
		}
		for _, y := range x.also {
			if !walk(y) {
				return false
			}
		}
		return true
	}
	walk(n)
}

// property returns whether name is a property here and the names of its
// value.
func (n *names) property(name []byte) (sub *names, ok bool) {
	if len(n.also) == 0 { // most schemas: no closure, no allocation
		sub, ok = n.props[string(name)]
		return sub, ok
	}
	n.each(func(x *names) bool {
		if s, has := x.props[string(name)]; has {
			sub, ok = s, true
			return false
		}
		return true
	})
	return sub, ok
}

// foldsTo returns the property that name folds to, or "".
func (n *names) foldsTo(name []byte) string {
	var buf [64]byte
	f := callgraph.AppendFolded(buf[:0], name)
	if len(n.also) == 0 {
		return n.folded[string(f)]
	}
	want := ""
	n.each(func(x *names) bool {
		if p, ok := x.folded[string(f)]; ok {
			want = p
			return false
		}
		return true
	})
	return want
}

// elem returns the names of an array's element k here.
func (n *names) elem(k int) *names {
	at := func(x *names) *names {
		if k < len(x.prefix) {
			return x.prefix[k]
		}
		return x.items
	}
	if len(n.also) == 0 {
		return at(n)
	}
	var out *names
	n.each(func(x *names) bool {
		out = at(x)
		return out == nil
	})
	return out
}

// Stray is a member of the arguments that is no property of its object's
// schema but is one to encoding/json, which folds case.
type Stray struct {
	Path     string // JSON pointer to the member
	Member   string // as sent
	Property string // as the schema spells it
}

// Stray returns the first member of the canonical arguments args that
// folds to a property of its object's schema without being one, or nil.
// It allocates nothing unless it finds one.
func (s *Schema) Stray(args []byte) *Stray {
	if s == nil || s.names == nil {
		return nil
	}
	var st *Stray
	strayIn(args, 0, s.names, &st)
	return st
}

// stray is Stray, skipped when no member name of args may fold (fold
// false) and every property the schema names is lower case ASCII: a
// lower case name folds to no other lower case name.
func (s *Schema) stray(args []byte, fold bool) *Stray {
	if !fold && !s.foldable {
		return nil
	}
	return s.Stray(args)
}

// strayIn looks for a stray in the value at b[i], whose names are n, and
// returns the index past the value. A stray found gets its path as the
// walk returns, each level putting its token in front.
func strayIn(b []byte, i int, n *names, st **Stray) int {
	i = jsonscan.SkipSpace(b, i)
	if i >= len(b) {
		return i
	}
	switch b[i] {
	case '{':
		i = jsonscan.SkipSpace(b, i+1)
		for i < len(b) && b[i] == '"' {
			ke := jsonscan.SkipString(b, i)
			name, esc := b[i+1:max(ke-1, i+1)], false
			for _, c := range name {
				esc = esc || c == '\\'
			}
			if esc {
				var u string
				json.Unmarshal(b[i:ke], &u)
				name = []byte(u)
			}
			v := jsonscan.SkipSpace(b, ke)
			if v < len(b) && b[v] == ':' {
				v = jsonscan.SkipSpace(b, v+1)
			}
			sub, ok := n.property(name)
			if !ok {
				if p := n.foldsTo(name); p != "" {
					*st = &Stray{Path: "/" + pointerToken(string(name)), Member: string(name), Property: p}
					return len(b)
				}
			}
			if sub != nil {
				v = strayIn(b, v, sub, st)
				if *st != nil {
					(*st).Path = "/" + pointerToken(string(name)) + (*st).Path
					return len(b)
				}
			} else {
				v = jsonscan.SkipValue(b, v)
			}
			i = jsonscan.SkipSpace(b, v)
			if i < len(b) && b[i] == ',' {
				i = jsonscan.SkipSpace(b, i+1)
			}
		}
		if i < len(b) && b[i] == '}' {
			i++
		}
		return i
	case '[':
		i = jsonscan.SkipSpace(b, i+1)
		for k := 0; i < len(b) && b[i] != ']'; k++ {
			if el := n.elem(k); el != nil {
				i = strayIn(b, i, el, st)
				if *st != nil {
					(*st).Path = "/" + strconv.Itoa(k) + (*st).Path
					return len(b)
				}
			} else {
				i = jsonscan.SkipValue(b, i)
			}
			i = jsonscan.SkipSpace(b, i)
			if i < len(b) && b[i] == ',' {
				i = jsonscan.SkipSpace(b, i+1)
			}
		}
		if i < len(b) && b[i] == ']' {
			i++
		}
		return i
	}
	return jsonscan.SkipValue(b, i)
}

func pointerToken(s string) string {
	return strings.ReplaceAll(strings.ReplaceAll(s, "~", "~0"), "/", "~1")
}
