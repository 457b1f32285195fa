package gateway

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agentreach/reach/internal/config"
)

// TestSDKModelsThroughProxy: the openai SDK's models.list and
// models.retrieve, pointed at reach's /v1, get the model endpoint's models
// (asked with model.api_key, not the client's key), a model id with a slash
// too, and the endpoint's 404 for a model it does not have. Before, reach
// answered GET /v1/models with its own 404, "There is nothing at GET
// /v1/models", and a tool that checks its base URL so gave up on it.
func TestSDKModelsThroughProxy(t *testing.T) {
	dir, node := frameworksCacheOf(t, "openai")
	asked := make(chan string, 8)
	model := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		asked <- r.URL.Path + " " + r.Header.Get("Authorization")
		w.Header().Set("Content-Type", "application/json")
		switch r.URL.Path {
		case "/v1/models":
			io.WriteString(w, `{"object":"list","data":[{"id":"gpt-4o-mini","object":"model","created":1,"owned_by":"x"},{"id":"org/m-1","object":"model","created":1,"owned_by":"x"}]}`)
		case "/v1/models/org/m-1":
			io.WriteString(w, `{"id":"org/m-1","object":"model","created":1,"owned_by":"x"}`)
		default:
			w.WriteHeader(http.StatusNotFound)
			io.WriteString(w, `{"error":{"message":"The model does not exist","type":"invalid_request_error","code":"model_not_found"}}`)
		}
	}))
	defer model.Close()
	cfg, err := config.Parse([]byte(fmt.Sprintf("examples: true\nmodel: {base_url: '%s/v1', api_key: sk-reach}\n", model.URL)), os.LookupEnv)
	if err != nil {
		t.Fatal(err)
	}
	srv := serveTest(t, newTestGateway(t, cfg))
	src, err := os.ReadFile("testdata/frameworks/models.mjs")
	if err != nil {
		t.Fatal(err)
	}
	script := writeScript(t, dir, "reach-models", src)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, script)
	cmd.Env = append(os.Environ(), "MODEL_URL="+srv.URL+"/v1")
	b, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("models.mjs: %v\n%s", err, b)
	}
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	var r struct {
		IDs       []string `json:"ids"`
		Retrieved string   `json:"retrieved"`
		Missing   string   `json:"missing"`
		Error     string   `json:"error"`
	}
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &r); err != nil {
		t.Fatalf("models.mjs printed (%v):\n%s", err, clip(string(b), 4000))
	}
	if !slices.Equal(r.IDs, []string{"gpt-4o-mini", "org/m-1"}) || r.Retrieved != "org/m-1" || r.Missing != "404 model_not_found" || r.Error != "" {
		t.Errorf("the SDK read %+v", r)
	}
	close(asked)
	var got []string
	for a := range asked {
		got = append(got, a)
	}
	want := []string{"/v1/models Bearer sk-reach", "/v1/models/org/m-1 Bearer sk-reach", "/v1/models/nope Bearer sk-reach"}
	if !slices.Equal(got, want) {
		t.Errorf("the model endpoint was asked %q, want %q", got, want)
	}
}
