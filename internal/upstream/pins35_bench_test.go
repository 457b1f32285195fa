package upstream

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"testing"

	"github.com/agentreach/reach"
	"github.com/agentreach/reach/internal/config"
	"github.com/agentreach/reach/internal/policy/pin"
	"github.com/agentreach/reach/internal/store/sqlite"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// BenchmarkPins35MirrorNewResources: one mirror of an upstream offering
// 2,000 resources none of which is pinned yet (a first start), into an
// empty pin store: the pins file (file) or the SQLite store (sqlite).
func BenchmarkPins35MirrorNewResources(b *testing.B) {
	const n = 2000
	s := mcp.NewServer(&mcp.Implementation{Name: "docs", Version: "1"}, nil)
	read := func(_ context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
		return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: req.Params.URI, Text: "text"}}}, nil
	}
	for i := range n {
		s.AddResource(&mcp.Resource{URI: fmt.Sprintf("doc://r%04d", i), Name: fmt.Sprintf("r%04d", i), Description: fmt.Sprintf("Document %d.", i)}, read)
	}
	srv := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, nil))
	b.Cleanup(srv.Close)
	life, cancel := context.WithCancel(context.Background())
	h := &host{}
	p, err := Connect(b.Context(), life, &Options{Config: &config.Config{Upstreams: []config.Upstream{{Name: "docs", URL: srv.URL}}},
		Runner: h, Catalog: h, Levels: h, Models: reach.New(nil)})
	if err != nil {
		cancel()
		b.Fatal(err)
	}
	p.Serve(b.Context(), mcp.NewServer(&mcp.Implementation{Name: "gateway"}, nil))
	b.Cleanup(func() { cancel(); h.close(); p.Close() })
	u := p.ups[0]
	if len(u.mirrored.resources) != n {
		b.Fatalf("mirrored %d resources, want %d", len(u.mirrored.resources), n)
	}
	for _, kind := range []string{"file", "sqlite"} {
		b.Run(kind, func(b *testing.B) {
			dir := b.TempDir()
			i := 0
			for b.Loop() {
				i++
				var ps *pin.Store
				var err error
				if kind == "file" {
					ps, err = pin.Open(filepath.Join(dir, fmt.Sprintf("pins%d.json", i)))
				} else {
					st, oerr := sqlite.Open(b.Context(), filepath.Join(dir, fmt.Sprint(i)), nil)
					if oerr != nil {
						b.Fatal(oerr)
					}
					defer st.Close()
					ps, err = pin.OpenStore(b.Context(), st, "")
				}
				if err != nil {
					b.Fatal(err)
				}
				p.pinner = benchPinner(ps)
				u.mirror(b.Context())
				if l, _ := ps.List(false); len(l) != n {
					b.Fatalf("%d pins, want %d", len(l), n)
				}
			}
		})
	}
}

// benchPinner pins in ps what it is asked about, by its JSON.
func benchPinner(ps *pin.Store) Pinner {
	return func(_ string, defs map[string]any, _ bool) map[string]bool {
		ds := make(map[string]pin.Definition, len(defs))
		for key, def := range defs {
			d, _ := json.Marshal(def)
			ds[key] = pin.Definition{Annotations: d}
		}
		sts, _ := ps.CheckAll(ds)
		held := map[string]bool{}
		for key, st := range sts {
			if st == pin.Held {
				held[key] = true
			}
		}
		return held
	}
}
