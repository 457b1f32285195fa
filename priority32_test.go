package reach_test

import (
	"fmt"
	"math"
	"strings"
	"testing"
	"testing/synctest"

	"github.com/agentreach/reach"
)

// A priority past 32 bits keeps its sign (a request keeps it in 32 bits,
// saturated): one above 0 gets the global capacity kept for priority
// requests, one at or below 0 does not. Truncated instead, 1<<32 would be
// 0 and lose the reserve, math.MaxInt -1, and 1-1<<32 would be 1 and take
// it from those it is kept for.
func TestRateLimitPriorityPast32Bits(t *testing.T) {
	for _, c := range []struct{ bulk, urgent int }{{0, 1 << 32}, {0, math.MaxInt}, {1 - 1<<32, 1}, {math.MinInt, 1<<31 + 1}} {
		t.Run(fmt.Sprintf("bulk %d urgent %d", c.bulk, c.urgent), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				rt := reach.New(&reach.Options{RateLimit: &reach.RateLimit{PerSecond: 10, Burst: 10, Reserved: 0.3}})
				rt.MustRegister(reach.Tool{Name: "ping", Reentrancy: reach.Reentrant, Func: echo})
				bulk, _ := begin(t, rt, &reach.RequestOptions{Priority: c.bulk, Budget: &reach.Budget{}})
				urgent, _ := begin(t, rt, &reach.RequestOptions{Priority: c.urgent, Budget: &reach.Budget{}})
				n := 0
				for ; n < 20; n++ {
					if res := call(rt, bulk, "ping", fmt.Sprintf(`{"n":%d}`, n)); res.IsError() {
						if !strings.Contains(res.Error.Message, "reserved for priority") {
							t.Fatalf("bulk refusal: %s", res.ModelText())
						}
						break
					}
				}
				if n != 7 {
					t.Fatalf("bulk of priority %d got %d calls, want 7 (3 of 10 kept for priority requests)", c.bulk, n)
				}
				for i := range 3 {
					if res := call(rt, urgent, "ping", fmt.Sprintf(`{"u":%d}`, i)); res.IsError() {
						t.Fatalf("urgent call %d of priority %d refused: %s", i, c.urgent, res.ModelText())
					}
				}
			})
		})
	}
}
