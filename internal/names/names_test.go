package names

import (
	"slices"
	"testing"
)

func TestDistance(t *testing.T) {
	for _, tc := range []struct {
		a, b string
		want int
	}{{"", "", 0}, {"get_order", "get_ordr", 1}, {"kitten", "sitting", 3}, {"abc", "", 3}} {
		if got := Distance(tc.a, tc.b); got != tc.want {
			t.Errorf("Distance(%q, %q) = %d, want %d", tc.a, tc.b, got, tc.want)
		}
	}
}

func TestClosest(t *testing.T) {
	tools := slices.Values([]string{"get_order", "get_orders", "Get_Order_v2", "list_orders", "refund", "order"})
	got := Closest("get_ordr", tools, 3)
	if want := []string{"get_order", "get_orders"}; !slices.Equal(got, want) {
		t.Errorf("Closest(get_ordr) = %v, want %v", got, want)
	}
	if got := Closest("refund_payment", tools, 3); !slices.Equal(got, []string{"refund"}) {
		t.Errorf("Closest(refund_payment) = %v, want [refund] (it contains refund)", got)
	}
	if got := Closest("GET_ORDER_V2", tools, 1); !slices.Equal(got, []string{"Get_Order_v2"}) {
		t.Errorf("Closest(GET_ORDER_V2) = %v, want [Get_Order_v2] (case aside)", got)
	}
	if got := Closest("zzz", tools, 3); got != nil {
		t.Errorf("Closest(zzz) = %v, want none", got)
	}
}

func TestList(t *testing.T) {
	for _, tc := range []struct {
		items []string
		conj  string
		want  string
	}{
		{nil, "and", ""},
		{[]string{"2024-11-05"}, "and", "2024-11-05"},
		{[]string{"2024-11-05", "2025-03-26"}, "and", "2024-11-05 and 2025-03-26"},
		{[]string{"debug", "info", "error"}, "or", "debug, info or error"},
	} {
		if got := List(tc.items, tc.conj); got != tc.want {
			t.Errorf("List(%q, %q) = %q, want %q", tc.items, tc.conj, got, tc.want)
		}
	}
}
