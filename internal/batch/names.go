package batch

import (
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"sync"

	"github.com/agentreach/reach/internal/jsonscan"
)

// members are the names an object of the envelope may have, each with the
// members of the objects in its array when it holds an array of them.
type members struct {
	names map[string]*members
	list  string // for the error: "call_id, tool, ..."
}

var membersOf sync.Map // reflect.Type -> *members

// membersFor reads the json tags of the struct t (a pointer to one is
// followed), and of the struct elements of its slices.
func membersFor(t reflect.Type) *members {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if m, ok := membersOf.Load(t); ok {
		return m.(*members)
	}
	m := &members{names: map[string]*members{}}
	var list []string
	for j := range t.NumField() {
		f := t.Field(j)
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if !f.IsExported() || name == "-" {
			continue
		}
		if name == "" {
			name = f.Name
		}
		var sub *members
		if e := f.Type; e.Kind() == reflect.Slice && e.Elem().Kind() == reflect.Struct {
			sub = membersFor(e.Elem())
		}
		m.names[name] = sub
		list = append(list, name)
	}
	m.list = strings.Join(list, ", ")
	membersOf.Store(t, m)
	return m
}

// exactNames holds the envelope's member names to what they say.
// encoding/json takes a name case-insensitively ("TOOL" is tool) and the
// last of two alike, so {"tool": "get_order", "TOOL": "refund_order"} ran
// refund_order, while a proxy, a log or a policy in front of reach that
// reads "tool" saw get_order; the MCP SDK reads names exactly. A member of
// the envelope or of a call is named exactly, and once. data is valid
// JSON (it decoded).
func exactNames(data []byte, m *members) error {
	i := jsonscan.SkipSpace(data, 0)
	if i == len(data) || data[i] != '{' {
		return nil
	}
	return exactObject(data, i, m, "", "the envelope")
}

// exactObject checks the object at b[i]; where prefixes an error with the
// object's place, what names it.
func exactObject(b []byte, i int, m *members, where, what string) error {
	var seen []string
	for i = jsonscan.SkipSpace(b, i+1); i < len(b) && b[i] == '"'; {
		end := jsonscan.SkipString(b, i)
		name := string(b[i+1 : end-1])
		if strings.IndexByte(name, '\\') >= 0 {
			if err := json.Unmarshal(b[i:end], &name); err != nil {
				return fmt.Errorf("%s%w", where, err)
			}
		}
		sub, ok := m.names[name]
		switch {
		case !ok:
			return fmt.Errorf("%s%q is not a member of %s: its members are %s, spelled so", where, name, what, m.list)
		case slices.Contains(seen, name):
			return fmt.Errorf("%s%q is given twice", where, name)
		}
		seen = append(seen, name)
		i = jsonscan.SkipSpace(b, end) // ':'
		i = jsonscan.SkipSpace(b, i+1) // the value
		if sub != nil && i < len(b) && b[i] == '[' {
			k := 0
			for i = jsonscan.SkipSpace(b, i+1); i < len(b) && b[i] != ']'; k++ {
				if b[i] == '{' {
					if err := exactObject(b, i, sub, fmt.Sprintf("%s[%d]: ", name, k), "a call"); err != nil {
						return err
					}
				}
				if i = jsonscan.SkipSpace(b, jsonscan.SkipValue(b, i)); i < len(b) && b[i] == ',' {
					i = jsonscan.SkipSpace(b, i+1)
				}
			}
			i++ // ']'
		} else {
			i = jsonscan.SkipValue(b, i)
		}
		if i = jsonscan.SkipSpace(b, i); i < len(b) && b[i] == ',' {
			i = jsonscan.SkipSpace(b, i+1)
		}
	}
	return nil
}
