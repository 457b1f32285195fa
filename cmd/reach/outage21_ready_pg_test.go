package main

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/agentreach/reach/internal/pgtest"
)

// TestOutage21ReadyTextDuringLease: after a failed heartbeat (PostgreSQL
// stopped), /readyz answers 503, and its reason says what a call meets:
// while this instance still holds its lease, that calls are admitted
// until it lapses (and when), each failing where it must write to the
// store (a read in a request begun before: checkpoint_failed, nothing
// ran); once it lapsed, that every call is refused, which the next read
// then is. Before, the first 503 said every call was refused
// store_unavailable while they were admitted (and answered otherwise). (instance_ttl is
// 20 s: the lease outlives the heartbeat that failed by some 10 s.)
func TestOutage21ReadyTextDuringLease(t *testing.T) {
	if testing.Short() {
		t.Skip("a process and a PostgreSQL cluster: skipped in -short mode")
	}
	pg := pgtest.Own(t)
	url, err := pg.CreateDatabase(context.Background(), "reach")
	if err != nil {
		t.Fatal(err)
	}
	_, upURL := sharedUpstream(t)
	addr := freeAddr(t)
	cfg := writeConfig(t, fmt.Sprintf("store: %s\ninstance: a\ninstance_ttl: 20s\nupstreams:\n  - {name: up, url: '%s'}\nbudgets:\n  default: {tool_calls: 100000, wall: 1h}\n", url, upURL))
	startReach(t, cfg, addr, t.TempDir())
	base := "http://" + addr
	awaitProbe(t, base+"/readyz", http.StatusOK)
	if r := callHTTP(t, base, "pre", "c1", "up__hop", `{"key":"pre"}`, ""); r["status"] != "success" {
		t.Fatalf("a read before the store stopped: %v", r)
	}
	if err := pg.Halt("immediate"); err != nil {
		t.Fatal(err)
	}
	halted := true
	defer func() {
		if halted {
			pg.Resume()
		}
	}()
	awaitProbe(t, base+"/readyz", http.StatusServiceUnavailable)
	_, first := readyReasons(t, base)
	// A read in a request begun before: admitted while the lease holds,
	// it fails recording its checkpoint; refused store_unavailable after.
	r := callHTTP(t, base, "pre", "c2", "up__hop", `{"key":"pre2"}`, "")
	t.Logf("/readyz: %s; a read then: %v", first, r)
	// The text before: "every call is refused store_unavailable".
	if strings.Contains(first, "refused store_unavailable until") && errCode(r) != "store_unavailable" {
		t.Fatalf("/readyz says %q, yet a call after it was admitted: %v", first, r)
	}
	if !strings.Contains(first, "admitted until its lease lapses") {
		t.Fatalf("/readyz right after the failed heartbeat: %q; want it to say calls are admitted until the lease lapses", first)
	}
	if r["status"] == "success" || !strings.Contains(fmt.Sprint(r["error"]), "Nothing ran") {
		t.Fatalf("a read while the store does not answer: %v; want it refused, nothing run", r)
	}
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(200 * time.Millisecond) {
		if _, why := readyReasons(t, base); strings.Contains(why, "the store does not answer: every call is refused") {
			break
		} else if time.Now().After(deadline) {
			t.Fatalf("/readyz a minute after the store stopped: %q; want every call refused (the lease lapsed)", why)
		}
	}
	if r := callHTTP(t, base, "pre", "c3", "up__hop", `{"key":"pre3"}`, ""); r["status"] == "success" || !strings.Contains(fmt.Sprint(r["error"]), "Nothing ran") {
		t.Fatalf("a call once /readyz says every call is refused: %v; want it refused, nothing run", r)
	}
	if err := pg.Resume(); err != nil {
		t.Fatal(err)
	}
	halted = false
	awaitProbe(t, base+"/readyz", http.StatusOK)
}
