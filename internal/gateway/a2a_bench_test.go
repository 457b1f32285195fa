package gateway

import (
	"context"
	"iter"
	"net/http"
	"slices"
	"testing"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2aclient"
	"github.com/a2aproject/a2a-go/v2/a2asrv"
)

// echoAgent completes each task at once with the message's text.
type echoAgent struct{}

func (echoAgent) Execute(ctx context.Context, ec *a2asrv.ExecutorContext) iter.Seq2[a2a.Event, error] {
	return func(yield func(a2a.Event, error) bool) {
		if ec.StoredTask == nil && !yield(a2a.NewSubmittedTask(ec, ec.Message), nil) {
			return
		}
		yield(a2a.NewStatusUpdateEvent(ec, a2a.TaskStateCompleted, a2a.NewMessageForTask(a2a.MessageRoleAgent, ec, ec.Message.Parts...)), nil)
	}
}

func (echoAgent) Cancel(ctx context.Context, ec *a2asrv.ExecutorContext) iter.Seq2[a2a.Event, error] {
	return func(yield func(a2a.Event, error) bool) {
		yield(a2a.NewStatusUpdateEvent(ec, a2a.TaskStateCanceled, nil), nil)
	}
}

// BenchmarkA2ADelegation: what a delegation through reach costs against a
// direct A2A call to the same agent, in one run: each iteration sends one
// blocking message directly and one through reach (a delegation frame in
// a new request, forwarded as a stream, its events followed to the end,
// the task audited), alternately, so both see the same machine. Reported:
// the median of each, and their ratio; as served (the store on: the
// requests are recorded durably) and without a data folder.
func BenchmarkA2ADelegation(b *testing.B) {
	b.Run("store", func(b *testing.B) { benchDelegation(b, true) })
	b.Run("no-store", func(b *testing.B) { benchDelegation(b, false) })
}

func benchDelegation(b *testing.B, stored bool) {
	g, base := a2aGatewayStore(b, echoAgent{}, "", stored)
	card := g.agents.Agents(b.Context())[0]
	if !card.Card {
		b.Fatalf("the agent's card: %s", card.Error)
	}
	client := func(url string) *a2aclient.Client {
		c, err := a2aclient.NewFromEndpoints(b.Context(), []*a2a.AgentInterface{a2a.NewAgentInterface(url, a2a.TransportProtocolJSONRPC)},
			a2aclient.WithJSONRPCTransport(&http.Client{Transport: http.DefaultTransport.(*http.Transport).Clone()}))
		if err != nil {
			b.Fatal(err)
		}
		return c
	}
	direct, via := client(g.cfg.Agents[0].URL+"/"), client(base+"/a2a/executor")
	send := func(c *a2aclient.Client) time.Duration {
		t0 := time.Now()
		res, err := c.SendMessage(b.Context(), &a2a.SendMessageRequest{Message: a2a.NewMessage(a2a.MessageRoleUser, a2a.NewTextPart("hello"))})
		d := time.Since(t0)
		if tk, ok := res.(*a2a.Task); err != nil || !ok || tk.Status.State != a2a.TaskStateCompleted {
			b.Fatalf("send: %v %v", res, err)
		}
		return d
	}
	for range 20 { // warm both paths
		send(direct)
		send(via)
	}
	var ds, vs []time.Duration
	for b.Loop() {
		ds = append(ds, send(direct))
		vs = append(vs, send(via))
	}
	med := func(s []time.Duration) float64 {
		s = slices.Clone(s)
		slices.Sort(s)
		return float64(s[len(s)/2].Microseconds())
	}
	b.ReportMetric(med(ds), "direct-µs")
	b.ReportMetric(med(vs), "reach-µs")
	b.ReportMetric(med(vs)/med(ds), "ratio")
}
