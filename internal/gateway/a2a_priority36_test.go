package gateway

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"net/http"
	"strings"
	"testing"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2aclient"
	"github.com/a2aproject/a2a-go/v2/a2asrv"
)

// doneAgent completes each task at once.
type doneAgent struct{}

func (doneAgent) Execute(ctx context.Context, ec *a2asrv.ExecutorContext) iter.Seq2[a2a.Event, error] {
	return func(yield func(a2a.Event, error) bool) {
		if ec.StoredTask == nil && !yield(a2a.NewSubmittedTask(ec, ec.Message), nil) {
			return
		}
		yield(a2a.NewStatusUpdateEvent(ec, a2a.TaskStateCompleted, a2a.NewMessageForTask(a2a.MessageRoleAgent, ec, a2a.NewTextPart("done"))), nil)
	}
}

func (doneAgent) Cancel(ctx context.Context, ec *a2asrv.ExecutorContext) iter.Seq2[a2a.Event, error] {
	return func(yield func(a2a.Event, error) bool) {
		yield(a2a.NewStatusUpdateEvent(ec, a2a.TaskStateCanceled, nil), nil)
	}
}

// TestA2AMetaPriority (R8): an A2A message's metadata reach/priority sets
// the priority of the request reach begins for it, as MCP's _meta
// reach/priority does, through the a2a-go client: it lowers the
// principal's (1 here), never raises it, in the message's metadata or its
// request's (the message's winning), and beats Reach-Priority; a value that is not a whole number
// is a protocol error, bad_priority, with MCP's wording, and no task.
func TestA2AMetaPriority(t *testing.T) {
	g, base := a2aGateway(t, doneAgent{}, "rate_limit: {per_second: 1000, burst: 1000, priorities: {local: 1}}\n")
	c, err := a2aclient.NewFromEndpoints(t.Context(), []*a2a.AgentInterface{a2a.NewAgentInterface(base+"/a2a/executor", a2a.TransportProtocolJSONRPC)},
		a2aclient.WithJSONRPCTransport(http.DefaultClient))
	if err != nil {
		t.Fatal(err)
	}
	// A client that sends Reach-Priority: 0 with each message.
	c0, err := a2aclient.NewFromEndpoints(t.Context(), []*a2a.AgentInterface{a2a.NewAgentInterface(base+"/a2a/executor", a2a.TransportProtocolJSONRPC)},
		a2aclient.WithJSONRPCTransport(&http.Client{Transport: addHeaders{"Reach-Priority": {"0"}}}))
	if err != nil {
		t.Fatal(err)
	}
	for i, tc := range []struct {
		msg, req any  // reach/priority in the message's metadata, the request's (nil: none)
		header   bool // sent with Reach-Priority: 0
		want     int  // the request's priority
		bad      string
	}{
		{header: true, want: 0},
		{header: true, msg: 1, want: 1}, // the metadata beats the header
		{want: 1},
		{msg: 0, want: 0},
		{msg: "0", want: 0},
		{req: 0, want: 0},
		{msg: 1, req: 0, want: 1},
		{msg: 5, want: 1},
		{msg: "urgent", bad: `_meta["reach/priority"]: "urgent" is not a whole number.`},
		{msg: 1.5, bad: `_meta["reach/priority"]: 1.5 is not a whole number.`},
	} {
		id := fmt.Sprintf("prio36-a2a-%d", i)
		m := a2a.NewMessage(a2a.MessageRoleUser, a2a.NewTextPart("go"))
		m.Metadata = map[string]any{"reach/request": id}
		if tc.msg != nil {
			m.Metadata["reach/priority"] = tc.msg
		}
		req := &a2a.SendMessageRequest{Message: m}
		if tc.req != nil {
			req.Metadata = map[string]any{"reach/priority": tc.req}
		}
		cl := c
		if tc.header {
			cl = c0
		}
		res, err := cl.SendMessage(t.Context(), req)
		if tc.bad != "" {
			var ae *a2a.Error
			if !errors.As(err, &ae) || !errors.Is(err, a2a.ErrInvalidParams) || ae.Details["code"] != "bad_priority" || !strings.Contains(ae.Message, tc.bad) {
				t.Errorf("case %d, reach/priority %#v: %v (%#v); want invalid params, bad_priority, %q", i, tc.msg, err, ae, tc.bad)
			}
			continue
		}
		if err != nil {
			t.Fatalf("case %d: %v", i, err)
		}
		if tk, ok := res.(*a2a.Task); !ok || tk.Status.State != a2a.TaskStateCompleted {
			t.Fatalf("case %d: %#v; want a completed task", i, res)
		}
		got := -1
		for _, r := range g.rt.Requests() {
			if r.ID() == id {
				got = r.Priority()
			}
		}
		if got != tc.want {
			t.Errorf("case %d, reach/priority %#v in the message, %#v in the request: request %s of priority %d; want %d", i, tc.msg, tc.req, id, got, tc.want)
		}
	}
}
