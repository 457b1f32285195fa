package httpapi

import (
	"context"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentreach/reach/internal/audit"
)

// TestAuditPageVerifiesAtMostEvery30s: the audit page's check of the whole
// chain runs once however many load it at once or soon after, says how old
// it is, and runs again when it is older than verifyFor.
func TestAuditPageVerifiesAtMostEvery30s(t *testing.T) {
	var walks atomic.Int32
	clock := time.Unix(1_700_000_000, 0)
	c := &verifyCache{now: func() time.Time { return clock }, verify: func(context.Context) (*audit.Report, error) {
		walks.Add(1)
		return &audit.Report{Events: 42}, nil
	}}
	var wg sync.WaitGroup
	for range 10 {
		wg.Go(func() {
			if ok, msg := c.get(t.Context()); !ok || !strings.Contains(msg, "42 events") {
				t.Errorf("get = %v %q", ok, msg)
			}
		})
	}
	wg.Wait()
	clock = clock.Add(10 * time.Second)
	if ok, msg := c.get(t.Context()); !ok || !strings.Contains(msg, "checked 10s ago") {
		t.Errorf("10s later: %v %q, want the cached result and its age", ok, msg)
	}
	if n := walks.Load(); n != 1 {
		t.Errorf("%d walks of the chain for 11 loads within 30s, want 1", n)
	}
	clock = clock.Add(verifyFor)
	c.get(t.Context())
	if n := walks.Load(); n != 2 {
		t.Errorf("%d walks after the result grew old, want 2", n)
	}
}
