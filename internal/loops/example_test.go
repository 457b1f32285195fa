package loops_test

import (
	"fmt"

	"github.com/agentreach/reach/internal/loops"
)

// The third identical read whose two earlier results were the same is refused.
func Example() {
	d := loops.New(nil)
	for range 3 {
		s := &loops.Step{Kind: loops.ToolCall, Tool: "get_order_status", Args: []byte(`{"order_id":"A1"}`), Access: "read"}
		if v := d.Check(s); v != nil {
			fmt.Println("refused by", v.Detector)
			break
		}
		fmt.Println("dispatched")
		d.Done(s, loops.Outcome{Result: []byte(`{"status":"SHIPPED"}`)})
	}
	// Output:
	// dispatched
	// dispatched
	// refused by repeat
}

// Transient errors are retried within the budget (four attempts); the fifth
// attempt is refused.
func ExampleDetector_Done() {
	d := loops.New(nil)
	for attempt := 1; attempt <= 5; attempt++ {
		s := &loops.Step{Kind: loops.ToolCall, Tool: "get_flight", Args: []byte(`{"no":"CZ3969"}`), Access: "read", Retryable: true}
		if v := d.Check(s); v != nil {
			fmt.Println(attempt, "refused by", v.Detector)
			break
		}
		fmt.Println(attempt, "timeout")
		d.Done(s, loops.Outcome{Error: true, ErrorType: "timeout", Result: []byte(`"upstream did not answer"`)})
	}
	// Output:
	// 1 timeout
	// 2 timeout
	// 3 timeout
	// 4 timeout
	// 5 refused by retry_budget
}
