package config

import (
	"strings"
	"testing"
)

// A tool override's templates (the entities it reads and writes, the
// arguments of its undo, refresh, verify and fallbacks) are checked when
// the configuration is read, with their line and what to write instead:
// reach validate --offline, which knows no upstream's tools, finds a bad
// one; it used to pass, and serve then refused to start.
func TestToolTemplatesChecked(t *testing.T) {
	for _, tc := range []struct {
		name, yaml string
		want       []string
	}{
		{"reads", "tools:\n  m__open:\n    reads: [\"entity:{names.0}\"]\n",
			[]string{"line 3", "tool m__open: reads:", "write {args.names.0} for an argument"}},
		{"writes", "tools:\n  m__create:\n    access: write\n    writes: [\"a:{args.id}\", \"entity:{entities.0.name}\"]\n",
			[]string{"line 4", "tool m__create: writes:", "{entities.0.name} must start with args. or result", "write {args.entities.0.name}"}},
		{"undo args not JSON", "tools:\n  m__create:\n    undo: {tool: m__delete, args: '{\"id\": {args.id}}'}\n",
			[]string{"line 3", "tool m__create: undo:", "is not JSON"}},
		{"refresh args", "tools:\n  m__create:\n    refresh: {tool: m__get, args: '{\"id\": \"{ids.0}\"}'}\n",
			[]string{"line 3", "tool m__create: refresh:", "write {args.ids.0}"}},
		{"verify args", "tools:\n  m__create:\n    verify: {tool: m__get, args: '{\"id\": \"{res.id}\"}', condition: 'true'}\n",
			[]string{"line 3", "tool m__create: verify:", "write {args.res.id}"}},
		{"fallback args", "tools:\n  m__search:\n    fallback: [m__other, {tool: m__find, args: '{\"q\": \"{query.text}\"}'}]\n",
			[]string{"line 3", "tool m__search: fallback 2:", "write {args.query.text}"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse([]byte(tc.yaml), nil)
			if err == nil {
				t.Fatal("Parse: no error")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("Parse: %v\nwant it to contain %q", err, w)
				}
			}
		})
	}
	// Templates as the docs write them pass: a plain {field} is an
	// argument, {args.a.b} and {result.x} paths.
	ok := "tools:\n  t__close:\n    access: write\n    writes: [\"ticket:{id}\", \"e:{args.a.0.b}\"]\n" +
		"    undo: {tool: t__reopen, args: '{\"id\": \"{args.id}\", \"r\": \"{result.x}\"}'}\n" +
		"  t__search:\n    fallback: [{tool: t__find, args: '{\"q\": \"{args.q}\"}'}]\n"
	if _, err := Parse([]byte(ok), nil); err != nil {
		t.Errorf("Parse of good templates: %v", err)
	}
}
