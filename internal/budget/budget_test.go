package budget

import (
	"math"
	"slices"
	"sync/atomic"
	"testing"
	"time"
)

func TestRemaining(t *testing.T) {
	limit := Budget{Turns: 10, Depth: 4, ToolCalls: 5, Tokens: 100, Cost: 1, Wall: time.Minute}
	got := Remaining(limit, Usage{Turns: 3, ToolCalls: 9, Tokens: 40, Cost: 0.25, Wall: 20 * time.Second, MaxDepth: 3})
	want := Budget{Turns: 7, Depth: 4, ToolCalls: 0, Tokens: 60, Cost: 0.75, Wall: 40 * time.Second}
	if got != want {
		t.Fatalf("Remaining = %+v, want %+v (an overspent dimension is 0, depth is the limit's)", got, want)
	}
	if got := Remaining(Budget{}, Usage{Turns: 3, Tokens: 9}); got != (Budget{}) {
		t.Fatalf("Remaining of no limits = %+v, want all unlimited", got)
	}
}

func TestCarve(t *testing.T) {
	limit := Budget{Turns: 20, Depth: 5, ToolCalls: 16, Tokens: 10000, Cost: 2, Wall: time.Minute}
	left := Budget{Turns: 18, Depth: 5, ToolCalls: 16, Tokens: 9984, Cost: 1, Wall: 30 * time.Second}
	got := Carve(limit, left, nil, 0.5)
	want := Budget{Turns: 9, Depth: 5, ToolCalls: 8, Tokens: 4992, Cost: 0.5, Wall: 15 * time.Second}
	if got != want {
		t.Fatalf("Carve half = %+v, want %+v", got, want)
	}
	// Explicit amounts are capped at what is left; a deeper depth is not given.
	got = Carve(limit, left, &Budget{Turns: 100, Depth: 9, ToolCalls: 2, Cost: 5}, 0.5)
	want = Budget{Turns: 18, Depth: 5, ToolCalls: 2, Tokens: 4992, Cost: 1, Wall: 15 * time.Second}
	if got != want {
		t.Fatalf("Carve explicit = %+v, want %+v", got, want)
	}
	if got := Carve(limit, left, &Budget{Depth: 2}, 1); got.Depth != 2 {
		t.Fatalf("Carve depth 2 of 5 = %d, want 2", got.Depth)
	}
	// A spent dimension is carved to 1 (never 0, which means unlimited);
	// an unlimited one stays unlimited unless explicit limits it.
	got = Carve(Budget{ToolCalls: 4, Cost: 1}, Budget{}, &Budget{Turns: 3}, 0.5)
	want = Budget{Turns: 3, ToolCalls: 1, Cost: 1e-9}
	if got != want {
		t.Fatalf("Carve of a spent parent = %+v, want %+v", got, want)
	}
	// A fraction out of (0, 1] is taken as 1.
	if got := Carve(limit, left, nil, 7); got.Turns != 18 {
		t.Fatalf("Carve fraction 7: turns = %d, want all 18 left", got.Turns)
	}
	// NaN too: it made the cost NaN (a budget no view encodes) and every
	// other dimension 1 (int64 of NaN, then the floor of 1).
	if got, want := Carve(limit, left, nil, math.NaN()), Carve(limit, left, nil, 1); got != want {
		t.Fatalf("Carve fraction NaN = %+v, want all that is left, %+v", got, want)
	}
	// A negative explicit amount (a NaN or infinite cost) is none: under
	// a parent that limits the dimension the child gets its share, under
	// one that does not it stays unlimited, never negative.
	bad := &Budget{Turns: -1, Depth: -3, ToolCalls: -5, Tokens: -7, Cost: math.NaN(), Wall: -time.Second}
	if got, want := Carve(limit, left, bad, 0.5), Carve(limit, left, nil, 0.5); got != want {
		t.Fatalf("Carve negative explicit = %+v, want the half share %+v", got, want)
	}
	for _, c := range []float64{math.NaN(), math.Inf(1), math.Inf(-1), -2} {
		bad.Cost = c
		if got := Carve(Budget{}, Budget{}, bad, 1); got != (Budget{}) {
			t.Fatalf("Carve of an unlimited parent with explicit %+v = %+v, want unlimited", *bad, got)
		}
	}
}

func TestCharge(t *testing.T) {
	p := Price{Input: 3, Output: 15}
	for _, c := range []struct {
		name          string
		in, out       int64
		cost          float64
		priced        bool
		tokens, nanos int64
	}{
		{"priced", 1000, 200, 0, true, 1200, 6_000_000},
		{"reported cost wins", 1000, 200, 0.5, true, 1200, 500_000_000},
		{"unpriced", 1000, 200, 0, false, 1200, 0},
		{"negative counts refund nothing", -500, 10, 0, true, 10, 150_000},
		{"NaN cost is priced", 1000, 0, math.NaN(), true, 1000, 3_000_000},
		{"negative cost is priced", 1000, 0, -4, true, 1000, 3_000_000},
		{"overflow spends everything", math.MaxInt64, 1, 0, false, math.MaxInt64, 0},
		{"infinite cost spends everything", 1, 1, math.Inf(1), false, 2, math.MaxInt64},
	} {
		tokens, nanos := Charge(c.in, c.out, c.cost, p, c.priced)
		if tokens != c.tokens || nanos != c.nanos {
			t.Errorf("%s: Charge = %d tokens, %d nanos; want %d, %d", c.name, tokens, nanos, c.tokens, c.nanos)
		}
	}
}

func TestAddSaturating(t *testing.T) {
	var v atomic.Int64
	if n := AddSaturating(&v, 40); n != 40 {
		t.Fatalf("AddSaturating = %d, want 40", n)
	}
	if n := AddSaturating(&v, math.MaxInt64); n != math.MaxInt64 || v.Load() != math.MaxInt64 {
		t.Fatalf("AddSaturating past the top = %d (kept %d), want MaxInt64", n, v.Load())
	}
}

func TestWord(t *testing.T) {
	for dim, want := range map[string]string{"tool_calls": "tool-call", "wall": "wall-clock", "tokens": "tokens"} {
		if got := Word(dim); got != want {
			t.Errorf("Word(%q) = %q, want %q", dim, got, want)
		}
	}
}

func TestLowContext(t *testing.T) {
	tests := []struct {
		limit, used int64
		want        string
	}{
		{0, 500, ""},
		{1000, 100, ""},
		{1000, 800, ""}, // exactly a fifth left: not low yet
		{1000, 801, "your context budget is running low: 199 of 1000 tokens left. Wrap up and answer soon."},
		{1000, 1500, "your context budget is running low: 0 of 1000 tokens left. Wrap up and answer soon."},
	}
	for _, tt := range tests {
		if got := LowContext(tt.limit, tt.used, 0.2); got != tt.want {
			t.Errorf("LowContext(%d, %d, 0.2) = %q, want %q", tt.limit, tt.used, got, tt.want)
		}
	}
}

func TestLifts(t *testing.T) {
	def := Budget{Turns: 30, Depth: 8, ToolCalls: 200, Wall: 10 * time.Minute}
	for _, tc := range []struct {
		b    Budget
		want []string
	}{
		{def, nil},
		{Budget{Turns: 30, Depth: 8, ToolCalls: 20, Tokens: 1000, Wall: time.Minute}, nil}, // lowers, and bounds tokens the default leaves open
		{Budget{Turns: 31, Depth: 8, ToolCalls: 200, Wall: 10 * time.Minute}, []string{"turns"}},
		{Budget{Turns: 30, Depth: 8, ToolCalls: 0, Wall: 0}, []string{"tool_calls", "wall"}},
		{Budget{}, []string{"turns", "depth", "tool_calls", "wall"}},
	} {
		if got := Lifts(tc.b, def); !slices.Equal(got, tc.want) {
			t.Errorf("Lifts(%+v) = %v, want %v", tc.b, got, tc.want)
		}
	}
	if got := Lifts(Budget{Cost: 2}, Budget{Cost: 1.5}); !slices.Equal(got, []string{"cost"}) {
		t.Errorf("cost 2 within 1.5: %v", got)
	}
	if got := Lifts(Budget{}, Budget{}); got != nil {
		t.Errorf("nothing within an unlimited default lifts: %v", got)
	}
}
