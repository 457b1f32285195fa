// Package builtin is the gateway's built-in example tools: a small shop's
// support desk. They let a bare `reach serve` show reads, a write under an
// idempotency key, and a tool whose implementation calls the model (which
// calls another tool).
package builtin

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/agentreach/reach"
	"github.com/agentreach/reach/internal/openai"
)

type order struct {
	ID       string   `json:"order_id"`
	Customer string   `json:"customer"`
	Status   string   `json:"status"`
	Items    []string `json:"items"`
	Total    float64  `json:"total"`
	Refunded float64  `json:"refunded"`
}

type article struct {
	ID      string `json:"id"`
	Title   string `json:"title"`
	Snippet string `json:"snippet"`
}

var kb = []article{
	{"kb-1", "Refund policy", "Orders can be refunded within 30 days of delivery, up to the amount paid."},
	{"kb-2", "Shipping times", "Standard shipping takes 3-5 business days; express takes 1-2."},
	{"kb-3", "Damaged items", "Report damaged items within 7 days with a photo; we refund or replace them."},
	{"kb-4", "Order status", "An order is pending, shipped, delivered or cancelled; look it up by its number."},
	{"kb-5", "Changing an address", "The shipping address can be changed until the order has shipped."},
}

// shop is the examples' state.
type shop struct {
	mu      sync.Mutex
	orders  map[string]*order
	refunds map[string]float64 // idempotency key -> amount refunded
}

func newShop() *shop {
	s := &shop{orders: map[string]*order{}, refunds: map[string]float64{}}
	for _, o := range []*order{
		{ID: "1001", Customer: "Ada", Status: "delivered", Items: []string{"kettle"}, Total: 49.90},
		{ID: "1002", Customer: "Grace", Status: "shipped", Items: []string{"lamp", "bulbs"}, Total: 85.00},
		{ID: "1003", Customer: "Linus", Status: "pending", Items: []string{"keyboard"}, Total: 120.00},
		{ID: "1004", Customer: "Barbara", Status: "delivered", Items: []string{"mug", "tea"}, Total: 23.50},
	} {
		s.orders[o.ID] = o
	}
	return s
}

// modelRounds bounds the model calls of one format_answer.
const modelRounds = 3

// modelBound is how long format_answer may take: modelRounds calls of m,
// each within m's own timeout, and a little for the tools they ask for;
// zero (the runtime's default) for a model without a timeout.
func modelBound(m Model) time.Duration {
	if t, ok := m.(Timeouter); ok && t.Timeout() > 0 {
		return modelRounds*t.Timeout() + 10*time.Second
	}
	return 0
}

// Tools returns a new shop's tools; format_answer asks m, through rt.
func Tools(rt Runtime, m Model) []reach.Tool {
	s := newShop()
	return []reach.Tool{
		{
			Name:        "get_order",
			Description: "Look up an order by its number: customer, status, items, total and amount refunded.",
			InputSchema: []byte(`{"type":"object","required":["order_id"],"additionalProperties":false,` +
				`"properties":{"order_id":{"type":"string","pattern":"^[0-9]{4}$","description":"the 4-digit order number"}}}`),
			Access:     reach.Read,
			Reentrancy: reach.Reentrant,
			Tags:       []string{"orders"},
			Func: reach.Func(func(_ context.Context, in struct {
				OrderID string `json:"order_id"`
			}) (order, error) {
				s.mu.Lock()
				defer s.mu.Unlock()
				o, ok := s.orders[in.OrderID]
				if !ok {
					return order{}, &reach.ToolError{Type: "not_found", Message: fmt.Sprintf("there is no order %s (known orders are 1001-1004)", in.OrderID)}
				}
				return *o, nil
			}),
		},
		{
			Name:        "search_kb",
			Description: "Search the support knowledge base; returns matching articles with a snippet.",
			InputSchema: []byte(`{"type":"object","required":["query"],"additionalProperties":false,"properties":{` +
				`"query":{"type":"string","minLength":1},"limit":{"type":"integer","minimum":1,"maximum":10}}}`),
			Access:     reach.Read,
			Reentrancy: reach.Reentrant,
			Tags:       []string{"kb"},
			Func: reach.Func(func(_ context.Context, in struct {
				Query string `json:"query"`
				Limit int    `json:"limit"`
			}) (map[string]any, error) {
				return map[string]any{"results": searchKB(in.Query, in.Limit)}, nil
			}),
		},
		{
			Name: "format_answer",
			Description: "Format an answer for the customer as short markdown, citing the knowledge base. " +
				"It asks the model, which may search the knowledge base.",
			InputSchema: []byte(`{"type":"object","required":["text"],"additionalProperties":false,` +
				`"properties":{"text":{"type":"string","minLength":1}}}`),
			Access:     reach.Read,
			Reentrancy: reach.Reentrant,
			Tags:       []string{"kb"},
			// Its model calls are paid for: a slow or failing model is not
			// asked again as a read would be, and the model's own timeout
			// bounds each of them (modelRounds of them at most).
			Retry:   &reach.RetryPolicy{Attempts: 1},
			Timeout: modelBound(m),
			Func: reach.Func(func(ctx context.Context, in struct {
				Text string `json:"text"`
			}) (map[string]string, error) {
				msgs := []openai.Message{
					{Role: "system", Content: "Format the user's text as a short, friendly markdown answer for a customer. Cite the knowledge base where it helps."},
					{Role: "user", Content: in.Text},
				}
				text, err := runModel(ctx, rt, m, msgs, []string{"search_kb"}, modelRounds)
				if err != nil {
					return nil, err
				}
				return map[string]string{"markdown": text}, nil
			}),
		},
		{
			Name: "refund_order",
			Description: "Refund part or all of an order's total to the customer. A write: it runs once per " +
				"idempotency key, so a retried call never pays twice.",
			InputSchema: []byte(`{"type":"object","required":["order_id","amount","reason"],"additionalProperties":false,"properties":{` +
				`"order_id":{"type":"string","pattern":"^[0-9]{4}$"},"amount":{"type":"number","exclusiveMinimum":0},` +
				`"reason":{"type":"string","minLength":3}}}`),
			Access:     reach.Write,
			Idempotent: true,
			Tags:       []string{"orders"},
			Func: reach.Func(func(ctx context.Context, in struct {
				OrderID string  `json:"order_id"`
				Amount  float64 `json:"amount"`
				Reason  string  `json:"reason"`
			}) (map[string]any, error) {
				key, _ := reach.IdempotencyKey(ctx)
				s.mu.Lock()
				defer s.mu.Unlock()
				if amt, done := s.refunds[key]; done && key != "" {
					return map[string]any{"order_id": in.OrderID, "refunded": amt, "note": "already refunded under this key"}, nil
				}
				o, ok := s.orders[in.OrderID]
				if !ok {
					return nil, &reach.ToolError{Type: "not_found", Message: fmt.Sprintf("there is no order %s", in.OrderID)}
				}
				if left := o.Total - o.Refunded; in.Amount > left+1e-9 {
					return nil, &reach.ToolError{Type: "conflict", Message: fmt.Sprintf("order %s has %.2f left to refund, less than %.2f", o.ID, left, in.Amount)}
				}
				o.Refunded += in.Amount
				if key != "" {
					s.refunds[key] = in.Amount
				}
				return map[string]any{"order_id": o.ID, "refunded": in.Amount, "total_refunded": o.Refunded}, nil
			}),
		},
	}
}

// searchKB ranks articles by how many query words they contain.
func searchKB(query string, limit int) []article {
	if limit <= 0 {
		limit = 3
	}
	words := strings.Fields(strings.ToLower(query))
	type hit struct {
		a     article
		score int
	}
	var hits []hit
	for _, a := range kb {
		text := strings.ToLower(a.Title + " " + a.Snippet)
		n := 0
		for _, w := range words {
			w = strings.Trim(w, ".,?!")
			if len(w) > 3 {
				w = strings.TrimSuffix(w, "s")
			}
			if len(w) > 2 && strings.Contains(text, w) {
				n++
			}
		}
		if n > 0 {
			hits = append(hits, hit{a, n})
		}
	}
	slices.SortStableFunc(hits, func(x, y hit) int { return y.score - x.score })
	out := []article{}
	for i := 0; i < len(hits) && i < limit; i++ {
		out = append(out, hits[i].a)
	}
	return out
}
