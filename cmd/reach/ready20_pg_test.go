package main

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"
)

// probe answers GET url's status and body.
func probe(t *testing.T, url string) (int, string) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, string(b)
}

// awaitProbe waits (a minute at most) until GET url answers status, and
// returns its body.
func awaitProbe(t *testing.T, url string, status int) string {
	t.Helper()
	var got int
	var body string
	for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		if got, body = probe(t, url); got == status {
			return body
		}
	}
	t.Fatalf("GET %s answers %d %s; want %d", url, got, body, status)
	return ""
}

// TestReady20StoreDown: while the PostgreSQL store is stopped, every call
// is refused store_unavailable, so /readyz answers 503 saying the store
// does not answer (with no URL nor secret), and 200 again once it is
// back; /livez stays 200 throughout (a restart does not bring a store
// back). /readyz used to answer 200 throughout.
func TestReady20StoreDown(t *testing.T) {
	if testing.Short() {
		t.Skip("two processes and a PostgreSQL cluster: skipped in -short mode")
	}
	f := newFleetWith(t, "")
	base := f.base(0)
	awaitProbe(t, base+"/readyz", http.StatusOK)
	if err := f.pg.Halt("immediate"); err != nil {
		t.Fatal(err)
	}
	halted := true
	defer func() {
		if halted {
			f.pg.Resume()
		}
	}()
	body := awaitProbe(t, base+"/readyz", http.StatusServiceUnavailable)
	var got struct {
		Status  string   `json:"status"`
		Reasons []string `json:"reasons"`
	}
	if err := json.Unmarshal([]byte(body), &got); err != nil {
		t.Fatal(err)
	}
	if got.Status != "not_ready" || !strings.Contains(strings.Join(got.Reasons, "; "), "store does not answer") {
		t.Fatalf("/readyz with the store down: %s; want not_ready, saying the store does not answer", body)
	}
	if strings.Contains(body, "postgres") || strings.Contains(body, f.pg.Addr()) {
		t.Fatalf("/readyz names the store's URL: %s", body)
	}
	if code, body := probe(t, base+"/livez"); code != http.StatusOK {
		t.Fatalf("/livez with the store down: %d %s; want 200 (a restart does not fix a store)", code, body)
	}
	if err := f.pg.Resume(); err != nil {
		t.Fatal(err)
	}
	halted = false
	awaitProbe(t, base+"/readyz", http.StatusOK)
	servesAgain(t, f, 0)
}
