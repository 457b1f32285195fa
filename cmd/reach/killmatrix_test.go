package main

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
)

// killCover is what kills a real gateway at one crash point, restarts it
// and checks what docs/STATE.md says the kill leaves, on each store: the
// tests that do (deterministic ones; the random ones, TestCrashAtRandomPoints
// and TestCrash25RandomOnInstances, are not counted), or why none does.
// A test is named "TestX" in this package, or "dir.TestX" in the module's
// folder dir.
type killCover struct {
	sqlite, postgres     []string
	noSQLite, noPostgres string // why no test kills there on that store
}

// killMatrix is the crash point x store matrix of docs/STATE.md ("Kill
// tests"): TestKillMatrix fails when a crash point of the source is not in
// it, when a point in it is gone, when a store of a point has neither a
// test nor a reason, or when a test it names does not exist or never
// reaches the point's name.
var killMatrix = map[string]killCover{
	"claimed": {
		sqlite:   []string{"TestCrashAtDurablePoints", "TestCrashAtEveryDurablePoint"},
		postgres: []string{"TestKill30CallPointsOnPostgres", "TestKill37SurvivorTakesOverOnPostgres", "TestKill37UndoClaimedOnPostgres"},
	},
	"executing": {
		sqlite:   []string{"TestCrashAtDurablePoints", "TestCrashAtEveryDurablePoint"},
		postgres: []string{"TestKill30CallPointsOnPostgres", "TestCrashAtEveryDurablePointOnPostgres", "TestKill37SurvivorTakesOverOnPostgres"},
	},
	"ended": {
		sqlite:   []string{"TestCrashAtDurablePoints", "TestKill31FailedVerifyEnded"},
		postgres: []string{"TestKill30CallPointsOnPostgres", "TestKill31FailedVerifyEndedOnPostgres", "TestKill37SurvivorTakesOverOnPostgres"},
	},
	"commit": {
		sqlite:   []string{"TestCrashAtEveryDurablePoint"},
		postgres: []string{"TestCrashAtEveryDurablePointOnPostgres"},
	},
	"batch.held": {
		sqlite:   []string{"TestCrashAtEveryDurablePoint"},
		postgres: []string{"TestCrashAtEveryDurablePointOnPostgres"},
	},
	"request.begun": {
		sqlite:   []string{"TestCrashAtEveryDurablePoint"},
		postgres: []string{"TestCrashAtEveryDurablePointOnPostgres", "TestKill37SurvivorTakesOverOnPostgres"},
	},
	"request.stopped": {
		sqlite:   []string{"TestCrashAtEveryDurablePoint"},
		postgres: []string{"TestCrashAtEveryDurablePointOnPostgres", "TestKill22StopAfterResultsOnPostgres", "TestKill37SurvivorTakesOverOnPostgres"},
	},
	"request.ended": {
		sqlite:   []string{"TestCrashAtEveryDurablePoint"},
		postgres: []string{"TestCrashAtEveryDurablePointOnPostgres", "TestKill37SurvivorTakesOverOnPostgres"},
	},
	"undo.ended": {
		sqlite:   []string{"TestCrashAtEveryDurablePoint"},
		postgres: []string{"TestCrashAtEveryDurablePointOnPostgres", "TestKill37SurvivorTakesOverOnPostgres"},
	},
	"recovery.stopped": {
		sqlite:   []string{"TestCrashAtEveryDurablePoint"},
		postgres: []string{"TestCrashAtEveryDurablePointOnPostgres", "TestKill37SurvivorTakesOverOnPostgres"},
	},
	"recovery.undone": {
		sqlite:   []string{"TestCrashAtEveryDurablePoint"},
		postgres: []string{"TestCrashAtEveryDurablePointOnPostgres", "TestKill37SurvivorTakesOverOnPostgres"},
	},
	"recovery.interrupted": {
		sqlite:   []string{"TestCrashAtEveryDurablePoint"},
		postgres: []string{"TestCrashAtEveryDurablePointOnPostgres", "TestKill37SurvivorTakesOverOnPostgres"},
	},
	"deadletter.added": {
		sqlite:   []string{"TestCrashAtEveryDurablePoint"},
		postgres: []string{"TestCrashAtEveryDurablePointOnPostgres", "TestKill37SurvivorTakesOverOnPostgres"},
	},
	"deadletter.taken": {
		sqlite:   []string{"TestCrashAtEveryDurablePoint"},
		postgres: []string{"TestDeadLetterTakenByAKilledInstanceOnPostgres", "TestKill37DeadLetterTakenRestartedOnPostgres"},
	},
	"deadletter.settled": {
		sqlite:   []string{"TestCrashAtEveryDurablePoint", "TestCrash18Points"},
		postgres: []string{"TestCrashAtEveryDurablePointOnPostgres", "TestCrash18PointsOnPostgres", "TestKill37SurvivorTakesOverOnPostgres"},
	},
	"deadletter.late": {
		noSQLite: "a late end is one another instance's recovery marked: several instances share a store only on PostgreSQL",
		postgres: []string{"TestKill21LateEndDeadLettered"},
	},
	"approval.pending": {
		sqlite:   []string{"TestCrashAtEveryDurablePoint", "TestKill34ApprovalActionAudited"},
		postgres: []string{"TestCrashAtEveryDurablePointOnPostgres", "TestKill34ApprovalActionAuditedOnPostgres", "TestKill37SurvivorTakesOverOnPostgres"},
	},
	"approval.approved": {
		sqlite:   []string{"TestCrashAtEveryDurablePoint", "TestKill34ApprovalActionAudited"},
		postgres: []string{"TestCrashAtEveryDurablePointOnPostgres", "TestKill34ApprovalActionAuditedOnPostgres", "TestKill37SurvivorTakesOverOnPostgres"},
	},
	"approval.used": {
		sqlite:   []string{"TestCrashAtEveryDurablePoint", "TestKill34ApprovalActionAudited"},
		postgres: []string{"TestCrashAtEveryDurablePointOnPostgres", "TestKill34ApprovalActionAuditedOnPostgres", "TestKill37SurvivorTakesOverOnPostgres"},
	},
	"approval.denied": {
		sqlite:   []string{"TestCrashAtEveryDurablePoint", "TestKill34ApprovalActionAudited"},
		postgres: []string{"TestCrashAtEveryDurablePointOnPostgres", "TestKill34ApprovalActionAuditedOnPostgres", "TestKill34DeniedElsewhereOnPostgres", "TestKill35DeadInstanceAuditedBySurvivorOnPostgres", "TestKill37SurvivorTakesOverOnPostgres"},
	},
	"approval.claimed": {
		noSQLite: "an action's mark is claimed before its audit only by instances that share a PostgreSQL store",
		postgres: []string{"TestKill37PausedAfterClaimOnPostgres"},
	},
	"approval.audited": {
		sqlite:   []string{"TestKill35ApprovalAuditedOnce"},
		postgres: []string{"TestKill35ApprovalAuditedOnceOnPostgres"},
	},
	"approval.expired": {
		sqlite:   []string{"TestCrashAtEveryDurablePoint"},
		postgres: []string{"TestCrashAtEveryDurablePointOnPostgres", "TestKill37SurvivorTakesOverOnPostgres"},
	},
	"pin.stored": {
		sqlite:   []string{"TestCrashAtEveryDurablePoint", "TestKill22PinsImportCut"},
		postgres: []string{"TestCrashAtEveryDurablePointOnPostgres", "TestKill37SurvivorTakesOverOnPostgres"},
	},
	"audit.appended": {
		sqlite:   []string{"TestCrashAtEveryDurablePoint"},
		postgres: []string{"TestCrashAtEveryDurablePointOnPostgres", "TestKill37SurvivorTakesOverOnPostgres"},
	},
	"model.answered": {
		sqlite:   []string{"TestCrashAtEveryDurablePoint"},
		postgres: []string{"TestCrashAtEveryDurablePointOnPostgres", "TestKill37SurvivorTakesOverOnPostgres"},
	},
	"task.stored": {
		sqlite:   []string{"TestCrashAtTaskStored", "TestCrash18TaskStates"},
		postgres: []string{"TestKill30TaskStoredOnPostgres"},
	},
	"task.shown": {
		sqlite:   []string{"TestCrashAtTaskShown"},
		postgres: []string{"TestCrashAtTaskShownOnPostgres"},
	},
	"handed.claimed": {
		noSQLite: "a task's record is written on PostgreSQL only: one SQLite instance keeps the link of a handed task in its memory",
		postgres: []string{"TestKill37HandedClaimedOnPostgres"},
	},
	"handed.sub": {
		noSQLite: "as handed.claimed: a task's record is written on PostgreSQL only",
		postgres: []string{"TestKill37HandedClaimedOnPostgres"},
	},
	"handed.put": {
		noSQLite: "as handed.claimed: a task's record is written on PostgreSQL only",
		postgres: []string{"TestKill38HandedPutOnPostgres"},
	},
	"refused.noted": {
		sqlite:   []string{"TestKill38RefusedNoted"},
		postgres: []string{"TestKill38RefusedNotedOnPostgres"},
	},
	"sessions.touched": {
		sqlite:   []string{"TestKill38SessionsTouched"},
		postgres: []string{"TestKill38SessionsTouchedOnPostgres"},
	},
	"owner.stored": {
		sqlite:   []string{"TestKill37ResponseOwnerStored"},
		postgres: []string{"TestKill37ResponseOwnerStoredOnPostgres"},
	},
	"session.storing": {
		sqlite:   []string{"TestKill23SessionBeforeAnswer"},
		postgres: []string{"TestKill30SessionPointsOnPostgres"},
	},
	"session.stored": {
		sqlite:   []string{"TestKill23SessionBeforeAnswer"},
		postgres: []string{"TestKill30SessionPointsOnPostgres"},
	},
	"session.deleted": {
		sqlite:   []string{"TestCrashAtSessionDeleted"},
		postgres: []string{"TestKill30SessionPointsOnPostgres"},
	},
	"claim.settled": {
		sqlite:   []string{"TestKill38ClaimSettled"},
		postgres: []string{"TestKill38ClaimSettledOnPostgres"},
	},
	"cutoff.noted": {
		sqlite:   []string{"TestKill21CutOffPoints", "TestKill38ClaimSettled"},
		postgres: []string{"TestKill30CutOffNotedOnPostgres", "TestKill38ClaimSettledOnPostgres"},
	},
	"cutoff.taken": {
		sqlite:   []string{"TestKill21CutOffPoints"},
		postgres: []string{"TestKill21CutOffTakenOnPostgres"},
	},
	"entities.ran": {
		noSQLite: "the shared entity versions are the cluster's (PostgreSQL); on SQLite they are in memory, and a kill while such a write runs is TestKill24SecretEntitiesOnSQLite's",
		postgres: []string{"TestKill22bEntitiesRanOnPostgres", "TestKill24SecretEntitiesAtRestartOnPostgres"},
	},
	"kept.saved": {
		noSQLite: "a completion is kept in the data folder while a shared store refuses it; SQLite refusing its own folder is kept.reserve",
		postgres: []string{"TestOutage20KilledAtKeptPoints"},
	},
	"kept.restored": {
		noSQLite: "as kept.saved: the file is written while PostgreSQL is away",
		postgres: []string{"TestOutage20KilledAtKeptPoints"},
	},
	"kept.ended": {
		noSQLite: "as kept.saved: the file is written while PostgreSQL is away",
		postgres: []string{"TestEnded20UndoThroughOutage"},
	},
	"kept.reserve": {
		sqlite:     []string{"TestKill22ReserveUsed"},
		noPostgres: "the reserve is used when the data folder's disk is full, which is the SQLite store's disk; a PostgreSQL outage uses the file without it (kept.saved)",
	},
	"kept.aside": {
		sqlite:   []string{"TestKill21KeptAside"},
		postgres: []string{"TestKill30KeptAsideOnPostgres"},
	},
	"stop.kept": {
		noSQLite: "a stop is kept in the data folder only when a shared store refuses it",
		postgres: []string{"TestCrash26StopKeptThenKilled"},
	},
	"stops.restored": {
		noSQLite: "as stop.kept",
		postgres: []string{"TestCrash26StopKeptThenKilled"},
	},
	"request.handed": {
		noSQLite: "a request's parts on several instances: PostgreSQL only",
		postgres: []string{"TestLeave23KilledAtHandedOnPostgres"},
	},
	"request.left": {
		noSQLite: "a request's parts on several instances: PostgreSQL only",
		postgres: []string{"TestLeave23KilledAtHandedOnPostgres"},
	},
	"request.settled": {
		noSQLite: "the cluster's recorder (internal/cluster): PostgreSQL only",
		postgres: []string{"TestKill22EndSettledOnPostgres", "TestKill22EndSettledAcrossOnPostgres"},
	},
	"request.released": {
		noSQLite: "a request's parts on several instances: PostgreSQL only",
		postgres: []string{"TestKill22bReleasedOnPostgres"},
	},
	"request.carved": {
		noSQLite: "the shared budget ledger: PostgreSQL only",
		postgres: []string{"TestCrashWhileDelegatingOnPostgres"},
	},
	"budget.admitted": {
		noSQLite: "the shared budget ledger: PostgreSQL only",
		postgres: []string{"TestCrashAtEveryDurablePointOnPostgres", "TestKill37SurvivorTakesOverOnPostgres"},
	},
	"budget.charged": {
		noSQLite: "the shared budget ledger: PostgreSQL only",
		postgres: []string{"TestCrashAtEveryDurablePointOnPostgres", "TestKill37SurvivorTakesOverOnPostgres"},
	},
	"budget.unheld": {
		noSQLite: "the shared budget ledger: PostgreSQL only",
		postgres: []string{"TestCrashAtEveryDurablePointOnPostgres", "TestKill37SurvivorTakesOverOnPostgres"},
	},
	"cluster.fenced": {
		noSQLite: "a life judged dead by other instances: PostgreSQL only",
		postgres: []string{"TestOutage20KilledAsFenced"},
	},
	"wire.ready": {
		sqlite:   []string{"TestCrashAtDurablePoints"},
		postgres: []string{"TestKill30CallPointsOnPostgres", "TestFleet21FrozenBeforeSend", "TestKill37SurvivorTakesOverOnPostgres"},
	},
	"migration": {
		sqlite:     []string{"internal/store/sqlite.TestSQLiteMigration20KilledMidway"},
		noPostgres: "not reached: PostgreSQL migrates in one transaction, the schema marks with it, so a kill leaves the schema before",
	},
	"retention": {
		sqlite:     []string{"internal/store/sqlite.TestSQLiteRetentionKilledMidBatch"},
		noPostgres: "not reached: on PostgreSQL a sweep's batch is one statement (frames, requests and the rest deleted together), so nothing lies between",
	},
}

// TestKillMatrix checks killMatrix against the source: every crash point
// the module's code reaches is in it, with a kill test on each store where
// it is reached or a reason why not, and each test it names exists and
// reaches the point's name (a string of its own, or of a function of its
// package it calls); a PostgreSQL test reaches pgtest, a SQLite one does
// not. And docs/STATE.md and docs/TESTING.md show the matrix as it is
// here.
func TestKillMatrix(t *testing.T) {
	root := filepath.Join("..", "..")
	points := crashPoints(t, root)
	for p := range points {
		if _, ok := killMatrix[p]; !ok {
			t.Errorf("crash point %q (%s) has no row in killMatrix: add the kill tests that arm it, on SQLite and PostgreSQL, or say why none", p, points[p])
		}
	}
	pkgs := map[string]*testPkg{}
	for p, c := range killMatrix {
		if _, ok := points[p]; !ok {
			t.Errorf("killMatrix names %q, which no code reaches", p)
		}
		for _, s := range []struct {
			name  string
			tests []string
			why   string
		}{{"SQLite", c.sqlite, c.noSQLite}, {"PostgreSQL", c.postgres, c.noPostgres}} {
			if len(s.tests) == 0 && s.why == "" {
				t.Errorf("%s on %s: no kill test, and no reason why", p, s.name)
			}
			if len(s.tests) > 0 && s.why != "" {
				t.Errorf("%s on %s: kill tests and a reason why none", p, s.name)
			}
			for _, name := range s.tests {
				dir, fn := ".", name
				if i := strings.LastIndex(name, "."); i >= 0 {
					dir, fn = filepath.Join(root, name[:i]), name[i+1:]
				}
				tp := pkgs[dir]
				if tp == nil {
					tp = parseTestPkg(t, dir)
					pkgs[dir] = tp
				}
				lits, refs, ok := tp.reach(fn)
				if !ok {
					t.Errorf("%s on %s: no test %s", p, s.name, name)
					continue
				}
				if !lits[p] {
					t.Errorf("%s on %s: %s reaches no string naming the point", p, s.name, name)
				}
				if s.name == "PostgreSQL" && !refs["pgtest"] {
					t.Errorf("%s on %s: %s starts no PostgreSQL (pgtest)", p, s.name, name)
				}
				if s.name == "SQLite" && refs["pgtest"] {
					t.Errorf("%s on %s: %s starts a PostgreSQL (pgtest)", p, s.name, name)
				}
			}
		}
	}
	table := killMatrixTable()
	for _, name := range []string{"STATE.md", "TESTING.md"} {
		path := filepath.Join(root, "docs", name)
		doc, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if os.Getenv("REACH_UPDATE_STATE") == "1" {
			start, end := strings.Index(string(doc), killTableStart), strings.Index(string(doc), killTableEnd)
			if start < 0 || end < start {
				t.Fatalf("docs/%s has no %q ... %q", name, killTableStart, killTableEnd)
			}
			out := string(doc[:start]) + table + string(doc[end+len(killTableEnd):])
			if err := os.WriteFile(path, []byte(out), 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		if !strings.Contains(string(doc), table) {
			t.Errorf("docs/%s does not show killMatrix as it is: run REACH_UPDATE_STATE=1 go test ./cmd/reach -run TestKillMatrix", name)
		}
	}
}

const (
	killTableStart = "<!-- kill matrix: TestKillMatrix writes this table -->\n"
	killTableEnd   = "<!-- end of the kill matrix -->\n"
)

// killMatrixTable is killMatrix as docs/STATE.md shows it.
func killMatrixTable() string {
	var b strings.Builder
	b.WriteString(killTableStart)
	b.WriteString("| point | SQLite | PostgreSQL |\n| --- | --- | --- |\n")
	names := make([]string, 0, len(killMatrix))
	for p := range killMatrix {
		names = append(names, p)
	}
	sort.Strings(names)
	cell := func(tests []string, why string) string {
		if len(tests) == 0 {
			return "none: " + why
		}
		var s []string
		for _, n := range tests {
			if i := strings.LastIndex(n, "."); i >= 0 {
				n = n[i+1:] + " (" + n[:i] + ")"
			}
			s = append(s, "`"+n+"`")
		}
		return strings.Join(s, ", ")
	}
	for _, p := range names {
		c := killMatrix[p]
		fmt.Fprintf(&b, "| `%s` | %s | %s |\n", p, cell(c.sqlite, c.noSQLite), cell(c.postgres, c.noPostgres))
	}
	b.WriteString(killTableEnd)
	return b.String()
}

// crashPoints are the names the module's code (not its tests) passes to
// crashpoint.Reached, each with where; a name that is not a string is
// resolved through the function of the same package that makes it (the
// strings its return statements give).
func crashPoints(t *testing.T, root string) map[string]string {
	t.Helper()
	points := map[string]string{}
	fset := token.NewFileSet()
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if n := d.Name(); path != root && (strings.HasPrefix(n, ".") || n == "testdata" || n == "node_modules" || n == "crashpoint") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, 0)
		if err != nil {
			return err
		}
		ast.Inspect(f, func(n ast.Node) bool {
			c, ok := n.(*ast.CallExpr)
			if !ok || len(c.Args) != 1 {
				return true
			}
			sel, ok := c.Fun.(*ast.SelectorExpr)
			if !ok || sel.Sel.Name != "Reached" {
				return true
			}
			if x, ok := sel.X.(*ast.Ident); !ok || x.Name != "crashpoint" {
				return true
			}
			where := fset.Position(c.Pos()).String()
			if s, ok := stringLit(c.Args[0]); ok {
				points[s] = where
				return true
			}
			names := namesMadeBy(t, filepath.Dir(path), c.Args[0])
			if len(names) == 0 {
				t.Errorf("%s: a crash point named by neither a string nor a function of its package that returns strings", where)
			}
			for _, s := range names {
				points[s] = where
			}
			return true
		})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return points
}

// namesMadeBy are the strings the function that call e calls returns, if
// it is declared in dir (not in a test).
func namesMadeBy(t *testing.T, dir string, e ast.Expr) []string {
	c, ok := e.(*ast.CallExpr)
	if !ok {
		return nil
	}
	name := ""
	switch f := c.Fun.(type) {
	case *ast.Ident:
		name = f.Name
	case *ast.SelectorExpr:
		name = f.Sel.Name
	default:
		return nil
	}
	fset := token.NewFileSet()
	pkgs, err := parser.ParseDir(fset, dir, func(fi fs.FileInfo) bool { return !strings.HasSuffix(fi.Name(), "_test.go") }, 0)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, p := range pkgs {
		for _, f := range p.Files {
			for _, d := range f.Decls {
				fd, ok := d.(*ast.FuncDecl)
				if !ok || fd.Name.Name != name || fd.Body == nil {
					continue
				}
				ast.Inspect(fd.Body, func(n ast.Node) bool {
					if r, ok := n.(*ast.ReturnStmt); ok && len(r.Results) == 1 {
						if s, ok := stringLit(r.Results[0]); ok {
							out = append(out, s)
						}
					}
					return true
				})
			}
		}
	}
	return out
}

func stringLit(e ast.Expr) (string, bool) {
	l, ok := e.(*ast.BasicLit)
	if !ok || l.Kind != token.STRING {
		return "", false
	}
	s, err := strconv.Unquote(l.Value)
	return s, err == nil
}

// testPkg is a package's files, tests with them, by the names of their
// functions (a method under its own name: the walk is by name, not type).
type testPkg struct {
	funcs map[string][]*ast.FuncDecl
}

func parseTestPkg(t *testing.T, dir string) *testPkg {
	t.Helper()
	fset := token.NewFileSet()
	pkgs, err := parser.ParseDir(fset, dir, nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	tp := &testPkg{funcs: map[string][]*ast.FuncDecl{}}
	for _, p := range pkgs {
		for _, f := range p.Files {
			for _, d := range f.Decls {
				if fd, ok := d.(*ast.FuncDecl); ok && fd.Body != nil {
					tp.funcs[fd.Name.Name] = append(tp.funcs[fd.Name.Name], fd)
				}
			}
		}
	}
	return tp
}

// pointName is a crash point's name in a string a test arms: "NAME",
// "NAME#N", "NAME#N+go", "NAME#" (its N added), or one of them after
// the variable's "=".
var pointName = regexp.MustCompile(`^=?([a-z][a-z.]*)(#[0-9]*)?(\+go)?$`)

// reach walks the functions of the package that test fn calls, directly
// or not, and gives the crash point names their strings hold and the
// names (of packages, functions, variables) they refer to.
func (tp *testPkg) reach(fn string) (lits, refs map[string]bool, ok bool) {
	if len(tp.funcs[fn]) == 0 {
		return nil, nil, false
	}
	lits, refs = map[string]bool{}, map[string]bool{}
	seen := map[string]bool{}
	queue := []string{fn}
	for len(queue) > 0 {
		name := queue[0]
		queue = queue[1:]
		if seen[name] {
			continue
		}
		seen[name] = true
		for _, fd := range tp.funcs[name] {
			ast.Inspect(fd, func(n ast.Node) bool {
				switch x := n.(type) {
				case *ast.BasicLit:
					if s, ok := stringLit(x); ok {
						if m := pointName.FindStringSubmatch(s); m != nil {
							lits[m[1]] = true
						}
					}
				case *ast.Ident:
					refs[x.Name] = true
					if len(tp.funcs[x.Name]) > 0 && !slices.Contains(queue, x.Name) {
						queue = append(queue, x.Name)
					}
				}
				return true
			})
		}
	}
	return lits, refs, true
}
