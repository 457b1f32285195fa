package batch

import (
	"context"
	"encoding/json"
	"slices"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestPlan(t *testing.T) {
	ref := func(id string) json.RawMessage { return json.RawMessage(`{"x":{"$ref":"` + id + `.v"}}`) }
	tests := []struct {
		name      string
		calls     []Call
		wantDeps  [][]int
		wantCycle []int
	}{
		{
			name:     "independent reads",
			calls:    []Call{{ID: "a"}, {ID: "b"}},
			wantDeps: [][]int{nil, nil},
		},
		{
			name:     "a $ref waits, one to itself or to no call does not",
			calls:    []Call{{ID: "a"}, {ID: "b", Args: ref("a")}, {ID: "c", Args: ref("c")}, {ID: "d", Args: ref("zz")}},
			wantDeps: [][]int{nil, {0}, nil, nil},
		},
		{
			name: "writes of one tool or one entity in envelope order",
			calls: []Call{
				{ID: "a", Write: true, Tool: "put", Entities: []string{"item:1"}},
				{ID: "b", Write: true, Tool: "set", Entities: []string{"item:1"}},
				{ID: "c", Write: true, Tool: "put", Entities: []string{"item:2"}},
				{ID: "d", Write: true, Tool: "set", Entities: []string{"item:3"}},
			},
			wantDeps: [][]int{nil, {0}, {0}, {1}},
		},
		{
			name: "a write whose entities its $ref names goes after every entity write, and before the later ones",
			calls: []Call{
				{ID: "a", Write: true, Tool: "put", Entities: []string{"item:1"}},
				{ID: "b"},
				{ID: "c", Args: ref("b"), Write: true, Tool: "set", AnyEntity: true},
				{ID: "d", Write: true, Tool: "mv", Entities: []string{"item:9"}},
			},
			wantDeps: [][]int{nil, nil, {1, 0}, {2}},
		},
		{
			name: "a forward $ref orders two writes the other way, without a false cycle",
			calls: []Call{
				{ID: "a", Args: ref("b"), Write: true, Tool: "put"},
				{ID: "b", Write: true, Tool: "put"},
			},
			wantDeps: [][]int{{1}, nil},
		},
		{
			name:      "every call on a cycle, not one waiting for it",
			calls:     []Call{{ID: "a", Args: ref("b")}, {ID: "b", Args: ref("a")}, {ID: "c", Args: ref("a")}},
			wantDeps:  [][]int{{1}, {0}, {0}},
			wantCycle: []int{0, 1},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Plan(tt.calls)
			slices.Sort(got.Cycle)
			if diff := cmp.Diff(Order{Deps: tt.wantDeps, Cycle: tt.wantCycle}, got); diff != "" {
				t.Errorf("Plan (-want +got):\n%s", diff)
			}
		})
	}
}

func TestSubstitute(t *testing.T) {
	results := map[string]Result{
		"c1": {Data: json.RawMessage(`{"order":{"id":"7","lines":[{"sku":"a"}]}}`), Succeeded: true},
		"c2": {},
	}
	lookup := func(id string) (Result, bool) { r, ok := results[id]; return r, ok }
	tests := []struct {
		args, want, code string
	}{
		{args: `{"x":1}`, want: `{"x":1}`},
		{args: `{"id":{"$ref":"c1.order.id"},"n":2}`, want: `{"id":"7","n":2}`},
		{args: `{"sku":[{"$ref":"c1.order.lines.0.sku"}]}`, want: `{"sku":["a"]}`},
		{args: `{"all":{"$ref":"c1"}}`, want: `{"all":{"order":{"id":"7","lines":[{"sku":"a"}]}}}`},
		{args: `{"x":{"$ref":"c9.id"}}`, code: "bad_ref"},
		{args: `{"x":{"$ref":"c1.order.nope"}}`, code: "bad_ref"},
		{args: `{"x":{"$ref":"c1.order.lines.5"}}`, code: "bad_ref"},
		{args: `{"x":{"$ref":"c1.order.id.more"}}`, code: "bad_ref"},
		{args: `{"x":{"$ref":"c2.id"}}`, code: "ref_failed"},
	}
	for _, tt := range tests {
		got, err := Substitute(json.RawMessage(tt.args), lookup)
		switch {
		case tt.code != "" && (err == nil || err.Code != tt.code):
			t.Errorf("Substitute(%s) = %s, %v; want %s", tt.args, got, err, tt.code)
		case tt.code == "" && (err != nil || string(got) != tt.want):
			t.Errorf("Substitute(%s) = %s, %v; want %s", tt.args, got, err, tt.want)
		}
	}
}

// TestRun: each call starts once the calls it waits for are done; skipped
// calls do not run; calls of one run are independent of each other, and
// of nothing outside it, and a run inside a call keeps the outer mark.
func TestRun(t *testing.T) {
	deps := [][]int{nil, {0}, {1}, nil}
	var mu sync.Mutex
	var ran []int
	marks := make([]*Mark, len(deps))
	Run(t.Context(), deps, func(i int) bool { return i == 3 }, func(ctx context.Context, i int) {
		mu.Lock()
		defer mu.Unlock()
		ran = append(ran, i)
		marks[i] = From(ctx)
	})
	if diff := cmp.Diff([]int{0, 1, 2}, ran); diff != "" {
		t.Errorf("ran (-want +got):\n%s", diff)
	}
	if !marks[0].Independent(marks[1]) || marks[0].Independent(marks[0]) || marks[0].Independent(nil) {
		t.Error("marks of one run: 0 and 1 must be independent, 0 not of itself nor of an unmarked call")
	}
	var inner *Mark
	Run(context.WithValue(t.Context(), markKey{}, marks[0]), [][]int{nil}, func(int) bool { return false }, func(ctx context.Context, _ int) {
		inner = From(ctx)
	})
	if !inner.Independent(marks[1]) || inner.Independent(marks[0]) {
		t.Error("a nested run's call must be independent of its outer call's siblings, and not of its outer call")
	}
}
