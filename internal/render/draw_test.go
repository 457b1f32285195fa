package render

import (
	"encoding/json"
	"encoding/xml"
	"flag"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/agentreach/reach"
	"github.com/rogpeppe/go-internal/txtar"
)

var update = flag.Bool("update", false, "rewrite the expected sections of testdata/*.txtar")

// TestRenderGolden renders each testdata/render-*.txtar's frames.json as
// SVG and DOT and compares with the archive's expected sections.
func TestRenderGolden(t *testing.T) {
	files, _ := filepath.Glob("testdata/render-*.txtar")
	if len(files) == 0 {
		t.Fatal("no golden files")
	}
	for _, file := range files {
		t.Run(filepath.Base(file), func(t *testing.T) {
			ar, err := txtar.ParseFile(file)
			if err != nil {
				t.Fatal(err)
			}
			var nodes []Frame
			for _, f := range ar.Files {
				if f.Name == "frames.json" {
					if err := json.Unmarshal(f.Data, &nodes); err != nil {
						t.Fatal(err)
					}
				}
			}
			got := map[string][]byte{"graph.svg": SVG(nodes), "graph.dot": DOT(nodes)}
			if err := xml.Unmarshal(got["graph.svg"], new(struct{})); err != nil {
				t.Fatalf("SVG is not well-formed XML: %v", err)
			}
			if *update {
				var files []txtar.File
				for _, f := range ar.Files {
					if _, ok := got[f.Name]; !ok {
						files = append(files, f)
					}
				}
				files = append(files, txtar.File{Name: "graph.svg", Data: got["graph.svg"]}, txtar.File{Name: "graph.dot", Data: got["graph.dot"]})
				ar.Files = files
				if err := os.WriteFile(file, txtar.Format(ar), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			for _, f := range ar.Files {
				if want, ok := got[f.Name]; ok && string(want) != string(f.Data) {
					t.Errorf("%s differs from the golden file (run go test -update to accept):\n%s", f.Name, firstDiff(string(f.Data), string(want)))
				}
			}
		})
	}
}

func firstDiff(want, got string) string {
	wl, gl := strings.Split(want, "\n"), strings.Split(got, "\n")
	for i := range max(len(wl), len(gl)) {
		var w, g string
		if i < len(wl) {
			w = wl[i]
		}
		if i < len(gl) {
			g = gl[i]
		}
		if w != g {
			return "line " + itoa(i+1) + ":\n got " + g + "\nwant " + w
		}
	}
	return ""
}

func itoa(i int) string { return strconv.Itoa(i) }

// The refused re-entry is drawn as a dashed edge to the right ancestor, and
// hostile names are escaped.
func TestSVGCycleEdgeAndEscaping(t *testing.T) {
	nodes := []Frame{
		{ID: 0xa, Kind: "model", Name: "gpt", Status: "completed"},
		{ID: 0xb, Parent: id(0xa), Kind: "tool", Name: "format_answer", Arguments: []byte(`{"x":"<script>"}`), Status: "executing"},
		{ID: 0xc, Parent: id(0xb), Kind: "model", Name: "gpt", Status: "completed"},
		{ID: 0xd, Parent: id(0xc), Kind: "tool", Name: "format_answer", Arguments: []byte(`{"x":"<script>"}`), Status: "refused", CycleTo: id(0xb)},
	}
	svg := string(SVG(nodes))
	if strings.Contains(svg, "<script>") {
		t.Fatal("unescaped argument in SVG")
	}
	if strings.Count(svg, `class="cycle"`) != 1 || !strings.Contains(svg, `class="frame tool refused" id="f-000000000000000d"`) {
		t.Errorf("SVG lacks the refused frame or its cycle edge:\n%s", svg)
	}
	dot := string(DOT(nodes))
	if !strings.Contains(dot, `"f000000000000000d" -> "f000000000000000b" [style=dashed`) {
		t.Errorf("DOT lacks the re-entry edge:\n%s", dot)
	}
}

// id returns a pointer to a frame id, for a Frame's links.
func id(n reach.FrameID) *reach.FrameID { return &n }
