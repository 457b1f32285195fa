package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/spf13/cobra"
)

// newHealth is `reach health`: a probe of a running gateway for a
// container's health check or a script, with no other program needed.
func newHealth() *cobra.Command {
	var api string
	var ready bool
	cmd := &cobra.Command{
		Use:   "health",
		Short: "Probe a running gateway: exit 0 if it is alive (or, with --ready, ready for traffic)",
		Long: `Asks the running gateway's /livez (or /readyz with --ready) and prints its
answer. Exits 0 when it answers 200, non-zero when it answers otherwise or
not at all: the container image's HEALTHCHECK runs it. Neither probe needs
credentials. /readyz answers 503 while the gateway shuts down, its PostgreSQL
store does not answer, its SQLite store's last write failed (the disk full,
read-only) or its database file was removed or replaced, or an upstream
marked required is not connected.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			path := "/livez"
			if ready {
				path = "/readyz"
			}
			base := apiBase(api)
			client := &http.Client{Timeout: 5 * time.Second}
			resp, err := client.Get(base + path)
			if err != nil {
				return noAnswer(base, err)
			}
			defer resp.Body.Close()
			b, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
			if resp.StatusCode != http.StatusOK && !json.Valid(b) {
				// Reach's probes answer JSON, 503 included: this is
				// another server's page, not worth printing.
				return notReach(base, "GET "+path, resp)
			}
			fmt.Fprint(cmd.OutOrStdout(), printableLines(string(b)))
			if resp.StatusCode != http.StatusOK {
				return fmt.Errorf("%s%s answered %s", base, path, printable(resp.Status))
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&api, "api", "", apiUsage)
	cmd.Flags().BoolVar(&ready, "ready", false, "ask /readyz (ready for traffic) instead of /livez (alive)")
	return cmd
}
