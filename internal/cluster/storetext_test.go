package cluster

import (
	"bytes"
	"errors"
	"log/slog"
	"strings"
	"testing"
)

// TestStoreErrorTellsNoDriverText: the refusal of a step the shared store
// did not answer (store_unavailable, 503, which a call's result, a model
// turn's error and an A2A task carry) says what could not be done and
// what to do next; the driver's own text (its host, user, address) goes
// to the log with the request, not to the client or the model. Before,
// the refusal quoted it.
func TestStoreErrorTellsNoDriverText(t *testing.T) {
	var log bytes.Buffer
	c := &Cluster{log: slog.New(slog.NewTextHandler(&log, nil))}
	driver := errors.New(`failed to connect to host=db-7.internal user=reach_rw database=reach: dial tcp 10.9.8.7:5432: connect: connection refused`)
	e := c.storeError("Request r1 could not be begun", "r1", driver)
	told := e.Message + " " + e.Suggestion
	for _, s := range []string{"db-7.internal", "reach_rw", "10.9.8.7", "connection refused"} {
		if strings.Contains(told, s) {
			t.Errorf("the refusal %q tells the driver's %q", told, s)
		}
	}
	if e.Code != "store_unavailable" || !strings.HasPrefix(e.Message, "Request r1 could not be begun") || !strings.Contains(e.Suggestion, "Try again") {
		t.Errorf("refusal %+v: want store_unavailable saying what failed and to try again", e)
	}
	if l := log.String(); !strings.Contains(l, "level=WARN") || !strings.Contains(l, "request=r1") || !strings.Contains(l, "db-7.internal") {
		t.Errorf("log %q: want a warning with the request and the driver's error", l)
	}
}
