package policy_test

import (
	"encoding/json"
	"fmt"

	"github.com/agentreach/reach"
	"github.com/agentreach/reach/internal/policy"
)

// Policies decide by access level, arguments and scene; approvals are
// annotations on permits.
func ExampleEngine_Evaluate() {
	set, err := policy.Parse(policy.Source{Name: "example.cedar", Text: []byte(`
@id("read") permit (principal, action, resource) when { resource.access == "read" };
@id("write") @approval("user") permit (principal, action, resource) when { resource.access == "write" };
@id("small-refunds-only") @reason("refunds over 100 need a person")
forbid (principal, action, resource == Reach::Tool::"refund")
when { context.arguments has amount && context.arguments.amount > 100 };
@id("chitchat") @reason("no writes in small talk")
forbid (principal, action, resource) when { context.scene == "chitchat" && resource.access != "read" };
`)})
	if err != nil {
		panic(err)
	}
	eng := policy.New(&policy.Options{Policies: set})
	alice := policy.Principal{ID: "alice", Roles: []string{"support"}}
	for _, in := range []policy.Input{
		{Principal: alice, Tool: "search_kb"},
		{Principal: alice, Tool: "refund", Access: reach.Write, Arguments: json.RawMessage(`{"amount": 20}`)},
		{Principal: alice, Tool: "refund", Access: reach.Write, Arguments: json.RawMessage(`{"amount": 500}`)},
		{Principal: alice, Tool: "refund", Access: reach.Write, Arguments: json.RawMessage(`{"amount": 20}`), Scene: "chitchat"},
	} {
		r := eng.Evaluate(&in)
		d := []string{"deny", "permit", "needs approval"}[r.Decision]
		if r.Approval != "" {
			d += " (" + r.Approval + ")"
		}
		if r.Reason != "" {
			d += ": " + r.Reason
		}
		fmt.Printf("%s %s scene=%q -> %s\n", in.Tool, in.Arguments, in.Scene, d)
	}
	// Output:
	// search_kb  scene="" -> permit
	// refund {"amount": 20} scene="" -> needs approval (user)
	// refund {"amount": 500} scene="" -> deny: refunds over 100 need a person
	// refund {"amount": 20} scene="chitchat" -> deny: no writes in small talk
}
