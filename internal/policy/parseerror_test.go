package policy

import (
	"errors"
	"io/fs"
	"strings"
	"testing"
)

// A policy file with a syntax error names its file, line and column, what
// was expected there and what was found, and where a missing ";" goes,
// not Cedar's "exact got X want Y".
func TestParseErrorSaysWhatWasExpected(t *testing.T) {
	for _, tc := range []struct {
		name, text string
		want       []string
	}{
		{"a policy without its ; before another", "permit (principal, action, resource)\nforbid (principal, action, resource);\n",
			[]string{`p.cedar:2:8: parse error: expected ";", but found "("`, `every policy ends with ";"`}},
		{"the last policy without its ;", "permit (principal, action, resource);\nforbid (principal, action, resource)\n",
			[]string{`p.cedar:3:1: parse error: expected ";", but the file ends`, `every policy ends with ";"`}},
		{"a list without its comma", `permit (principal, action in [Reach::Action::"call" Reach::Action::"complete"], resource);`,
			[]string{`p.cedar:1:53: parse error: expected ",", but found "Reach"`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse(Source{Name: "p.cedar", Text: []byte(tc.text)})
			if err == nil {
				t.Fatal("Parse: no error")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("Parse: %v\nwant it to contain %q", err, w)
				}
			}
			if strings.Contains(err.Error(), "exact got") {
				t.Errorf("Parse: %v\nwant Cedar's wording said plainly", err)
			}
		})
	}
	// Another error keeps Cedar's words, with the file's position.
	_, err := Parse(Source{Name: "p.cedar", Text: []byte("allow (principal, action, resource);")})
	if err == nil || !strings.Contains(err.Error(), "p.cedar:1:7: ") || !strings.Contains(err.Error(), "unexpected effect: allow") {
		t.Errorf("Parse of an unknown effect: %v", err)
	}
}

// A policy folder with no .cedar file in it says what to do, as a path
// that does not exist does.
func TestLoadEmptyFolderSaysWhatToDo(t *testing.T) {
	dir := t.TempDir()
	_, err := Load(dir)
	if err == nil {
		t.Fatal("Load of an empty folder: no error")
	}
	for _, w := range []string{"no *.cedar file in " + dir, "write the policies in a .cedar file there", "or leave policy out"} {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("Load: %v\nwant it to contain %q", err, w)
		}
	}
	if !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("Load: %v; want it to wrap fs.ErrNotExist", err)
	}
}
