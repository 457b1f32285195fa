package main

import (
	"bytes"
	"compress/gzip"
	"encoding/binary"
	"errors"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// The module's import path, as the profile's function names spell it.
const modulePath = "github.com/agentreach/reach"

// TestDefaultPGO checks the profile the compiler is given for this binary
// (default.pgo, written by scripts/pgo.sh): it must parse as a CPU profile,
// hold samples in the module's own packages on the served call path (not
// only the runtime's), and name functions that still exist: a profile whose
// functions were renamed or moved since it was taken guides nothing, and
// then this fails until scripts/pgo.sh is run again.
func TestDefaultPGO(t *testing.T) {
	raw, err := os.ReadFile("default.pgo")
	if err != nil {
		t.Fatalf("reading default.pgo (scripts/pgo.sh writes it): %v", err)
	}
	p, err := parseProfile(raw)
	if err != nil {
		t.Fatalf("default.pgo is not a profile: %v", err)
	}
	if p.total == 0 {
		t.Fatal("default.pgo holds no samples")
	}

	// Each function's weight: the samples on whose stack it is.
	weight := map[string]int64{}
	var inModule int64
	for _, s := range p.samples {
		seen := map[string]bool{}
		for _, f := range s.funcs {
			if seen[f] {
				continue
			}
			seen[f] = true
			weight[f] += s.value
		}
		for f := range seen {
			if inModulePackage(f) {
				inModule += s.value
				break
			}
		}
	}
	if inModule*4 < p.total {
		t.Errorf("the module's functions are on %d of %d samples' stacks, under a quarter: not a profile of reach serving calls", inModule, p.total)
	}
	// The call path's packages: the MCP front, the runtime's chain, the
	// upstream's forward, the store (a write's durable claim).
	for _, pkg := range []string{modulePath, modulePath + "/internal/front", modulePath + "/internal/upstream", modulePath + "/internal/store/sqlcore"} {
		found := false
		for f := range weight {
			if funcPackage(f) == pkg {
				found = true
				break
			}
		}
		if !found {
			t.Errorf("no sample in %s, a package every served call runs", pkg)
		}
	}

	// Stale: the module's functions in the profile that no longer exist.
	known, err := moduleFuncs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	var all, missing int64
	var gone []string
	for f, w := range weight {
		if !inModulePackage(f) {
			continue
		}
		all += w
		if !declared(known, normalizeFunc(f)) {
			missing += w
			gone = append(gone, f)
		}
	}
	t.Logf("%d samples, %d with the module's functions on their stacks; %d of those functions' %d samples in ones the source no longer has", p.total, inModule, missing, all)
	if missing*10 > all {
		t.Errorf("%d of %d module samples are in functions the source no longer has (e.g. %q): default.pgo is stale, run scripts/pgo.sh", missing, all, gone[:min(3, len(gone))])
	}
}

// TestNormalizeFunc checks how a profile's function names are matched with
// the source's declarations.
func TestNormalizeFunc(t *testing.T) {
	for in, want := range map[string]string{
		"main.serve":                                                                               modulePath + "/cmd/reach.serve",
		modulePath + ".(*Runtime).Call":                                                            modulePath + ".(*Runtime).Call",
		modulePath + ".(*Runtime).Call.func2":                                                      modulePath + ".(*Runtime).Call",
		modulePath + ".(*Runtime).Call.func2.1":                                                    modulePath + ".(*Runtime).Call",
		modulePath + "/internal/x.(*T[...]).M":                                                     modulePath + "/internal/x.(*T).M",
		modulePath + "/internal/x.F[...]":                                                          modulePath + "/internal/x.F",
		modulePath + "/internal/x.(*T).M-fm":                                                       modulePath + "/internal/x.(*T).M",
		modulePath + "/internal/x.init.0":                                                          modulePath + "/internal/x.init",
		modulePath + "/internal/x.(*T).M.gowrap1":                                                  modulePath + "/internal/x.(*T).M",
		modulePath + "/internal/x.(*T).M.deferwrap1":                                               modulePath + "/internal/x.(*T).M",
		modulePath + "/internal/x.glob..func1":                                                     modulePath + "/internal/x.glob.",
		modulePath + "/internal/x.T.M":                                                             modulePath + "/internal/x.T.M",
		modulePath + "/internal/store/sqlcore.F.func1":                                             modulePath + "/internal/store/sqlcore.F",
		modulePath + "/internal/records.fan[go.shape.*uint8].Record":                               modulePath + "/internal/records.fan.Record",
		modulePath + ".(*Runtime).authorize-fm.(*Runtime).authorize.func1":                         modulePath + ".(*Runtime).authorize",
		modulePath + "/internal/records.(*Kept[go.shape.*" + modulePath + ".Request]).List-range1": modulePath + "/internal/records.(*Kept).List",
	} {
		if got := normalizeFunc(in); got != want {
			t.Errorf("normalizeFunc(%q) = %q, want %q", in, got, want)
		}
	}
}

// inModulePackage reports whether profile function f is the module's.
func inModulePackage(f string) bool {
	return strings.HasPrefix(f, "main.") || f == modulePath || strings.HasPrefix(f, modulePath+".") || strings.HasPrefix(f, modulePath+"/")
}

// funcPackage is the import path of profile function f.
func funcPackage(f string) string {
	f = normalizeFunc(f)
	slash := strings.LastIndexByte(f, '/')
	if dot := strings.IndexByte(f[slash+1:], '.'); dot >= 0 {
		return f[:slash+1+dot]
	}
	return f
}

// suffixes are what the compiler appends to a declaration's name for the
// closures in it, its go and defer wrappers and init's number.
var suffixes = regexp.MustCompile(`(\.(func|gowrap|deferwrap)\d+|\.\d+)+$`)

// normalizeFunc turns a profile's function name into the name of the
// declaration it was compiled from: the main package by its import path,
// type arguments (`[...]`, `[go.shape.int]`) dropped, a method value's or a
// range-over-func body's function (`-fm`, `-range1` and what follows) named
// by its method or function, closures' and wrappers' suffixes dropped.
func normalizeFunc(f string) string {
	if rest, ok := strings.CutPrefix(f, "main."); ok {
		f = modulePath + "/cmd/reach." + rest
	}
	var b strings.Builder
	depth := 0
	for _, r := range f {
		switch {
		case r == '[':
			depth++
		case r == ']' && depth > 0:
			depth--
		case depth == 0:
			b.WriteRune(r)
		}
	}
	f = b.String()
	for _, mark := range []string{"-fm", "-range"} {
		if i := strings.Index(f, mark); i >= 0 {
			f = f[:i]
		}
	}
	return suffixes.ReplaceAllString(f, "")
}

// declared reports whether normalized profile function f is one of known
// or in one: a closure in a function inlined into another is named by both
// (`pkg.(*T).outer.(*T).inner.func1`, the inner one maybe another
// package's), and is the outer one's code.
func declared(known map[string]bool, f string) bool {
	for i := strings.LastIndexByte(f, '/') + 1; i < len(f); i++ {
		if f[i] == '.' && known[f[:i]] {
			return true
		}
	}
	return known[f]
}

// moduleFuncs is every function and method the module's non-test sources
// under root declare, named as normalizeFunc names them, with each package's
// init and glob. (its package-level closures).
func moduleFuncs(root string) (map[string]bool, error) {
	known := map[string]bool{}
	fset := token.NewFileSet()
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if n := d.Name(); path != root && (strings.HasPrefix(n, ".") || strings.HasPrefix(n, "_") || n == "testdata" || n == "node_modules" || n == "vendor") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		rel, err := filepath.Rel(root, filepath.Dir(path))
		if err != nil {
			return err
		}
		pkg := modulePath
		if rel != "." {
			pkg += "/" + filepath.ToSlash(rel)
		}
		file, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		known[pkg+".init"], known[pkg+".glob."] = true, true
		for _, decl := range file.Decls {
			fd, ok := decl.(*ast.FuncDecl)
			if !ok {
				continue
			}
			if fd.Recv == nil || len(fd.Recv.List) == 0 {
				known[pkg+"."+fd.Name.Name] = true
				continue
			}
			typ, ptr := fd.Recv.List[0].Type, false
			if star, ok := typ.(*ast.StarExpr); ok {
				typ, ptr = star.X, true
			}
			switch g := typ.(type) {
			case *ast.IndexExpr:
				typ = g.X
			case *ast.IndexListExpr:
				typ = g.X
			}
			id, ok := typ.(*ast.Ident)
			if !ok {
				continue
			}
			if ptr {
				known[pkg+".(*"+id.Name+")."+fd.Name.Name] = true
			} else {
				known[pkg+"."+id.Name+"."+fd.Name.Name] = true
			}
		}
		return nil
	})
	return known, err
}

// profile is what the test reads of a pprof profile: each sample's first
// value and the functions on its stack (inlined ones included).
type profile struct {
	samples []sample
	total   int64
}

type sample struct {
	value int64
	funcs []string
}

// parseProfile decodes a pprof profile (profile.proto, gzipped or not): its
// samples, locations, functions and string table; the rest is skipped.
func parseProfile(raw []byte) (*profile, error) {
	if len(raw) > 2 && raw[0] == 0x1f && raw[1] == 0x8b {
		zr, err := gzip.NewReader(bytes.NewReader(raw))
		if err != nil {
			return nil, err
		}
		if raw, err = io.ReadAll(zr); err != nil {
			return nil, err
		}
	}
	type rawSample struct {
		locs  []uint64
		value int64
	}
	var (
		strs    []string
		samples []rawSample
		locs    = map[uint64][]uint64{} // location id: function ids, inlined first
		funcs   = map[uint64]int64{}    // function id: name's string index
	)
	err := eachField(raw, func(num int, v uint64, b []byte) error {
		switch num {
		case 2: // Sample
			var s rawSample
			first := true
			err := eachField(b, func(num int, v uint64, b []byte) error {
				switch num {
				case 1:
					ids, err := varints(v, b)
					s.locs = append(s.locs, ids...)
					return err
				case 2:
					vals, err := varints(v, b)
					if first && len(vals) > 0 {
						s.value, first = int64(vals[0]), false
					}
					return err
				}
				return nil
			})
			samples = append(samples, s)
			return err
		case 4: // Location
			var id uint64
			var fns []uint64
			err := eachField(b, func(num int, v uint64, b []byte) error {
				switch num {
				case 1:
					id = v
				case 4: // Line
					return eachField(b, func(num int, v uint64, _ []byte) error {
						if num == 1 {
							fns = append(fns, v)
						}
						return nil
					})
				}
				return nil
			})
			locs[id] = fns
			return err
		case 5: // Function
			var id uint64
			var name int64
			err := eachField(b, func(num int, v uint64, _ []byte) error {
				switch num {
				case 1:
					id = v
				case 2:
					name = int64(v)
				}
				return nil
			})
			funcs[id] = name
			return err
		case 6: // string_table
			strs = append(strs, string(b))
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	p := &profile{}
	for _, s := range samples {
		out := sample{value: s.value}
		for _, l := range s.locs {
			fns, ok := locs[l]
			if !ok {
				return nil, fmt.Errorf("sample names location %d, which the profile does not have", l)
			}
			for _, fn := range fns {
				n, ok := funcs[fn]
				if !ok || n < 0 || n >= int64(len(strs)) {
					return nil, fmt.Errorf("location %d names function %d, which the profile does not have", l, fn)
				}
				out.funcs = append(out.funcs, strs[n])
			}
		}
		p.samples = append(p.samples, out)
		p.total += s.value
	}
	return p, nil
}

// eachField calls fn with each field of protobuf message b: its number and,
// by wire type, its varint (v) or its bytes (b); fixed-width fields are
// skipped.
func eachField(b []byte, fn func(num int, v uint64, b []byte) error) error {
	for len(b) > 0 {
		key, n := binary.Uvarint(b)
		if n <= 0 {
			return errors.New("bad field key")
		}
		b = b[n:]
		num := int(key >> 3)
		switch key & 7 {
		case 0:
			v, n := binary.Uvarint(b)
			if n <= 0 {
				return errors.New("bad varint")
			}
			b = b[n:]
			if err := fn(num, v, nil); err != nil {
				return err
			}
		case 1:
			if len(b) < 8 {
				return errors.New("short fixed64")
			}
			b = b[8:]
		case 2:
			l, n := binary.Uvarint(b)
			if n <= 0 || l > uint64(len(b)-n) {
				return errors.New("bad length")
			}
			if err := fn(num, 0, b[n:n+int(l)]); err != nil {
				return err
			}
			b = b[n+int(l):]
		case 5:
			if len(b) < 4 {
				return errors.New("short fixed32")
			}
			b = b[4:]
		default:
			return fmt.Errorf("wire type %d", key&7)
		}
	}
	return nil
}

// varints is a repeated varint field's values: v alone when it came
// unpacked, else the packed b's.
func varints(v uint64, b []byte) ([]uint64, error) {
	if b == nil {
		return []uint64{v}, nil
	}
	var out []uint64
	for len(b) > 0 {
		x, n := binary.Uvarint(b)
		if n <= 0 {
			return nil, errors.New("bad packed varint")
		}
		out = append(out, x)
		b = b[n:]
	}
	return out, nil
}
