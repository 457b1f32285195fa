// Package link says where a call from a client goes (G1): which request,
// under which frame. The three front doors — MCP (internal/front), the
// calls API (internal/httpapi) and the model proxy (internal/modelproxy) —
// read a Target from what the client sent (FromMeta, FromHeaders) and
// Place the call with it; the requests the gateway begins for its clients
// are Owned, and end after an idle gap.
//
//	t, err := link.FromHeaders(r.Header)
//	ctx, req, done, err := owned.CallContext(r.Context(), t, nil)
//	defer done()
//	res := rt.Call(ctx, call)
package link

import (
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/url"
	"strconv"
	"strings"

	"github.com/agentreach/reach"
	"github.com/agentreach/reach/internal/jsonscan"
	"github.com/agentreach/reach/internal/traceparent"
)

// Keys the gateway reads from and writes to MCP _meta.
const (
	MetaRequest        = "reach/request"         // the request a call belongs to
	MetaBudget         = "reach/budget"          // a budget name or amounts, for a new request
	MetaScene          = "reach/scene"           // the conversation's scene (e.g. chitchat), for a new request
	MetaPriority       = "reach/priority"        // a new request's priority, as Reach-Priority: lowers its principal's, never raises it
	MetaWhy            = "reach/why"             // the caller's reason, recorded as Call.Why
	MetaParent         = "reach/parent"          // the parent frame id (16 hex digits)
	MetaCallID         = "reach/call_id"         // the caller's call id
	MetaIdempotencyKey = "reach/idempotency_key" // an idempotency key for the call
	MetaFrame          = "reach/frame"           // in results: the call's frame id
	MetaStatus         = "reach/status"          // in results: success, error, refused, ...
	MetaError          = "reach/error"           // in results: the structured error
	MetaFallback       = "reach/fallback"        // in results: the tool that answered in place of the one called
	MetaTraceparent    = "traceparent"
	MetaBaggage        = "baggage"
)

// Headers that link an HTTP call (the calls API, the model proxy) to a
// request and a frame, and that the answer names them by.
const (
	HeaderRequest     = "Reach-Request"
	HeaderFrame       = "Reach-Frame"
	HeaderParent      = "Reach-Parent"
	HeaderScene       = "Reach-Scene"    // the conversation's scene, for a new request
	HeaderBudget      = "Reach-Budget"   // a configured budget's name, for a new request
	HeaderPriority    = "Reach-Priority" // a new request's priority: lowers its principal's, never raises it
	HeaderTraceparent = "Traceparent"
	HeaderBaggage     = "Baggage"
)

// Target says where a call from a client goes: which request, under which
// frame. The zero Target means "the caller's default request, at its top".
type Target struct {
	Request   string        // a named request
	Parent    reach.FrameID // an explicit parent frame (Reach-Parent, reach/parent)
	Trace     reach.FrameID // the parent span of a traceparent: a frame if it is one of ours
	TraceID   [16]byte      // the traceparent's trace, which a request begun for the call continues
	ModelTurn *reach.Frame  // the model turn that chose this call (by its tool_call id), if known
	Budget    *BudgetSpec   // for a new request
	Scene     string        // for a new request: the conversation's scene
	Agent     string        // for a new request: who calls (the MCP client's name, "api", "model-proxy")
	// Priority, if not nil, is the priority a new request asks for
	// (Reach-Priority): at most its principal's (Owned.WithPriorities).
	Priority *int
}

// modelTurn returns the model turn that chose the call, when it belongs to
// the request the target names (or it names none).
func (t Target) modelTurn() *reach.Frame {
	f := t.ModelTurn
	if f == nil {
		return nil
	}
	if t.Request != "" {
		for r := f.Request; ; r = r.Parent() {
			if r == nil {
				return nil
			}
			if r.ID() == t.Request {
				break
			}
		}
	}
	return f
}

// Meta is what a tools/call's _meta says to the gateway: where the call
// goes, and the call's reason, idempotency key and id.
type Meta struct {
	Target
	Why            string
	IdempotencyKey string
	CallID         string
}

// FromMeta reads a tools/call's _meta. A malformed value is an error that
// names its key; a malformed traceparent is ignored, as W3C says.
func FromMeta(meta map[string]any) (Meta, error) {
	if len(meta) == 0 {
		return Meta{}, nil
	}
	return fromMeta(func(k string) (string, error) {
		v, ok := meta[k]
		if !ok || v == nil {
			return "", nil
		}
		s, ok := v.(string)
		if !ok {
			return "", notString(k)
		}
		return s, nil
	}, func() (*BudgetSpec, error) { return ParseBudgetSpec(meta[MetaBudget]) }, func() (*int, error) {
		switch v := meta[MetaPriority].(type) {
		case nil:
			return nil, nil
		case string:
			return priorityText(v)
		case float64: // as encoding/json reads a number into any
			return priorityNumber(v)
		case json.Number:
			f, err := v.Float64()
			if err != nil {
				return nil, badMetaPriority(v.String())
			}
			return priorityNumber(f)
		case bool:
			return nil, badMetaPriority(strconv.FormatBool(v))
		case []any:
			return nil, badMetaPriority("an array")
		default:
			return nil, badMetaPriority("an object")
		}
	})
}

// RawMeta is a tools/call's _meta as FromRawMeta reads it: the value of
// each key FromMeta reads, as JSON (nil when absent), kept by Set as a
// reader of the _meta's members finds them, without a map.
type RawMeta struct {
	request, why, idempotencyKey, callID, budget, scene, parent, traceparent, baggage, priority []byte
}

// Set keeps value, valid JSON, as the value of key (as it reads: quotes
// off, escapes decoded) when key is one FromMeta reads, and reports
// whether it is. The last of a key given twice is kept, as in the map
// encoding/json makes of the _meta.
func (r *RawMeta) Set(key, value []byte) bool {
	switch string(key) {
	case MetaRequest:
		r.request = value
	case MetaWhy:
		r.why = value
	case MetaIdempotencyKey:
		r.idempotencyKey = value
	case MetaCallID:
		r.callID = value
	case MetaBudget:
		r.budget = value
	case MetaScene:
		r.scene = value
	case MetaParent:
		r.parent = value
	case MetaTraceparent:
		r.traceparent = value
	case MetaBaggage:
		r.baggage = value
	case MetaPriority:
		r.priority = value
	default:
		return false
	}
	return true
}

// FromRawMeta is FromMeta of the map encoding/json would make of the same
// _meta (the same Meta, the same errors), read from the values r kept:
// only a string that needs decoding, a value that is not a string, and a
// budget's are decoded, so that a _meta without reach's keys costs nothing.
func FromRawMeta(r *RawMeta) (Meta, error) {
	return fromMeta(func(k string) (string, error) {
		var v []byte
		switch k {
		case MetaRequest:
			v = r.request
		case MetaWhy:
			v = r.why
		case MetaIdempotencyKey:
			v = r.idempotencyKey
		case MetaCallID:
			v = r.callID
		case MetaScene:
			v = r.scene
		case MetaParent:
			v = r.parent
		case MetaTraceparent:
			v = r.traceparent
		case MetaBaggage:
			v = r.baggage
		}
		if v == nil || string(v) == "null" {
			return "", nil
		}
		s, ok := jsonscan.Unquote(v)
		if !ok {
			return "", notString(k)
		}
		return s, nil
	}, func() (*BudgetSpec, error) {
		if r.budget == nil {
			return nil, nil
		}
		var v any // as the map holds it
		if err := json.Unmarshal(r.budget, &v); err != nil {
			return nil, fmt.Errorf("reach/budget: %v", err)
		}
		return ParseBudgetSpec(v)
	}, func() (*int, error) {
		v := r.priority
		switch {
		case v == nil || string(v) == "null":
			return nil, nil
		case v[0] == '"':
			s, ok := jsonscan.Unquote(v)
			if !ok {
				return nil, badMetaPriority(string(v))
			}
			return priorityText(s)
		case v[0] == '-' || v[0] >= '0' && v[0] <= '9':
			f, err := strconv.ParseFloat(string(v), 64)
			if err != nil && !errors.Is(err, strconv.ErrRange) {
				return nil, badMetaPriority(string(v))
			}
			return priorityNumber(f)
		case v[0] == '[':
			return nil, badMetaPriority("an array")
		case v[0] == '{':
			return nil, badMetaPriority("an object")
		default: // true or false
			return nil, badMetaPriority(string(v))
		}
	})
}

// priorityText reads a priority written as text (Reach-Priority, or a
// string in _meta reach/priority): a whole number of 32 bits.
func priorityText(v string) (*int, error) {
	p, err := strconv.ParseInt(strings.TrimSpace(v), 10, 32)
	if err != nil {
		return nil, badMetaPriority(strconv.Quote(v))
	}
	n := int(p)
	return &n, nil
}

// priorityNumber reads a priority written as a JSON number in _meta
// reach/priority: a whole one of 32 bits (1, or 1.0 as encoding/json reads
// it alike).
func priorityNumber(f float64) (*int, error) {
	if f != math.Trunc(f) || f < math.MinInt32 || f > math.MaxInt32 {
		return nil, badMetaPriority(strconv.FormatFloat(f, 'g', -1, 64))
	}
	n := int(f)
	return &n, nil
}

// badMetaPriority is the bad_priority refusal of a _meta reach/priority
// whose value, as JSON, is v.
func badMetaPriority(v string) error {
	return KindBadPriority.New(fmt.Sprintf("_meta[%q]: %s is not a whole number.", MetaPriority, v),
		"Send a whole number (0 for bulk work, 1 for urgent; never above what your principal may use), or leave the key out.")
}

// notString is the error of a _meta value of key k that must be a string.
func notString(k string) error { return fmt.Errorf("_meta[%q] must be a string", k) }

// fromMeta is FromMeta of a _meta whose string values str reads ("" for
// none; an error for a value that is not a string), whose budget spec
// budget reads, and whose priority (nil when absent) priority reads.
func fromMeta(str func(k string) (string, error), budget func() (*BudgetSpec, error), priority func() (*int, error)) (Meta, error) {
	var m Meta
	var err error
	if m.Request, err = str(MetaRequest); err != nil {
		return m, err
	}
	if m.Why, err = str(MetaWhy); err != nil {
		return m, err
	}
	if m.IdempotencyKey, err = str(MetaIdempotencyKey); err != nil {
		return m, err
	}
	if m.CallID, err = str(MetaCallID); err != nil {
		return m, err
	}
	if m.Budget, err = budget(); err != nil {
		return m, err
	}
	if m.Scene, err = str(MetaScene); err != nil {
		return m, err
	}
	if m.Priority, err = priority(); err != nil {
		return m, err
	}
	if err := CheckScene(m.Scene); err != nil {
		return m, fmt.Errorf("_meta[%q]: %v", MetaScene, err)
	}
	parent, err := str(MetaParent)
	if err != nil {
		return m, err
	}
	if parent != "" {
		if m.Parent, err = ParseFrameID(parent); err != nil {
			return m, fmt.Errorf("_meta[%q]: %v", MetaParent, err)
		}
	}
	tp, err := str(MetaTraceparent)
	if err != nil {
		return m, err
	}
	m.Trace, m.TraceID, _ = ParseTraceparent(tp) // a malformed traceparent is ignored, as W3C says
	bg, err := str(MetaBaggage)
	if err != nil {
		return m, err
	}
	if m.Request == "" {
		m.Request = BaggageRequest(bg)
	}
	if name := baggageValue(bg, "reach.budget"); name != "" && m.Budget == nil {
		m.Budget = &BudgetSpec{Name: name}
	}
	if len(m.Request) > MaxRequestID { // as CallContext would, naming where it came from
		return m, fmt.Errorf("_meta[%q] is longer than %d characters", MetaRequest, MaxRequestID)
	}
	if err := reach.CheckCallNames(m.CallID, m.IdempotencyKey, m.Why, func(f string) string {
		return fmt.Sprintf("_meta[%q]", map[string]string{"call_id": MetaCallID, "idempotency_key": MetaIdempotencyKey, "why": MetaWhy}[f])
	}); err != nil {
		return m, err
	}
	return m, nil
}

// Headers are the headers of a request as FromHeaders reads them
// (http.Header has them; the HTTP server's fast lane gives its own).
type Headers interface {
	Get(key string) string
	Values(key string) []string
}

// FromHeaders reads Reach-Parent, Reach-Scene, Reach-Request, Reach-Budget,
// traceparent and baggage (reach.request, reach.budget). A header it
// refuses is an *Error that says which.
func FromHeaders(h Headers) (Target, error) {
	var t Target
	if p := strings.TrimSpace(h.Get(HeaderParent)); p != "" {
		id, err := ParseFrameID(p)
		if err != nil {
			return t, KindBadParent.New(upperFirst(fmt.Sprintf("%s: %v.", HeaderParent, err)),
				"Send the 16-hex-digit id of a frame, or omit the header.")
		}
		t.Parent = id
	}
	t.Trace, t.TraceID, _ = ParseTraceparent(h.Get(HeaderTraceparent))
	var err error
	if t.Scene, err = SceneFromHeaders(h); err != nil {
		return t, err
	}
	if id := strings.TrimSpace(h.Get(HeaderRequest)); id != "" {
		t.Request = id
	}
	budget := strings.TrimSpace(h.Get(HeaderBudget))
	for _, b := range h.Values(HeaderBaggage) {
		if id := BaggageRequest(b); id != "" {
			t.Request = id
		}
		if name := baggageValue(b, "reach.budget"); name != "" && budget == "" {
			budget = name
		}
	}
	if budget != "" {
		t.Budget = &BudgetSpec{Name: budget}
	}
	t.Priority, err = PriorityFromHeaders(h)
	return t, err
}

// PriorityFromHeaders reads Reach-Priority alone (as FromHeaders does):
// nil when the header is absent, an *Error when it is not a whole number
// (of 32 bits: a request keeps its priority in them).
func PriorityFromHeaders(h Headers) (*int, error) {
	v := strings.TrimSpace(h.Get(HeaderPriority))
	if v == "" {
		return nil, nil
	}
	p, err := strconv.ParseInt(v, 10, 32)
	if err != nil {
		return nil, KindBadPriority.New(fmt.Sprintf("%s: %q is not a whole number.", HeaderPriority, v),
			"Send a whole number (0 for bulk work, 1 for urgent; never above what your principal may use), or omit the header.")
	}
	n := int(p)
	return &n, nil
}

// SceneFromHeaders reads Reach-Scene alone (as FromHeaders does), for a
// front whose call's _meta links it but names no scene: "" when the header
// is absent, an *Error when it is malformed.
func SceneFromHeaders(h Headers) (string, error) {
	scene := strings.TrimSpace(h.Get(HeaderScene))
	if err := CheckScene(scene); err != nil {
		return "", KindBadScene.New(upperFirst(fmt.Sprintf("%s: %v.", HeaderScene, err)),
			"Name the scene with letters, digits, '_', '-' or '.' (chitchat, say), or omit the header.")
	}
	return scene, nil
}

func upperFirst(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}

// CheckScene checks a scene a client names: a short word, as policies
// compare it (context.scene == "chitchat").
func CheckScene(s string) error {
	if len(s) > 64 {
		return errors.New("a scene is at most 64 characters")
	}
	for _, c := range s {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-' || c == '.') {
			return fmt.Errorf("scene %q: use letters, digits, '_', '-' or '.'", s)
		}
	}
	return nil
}

// ParseFrameID reads 16 hex digits, not all zero.
func ParseFrameID(s string) (reach.FrameID, error) {
	if len(s) != 16 {
		return 0, fmt.Errorf("%q is not a frame id (16 hex digits)", s)
	}
	id, err := reach.ParseFrameID(s)
	if err != nil || id == 0 {
		return 0, fmt.Errorf("%q is not a frame id (16 hex digits, not all zero)", s)
	}
	return id, nil
}

// ParseTraceparent returns the parent span id and the trace id of a W3C
// traceparent ("00-<32 hex trace id>-<16 hex parent id>-<2 hex flags>").
func ParseTraceparent(s string) (reach.FrameID, [16]byte, bool) {
	var trace [16]byte
	s = strings.TrimSpace(s)
	if len(s) < 55 || s[2] != '-' || s[35] != '-' || s[52] != '-' || s[:2] == "ff" {
		return 0, trace, false
	}
	if !isHex(s[:2]) || !isHex(s[3:35]) || !isHex(s[53:55]) || strings.Trim(s[3:35], "0") == "" {
		return 0, trace, false
	}
	if s[:2] == "00" && len(s) != 55 {
		return 0, trace, false
	}
	id, err := ParseFrameID(s[36:52])
	if err != nil {
		return 0, trace, false
	}
	hex.Decode(trace[:], []byte(s[3:35])) // checked above
	return id, trace, true
}

func isHex(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return true
}

// BaggageRequest returns the reach.request entry of a W3C baggage header.
func BaggageRequest(s string) string { return baggageValue(s, "reach.request") }

// baggageValue returns the entry key of a W3C baggage header.
func baggageValue(s, key string) string {
	for member := range strings.SplitSeq(s, ",") { // no slice of the members
		kv, _, _ := strings.Cut(member, ";")
		k, v, ok := strings.Cut(kv, "=")
		if !ok || strings.TrimSpace(k) != key {
			continue
		}
		v, err := url.PathUnescape(strings.TrimSpace(v))
		if err != nil {
			return ""
		}
		return v
	}
	return ""
}

// Traceparent renders a W3C traceparent whose parent span id is frame f,
// in the request tree's trace (the one its spans are exported in).
func Traceparent(r *reach.Request, f reach.FrameID) string {
	return traceparent.String(r.Trace(), uint64(f))
}

// FrameMeta returns the _meta that links what a call sends on (an upstream
// tool call, a sampling request) to its frame f: traceparent, reach/parent
// and reach/request, added to m (made if nil).
func FrameMeta(m map[string]any, f *reach.Frame) map[string]any {
	if m == nil {
		m = map[string]any{}
	}
	tp, parent, request := FrameLink(f)
	m[MetaTraceparent] = tp
	m[MetaParent] = parent
	m[MetaRequest] = request
	return m
}

// FrameLink returns the values of FrameMeta's keys for frame f: its
// traceparent, its id (inside the traceparent, without a copy of its own)
// and its request's id.
func FrameLink(f *reach.Frame) (traceparent, parent, request string) {
	tp := Traceparent(f.Request, f.ID)
	return tp, tp[36:52], f.Request.ID()
}
