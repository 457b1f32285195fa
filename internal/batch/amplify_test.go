package batch

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/agentreach/reach/internal/records"
)

// refsTo is arguments naming ref n times: {"a":[{"$ref":ref},…]}.
func refsTo(ref string, n int) json.RawMessage {
	return json.RawMessage(`{"a":[` + strings.TrimSuffix(strings.Repeat(`{"$ref":"`+ref+`"},`, n), ",") + `]}`)
}

// TestSubstituteBounded: arguments that would pass MaxArgumentBytes once
// their $refs are replaced are refused (ref_too_large), however few bytes
// the $refs themselves take, and the data of the call they name is read
// once however often it is named: a 32 KiB result named 2,000 times in
// 28 KB of arguments was 64 MB of them, decoded from that result 2,000
// times. Arguments within the bound are replaced as before.
func TestSubstituteBounded(t *testing.T) {
	data := json.RawMessage(`{"text":"` + strings.Repeat("x", 32<<10) + `","n":7}`)
	asked := 0
	result := func(id string) (Result, bool) {
		asked++
		return Result{Data: data, Succeeded: id == "src"}, id == "src"
	}
	_, e := Substitute(refsTo("src", 2000), result)
	if e == nil || e.Code != "ref_too_large" || !strings.Contains(e.Message, fmt.Sprint(MaxArgumentBytes)) || !strings.Contains(e.Message, "nothing ran") {
		t.Fatalf("2,000 $refs to a 32 KiB result: %+v, want ref_too_large with the bound", e)
	}
	if asked != 1 {
		t.Errorf("the named call's data was asked for %d times, want once", asked)
	}
	asked = 0
	out, e := Substitute(json.RawMessage(`{"a":{"$ref":"src.n"},"b":{"$ref":"src.n"},"c":[{"$ref":"src.text"}]}`), result)
	if e != nil || asked != 1 {
		t.Fatalf("three $refs within the bound: %v (asked %d times)", e, asked)
	}
	var got struct {
		A, B int
		C    []string
	}
	if err := json.Unmarshal(out, &got); err != nil || got.A != 7 || got.B != 7 || len(got.C) != 1 || len(got.C[0]) != 32<<10 {
		t.Errorf("replaced: %.80s… (%v), want n twice and the text", out, err)
	}
	if _, e := Substitute(refsTo("src.nope", 3), result); e == nil || e.Code != "bad_ref" {
		t.Errorf("a $ref to no field: %+v, want bad_ref", e)
	}
}

// TestExecuteAddedBounded: the $refs of one envelope add at most
// MaxAddedBytes to its calls' arguments together, each call within
// MaxArgumentBytes: six calls that each name a 1 MiB result three times
// (3 MiB each, 18 in all) run five, and the sixth is refused without
// running, whichever it is of those running at once.
func TestExecuteAddedBounded(t *testing.T) {
	big := json.RawMessage(`"` + strings.Repeat("y", 1<<20) + `"`)
	calls := []Call{{ID: "src", Args: json.RawMessage(`{}`)}}
	for i := range 6 {
		calls = append(calls, Call{ID: fmt.Sprintf("c%d", i), Args: refsTo("src", 3)})
	}
	var ran atomic.Int32
	var passed atomic.Int64
	out := Execute(context.Background(), calls, func(_ context.Context, i int, args json.RawMessage) *records.Result {
		ran.Add(1)
		if i == 0 {
			return &records.Result{CallID: "src", Status: records.StatusSuccess, Data: big}
		}
		passed.Add(int64(len(args)))
		return &records.Result{CallID: calls[i].ID, Status: records.StatusSuccess, Data: json.RawMessage(`{}`)}
	})
	refused := 0
	for i, r := range out[1:] {
		switch {
		case r.Status == records.StatusSuccess:
		case r.Status == records.StatusRefused && r.Error != nil && r.Error.Code == "ref_too_large":
			refused++
		default:
			t.Errorf("%s: %+v", calls[i+1].ID, r)
		}
	}
	if refused != 1 || ran.Load() != 6 || passed.Load() > MaxAddedBytes+6*int64(len(refsTo("src", 3))) {
		t.Errorf("%d refused, %d ran, %d bytes of arguments passed; want 1 refused, src and five others run, within %d", refused, ran.Load(), passed.Load(), MaxAddedBytes)
	}
}
