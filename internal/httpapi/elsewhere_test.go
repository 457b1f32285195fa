package httpapi

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"github.com/agentreach/reach"
)

// elsewhereRemote is a shared store that holds some requests running on
// other instances.
type elsewhereRemote struct {
	on    map[string][]string
	err   error
	asked [][]string
}

func (e *elsewhereRemote) End(context.Context, string, func(string, string) bool) (bool, error) {
	return false, nil
}
func (e *elsewhereRemote) Stop(context.Context, string, reach.StopMode, string, string, func(string, string) bool) (bool, *reach.Cause, error) {
	return false, nil, nil
}
func (e *elsewhereRemote) NotYours(error) bool { return false }
func (e *elsewhereRemote) Ended(error) bool    { return false }
func (e *elsewhereRemote) RunningElsewhere(_ context.Context, ids []string) (map[string][]string, error) {
	e.asked = append(e.asked, slices.Clone(ids))
	out := map[string][]string{}
	for _, id := range ids {
		if on, ok := e.on[id]; ok {
			out[id] = on
		}
	}
	return out, e.err
}

// A request whose part here ended shows running, on the instances the
// store names, in GET /v1/requests/{id}, the list and its filter; the
// store is asked only of the requests ended here, and when it cannot say
// the views show this instance's part. The runtime's state is unchanged.
func TestViewsShowRunningElsewhere(t *testing.T) {
	rt := reach.New(nil)
	for _, id := range []string{"r-ended", "r-alone", "r-live"} {
		_, req, err := rt.Begin(t.Context(), &reach.RequestOptions{ID: id, Principal: "alice"})
		if err != nil {
			t.Fatal(err)
		}
		if id != "r-live" {
			req.End()
		}
	}
	remote := &elsewhereRemote{on: map[string][]string{"r-ended": {"gw-1"}, "r-live": {"gw-9"}}}
	a := newAPI(&Options{Runtime: rt, Tools: noTools{}, MCP: http.NotFoundHandler(), Model: http.NotFoundHandler(),
		A2A: http.NotFoundHandler(), Metrics: http.NotFoundHandler(), Remote: remote})
	get := func(path string) map[string]any {
		t.Helper()
		w := httptest.NewRecorder()
		a.handler.ServeHTTP(w, httptest.NewRequest(http.MethodGet, "http://127.0.0.1"+path, nil))
		var out map[string]any
		if w.Code != http.StatusOK || json.Unmarshal(w.Body.Bytes(), &out) != nil {
			t.Fatalf("GET %s: %d %s", path, w.Code, w.Body)
		}
		return out
	}
	got := get("/v1/requests/r-ended")
	if got["state"] != "running" || got["activity"] != "running" || strings.Join(toStrings(got["running_on"]), ",") != "gw-1" {
		t.Fatalf("r-ended shows %v (activity %v, on %v); want running on gw-1", got["state"], got["activity"], got["running_on"])
	}
	if r, _ := rt.Lookup("r-ended"); r.State() != reach.RequestCompleted {
		t.Fatalf("the runtime's state of r-ended is %s; want completed, unchanged", r.State())
	}
	if got := get("/v1/requests/r-alone"); got["state"] != "completed" || got["running_on"] != nil {
		t.Fatalf("r-alone, ended everywhere, shows %v on %v; want completed", got["state"], got["running_on"])
	}
	if got := get("/v1/requests/r-live"); got["running_on"] != nil {
		t.Fatalf("r-live, running here, shows running on %v", got["running_on"])
	}
	for _, ids := range remote.asked {
		if slices.Contains(ids, "r-live") {
			t.Fatalf("the store was asked of %v, a request running here", ids)
		}
	}
	ids := func(path string) []string {
		var out []string
		for _, r := range get(path)["requests"].([]any) {
			out = append(out, r.(map[string]any)["id"].(string))
		}
		slices.Sort(out)
		return out
	}
	if got := ids("/v1/requests?state=done"); !slices.Equal(got, []string{"r-alone"}) {
		t.Fatalf("state=done lists %v; want r-alone", got)
	}
	if got := ids("/v1/requests?state=idle"); !slices.Equal(got, []string{"r-live"}) {
		t.Fatalf("state=idle lists %v; want r-live", got)
	}
	if got := ids("/v1/requests?state=running"); !slices.Equal(got, []string{"r-ended"}) {
		t.Fatalf("state=running lists %v; want r-ended, running on gw-1", got)
	}
	remote.err = errors.New("store down")
	if got := get("/v1/requests/r-ended"); got["state"] != "completed" || got["running_on"] != nil {
		t.Fatalf("with the store down r-ended shows %v on %v; want completed, this instance's part", got["state"], got["running_on"])
	}
}

func toStrings(v any) []string {
	var out []string
	for _, s := range v.([]any) {
		out = append(out, s.(string))
	}
	return out
}
