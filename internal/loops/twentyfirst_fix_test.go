package loops

import (
	"fmt"
	"testing"
)

// TestJSONRPCErrorAnswer: a JSON-RPC 2.0 error response handed on as a
// successful answer is a failure, and its complaint is its error member,
// not the response's id: one signed transaction sent in other notations,
// each refused on the same nonce, is refused at the fourth try
// (same_error), where as a success each answer with its new id was news.
// A node that says it is rate-limited is worth a retry; results, and
// errors that say other things, go on.
func TestJSONRPCErrorAnswer(t *testing.T) {
	send := func(id int, tx, res string) op {
		return write("eth_sendRawTransaction", fmt.Sprintf(`{"id":%d,"jsonrpc":"2.0","method":"eth_sendRawTransaction","params":["%s"]}`, id, tx), res)
	}
	rpcErr := func(id int, msg string) string {
		return fmt.Sprintf(`{"error":{"code":-32000,"message":"%s"},"id":%d,"jsonrpc":"2.0"}`, msg, id)
	}
	nonce := "nonce too low: next nonce 43, tx nonce 42"
	runCases(t, []testCase{
		{"one transaction respelled, the same nonce", nil, []op{
			send(1, "0xf86b2a85", rpcErr(1, nonce)), send(2, "0xF86B2A85", rpcErr(2, nonce)), send(3, "f86b2a85", rpcErr(3, nonce)),
			refused(send(4, " 0xf86b2a85", rpcErr(4, nonce)), "same_error"),
		}},
		{"other transactions, other complaints", nil, []op{
			send(1, "0xf86b2a85", rpcErr(1, nonce)), send(2, "0xf86b2b85", rpcErr(2, "insufficient funds for gas * price + value")),
			send(3, "0xf86b2c85", rpcErr(3, "replacement transaction underpriced")), send(4, "0xf86b2d85", `{"id":4,"jsonrpc":"2.0","result":"0x9c1e4a7b"}`),
			send(5, "0xf86b2e85", `{"id":5,"jsonrpc":"2.0","result":"0x9c1e4a7c"}`),
		}},
		{"rate-limited, then sent", nil, []op{
			send(1, "0xf86b2a85", rpcErr(1, "too many requests, try again later")), send(1, "0xf86b2a85", rpcErr(1, "too many requests, try again later")),
			send(1, "0xf86b2a85", rpcErr(1, "too many requests, try again later")), send(1, "0xf86b2a85", `{"id":1,"jsonrpc":"2.0","result":"0x9c1e4a7b"}`),
		}},
	})
	for _, c := range []struct {
		res  string
		fail bool
	}{
		{`{"jsonrpc":"2.0","id":7,"error":{"code":-32601,"message":"Method not found"}}`, true},
		{`{"jsonrpc":"2.0","id":7,"result":null}`, false},
		{`{"jsonrpc":"2.0","id":7,"error":{"code":-32000}}`, false},
		{`{"jsonrpc":"2.0","id":7,"result":{"error":"none"},"error":null}`, false},
		{`{"id":7,"error":{"message":"no jsonrpc member"}}`, false},
	} {
		if m, _ := rpcErrorAnswer([]byte(c.res)); (m != nil) != c.fail {
			t.Errorf("rpcErrorAnswer(%s) = %q, want failed %v", c.res, m, c.fail)
		}
	}
}

// TestWriteStartedFailed: a write whose answer says what it started failed
// at once (a prediction created and failed, a robot's goal aborted: a
// status of failed or aborted beside an error) changed nothing it says;
// its complaint is that error, not the new job's id and clock. One prompt
// respelled into the same failure is refused at the fourth try
// (same_error). A read that answers a job's status of failed tells of that
// job: other jobs read, each failed alike, go on; so do writes that
// succeed, and failures that say other things.
func TestWriteStartedFailed(t *testing.T) {
	run := func(n int, prompt, status, errMsg string) op {
		e := "null"
		if errMsg != "" {
			e = `"` + errMsg + `"`
		}
		return write("run_model", `{"input":{"prompt":"`+prompt+`"}}`,
			fmt.Sprintf(`{"created_at":"2026-12-06T10:%02d:00Z","error":%s,"id":"p%04dxq","status":"%s","urls":{"get":"https://api.example/v1/predictions/p%04dxq"}}`, n, e, n*7919, status, n*7919))
	}
	oom := "GPU memory exhausted: tried to allocate 16.00 GiB"
	goal := func(n int, x, res string) op {
		return write("navigate_to_pose", fmt.Sprintf(`{"attempt":%d,"frame_id":"map","x":%s,"y":-1.5}`, n, x),
			fmt.Sprintf(`{"goal_id":"g-%d","status":"ABORTED","result":{"error_code":104,"error_msg":%q}}`, n, res))
	}
	job := func(id string) op {
		return call("get_prediction", `{"id":"`+id+`"}`, `{"id":"`+id+`","status":"failed","error":"`+oom+`","model":"sdxl"}`)
	}
	runCases(t, []testCase{
		{"one prompt respelled, the same failure", nil, []op{
			run(1, "a cozy bakery", "failed", oom), run(2, "A cozy bakery", "failed", oom), run(3, "a cosy bakery", "failed", oom),
			refused(run(4, "a cozy bakery.", "failed", oom), "same_error"),
		}},
		{"a goal aborted, its error under result", nil, []op{
			goal(1, "4.2", "no plan to (4.20, -1.50)"), goal(2, `"4.2"`, "no plan to (4.20, -1.50)"), goal(3, "4.20", "no plan to (4.20, -1.50)"),
			refused(goal(4, `"4.20"`, "no plan to (4.20, -1.50)"), "same_error"),
		}},
		{"failed jobs read one by one", nil, []op{job("j1"), job("j2"), job("j3"), job("j4"), job("j5")}},
		{"predictions that succeed", nil, []op{
			run(1, "a bakery", "succeeded", ""), run(2, "a bakery at night", "succeeded", ""), run(3, "a bakery in snow", "succeeded", ""),
			run(4, "a bakery in rain", "succeeded", ""), run(5, "a bakery at dawn", "succeeded", ""),
		}},
		{"failures that say other things", nil, []op{
			run(1, "a bakery", "failed", oom), run(2, "a bakery", "failed", "NSFW content detected"), run(3, "a bakery", "failed", "input image too small"),
			run(4, "a bakery", "failed", oom),
		}},
	})
	for _, c := range []struct {
		res  string
		fail bool
	}{
		{`{"status":"failed","error":"boom: the model crashed"}`, true},
		{`{"state":"ERROR","result":{"error_message":"disk full on the worker"}}`, true},
		{`{"status":"failed","error":null,"logs":"retrying"}`, false},
		{`{"status":"succeeded","error":"none reported here"}`, false},
		{`{"status":"queued","error_msg":"waiting for a free worker"}`, false},
	} {
		if m, _ := startFailedAnswer([]byte(c.res), nil); (m != nil) != c.fail {
			t.Errorf("startFailedAnswer(%s) = %q, want failed %v", c.res, m, c.fail)
		}
	}
}

// TestEchoedNumberString: a number written as a string ("4.2") and echoed
// by the complaint with more digits (4.20) is one value, as the number
// 4.2 echoed so is: a goal sent as 4.2, "4.2" and 4.20 and refused alike
// is one complaint, refused at the fourth try (same_error), where the
// string's echo had masked "4.2" and left a word "0" behind. Other goals
// refused for other reasons go on.
func TestEchoedNumberString(t *testing.T) {
	n := 0
	goal := func(x, y, msg string) op {
		n++ // each try numbered, so that it is no write made again word for word
		return op{tool: "navigate_to_pose", args: fmt.Sprintf(`{"attempt":%d,"x":%s,"y":%s}`, n, x, y), access: "write", err: "tool_error", res: marshalString(msg)}
	}
	occupied := "failed to create a plan: goal (4.20, -1.50) is in an occupied cell"
	runCases(t, []testCase{
		{"one goal in other notations", nil, []op{
			goal("4.2", "-1.5", occupied), goal(`"4.2"`, `"-1.5"`, occupied), goal("4.20", "-1.50", occupied),
			refused(goal(`"4.20"`, "-1.5", occupied), "same_error"),
		}},
		{"other goals, other complaints", nil, []op{
			goal("4.2", "-1.5", occupied), goal(`"5.5"`, `"2"`, "failed to create a plan: goal (5.50, 2.00) is outside the map"),
			goal(`"1"`, `"1"`, "failed to create a plan: the start is in collision"), goal("4.2", "-1.5", occupied),
		}},
	})
	for _, c := range []struct {
		s    string
		want bool
	}{{"4.2", true}, {"-1.50", true}, {"+7", true}, {"42", true}, {"4.2.1", false}, {"-", false}, {"1e5", false}, {"v1", false}} {
		if got := numericText([]byte(c.s)); got != c.want {
			t.Errorf("numericText(%q) = %v, want %v", c.s, got, c.want)
		}
	}
}

// TestMemoryAddressNoThing: where a process put an object, printed in its
// failing output (ffmpeg's [aost#0:1 @ 0x5598f4c2a1c0]), is that run's and
// names no thing: one encode re-run with its flags reordered, failing on
// the same missing encoder, is one complaint and refused at the fourth try
// (same_error). Encodes failing on other encoders name other things and
// go on.
func TestMemoryAddressNoThing(t *testing.T) {
	enc := func(cmd, encoder string, n int) op {
		out := fmt.Sprintf(`{"exit_code":8,"stderr":"[aost#0:1 @ 0x5598f4c2a%03x] Unknown encoder '%s'\nError opening output files: Encoder not found\n","stdout":""}`, 0x1c0+n*0x40, encoder)
		return write("run_command", `{"command":"`+cmd+`"}`, out)
	}
	runCases(t, []testCase{
		{"one encode, flags reordered", nil, []op{
			enc("ffmpeg -i a.mov -c:v libx264 -c:a libfdk_aac a.mp4", "libfdk_aac", 1), enc("ffmpeg -i a.mov -c:a libfdk_aac -c:v libx264 a.mp4", "libfdk_aac", 2),
			enc("ffmpeg -y -i a.mov -c:v libx264 -c:a libfdk_aac a.mp4", "libfdk_aac", 3),
			refused(enc("ffmpeg -i a.mov -vcodec libx264 -acodec libfdk_aac a.mp4", "libfdk_aac", 4), "same_error"),
		}},
		{"encoders tried one by one", nil, []op{
			enc("ffmpeg -i a.mov -c:a libfdk_aac a.mp4", "libfdk_aac", 1), enc("ffmpeg -i a.mov -c:a libopus_x a.mp4", "libopus_x", 2),
			enc("ffmpeg -i a.mov -c:a aac_at a.mp4", "aac_at", 3), enc("ffmpeg -i a.mov -c:a libmp3lame_x a.mp4", "libmp3lame_x", 4),
			enc("ffmpeg -i a.mov -c:a libvorbis_x a.mp4", "libvorbis_x", 5),
		}},
	})
	for _, c := range []struct {
		s    string
		want bool
	}{{"0x5598f4c2a1c0", true}, {"0X7FFE12AB", true}, {"0x1c0", false}, {"0x5598g4c2a1c0", false}, {"5598f4c2a1c0", false}} {
		if got := memoryAddress([]byte(c.s)); got != c.want {
			t.Errorf("memoryAddress(%q) = %v, want %v", c.s, got, c.want)
		}
	}
}

// TestEchoedPathSlashes: a path echoed by a complaint is masked with the
// slashes that join it to what is around it, so the address a server
// builds on it (https://vault/v1/ and the path) reads one way whether the
// path was written with a leading slash, a trailing one or none: one
// secret read under those spellings and denied alike is refused at the
// fourth try (same_error). Other complaints about it go on.
func TestEchoedPathSlashes(t *testing.T) {
	read := func(path, why string) op {
		url := path
		for len(url) > 0 && url[0] == '/' {
			url = url[1:]
		}
		return failingWith("vault_read", `{"path":"`+path+`"}`, "tool_error", "Error reading "+path+": URL: GET https://vault.internal:8200/v1/"+url+"\nCode: 403. Errors:\n* "+why)
	}
	runCases(t, []testCase{
		{"one path, other slashes", nil, []op{
			read("secret/data/app", "permission denied"), read("/secret/data/app", "permission denied"), read("secret/data/app/", "permission denied"),
			refused(read("secret//data/app", "permission denied"), "same_error"),
		}},
		{"one path, other complaints", nil, []op{
			read("secret/data/app", "permission denied"), read("/secret/data/app", "token expired"), read("secret/data/app/", "permission denied"),
			read("secret/data/app", "sealed vault"),
		}},
	})
	for _, c := range []struct {
		s    string
		want bool
	}{{"secret/data/app", true}, {"/a/b/", true}, {"/abc/", false}, {"a b/c", false}, {"abc", false}} {
		if got := pathLike([]byte(c.s)); got != c.want {
			t.Errorf("pathLike(%q) = %v, want %v", c.s, got, c.want)
		}
	}
}
