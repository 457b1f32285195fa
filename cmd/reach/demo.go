package main

import (
	"fmt"
	"github.com/agentreach/reach"
	"os"
	"path/filepath"

	"github.com/agentreach/reach/internal/config"
	"github.com/agentreach/reach/internal/demo"
	"github.com/agentreach/reach/internal/render"
	"github.com/spf13/cobra"
)

func newDemo() *cobra.Command {
	var out, listen, data string
	var serveUI bool
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
their URLs; Ctrl-C stops it.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ss := demo.Run(cmd.Context())
			w := cmd.OutOrStdout()
			fmt.Fprint(w, demo.Table(ss))
			if err := os.MkdirAll(out, 0o755); err != nil {
				return err
			}
			failed := 0
			for _, s := range ss {
				if !s.OK {
					failed++
				}
				if err := os.WriteFile(filepath.Join(out, demo.Slug(s)+".svg"), render.SVG(render.Frames(s.Request)), 0o644); err != nil {
					return err
				}
			}
			fmt.Fprintf(w, "\ncall graphs: %s/*.svg (open them in a browser)\n", out)
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
				data = config.DefaultData // as serve without a configuration: the state is kept in ./.reach
			}
			abs, err := filepath.Abs(data)
			if err != nil {
				return err
			}
			cfg.Data = abs
			log, err := newLogger(cmd, cmd.ErrOrStderr(), cfg)
			if err != nil {
				return err
			}
			shown := make([]*reach.Request, 0, len(ss))
			for _, s := range ss {
				shown = append(shown, s.Request)
			}
			fmt.Fprintln(w)
			return serveShowing(cmd.Context(), cfg, log, w, shown)
		},
	}
	cmd.Flags().StringVar(&out, "out", "reach-demo", "folder for the SVG graphs")
	cmd.Flags().BoolVar(&serveUI, "serve", false, "then serve a gateway with the example tools and the web UI")
	cmd.Flags().StringVar(&listen, "listen", "", "with --serve, the loopback address (default "+config.DefaultListen+")")
	cmd.Flags().StringVar(&data, "data", "", "with --serve, the folder for the gateway's state (default "+config.DefaultData+")")
	return cmd
}
