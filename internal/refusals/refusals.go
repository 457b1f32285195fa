// Package refusals lists, from reach's source, every code a refusal or
// failure (fault.Error, reach.Error) is made with: for the tests that walk
// every refusal through each front (MCP, the model proxy, A2A) and check
// docs/ERRORS.md. It reads the Go files under a root and keeps, for each
// place an Error is made, its code, its type, and whether its text says
// what to do next (a Suggestion, in the literal or set in the same
// function). A code spelled by an expression is kept by its literal
// prefix (budget_*), or, for a helper that takes it as a parameter, by
// each call's literal argument.
package refusals

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// Site is one place an Error is made.
type Site struct {
	Code     string // the code, or its prefix and "*"
	Type     string // the type's constant's name (TypeBudget), or "" when set elsewhere
	Pos      string // file:line, from the root
	NextStep bool   // it has a Suggestion (in the literal or set in its function)
}

// Dynamic is an Error whose code is neither a literal nor a prefix nor a
// helper's parameter: the code is another error's (a tool's type, a
// runtime refusal passed on).
type Dynamic struct{ Pos, Expr string }

// Read returns every Site under root (its Go files, no tests, no
// testdata), by code, and the Errors whose code it cannot read.
func Read(root string) ([]Site, []Dynamic, error) {
	fset := token.NewFileSet()
	var sites []Site
	var dyn []Dynamic
	helpers := map[string]helper{} // a function that makes an Error of its parameters
	type call struct {
		fn   string
		args []ast.Expr
		pos  token.Pos
	}
	var calls []call
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
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
			return err
		}
		local := f.Name.Name == "reach" || f.Name.Name == "fault" // Error is fault's there
		pos := func(n ast.Node) string {
			ps := fset.Position(n.Pos())
			rel, _ := filepath.Rel(root, ps.Filename)
			return filepath.ToSlash(rel) + ":" + strconv.Itoa(ps.Line)
		}
		for _, decl := range f.Decls {
			fd, ok := decl.(*ast.FuncDecl)
			if !ok || fd.Body == nil {
				continue
			}
			params := map[string]int{}
			i := 0
			for _, fl := range fd.Type.Params.List {
				for _, n := range fl.Names {
					params[n.Name] = i
					i++
				}
			}
			setsSuggestion := false
			ast.Inspect(fd.Body, func(n ast.Node) bool {
				if as, ok := n.(*ast.AssignStmt); ok {
					for _, l := range as.Lhs {
						if se, ok := l.(*ast.SelectorExpr); ok && se.Sel.Name == "Suggestion" {
							setsSuggestion = true
						}
					}
				}
				if ce, ok := n.(*ast.CallExpr); ok {
					if id, ok := ce.Fun.(*ast.Ident); ok && f.Name.Name == "reach" {
						calls = append(calls, call{id.Name, ce.Args, ce.Pos()})
					}
				}
				return true
			})
			ast.Inspect(fd.Body, func(n ast.Node) bool {
				cl, ok := n.(*ast.CompositeLit)
				if !ok || !isFaultError(cl.Type, local) {
					return true
				}
				var code, typ ast.Expr
				next := setsSuggestion
				for _, el := range cl.Elts {
					kv, ok := el.(*ast.KeyValueExpr)
					if !ok {
						continue
					}
					switch kv.Key.(*ast.Ident).Name {
					case "Code":
						code = kv.Value
					case "Type":
						typ = kv.Value
					case "Suggestion":
						if bl, ok := kv.Value.(*ast.BasicLit); !ok || bl.Value != `""` {
							next = true
						}
					}
				}
				if code == nil {
					return true
				}
				s := Site{Type: constName(typ), Pos: pos(cl), NextStep: next}
				switch c := code.(type) {
				case *ast.BasicLit:
					s.Code, _ = strconv.Unquote(c.Value)
				case *ast.BinaryExpr:
					if bl, ok := c.X.(*ast.BasicLit); ok && c.Op == token.ADD {
						pre, _ := strconv.Unquote(bl.Value)
						s.Code = pre + "*"
					}
				case *ast.Ident:
					if i, ok := params[c.Name]; ok && f.Name.Name == "reach" {
						h := helper{code: i, typ: -1, site: s}
						if id, ok := typ.(*ast.Ident); ok {
							if j, ok := params[id.Name]; ok {
								h.typ = j
							}
						}
						helpers[fd.Name.Name] = h
						return true
					}
				}
				if s.Code == "" {
					dyn = append(dyn, Dynamic{Pos: s.Pos, Expr: exprText(code)})
					return true
				}
				sites = append(sites, s)
				return true
			})
		}
		return nil
	})
	if err != nil {
		return nil, nil, err
	}
	for _, c := range calls {
		h, ok := helpers[c.fn]
		if !ok || h.code >= len(c.args) {
			continue
		}
		bl, ok := c.args[h.code].(*ast.BasicLit)
		if !ok {
			continue
		}
		s := h.site
		s.Code, _ = strconv.Unquote(bl.Value)
		if h.typ >= 0 && h.typ < len(c.args) {
			s.Type = constName(c.args[h.typ])
		}
		ps := fset.Position(c.pos)
		rel, _ := filepath.Rel(root, ps.Filename)
		s.Pos = filepath.ToSlash(rel) + ":" + strconv.Itoa(ps.Line)
		sites = append(sites, s)
	}
	slices.SortFunc(sites, func(a, b Site) int { return strings.Compare(a.Code+" "+a.Pos, b.Code+" "+b.Pos) })
	return sites, dyn, nil
}

type helper struct {
	code, typ int
	site      Site
}

func isFaultError(t ast.Expr, local bool) bool {
	switch t := t.(type) {
	case *ast.Ident:
		return local && t.Name == "Error"
	case *ast.SelectorExpr:
		x, ok := t.X.(*ast.Ident)
		return ok && (x.Name == "fault" || x.Name == "reach") && t.Sel.Name == "Error"
	}
	return false
}

// constName is the name of a type constant (TypeBudget of
// fault.TypeBudget), or "".
func constName(e ast.Expr) string {
	switch e := e.(type) {
	case *ast.Ident:
		return e.Name
	case *ast.SelectorExpr:
		return e.Sel.Name
	}
	return ""
}

func exprText(e ast.Expr) string {
	switch e := e.(type) {
	case *ast.Ident:
		return e.Name
	case *ast.SelectorExpr:
		return exprText(e.X) + "." + e.Sel.Name
	}
	return "expr"
}
