package link

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestEveryLinkErrorIsDeclared: no Error is made but by its Kind (errors.go
// is the one place that spells its fields), so Kinds lists every code a
// front may have to answer, with who reads it. It reads the repository's
// source: a composite literal of link.Error anywhere else fails it.
func TestEveryLinkErrorIsDeclared(t *testing.T) {
	root, _ := filepath.Abs("../..")
	fset := token.NewFileSet()
	files := 0
	filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if p != root && (strings.HasPrefix(d.Name(), ".") || d.Name() == "testdata" || d.Name() == "node_modules") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(p, ".go") || strings.HasSuffix(p, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, p, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		files++
		inLink := filepath.Dir(p) == filepath.Join(root, "internal", "link")
		ast.Inspect(f, func(n ast.Node) bool {
			cl, ok := n.(*ast.CompositeLit)
			if !ok {
				return true
			}
			switch ty := cl.Type.(type) {
			case *ast.Ident:
				if inLink && ty.Name == "Error" && filepath.Base(p) != "errors.go" {
					t.Errorf("%s: a link.Error made by hand; declare its code as a Kind (errors.go) and use Kind.New", fset.Position(cl.Pos()))
				}
			case *ast.SelectorExpr:
				if x, ok := ty.X.(*ast.Ident); ok && x.Name == "link" && ty.Sel.Name == "Error" {
					t.Errorf("%s: a link.Error made by hand; declare its code as a Kind (internal/link/errors.go) and use Kind.New", fset.Position(cl.Pos()))
				}
			}
			return true
		})
		return nil
	})
	if files < 100 {
		t.Fatalf("read %d Go files under %s; want the repository's", files, root)
	}
}

// TestKindsAreWhole: each Kind has a code, a status, a sentence of when,
// and, when the model reads it, its type; one the model reads has a
// status no SDK retries (never 408, 409 is mapped by the fronts, 429 or
// 5xx), one that may pass in a moment is the client's.
func TestKindsAreWhole(t *testing.T) {
	seen := map[string]bool{}
	for _, k := range Kinds() {
		if seen[k.Code] {
			t.Errorf("%s is declared twice", k.Code)
		}
		seen[k.Code] = true
		if k.Code == "" || k.Status < 400 || !strings.HasSuffix(k.When, ".") {
			t.Errorf("%+v: want a code, an error status and a sentence of when", k)
		}
		if k.Model != (k.Type != "") {
			t.Errorf("%s: Model %v, Type %q; a type is the model's", k.Code, k.Model, k.Type)
		}
		if k.Model && (k.Status == 408 || k.Status == 429 || k.Status >= 500) {
			t.Errorf("%s: the model's, with status %d, which clients retry", k.Code, k.Status)
		}
	}
}

// TestErrorsDocListsKinds: docs/ERRORS.md shows Kinds as they are
// (REACH_UPDATE_ERRORS=1 rewrites its generated part).
func TestErrorsDocListsKinds(t *testing.T) {
	const begin, end = "<!-- link kinds: generated from internal/link/errors.go -->\n", "<!-- end of link kinds -->\n"
	var b strings.Builder
	b.WriteString("| code | status | read by | type | when |\n|---|---|---|---|---|\n")
	for _, k := range Kinds() {
		who, typ := "the client (a protocol error)", "-"
		if k.Model {
			who, typ = "the model (a refused call)", "`"+k.Type+"`"
		}
		fmt.Fprintf(&b, "| `%s` | %d | %s | %s | %s |\n", k.Code, k.Status, who, typ, k.When)
	}
	replaceGenerated(t, "../../docs/ERRORS.md", begin, end, b.String(), "go test ./internal/link -run TestErrorsDocListsKinds")
}

// replaceGenerated checks that the part of file between begin and end is
// want, or with REACH_UPDATE_ERRORS=1 writes it there.
func replaceGenerated(t *testing.T, file, begin, end, want, run string) {
	t.Helper()
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	doc := string(data)
	i, j := strings.Index(doc, begin), strings.Index(doc, end)
	if i < 0 || j < i {
		t.Fatalf("%s has no generated part between %q and %q", file, begin, end)
	}
	got := doc[i+len(begin) : j]
	if got == want {
		return
	}
	if os.Getenv("REACH_UPDATE_ERRORS") == "1" {
		if err := os.WriteFile(file, []byte(doc[:i+len(begin)]+want+doc[j:]), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	t.Errorf("%s does not list the codes as they are: run REACH_UPDATE_ERRORS=1 %s", file, run)
}
