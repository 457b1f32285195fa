package link

import (
	"net/http"
	"slices"
	"strings"

	"github.com/agentreach/reach"
)

// Error is a refusal to link a call (to place it in a request, under a
// frame, with a budget): the HTTP status and the structured error to
// answer with, and who reads it. Every code is declared once, as a Kind
// (Kinds lists them); a refusal of a request id the runtime gave
// (refusedID) keeps the runtime's code.
type Error struct {
	Status     int
	Code       string
	Message    string
	Suggestion string
	// Model says the model reads the error: a refusal of this call it
	// can act on (a budget it may not name, a request that is not the
	// caller's to work in or has ended), answered as a call's result is
	// (an MCP tool result with isError, an A2A task rejected, an
	// OpenAI-style error no SDK retries), nothing run. Without it the
	// error is the client's to mend (what it sent is malformed or does
	// not match, or reach could not answer in time): a protocol error
	// (JSON-RPC, A2A, HTTP) with Status, which a client may retry when
	// Status says so (429, 503).
	Model bool
	// Type is the error's class for the model (reach.Type*), when Model.
	Type string
}

func (e *Error) Error() string { return e.Message + " " + e.Suggestion }

// A Kind is one code of Error, declared once: its status, who reads it,
// and when reach gives it (docs/ERRORS.md is written from Kinds).
type Kind struct {
	Code   string
	Status int
	Model  bool   // Error.Model
	Type   string // Error.Type, when Model
	When   string // when reach gives it, one sentence
}

// New is an Error of kind k.
func (k *Kind) New(message, suggestion string) *Error {
	return &Error{Status: k.Status, Code: k.Code, Message: message, Suggestion: suggestion, Model: k.Model, Type: k.Type}
}

var kinds []*Kind

func declare(k Kind) *Kind {
	kinds = append(kinds, &k)
	return &k
}

// Kinds returns every declared kind of Error, by code.
func Kinds() []Kind {
	out := make([]Kind, 0, len(kinds))
	for _, k := range kinds {
		out = append(out, *k)
	}
	slices.SortFunc(out, func(a, b Kind) int { return strings.Compare(a.Code, b.Code) })
	return out
}

// The kinds of Error. Who reads each: the model, for a refusal of the
// call it can act on (do the step another way, in a request of its own,
// or answer with what it has); the client, for what it sent malformed or
// mismatched (ids, headers, _meta the model never wrote: an isError
// result would have the model send the same call again) and for what may
// pass in a moment (the client's to retry, as its status says).
var (
	KindBadParent = declare(Kind{Code: "bad_parent", Status: http.StatusBadRequest,
		When: "The parent frame a call names (Reach-Parent, _meta or metadata reach/parent) is not a frame id."})
	KindBadScene = declare(Kind{Code: "bad_scene", Status: http.StatusBadRequest,
		When: "The scene a call names (Reach-Scene, _meta reach/scene) has characters a scene may not."})
	KindBadPriority = declare(Kind{Code: "bad_priority", Status: http.StatusBadRequest,
		When: "The priority a call asks for (Reach-Priority, _meta reach/priority) is not a whole number."})
	KindBadBudget = declare(Kind{Code: "bad_budget", Status: http.StatusBadRequest,
		When: "An A2A message's reach/budget is neither a budget's name nor amounts."})
	KindBadRequestID = declare(Kind{Code: "bad_request_id", Status: http.StatusBadRequest,
		When: "The request id a call names is too long, not UTF-8, or has characters that are not shown."})
	KindBadRequestSpec = declare(Kind{Code: "bad_request_spec", Status: http.StatusBadRequest,
		When: "The request id or budget a call names cannot begin or join a request (a budget no one defined, amounts out of range)."})
	KindUnknownParent = declare(Kind{Code: "unknown_parent", Status: http.StatusBadRequest,
		When: "The parent frame a call names is in no request reach keeps."})
	KindParentMismatch = declare(Kind{Code: "parent_mismatch", Status: http.StatusConflict,
		When: "The parent frame a call names belongs to another request than the one it names."})
	KindBadStack = declare(Kind{Code: "bad_stack", Status: http.StatusBadGateway,
		When: "The stack of a parent frame another instance keeps could not be read from the shared store."})
	KindStoreUnavailable = declare(Kind{Code: "store_unavailable", Status: http.StatusServiceUnavailable,
		When: "The shared store did not answer where a parent frame of another instance is; nothing ran, and the same call may pass in a moment."})
	KindTooManyRequests = declare(Kind{Code: "too_many_requests", Status: http.StatusTooManyRequests,
		When: "A principal has the most requests running with calls in flight it may have; the call may pass once some end."})
	KindBudgetNotPermitted = declare(Kind{Code: "budget_not_permitted", Status: http.StatusForbidden, Model: true, Type: reach.TypePermission,
		When: "A call names a budget that lifts a limit of the default's, and its principal (or tenant) is not one the budget lists."})
	KindOtherCredentials = declare(Kind{Code: "other_credentials", Status: http.StatusForbidden, Model: true, Type: reach.TypePermission,
		When: "A call would work in a request begun under credentials of other roles or attributes (another key of the principal's, roles changed since)."})
	KindNotYourRequest = declare(Kind{Code: "not_your_request", Status: http.StatusForbidden, Model: true, Type: reach.TypePermission,
		When: "A call names a request of another principal of the same tenant."})
	KindRequestIDUnavailable = declare(Kind{Code: "request_id_unavailable", Status: http.StatusBadRequest, Model: true, Type: reach.TypePermission,
		When: "A call names a request id that is no request of the caller's and cannot begin one (another tenant's, say nothing of whose)."})
	KindRequestEnded = declare(Kind{Code: "request_ended", Status: http.StatusConflict, Model: true, Type: reach.TypeStopped,
		When: "A call names a hand-off's request that has ended; its parent request goes on."})
	KindShuttingDown = declare(Kind{Code: "shutting_down", Status: http.StatusServiceUnavailable,
		When: "A call would begin a request once the gateway has ended its requests to stop; nothing ran."})
)

// refusedID is a refusal of a request id by the runtime (an interrupted
// request's, kept by the store only) as an Error: the model's to read (its
// request will take no new work: begin another), or, when the shared
// store did not answer, the client's to retry (503). One of another
// tenant's id is 400, as UnusableID (the store's refusal); any other 409,
// the id starts no new work.
func refusedID(re *reach.Error) *Error {
	status := http.StatusConflict
	switch {
	case re.Type == reach.TypeTransient:
		return &Error{Status: http.StatusServiceUnavailable, Code: re.Code, Message: re.Message, Suggestion: re.Suggestion}
	case re.Code == KindRequestIDUnavailable.Code:
		status = http.StatusBadRequest
	}
	return &Error{Status: status, Code: re.Code, Message: re.Message, Suggestion: re.Suggestion, Model: true, Type: re.Type}
}
