package main

import (
	"bufio"
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/agentreach/reach/internal/origin"
	"github.com/spf13/cobra"
	"golang.org/x/term"
)

// isTerminal reports whether w is a terminal (a variable, for tests).
var isTerminal = func(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

// defaultAPI is the address of a gateway served with no listen: set.
const defaultAPI = "http://127.0.0.1:7400"

// apiUsage is the help of --api.
const apiUsage = "the gateway's address, http://HOST:PORT (default $REACH_API, or " + defaultAPI + ")"

// apiBase is the gateway the commands talk to: --api, else $REACH_API,
// else the address reach serve listens on with no configuration. It takes
// the address as a user writes it: HOST:PORT as curl takes it (http://),
// and the URL of one of the endpoints the banner shows (/v1/, /mcp, /sse,
// /ui/) for the gateway's own, which were asked for /v1/v1/requests.
func apiBase(flag string) string {
	base := strings.TrimSpace(cmp.Or(flag, os.Getenv("REACH_API"), defaultAPI))
	if !strings.Contains(base, "://") {
		base = "http://" + base
	}
	base = strings.TrimRight(base, "/")
	for _, endpoint := range []string{"/v1", "/mcp", "/sse", "/ui"} {
		if strings.HasSuffix(base, endpoint) {
			return strings.TrimRight(strings.TrimSuffix(base, endpoint), "/")
		}
	}
	return base
}

// envTrue reports whether the environment variable name is set to a true
// value (1, true, yes, on).
func envTrue(name string) bool {
	switch strings.ToLower(strings.TrimSpace(os.Getenv(name))) {
	case "1", "true", "yes", "on":
		return true
	}
	return false
}

// noAnswer is the error of a gateway that did not answer at base: it says
// how to name one served at another address.
func noAnswer(base string, err error) error {
	if ue, ok := errors.AsType[*url.Error](err); ok && ue.Op == "parse" {
		return fmt.Errorf("%s is not the address of a gateway: pass --api http://HOST:PORT (or https://), or set REACH_API so (%v)", printable(base), ue.Err)
	}
	return fmt.Errorf("the gateway at %s did not answer (is `reach serve` running? For one on another address, pass --api http://HOST:PORT or set REACH_API): %w", base, err)
}

// notReach is the error of an answer that is not a reach gateway's (an
// error status without its JSON error): another server at the address, an
// upstream's port say, or a proxy in front of one that answered for it.
func notReach(base, what string, resp *http.Response) error {
	kind := ""
	if ct, _, _ := strings.Cut(resp.Header.Get("Content-Type"), ";"); ct != "" {
		kind = ", " + printable(strings.TrimSpace(ct))
	}
	return fmt.Errorf("%s: %s answered %s%s, not as a reach gateway answers: the server there is not a reach gateway (or a proxy in front of one answered for it). "+
		"Pass the address reach serve printed (its API line, http://HOST:PORT) with --api, or set REACH_API", what, printable(base), printable(resp.Status), kind)
}

// apiFlags adds --api, --key and --allow-plain-http to cmd and returns a
// client builder.
func apiFlags(cmd *cobra.Command) func() *apiClient {
	var api, key string
	var plain bool
	cmd.PersistentFlags().StringVar(&api, "api", "", apiUsage)
	cmd.PersistentFlags().StringVar(&key, "key", "", "the API key (default $REACH_API_KEY; - reads it from standard input)")
	cmd.PersistentFlags().BoolVar(&plain, "allow-plain-http", false,
		"send the API key to a plain http:// gateway that is not loopback (default $REACH_ALLOW_PLAIN_HTTP): in the clear, on a network you trust end to end")
	return func() *apiClient {
		c := &apiClient{base: apiBase(api), key: cmp.Or(key, os.Getenv("REACH_API_KEY")),
			plainOK: plain || envTrue("REACH_ALLOW_PLAIN_HTTP"),
			// The key goes to the gateway's origin only, through
			// redirects too.
			http: &http.Client{Timeout: 30 * time.Second, CheckRedirect: origin.KeepKey(nil)}}
		switch {
		case key == "-":
			c.key, c.err = keyFromStdin(cmd.InOrStdin())
		case key != "":
			// Other users of the machine see a process's arguments (ps),
			// and the shell keeps them in its history.
			fmt.Fprintln(cmd.ErrOrStderr(), "reach: warning: an API key on the command line is seen by other users of this machine (ps) and kept in shell history: set REACH_API_KEY, or pass --key - to read it from standard input")
		}
		if u, err := url.Parse(c.base); err == nil && u.User != nil {
			// A key in the address (http://user:KEY@host) went out as Basic
			// credentials, in the clear too, and was printed with the
			// address in every error.
			u.User = nil
			c.base = u.String()
			c.err = fmt.Errorf("the gateway's address %s holds credentials: remove them from --api or REACH_API, and pass the key in REACH_API_KEY (or --key - from standard input)", printable(c.base))
		}
		return c
	}
}

// writePrivate writes b to the file path, readable by its owner alone: a
// regular file there is truncated and its mode set to 0600 (os.WriteFile
// kept an existing file's mode); a device or pipe (-o /dev/stdout) is
// written as it is.
func writePrivate(path string, b []byte) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return err
	}
	if fi, err := f.Stat(); err == nil && fi.Mode().IsRegular() {
		if err := f.Chmod(0o600); err != nil {
			f.Close()
			return err
		}
	}
	if _, err := f.Write(b); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// keyFromStdin reads the API key of --key - from the first line of in.
func keyFromStdin(in io.Reader) (string, error) {
	line, err := bufio.NewReader(io.LimitReader(in, 64<<10)).ReadString('\n')
	if err != nil && !errors.Is(err, io.EOF) {
		return "", fmt.Errorf("--key -: reading the API key from standard input: %w", err)
	}
	k := strings.TrimSpace(line)
	if k == "" {
		return "", errors.New("--key -: standard input holds no API key (give it on the first line)")
	}
	return k, nil
}

// raw GETs path and returns the body as is.
func (c *apiClient) raw(cmd *cobra.Command, path string) ([]byte, error) {
	return c.do(cmd.Context(), http.MethodGet, path, nil, nil)
}

func newGraph() *cobra.Command {
	var format, out string
	cmd := &cobra.Command{
		Use:   "graph REQUEST",
		Short: "Draw a request's call graph (SVG, DOT or JSON)",
		Long: `Fetches a request's call graph from the running gateway: model turns, tool
calls, delegations and nested model calls as a tree, refused calls drawn as
dashed edges back to the frame they would have re-entered, colours by status,
tokens and latency per frame. SVG needs no other program; DOT is for Graphviz.`,
		Args: cobra.ExactArgs(1),
	}
	client := apiFlags(cmd)
	cmd.Flags().StringVar(&format, "format", "svg", "svg, dot or json (with -o, a .dot, .gv or .json file's name says it)")
	cmd.Flags().StringVarP(&out, "output", "o", "", "write to this file instead of stdout")
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		if out != "" && out != "-" && !cmd.Flags().Changed("format") {
			// The file's name says the format: graph.png got an SVG.
			switch ext := strings.ToLower(filepath.Ext(out)); ext {
			case ".dot", ".gv":
				format = "dot"
			case ".json":
				format = "json"
			case ".png", ".jpg", ".jpeg", ".gif", ".webp", ".pdf", ".bmp", ".tif", ".tiff":
				return fmt.Errorf("reach draws SVG, DOT or JSON, not %s: write -o %s.svg (a browser opens it), or render the DOT with Graphviz: reach graph %s --format dot | dot -T%s -o %s",
					ext, printable(strings.TrimSuffix(out, filepath.Ext(out))), printable(args[0]), strings.TrimPrefix(ext, "."), printable(out))
			}
		}
		switch format {
		case "svg", "dot", "json":
		default:
			return fmt.Errorf("unknown format %q (want svg, dot or json)", format)
		}
		b, err := client().raw(cmd, "/v1/requests/"+url.PathEscape(args[0])+"/graph?format="+format)
		if err != nil {
			return err
		}
		if out == "" || out == "-" {
			if format == "svg" && out == "" && isTerminal(cmd.OutOrStdout()) {
				return fmt.Errorf("an SVG drawing is not for a terminal: write it to a file with -o %s.svg and open that in a browser, or print it as text with --format dot or --format json (-o - writes the SVG here anyway)", printable(args[0]))
			}
			if format == "json" {
				b = printableJSON(b)
			} else {
				b = []byte(printableLines(string(b)))
			}
			_, err = cmd.OutOrStdout().Write(b)
			return err
		}
		// The graph holds the request's arguments and results: its
		// owner's alone, as the gateway's data folder is, over an
		// existing file too (writePrivate).
		if err := writePrivate(out, b); errors.Is(err, fs.ErrNotExist) {
			dir := filepath.Dir(out)
			return fmt.Errorf("writing the graph to %s: the folder %s does not exist: make it (mkdir -p %s), or name a file in a folder that exists with -o", printable(out), printable(dir), printable(dir))
		} else if err != nil {
			return fmt.Errorf("writing the graph: %w", err)
		}
		return nil
	}
	return cmd
}

func newRequests() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "requests",
		Short: "List, inspect and stop the gateway's requests",
		Args:  cobra.NoArgs,
	}
	client := apiFlags(cmd)
	var state string
	var limit int
	var asJSON bool
	list := func(cmd *cobra.Command, _ []string) error {
		if limit < 0 {
			return fmt.Errorf("--limit %d: want how many requests to list, newest first, or 0 for all the gateway keeps", limit)
		}
		q := url.Values{}
		if state != "" {
			q.Set("state", state)
		}
		if limit > 0 {
			q.Set("limit", strconv.Itoa(limit))
		}
		path := "/v1/requests"
		if len(q) > 0 {
			path += "?" + q.Encode()
		}
		if asJSON {
			b, err := client().raw(cmd, path)
			if err != nil {
				return err
			}
			_, err = cmd.OutOrStdout().Write(printableJSON(b))
			return err
		}
		var out struct {
			Requests []struct {
				ID, State, Activity, Principal, Agent, Parent string
				Started                                       time.Time
				ToolCalls                                     int      `json:"tool_calls"`
				Turns                                         int      `json:"turns"`
				Tokens                                        int64    `json:"tokens"`
				Cost                                          float64  `json:"cost"`
				Refusals                                      int      `json:"refusals"`
				RunningOn                                     []string `json:"running_on"`
				Priority                                      int      `json:"priority"`
			} `json:"requests"`
		}
		if _, err := client().do(cmd.Context(), http.MethodGet, path, nil, &out); err != nil {
			return err
		}
		// The priority (R8) has a column when a request listed has one
		// other than the default, 0.
		prio := false
		for _, r := range out.Requests {
			prio = prio || r.Priority != 0
		}
		header := "ID\tSTATE\tPRINCIPAL\tAGENT\tPARENT\tSTARTED\tTOOL CALLS\tREFUSED\tTURNS\tTOKENS\tCOST"
		if prio {
			header = "ID\tSTATE\tPRINCIPAL\tPRIORITY\tAGENT\tPARENT\tSTARTED\tTOOL CALLS\tREFUSED\tTURNS\tTOKENS\tCOST"
		}
		tw := table(cmd.OutOrStdout(), len(out.Requests), "no requests", header)
		if tw == nil {
			return nil
		}
		for _, r := range out.Requests {
			st := cmp.Or(r.Activity, r.State)
			if strings.HasPrefix(r.State, "stopped_") {
				st += " (" + strings.TrimPrefix(r.State, "stopped_") + ")"
			}
			if len(r.RunningOn) > 0 { // its part here ended; the store says it runs there
				st += " on " + strings.Join(r.RunningOn, ", ")
			}
			cost := "-"
			if r.Cost > 0 {
				cost = fmt.Sprintf("%.4f", r.Cost)
			}
			// A sub-request (an agent's hand-off) names its parent, so that
			// the tree of one run reads from the table.
			who := printable(r.Principal)
			if prio {
				who += "\t" + strconv.Itoa(r.Priority)
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%d\t%d\t%d\t%d\t%s\n", printable(r.ID), printable(st), who,
				orDash(printable(r.Agent)), orDash(printable(r.Parent)), r.Started.Local().Format("15:04:05"), r.ToolCalls, r.Refusals, r.Turns, r.Tokens, cost)
		}
		return tw.Flush()
	}
	listFlags := func(c *cobra.Command) {
		c.Flags().StringVar(&state, "state", "", "only requests in this state: running, waiting_for_approval, idle, stopped or done")
		c.Flags().IntVar(&limit, "limit", 0, "at most this many, newest first (0: all the gateway keeps)")
		c.Flags().BoolVar(&asJSON, "json", false, "print the API's JSON")
	}
	cmd.RunE = list
	listFlags(cmd)
	listCmd := &cobra.Command{Use: "list", Short: "List requests, newest first", Args: cobra.NoArgs, RunE: list}
	listFlags(listCmd)
	cmd.AddCommand(listCmd)
	cmd.AddCommand(&cobra.Command{Use: "show ID", Short: "Print a request's state, budget and frames as JSON, indented", Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			b, err := client().raw(cmd, "/v1/requests/"+url.PathEscape(args[0]))
			if err != nil {
				return err
			}
			// Indented, a field a line: the API's answer is one line of
			// kilobytes, which no one reads at a terminal.
			var ind bytes.Buffer
			if json.Indent(&ind, bytes.TrimSpace(b), "", "  ") == nil {
				ind.WriteByte('\n')
				b = ind.Bytes()
			}
			_, err = cmd.OutOrStdout().Write(printableJSON(b))
			return err
		}})
	var mode, reason string
	cancel := &cobra.Command{Use: "cancel ID", Short: "Stop a request and its sub-requests (soft, cancel or isolate)", Args: cobra.ExactArgs(1),
		SuggestFor: []string{"stop", "kill", "abort"},
		RunE: func(cmd *cobra.Command, args []string) error {
			body, _ := json.Marshal(map[string]string{"mode": mode, "reason": reason})
			var out map[string]any
			if _, err := client().do(cmd.Context(), http.MethodPost, "/v1/requests/"+url.PathEscape(args[0])+"/cancel", body, &out); err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "request %s: %s\n", printable(args[0]), printable(fmt.Sprint(out["state"])))
			return nil
		}}
	cancel.Flags().StringVar(&mode, "mode", "cancel", "soft, cancel or isolate")
	cancel.Flags().StringVar(&reason, "reason", "stopped from the command line", "why (recorded with the stop)")
	cmd.AddCommand(cancel)
	return cmd
}
