package main

import (
	"bytes"
	"context"
	"debug/elf"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"runtime/debug"
	"slices"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"

	"github.com/agentreach/reach/internal/policy"
)

// repoRoot is the module's root, two folders up from cmd/reach.
func repoRoot(t *testing.T) string {
	t.Helper()
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	return root
}

// dockerLine is one instruction of a Dockerfile, its continuation lines
// joined.
type dockerLine struct{ op, args string }

func parseDockerfile(t *testing.T, path string) [][]dockerLine {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var stages [][]dockerLine
	var cur string
	for _, raw := range strings.Split(string(b), "\n") {
		line := strings.TrimSpace(raw)
		if cur == "" && (line == "" || strings.HasPrefix(line, "#")) {
			continue
		}
		if strings.HasSuffix(line, "\\") {
			cur += strings.TrimSuffix(line, "\\") + " "
			continue
		}
		cur += line
		op, args, _ := strings.Cut(cur, " ")
		cur = ""
		op = strings.ToUpper(op)
		if op == "FROM" {
			stages = append(stages, nil)
		}
		if len(stages) == 0 {
			t.Fatalf("%s: %s before the first FROM", path, op)
		}
		stages[len(stages)-1] = append(stages[len(stages)-1], dockerLine{op, strings.TrimSpace(args)})
	}
	return stages
}

func find(stage []dockerLine, op string) []string {
	var out []string
	for _, l := range stage {
		if l.op == op {
			out = append(out, l.args)
		}
	}
	return out
}

// TestDockerfile: the image is built in stages, its binary static
// (cgo, linked statically), and the image it runs is the binary alone, as a user
// that is not root, with the data folder a volume and a health check that
// needs no other program. The build command in it is run here (docker is
// not), and its binary checked: static, and stamped with the version.
func TestDockerfile(t *testing.T) {
	root := repoRoot(t)
	stages := parseDockerfile(t, filepath.Join(root, "Dockerfile"))
	if len(stages) < 2 {
		t.Fatalf("%d stages, want a build stage and a run stage", len(stages))
	}
	run := stages[len(stages)-1]
	if from := run[0].args; from != "scratch" {
		t.Errorf("the image runs FROM %q, want scratch (the static binary alone)", from)
	}
	users := find(run, "USER")
	if len(users) == 0 || slices.ContainsFunc(users, func(u string) bool {
		name, _, _ := strings.Cut(u, ":")
		return name == "root" || name == "0"
	}) || users[len(users)-1] == "" {
		t.Errorf("USER %v: the image must run as a user that is not root", users)
	}
	if v := find(run, "VOLUME"); len(v) != 1 || !strings.Contains(v[0], "/data") {
		t.Errorf("VOLUME %v, want /data", v)
	}
	if cmd := find(run, "CMD"); len(cmd) != 1 || !strings.Contains(cmd[0], `"--data", "/data"`) {
		t.Errorf("CMD %v, want serve --data /data", cmd)
	}
	// A docker run that gives its own arguments replaces CMD, its --data
	// with it: without --data /data, the data folder is .reach beside the
	// configuration (read-only, and not the user's), and serve does not start.
	for _, doc := range []string{"README.md", "Dockerfile"} {
		b, err := os.ReadFile(filepath.Join(root, doc))
		if err != nil {
			t.Fatal(err)
		}
		text := strings.ReplaceAll(string(b), "\\\n", " ")
		for _, line := range strings.Split(text, "\n") {
			if strings.Contains(line, "docker run") && strings.Contains(line, " reach serve") && !strings.Contains(line, "--data /data") {
				t.Errorf("%s: %q: serve without --data /data keeps its state beside the configuration, not in the volume", doc, strings.TrimSpace(line))
			}
		}
	}
	hc := find(run, "HEALTHCHECK")
	if len(hc) != 1 || !strings.Contains(hc[0], `CMD ["/reach", "health"]`) {
		t.Errorf("HEALTHCHECK %v, want the binary's own probe (reach health): the image has no shell or curl", hc)
	}
	if copies := find(run, "COPY"); !slices.ContainsFunc(copies, func(c string) bool {
		return strings.Contains(c, "--chown=65532:65532") && strings.HasSuffix(c, " /data")
	}) {
		t.Errorf("COPY %v: the data folder must belong to the image's user", copies)
	}
	var build string
	for _, r := range find(stages[0], "RUN") {
		if strings.Contains(r, "go build") {
			build = r
		}
	}
	if !strings.HasPrefix(build, "CGO_ENABLED=1 go build") || !strings.Contains(build, "./cmd/reach") {
		t.Fatalf("the build is %q, want CGO_ENABLED=1 go build ... ./cmd/reach (the store on SQLite's C library)", build)
	}
	if testing.Short() {
		t.Skip("building the binary as the Dockerfile does takes a while")
	}
	// Run the Dockerfile's build command as it is, with its output and
	// version set here.
	out := filepath.Join(t.TempDir(), "reach")
	cmdline := strings.ReplaceAll(strings.Replace(build, "-o /out/reach", "-o "+out, 1), "${VERSION}", "v9.8.7-docker-test")
	sh := exec.CommandContext(t.Context(), "sh", "-c", cmdline)
	sh.Dir = root
	if b, err := sh.CombinedOutput(); err != nil {
		t.Fatalf("%s: %v\n%s", cmdline, err, b)
	}
	f, err := elf.Open(out)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP || p.Type == elf.PT_DYNAMIC {
			t.Errorf("the binary has a %v program header: it is not static", p.Type)
		}
	}
	v, err := exec.CommandContext(t.Context(), out, "version").Output()
	if err != nil || !strings.HasPrefix(string(v), "reach v9.8.7-docker-test") {
		t.Errorf("the built binary's version: %q %v", v, err)
	}
}

// markdownFiles returns the repository's Markdown files, relative to root.
func markdownFiles(t *testing.T, root string) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (strings.HasPrefix(d.Name(), ".") && p != root || d.Name() == "node_modules" || d.Name() == "testdata") {
			return filepath.SkipDir
		}
		if !d.IsDir() && strings.HasSuffix(p, ".md") {
			rel, _ := filepath.Rel(root, p)
			out = append(out, rel)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

var mdLink = regexp.MustCompile(`\]\(([^)\s]+)\)`)

// TestDocsLinkInsideTheRepository: every relative link of every Markdown
// file names a file or folder of the repository, inside it.
func TestDocsLinkInsideTheRepository(t *testing.T) {
	root := repoRoot(t)
	files := markdownFiles(t, root)
	if !slices.Contains(files, "README.md") || !slices.Contains(files, filepath.Join("docs", "ARCHITECTURE.md")) {
		t.Fatalf("Markdown files %v lack README.md or docs/ARCHITECTURE.md", files)
	}
	for _, f := range files {
		b, _ := os.ReadFile(filepath.Join(root, f))
		for _, m := range mdLink.FindAllStringSubmatch(string(b), -1) {
			target := m[1]
			if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") || strings.HasPrefix(target, "#") {
				continue
			}
			target, _, _ = strings.Cut(target, "#")
			p := filepath.Clean(filepath.Join(root, filepath.Dir(f), target))
			if rel, err := filepath.Rel(root, p); err != nil || strings.HasPrefix(rel, "..") {
				t.Errorf("%s links to %s, outside the repository", f, m[1])
				continue
			}
			if _, err := os.Stat(p); err != nil {
				t.Errorf("%s links to %s, which is not in the repository", f, m[1])
			}
		}
	}
}

var (
	yamlBlock   = regexp.MustCompile("(?s)```yaml\n(.*?)```")
	envRef      = regexp.MustCompile(`\$\{([A-Za-z_][A-Za-z0-9_]*)\}`)
	validateCmd = regexp.MustCompile(`(?m)^\s*((?:[A-Z_]+=\S+ )*)go run \./cmd/reach (validate .*)$`)
)

// TestExamplesValidate: every example configuration — examples/*.yaml and
// each YAML block of the Markdown files that is a reach configuration —
// passes reach validate --offline, given the variables it names and the
// files it names (a folder of policies, a secrets file) where the example
// expects the reader to have them; and each `go run ./cmd/reach validate`
// command the docs show succeeds as written, from the repository's root.
func TestExamplesValidate(t *testing.T) {
	root := repoRoot(t)
	type example struct{ name, text string }
	var examples []example
	yamls, _ := filepath.Glob(filepath.Join(root, "examples", "*.yaml"))
	for _, p := range yamls {
		b, _ := os.ReadFile(p)
		examples = append(examples, example{strings.TrimPrefix(p, root+"/"), string(b)})
	}
	var commands []string
	for _, f := range markdownFiles(t, root) {
		b, _ := os.ReadFile(filepath.Join(root, f))
		for i, m := range yamlBlock.FindAllStringSubmatch(string(b), -1) {
			var doc map[string]any
			if yaml.Unmarshal([]byte(m[1]), &doc) != nil || doc["upstreams"] == nil && doc["listen"] == nil && doc["tools"] == nil {
				continue // not a configuration of reach
			}
			examples = append(examples, example{f + " block " + string(rune('1'+i)), m[1]})
		}
		for _, m := range validateCmd.FindAllStringSubmatch(string(b), -1) {
			commands = append(commands, m[0])
		}
	}
	if len(examples) < 2 || len(commands) == 0 {
		t.Fatalf("%d example configurations and %d validate commands found, want the README's, examples/reach.yaml and its command", len(examples), len(commands))
	}
	for _, ex := range examples {
		t.Run(ex.name, func(t *testing.T) {
			dir := t.TempDir()
			for _, m := range envRef.FindAllStringSubmatch(ex.text, -1) {
				t.Setenv(m[1], "example-value")
			}
			var doc struct {
				Policy  *struct{ Path string }
				Secrets *struct{ File string }
			}
			yaml.Unmarshal([]byte(ex.text), &doc)
			if doc.Policy != nil && doc.Policy.Path != "" {
				pdir := filepath.Join(dir, doc.Policy.Path)
				os.MkdirAll(pdir, 0o755)
				os.WriteFile(filepath.Join(pdir, "default.cedar"), policy.DefaultSource(), 0o644)
			}
			if doc.Secrets != nil && doc.Secrets.File != "" {
				os.WriteFile(filepath.Join(dir, doc.Secrets.File), []byte("EXAMPLE=1\n"), 0o600)
			}
			cfg := filepath.Join(dir, "reach.yaml")
			os.WriteFile(cfg, []byte(ex.text), 0o600)
			var out, errOut bytes.Buffer
			if err := run(context.Background(), []string{"validate", "--offline", "--config", cfg}, &out, &errOut); err != nil {
				t.Errorf("reach validate --offline: %v\n%s", err, errOut.String())
			} else if !strings.Contains(out.String(), ": ok,") {
				t.Errorf("reach validate --offline printed %q", out.String())
			}
		})
	}
	for _, line := range commands {
		m := validateCmd.FindStringSubmatch(line)
		t.Run(strings.TrimSpace(line), func(t *testing.T) {
			for _, kv := range strings.Fields(m[1]) {
				k, v, _ := strings.Cut(kv, "=")
				t.Setenv(k, v)
			}
			args := strings.Fields(m[2])
			for i, a := range args {
				if i > 0 && args[i-1] == "--config" && !filepath.IsAbs(a) {
					args[i] = filepath.Join(root, a)
				}
			}
			if err := run(context.Background(), args, io.Discard, io.Discard); err != nil {
				t.Errorf("%s: %v", strings.TrimSpace(line), err)
			}
		})
	}
}

// TestReleaseFiles: what a team needs to adopt a release is in the
// repository: the Apache-2.0 license, a changelog with its unreleased
// changes, and a README with the go install line of this module and the
// prerequisites, the Go version among them as go.mod says.
func TestReleaseFiles(t *testing.T) {
	root := repoRoot(t)
	read := func(name string) string {
		b, err := os.ReadFile(filepath.Join(root, name))
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		return string(b)
	}
	if l := read("LICENSE"); !strings.Contains(l, "Apache License") || !strings.Contains(l, "Version 2.0, January 2004") || !strings.Contains(l, "END OF TERMS AND CONDITIONS") {
		t.Error("LICENSE is not the Apache License 2.0 in full")
	}
	if c := read("CHANGELOG.md"); !regexp.MustCompile(`(?m)^## Unreleased\n`).MatchString(c) {
		t.Error("CHANGELOG.md has no ## Unreleased section")
	}
	mod := read("go.mod")
	module := regexp.MustCompile(`(?m)^module (\S+)$`).FindStringSubmatch(mod)
	goVersion := regexp.MustCompile(`(?m)^go (\d+\.\d+)`).FindStringSubmatch(mod)
	if module == nil || goVersion == nil {
		t.Fatalf("go.mod names no module or go version:\n%s", mod)
	}
	readme := read("README.md")
	if want := "go install " + module[1] + "/cmd/reach@latest"; !strings.Contains(readme, want) {
		t.Errorf("README.md lacks %q", want)
	}
	_, prereq, ok := strings.Cut(readme, "\n## Prerequisites\n")
	prereq, _, _ = strings.Cut(prereq, "\n## ")
	if !ok || !strings.Contains(prereq, "Go "+goVersion[1]) || !strings.Contains(prereq, "Node.js") || !strings.Contains(prereq, "Chromium") {
		t.Errorf("README.md's prerequisites do not name Go %s, Node.js and Chromium:\n%s", goVersion[1], prereq)
	}
}

// TestOneYAMLLibrary: reach reads YAML with go.yaml.in/yaml/v3, which its
// dependencies link anyway; gopkg.in/yaml.v3, the same library's old
// path, linked beside it cost the binary 430 KB and their pages in memory
// (docs/BENCHMARKS.md, "Memory").
func TestOneYAMLLibrary(t *testing.T) {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		t.Skip("no build information in this test binary")
	}
	for _, m := range bi.Deps {
		if m.Path == "gopkg.in/yaml.v3" {
			t.Errorf("%s %s is linked: read YAML with go.yaml.in/yaml/v3", m.Path, m.Version)
		}
	}
}

// TestReleaseLinks: a release build of reach links neither net/http/pprof
// (a -tags pprof build's, pprof.go) nor, where cgo builds it, the pure-Go
// SQLite (modernc.org/sqlite, for builds without cgo): every package
// linked costs the binary's pages in the RSS of `reach serve`, its init
// running at every start (docs/BENCHMARKS.md, "Memory"). The pprof build
// is listed too, so that the check can see what it looks for.
func TestReleaseLinks(t *testing.T) {
	if testing.Short() {
		t.Skip("lists the packages of two builds")
	}
	goTool := filepath.Join(runtime.GOROOT(), "bin", "go")
	deps := func(cgo string, args ...string) map[string]bool {
		t.Helper()
		cmd := exec.CommandContext(t.Context(), goTool, append(append([]string{"list", "-deps"}, args...), ".")...)
		cmd.Env = append(os.Environ(), "CGO_ENABLED="+cgo)
		out, err := cmd.Output()
		if err != nil {
			t.Skipf("go list: %v", err) // no go command beside the test's toolchain
		}
		set := map[string]bool{}
		for p := range strings.FieldsSeq(string(out)) {
			set[p] = true
		}
		return set
	}
	release := deps("1")
	if release["net/http/pprof"] {
		t.Error("a release build links net/http/pprof: only a -tags pprof build serves profiles")
	}
	if release["modernc.org/sqlite"] {
		t.Error("a cgo build links modernc.org/sqlite beside the C library's driver")
	}
	if !release["github.com/mattn/go-sqlite3"] {
		t.Error("a cgo build does not link github.com/mattn/go-sqlite3: the check above sees nothing")
	}
	if !deps("1", "-tags", "pprof")["net/http/pprof"] {
		t.Error("a -tags pprof build does not link net/http/pprof: the check above sees nothing")
	}
}
