package loops

import (
	"fmt"
	"strings"
	"testing"
)

// TestReview27ChainAddressesAreThings: an Ethereum account or contract
// address (0x and 40 hex digits) and a transaction hash (0x and 64) name
// the thing a complaint is about, as any id does; only a memory address
// (0x and at most 16 hex digits: a machine word) is the run's own. A batch
// of transactions' receipts asked one by one, each not mined yet and
// answered alike by the same node, goes on.
func TestReview27ChainAddressesAreThings(t *testing.T) {
	receipt := func(n int) op {
		tx := "0x" + strings.Repeat(fmt.Sprintf("%02x", 0x10+n), 32)
		out := fmt.Sprintf(`{"exit_code":1,"stderr":"Error: transaction %s not found at https://rpc.example.org/v2/mainnet\n","stdout":""}`, tx)
		return write("run_command", `{"command":"cast receipt `+tx+` --rpc-url https://rpc.example.org/v2/mainnet"}`, out)
	}
	runCases(t, []testCase{
		{"receipts of other transactions", nil, []op{receipt(1), receipt(2), receipt(3), receipt(4), receipt(5)}},
	})
	for _, c := range []struct {
		s    string
		want bool
	}{
		{"0x5598f4c2a1c0", true},
		{"0x00007ffe12ab34cd", true},
		{"0x" + strings.Repeat("ab", 20), false}, // an account's address
		{"0x" + strings.Repeat("cd", 32), false}, // a transaction's hash
	} {
		if got := memoryAddress([]byte(c.s)); got != c.want {
			t.Errorf("memoryAddress(%q) = %v, want %v", c.s, got, c.want)
		}
	}
}

// TestReview27WriteOnAFailedJob: a write on a job that failed before it
// (archived, cancelled, labelled), whose answer is that job as it stands,
// its status failed and its error, did not fail: it tells of the job it
// names. A clean-up that archives failed jobs one by one, all failed
// alike, goes on, as reading them one by one does; a write that starts a
// job failing at once is still one (TestWriteStartedFailed).
func TestReview27WriteOnAFailedJob(t *testing.T) {
	oom := "GPU memory exhausted: tried to allocate 16.00 GiB"
	archive := func(id string) op {
		return write("archive_prediction", `{"id":"`+id+`"}`,
			`{"archived":true,"error":"`+oom+`","id":"`+id+`","model":"sdxl","status":"failed"}`)
	}
	cancel := func(id string) op {
		return write("cancel_job", `{"job_id":"`+id+`"}`,
			`{"job_id":"`+id+`","state":"FAILED","result":{"error_message":"`+oom+`"}}`)
	}
	runCases(t, []testCase{
		{"failed predictions archived one by one", nil, []op{archive("p1a9"), archive("p2b8"), archive("p3c7"), archive("p4d6"), archive("p5e5")}},
		{"failed jobs cancelled one by one", nil, []op{cancel("j-101"), cancel("j-102"), cancel("j-103"), cancel("j-104"), cancel("j-105")}},
	})
}

// TestReview27RPCErrorCodeNoThing: a JSON-RPC error's code (-32000) is
// the kind of error, as an HTTP status is, not a thing the complaint names:
// other transactions looked up one by one through a node, each not found,
// go on, as they do when a tool says "transaction not found" itself; a
// transaction respelled into the same nonce error is still refused
// (TestJSONRPCErrorAnswer).
func TestReview27RPCErrorCodeNoThing(t *testing.T) {
	get := func(n int) op {
		h := "0x" + strings.Repeat(fmt.Sprintf("%02x", 0x20+n), 32)
		return call("eth_rpc", fmt.Sprintf(`{"id":%d,"jsonrpc":"2.0","method":"eth_getTransactionByHash","params":["%s"]}`, n, h),
			fmt.Sprintf(`{"error":{"code":-32000,"message":"transaction not found"},"id":%d,"jsonrpc":"2.0"}`, n))
	}
	runCases(t, []testCase{{"other transactions, each not found", nil, []op{get(1), get(2), get(3), get(4), get(5)}}})
}
