// Package config is the gateway's configuration: one YAML file (JSON is
// valid YAML), decoded strictly, every error naming its line.
//
//	cfg, err := config.Load("reach.yaml")
//	g, err := gateway.New(ctx, cfg, nil)
package config

import (
	"bytes"
	"cmp"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"maps"
	"math"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/agentreach/reach"
	"github.com/agentreach/reach/internal/a2a"
	"github.com/agentreach/reach/internal/budget"
	"github.com/agentreach/reach/internal/names"
	"github.com/agentreach/reach/internal/origin"
	"github.com/agentreach/reach/internal/policy/secrets"
	"github.com/agentreach/reach/internal/redact"
	"github.com/agentreach/reach/internal/store"
	"github.com/agentreach/reach/internal/template"
	"github.com/agentreach/reach/internal/toolspec"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.yaml.in/yaml/v3"
	"golang.org/x/net/http/httpguts"
)

// Defaults of a Config; each applies where the field is zero.
const (
	DefaultListen       = "127.0.0.1:7400"
	DefaultData         = ".reach"
	DefaultMaxBodyBytes = 4 << 20
	DefaultIdleGap      = 5 * time.Minute
	// DefaultSessionsPerPrincipal bounds the MCP sessions one principal
	// keeps open: far above what an agent host opens at once (one per
	// agent and server, tens to a few hundred), far below what would
	// exhaust the gateway's memory (a session holds tens of kilobytes
	// until its client ends it or idle_gap does).
	DefaultSessionsPerPrincipal = 1000
	// DefaultRequestsPerPrincipal bounds the requests one authenticated
	// principal has in flight at once, each on a connection of its own:
	// room for DefaultSessionsPerPrincipal sessions each holding a stream,
	// and as many calls at once besides.
	DefaultRequestsPerPrincipal = 2 * DefaultSessionsPerPrincipal
)

// DefaultRetention is how long finished state is kept when the
// configuration does not say (docs/STATE.md, "Retention"): a month, so
// that what an operator looks into weeks later (an incident, a bill, a
// review) is still there, and a store that serves for years holds about a
// month of it.
const DefaultRetention = 30 * 24 * time.Hour

// MinRetention is the shortest retention a configuration may set: less
// would remove a request while its client may still retry it (an
// idempotency result lives 24 hours, recorded apart from the request).
const MinRetention = time.Hour

// MaxFileBytes bounds a configuration file.
const MaxFileBytes = 1 << 20

// Config is the gateway's configuration: one YAML file (JSON is valid YAML),
// decoded strictly by [Parse]. The zero Config is valid: it serves the
// built-in example tools on [DefaultListen].
//
//	listen: 127.0.0.1:7400
//	upstreams:
//	  - name: memory
//	    command: [node, ./node_modules/@modelcontextprotocol/server-memory/dist/index.js]
//	tools:
//	  memory__delete_entities: {access: high_risk}
//	budgets:
//	  default: {turns: 30, depth: 5, tool_calls: 200, tokens: 200000, wall: 10m}
type Config struct {
	// Listen is the loopback address to serve on; if empty, DefaultListen.
	Listen string `yaml:"listen"`
	// Data is the folder for the gateway's state; if empty, DefaultData.
	// A relative path is relative to the configuration file's folder.
	Data string `yaml:"data"`
	// Store is where the control state lives (requests, checkpoints,
	// budgets, approvals, idempotency records, dead letters, the audit
	// log): if empty, SQLite in the data folder; a PostgreSQL URL
	// (postgres://USER@HOST:PORT/DB?sslmode=...; ${VAR} for a password)
	// keeps it in PostgreSQL, which several instances share
	// (docs/INSTANCES.md).
	Store Secret `yaml:"store"`
	// Instance names this gateway among those that share a store: 1-64
	// letters, digits, '_', '-' or '.'; if empty, "reach" with SQLite, and
	// the host's name and the listen port with PostgreSQL. Two running
	// instances never have one name.
	Instance string `yaml:"instance"`
	// InstanceTTL is how long an instance sharing a PostgreSQL store may
	// go without a heartbeat before the others take it for dead and
	// recover its work; if zero, 10s; at least MinInstanceTTL.
	InstanceTTL Duration `yaml:"instance_ttl"`
	// MaxBodyBytes bounds a request body; if zero, DefaultMaxBodyBytes.
	MaxBodyBytes int64 `yaml:"max_body_bytes"`
	// IdleGap ends a gateway-begun request (and so an MCP session's request)
	// after this long without calls; if zero, DefaultIdleGap.
	IdleGap Duration `yaml:"idle_gap"`
	// Retention is how long the store keeps what is finished after its
	// last change (ended requests with their checkpoints, final A2A
	// tasks, decided approvals): "30d", "720h", ...; "0" or "forever"
	// keeps it all. If unset, DefaultRetention. See RetentionPeriod.
	Retention Retention `yaml:"retention"`
	// SessionsPerPrincipal bounds the MCP sessions (Streamable HTTP) one
	// principal of one tenant keeps open at once, on each instance; an
	// initialize past it is refused with 429 until one ends. If zero,
	// DefaultSessionsPerPrincipal (a count below zero means nothing).
	SessionsPerPrincipal int `yaml:"sessions_per_principal"`
	// RequestsPerPrincipal bounds the requests one authenticated principal
	// of one tenant has in flight at once on an instance (calls, streams,
	// sessions' streams: each holds a connection of its own); past it a
	// request is refused with 429. If zero, DefaultRequestsPerPrincipal.
	RequestsPerPrincipal int `yaml:"requests_per_principal"`
	// MCPProtocols are the MCP protocol versions reach offers its clients;
	// if empty, every version it speaks. A list without 2026-07-28 makes
	// reach answer as a server of the session era, so that a client that
	// tries the sessionless protocol first falls back to a session.
	MCPProtocols []string `yaml:"mcp_protocols"`
	// RefusedInARow stops a request once this many of its agent's tool
	// calls in a row were refused for a reason it could act on (a loop, a
	// denial, a spent budget, a cycle, a reentrancy contract), none let
	// through in between; 0 turns the rule off. If unset,
	// reach.DefaultRefusedInARow (see RefusedInARowOption).
	RefusedInARow *int `yaml:"refused_in_a_row"`
	// Examples adds the built-in example tools. A Config with no upstreams
	// always has them, so that a bare `reach serve` has something to call.
	Examples bool `yaml:"examples"`
	// Upstreams are the MCP servers whose tools the gateway serves.
	Upstreams []Upstream `yaml:"upstreams"`
	// Tools override the contract of tools, by exposed name.
	Tools map[string]ToolOverride `yaml:"tools"`
	// Budgets are named request budgets; "default" applies to requests that
	// name none.
	Budgets map[string]Budget `yaml:"budgets"`
	// Agents are A2A agents reach serves at /a2a/NAME, each message to
	// one a delegation of the caller's request (C6).
	Agents []AgentConfig `yaml:"agents"`
	// A2A bounds what reach keeps of the agents' tasks.
	A2A *A2AConfig `yaml:"a2a"`
	// Model is an OpenAI-compatible endpoint for tools that call the model;
	// if nil, a scripted stand-in answers.
	Model *ModelConfig `yaml:"model"`
	// Telemetry configures traces; /metrics is always served.
	Telemetry *TelemetryConfig `yaml:"telemetry"`
	// Log sets the format and level of the gateway's log (the command
	// line's --log-format and --log-level win).
	Log *LogConfig `yaml:"log"`
	// Approvals configure the confirmation queue (P4).
	Approvals *ApprovalsConfig `yaml:"approvals"`
	// Secrets name a file of secret values (NAME=VALUE lines or a JSON
	// object) that ${NAME} in headers, env and api_key may use; every one
	// of them, like every header, env and api_key value, is masked in
	// results, errors, logs, the audit and the graph (P6).
	Secrets *SecretsConfig `yaml:"secrets"`

	// Breaker is the default circuit breaker of every tool, upstream and
	// model endpoint; absent, the defaults of reach.BreakerPolicy.
	Breaker *Breaker `yaml:"breaker"`

	// RateLimit configures the token buckets of tool calls (R8): one for
	// every call this instance serves, one for each principal's. Absent,
	// no limit.
	RateLimit *RateLimit `yaml:"rate_limit"`

	// Auth makes every endpoint but the probes need an API key or a bearer
	// JWT; with it the gateway may serve a non-loopback address.
	Auth *AuthConfig `yaml:"auth"`
	// Policy is a Cedar file or folder of *.cedar files, reloaded within
	// seconds of a change. Absent, the gateway decides by access level
	// (read and write run, high_risk needs approval, forbidden never runs)
	// when nobody authenticates, and by the shipped Cedar defaults when
	// auth is configured.
	Policy *PolicyConfig `yaml:"policy"`

	secretVals map[string]string // from Secrets.File
	varVals    []string          // the values ${VAR} references were replaced with
	dir        string            // the configuration file's folder, for relative paths
	file       string            // the configuration file as Load was given it, for errors
	root       *yaml.Node        // the parsed document, for line numbers
}

// Upstream is one MCP server: Streamable HTTP (URL) or stdio (Command).
type Upstream struct {
	Name string `yaml:"name"`
	// URL of a Streamable HTTP endpoint.
	URL string `yaml:"url"`
	// Headers sent with every HTTP request; values may use ${VAR}.
	Headers map[string]Secret `yaml:"headers"`
	// AllowPlainHTTP lets an upstream with headers (or a key in its URL's
	// query) be a plain http:// URL of a host other than loopback,
	// knowingly: they then cross the network in the clear. Without it such
	// an upstream is refused.
	AllowPlainHTTP bool `yaml:"allow_plain_http"`
	// Command and arguments of a stdio server. It runs in Dir with a small
	// safe environment (PATH, HOME, ...) plus Env; nothing else of the
	// gateway's environment is passed on.
	Command []string `yaml:"command"`
	// Env adds to the command's environment; values may use ${VAR}.
	Env map[string]Secret `yaml:"env"`
	// Dir is the command's working folder; if empty, the configuration
	// file's folder.
	Dir string `yaml:"dir"`
	// Prefix replaces "<name>__" in front of the upstream's tool names; ""
	// exposes them bare. If absent, "<name>__".
	Prefix *string `yaml:"prefix"`
	// Timeout bounds connecting and listing tools; if zero, 30s.
	Timeout Duration `yaml:"timeout"`
	// Required makes the gateway refuse to start while the upstream cannot
	// be reached, and /readyz answer 503 while it is not connected; an
	// upstream that is not required and cannot be reached at start is
	// retried in the background (the gateway starts degraded).
	Required bool `yaml:"required"`
	// Breaker configures the upstream's circuit breaker, shared by its
	// tools; absent, the top-level breaker.
	Breaker *Breaker `yaml:"breaker"`
}

// AgentConfig is one A2A agent.
type AgentConfig struct {
	Name string `yaml:"name"`
	// URL is the agent's base URL; its card is at URL/.well-known/agent-card.json.
	URL string `yaml:"url"`
	// Budget names the budget a hand-off to the agent gets, carved from the
	// caller's; if empty, what the caller has left.
	Budget string `yaml:"budget"`
	// Reentrancy is the agent's contract while it is on the delegation
	// stack, as for tools; Key names message metadata fields.
	Reentrancy  reach.Reentrancy `yaml:"reentrancy"`
	Key         []string         `yaml:"key"`
	OnViolation reach.Mode       `yaml:"on_violation"`
	// AllowPlainHTTP lets URL be a plain http:// URL of a host other than
	// loopback while its query holds a key (?key=, ?api_key=), knowingly.
	AllowPlainHTTP bool `yaml:"allow_plain_http"`
}

// A2AConfig bounds what reach keeps of the A2A agents' tasks, in bytes of
// their artifacts and messages (and of the events it keeps for the callers
// that follow them).
type A2AConfig struct {
	// MaxTaskBytes bounds one task: an agent whose answer grows past it
	// has the task failed at reach. If zero, 8 MiB; at least 1 KiB and at
	// most 64 MiB (what reach reads of one answer of an agent).
	MaxTaskBytes int64 `yaml:"max_task_bytes"`
	// MaxTotalBytes bounds all tasks together: past it the oldest ended
	// tasks are let go, and while the live ones alone hold more, a new task
	// is refused. If zero, 256 MiB; at least max_task_bytes.
	MaxTotalBytes int64 `yaml:"max_total_bytes"`
	// MaxReadBytes bounds the events all the agents' streams together have
	// read and reach has not yet applied to their tasks (each stream's by
	// max_task_bytes): past it a stream is not read on until they are
	// (the agent's connection waits). If zero, 64 MiB.
	MaxReadBytes int64 `yaml:"max_read_bytes"`
	// PublicURL is the base URL callers reach the gateway at
	// (http(s)://host[:port][/path]): the agents' cards name it. If empty,
	// a card names the Host it was asked at, when that is the gateway's own
	// address (a loopback name or the address the request came in at, at
	// its port) or one of Hosts; a card asked at any other Host is refused.
	PublicURL string `yaml:"public_url"`
	// Hosts are the other Host values a card may name (host, or host:port
	// when the port is not the scheme's default): the names a proxy that
	// passes the Host on is reached at.
	Hosts []string `yaml:"hosts"`
}

// Bounds of A2AConfig.
const (
	DefaultA2AMaxTaskBytes  = 8 << 20
	DefaultA2AMaxTotalBytes = 256 << 20
	DefaultA2AMaxReadBytes  = 64 << 20
	minA2ATaskBytes         = 1 << 10
	maxA2ATaskBytes         = 64 << 20
)

// A2ALimits are the bounds of the A2A tasks, the defaults for those not
// set.
func (c *Config) A2ALimits() (task, total int64) {
	task, total = DefaultA2AMaxTaskBytes, DefaultA2AMaxTotalBytes
	if a := c.A2A; a != nil {
		task, total = cmp.Or(a.MaxTaskBytes, task), cmp.Or(a.MaxTotalBytes, total)
	}
	return task, total
}

// A2APublic is the base URL the agents' cards name (empty: the Host of
// each card request) and the other Hosts a card may name.
func (c *Config) A2APublic() (public string, hosts []string) {
	if a := c.A2A; a != nil {
		return a.PublicURL, a.Hosts
	}
	return "", nil
}

// A2AReadBytes is the bound of the events all the A2A streams read and not
// yet applied, the default if not set.
func (c *Config) A2AReadBytes() int64 {
	if a := c.A2A; a != nil && a.MaxReadBytes > 0 {
		return a.MaxReadBytes
	}
	return DefaultA2AMaxReadBytes
}

// ToolOverride is a patch of a reach.Tool, in the tool's own types: each
// field it sets replaces the tool's (Apply); absent fields keep what the
// tool (or, for upstream tools, its annotations) says. In YAML:
//
//	tools:
//	  shop__refund:
//	    access: high_risk
//	    timeout: 10s
//	    retry: {attempts: 2, base: 200ms, max: 2s}
//	    shape: {fields: [id, status], flatten: true, max_bytes: 4096}
//	    writes: ["order:{order_id}"]
//	    undo: {tool: shop__refund_cancel, args: '{"refund_id": "{result.refund_id}"}'}
//	    verify: {tool: shop__get_refund, args: '{"id": "{result.refund_id}"}', condition: 'output.status == "done"'}
type ToolOverride struct {
	Access      reach.Access
	Reentrancy  reach.Reentrancy
	Key         []string
	OnViolation reach.Mode
	Timeout     time.Duration
	Retry       *reach.RetryPolicy
	Idempotent  *bool
	Retryable   *bool
	Tags        []string
	Description *string
	Shape       *reach.Shape
	// Reads and Writes name the entities the tool reads and writes, as
	// templates over its arguments: order:{order_id} (S3).
	Reads  []string
	Writes []string
	// Undo compensates a successful write (S1); Refresh re-reads an entity
	// that changed before a write instead of refusing it; Verify checks a
	// write (S2). Each is a call reach makes on the tool's behalf: a tool's
	// exposed name and a JSON template of its arguments over the call's
	// arguments and result, e.g. {"refund_id": "{result.refund_id}"}; a
	// verify adds its CEL condition.
	Undo    *reach.Followup
	Refresh *reach.Followup
	Verify  *reach.Verify
	// Breaker configures the tool's circuit breaker (see Breaker); absent,
	// the top-level breaker.
	Breaker *reach.BreakerPolicy
	// Fallback, for a read, lists the reads that answer in its place when
	// its breaker (or its upstream's) is open or a transient failure
	// exhausted its retries: in YAML a tool's name (called with the same
	// arguments), or {tool, args} with args a JSON template over the
	// call's arguments, e.g. {"query": "{args.q}"}.
	Fallback []reach.Followup
}

// UnmarshalYAML decodes an override's YAML keys straight into the fields
// of the reach types they set.
func (o *ToolOverride) UnmarshalYAML(n *yaml.Node) error { return decodeFields(n, o.fields()) }

// fields maps an override's YAML keys to the fields they set.
func (o *ToolOverride) fields() fields {
	followup := func(f *reach.Followup) fields { return fields{"tool": &f.Tool, "args": &f.Args} }
	return fields{
		"access":       &o.Access,
		"reentrancy":   &o.Reentrancy,
		"key":          &o.Key,
		"on_violation": &o.OnViolation,
		"timeout":      (*Duration)(&o.Timeout),
		"retry": &part[reach.RetryPolicy]{&o.Retry, func(r *reach.RetryPolicy) fields {
			return fields{"attempts": &r.Attempts, "base": (*Duration)(&r.Base), "max": (*Duration)(&r.Max)}
		}},
		"idempotent":  &o.Idempotent,
		"retryable":   &o.Retryable,
		"tags":        &o.Tags,
		"description": &o.Description,
		"shape": &part[reach.Shape]{&o.Shape, func(s *reach.Shape) fields {
			return fields{"fields": &s.Fields, "flatten": &s.Flatten, "max_bytes": &s.MaxBytes}
		}},
		"reads":   &o.Reads,
		"writes":  &o.Writes,
		"undo":    &part[reach.Followup]{&o.Undo, followup},
		"refresh": &part[reach.Followup]{&o.Refresh, followup},
		"verify": &part[reach.Verify]{&o.Verify, func(v *reach.Verify) fields {
			fs := followup(&v.Followup)
			fs["condition"] = &v.Condition
			return fs
		}},
		"breaker":  &part[reach.BreakerPolicy]{&o.Breaker, func(p *reach.BreakerPolicy) fields { return (*Breaker)(p).fields() }},
		"fallback": (*fallbacks)(&o.Fallback),
	}
}

// fallbacks are a read's fallbacks in YAML: each a tool's name, or
// {tool, args}.
type fallbacks []reach.Followup

func (fs *fallbacks) UnmarshalYAML(n *yaml.Node) error {
	for n.Kind == yaml.AliasNode && n.Alias != nil {
		n = n.Alias
	}
	if n.Kind != yaml.SequenceNode {
		return fmt.Errorf("line %d: fallback is a list of tools: [NAME, {tool: NAME, args: '{...}'}]", n.Line)
	}
	out := make([]reach.Followup, len(n.Content))
	for i, item := range n.Content {
		f := &out[i]
		if item.Kind == yaml.ScalarNode {
			if err := item.Decode(&f.Tool); err != nil {
				return err
			}
			continue
		}
		if err := decodeFields(item, fields{"tool": &f.Tool, "args": &f.Args}); err != nil {
			return err
		}
	}
	*fs = out
	return nil
}

// RateLimit is the rate_limit section: calls a second and the burst
// allowed above it, for all of an instance's tool calls and for each
// principal's. A zero rate is no limit; a zero burst is the rate's
// whole part, at least 1. Reserved is the share of each bucket only
// requests of priority above 0 may use; Priorities the highest priority
// each principal's requests may have (a principal not named: 0; a
// request's Reach-Priority header may lower it, never raise it), each
// principal named as a budget's principals are. Model limits the model
// proxy's turns with buckets of their own, and the same reserve and
// priorities.
type RateLimit struct {
	PerSecond         float64    `yaml:"per_second"`
	Burst             int        `yaml:"burst"`
	PerPrincipal      float64    `yaml:"per_principal"`
	PerPrincipalBurst int        `yaml:"per_principal_burst"`
	Reserved          float64    `yaml:"reserved"`
	Priorities        Priorities `yaml:"priorities"`
	Model             *RateLimit `yaml:"model"`
}

// Priorities are rate_limit.priorities: a mapping of bare names,
// {oncall: 1}, each the principal of no tenant (as a budget's bare
// principal is: oncall of acme is not oncall), or a list whose entries
// name a principal as a budget's principals do, {principal: oncall,
// tenant: acme, priority: 1}; "*" is every principal of every tenant,
// {principal: "*", tenant: acme, ...} every one of acme. The entry that
// names a caller most closely decides: its principal in its tenant, then
// "*" of its tenant, then "*".
type Priorities []PriorityEntry

// PriorityEntry is one principal's priority (Priorities).
type PriorityEntry struct {
	Principal, Tenant string
	Priority          int
}

// UnmarshalYAML reads the mapping or the list form of Priorities.
func (ps *Priorities) UnmarshalYAML(n *yaml.Node) error {
	for n.Kind == yaml.AliasNode && n.Alias != nil {
		n = n.Alias
	}
	out := Priorities{}
	switch n.Kind {
	case yaml.ScalarNode:
		if n.ShortTag() == "!!null" {
			return nil
		}
	case yaml.MappingNode:
		seen := map[string]int{}
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			if at, dup := seen[k.Value]; dup {
				return &yaml.TypeError{Errors: []string{fmt.Sprintf("line %d: mapping key %q already defined at line %d", k.Line, k.Value, at)}}
			}
			seen[k.Value] = k.Line
			e := PriorityEntry{Principal: k.Value}
			if err := checkWholeNumbers(v, reflect.TypeFor[int]()); err != nil {
				return err
			}
			if err := v.Decode(&e.Priority); err != nil {
				return err
			}
			out = append(out, e)
		}
		*ps = out
		return nil
	case yaml.SequenceNode:
		for _, item := range n.Content {
			var e PriorityEntry
			var pri *int
			if err := decodeFields(item, fields{"principal": &e.Principal, "tenant": &e.Tenant, "priority": &pri}); err != nil {
				return err
			}
			if pri == nil {
				return &yaml.TypeError{Errors: []string{fmt.Sprintf("line %d: an entry of priorities has no priority; write {principal: NAME, tenant: TENANT, priority: 1}", item.Line)}}
			}
			e.Priority = *pri
			out = append(out, e)
		}
		*ps = out
		return nil
	}
	return &yaml.TypeError{Errors: []string{fmt.Sprintf("line %d: cannot unmarshal %s here; want priorities by principal of no tenant ({oncall: 1}), or a list of {principal: NAME, tenant: TENANT, priority: 1}", n.Line, n.ShortTag())}}
}

// checkPriorities refuses an entry with no principal, a tenant "*" or
// blank, and a principal of a tenant named twice.
func (r *RateLimit) checkPriorities(c *Config) error {
	seen := map[BudgetPrincipal]bool{}
	for i, p := range r.Priorities {
		at := []any{"rate_limit", "priorities", i}
		who := BudgetPrincipal{Principal: p.Principal, Tenant: p.Tenant}
		switch {
		case strings.TrimSpace(p.Principal) == "":
			return c.Errorf(at, "rate_limit.priorities: entry %d names no principal; write {principal: NAME, tenant: TENANT, priority: N}, or \"*\" for every principal (of a tenant, with tenant)", i+1)
		case p.Tenant == "*":
			return c.Errorf(at, "rate_limit.priorities: entry %d: tenant \"*\" is no tenant (the same name in another tenant is someone else); name %s of each tenant, or write principal \"*\" alone for every principal of every tenant", i+1, p.Principal)
		case p.Tenant != "" && strings.TrimSpace(p.Tenant) == "":
			return c.Errorf(at, "rate_limit.priorities: entry %d: tenant %q is blank; write the tenant's name as identities carry it, or leave tenant out for %s of no tenant", i+1, p.Tenant, p.Principal)
		case seen[who]:
			return c.Errorf(at, "rate_limit.priorities: %s is named twice; keep one entry", who)
		}
		seen[who] = true
	}
	return nil
}

func (r *RateLimit) check(c *Config) error {
	if r == nil {
		return nil
	}
	if err := r.checkBuckets(c, "rate_limit"); err != nil {
		return err
	}
	if err := r.checkPriorities(c); err != nil {
		return err
	}
	if m := r.Model; m != nil {
		if m.Priorities != nil {
			return c.Errorf([]any{"rate_limit", "model", "priorities"}, "rate_limit.model.priorities: priorities are rate_limit.priorities, for tool calls and model turns alike")
		}
		if m.Model != nil {
			return c.Errorf([]any{"rate_limit", "model", "model"}, "rate_limit.model.model: a model section has no model section of its own")
		}
		return m.checkBuckets(c, "rate_limit", "model")
	}
	return nil
}

// checkBuckets checks the rates, bursts and reserve of the section at
// path.
func (r *RateLimit) checkBuckets(c *Config, path ...any) error {
	name := func(key string) string {
		s := ""
		for _, p := range path {
			s += p.(string) + "."
		}
		return s + key
	}
	at := func(key string) []any { return append(slices.Clone(path), key) }
	for _, v := range []struct {
		key, burstKey string
		rate          float64
		burst         int
	}{{"per_second", "burst", r.PerSecond, r.Burst}, {"per_principal", "per_principal_burst", r.PerPrincipal, r.PerPrincipalBurst}} {
		if !(v.rate >= 0 && v.rate <= 1e9) { // NaN and infinities too
			return c.Errorf(at(v.key), "%s is %v: write calls a second, 0 (no limit) or more, at most 1e9", name(v.key), v.rate)
		}
		if v.burst < 0 {
			return c.Errorf(at(v.burstKey), "%s must not be negative (0 is the rate's whole part, at least 1)", name(v.burstKey))
		}
	}
	if !(r.Reserved >= 0 && r.Reserved < 1) {
		return c.Errorf(at("reserved"), "%s is %v: write the share of each bucket kept for requests of priority above 0, from 0 (none) to below 1 (0.2: a fifth)", name("reserved"), r.Reserved)
	}
	return nil
}

// Limits is r as the runtime's option for tool calls (nil: no limit).
func (r *RateLimit) Limits() *reach.RateLimit {
	if r == nil || r.PerSecond == 0 && r.PerPrincipal == 0 {
		return nil
	}
	return &reach.RateLimit{PerSecond: r.PerSecond, Burst: r.Burst, PerPrincipal: r.PerPrincipal, PerPrincipalBurst: r.PerPrincipalBurst, Reserved: r.Reserved, Levels: r.levels()}
}

// levels is the highest of rate_limit.priorities: the reserve serves the
// levels above 0 in order (ratelimit.Limits.Levels).
func (r *RateLimit) levels() int {
	n := 0
	for _, p := range r.Priorities {
		n = max(n, p.Priority)
	}
	return n
}

// ModelLimits are the limits of the model proxy's turns (nil: no
// limit): rate_limit.model's buckets, with rate_limit.reserved unless it
// sets its own.
func (r *RateLimit) ModelLimits() *reach.RateLimit {
	if r == nil || r.Model == nil || r.Model.PerSecond == 0 && r.Model.PerPrincipal == 0 {
		return nil
	}
	m := r.Model
	return &reach.RateLimit{PerSecond: m.PerSecond, Burst: m.Burst, PerPrincipal: m.PerPrincipal, PerPrincipalBurst: m.PerPrincipalBurst, Reserved: cmp.Or(m.Reserved, r.Reserved), Levels: r.levels()}
}

// Priority is the highest priority the requests of principal of tenant
// ("" for none) may have: the rate_limit.priorities entry that names it
// most closely (principal in tenant, then "*" of tenant, then "*"), else
// 0. A bare name is the principal of no tenant, as a budget's is: the
// same name in a tenant is someone else.
func (r *RateLimit) Priority(principal, tenant string) int {
	if r == nil {
		return 0
	}
	best, rank := 0, 0
	for _, p := range r.Priorities {
		n := 0
		switch {
		case p.Principal == principal && p.Tenant == tenant:
			n = 3
		case p.Principal == "*" && p.Tenant == tenant && tenant != "":
			n = 2
		case p.Principal == "*" && p.Tenant == "":
			n = 1
		}
		if n > rank {
			best, rank = p.Priority, n
		}
	}
	return best
}

// Breaker is a reach.BreakerPolicy in YAML: failures, rate, window,
// min_calls, open_for and disabled; an absent key takes the top-level
// breaker's, then the default (reach.BreakerPolicy).
type Breaker reach.BreakerPolicy

// UnmarshalYAML decodes a breaker's keys straight into its fields.
func (b *Breaker) UnmarshalYAML(n *yaml.Node) error { return decodeFields(n, b.fields()) }

func (b *Breaker) fields() fields {
	return fields{"failures": &b.Failures, "rate": &b.Rate, "window": (*Duration)(&b.Window),
		"min_calls": &b.MinCalls, "open_for": (*Duration)(&b.OpenFor), "disabled": &b.Disabled}
}

// Policy returns b as a reach.BreakerPolicy (nil for nil).
func (b *Breaker) Policy() *reach.BreakerPolicy { return (*reach.BreakerPolicy)(b) }

// Apply changes t's contract as o says.
func (o *ToolOverride) Apply(t *reach.Tool) {
	set(&t.Access, o.Access)
	set(&t.Reentrancy, o.Reentrancy)
	set(&t.OnViolation, o.OnViolation)
	set(&t.Timeout, o.Timeout)
	if len(o.Key) > 0 {
		t.Key = o.Key
	}
	if o.Retry != nil {
		t.Retry = new(*o.Retry)
	}
	setFrom(&t.Idempotent, o.Idempotent)
	setFrom(&t.Retryable, o.Retryable)
	if len(o.Tags) > 0 {
		// The upstream's own tag stays: it is how the gateway knows which
		// upstream serves the tool (its refresh and pinning look for it).
		own := slices.DeleteFunc(slices.Clone(t.Tags), func(tag string) bool { return !strings.HasPrefix(tag, "upstream:") })
		t.Tags = append(own, o.Tags...)
	}
	setFrom(&t.Description, o.Description)
	if o.Shape != nil {
		t.Shape = new(*o.Shape)
	}
	if len(o.Reads) > 0 {
		t.Reads = o.Reads
	}
	if len(o.Writes) > 0 {
		t.Writes = o.Writes
	}
	if o.Undo != nil {
		t.Undo = new(*o.Undo)
	}
	if o.Refresh != nil {
		t.Refresh = new(*o.Refresh)
	}
	if o.Verify != nil {
		t.Verify = new(*o.Verify)
	}
	if o.Breaker != nil {
		t.Breaker = new(*o.Breaker)
	}
	if len(o.Fallback) > 0 {
		t.Fallback = slices.Clone(o.Fallback)
	}
}

// set sets *dst to v unless v is its type's zero value.
func set[T comparable](dst *T, v T) {
	var zero T
	if v != zero {
		*dst = v
	}
}

// setFrom sets *dst to *v when v is not nil.
func setFrom[T any](dst *T, v *T) {
	if v != nil {
		*dst = *v
	}
}

// fields maps the YAML keys of a mapping to where their values go.
type fields map[string]any

// patch is a type decoded through its fields (ToolOverride, Budget), whose
// numbers walkNumbers finds by them too.
type patch interface{ fields() fields }

// part is a pointer field of a patch, made and decoded (through the fields
// of) only when its key is present.
type part[T any] struct {
	dst    **T
	fields func(*T) fields
}

// present returns the fields of the part when it was set.
func (p *part[T]) present() (fields, bool) {
	if *p.dst == nil {
		return nil, false
	}
	return p.fields(*p.dst), true
}

func (p *part[T]) UnmarshalYAML(n *yaml.Node) error {
	v := new(T)
	if err := decodeFields(n, p.fields(v)); err != nil {
		return err
	}
	*p.dst = v
	return nil
}

// decodeFields decodes the mapping n into fs as the strict decoder
// decodes a struct: an unknown or repeated key, a value of the wrong type
// or a fraction for a whole number is an error that names its line.
func decodeFields(n *yaml.Node, fs fields) error {
	for n.Kind == yaml.AliasNode && n.Alias != nil {
		n = n.Alias
	}
	if n.Kind == yaml.ScalarNode && n.ShortTag() == "!!null" {
		return nil
	}
	if n.Kind != yaml.MappingNode {
		return &yaml.TypeError{Errors: []string{fmt.Sprintf("line %d: cannot unmarshal %s here; want a mapping of %s", n.Line, n.ShortTag(), keyList(slices.Sorted(maps.Keys(fs))))}}
	}
	var errs []string
	seen := map[string]int{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		if at, dup := seen[k.Value]; dup {
			errs = append(errs, fmt.Sprintf("line %d: mapping key %q already defined at line %d", k.Line, k.Value, at))
			continue
		}
		seen[k.Value] = k.Line
		dst, ok := fs[k.Value]
		if !ok {
			msg := fmt.Sprintf("line %d: field %s not found here", k.Line, k.Value)
			// As for the keys the YAML library decodes (didYouMean).
			if hint := closestKey(k.Value, slices.Sorted(maps.Keys(fs))); hint != "" {
				msg += " (did you mean " + hint + "?)"
			}
			errs = append(errs, msg)
			continue
		}
		if err := checkWholeNumbers(v, reflect.TypeOf(dst).Elem()); err != nil {
			return err
		}
		if err := v.Decode(dst); err != nil {
			var te *yaml.TypeError
			if !errors.As(err, &te) {
				return err
			}
			errs = append(errs, te.Errors...)
		}
	}
	if len(errs) > 0 {
		return &yaml.TypeError{Errors: errs}
	}
	return nil
}

// Budget is a reach.Budget, read from YAML as turns, depth, tool_calls,
// tokens, cost and wall ("10m"), and the principals that may name it. A
// zero amount is unlimited; b.Budget is the runtime's.
type Budget struct {
	reach.Budget
	// Principals may name this budget for a request they begin when it
	// lifts a limit of the default budget's: each a principal of a tenant
	// ({principal: alice, tenant: acme}), or a bare name, that principal
	// of no tenant (alice of acme is not alice); "*" alone is every
	// principal of every tenant, {principal: "*", tenant: acme} every one
	// of acme; "local" is who works with a gateway that authenticates
	// nobody. A budget that only lowers limits may be named by any client;
	// one that lifts a limit and lists none, by none (agents[].budget may
	// still use it: a delegation's budget is carved from its caller's).
	Principals []BudgetPrincipal
	// Tenants may name it too: every principal whose identity carries one
	// of these tenants (auth's tenant: a key's, or the JWT's tenant claim).
	// A tenant is compared as identities are, exactly: no case folded, no
	// Unicode normalized; a caller with no tenant is in none.
	Tenants []string
}

// BudgetPrincipal is one entry of a budget's principals: a principal of
// a tenant, written {principal: alice, tenant: acme}, or a bare name, the
// principal of no tenant (Tenant ""). A principal is whatever string a key
// or a JWT claim gives, so the tenant is a key of its own, never a spelling
// inside the name ("alice@acme" is the principal named so, of no tenant).
type BudgetPrincipal struct{ Principal, Tenant string }

// UnmarshalYAML reads a bare name or a {principal, tenant} mapping.
func (p *BudgetPrincipal) UnmarshalYAML(n *yaml.Node) error {
	for n.Kind == yaml.AliasNode && n.Alias != nil {
		n = n.Alias
	}
	switch n.Kind {
	case yaml.ScalarNode:
		return n.Decode(&p.Principal)
	case yaml.MappingNode:
	default:
		return &yaml.TypeError{Errors: []string{fmt.Sprintf("line %d: cannot unmarshal %s here; want a principal's name (of no tenant), or {principal: NAME, tenant: TENANT}", n.Line, n.ShortTag())}}
	}
	return decodeFields(n, fields{"principal": &p.Principal, "tenant": &p.Tenant})
}

// String is p as a refusal or an error quotes it.
func (p BudgetPrincipal) String() string {
	if p.Tenant == "" {
		return p.Principal
	}
	return p.Principal + " of tenant " + p.Tenant
}

// UnmarshalYAML decodes a budget's keys straight into its fields.
func (b *Budget) UnmarshalYAML(n *yaml.Node) error {
	fs := b.fields()
	fs["principals"] = &b.Principals
	fs["tenants"] = &b.Tenants
	return decodeFields(n, fs)
}

func (b *Budget) fields() fields {
	return fields{"turns": &b.Turns, "depth": &b.Depth, "tool_calls": &b.ToolCalls,
		"tokens": &b.Tokens, "cost": &b.Cost, "wall": (*Duration)(&b.Wall)}
}

// ModelConfig is an OpenAI-compatible chat completions endpoint.
type ModelConfig struct {
	BaseURL string   `yaml:"base_url"`
	APIKey  Secret   `yaml:"api_key"`
	Name    string   `yaml:"name"`    // the model to ask for; if empty, "gpt-4o-mini"
	Timeout Duration `yaml:"timeout"` // per model call; if zero, 60s
	// Prices per model name, in dollars per million tokens, for the cost
	// budget: {gpt-4o-mini: {input: 0.15, output: 0.6}}.
	Prices map[string]reach.Price `yaml:"prices"`
	// OutputLimits per model name: the most tokens it writes in one
	// answer (its max output tokens), {gpt-4o: 16384}. Under a token
	// budget, a turn that sets no max_tokens is sent a cap only when what
	// is left is less than this (for a model not listed, less than 4096
	// tokens, which every chat model takes), never one its provider would
	// refuse as too large.
	OutputLimits map[string]int64 `yaml:"output_limits"`
	// ContextLimits per model name: the most tokens its context window
	// holds, {gpt-4o: 128000}. A turn of a listed model whose prompt
	// (estimated, with the answer it asks for) does not fit is refused
	// before it is sent; a model not listed is not checked.
	ContextLimits map[string]int64 `yaml:"context_limits"`
	// Context folds the history of long conversations through the model
	// proxy; nil (or all zero) leaves them as they are.
	Context *ModelContext `yaml:"context"`
	// Fallbacks are the endpoints the model proxy asks, in order, when
	// this one's breaker is open or it answers 5xx or 429 (or not at all);
	// the spending is charged at the price of the model that answered.
	Fallbacks []ModelFallback `yaml:"fallbacks"`
	// Breaker configures the breakers of the endpoints; absent, the
	// top-level breaker.
	Breaker *Breaker `yaml:"breaker"`
	// AllowPlainHTTP lets base_url be a plain http:// URL of a host other
	// than loopback while a key goes to it (api_key, or the client's when
	// reach authenticates nobody), knowingly: the key then crosses the
	// network in the clear. Without it such a base_url is refused.
	AllowPlainHTTP bool `yaml:"allow_plain_http"`
	// SubagentBudget names the budget a sub-agent that a tool runs in the
	// agent's own process gets (an agent as a tool, a tool whose code runs
	// another agent), carved from the budget of the request whose turn
	// handed it its task; if empty, what that request has left.
	SubagentBudget string `yaml:"subagent_budget"`
}

// ModelContext is the model proxy's context watermark: a conversation
// longer than FoldAfterTurns model turns, or whose prompt passes Window
// tokens (estimated), has its older tool results replaced by their one-line
// summaries, the last KeepLast turns kept whole.
type ModelContext struct {
	Window         int64 `yaml:"window"`           // tokens; 0: no watermark
	FoldAfterTurns int   `yaml:"fold_after_turns"` // 0: no turn limit
	KeepLast       int   `yaml:"keep_last"`        // turns kept whole; if zero, 2
}

// ModelFallback is an OpenAI-compatible endpoint the model proxy falls
// back to, and the model it asks for there (if empty, the one asked for).
type ModelFallback struct {
	BaseURL string `yaml:"base_url"`
	Model   string `yaml:"model"`
	APIKey  Secret `yaml:"api_key"`
	// AllowPlainHTTP lets base_url be a plain http:// URL of a host other
	// than loopback while api_key is set, knowingly, as for the model.
	AllowPlainHTTP bool `yaml:"allow_plain_http"`
}

// AuthConfig says how clients authenticate.
type AuthConfig struct {
	// Keys accepts the API keys of the data folder's keys.json (reach keys create).
	Keys bool `yaml:"keys"`
	// JWT accepts bearer JWTs.
	JWT *JWTConfig `yaml:"jwt"`
}

// JWTConfig says which JWTs are accepted and what their claims mean.
type JWTConfig struct {
	JWKS   string `yaml:"jwks"` // a file (relative to the configuration's folder) or an http(s) URL
	Issuer string `yaml:"issuer"`
	// Audience is what the tokens meant for this gateway carry in aud;
	// required: without it a token the issuer gave any other application
	// would be taken. AnyAudience takes every audience, knowingly.
	Audience string    `yaml:"audience"`
	Claims   JWTClaims `yaml:"claims"`
}

// AnyAudience as auth.jwt.audience takes a token whatever its aud: for an
// issuer that issues tokens for this gateway alone.
const AnyAudience = "*"

// JWTClaims name the claims of the principal, roles, tenant and department.
type JWTClaims struct {
	Principal  string `yaml:"principal"`
	Roles      string `yaml:"roles"`
	Tenant     string `yaml:"tenant"`
	Department string `yaml:"department"`
}

// PolicyConfig names the policies.
type PolicyConfig struct {
	Path string `yaml:"path"`
}

// Authenticates reports whether the configuration makes clients authenticate.
func (c *Config) Authenticates() bool {
	return c.Auth != nil && (c.Auth.Keys || c.Auth.JWT != nil)
}

// SecretsConfig names the secrets file.
type SecretsConfig struct {
	File string `yaml:"file"` // relative to the configuration file's folder
}

// Path resolves p against the configuration file's folder.
func (c *Config) Path(p string) string {
	if p == "" || filepath.IsAbs(p) || c.dir == "" {
		return p
	}
	return filepath.Join(c.dir, p)
}

// SecretValues returns every secret value the configuration holds: the
// secrets file's values, every ${VAR} value, upstream header and env value
// (and a bearer header's token alone), and the model's key.
func (c *Config) SecretValues() []string {
	var out []string
	for _, v := range c.secretVals {
		out = append(out, v)
	}
	// A variable's value on its own: a value may hold it among other text
	// (postgres://app:${DB_PASS}@db/app), and an error may quote it alone.
	out = append(out, c.varVals...)
	for _, u := range c.Upstreams {
		for _, v := range u.Headers {
			out = append(out, v.Reveal())
			// A bearer header's token alone is a secret too.
			if scheme, tok, ok := strings.Cut(v.Reveal(), " "); ok {
				out = append(out, tok)
				out = append(out, basicSecrets(scheme, tok)...)
			}
		}
		for _, v := range u.Env {
			out = append(out, v.Reveal())
		}
	}
	if c.Model != nil && c.Model.APIKey != "" {
		out = append(out, c.Model.APIKey.Reveal())
	}
	if c.Model != nil {
		for _, f := range c.Model.Fallbacks {
			if f.APIKey != "" {
				out = append(out, f.APIKey.Reveal())
			}
		}
	}
	return out
}

// basicSecrets returns what a Basic credential (RFC 7617) encodes: the
// user's "id:password" and the password alone, which an upstream's error
// may quote decoded ("invalid credentials svc:..."), as a URL's userinfo
// is quoted. The user id alone names who, and is no secret, unless the
// password is empty and the id is as long as a key (basicKeyLen): then
// the id is the key (Stripe's "sk_live_...:"). A short one with no
// password ("admin:", "guest:") holds no secret: masked, it hid every
// "admin" of every result, log line and audit entry.
func basicSecrets(scheme, tok string) []string {
	if !strings.EqualFold(scheme, "Basic") {
		return nil
	}
	tok = strings.TrimSpace(tok)
	b, err := base64.StdEncoding.DecodeString(tok)
	if err != nil {
		if b, err = base64.RawStdEncoding.DecodeString(tok); err != nil {
			return nil
		}
	}
	cred := string(b)
	user, pass, ok := strings.Cut(cred, ":")
	if !ok || !utf8.ValidString(cred) {
		return nil
	}
	if pass == "" {
		if len(user) < basicKeyLen {
			return nil
		}
		return []string{cred, user}
	}
	return []string{cred, pass}
}

// basicKeyLen is the shortest user id of a Basic credential without a
// password taken for a key: the keys APIs take so (Stripe's, Recurly's,
// Chargebee's) are 24 bytes or more; a name is seldom 16.
const basicKeyLen = 16

// TelemetryConfig says where traces go.
type TelemetryConfig struct {
	// OTLPEndpoint is an OTLP/HTTP collector, e.g. http://127.0.0.1:4318;
	// if empty, no spans are exported.
	OTLPEndpoint string `yaml:"otlp_endpoint"`
}

// LogConfig is the format and level of the gateway's log.
type LogConfig struct {
	// Format is "text" (the default, logfmt) or "json".
	Format string `yaml:"format"`
	// Level is "debug", "info" (the default), "warn" or "error".
	Level string `yaml:"level"`
}

// ParseLogLevel reads a log level: debug, info, warn or error.
func ParseLogLevel(s string) (slog.Level, error) {
	switch strings.ToLower(s) {
	case "debug":
		return slog.LevelDebug, nil
	case "", "info":
		return slog.LevelInfo, nil
	case "warn", "warning":
		return slog.LevelWarn, nil
	case "error":
		return slog.LevelError, nil
	}
	return 0, fmt.Errorf("%q is not a log level: write debug, info, warn or error", s)
}

// CheckLogFormat checks a log format: text or json.
func CheckLogFormat(s string) error {
	if s == "" || s == "text" || s == "json" {
		return nil
	}
	return fmt.Errorf("%q is not a log format: write text or json", s)
}

// ApprovalsConfig configures the confirmation queue.
type ApprovalsConfig struct {
	// TTL is how long an approval waits for a decision; if zero, 15m.
	TTL Duration `yaml:"ttl"`
	// Wait holds a call that needs approval this long for a decision
	// before answering pending; zero answers pending at once.
	Wait Duration `yaml:"wait"`
}

// Duration is a time.Duration written as "300ms", "30s" or "10m".
type Duration time.Duration

// UnmarshalYAML reads a duration string.
func (d *Duration) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind != yaml.ScalarNode {
		return &yaml.TypeError{Errors: []string{fmt.Sprintf("line %d: want a duration such as \"300ms\", \"30s\" or \"10m\"", n.Line)}}
	}
	v, err := time.ParseDuration(n.Value)
	if err == nil && v < 0 {
		return &yaml.TypeError{Errors: []string{fmt.Sprintf("line %d: %q is negative; a duration is 0 or more, e.g. \"30s\"", n.Line, n.Value)}}
	}
	if err != nil {
		return &yaml.TypeError{Errors: []string{fmt.Sprintf("line %d: %q is not a duration; write e.g. \"300ms\", \"30s\" or \"10m\"", n.Line, n.Value)}}
	}
	*d = Duration(v)
	return nil
}

// MarshalYAML writes the duration as a string.
func (d Duration) MarshalYAML() (any, error) { return time.Duration(d).String(), nil }

// Retention is the configuration's retention: its zero value is unset
// (DefaultRetention); "0" or "forever" keeps all.
type Retention struct {
	keep time.Duration // 0: keep all
	set  bool
}

// UnmarshalYAML reads "30d" (days), a Go duration ("720h"), "0" or
// "forever".
func (r *Retention) UnmarshalYAML(n *yaml.Node) error {
	bad := func(why string) error {
		return &yaml.TypeError{Errors: []string{fmt.Sprintf("line %d: retention %q %s; write e.g. \"30d\", \"720h\", or \"forever\" to keep all", n.Line, n.Value, why)}}
	}
	if n.Kind != yaml.ScalarNode {
		return bad("is not a duration")
	}
	v := strings.TrimSpace(n.Value)
	if v == "0" || v == "forever" {
		*r = Retention{set: true}
		return nil
	}
	var d time.Duration
	if days, ok := strings.CutSuffix(v, "d"); ok {
		n, err := strconv.ParseUint(days, 10, 16)
		if errors.Is(err, strconv.ErrRange) {
			return bad("is more days than 65535")
		}
		if err != nil {
			return bad("is not a whole number of days")
		}
		d = time.Duration(n) * 24 * time.Hour
	} else {
		var err error
		if d, err = time.ParseDuration(v); err != nil || d < 0 {
			return bad("is not a duration")
		}
	}
	if d < MinRetention {
		return bad("is shorter than " + strings.TrimSuffix(strings.TrimSuffix(MinRetention.String(), "0s"), "0m") + ", the shortest")
	}
	*r = Retention{keep: d, set: true}
	return nil
}

// MarshalYAML writes the retention as it reads it.
func (r Retention) MarshalYAML() (any, error) {
	switch {
	case !r.set:
		return nil, nil
	case r.keep == 0:
		return "forever", nil
	}
	return store.FormatKeep(r.keep), nil
}

// Secret is a configuration value that may hold a credential (a header, an
// environment variable, an API key). It is expanded from the environment
// and never printed: String, GoString, LogValue and marshaling redact it.
// Use Reveal where the value is sent.
type Secret string

// Reveal returns the value, for the one place that sends it.
func (s Secret) Reveal() string { return string(s) }

func (s Secret) String() string   { return "[redacted]" }
func (s Secret) GoString() string { return `"[redacted]"` }

// LogValue implements slog.LogValuer.
func (s Secret) LogValue() slog.Value { return slog.StringValue("[redacted]") }

// MarshalText redacts the value.
func (s Secret) MarshalText() ([]byte, error) { return []byte("[redacted]"), nil }

// MarshalYAML redacts the value.
func (s Secret) MarshalYAML() (any, error) { return "[redacted]", nil }

// Load reads and parses the configuration file at path.
func Load(path string) (*Config, error) { return load(path, false) }

// load is Load, or with stateOnly LoadState.
func load(path string, stateOnly bool) (*Config, error) {
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		where := ""
		if !filepath.IsAbs(path) {
			if wd, werr := os.Getwd(); werr == nil {
				where = " (a relative path is read from the current folder, " + wd + ")"
			}
		}
		return nil, fmt.Errorf("reading configuration: %s does not exist: check the path given to --config%s", path, where)
	}
	if err != nil {
		return nil, fmt.Errorf("reading configuration: %w", err)
	}
	defer f.Close()
	if st, err := f.Stat(); err == nil && st.IsDir() {
		return nil, fmt.Errorf("reading configuration: %s is a folder: give --config the configuration file in it (e.g. %s)", path, filepath.Join(path, "reach.yaml"))
	}
	data, err := io.ReadAll(io.LimitReader(f, MaxFileBytes+1))
	if err != nil {
		return nil, fmt.Errorf("reading configuration: %w", err)
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, err
	}
	lookup := os.LookupEnv
	if stateOnly {
		lookup = stateLookup(os.LookupEnv)
	}
	c, err := parse(data, lookup, filepath.Dir(abs))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	c.file = path
	return c, nil
}

// LoadState is Load for the commands that read the gateway's state and
// send nothing to its upstreams or model (reach audit, tools, deadletters,
// keys with --config): a ${VAR} the environment does not set is an error
// only in store:, which they read. One in a header, an upstream's env or a
// model's api_key is left as written: an operator's shell rarely holds the
// secrets a service is given, and "reach audit verify --config FILE" was
// refused for a header's token it never sends.
func LoadState(path string) (*Config, error) { return load(path, true) }

// stateVar marks the ${NAME} values stateLookup gives for the unset
// variables of the fields LoadState does not read.
const stateVar = "\x00state\x00"

// stateLookup is lookup, with each variable it does not set given as
// stateVar, which expand writes back as the reference it was.
func stateLookup(lookup func(string) (string, bool)) func(string) (string, bool) {
	return func(name string) (string, bool) {
		if v, ok := lookup(name); ok {
			return v, true
		}
		return stateVar, true
	}
}

// Parse decodes and checks a configuration strictly: an unknown field,
// a duplicate key, a value of the wrong type, an unset or unclosed ${VAR} or
// a bad value is an error that names its line. lookup reads the environment
// (os.LookupEnv); ${VAR} is expanded in header, env and api_key values only,
// where $${ writes a literal ${. Relative paths
// are relative to the current folder (Load makes them relative to the
// file's).
func Parse(data []byte, lookup func(string) (string, bool)) (*Config, error) {
	return parse(data, lookup, "")
}

// parse is Parse for a file in dir ("" for the current folder).
func parse(data []byte, lookup func(string) (string, bool), dir string) (*Config, error) {
	if len(data) > MaxFileBytes {
		return nil, fmt.Errorf("the configuration is larger than %d bytes", MaxFileBytes)
	}
	c := &Config{}
	if len(bytes.TrimSpace(data)) > 0 {
		var root yaml.Node
		if err := yaml.Unmarshal(data, &root); err != nil {
			if ln := tabIndented(data); ln > 0 {
				return nil, fmt.Errorf("%v; line %d is indented with a tab: YAML indents with spaces only", cleanYAMLError(err), ln)
			}
			if err := unknownAlias(err, data); err != nil {
				return nil, err
			}
			return nil, cleanYAMLError(err)
		}
		if err := checkMarks(&root, ""); err != nil {
			return nil, err
		}
		dec := yaml.NewDecoder(bytes.NewReader(data))
		dec.KnownFields(true)
		if err := dec.Decode(c); err != nil && !errors.Is(err, io.EOF) {
			return nil, cleanYAMLError(keysOfLines(taggedValue(err, &root), &root))
		}
		var extra yaml.Node
		if err := dec.Decode(&extra); !errors.Is(err, io.EOF) {
			return nil, errors.New("the configuration holds more than one YAML document; keep one")
		}
		if err := checkWholeNumbers(&root, reflect.TypeFor[Config]()); err != nil {
			return nil, err
		}
		if err := checkCommentedSecrets(&root, reflect.TypeFor[Config](), data); err != nil {
			return nil, err
		}
		if err := checkUnexpanded(&root, reflect.TypeFor[Config](), ""); err != nil {
			return nil, err
		}
		c.root = &root
	}
	c.dir = dir
	if sc := c.Secrets; sc != nil && sc.File != "" {
		vals, err := secrets.ReadFile(c.Path(sc.File))
		if errors.Is(err, fs.ErrNotExist) {
			return nil, c.Errorf([]any{"secrets", "file"}, "secrets: %v: write the secrets there (a line NAME=VALUE each, or a JSON object of names to values; the path is relative to the configuration's folder), or leave secrets out", err)
		}
		if err != nil {
			return nil, c.Errorf([]any{"secrets", "file"}, "secrets: %v", err)
		}
		c.secretVals = vals
		env := lookup
		lookup = func(name string) (string, bool) {
			if v, ok := vals[name]; ok {
				return v, true
			}
			if env == nil {
				return "", false
			}
			return env(name)
		}
	}
	if err := c.expand(lookup); err != nil {
		return nil, err
	}
	if err := c.check(); err != nil {
		return nil, err
	}
	return c, nil
}

// A value written unquoted that begins with *, & or ! is YAML's alias,
// anchor or tag, not text: a password or key that begins so must be
// quoted. The YAML library's error for an alias of no anchor quotes the
// name (the rest of such a password), and an anchor or a tag with nothing
// after it leaves the value empty with no error (the credential lost).
// unknownAlias and checkMarks make each an error that names the line and
// quotes nothing of the value.

var unknownAnchorRE = regexp.MustCompile(`^yaml: unknown anchor '(.*)' referenced$`)

// unknownAlias returns the error for err, the YAML library's error of an
// alias of no anchor, or nil for another error.
func unknownAlias(err error, data []byte) error {
	m := unknownAnchorRE.FindStringSubmatch(err.Error())
	if m == nil {
		return nil
	}
	const what = "a value begins with *, which YAML reads as an alias of an anchor that is not defined; if it is text (a password, say), quote it"
	for i, l := range bytes.Split(data, []byte("\n")) {
		if j := bytes.Index(l, []byte("*"+m[1])); j >= 0 && (j == 0 || bytes.IndexByte([]byte(" \t:-[{,"), l[j-1]) >= 0) {
			return fmt.Errorf("line %d: %s", i+1, what)
		}
	}
	return errors.New(what)
}

// checkMarks refuses, under n (at the dotted path), a local tag (!x: reach
// reads none) and an anchor on an empty value, each most likely a value
// that begins with ! or & and was meant as text.
func checkMarks(n *yaml.Node, path string) error {
	if n.Kind == yaml.ScalarNode {
		where := fmt.Sprintf("line %d", n.Line)
		if path != "" {
			where += " (" + path + ")"
		}
		switch {
		case strings.HasPrefix(n.Tag, "!") && !strings.HasPrefix(n.Tag, "!!"):
			return fmt.Errorf("%s: the value begins with !, which YAML reads as a tag; if it is text (a password, say), quote it", where)
		case n.Anchor != "" && n.Value == "" && n.Style == 0:
			return fmt.Errorf("%s: the value begins with &, which YAML reads as an anchor, and is empty; if it is text (a password, say), quote it", where)
		}
		return nil
	}
	for i, c := range n.Content {
		p := path
		switch n.Kind {
		case yaml.MappingNode:
			if i%2 == 1 {
				p = n.Content[i-1].Value
				if path != "" {
					p = path + "." + p
				}
			}
		case yaml.SequenceNode:
			p = path + "[" + strconv.Itoa(i) + "]"
		}
		if err := checkMarks(c, p); err != nil {
			return err
		}
	}
	return nil
}

// cleanYAMLError drops the library's prefix and Go type names, keeping the
// line numbers.
func cleanYAMLError(err error) error {
	var te *yaml.TypeError
	if errors.As(err, &te) {
		msgs := make([]string, len(te.Errors))
		for i, m := range te.Errors {
			hint := didYouMean(m)
			want := wantShape(m)
			m = typeNameRE.ReplaceAllString(m, " here")
			m += want
			if hint != "" {
				m += " (did you mean " + hint + "?)"
			}
			m = strings.Replace(m, "field ", "unknown field ", 1)
			m = strings.Replace(m, " not found here", "", 1)
			msgs[i] = yamlWords.Replace(m)
		}
		return fmt.Errorf("%s", strings.Join(msgs, "; "))
	}
	return fmt.Errorf("%s", strings.TrimPrefix(err.Error(), "yaml: "))
}

var unmarshalerType = reflect.TypeFor[yaml.Unmarshaler]()

// checkWholeNumbers refuses a number with a fraction where the field of t
// that n is decoded into wants a whole number: the YAML library cuts 2.5
// to 2 (and depth: 0.5 to 0, no limit) without a word.
func checkWholeNumbers(n *yaml.Node, t reflect.Type) error {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if reflect.PointerTo(t).Implements(unmarshalerType) { // reads its own values (Duration)
		return nil
	}
	switch n.Kind {
	case yaml.DocumentNode:
		for _, c := range n.Content {
			if err := checkWholeNumbers(c, t); err != nil {
				return err
			}
		}
	case yaml.AliasNode:
		if n.Alias != nil {
			return checkWholeNumbers(n.Alias, t)
		}
	case yaml.ScalarNode:
		switch t.Kind() {
		case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
			reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
			if n.ShortTag() != "!!float" {
				return nil
			}
			if f, err := strconv.ParseFloat(n.Value, 64); err == nil && f != math.Trunc(f) {
				return fmt.Errorf("line %d: %s is not a whole number; write one without a fraction", n.Line, n.Value)
			}
		}
	case yaml.SequenceNode:
		if t.Kind() == reflect.Slice || t.Kind() == reflect.Array {
			for _, c := range n.Content {
				if err := checkWholeNumbers(c, t.Elem()); err != nil {
					return err
				}
			}
		}
	case yaml.MappingNode:
		for i := 0; i+1 < len(n.Content); i += 2 {
			ft := keyType(t, n.Content[i].Value)
			if ft == nil {
				continue
			}
			if err := checkWholeNumbers(n.Content[i+1], ft); err != nil {
				return err
			}
		}
	}
	return nil
}

// checkCommentedSecrets refuses a secret (a Secret field or map value) left
// empty or null because its unquoted value began with #, which YAML reads as
// a comment: `api_key: #abc` would otherwise load as no key at all. The
// error names the line and the key, never the rest of the line (it holds
// the secret).
func checkCommentedSecrets(n *yaml.Node, t reflect.Type, data []byte) error {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch n.Kind {
	case yaml.DocumentNode:
		for _, c := range n.Content {
			if err := checkCommentedSecrets(c, t, data); err != nil {
				return err
			}
		}
	case yaml.SequenceNode:
		if t.Kind() == reflect.Slice || t.Kind() == reflect.Array {
			for _, c := range n.Content {
				if err := checkCommentedSecrets(c, t.Elem(), data); err != nil {
					return err
				}
			}
		}
	case yaml.MappingNode:
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			ft := keyType(t, k.Value)
			if ft == nil {
				continue
			}
			if ft == reflect.TypeFor[Secret]() {
				if v.Kind == yaml.ScalarNode && v.Style == 0 && (v.Value == "" || v.ShortTag() == "!!null") && commentAfterKey(data, k) {
					return fmt.Errorf("line %d: %s is empty because its value begins with #, which YAML reads as the start of a comment; quote the value (%s: \"#...\"), or leave the key out for no value", k.Line, k.Value, k.Value)
				}
				continue
			}
			if err := checkCommentedSecrets(v, ft, data); err != nil {
				return err
			}
		}
	}
	return nil
}

// variableRE is a ${NAME} as the expanded values write it.
var variableRE = regexp.MustCompile(`\$\{[A-Za-z_][A-Za-z0-9_]*\}`)

// notExpandedKeys are the keys under which a ${NAME} is left as written
// without an error: text (a description), templates (a tool's undo, refresh
// and verify, its reads and writes: the tools section) and a command's
// arguments, which a shell it starts may expand itself.
var notExpandedKeys = map[string]bool{"tools": true, "description": true, "args": true, "condition": true, "command": true}

// checkUnexpanded refuses a ${NAME} in a value that is not expanded (every
// string but a Secret's: headers, env, api_key, store): `data:
// ${STATE}/reach` made a folder named ${STATE}, and `url:
// http://${HOST}/mcp` was refused as not an http:// URL, neither saying
// that the variable was never read. key is the key n is the value of.
func checkUnexpanded(n *yaml.Node, t reflect.Type, key string) error {
	for t != nil && t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t == nil || t == reflect.TypeFor[Secret]() || notExpandedKeys[key] {
		return nil
	}
	switch n.Kind {
	case yaml.DocumentNode:
		for _, c := range n.Content {
			if err := checkUnexpanded(c, t, key); err != nil {
				return err
			}
		}
	case yaml.ScalarNode:
		if t.Kind() == reflect.String && n.ShortTag() == "!!str" {
			if v := variableRE.FindString(n.Value); v != "" {
				return fmt.Errorf("line %d: %s in %s is not expanded: reach expands ${NAME} only in headers, env, api_key and store; write the value itself", n.Line, v, key)
			}
		}
	case yaml.SequenceNode:
		if t.Kind() == reflect.Slice || t.Kind() == reflect.Array {
			for _, c := range n.Content {
				if err := checkUnexpanded(c, t.Elem(), key); err != nil {
					return err
				}
			}
		}
	case yaml.MappingNode:
		for i := 0; i+1 < len(n.Content); i += 2 {
			k := n.Content[i].Value
			if err := checkUnexpanded(n.Content[i+1], keyType(t, k), k); err != nil {
				return err
			}
		}
	}
	return nil
}

// commentAfterKey reports whether the source line of the mapping key k has a
// # right after the key's colon (and any spaces).
func commentAfterKey(data []byte, k *yaml.Node) bool {
	if k.Line < 1 || k.Column < 1 {
		return false
	}
	line := data
	for range k.Line - 1 {
		j := bytes.IndexByte(line, '\n')
		if j < 0 {
			return false
		}
		line = line[j+1:]
	}
	if j := bytes.IndexByte(line, '\n'); j >= 0 {
		line = line[:j]
	}
	if k.Column-1 > len(line) {
		return false
	}
	rest := line[k.Column-1:]
	c := bytes.IndexByte(rest, ':')
	if c < 0 {
		return false
	}
	rest = bytes.TrimLeft(rest[c+1:], " \t")
	return len(rest) > 0 && rest[0] == '#'
}

// keyType returns the type that the value of the YAML key decodes into
// when its mapping decodes into t (a map's element, a struct's field), or
// nil when unknown (t nil, neither a map nor a struct, or no such field).
func keyType(t reflect.Type, key string) reflect.Type {
	switch {
	case t == nil:
	case t.Kind() == reflect.Map:
		return t.Elem()
	case t.Kind() == reflect.Struct:
		if f, ok := yamlField(t, key); ok {
			return f.Type
		}
	}
	return nil
}

// yamlField returns the field of the struct type t that the YAML key name
// decodes into, looking into inlined structs.
func yamlField(t reflect.Type, name string) (reflect.StructField, bool) {
	for i := range t.NumField() {
		f := t.Field(i)
		if !f.IsExported() {
			continue
		}
		tag, opts, _ := strings.Cut(f.Tag.Get("yaml"), ",")
		if tag == "-" {
			continue
		}
		if strings.Contains(opts, "inline") {
			if g, ok := yamlField(f.Type, name); ok {
				return g, true
			}
			continue
		}
		if tag == "" {
			tag = strings.ToLower(f.Name)
		}
		if tag == name {
			return f, true
		}
	}
	return reflect.StructField{}, false
}

// tabIndented returns the number of the first line indented with a tab,
// or 0: the YAML library only says it "found character that cannot start
// any token".
func tabIndented(data []byte) int {
	for i, l := range bytes.Split(data, []byte("\n")) {
		indent := l[:len(l)-len(bytes.TrimLeft(l, " \t"))]
		if bytes.IndexByte(indent, '\t') >= 0 && len(bytes.TrimSpace(l)) > 0 {
			return i + 1
		}
	}
	return 0
}

// unknownFieldRE reads the YAML library's "field X not found in type T".
var unknownFieldRE = regexp.MustCompile(`field (\S+) not found in type [\w.\[\]*]*\.(\w+)`)

// didYouMean names the known key closest to an unknown one in the
// library's message, or "" if none is close.
func didYouMean(msg string) string {
	m := unknownFieldRE.FindStringSubmatch(msg)
	if m == nil {
		return ""
	}
	return closestKey(m[1], configKeys()[m[2]])
}

// closestKey is the key of keys that word is a misspelling of, or "", or
// the key it names as another tool names a limit (max_turns, maxDepth,
// tokens_limit: turns, depth, tokens).
func closestKey(word string, keys []string) string {
	if k := closestTo(strings.ToLower(word), keys); k != "" {
		return k
	}
	w := strings.ToLower(word)
	for _, a := range []string{"maximum_", "maximum", "max_", "max"} {
		w = strings.TrimPrefix(w, a)
	}
	for _, a := range []string{"_limit", "limit", "_max", "max"} {
		w = strings.TrimSuffix(w, a)
	}
	if w == strings.ToLower(word) || w == "" {
		return ""
	}
	return closestTo(w, keys)
}

// closestTo is the key of keys that word (in lower case) is a
// misspelling of, or "".
func closestTo(word string, keys []string) string {
	best, bestD := "", 1<<30
	for _, k := range keys {
		if d := names.Distance(word, k); d < bestD {
			best, bestD = k, d
		}
	}
	if bestD > max(2, len(word)/3) {
		return ""
	}
	return best
}

// configKeys maps the name of each struct type of a Config to its YAML
// keys.
var configKeys = sync.OnceValue(func() map[string][]string {
	keys := map[string][]string{}
	var walk func(t reflect.Type)
	walk = func(t reflect.Type) {
		for t.Kind() == reflect.Pointer || t.Kind() == reflect.Slice || t.Kind() == reflect.Map {
			t = t.Elem()
		}
		if t.Kind() != reflect.Struct || keys[t.Name()] != nil {
			return
		}
		keys[t.Name()] = []string{}
		if p, ok := reflect.New(t).Interface().(patch); ok { // decoded through its fields
			keys[t.Name()] = slices.Sorted(maps.Keys(p.fields()))
			return
		}
		for f := range t.Fields() {
			tag, _, _ := strings.Cut(f.Tag.Get("yaml"), ",")
			if tag == "" || tag == "-" || !f.IsExported() {
				continue
			}
			keys[t.Name()] = append(keys[t.Name()], tag)
			walk(f.Type)
		}
	}
	walk(reflect.TypeFor[Config]())
	return keys
})

// wrongShapeRE reads the YAML library's "cannot unmarshal X into T" where
// T is a part of the configuration: a mapping, a list or a map of them.
var wrongShapeRE = regexp.MustCompile(`cannot unmarshal .* into (\[\]|map\[string\])?\*?config\.(\w+)$`)

// wantShape says what the key whose value had the wrong shape wants, from
// the library's message: "model: http://..." was "cannot unmarshal the
// string here", which named neither the key nor what it takes.
func wantShape(msg string) string {
	m := wrongShapeRE.FindStringSubmatch(msg)
	if m == nil {
		return ""
	}
	keys, ok := configKeys()[m[2]]
	if !ok {
		return ""
	}
	shape := "a mapping of " + keyList(keys)
	switch m[1] {
	case "[]":
		shape = "a list, each item " + shape
	case "map[string]":
		shape = "a mapping of names, each to " + shape
	}
	if key := configKeyOf()[m[2]]; key != "" {
		// A value written alone where a mapping of one key goes
		// (policy: policies.cedar): say how it is written.
		if v := cutValueRE.FindStringSubmatch(msg); v != nil && m[1] == "" && len(keys) == 1 && !strings.HasSuffix(v[1], "...") && !strings.ContainsAny(v[1], "@?#=") {
			val := v[1]
			if !plainWordRE.MatchString(val) {
				val = strconv.Quote(val) // a space, a colon: YAML wants it quoted in braces
			}
			shape += ": write " + key + ": {" + keys[0] + ": " + val + "}"
		}
		return "; " + key + " wants " + shape
	}
	return "; want " + shape
}

// cutValueRE reads the string value a message of the YAML library quotes
// (cut short past ten characters, "policie...").
var cutValueRE = regexp.MustCompile("!!str `([^`]*)` into ")

// keyList lists keys for a message, the first eight at most.
func keyList(keys []string) string {
	if len(keys) > 8 {
		return strings.Join(keys[:8], ", ") + ", ..."
	}
	return strings.Join(keys, ", ")
}

// configKeyOf maps the name of each struct type of a Config to the key
// that holds it (the first, walking the Config's fields in order).
var configKeyOf = sync.OnceValue(func() map[string]string {
	of := map[string]string{}
	var walk func(t reflect.Type)
	walk = func(t reflect.Type) {
		for f := range t.Fields() {
			tag, _, _ := strings.Cut(f.Tag.Get("yaml"), ",")
			if tag == "" || tag == "-" || !f.IsExported() {
				continue
			}
			ft := f.Type
			for ft.Kind() == reflect.Pointer || ft.Kind() == reflect.Slice || ft.Kind() == reflect.Map {
				ft = ft.Elem()
			}
			if ft.Kind() == reflect.Struct && of[ft.Name()] == "" {
				of[ft.Name()] = tag
				walk(ft)
			}
		}
	}
	walk(reflect.TypeFor[Config]())
	return of
})

// lineRE reads the line a message of the YAML library is about.
var lineRE = regexp.MustCompile(`^line (\d+): `)

// scalarRE reads the Go type of a scalar a value had the wrong shape for.
var scalarRE = regexp.MustCompile(`cannot unmarshal .* into (string|config\.Secret|bool|u?int\d*|float\d*)$`)

// keysOfLines names, in each message of a TypeError about a value of the
// wrong shape that names no key, the key whose value is on its line (the
// deepest, in a one-line mapping): "store: [x]" was "line 1: cannot
// unmarshal a list here", and a tool's entry or a budget's limit of the
// wrong shape said what it wanted but not whose. A key that wants a scalar
// says which.
func keysOfLines(err error, root *yaml.Node) error {
	var te *yaml.TypeError
	if !errors.As(err, &te) {
		return err
	}
	msgs := make([]string, len(te.Errors))
	for i, m := range te.Errors {
		msgs[i] = m
		lm := lineRE.FindStringSubmatch(m)
		if lm == nil || !strings.Contains(m, "cannot unmarshal") && !strings.HasPrefix(m[len(lm[0]):], "want a duration") {
			continue // not a shape
		}
		line, _ := strconv.Atoi(lm[1])
		if strings.Contains(wantShape(m), " wants ") {
			// A part of the configuration that names its key. One of one
			// key (policy: {path}) written as its value alone gets the
			// value whole, for wantShape to say how it is written: the
			// library cuts it short (`policie...`).
			if w := wrongShapeRE.FindStringSubmatch(m); w != nil && w[1] == "" && len(configKeys()[w[2]]) == 1 {
				if v := stringOnLine(root, line); v != "" && !strings.ContainsAny(v, "`@?#=") { // no user:password@ of a URL, no query or fragment (a key)
					msgs[i] = cutValueRE.ReplaceAllString(m, "!!str `"+strings.ReplaceAll(v, "$", "$$")+"` into ")
				}
			}
			continue
		}
		key, kt := keyTypeOnLine(root, line, "", reflect.TypeFor[Config]())
		if key == "" {
			continue
		}
		if j := strings.Index(m, "; want "); j >= 0 {
			msgs[i] = m[:j] + "; " + key + " wants " + m[j+len("; want "):]
			continue
		}
		if strings.HasPrefix(m[len(lm[0]):], "want ") {
			msgs[i] = lm[0] + key + " wants " + m[len(lm[0])+len("want "):]
			continue
		}
		switch t := scalarRE.FindStringSubmatch(m); {
		case t == nil && strings.Contains(m, "!!str `") && strings.HasSuffix(m, "into []string"):
			// A command written as one string: say how it is written.
			var words []string
			if a, b := strings.Index(m, "`"), strings.LastIndex(m, "`"); b > a {
				words = strings.Fields(m[a+1 : b])
			}
			if v := stringOnLine(root, line); v != "" {
				words = strings.Fields(v) // the whole of it: the message cuts a long one short
			}
			for j, w := range words {
				if !plainWordRE.MatchString(w) {
					words[j] = strconv.Quote(w) // @scope/pkg, a colon, a quote: YAML wants it quoted
				}
			}
			msgs[i] = m + "; " + key + " wants a list of strings, a word each: [" + strings.Join(words, ", ") + "]"
		case t == nil:
			if w := wantsOfType(kt, 0); w != "" {
				msgs[i] = goTypeRE.ReplaceAllString(m, " here") + "; " + key + " wants " + w
			} else {
				msgs[i] = m + "; see " + key
			}
		case t[1] == "string" || t[1] == "config.Secret":
			msgs[i] = m + "; " + key + " wants a string"
		case t[1] == "bool":
			msgs[i] = m + "; " + key + " wants true or false"
		case strings.Contains(t[1], "int"):
			msgs[i] = m + "; " + key + " wants a whole number"
		default:
			msgs[i] = m + "; " + key + " wants a number"
		}
	}
	return &yaml.TypeError{Errors: msgs}
}

// goTypeRE reads the Go type a message of the YAML library ends with
// ("into map[string]int64"), said in words instead where the key's type is
// known.
var goTypeRE = regexp.MustCompile(` into [\w.\[\]*]+$`)

// plainWordRE matches a word that YAML reads as itself in a flow list.
var plainWordRE = regexp.MustCompile(`^[A-Za-z0-9_./][A-Za-z0-9_./=+-]*$|^-[A-Za-z0-9][A-Za-z0-9_./=+-]*$`)

// stringOnLine returns the last string value under n that begins on line
// (a mapping's value or a list's element), or "".
func stringOnLine(n *yaml.Node, line int) string {
	found := ""
	for i, c := range n.Content {
		if c.Kind == yaml.ScalarNode && c.Line == line && c.Tag == "!!str" && (n.Kind != yaml.MappingNode || i%2 == 1) {
			found = c.Value
		}
		if v := stringOnLine(c, line); v != "" {
			found = v
		}
	}
	return found
}

// taggedRE reads the YAML library's message for a value tagged with a type
// it is not (`api_key: !!int pw`), which quotes the value.
var taggedRE = regexp.MustCompile("^yaml: cannot decode !!\\w+ `((?s).*)` as a (!!\\w+)$")

// taggedValue turns the YAML library's message for a value tagged with a
// type it is not, which quotes the value (a secret, say), into one that
// names the line and the key and quotes nothing of the value.
func taggedValue(err error, root *yaml.Node) error {
	m := taggedRE.FindStringSubmatch(err.Error())
	if m == nil {
		return err
	}
	var find func(n *yaml.Node) *yaml.Node
	find = func(n *yaml.Node) *yaml.Node {
		if n.Kind == yaml.ScalarNode && n.Value == m[1] && n.ShortTag() == m[2] {
			return n
		}
		for _, c := range n.Content {
			if f := find(c); f != nil {
				return f
			}
		}
		return nil
	}
	where := "a value"
	if n := find(root); n != nil {
		where = "line " + strconv.Itoa(n.Line) + ": a value"
		if k := keyOnLine(root, n.Line, "", reflect.TypeFor[Config]()); k != "" {
			where = "line " + strconv.Itoa(n.Line) + ": " + k
		}
	}
	return fmt.Errorf("%s is tagged %s, which its value is not; drop the tag, or quote the value if it is text", where, m[2])
}

// keyOnLine returns the dotted path of the deepest key under n whose value
// begins on line, or "". n decodes into t (nil when unknown). It looks no
// deeper than a secret: what is written where one goes (`api_key: {pw: 1}`)
// is the secret, and is not named.
func keyOnLine(n *yaml.Node, line int, path string, t reflect.Type) string {
	k, _ := keyTypeOnLine(n, line, path, t)
	return k
}

// keyTypeOnLine is keyOnLine that also returns the type the key's value
// decodes into (nil when unknown).
func keyTypeOnLine(n *yaml.Node, line int, path string, t reflect.Type) (string, reflect.Type) {
	for t != nil && t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t == reflect.TypeFor[Secret]() {
		return "", nil
	}
	found, ft := "", reflect.Type(nil)
	switch n.Kind {
	case yaml.DocumentNode:
		for _, c := range n.Content {
			if k, kt := keyTypeOnLine(c, line, path, t); k != "" {
				found, ft = k, kt
			}
		}
	case yaml.MappingNode:
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i].Value, n.Content[i+1]
			vt := keyType(t, k)
			if path != "" {
				k = path + "." + k
			}
			if v.Line == line {
				found, ft = k, vt
			}
			if d, dt := keyTypeOnLine(v, line, k, vt); d != "" {
				found, ft = d, dt
			}
		}
	case yaml.SequenceNode:
		var et reflect.Type
		if t != nil && (t.Kind() == reflect.Slice || t.Kind() == reflect.Array) {
			et = t.Elem()
		}
		for i, c := range n.Content {
			if d, dt := keyTypeOnLine(c, line, path+"["+strconv.Itoa(i)+"]", et); d != "" {
				found, ft = d, dt
			}
		}
	}
	return found, ft
}

// wantsOfType says in words what a value of type t is written as ("a
// mapping of names, each to a string"), or "" for a type it cannot say
// (one that decodes itself, or nested past a few levels).
func wantsOfType(t reflect.Type, depth int) string {
	for t != nil && t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t == nil || depth > 3 {
		return ""
	}
	if t == reflect.TypeFor[Secret]() {
		return "a string"
	}
	if t.Implements(unmarshalerType) || reflect.PointerTo(t).Implements(unmarshalerType) {
		return ""
	}
	switch t.Kind() {
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "true or false"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "a whole number"
	case reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.Slice, reflect.Array:
		if e := wantsOfType(t.Elem(), depth+1); e != "" {
			return "a list, each item " + e
		}
	case reflect.Map:
		if t.Key().Kind() != reflect.String {
			return ""
		}
		if e := wantsOfType(t.Elem(), depth+1); e != "" {
			return "a mapping of names, each to " + e
		}
	case reflect.Struct:
		var keys []string
		for f := range t.Fields() {
			tag, _, _ := strings.Cut(f.Tag.Get("yaml"), ",")
			if !f.IsExported() || tag == "-" || f.Anonymous {
				continue
			}
			if tag == "" {
				tag = strings.ToLower(f.Name)
			}
			keys = append(keys, tag)
		}
		if len(keys) > 0 {
			return "a mapping of " + keyList(keys)
		}
	}
	return ""
}

var typeNameRE = regexp.MustCompile(` (in|into) (type )?[\w.\[\]*]*(config|reach|budget)\.\w+`)

// yamlWords turns the YAML library's type names into words.
var yamlWords = strings.NewReplacer("!!seq", "a list", "!!map", "a mapping", "!!str", "the string", "!!int", "the number",
	"!!float", "the number", "!!bool", "the boolean", "!!null", "null",
	"into int64", "into a whole number", "into int", "into a whole number", "into float64", "into a number",
	"into bool", "into true or false", "into []string", "into a list of strings", "into string", "into a string",
	"into map[string]config.Secret", "into a mapping")

// Line returns the line of the node at path (mapping keys as strings,
// sequence indexes as ints) in the parsed document, or 0.
func (c *Config) Line(path ...any) int {
	if c.root == nil || len(c.root.Content) == 0 {
		return 0
	}
	n := c.root.Content[0]
	ln := n.Line
	for _, p := range path {
		switch k := p.(type) {
		case string:
			if n.Kind != yaml.MappingNode {
				return ln
			}
			found := false
			for i := 0; i+1 < len(n.Content); i += 2 {
				if n.Content[i].Value == k {
					ln = n.Content[i].Line
					n = n.Content[i+1]
					found = true
					break
				}
			}
			if !found {
				return ln
			}
		case int:
			if n.Kind != yaml.SequenceNode || k >= len(n.Content) {
				return ln
			}
			n = n.Content[k]
			ln = n.Line
		}
	}
	return ln
}

// inFileOrder sorts the keys of the mapping at path as the file has them,
// so that of several problems the first in the file is reported.
func (c *Config) inFileOrder(keys []string, path ...any) []string {
	at := func(k string) int { return c.Line(append(slices.Clip(path), k)...) }
	slices.SortStableFunc(keys, func(a, b string) int { return cmp.Compare(at(a), at(b)) })
	return keys
}

// Errorf makes an error that names the line of path (mapping keys as
// strings, sequence indexes as ints), as every error about the
// configuration does.
func (c *Config) Errorf(path []any, format string, args ...any) error {
	msg := fmt.Sprintf(format, args...)
	if ln := c.Line(path...); ln > 0 {
		return fmt.Errorf("line %d: %s", ln, msg)
	}
	return errors.New(msg)
}

var varRE = regexp.MustCompile(`\$\{([^}]*)\}`)
var varNameRE = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// expandSecret replaces each ${VAR} by the variable's value. An unset
// variable, or a "${" without its "}", is an error; "$${" writes a literal
// "${".
func expandSecret(s Secret, lookup func(string) (string, bool), record func(string)) (Secret, error) {
	v := string(s)
	if !strings.Contains(v, "${") {
		return s, nil
	}
	const esc = "\x00dollar\x00"
	v = strings.ReplaceAll(v, "$${", esc)
	if strings.Contains(varRE.ReplaceAllString(v, ""), "${") { // in what was written, not in a value
		return "", errors.New("a ${ is not closed; write ${NAME}, or $${ for a literal ${")
	}
	var bad error
	v = varRE.ReplaceAllStringFunc(v, func(m string) string {
		name := m[2 : len(m)-1]
		if !varNameRE.MatchString(name) {
			bad = fmt.Errorf("%q is not a variable name (use ${NAME} with letters, digits and _)", name)
			return ""
		}
		val, ok := lookup(name)
		if ok && val == stateVar {
			return m // LoadState: left as written
		}
		if !ok {
			bad = fmt.Errorf("${%s} is not set in the environment; set it, or remove the reference", name)
			return ""
		}
		record(val)
		return val
	})
	if bad != nil {
		return "", bad
	}
	return Secret(strings.ReplaceAll(v, esc, "${")), nil
}

func (c *Config) expand(lookup func(string) (string, bool)) error {
	if lookup == nil {
		lookup = func(string) (string, bool) { return "", false }
	}
	record := func(v string) { c.varVals = append(c.varVals, v) }
	for i := range c.Upstreams {
		u := &c.Upstreams[i]
		for k, v := range u.Headers {
			x, err := expandSecret(v, lookup, record)
			if err != nil {
				return c.Errorf([]any{"upstreams", i, "headers", k}, "upstream %s, header %s: %v", u.Name, k, err)
			}
			u.Headers[k] = x
		}
		for k, v := range u.Env {
			x, err := expandSecret(v, lookup, record)
			if err != nil {
				return c.Errorf([]any{"upstreams", i, "env", k}, "upstream %s, env %s: %v", u.Name, k, err)
			}
			u.Env[k] = x
		}
	}
	if c.Store != "" {
		// Read by every command, LoadState's too: unset is an error.
		strict := func(name string) (string, bool) {
			if v, ok := lookup(name); ok && v != stateVar {
				return v, true
			}
			return "", false
		}
		x, err := expandSecret(c.Store, strict, record)
		if err != nil {
			return c.Errorf([]any{"store"}, "store: %v", err)
		}
		c.Store = x
	}
	if c.Model != nil {
		x, err := expandSecret(c.Model.APIKey, lookup, record)
		if err != nil {
			return c.Errorf([]any{"model", "api_key"}, "model api_key: %v", err)
		}
		c.Model.APIKey = x
		for i := range c.Model.Fallbacks {
			f := &c.Model.Fallbacks[i]
			x, err := expandSecret(f.APIKey, lookup, record)
			if err != nil {
				return c.Errorf([]any{"model", "fallbacks", i, "api_key"}, "model fallback %d, api_key: %v", i+1, err)
			}
			f.APIKey = x
		}
	}
	return nil
}

// MinInstanceTTL is the shortest instance_ttl: heartbeats come every
// fifth of it, and a life that misses it is taken for dead.
const MinInstanceTTL = time.Second

// upstreamNameRE and instanceRE match the characters of an upstream's
// name and of an instance's; their length, at most 64, is checked apart
// (a counted repetition compiles into a copy of the class per count,
// kept for the process's life).
var upstreamNameRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_-]*$`)

var instanceRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.-]*$`)

// checkStore checks a store: value, without quoting it (it may hold a
// password): empty, or a PostgreSQL URL with a host and a database.
func checkStore(s string) error {
	if s == "" {
		return nil
	}
	const want = "want postgres://USER@HOST:PORT/DB?sslmode=disable|require|verify-full, or leave store out to keep the state in SQLite in the data folder"
	u, err := url.Parse(s)
	if err != nil {
		return errors.New("not a URL; " + want)
	}
	switch {
	case u.Scheme != "postgres" && u.Scheme != "postgresql":
		return fmt.Errorf("the scheme %q is not postgres; %s", u.Scheme, want)
	case u.Host == "":
		return errors.New("the URL names no host; " + want)
	case strings.Trim(u.Path, "/") == "":
		return errors.New("the URL names no database; " + want)
	}
	return nil
}

// Postgres reports whether the configuration keeps its state in
// PostgreSQL (store: postgres://...).
func (c *Config) Postgres() bool { return c.Store != "" }

// RetentionPeriod is how long finished state is kept: Retention, or
// DefaultRetention if unset; zero keeps it all.
func (c *Config) RetentionPeriod() time.Duration {
	if !c.Retention.set {
		return DefaultRetention
	}
	return c.Retention.keep
}

// InstanceName is the name of this gateway among those that share its
// store: Instance, or its default (see Instance).
func (c *Config) InstanceName() string {
	if c.Instance != "" {
		return c.Instance
	}
	if !c.Postgres() {
		return "reach"
	}
	host, _ := os.Hostname()
	host = strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '.' || r == '_' {
			return r
		}
		return '-'
	}, host)
	_, port, _ := net.SplitHostPort(cmp.Or(c.Listen, DefaultListen))
	name := strings.Trim(cmp.Or(host, "reach"), "-.") + "-" + port
	if len(name) > 64 {
		name = name[len(name)-64:]
	}
	return name
}

// check validates values that decoding cannot: each error names its line.
func (c *Config) check() error {
	if l := c.Log; l != nil {
		if err := CheckLogFormat(l.Format); err != nil {
			return c.Errorf([]any{"log", "format"}, "log: %v", err)
		}
		if _, err := ParseLogLevel(l.Level); err != nil {
			return c.Errorf([]any{"log", "level"}, "log: %v", err)
		}
	}
	if c.Listen != "" {
		if err := CheckListen(c.Listen, c.Authenticates()); err != nil {
			return c.Errorf([]any{"listen"}, "%v", err)
		}
	}
	if c.Auth != nil && c.Auth.JWT != nil && (c.Auth.JWT.JWKS == "" || c.Auth.JWT.Issuer == "") {
		return c.Errorf([]any{"auth", "jwt"}, "auth: jwt needs jwks (a file or URL) and issuer")
	}
	if c.Auth != nil && c.Auth.JWT != nil && strings.TrimSpace(c.Auth.JWT.Audience) == "" {
		return c.Errorf([]any{"auth", "jwt"}, "auth: jwt needs audience, the aud your identity provider puts in the tokens it issues for this gateway: "+
			"without it, a token the issuer gave any other application (any of its users can get one) would be taken; "+
			"write audience: %q only if the issuer issues tokens for this gateway alone", AnyAudience)
	}
	if c.MaxBodyBytes < 0 {
		return c.Errorf([]any{"max_body_bytes"}, "max_body_bytes must not be negative")
	}
	if err := c.RateLimit.check(c); err != nil {
		return err
	}
	if c.RefusedInARow != nil && *c.RefusedInARow < 0 {
		return c.Errorf([]any{"refused_in_a_row"}, "refused_in_a_row must not be negative (0 turns the rule off)")
	}
	if err := checkStore(c.Store.Reveal()); err != nil {
		return c.Errorf([]any{"store"}, "store: %v", err)
	}
	if c.Instance != "" && (len(c.Instance) > 64 || !instanceRE.MatchString(c.Instance)) {
		return c.Errorf([]any{"instance"}, "instance %q: use 1-64 letters, digits, '_', '-' or '.', starting with a letter or digit", c.Instance)
	}
	if t := time.Duration(c.InstanceTTL); t != 0 && t < MinInstanceTTL {
		return c.Errorf([]any{"instance_ttl"}, "instance_ttl %v: use at least %v (an instance heartbeats every fifth of it, and one that misses it is taken for dead and its work recovered: a shorter one takes live instances for dead at any pause of the store), or leave it out for 10s", t, MinInstanceTTL)
	}
	for i, v := range c.MCPProtocols {
		if !slices.Contains(mcp.SupportedProtocolVersions(), v) {
			return c.Errorf([]any{"mcp_protocols", i}, "mcp_protocols: reach does not speak MCP %q; use some of %s", v,
				strings.Join(mcp.SupportedProtocolVersions(), ", "))
		}
	}
	seen := map[string]bool{}
	for i, u := range c.Upstreams {
		at := []any{"upstreams", i}
		switch {
		case len(u.Name) > 64 || !upstreamNameRE.MatchString(u.Name):
			return c.Errorf(append(at, "name"), "upstream name %q: use 1-64 letters, digits, '_' or '-', starting with a letter or digit", u.Name)
		case seen[u.Name]:
			return c.Errorf(append(at, "name"), "upstream name %q is used twice", u.Name)
		case u.URL == "" && len(u.Command) == 0:
			return c.Errorf(at, "upstream %s needs url (Streamable HTTP) or command (stdio)", u.Name)
		case u.URL != "" && len(u.Command) > 0:
			return c.Errorf(at, "upstream %s has both url and command; keep one", u.Name)
		case u.URL == "" && len(u.Headers) > 0:
			return c.Errorf(append(at, "headers"), "upstream %s: headers apply to url upstreams only", u.Name)
		case u.URL != "" && (len(u.Env) > 0 || u.Dir != ""):
			return c.Errorf(at, "upstream %s: env and dir apply to command upstreams only", u.Name)
		}
		seen[u.Name] = true
		if u.URL != "" {
			p, err := url.Parse(u.URL)
			if err == nil && p.User != nil { // before the message that quotes the url
				return c.Errorf(append(at, "url"), "upstream %s: put credentials in headers with ${VAR}, not in the url", u.Name)
			}
			if err != nil || (p.Scheme != "http" && p.Scheme != "https") || p.Host == "" {
				return c.Errorf(append(at, "url"), "upstream %s: url %q must be an http:// or https:// URL", u.Name, u.URL)
			}
			if (len(u.Headers) > 0 || urlKey(p)) && !u.AllowPlainHTTP && plainOffLoopback(p) {
				return c.Errorf(append(at, "url"), "upstream %s: url %s is plain http to a host that is not loopback, and its headers or the key in its query would cross the network in the clear; "+
					"use its https:// URL, or add allow_plain_http: true to this upstream to send them so knowingly (a network you trust end to end)", u.Name, withoutQuery(p))
			}
		}
		if len(u.Command) > 0 && u.Command[0] == "" {
			return c.Errorf(append(at, "command"), "upstream %s: the command's first element (the program) is empty", u.Name)
		}
		if err := u.Breaker.Policy().Check(); err != nil {
			return c.Errorf(append(at, "breaker"), "upstream %s: %v", u.Name, err)
		}
		for _, k := range c.inFileOrder(slices.Sorted(maps.Keys(u.Headers)), "upstreams", i, "headers") {
			if !httpguts.ValidHeaderFieldName(k) {
				return c.Errorf(append(at, "headers", k), "upstream %s: %q is not an HTTP header name (letters, digits and !#$%%&'*+-.^_`|~, no spaces or colons); write e.g. X-Api-Key", u.Name, k)
			}
			if !httpguts.ValidHeaderFieldValue(u.Headers[k].Reveal()) { // the value is a secret: not quoted
				return c.Errorf(append(at, "headers", k), "upstream %s, header %s: the value holds a line break or another control character; write it on one line (a ${VAR} whose value ends with a newline does this: trim the variable)", u.Name, k)
			}
		}
		for k := range u.Env {
			if !varNameRE.MatchString(k) {
				return c.Errorf(append(at, "env", k), "upstream %s: %q is not an environment variable name", u.Name, k)
			}
		}
		if u.Prefix != nil && *u.Prefix != "" && (len(*u.Prefix) > 64 || !toolspec.ValidName(*u.Prefix)) {
			return c.Errorf(append(at, "prefix"), "upstream %s: prefix %q: use letters, digits, '_', '-' or '.'", u.Name, *u.Prefix)
		}
	}
	for _, name := range c.inFileOrder(slices.Sorted(maps.Keys(c.Tools)), "tools") {
		o := c.Tools[name]
		at := []any{"tools", name}
		switch o.Access {
		case "", reach.Read, reach.Write, reach.HighRisk, reach.Forbidden:
		default:
			return c.Errorf(append(at, "access"), "tool %s: access %q: want read, write, high_risk or forbidden", name, o.Access)
		}
		switch o.Reentrancy {
		case "", reach.NonReentrant, reach.Reentrant:
		case reach.Keyed:
			if len(o.Key) == 0 {
				return c.Errorf(append(at, "reentrancy"), "tool %s: a keyed tool needs key: [the argument fields that key it]", name)
			}
		default:
			return c.Errorf(append(at, "reentrancy"), "tool %s: reentrancy %q: want non_reentrant, reentrant or keyed", name, o.Reentrancy)
		}
		switch o.OnViolation {
		case "", reach.Refuse, reach.Warn, reach.Allow:
		default:
			return c.Errorf(append(at, "on_violation"), "tool %s: on_violation %q: want refuse, warn or allow", name, o.OnViolation)
		}
		if o.Retry != nil && o.Retry.Attempts < 0 {
			return c.Errorf(append(at, "retry"), "tool %s: retry attempts must not be negative", name)
		}
		if o.Retry != nil && o.Retry.Attempts > MaxRetryAttempts {
			return c.Errorf(append(at, "retry", "attempts"), "tool %s: retry attempts %d is more than %d; write attempts: %d or fewer (the first included: more would hold a failing call for minutes)",
				name, o.Retry.Attempts, MaxRetryAttempts, MaxRetryAttempts)
		}
		for _, tag := range o.Tags {
			if strings.HasPrefix(tag, "upstream:") {
				return c.Errorf(append(at, "tags"), "tool %s: tag %q: tags beginning with upstream: are the gateway's own (it tags each tool with its upstream); choose another", name, tag)
			}
		}
		if err := o.Breaker.Check(); err != nil {
			return c.Errorf(append(at, "breaker"), "tool %s: %v", name, err)
		}
		if len(o.Fallback) > 0 && (o.Access == reach.Write || o.Access == reach.HighRisk || o.Access == reach.Forbidden) {
			return c.Errorf(append(at, "fallback"), "tool %s: fallback is for reads, and this is a %s tool: a write's failure goes to the model and the saga, never silently elsewhere; remove the fallback", name, o.Access)
		}
		// Templates are checked here, where the tool's upstream need not
		// answer: validate --offline finds a bad one, not the first serve.
		for _, kv := range []struct {
			key   string
			names []string
		}{{"reads", o.Reads}, {"writes", o.Writes}} {
			key := kv.key
			for i, e := range kv.names {
				if _, err := template.CompileText(e); err != nil {
					return c.Errorf(append(at, key, i), "tool %s: %s: %v", name, key, err)
				}
			}
		}
		for _, kf := range []struct {
			key string
			f   *reach.Followup
		}{{"undo", o.Undo}, {"refresh", o.Refresh}} {
			key, f := kf.key, kf.f
			if f != nil && f.Args != "" {
				if _, err := template.Compile(f.Args); err != nil {
					return c.Errorf(append(at, key, "args"), "tool %s: %s: %v", name, key, err)
				}
			}
		}
		if o.Verify != nil && o.Verify.Args != "" {
			if _, err := template.Compile(o.Verify.Args); err != nil {
				return c.Errorf(append(at, "verify", "args"), "tool %s: verify: %v", name, err)
			}
		}
		for i, f := range o.Fallback {
			if f.Args != "" {
				if _, err := template.Compile(f.Args); err != nil {
					return c.Errorf(append(at, "fallback", i), "tool %s: fallback %d: %v", name, i+1, err)
				}
			}
			switch {
			case f.Tool == "":
				return c.Errorf(append(at, "fallback", i), "tool %s: fallback %d names no tool; write a tool's name, or {tool: NAME, args: '{...}'}", name, i+1)
			case f.Tool == name:
				return c.Errorf(append(at, "fallback", i), "tool %s: fallback %d is the tool itself; name another read", name, i+1)
			}
		}
	}
	if err := c.Breaker.Policy().Check(); err != nil {
		return c.Errorf([]any{"breaker"}, "%v", err)
	}
	for _, name := range c.inFileOrder(slices.Sorted(maps.Keys(c.Budgets)), "budgets") {
		b := c.Budgets[name]
		if b.Turns < 0 || b.Depth < 0 || b.ToolCalls < 0 || b.Tokens < 0 || b.Cost < 0 {
			return c.Errorf([]any{"budgets", name}, "budget %s: amounts must not be negative (zero means unlimited)", name)
		}
		for i, p := range b.Principals {
			switch {
			case strings.TrimSpace(p.Principal) == "" && p.Tenant != "":
				return c.Errorf([]any{"budgets", name, "principals", i}, "budget %s: principal %d names tenant %q and no principal; write {principal: NAME, tenant: %q}, {principal: \"*\", tenant: %q} for every one of it, or list it in budgets.%s.tenants", name, i+1, p.Tenant, p.Tenant, p.Tenant, name)
			case strings.TrimSpace(p.Principal) == "":
				return c.Errorf([]any{"budgets", name, "principals", i}, "budget %s: principal %d is empty; write a principal's name (of no tenant), {principal: NAME, tenant: TENANT} for one of a tenant, or \"*\" for every one", name, i+1)
			case p.Tenant == "*":
				return c.Errorf([]any{"budgets", name, "principals", i}, "budget %s: principal %d: tenant \"*\" is no tenant (the same name in another tenant is someone else); list %s of each tenant ({principal: %q, tenant: TENANT}), or write \"*\" for every principal of every tenant", name, i+1, p.Principal, p.Principal)
			case p.Tenant != "" && strings.TrimSpace(p.Tenant) == "":
				return c.Errorf([]any{"budgets", name, "principals", i}, "budget %s: principal %d: tenant %q is blank; write the tenant's name as identities carry it, or leave tenant out for %s of no tenant", name, i+1, p.Tenant, p.Principal)
			}
		}
		for i, tn := range b.Tenants {
			switch {
			case strings.TrimSpace(tn) == "":
				return c.Errorf([]any{"budgets", name, "tenants", i}, "budget %s: tenant %d is empty; write a tenant's name as identities carry it", name, i+1)
			case tn == "*":
				return c.Errorf([]any{"budgets", name, "tenants", i}, "budget %s: tenant \"*\" is no tenant; for every principal write principals: [\"*\"]", name)
			}
		}
	}
	agents := map[string]bool{}
	for i, ac := range c.Agents {
		at := []any{"agents", i}
		if agents[ac.Name] {
			return c.Errorf(append(at, "name"), "agent name %q is used twice", ac.Name)
		}
		agents[ac.Name] = true
		if p, err := url.Parse(ac.URL); err == nil && p.User != nil { // before the message that quotes the url
			return c.Errorf(append(at, "url"), "agent %s: the url carries credentials; reach sends none to agents", ac.Name)
		}
		if p, err := url.Parse(ac.URL); err == nil && urlKey(p) && !ac.AllowPlainHTTP && plainOffLoopback(p) {
			return c.Errorf(append(at, "url"), "agent %s: url %s is plain http to a host that is not loopback, and the key in its query would cross the network in the clear; "+
				"use its https:// URL, or add allow_plain_http: true to this agent to send it so knowingly (a network you trust end to end)", ac.Name, withoutQuery(p))
		}
		if err := a2a.CheckAgent(&a2a.Agent{Name: ac.Name, URL: ac.URL, Reentrancy: ac.Reentrancy, Key: ac.Key, OnViolation: ac.OnViolation}); err != nil {
			return c.Errorf(at, "%v", err)
		}
		if _, ok := c.Budgets[ac.Budget]; ac.Budget != "" && !ok {
			return c.Errorf(append(at, "budget"), "agent %s: there is no budget named %q (budgets: in the configuration)", ac.Name, ac.Budget)
		}
	}
	if a := c.A2A; a != nil {
		if a.MaxTaskBytes != 0 && (a.MaxTaskBytes < minA2ATaskBytes || a.MaxTaskBytes > maxA2ATaskBytes) {
			return c.Errorf([]any{"a2a", "max_task_bytes"}, "a2a max_task_bytes %d: use a number of bytes from %d (1 KiB) to %d (64 MiB, the most reach reads of one answer of an agent), or leave it out for 8 MiB", a.MaxTaskBytes, minA2ATaskBytes, maxA2ATaskBytes)
		}
		if task, total := c.A2ALimits(); a.MaxTotalBytes < 0 || total < task {
			return c.Errorf([]any{"a2a", "max_total_bytes"}, "a2a max_total_bytes %d: use a number of bytes at least max_task_bytes (%d), or leave it out for 256 MiB", a.MaxTotalBytes, task)
		}
		if a.MaxReadBytes < 0 {
			return c.Errorf([]any{"a2a", "max_read_bytes"}, "a2a max_read_bytes %d: use a number of bytes, or leave it out for 64 MiB", a.MaxReadBytes)
		}
		if a.PublicURL != "" {
			u, err := url.Parse(a.PublicURL)
			if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.RawQuery != "" || u.Fragment != "" || u.User != nil {
				return c.Errorf([]any{"a2a", "public_url"}, "a2a public_url %q: want the base URL callers reach the gateway at, http(s)://host[:port][/path], e.g. https://reach.example.com", a.PublicURL)
			}
		}
		for i, h := range a.Hosts {
			if h == "" || strings.ContainsAny(h, "/?#@ ") {
				return c.Errorf([]any{"a2a", "hosts", i}, "a2a hosts[%d] %q: want a Host as callers send it, host or host:port (e.g. reach.example.com, or reach.example.com:8443)", i, h)
			}
		}
	}
	if m := c.Model; m != nil {
		if _, ok := c.Budgets[m.SubagentBudget]; m.SubagentBudget != "" && !ok {
			return c.Errorf([]any{"model", "subagent_budget"}, "model subagent_budget: there is no budget named %q (budgets: in the configuration)", m.SubagentBudget)
		}
		p, err := url.Parse(m.BaseURL)
		if err == nil && p.User != nil { // before the message that quotes the url
			return c.Errorf([]any{"model", "base_url"}, "model: put credentials in api_key with ${VAR}, not in the base_url")
		}
		if m.BaseURL == "" || err != nil || (p.Scheme != "http" && p.Scheme != "https") || p.Host == "" {
			return c.Errorf([]any{"model", "base_url"}, "model base_url %q must be an http:// or https:// URL such as http://127.0.0.1:8000/v1", m.BaseURL)
		}
		// A key goes with every model call: api_key, or, when reach
		// authenticates nobody, the client's own Authorization.
		if !m.AllowPlainHTTP && plainOffLoopback(p) && (m.APIKey != "" || !c.Authenticates() || urlKey(p)) {
			key := "its api_key"
			switch {
			case urlKey(p):
				key = "the key in its query"
			case m.APIKey == "":
				key = "the key a client sends (reach authenticates nobody, so a client's Authorization is passed on)"
			}
			return c.Errorf([]any{"model", "base_url"}, "model base_url %s is plain http to a host that is not loopback, and %s would cross the network in the clear; "+
				"use its https:// URL, or add allow_plain_http: true under model to send it so knowingly (a network you trust end to end)", withoutQuery(p), key)
		}
		if !httpguts.ValidHeaderFieldValue(m.APIKey.Reveal()) { // sent in a header; a secret: not quoted
			return c.Errorf([]any{"model", "api_key"}, "model api_key holds a line break or another control character; write it on one line (a ${VAR} whose value ends with a newline does this: trim the variable)")
		}
		if err := m.Breaker.Policy().Check(); err != nil {
			return c.Errorf([]any{"model", "breaker"}, "model: %v", err)
		}
		for name, v := range m.OutputLimits {
			if v <= 0 {
				return c.Errorf([]any{"model", "output_limits", name}, "model output_limits %s: %d is no number of tokens; give the most tokens the model writes in one answer (its max output tokens), or leave it out for 4096", name, v)
			}
		}
		for name, v := range m.ContextLimits {
			if v <= 0 {
				return c.Errorf([]any{"model", "context_limits", name}, "model context_limits %s: %d is no number of tokens; give the most tokens the model's context window holds, or leave it out for no check", name, v)
			}
		}
		for i, f := range m.Fallbacks {
			at := []any{"model", "fallbacks", i}
			p, err := url.Parse(f.BaseURL)
			if err == nil && p.User != nil {
				return c.Errorf(append(at, "base_url"), "model fallback %d: put credentials in api_key with ${VAR}, not in the base_url", i+1)
			}
			if f.BaseURL == "" || err != nil || (p.Scheme != "http" && p.Scheme != "https") || p.Host == "" {
				return c.Errorf(append(at, "base_url"), "model fallback %d: base_url %q must be an http:// or https:// URL such as http://127.0.0.1:8001/v1", i+1, f.BaseURL)
			}
			if (f.APIKey != "" || urlKey(p)) && !f.AllowPlainHTTP && plainOffLoopback(p) {
				return c.Errorf(append(at, "base_url"), "model fallback %d: base_url %s is plain http to a host that is not loopback, and its api_key or the key in its query would cross the network in the clear; "+
					"use its https:// URL, or add allow_plain_http: true to this fallback to send it so knowingly (a network you trust end to end)", i+1, withoutQuery(p))
			}
			if !httpguts.ValidHeaderFieldValue(f.APIKey.Reveal()) {
				return c.Errorf(append(at, "api_key"), "model fallback %d: api_key holds a line break or another control character; write it on one line", i+1)
			}
		}
	}
	return c.checkNumbers()
}

// MaxRetryAttempts bounds a tool's retry.attempts.
const MaxRetryAttempts = 10

// checkNumbers refuses a number anywhere in the configuration that is not
// finite (.nan, .inf, 1e999) or is negative: no amount, price, size or
// count means anything below zero. Of several, the first in the file is
// reported.
func (c *Config) checkNumbers() error {
	var first error
	firstLine := 0
	walkNumbers(reflect.ValueOf(c).Elem(), nil, func(path []any, v float64) {
		if !math.IsNaN(v) && !math.IsInf(v, 0) && v >= 0 {
			return
		}
		what := "is negative"
		switch {
		case math.IsNaN(v):
			what = "is not a number (NaN)"
		case math.IsInf(v, 0):
			what = "is infinite"
		}
		ln := c.Line(path...)
		if first == nil || ln < firstLine {
			first = c.Errorf(path, "%s %s; write a number of 0 or more", dotted(path), what)
			firstLine = ln
		}
	})
	return first
}

// walkNumbers calls f with the path (YAML keys and list indexes) and value
// of every number in v, a decoded configuration.
func walkNumbers(v reflect.Value, path []any, f func([]any, float64)) {
	switch v.Kind() {
	case reflect.Pointer, reflect.Interface:
		if !v.IsNil() {
			walkNumbers(v.Elem(), path, f)
		}
	case reflect.Struct:
		if !v.CanAddr() { // a map's value
			pv := reflect.New(v.Type())
			pv.Elem().Set(v)
			v = pv.Elem()
		}
		if p, ok := v.Addr().Interface().(patch); ok {
			for k, dst := range p.fields() {
				walkField(dst, append(slices.Clip(path), k), f)
			}
			return
		}
		t := v.Type()
		for i := range t.NumField() {
			sf := t.Field(i)
			if !sf.IsExported() {
				continue
			}
			tag, opts, _ := strings.Cut(sf.Tag.Get("yaml"), ",")
			switch {
			case tag == "-":
				continue
			case strings.Contains(opts, "inline"):
				walkNumbers(v.Field(i), path, f)
				continue
			case tag == "":
				tag = strings.ToLower(sf.Name)
			}
			walkNumbers(v.Field(i), append(slices.Clip(path), tag), f)
		}
	case reflect.Map:
		if v.Type().Key().Kind() != reflect.String {
			return
		}
		for _, k := range v.MapKeys() {
			walkNumbers(v.MapIndex(k), append(slices.Clip(path), k.String()), f)
		}
	case reflect.Slice, reflect.Array:
		for i := range v.Len() {
			walkNumbers(v.Index(i), append(slices.Clip(path), i), f)
		}
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		f(path, float64(v.Int()))
	case reflect.Float32, reflect.Float64:
		f(path, v.Float())
	}
}

// walkField walks the numbers of a patch's field (see fields): a part
// when it was set, else the value dst points to.
func walkField(dst any, path []any, f func([]any, float64)) {
	if p, ok := dst.(interface{ present() (fields, bool) }); ok {
		if fs, ok := p.present(); ok {
			for k, d := range fs {
				walkField(d, append(slices.Clip(path), k), f)
			}
		}
		return
	}
	walkNumbers(reflect.ValueOf(dst).Elem(), path, f)
}

// dotted writes a configuration path as the file nests it: budgets.default.cost.
func dotted(path []any) string {
	var b strings.Builder
	for i, p := range path {
		switch p := p.(type) {
		case int:
			fmt.Fprintf(&b, "[%d]", p)
		default:
			if i > 0 {
				b.WriteByte('.')
			}
			fmt.Fprint(&b, p)
		}
	}
	return b.String()
}

// plainOffLoopback reports whether u is a plain http URL of a host other
// than loopback (localhost, 127.0.0.0/8, ::1): what is sent to it crosses
// the network in the clear.
func plainOffLoopback(u *url.URL) bool { return origin.PlainOffLoopback(u) }

// urlKey reports whether u's query holds a credential, as the log's and
// the model's masks find one: the value, of redact.MinSecretLen bytes or
// more, of a parameter with a secret's name or one that ends in "key"
// (?key=, ?api_key=, ?subscription-key=).
func urlKey(u *url.URL) bool {
	for name, vs := range u.Query() {
		if !keyNames.SecretKey(name) && !strings.HasSuffix(strings.ToLower(name), "key") {
			continue
		}
		for _, v := range vs {
			if len(v) >= redact.MinSecretLen {
				return true
			}
		}
	}
	return false
}

// withoutQuery returns u without its query, user or fragment, to quote
// in an error: the query may hold a key.
func withoutQuery(u *url.URL) string {
	return (&url.URL{Scheme: u.Scheme, Host: u.Host, Path: u.Path, RawPath: u.RawPath}).String()
}

// keyNames tells secret names (urlKey).
var keyNames = func() *redact.Redactor {
	r, err := redact.New(nil)
	if err != nil {
		panic(err) // only a rule set given to it fails
	}
	return r
}()

// CheckLoopback returns an error unless addr (host:port) is a loopback
// address: what a gateway without authentication may serve.
func CheckLoopback(addr string) error { return CheckListen(addr, false) }

// CheckListen checks a listen address: host:port with a port from 0 to
// 65535, and, unless the gateway authenticates, a loopback host
// (127.0.0.1, [::1] or localhost in any case: origin.Loopback, the one
// test the plain-http key checks use too).
func CheckListen(addr string, authenticated bool) error {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("listen address %q: want host:port, e.g. %s", addr, DefaultListen)
	}
	if _, err := strconv.ParseUint(port, 10, 16); err != nil {
		return fmt.Errorf("listen address %q: port %q is not a number from 0 to 65535", addr, port)
	}
	if authenticated || origin.Loopback(host) {
		return nil
	}
	return fmt.Errorf("refusing to listen on %q without authentication: reach then serves loopback addresses only "+
		"(127.0.0.1, [::1] or localhost); use e.g. --listen %s, or configure auth (keys or jwt) to serve other addresses", addr, DefaultListen)
}

// ListenAddr returns the listen address in force.
func (c *Config) ListenAddr() string {
	if c.Listen == "" {
		return DefaultListen
	}
	return c.Listen
}

// DataDir returns the data folder in force, absolute when the
// configuration came from a file.
func (c *Config) DataDir() string {
	d := c.Data
	if d == "" {
		d = DefaultData
	}
	if !filepath.IsAbs(d) && c.dir != "" {
		d = filepath.Join(c.dir, d)
	}
	return d
}

// Dir returns the folder relative paths are resolved against ("" for the
// current folder).
func (c *Config) Dir() string { return c.dir }

// File is the configuration file as Load was given it ("" for one not
// loaded from a file): what an error about one of its lines names.
func (c *Config) File() string { return c.file }

// SetDir sets the folder relative paths are resolved against.
func (c *Config) SetDir(dir string) { c.dir = dir }

// BodyLimit returns the request body limit in force.
func (c *Config) BodyLimit() int64 {
	if c.MaxBodyBytes == 0 {
		return DefaultMaxBodyBytes
	}
	return c.MaxBodyBytes
}

// IdleAfter returns the idle gap in force: how long a request the gateway
// began lives without calls.
func (c *Config) IdleAfter() time.Duration {
	if c.IdleGap == 0 {
		return DefaultIdleGap
	}
	return time.Duration(c.IdleGap)
}

// SessionsCap returns the bound on one principal's open MCP sessions in
// force.
func (c *Config) SessionsCap() int {
	if c.SessionsPerPrincipal == 0 {
		return DefaultSessionsPerPrincipal
	}
	return c.SessionsPerPrincipal
}

// RefusedInARowOption returns reach.Options.RefusedInARow for the
// configuration: 0 (the default) when unset, below zero (off) for 0.
func (c *Config) RefusedInARowOption() int {
	switch {
	case c.RefusedInARow == nil:
		return 0
	case *c.RefusedInARow == 0:
		return -1
	}
	return *c.RefusedInARow
}

// InFlightCap returns the bound on one principal's requests in flight in
// force.
func (c *Config) InFlightCap() int {
	if c.RequestsPerPrincipal == 0 {
		return DefaultRequestsPerPrincipal
	}
	return c.RequestsPerPrincipal
}

// DefaultBudget returns the budget for requests that name none, or nil for
// the runtime's default (reach.StandardBudget). A budgets.default written
// in the file changes the amounts it names: a key it leaves out keeps the
// standard amount, so `{tool_calls: 3}` does not lift the bounds on depth,
// turns and the wall clock (a written 0 does: it means unlimited).
func (c *Config) DefaultBudget() *reach.Budget {
	b, ok := c.Budgets["default"]
	if !ok {
		return nil
	}
	if c.root == nil {
		return new(b.Budget) // built in code: whole, as given
	}
	std := Budget{Budget: reach.StandardBudget()}
	from := std.fields()
	for k, to := range b.fields() {
		if !c.written("budgets", "default", k) {
			reflect.ValueOf(to).Elem().Set(reflect.ValueOf(from[k]).Elem())
		}
	}
	return new(b.Budget)
}

// NamedBudgets returns the budgets a client may name for a request it
// begins (Reach-Budget, "reach/budget"), by name: each as written, and a
// key it leaves out at the amount of the budget of requests that name none
// (DefaultBudget, or the standard one), so that naming a budget lifts only
// the bounds it writes (a written 0 is unlimited). Before, a key left out
// was unlimited: a client that named `default` ({tool_calls: 3} written)
// had no bound on turns, depth or the wall clock, and one that named
// `small` ({tool_calls: 3}) none on tokens or cost either. (A delegation's
// budget, carved from its caller's, keeps a key left out unlimited within
// the caller's.)
func (c *Config) NamedBudgets() map[string]reach.Budget {
	out := make(map[string]reach.Budget, len(c.Budgets))
	def := c.DefaultBudget()
	if def == nil {
		def = new(reach.StandardBudget())
	}
	for name, b := range c.Budgets {
		if c.root != nil {
			from := Budget{Budget: *def}
			to, fr := b.fields(), from.fields()
			for k := range to {
				if !c.written("budgets", name, k) {
					reflect.ValueOf(to[k]).Elem().Set(reflect.ValueOf(fr[k]).Elem())
				}
			}
		}
		out[name] = b.Budget
	}
	return out
}

// BudgetPrincipals returns the principals each budget lists (principals:,
// each of its tenant, a bare name of none, "*" every one): who may name it
// for a request they begin if it lifts a limit of the default's
// (link.Owned checks; BudgetWarnings explains one that lifts and lists
// nobody).
func (c *Config) BudgetPrincipals() map[string][]BudgetPrincipal {
	out := map[string][]BudgetPrincipal{}
	for name, b := range c.Budgets {
		if len(b.Principals) > 0 {
			out[name] = slices.Clone(b.Principals)
		}
	}
	return out
}

// BudgetTenants returns the tenants each budget lists (tenants:): every
// principal of one may name it for a request it begins if it lifts a limit
// of the default's (link.Owned checks).
func (c *Config) BudgetTenants() map[string][]string {
	return c.budgetLists(func(b Budget) []string { return b.Tenants })
}

// budgetLists returns, for each budget whose list (of it) is not empty, a
// copy of that list.
func (c *Config) budgetLists(list func(Budget) []string) map[string][]string {
	out := map[string][]string{}
	for name, b := range c.Budgets {
		if l := list(b); len(l) > 0 {
			out[name] = slices.Clone(l)
		}
	}
	return out
}

// InertWarnings explains each key set that this configuration reads
// nothing of, so that reach validate says so rather than take it without
// a word: instance_ttl without store: (a gateway on SQLite is the only
// instance of its data folder, and no other recovers its work).
func (c *Config) InertWarnings() []string {
	var out []string
	if c.InstanceTTL != 0 && c.Store == "" {
		out = append(out, "instance_ttl applies to instances that share a PostgreSQL store: without store: this gateway keeps its state in SQLite, alone, and nothing reads it; add store: (docs/INSTANCES.md), or leave instance_ttl out")
	}
	return append(out, c.RateLimit.inert()...)
}

// inert explains a reserve that no principal's priority may use, and
// priorities that have no reserve to use.
func (r *RateLimit) inert() []string {
	if r == nil {
		return nil
	}
	reserved := r.Reserved > 0 || r.Model != nil && r.Model.Reserved > 0
	priority := false
	for _, p := range r.Priorities {
		priority = priority || p.Priority > 0
	}
	switch {
	case reserved && !priority:
		return []string{"rate_limit.reserved keeps capacity for requests of priority above 0, and rate_limit.priorities gives no principal one: the reserve is never used; name who may use it (priorities: {oncall: 1}), or leave reserved out"}
	case priority && !reserved:
		return []string{"rate_limit.priorities has no reserve to use: without rate_limit.reserved (or rate_limit.model.reserved) every priority is served alike; set reserved (0.2 keeps a fifth of each bucket), or leave priorities out"}
	}
	return nil
}

// BudgetWarnings explains each budget that lifts a limit of the default's
// and lists no principals: no client may name it for a request it begins
// (an agent's budget, agents[].budget, still works).
func (c *Config) BudgetWarnings() []string {
	def := c.DefaultBudget()
	if def == nil {
		def = new(reach.StandardBudget())
	}
	named := c.NamedBudgets()
	used := map[string]bool{}
	for _, ac := range c.Agents {
		used[ac.Budget] = true
	}
	var out []string
	for _, name := range c.inFileOrder(slices.Sorted(maps.Keys(c.Budgets)), "budgets") {
		lifts := budget.Lifts(named[name], *def)
		if len(lifts) == 0 || len(c.Budgets[name].Principals) > 0 || len(c.Budgets[name].Tenants) > 0 {
			continue
		}
		w := fmt.Sprintf("budget %s lifts the default budget's %s and lists no principals and no tenants: no client may name it for a request it begins (Reach-Budget, \"reach/budget\"); list who may in budgets.%s.principals (\"*\" for every one) or budgets.%s.tenants, or keep it for agents[].budget", name, strings.Join(lifts, ", "), name, name)
		if used[name] {
			w += " (an agent's delegations use it, carved from their caller's budget)"
		}
		out = append(out, w)
	}
	return out
}

// BareBudgetPrincipalWarnings explains each bare principal (of no tenant)
// a budget that lifts a limit of the default's lists, whose known
// identities carry a tenant (tenantsOf: the tenants of that principal's
// API keys, sorted): those may not name it, as alice of acme is not alice,
// and a configuration written before a principal had a tenant in a budget
// says how to list them.
func (c *Config) BareBudgetPrincipalWarnings(tenantsOf func(principal string) []string) []string {
	def := c.DefaultBudget()
	if def == nil {
		def = new(reach.StandardBudget())
	}
	named := c.NamedBudgets()
	var out []string
	for _, name := range c.inFileOrder(slices.Sorted(maps.Keys(c.Budgets)), "budgets") {
		if len(budget.Lifts(named[name], *def)) == 0 {
			continue
		}
		for _, p := range c.Budgets[name].Principals {
			if p.Tenant != "" || p.Principal == "*" {
				continue
			}
			var tenants []string
			for _, tn := range tenantsOf(p.Principal) {
				if tn != "" && !slices.Contains(tenants, tn) {
					tenants = append(tenants, tn)
				}
			}
			if len(tenants) == 0 {
				continue
			}
			var of []string
			for _, tn := range tenants {
				of = append(of, fmt.Sprintf("{principal: %q, tenant: %q}", p.Principal, tn))
			}
			out = append(out, fmt.Sprintf("budget %s lists %q, the principal of no tenant, and API keys of %q are of tenant %s: those may not name it (the same name in another tenant is someone else); to let them, write %s in budgets.%s.principals",
				name, p.Principal, p.Principal, strings.Join(tenants, ", "), strings.Join(of, ", "), name))
		}
	}
	return out
}

// written reports whether the mapping keys of path are all in the parsed
// document (through aliases, as the decoder reads them).
func (c *Config) written(path ...string) bool {
	if c.root == nil || len(c.root.Content) == 0 {
		return false
	}
	n := c.root.Content[0]
	for _, k := range path {
		for n.Kind == yaml.AliasNode && n.Alias != nil {
			n = n.Alias
		}
		if n.Kind != yaml.MappingNode {
			return false
		}
		found := false
		for i := 0; i+1 < len(n.Content); i += 2 {
			if n.Content[i].Value == k {
				n, found = n.Content[i+1], true
				break
			}
		}
		if !found {
			return false
		}
	}
	return true
}

// HasDataDir reports whether the gateway keeps state in a data folder: the
// configuration came from a file, or names its data folder (one built in
// memory without it, as in tests, keeps none).
func (c *Config) HasDataDir() bool { return c.Data != "" || c.dir != "" }

// DataDirHint says what to do when the data folder cannot be made or
// written: a container's working directory is often read-only, and the
// default folder (.reach) lies in it.
const DataDirHint = "give reach a folder it may write (data: in the configuration, or reach serve --data DIR; the container image uses /data)"

// EnsureDataDir creates the data folder (mode 0700) and returns its path.
func (c *Config) EnsureDataDir() (string, error) {
	d := c.DataDir()
	if err := os.MkdirAll(d, 0o700); err != nil {
		return "", fmt.Errorf("creating the data folder: %w: %s", err, DataDirHint)
	}
	return d, nil
}
