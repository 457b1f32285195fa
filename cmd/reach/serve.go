package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/jackc/pgx/v5/pgxpool"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"
	"unicode"

	"github.com/agentreach/reach"
	"github.com/agentreach/reach/internal/buildinfo"
	"github.com/agentreach/reach/internal/config"
	"github.com/agentreach/reach/internal/gateway"
	"github.com/agentreach/reach/internal/link"
	"github.com/agentreach/reach/internal/redact"
	"github.com/agentreach/reach/internal/store/postgres"
	"github.com/agentreach/reach/internal/upstream"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/spf13/cobra"
)

// stdioGrace is how long `reach stdio`, on a signal, waits for the answers
// in flight before it closes the session: the HTTP lanes' shutdown grace.
const stdioGrace = 5 * time.Second

func newServe() *cobra.Command {
	var configPath, listen, data string
	cmd := &cobra.Command{
		Use:   "serve",
		Short: "Run the gateway (MCP and HTTP API): loopback only, any address with auth",
		Long: `Runs the gateway: an MCP server (Streamable HTTP at /mcp) and an HTTP API
(/v1/calls, /v1/tools, /v1/requests, /healthz) in front of the tools of the upstream MCP
servers in the configuration, every call going through reach's guards.

With no configuration it starts at once on ` + config.DefaultListen + ` with built-in
example tools (get_order, search_kb, format_answer, refund_order).

Without authentication it serves loopback addresses only. With auth in the
configuration (API keys from "reach keys create", or bearer JWTs) every
endpoint but the probes (/healthz, /livez, /readyz) needs credentials, and
any address may be served.
It also serves the web UI (/ui/), Prometheus metrics (/metrics), the
approvals API (/v1/approvals) and, with a model configured, an
OpenAI-compatible model proxy (/v1/chat/completions, /v1/responses).
Ctrl-C (or SIGTERM, as from a supervisor) shuts it down gracefully, waiting up
to about 15 s for the calls in flight; a second one ends it at once, as a kill would.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			awakeSysmon(cmd.Context())
			cfg, err := loadConfig(configPath)
			if err != nil {
				return err
			}
			if listen != "" {
				if err := config.CheckListen(listen, cfg.Authenticates()); err != nil {
					return err
				}
				cfg.Listen = listen
			}
			if data == "" && cfg.Data == "" && configPath == "" {
				data = config.DefaultData // zero configuration keeps its state in .reach
			}
			if err := setData(cfg, data); err != nil {
				return err
			}
			log, err := newLogger(cmd, cmd.ErrOrStderr(), cfg)
			if err != nil {
				return err
			}
			if configPath == "" {
				if name := configBeside(); name != "" {
					log.Warn(name+" is in this folder but not read: reach serve reads a configuration only when --config names it; "+
						"this gateway runs with none (its tools, auth and policies are not those of the file). Serve it: reach serve --config "+name, "file", name)
				}
			}
			return serve(cmd.Context(), cfg, log, cmd.OutOrStdout())
		},
	}
	cmd.Flags().StringVar(&configPath, "config", "", "the configuration file (YAML); none serves the built-in examples")
	cmd.Flags().StringVar(&listen, "listen", "", "the address to serve on: loopback unless the configuration has auth (default "+config.DefaultListen+")")
	cmd.Flags().StringVar(&data, "data", "", "the folder for the gateway's state (default "+config.DefaultData+")")
	return cmd
}

// configBeside returns the name of a configuration file in the current
// folder (reach.yaml, reach.yml) that a serve without --config does not
// read, or "".
func configBeside() string {
	for _, name := range []string{"reach.yaml", "reach.yml"} {
		if st, err := os.Stat(name); err == nil && st.Mode().IsRegular() {
			return name
		}
	}
	return ""
}

func loadConfig(path string) (*config.Config, error) {
	if path == "" {
		return &config.Config{}, nil
	}
	return config.Load(path)
}

// setData sets the gateway's data folder to data (--data), made absolute;
// with data "" it leaves cfg.Data as the configuration has it.
func setData(cfg *config.Config, data string) error {
	if data == "" {
		return nil
	}
	abs, err := filepath.Abs(data)
	if err != nil {
		return err
	}
	cfg.Data = abs
	return nil
}

// listenWarning says why reach serve could not listen on addr now (in use,
// or not an address of this machine), or "". A warning, not an error: the
// configuration may be the running gateway's, or another machine's.
func listenWarning(addr string) string {
	if _, port, err := net.SplitHostPort(addr); err != nil || port == "0" {
		return ""
	}
	ln, err := net.Listen("tcp", addr)
	switch {
	case err == nil:
		ln.Close()
		return ""
	case errors.Is(err, syscall.EADDRINUSE):
		return fmt.Sprintf("listen: %s is in use now (by another reach, or another program): reach serve with this configuration does not start until it is free; stop that, or serve on another address (listen:, or --listen)", addr)
	}
	return fmt.Sprintf("listen: reach serve could not start on this machine: %v", listenError(addr, err))
}

// listenError is the error of serving on addr, with what to do: another
// address when it is in use, a port from 1024 up when a low one needs
// privileges this user lacks, an address of this machine when no
// interface has it.
func listenError(addr string, err error) error {
	switch {
	case errors.Is(err, syscall.EADDRINUSE):
		return fmt.Errorf("listening on %s: the address is in use (by another reach?): stop that, or serve on another address with --listen, e.g. --listen 127.0.0.1:0 for a free port: %w", addr, err)
	case errors.Is(err, syscall.EACCES):
		return fmt.Errorf("listening on %s: this user may not serve on that port (ports below 1024 need privileges): serve on a port from 1024 up, e.g. --listen 127.0.0.1:7400, or put a proxy in front: %w", addr, err)
	case errors.Is(err, syscall.EADDRNOTAVAIL):
		return fmt.Errorf("listening on %s: no interface of this machine has that address: serve on 127.0.0.1, or on an address of this machine: %w", addr, err)
	}
	return fmt.Errorf("listening on %s: %w", addr, err)
}

// serve builds the gateway, listens, prints how to connect, and serves
// until ctx ends.
func serve(ctx context.Context, cfg *config.Config, log *slog.Logger, stdout io.Writer) error {
	return serveShowing(ctx, cfg, log, stdout, nil)
}

// serveShowing is serve with requests of other runtimes shown in the UI.
func serveShowing(ctx context.Context, cfg *config.Config, log *slog.Logger, stdout io.Writer, shown []*reach.Request) error {
	if ctx.Err() != nil {
		return stoppedBeforeServing(stdout)
	}
	limitMemory(ctx, defaultMemoryLimit)
	dataDir, err := cfg.EnsureDataDir()
	if err != nil {
		return err
	}
	if err := dataFileProblem(dataDir); err != nil {
		return err
	}
	ln, err := net.Listen("tcp", cfg.ListenAddr())
	if err != nil {
		return listenError(cfg.ListenAddr(), err)
	}
	g, err := gateway.New(ctx, cfg, &gateway.Options{Logger: log, Version: buildinfo.Read().Version, Shown: shown})
	if err == nil {
		defer g.Close()
	}
	if ctx.Err() != nil {
		// The signal came as it was built: an error cut short by it
		// (opening the store, reaching the upstreams) is not one of the
		// configuration.
		ln.Close()
		return stoppedBeforeServing(stdout)
	}
	if err != nil {
		ln.Close()
		return inFile(cfg, err)
	}
	printBanner(stdout, g, ln.Addr().String(), dataDir)
	mapOwnPagesSmall()
	err = g.Serve(ctx, ln)
	fmt.Fprintln(stdout, "reach stopped")
	return err
}

// stoppedBeforeServing says that a stop signal (SIGTERM, Ctrl-C) came
// before reach served: it stops then, with nothing served, exit 0.
func stoppedBeforeServing(stdout io.Writer) error {
	fmt.Fprintln(stdout, "reach stopped before serving: a stop signal (SIGTERM or Ctrl-C) came as it started")
	return nil
}

// inFile names the configuration file in an error building the gateway
// from it, as validate does: "line 3: ..." alone left the reader to guess
// which file.
func inFile(cfg *config.Config, err error) error {
	if cfg.File() == "" {
		return err
	}
	return fmt.Errorf("%s: %w", cfg.File(), err)
}

// printBanner writes the banner in one write, so that whoever reads the
// output (a terminal, a supervisor, a test) sees all of it or none.
func printBanner(out io.Writer, g *gateway.Gateway, addr, dataDir string) {
	var b strings.Builder
	defer func() { io.WriteString(out, b.String()) }()
	w := &b
	base, every := localBase(addr, g.Config().ListenAddr())
	tools := servedTools(g)
	names := make([]string, 0, len(tools))
	for _, t := range tools {
		names = append(names, t.Name)
	}
	list := strings.Join(names, ", ")
	if len(names) == 0 {
		list = "none"
		if slices.ContainsFunc(g.Upstreams(), func(u upstream.Status) bool { return !u.Connected }) {
			list = "none yet: an upstream's tools are served once it is reached"
		}
	}
	if len(names) > 8 {
		list = strings.Join(names[:8], ", ") + fmt.Sprintf(", … (%d in all)", len(names))
	}
	fmt.Fprintf(w, "reach is serving %d tools on %s\n", len(tools), addr)
	if every {
		fmt.Fprintf(w, "  address   every address of this machine; the URLs below are its loopback's, for clients on it (others use its name or address)\n")
	}
	if warn := unusedKeys(g.Config(), dataDir); warn != "" {
		fmt.Fprint(w, warn)
	}
	fmt.Fprintf(w, "  tools     %s\n", list)
	for _, u := range g.Upstreams() {
		if !u.Connected {
			fmt.Fprintf(w, "  upstream  %s (%s): NOT REACHABLE, dialling it again in the background: %s\n", u.Name, u.Transport, printable(u.Error))
			continue
		}
		if u.Error != "" { // connected, but its tools could not be listed
			fmt.Fprintf(w, "  upstream  %s (%s): %d tools, %s\n", u.Name, u.Transport, u.Tools, printable(u.Error))
			continue
		}
		fmt.Fprintf(w, "  upstream  %s (%s): %d tools\n", u.Name, u.Transport, u.Tools)
	}
	fmt.Fprintf(w, "  MCP       %s/mcp   (Streamable HTTP)\n", base)
	fmt.Fprintf(w, "  API       %s/v1/   (calls, requests, graph, cancel, approvals; %s/healthz)\n", base, base)
	fmt.Fprintf(w, "  UI        %s/ui/\n", base)
	if g.Config().Authenticates() {
		fmt.Fprintf(w, "  metrics   %s/metrics   (with an operator's key)\n", base)
	} else {
		fmt.Fprintf(w, "  metrics   %s/metrics\n", base)
	}
	if g.Config().Model != nil {
		fmt.Fprintf(w, "  model     %s/v1/chat/completions, /v1/responses   (OpenAI-compatible, to %s)\n", base, bannerURL(g.Config().Model.BaseURL))
	}
	fmt.Fprintf(w, "  data      %s\n", dataDir)
	if where := g.StoreWhere(); where != "" {
		fmt.Fprintf(w, "  store     %s   (instance %s; several instances share it)\n", where, g.Config().InstanceName())
	}
	fmt.Fprintln(w)
	// With auth, every line to copy carries the key (from $REACH_API_KEY,
	// which the commands read too): copied without it, each was refused 401.
	auth := g.Config().Authenticates()
	header, inspectorAuth := "", ""
	if auth {
		header = ` "Authorization: Bearer $REACH_API_KEY"`
		inspectorAuth = ", header Authorization \"Bearer <key>\""
	}
	fmt.Fprintf(w, "Connect an MCP client:\n")
	fmt.Fprintf(w, "  npx @modelcontextprotocol/inspector     then Transport \"Streamable HTTP\", URL %s/mcp%s, Connect\n", base, inspectorAuth)
	if auth {
		// The Inspector's CLI with no header looks for an OAuth login, and
		// without a terminal stops at reach's 401 with its own "Interactive
		// OAuth requires a TTY", never reading reach's words: the key goes
		// on the line.
		fmt.Fprintf(w, "  npx @modelcontextprotocol/inspector --cli %s/mcp --transport http --header%s --method tools/list\n", base, header)
		fmt.Fprintf(w, "  claude mcp add --transport http reach %s/mcp --header%s\n", base, header)
	} else {
		fmt.Fprintf(w, "  claude mcp add --transport http reach %s/mcp\n", base)
	}
	if ex := exampleCall(tools); ex != "" {
		if auth {
			fmt.Fprintf(w, "Call a tool over HTTP:\n  curl -s %s/v1/calls -H%s -d '%s'\n", base, header, ex)
		} else {
			fmt.Fprintf(w, "Call a tool over HTTP:\n  curl -s %s/v1/calls -d '%s'\n", base, ex)
		}
	}
	api := ""
	if base != "http://127.0.0.1:7400" {
		api = " --api " + base
	}
	fmt.Fprintf(w, "Watch and steer it:\n  reach requests list%s       reach approvals list%s       reach graph REQUEST%s -o graph.svg\n", api, api, api)
	if api != "" {
		fmt.Fprintf(w, "  (or export REACH_API=%s once, and leave out --api)\n", base)
	}
	if goRun() {
		fmt.Fprintf(w, "  (reach is this CLI, run here by go run: go install ./cmd/reach puts it on your PATH, or write go run ./cmd/reach for reach)\n")
	}
	if auth {
		fmt.Fprintf(w, "Every path but /healthz, /livez and /readyz needs credentials: export REACH_API_KEY=<key> (reach keys create) for the lines above and the commands (or --key), or send a JWT as the bearer; the UI asks for one at %s/ui/login.\n", base)
	}
	fmt.Fprintf(w, "Ctrl-C stops it.\n")
}

// localBase is the base URL of a gateway listening on addr (the
// listener's address) for a client on this machine, and whether addr is
// every address of it (0.0.0.0, [::]). Those are no address to connect
// to: printed as they are, the banner's lines sent reach's commands to
// http://[::]:7400, where they refuse to send a key (not a loopback
// address), and pointed a browser at an address that is none. For them
// the loopback address of the family configured (configured, since Go
// reports a listener on 0.0.0.0 as [::]) stands in.
func localBase(addr, configured string) (base string, every bool) {
	host, port, err := net.SplitHostPort(addr)
	if ip := net.ParseIP(host); err != nil || (host != "" && (ip == nil || !ip.IsUnspecified())) {
		return "http://" + addr, false
	}
	loopback := "127.0.0.1"
	if h, _, err := net.SplitHostPort(configured); err == nil {
		if ip := net.ParseIP(h); ip != nil && ip.To4() == nil {
			loopback = "::1"
		}
	}
	return "http://" + net.JoinHostPort(loopback, port), true
}

// goRun reports whether this process is a binary that go run built: it
// lives in a go-build folder under the temporary folder and is named
// exe/reach, and the reach the banner's commands name is then not on the
// user's PATH (README's first command is go run ./cmd/reach serve).
func goRun() bool {
	exe, err := os.Executable()
	if err != nil {
		return false
	}
	return isGoRunBinary(exe)
}

// isGoRunBinary is goRun's test of an executable's path.
func isGoRunBinary(exe string) bool {
	dir, file := filepath.Split(filepath.ToSlash(exe))
	if strings.TrimSuffix(file, ".exe") != "reach" {
		return false
	}
	for _, part := range strings.Split(strings.Trim(dir, "/"), "/") {
		if strings.HasPrefix(part, "go-build") {
			return strings.HasSuffix(dir, "/exe/")
		}
	}
	return false
}

// exampleCall is the envelope the banner offers to copy: a call that runs.
// It is get_order's when served, else a read's (never a write: copied, it
// would change something, or wait for an approval) with its required
// arguments filled in from its schema, preferring a read that requires
// none; "" when no read is served. An upstream's first tool called with {}
// was refused for the fields its schema requires, or was a write. A read
// whose name is about the environment or a secret (sensitiveName) is never
// the example: its answer, printed in a terminal, can show a secret.
func exampleCall(tools []reach.Tool) string {
	envelope := func(name string, args []byte) string {
		tool, _ := json.Marshal(name)
		return `{"tool_calls":[{"call_id":"c1","tool":` + string(tool) + `,"arguments":` + string(args) + `}]}`
	}
	var first string
	for _, t := range tools {
		if t.Name == "get_order" {
			return envelope(t.Name, []byte(`{"order_id":"1001"}`))
		}
	}
	for _, t := range tools {
		if t.Access != "" && t.Access != reach.Read || sensitiveName(t.Name) {
			continue
		}
		args, required := exampleArguments(t.InputSchema)
		if required == 0 {
			return envelope(t.Name, args)
		}
		if first == "" {
			first = envelope(t.Name, args)
		}
	}
	return first
}

// sensitiveName reports whether a tool's name is about the environment or
// a secret: one of its words (split at non-letters and at a lower-to-upper
// case change: "ev__get-env", "printEnv", "list_api_keys") is env, environ,
// environment, key, keys or auth, or a word holds secret, token, credential,
// password, passwd or apikey.
func sensitiveName(name string) bool {
	var words []string
	start, prev := -1, rune(0)
	for i, r := range name {
		letter := unicode.IsLetter(r) || unicode.IsDigit(r)
		if start >= 0 && (!letter || unicode.IsUpper(r) && unicode.IsLower(prev)) {
			words = append(words, strings.ToLower(name[start:i]))
			start = -1
		}
		if letter && start < 0 {
			start = i
		}
		prev = r
	}
	if start >= 0 {
		words = append(words, strings.ToLower(name[start:]))
	}
	for _, w := range words {
		switch w {
		case "env", "environ", "environment", "key", "keys", "auth":
			return true
		}
		for _, part := range []string{"secret", "token", "credential", "password", "passwd", "apikey"} {
			if strings.Contains(w, part) {
				return true
			}
		}
	}
	return false
}

// exampleArguments fills the properties a tool's JSON Schema requires with
// a value each: its default, its first enum or const value, or a plain value
// of its type ("example", its minimum or 1, false, [], {}). It returns the
// arguments and how many it filled.
func exampleArguments(schema json.RawMessage) ([]byte, int) {
	var s struct {
		Required   []string                   `json:"required"`
		Properties map[string]json.RawMessage `json:"properties"`
	}
	if len(schema) == 0 || json.Unmarshal(schema, &s) != nil || len(s.Required) == 0 {
		return []byte("{}"), 0
	}
	args := make(map[string]json.RawMessage, len(s.Required))
	for _, name := range s.Required {
		args[name] = exampleValue(s.Properties[name])
	}
	b, err := json.Marshal(args)
	if err != nil {
		return []byte("{}"), 0
	}
	return b, len(args)
}

func exampleValue(prop json.RawMessage) json.RawMessage {
	var p struct {
		Type    any               `json:"type"`
		Default json.RawMessage   `json:"default"`
		Const   json.RawMessage   `json:"const"`
		Enum    []json.RawMessage `json:"enum"`
		Minimum json.RawMessage   `json:"minimum"`
	}
	json.Unmarshal(prop, &p)
	switch {
	case len(p.Default) > 0:
		return p.Default
	case len(p.Const) > 0:
		return p.Const
	case len(p.Enum) > 0:
		return p.Enum[0]
	}
	typ, _ := p.Type.(string)
	if types, ok := p.Type.([]any); ok && len(types) > 0 {
		typ, _ = types[0].(string)
	}
	switch typ {
	case "integer", "number":
		if len(p.Minimum) > 0 {
			return p.Minimum
		}
		return json.RawMessage("1")
	case "boolean":
		return json.RawMessage("false")
	case "array":
		return json.RawMessage("[]")
	case "object":
		return json.RawMessage("{}")
	}
	return json.RawMessage(`"example"`)
}

// servedTools returns the gateway's tools less the forbidden ones, which
// are never listed nor run.
func servedTools(g *gateway.Gateway) []reach.Tool {
	return slices.DeleteFunc(g.Runtime().Tools(), func(t reach.Tool) bool { return t.Access == reach.Forbidden })
}

// bannerURL is how a configured URL is shown: its user information as
// "xxxxx" (as [url.URL.Redacted] shows a password; a user name alone can be
// a key too), its query, which may hold a key (?api-key=...), as "?…", and
// no fragment.
func bannerURL(s string) string { return printable(redact.ShownURL(s)) }

func newValidate() *cobra.Command {
	var configPath string
	var offline, asJSON bool
	cmd := &cobra.Command{
		Use:   "validate",
		Short: "Check a configuration without serving",
		Long: `Builds everything serve would build from the configuration (connecting to each
upstream and listing its tools, fetching each A2A agent's card, and connecting to
a PostgreSQL store: to read its schema's version, unless
--offline) and reports the first problem with its line, or how many tools it
would serve, with warnings: a model endpoint that does not list its models
(GET models: not answering, refusing its key, or a base URL without its /v1),
writes without an undo, policies that can never
apply, read an attribute nothing has or are scoped to a tool or upstream it
does not have, a listen address in use, a data folder serve could not
create or write, or one another reach holds now.

With --json it prints one JSON object: {"config", "ok", "tools": [names],
"upstreams", "agents", "offline", "warnings"}, or {"config", "ok": false,
"error"} (and exits non-zero) when the check fails.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) (err error) {
			if configPath == "" {
				if name := configBeside(); name != "" {
					return fmt.Errorf("validate: --config FILE is required: %s is in this folder, check it with reach validate --config %s", name, name)
				}
				return errors.New("validate: --config FILE is required: reach serve with no configuration needs no check (reach validate --config reach.yaml checks a file)")
			}
			if asJSON {
				defer func() {
					if err != nil {
						writeJSON(cmd.OutOrStdout(), map[string]any{"config": configPath, "ok": false, "error": err.Error()})
					}
				}()
			}
			cfg, err := config.Load(configPath)
			if err != nil {
				return err
			}
			// The log is shown only when the check fails: it holds what an
			// upstream that would not start wrote to stderr (secrets masked).
			logs := &lockedBuffer{}
			log, err := newLogger(cmd, logs, cfg)
			if err != nil {
				return err
			}
			g, err := gateway.New(cmd.Context(), cfg, &gateway.Options{Offline: offline, Ephemeral: true, RequireUpstreams: true, Logger: log, Version: buildinfo.Read().Version})
			if err != nil {
				if l := logs.String(); l != "" {
					fmt.Fprintf(cmd.ErrOrStderr(), "the gateway's log while checking:\n%s", printableLines(l))
				}
				return fmt.Errorf("%s: %w", configPath, err)
			}
			defer g.Close()
			var agentWarnings []string
			if !offline {
				if agentWarnings, err = g.CheckAgents(cmd.Context()); err != nil {
					return fmt.Errorf("%s: %w", configPath, err)
				}
				agentWarnings = append(agentWarnings, modelWarnings(cmd.Context(), cfg)...)
			}
			storeLine := ""
			if offline && cfg.Postgres() {
				// Not contacted, but parsed as serve parses it: a bad
				// sslmode or port is found here, not at the deploy.
				if _, err := pgxpool.ParseConfig(cfg.Store.Reveal()); err != nil {
					return fmt.Errorf("%s: %w", configPath, cfg.Errorf([]any{"store"}, "store: %v (want postgres://USER@HOST:PORT/DB?sslmode=disable|require|verify-full)", err))
				}
				storeLine = "store PostgreSQL (not contacted), instance " + cfg.InstanceName()
			} else if storeLine, err = checkStore(cmd.Context(), cfg); err != nil {
				return fmt.Errorf("%s: %w", configPath, err)
			}
			tools := servedTools(g)
			warnings := append(g.Warnings(), agentWarnings...)
			if w := listenWarning(cfg.ListenAddr()); w != "" {
				warnings = append(warnings, w)
			}
			if w := dataWarning(cfg); w != "" {
				warnings = append(warnings, w)
			}
			// What serve's banner says of the keys (none yet where auth
			// asks for them: every client refused), said before the deploy.
			if w := unusedKeys(cfg, cfg.DataDir()); w != "" {
				warnings = append(warnings, strings.TrimSuffix(strings.TrimPrefix(w, "warning: "), "\n"))
			}
			if asJSON {
				r := validateReport{Config: configPath, OK: true, Tools: []string{}, Upstreams: len(cfg.Upstreams), Agents: len(cfg.Agents),
					Offline: offline, Warnings: warnings, Store: storeLine}
				for _, t := range tools {
					r.Tools = append(r.Tools, t.Name)
				}
				if r.Warnings == nil {
					r.Warnings = []string{}
				}
				return writeJSON(cmd.OutOrStdout(), r)
			}
			n := len(tools)
			fmt.Fprintf(cmd.OutOrStdout(), "%s: ok, %s from %s", configPath, counted(n, "tool"), counted(len(cfg.Upstreams), "upstream"))
			if storeLine != "" {
				fmt.Fprint(cmd.OutOrStdout(), ", "+storeLine)
			}
			if len(cfg.Agents) > 0 {
				fmt.Fprint(cmd.OutOrStdout(), ", "+counted(len(cfg.Agents), "A2A agent"))
			}
			if offline {
				fmt.Fprint(cmd.OutOrStdout(), " (offline: upstreams not contacted)")
			}
			fmt.Fprintln(cmd.OutOrStdout())
			for _, w := range warnings {
				fmt.Fprintln(cmd.OutOrStdout(), "warning:", w)
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&configPath, "config", "", "the configuration file to check")
	cmd.Flags().BoolVar(&offline, "offline", false, "do not connect to upstreams, agents, model endpoints or a PostgreSQL store")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the outcome as one JSON object")
	return cmd
}

// checkStore connects to the PostgreSQL store the configuration names
// (store:), without changing it, and says what it found: the server, the
// schema's version, and whether serve would migrate it. It says nothing of
// SQLite, which serve creates in the data folder.
func checkStore(ctx context.Context, cfg *config.Config) (string, error) {
	if !cfg.Postgres() {
		return "", nil
	}
	pg, err := postgres.Open(ctx, cfg.Store.Reveal(), &postgres.Options{NoMigrate: true})
	if err != nil {
		return "", cfg.Errorf([]any{"store"}, "store: %v", err)
	}
	defer pg.Close()
	v, err := pg.SchemaVersion(ctx)
	if err != nil {
		return "", cfg.Errorf([]any{"store"}, "store: %v", err)
	}
	line := fmt.Sprintf("store PostgreSQL at %s (schema %d", pg.Where(), v)
	if v < pg.LatestSchema() {
		line += fmt.Sprintf("; serve migrates it to %d", pg.LatestSchema())
	}
	return line + "), instance " + cfg.InstanceName(), nil
}

// validateReport is what reach validate --json prints.
type validateReport struct {
	Config    string   `json:"config"`
	OK        bool     `json:"ok"`
	Tools     []string `json:"tools"`
	Upstreams int      `json:"upstreams"`
	Agents    int      `json:"agents"`
	Offline   bool     `json:"offline"`
	Warnings  []string `json:"warnings"`
	Store     string   `json:"store,omitempty"` // what reach validate found of a PostgreSQL store
}

// lockedBuffer is a bytes.Buffer safe for concurrent writers.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

func newStdio() *cobra.Command {
	var configPath, listen string
	cmd := &cobra.Command{
		Use:   "stdio",
		Short: "Serve MCP over stdin and stdout",
		Long: `Serves the gateway's tools as an MCP server on stdin and stdout, for clients
that start their servers as processes, one JSON-RPC message per line. A line
that is not one is answered with a JSON-RPC error (-32700 when it is not JSON,
-32600 when it is not a message) and skipped. At the end of stdin it answers
the requests it has read, then exits. Logs go to stderr.

It serves no HTTP unless --listen names an address: then the API, the UI and
/metrics are served there too, as reach serve serves them, so that a call
waiting for approval can be decided (reach approvals, the UI) and its
requests watched and stopped. Without it, a call that needs approval waits
with nobody able to decide it. With auth, the session's calls are the
principal local's (stdio authenticates nobody): decide their approvals with
a key made for it (reach keys create --principal local), and a reviewer's
where they need one.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, err := loadConfig(configPath)
			if err != nil {
				return err
			}
			var ln net.Listener
			if listen != "" {
				// Checked and bound before the gateway starts, as reach
				// serve does: an address it may not serve, or one in use,
				// is an error at once, not a stdio session without the
				// approvals it was asked for.
				if err := config.CheckListen(listen, cfg.Authenticates()); err != nil {
					return err
				}
				if ln, err = net.Listen("tcp", listen); err != nil {
					return listenError(listen, err)
				}
				defer ln.Close()
			}
			log, err := newLogger(cmd, cmd.ErrOrStderr(), cfg)
			if err != nil {
				return err
			}
			if cfg.HasDataDir() {
				if err := dataFileProblem(cfg.DataDir()); err != nil {
					return err
				}
			}
			g, err := gateway.New(cmd.Context(), cfg, &gateway.Options{Logger: log, Version: buildinfo.Read().Version})
			if err != nil {
				return inFile(cfg, err)
			}
			defer g.Close()
			var httpDone chan error
			ctx, stopHTTP := context.WithCancel(cmd.Context())
			defer stopHTTP()
			if ln != nil {
				httpDone = make(chan error, 1)
				go func() { httpDone <- g.Serve(ctx, ln) }()
				base, _ := localBase(ln.Addr().String(), listen)
				log.Info("serving the API and the UI too", "url", base+"/ui/", "api", base+"/v1/")
				if cfg.Authenticates() {
					// stdio authenticates nobody: its calls are the local
					// principal's, and so are their approvals, which no
					// other key may see.
					log.Info("this session's calls are the principal "+link.LocalPrincipal+"'s: decide their approvals with a key of its own",
						"key", "reach keys create --principal "+link.LocalPrincipal+" --config "+configPath)
				}
			}
			// A malformed line is answered with a JSON-RPC error and
			// skipped (stdio.go), not the end of the session.
			in, out := stdioPipes(cmd.InOrStdin(), cmd.OutOrStdout(), log.With("component", "stdio"))
			in.finish = true
			// On a signal the session is not closed at once: a call held for
			// a decision is answered pending (its approval kept), as the
			// HTTP lanes answer it, and the answers in flight are written,
			// for up to stdioGrace, before the transport closes.
			session, endSession := context.WithCancel(context.WithoutCancel(cmd.Context()))
			defer endSession()
			go func() {
				select {
				case <-session.Done():
					return
				case <-cmd.Context().Done():
				}
				if q := g.Approvals(); q != nil {
					q.Release()
				}
				grace, stop := context.WithTimeout(session, stdioGrace)
				defer stop()
				in.drain(grace.Done())
				endSession()
			}()
			err = g.ServeStdio(session, &mcp.IOTransport{Reader: in, Writer: out, MaxLineLength: -1})
			if httpDone != nil {
				stopHTTP()
				if herr := <-httpDone; err == nil {
					err = herr
				}
			}
			return err
		},
	}
	cmd.Flags().StringVar(&configPath, "config", "", "the configuration file (YAML); none serves the built-in examples")
	cmd.Flags().StringVar(&listen, "listen", "", "also serve the API and the UI (approvals, requests) on this address; loopback unless the configuration has auth")
	return cmd
}

// counted is n and the noun, plural unless n is 1: "1 upstream", "0 upstreams".
func counted(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}
