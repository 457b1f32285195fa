package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/agentreach/reach"
	"github.com/agentreach/reach/internal/config"
	"github.com/agentreach/reach/internal/demo"
	"github.com/agentreach/reach/internal/render"
	"github.com/spf13/cobra"
)

func newDemo() *cobra.Command {
	var out, listen, data string
	var serveUI, asJSON bool
	cmd := &cobra.Command{
		Use:   "demo",
		Short: "Reproduce the classic agent failures, without and with reach",
		Long: `Runs scripted agents that reproduce the failures reach exists for (a
formatter loop through the model, a multi-agent livelock, a sub-agent on a
fresh budget, a refund that needs approval, a failed chain that must be
undone, a stale read, a runaway multi-agent request), each behind a plain
step counter and behind reach. Prints what happened both ways and the
tokens saved, and writes each scenario's call graph as SVG.

With --serve it then starts a gateway in this process with the example
tools, serving the web UI (/ui/), MCP (/mcp) and the HTTP API, and prints
their URLs; Ctrl-C stops it.

With --json it prints the scenarios as one JSON object instead of the
table: {"scenarios": [{name, reproduces, without_reach, with_reach,
tokens_without, tokens_with, tokens_saved, ok, request, graph}]}.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if asJSON && serveUI {
				return errors.New("--json and --serve do not go together: --json prints the scenarios and exits; run reach demo --serve, then reach requests list --json")
			}
			// The graphs' folder first: a read-only working directory (a
			// container's) is found before the scenarios run, not after.
			if err := os.MkdirAll(out, 0o755); err != nil {
				return fmt.Errorf("creating the folder for the graphs: %w: name one reach may write with --out DIR", err)
			}
			ss := demo.Run(cmd.Context())
			w := cmd.OutOrStdout()
			failed := 0
			rows := make([]demoRow, 0, len(ss))
			for _, s := range ss {
				if !s.OK {
					failed++
				}
				graph := filepath.Join(out, demo.Slug(s)+".svg")
				if err := os.WriteFile(graph, render.SVG(render.Frames(s.Request)), 0o644); err != nil {
					return err
				}
				rows = append(rows, demoRow{Name: s.Name, Reproduces: s.Seed, Without: s.Without, With: s.Reach,
					TokensWithout: s.TokensWithout, TokensWith: s.TokensWith, TokensSaved: s.Saved(), OK: s.OK,
					Request: s.Request.ID(), Graph: graph})
			}
			if asJSON {
				enc := json.NewEncoder(w)
				enc.SetEscapeHTML(false)
				enc.SetIndent("", "  ")
				if err := enc.Encode(map[string]any{"scenarios": rows}); err != nil {
					return err
				}
			} else {
				fmt.Fprint(w, demo.Table(ss))
				fmt.Fprintf(w, "\ncall graphs: %s/*.svg (open them in a browser)\n", out)
			}
			if failed > 0 {
				return fmt.Errorf("%d scenarios did not behave as described", failed)
			}
			if !serveUI {
				return nil
			}
			cfg := &config.Config{Examples: true, Listen: listen}
			if err := config.CheckLoopback(cfg.ListenAddr()); err != nil {
				return err
			}
			if data == "" {
				data = config.DefaultData // as serve without a configuration: the state is kept in .reach
			}
			if err := setData(cfg, data); err != nil {
				return err
			}
			log, err := newLogger(cmd, cmd.ErrOrStderr(), cfg)
			if err != nil {
				return err
			}
			shown := make([]*reach.Request, 0, len(ss))
			for _, s := range ss {
				shown = append(shown, s.Request)
			}
			// The scenarios ran in runtimes of their own: the UI shows
			// them, the API does not list them, and the banner's reach
			// requests list said "no requests" with no word of why.
			fmt.Fprintf(w, "\nThe scenarios above are shown in the web UI (/ui/, with their graphs and timelines); the API and the commands below (reach requests, reach graph) see the calls made to this gateway from now on.\n\n")
			return serveShowing(cmd.Context(), cfg, log, w, shown)
		},
	}
	cmd.Flags().StringVar(&out, "out", "reach-demo", "folder for the SVG graphs")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the scenarios as JSON instead of the table")
	cmd.Flags().BoolVar(&serveUI, "serve", false, "then serve a gateway with the example tools and the web UI")
	cmd.Flags().StringVar(&listen, "listen", "", "with --serve, the loopback address (default "+config.DefaultListen+")")
	cmd.Flags().StringVar(&data, "data", "", "with --serve, the folder for the gateway's state (default "+config.DefaultData+")")
	return cmd
}

// demoRow is one scenario as reach demo --json prints it.
type demoRow struct {
	Name          string `json:"name"`
	Reproduces    string `json:"reproduces"`
	Without       string `json:"without_reach"`
	With          string `json:"with_reach"`
	TokensWithout int64  `json:"tokens_without"`
	TokensWith    int64  `json:"tokens_with"`
	TokensSaved   int64  `json:"tokens_saved"`
	OK            bool   `json:"ok"`
	Request       string `json:"request"` // the reach run's request id
	Graph         string `json:"graph"`   // its call graph's SVG file
}
