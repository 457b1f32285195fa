package main

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"
)

// Two `reach serve` on one PostgreSQL behind one address: a client's
// connection to instance a drops while its write runs there, and its retry
// (a new request, no key) reaches instance b. The write ran once: b
// answers the retry with the error interrupted, naming the call cut off
// on a. Before, the cut-off writes were each process's own: b ran the
// write a second time.
func TestCutOff21RetryThroughAnotherInstance(t *testing.T) {
	if testing.Short() {
		t.Skip("several processes and a PostgreSQL cluster: skipped in -short mode")
	}
	f := newFleet(t)
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		req, _ := http.NewRequestWithContext(ctx, "POST", f.base(0)+"/v1/calls",
			strings.NewReader(`{"request_id":"drop21","tool_calls":[{"call_id":"c1","tool":"up__hold","arguments":{"key":"pear"}}]}`))
		if resp, err := http.DefaultClient.Do(req); err == nil {
			resp.Body.Close()
		}
	}()
	<-f.up.started
	cancel() // the connection to a drops
	for i := 0; !strings.Contains(fmt.Sprint(getJSONTB(t, f.base(0)+"/v1/requests/drop21")["frames"]), "status:cancelled"); i++ {
		if i == 3000 {
			t.Fatal("the call whose client hung up was never ended on a")
		}
		time.Sleep(10 * time.Millisecond) // until a saw the hang-up and ended the call
	}
	r := callHTTP(t, f.base(1), "retry21", "c1", "up__hold", `{"key":"pear"}`, "")
	if errCode(r) != "interrupted" || !strings.Contains(fmt.Sprint(r["error"]), "call c1 of request drop21") {
		t.Fatalf("the retry on b: %v; want the error interrupted, naming call c1 of request drop21", r)
	}
	if n := f.up.count("hold pear"); n != 1 {
		t.Fatalf("the write ran %d times, want 1", n)
	}
}
