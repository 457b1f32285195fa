// Package loops detects agents that repeat themselves without making progress
// (capabilities L1 to L3 of the design).
//
// A [Detector] watches one request tree (a root request and its sub-agents) as
// the runtime dispatches it, and refuses the step that would continue a loop:
//
//	d := loops.New(nil) // one per request tree
//	s := &loops.Step{Kind: loops.ToolCall, Tool: "get_order", Args: []byte(`{"id":"42"}`), Access: "read"}
//	if v := d.Check(s); v != nil {
//		return refuse(v.Detector, v.Message, v.Suggestion) // the step does not run
//	}
//	res, err := run(s)
//	d.Done(s, loops.Outcome{Result: res, Error: err != nil, ErrorType: typeOf(err)})
//
// [Detector.Check] runs before a step is dispatched and knows only the outcomes
// of earlier steps; [Detector.Done] reports what a step produced. Model calls
// and delegations go through the same two methods: their text (the model's
// answer, the sub-agent's verdict) reaches [Detector.Done] as a JSON string.
// Model calls are never refused.
//
// # Detectors
//
// Each detector has a short stable id, used in [Verdict.Detector]:
//
//   - "repeat" (L1): the third call of the same tool with the same arguments, when
//     the two before it returned the same non-transient result (or the same
//     non-transient error) and no write or high-risk call succeeded in between.
//     Results are compared on their substance: fetch metadata (request and
//     trace ids, timestamps, latencies, cache flags, scores, and date-times or
//     random tokens inside longer text) is masked, and key and list order do
//     not matter. Polling whose result changes, a re-read after a write, and a
//     single re-read are allowed; so is an agent's first call that other
//     agents already made. A read whose calls move only counters beside one
//     free text, or only a web address's query (its id parameters aside),
//     and whose answers are alike but for what they echo of those
//     arguments, is refused at the fourth.
//   - "retry_budget" (L1): a call that has already failed with transient errors
//     (timeout, unavailable, rate_limited, or any failure of a tool declared
//     [Step.Retryable] that is not typed permanent) on [Options.RetryBudget]
//     attempts in a row, or a tool that failed transiently
//     [Options.ToolRetryBudget] times in a row whatever its arguments.
//   - "same_error" (L1): an agent's call of a tool whose last
//     [Options.ErrorStreak] calls, whatever their arguments, failed with one
//     error class (invalid_args, forbidden, conflict) and one message once its
//     echoed argument values and words with digits are masked; and an
//     agent's write to one thing (a file, a cell; its contents aside) after
//     [Options.ErrorStreak] writes there were each followed by the same call
//     failing the same way.
//   - "stale_write" (L1): a write whose version precondition on one entity
//     already conflicted [Options.StaleWriteMax] times, with no read of the
//     entity in between, whatever its payload.
//   - "short_cycle" (L2): an agent's recent calls form a cycle (A, B, A, B) in
//     which every call returned, each round, what it had returned the round
//     before; a cycle that contains a write must go round once more.
//   - "amplification" (L3): a call that widens the previous call of the same tool
//     (a number grown by [Options.WidenFactor], a string or list extended) after
//     the earlier widenings brought no new answer.
//   - "rephrase" (L3): a rewording of a question (a read whose arguments are
//     the same but for free text, such as a query) after the last
//     [Options.RephraseMax] rewordings brought the agent nothing new, the same
//     answer each time.
//   - "no_progress" (L3): an agent whose recent results brought nothing it had
//     not already seen (a hidden loop: different tools and arguments, known
//     answers); see [Options.StaleSteps].
//   - "delegation_cycle" (L3): a hand-off to an agent already on the
//     delegation stack ([Step.Chain]).
//   - "delegation" (L3): the third hand-off of the same sub-task to the same
//     agent, or of a rewording of it after two rounds that ended in the same
//     rejection.
//
// docs/LOOPS.md describes what counts as new information and as metadata, the
// text normalizer, the defaults, the figures on the loop benchmark and the
// known blind spots.
//
// [Step.Depth], [Step.Tokens] and [Step.Text] are accepted but not used by the
// current detectors: call-stack cycles and reentrancy are the call graph's to
// refuse, and a model's turns are the budget's.
//
// # Memory and cost
//
// Every table a Detector keeps is bounded (see [Options.MaxKeys],
// [Options.MaxUnits], [Options.MaxAgents]): when a table is full its older
// entries are forgotten, which can only make the detectors more lenient. With
// the defaults a Detector holds at most a few megabytes, usually a few tens of
// kilobytes. Results are scanned and hashed once, without copying; a typical
// Check plus Done (a result of about 150 bytes) takes a few microseconds on one
// core (docs/LOOPS.md, Cost) and allocates only when a new call, tool or agent
// is first seen. Results are read up to 512 pieces (lines or values) each.
package loops

import (
	"sync"
)

// Kind says what a step is. The zero value is [ToolCall].
type Kind int

// The kinds of step a [Detector] sees.
const (
	ToolCall   Kind = iota // a call of a tool
	ModelCall              // a call of the model
	Delegation             // one agent hands a sub-task to another
)

// Step is one event as the runtime sees it before dispatch.
//
// The runtime fills the exported fields; [Detector.Check] sets the unexported
// ones, and [Detector.Done] must be given the same *Step. A Step must not be
// shared by two calls in flight. The zero value is a tool call of no tool.
type Step struct {
	Kind  Kind
	Agent string // which agent made it; "" means "main"
	Depth int    // number of tool calls on the stack above this step (0 = outer agent loop)

	// Tool calls:
	Tool      string
	Args      []byte // canonical JSON of the arguments: object keys sorted, no insignificant white space, one spelling per string and number
	Access    string // "read", "write", "high_risk" or "forbidden"
	Retryable bool   // the tool may be called again with the same args after a transient error: its failures that are not known to be permanent count as transient
	// Key names the argument fields that identify the entity a write
	// changes (a keyed tool's key). If empty, arguments named like
	// identifiers (id, order_id, orderId) do.
	Key []string

	// Model calls:
	Tokens int64
	Text   string // what the model said, when known (may be empty)

	// Delegations:
	To   string // receiving agent
	Task string // sub-task text
	// Chain names the agents of the hand-offs this one descends from: the
	// agent that made the first of them, then each receiver, down to the
	// agent making this one. Empty for a hand-off made by the agent at the
	// root of the request tree.
	Chain []string

	seq   uint64 // dispatch number, set by Check; 0 means not dispatched (or already done)
	key   uint64 // tool calls: hash of tool and args; delegations: hash of receiver and task
	fold  uint64 // writes: their tool and arguments respelled (foldArgs); 0 for a read
	epoch uint64 // successful writes completed when the step was dispatched
	// writes: fold left out the ref of the element acted on (writeFold)
	unref bool
	widen bool // tool calls: this call widens the previous call of its tool
	// delegations: the turn of its agent's it was made in
	// (agentState.turns), in the room the two bools leave (a Step is in
	// every reach.Call: TestCallSizeClass)
	turn uint32
	// tool calls: the question the call asks, free text left out; 0 when
	// its arguments hold no free text
	question uint64
	// tool calls: the question's values each bound to its key (row 1
	// seat 3 is not row 3 seat 1): what is new to the agent
	asking uint64
	// tool calls: the content words of its free text (some of them, when
	// it has more than fit), sorted: what tells a rewording of the
	// question from another question asked with the same arguments
	asked  [maxAsked]uint64
	nasked uint8
	script uint8 // the scripts its free text is written in (scriptOf)
	prose  bool  // its question has free text (the words are read when needed: askedWords)
	search bool  // that free text is under a key that names a query (q, query, search): it finds things
	// writes that name a ref and describe it: their arguments with the
	// descriptions left out, the ref kept (refFold), in 32 bits where the
	// flags above leave room
	refFold uint32

	// State found by Check, so that Done need not look it up again.
	call  *callState
	agent *agentState
	tool  *toolState
}

// Outcome is what a dispatched step produced. The zero value is a success with
// an empty result.
type Outcome struct {
	Refused   bool   // the call did not run after all (a later guard refused it, or it was cancelled): forget it
	Error     bool   // the call ran and failed
	ErrorType string // "timeout","unavailable","rate_limited" (transient) or "invalid_args","not_found","forbidden","conflict", or other
	Result    []byte // the observation handed back to the model: canonical JSON (a JSON string for plain text)
}

// Verdict is a refusal. Message says what repeats (the tool and arguments, how
// many times, what the earlier results were); Suggestion says what to do
// instead. [Detector.Check] returns a new Verdict each time; the caller owns it.
type Verdict struct {
	Detector   string // short stable id: "repeat", "retry_budget", "same_error", "stale_write", "short_cycle", "amplification", "rephrase", "no_progress", "delegation_cycle", "delegation"
	Message    string
	Suggestion string
}

// Transient reports whether errorType names a transient error: one that may go
// away when the same call is tried again ("timeout", "unavailable",
// "rate_limited").
func Transient(errorType string) bool {
	switch errorType {
	case "timeout", "unavailable", "rate_limited":
		return true
	}
	return false
}

// Options configures a [Detector]. A nil *Options means all defaults; a zero
// field means its documented default; a negative count disables what it counts
// (the zero Options is the defaults). [New] copies it: changing an Options
// afterwards has no effect on the Detectors made from it.
type Options struct {
	// RepeatMax is how many identical results a call (same tool, same normalized
	// arguments) may return, with no successful write in between, before the next
	// identical call is refused ("repeat"). If zero, 2: the third call is refused.
	RepeatMax int

	// RetryBudget is how many attempts of the same call may end in a transient
	// error in a row before the next attempt is refused ("retry_budget").
	// If zero, 4: four attempts are allowed, the fifth is refused.
	RetryBudget int

	// ToolRetryBudget is how many calls of one tool, whatever their arguments, may
	// end in a transient error in a row before the next call of that tool is
	// refused ("retry_budget"). If zero, 8.
	ToolRetryBudget int

	// CyclePeriod is the longest cycle of calls that "short_cycle" looks for.
	// If zero, 8: a coding agent that undoes and redoes an edit, reading the
	// file and running the tests in each half, goes round six calls. Cycles of period 1 without a write are left to "repeat".
	CyclePeriod int

	// CycleRepeats is how many times a cycle of reads may go round, each call
	// returning what it returned the time before, with no successful write
	// in between, before the call that starts the next round is refused.
	// If zero, 2 (the same bar as RepeatMax).
	CycleRepeats int

	// WriteCycleRepeats is the same for a cycle that contains a write or
	// high-risk call with the same arguments and result each round (the writes
	// changed nothing that the cycle reads). If zero, 3.
	WriteCycleRepeats int

	// StaleSteps is how many results in a row that brought nothing new an agent
	// may receive before its next call (other than a write) is refused
	// ("no_progress"); the call is refused too when three quarters of its last
	// 2*StaleSteps results brought nothing new, the last one included, so that
	// a few small fresh lookups in between do not hide the loop. Results that
	// are errors, empty, or carry less than StaleMinBytes of text are neutral;
	// a successful write or high-risk call starts over. If zero, 4.
	StaleSteps int

	// StaleMinBytes is how many bytes of string content and numbers a result
	// must carry for it to count as stale when it brings nothing new. If zero, 24.
	StaleMinBytes int

	// DelegationMax is how many times the same sub-task (normalized text) may be
	// handed to the same agent before the next hand-off is refused ("delegation");
	// and how many rounds of handing an agent rewordings of one task may end in
	// the same rejection before the next rewording is refused (at most 8 are
	// remembered). A successful write by another agent than the receiver in
	// between starts the count over. If zero, 2: the third hand-off is refused.
	// A negative value also turns "delegation_cycle" off.
	DelegationMax int

	// ErrorStreak is how many calls of one tool in a row, whatever their
	// arguments, may fail with the same non-transient error (one class among
	// invalid_args, forbidden, conflict, and one message once the argument
	// values it echoes, its numbers and its random tokens are masked) before
	// the agent's next call of that tool is refused ("same_error"). A success
	// of the tool or a successful write starts over; not_found never counts.
	// If zero, 3.
	ErrorStreak int

	// StaleWriteMax is how many times a write with one version precondition
	// (an argument named like expected_version, base_revision,
	// resource_version, if_match, etag) on one entity may fail with a
	// conflict, with no read of that entity and no successful write in
	// between, before the next write with that precondition is refused
	// ("stale_write"), whatever its payload. If zero, 2.
	StaleWriteMax int

	// RephraseMax is how many answers in a row to rewordings of one question
	// (read calls whose arguments are the same except for free text, such
	// as a search query, whatever the tool) may bring the agent nothing new
	// before its next rewording is refused ("rephrase"). If zero, 2.
	RephraseMax int

	// AmplifyMax is how many widenings of a call in a row may bring no new answer
	// before the next widening is refused ("amplification"). If zero, 2.
	AmplifyMax int

	// WidenFactor is the least factor by which a numeric argument (or the number
	// of a string such as "30d") must grow for a call to count as a widening
	// of the previous call of the same tool. If zero (or not above 1), 1.5.
	WidenFactor float64

	// MaxKeys bounds the distinct calls (tool and arguments), tools and
	// sub-tasks remembered. If zero, 4096.
	MaxKeys int

	// MaxUnits bounds the distinct pieces of result content remembered for
	// "no_progress". If zero, 16384.
	MaxUnits int

	// MaxAgents bounds the agents remembered. If zero, 64.
	MaxAgents int
}

// Defaults.
const (
	defRepeatMax         = 2
	defRetryBudget       = 4
	defToolRetryBudget   = 8
	defCyclePeriod       = 8
	defCycleRepeats      = 2
	defWriteCycleRepeats = 3
	defStaleSteps        = 4
	defStaleMinBytes     = 24
	defDelegationMax     = 2
	defErrorStreak       = 3
	defStaleWriteMax     = 2
	defRephraseMax       = 2
	defAmplifyMax        = 2
	defWidenFactor       = 1.5
	defMaxKeys           = 4096
	defMaxUnits          = 16384
	defMaxAgents         = 64

	maxPeriodCap = 16  // CyclePeriod is capped here to bound the ring
	maxRepeatCap = 8   // CycleRepeats and WriteCycleRepeats are capped here
	unitsPerStep = 512 // result pieces examined per step
	previewLen   = 96  // bytes of a result quoted in a Message
)

// config is Options with defaults applied; a disabled count is 0.
type config struct {
	repeatMax, retryBudget, toolRetryBudget      int
	cyclePeriod, cycleRepeats, writeCycleRepeats int
	staleSteps, staleMinBytes                    int
	delegationMax, amplifyMax                    int
	errorStreak, staleWriteMax, rephraseMax      int
	widenFactor                                  float64
	maxKeys, maxUnits, maxAgents                 int
}

func pick(v, def int) int {
	switch {
	case v < 0:
		return 0
	case v == 0:
		return def
	}
	return v
}

func resolve(o *Options) config {
	if o == nil {
		o = &Options{}
	}
	c := config{
		repeatMax:         pick(o.RepeatMax, defRepeatMax),
		retryBudget:       pick(o.RetryBudget, defRetryBudget),
		toolRetryBudget:   pick(o.ToolRetryBudget, defToolRetryBudget),
		cyclePeriod:       min(pick(o.CyclePeriod, defCyclePeriod), maxPeriodCap),
		cycleRepeats:      min(pick(o.CycleRepeats, defCycleRepeats), maxRepeatCap),
		writeCycleRepeats: min(pick(o.WriteCycleRepeats, defWriteCycleRepeats), maxRepeatCap),
		staleSteps:        pick(o.StaleSteps, defStaleSteps),
		staleMinBytes:     pick(o.StaleMinBytes, defStaleMinBytes),
		delegationMax:     pick(o.DelegationMax, defDelegationMax),
		amplifyMax:        pick(o.AmplifyMax, defAmplifyMax),
		errorStreak:       pick(o.ErrorStreak, defErrorStreak),
		staleWriteMax:     pick(o.StaleWriteMax, defStaleWriteMax),
		rephraseMax:       pick(o.RephraseMax, defRephraseMax),
		widenFactor:       o.WidenFactor,
		maxKeys:           max(pick(o.MaxKeys, defMaxKeys), 16),
		maxUnits:          max(pick(o.MaxUnits, defMaxUnits), 64),
		maxAgents:         max(pick(o.MaxAgents, defMaxAgents), 2),
	}
	if c.widenFactor <= 1 {
		c.widenFactor = defWidenFactor
	}
	if c.staleMinBytes == 0 {
		c.staleMinBytes = 1
	}
	return c
}

// Detector runs the loop detectors over one request tree. Create it with [New];
// the zero value is not usable. A Detector is safe for concurrent use: the
// calls of a request's concurrent branches may Check and report Done at once.
type Detector struct {
	mu  sync.Mutex
	cfg config

	seq   uint64 // last dispatch number
	epoch uint64 // successful write or high-risk calls completed
	// writes in flight (dispatch numbers); a repeat is refused only when no write
	// dispatched after the repetition began may still be running.
	inflight     []uint64
	inflightLost int // writes in flight that did not fit in inflight
	// The run of successful writes to one target (writeTarget) that the
	// last ones were, each writing the same there: its target, and the
	// epoch before its first write.
	runTarget uint64
	runStart  uint64
	runAnswer uint64     // the last successful write's tool and answer, hashed
	edits     editStreak // writes to one thing, each followed by one failure
	flips     flipRing   // the request's last successful writes in a row (flip.go)

	calls  bounded[uint64, *callState]  // per tool and arguments
	tools  bounded[string, *toolState]  // per tool
	agents bounded[string, *agentState] // per agent
	tasks  bounded[uint64, *taskState]  // per receiver and sub-task
	seen   hashSet                      // result pieces seen, per agent

	questions bounded[uint64, *questionState] // "rephrase": per agent and question
	smallOnce bounded[uint64, uint64]         // "rephrase": the answer of a question asked once, answered small (doneRephrase)
	rounds    bounded[uint64, *rounds]        // "delegation": per delegator and receiver
	volatile  keyCache                        // result keys known to name metadata
	verdicts  uint64                          // delegation verdicts received
	conflicts []conflict                      // "stale_write": write preconditions that conflicted
	rewrite   *rewriteStreak                  // "rephrase": one write said again in other words (rewrite.go)

	obs     []byte   // scratch for one tool result as an observation (DoneTool)
	units   []leaf   // scratch for one result
	inner   []byte   // scratch: a result's JSON document unescaped from a string
	args    []leaf   // scratch for one argument list
	words   []uint64 // scratch: the content words of a question's free text
	askVals []uint64 // scratch: the bound values of a read's arguments (sameAskingWider)
	wordsOf []uint64 // scratch: those of one of its values
	numsOf  []uint64 // scratch: the numbers a verdict names
	prev    []leaf   // scratch for the previous argument list
	echoed  []byte   // scratch: a result's line with the free text it echoes cut out (maskEchoes)

	argsSmall [8]leaf // args' first backing, in the Detector's own allocation: a request's first scan of arguments allocates nothing
}

// New returns a Detector for one request tree (a root request and its
// sub-agents share one). opts may be nil; New copies it.
func New(opts *Options) *Detector {
	c := resolve(opts)
	d := &Detector{cfg: c}
	d.args = d.argsSmall[:0]
	d.calls.init(c.maxKeys)
	d.tools.init(max(c.maxKeys/8, 16))
	d.tasks.init(max(c.maxKeys/8, 16))
	d.questions.init(max(c.maxKeys/8, 16))
	d.smallOnce.init(max(c.maxKeys/64, 16))
	d.rounds.init(max(c.maxKeys/8, 16))
	d.agents.init(c.maxAgents)
	d.seen.init(c.maxUnits)
	return d
}

// Check is called before a step is dispatched, knowing only the results of
// earlier tool calls. It returns nil to allow the step, and then records it as
// dispatched (report its outcome with [Detector.Done]), or a refusal, and then
// records nothing.
func (d *Detector) Check(s *Step) *Verdict {
	if s == nil {
		return nil
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	s.seq, s.widen, s.call, s.agent, s.tool, s.nasked, s.script, s.prose, s.search = 0, false, nil, nil, nil, 0, 0, false, false
	var v *Verdict
	switch s.Kind {
	case ToolCall:
		v = d.checkTool(s)
	case Delegation:
		v = d.checkDelegation(s)
	default:
		// A model call is a turn of its agent's: the hand-offs it makes
		// before its next one are one fan-out (rounds.go).
		d.agent(s.Agent).turns++
		d.seq++
		s.seq = d.seq
	}
	return v
}

// Done reports the outcome of a step that [Detector.Check] allowed, given the
// same *Step. Outcomes may arrive out of order, and a call that runs nested
// steps completes after them. For a model call, o.Result is what the model
// said; for a delegation, the sub-agent's final verdict (both as JSON strings,
// possibly empty). Done ignores a step that Check did not allow, and a step
// reported twice.
func (d *Detector) Done(s *Step, o Outcome) {
	if s == nil {
		return
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	d.done(s, &o)
}

// done is Done with d.mu held.
func (d *Detector) done(s *Step, o *Outcome) {
	if s.seq == 0 {
		return
	}
	switch s.Kind {
	case ToolCall:
		d.doneTool(s, o)
	case Delegation:
		d.doneDelegation(s, o)
	}
	s.seq = 0
}

// retained returns how many entries d currently remembers, all tables
// together. It stays below retainedBound however many steps go through.
func (d *Detector) retained() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	n := d.calls.len() + d.tools.len() + d.agents.len() + d.tasks.len() + d.seen.len() + d.questions.len() + d.rounds.len() + len(d.conflicts)
	for _, a := range d.agents.cur {
		n += len(a.ring)
	}
	for _, a := range d.agents.old {
		n += len(a.ring)
	}
	return n + len(d.inflight)
}

// retainedBound is the largest value Retained can take under d's options.
func (d *Detector) retainedBound() int {
	c := d.cfg
	return c.maxKeys + 4*max(c.maxKeys/8, 16) + c.maxAgents*(1+ringSize(c)) + c.maxUnits + maxInflight + maxConflicts
}

func (d *Detector) agent(name string) *agentState {
	if name == "" {
		name = "main"
	}
	a, ok := d.agents.get(name)
	if !ok {
		a = &agentState{name: name, id: hashString(name), ring: make([]entry, 0, ringSize(d.cfg))}
		d.agents.put(name, a)
	}
	return a
}

const maxInflight = 64

func (d *Detector) addInflight(seq uint64) {
	if len(d.inflight) < maxInflight {
		d.inflight = append(d.inflight, seq)
	} else {
		d.inflightLost++
	}
}

func (d *Detector) removeInflight(seq uint64) {
	for i, q := range d.inflight {
		if q == seq {
			d.inflight[i] = d.inflight[len(d.inflight)-1]
			d.inflight = d.inflight[:len(d.inflight)-1]
			return
		}
	}
	if d.inflightLost > 0 {
		d.inflightLost--
	}
}

// quiet reports whether nothing may have changed the world since dispatch
// number since, which began at write epoch epoch: no write has succeeded since,
// and no write dispatched after it is still running.
func (d *Detector) quiet(since, epoch uint64) bool {
	if d.epoch != epoch || d.inflightLost > 0 {
		return false
	}
	for _, q := range d.inflight {
		if q > since {
			return false
		}
	}
	return true
}

func isWrite(access string) bool { return access == "write" || access == "high_risk" }
