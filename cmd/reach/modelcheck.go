package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/agentreach/reach/internal/config"
	"github.com/agentreach/reach/internal/openai"
)

// modelCheckTimeout bounds validate's question to each model endpoint.
const modelCheckTimeout = 10 * time.Second

// modelWarnings asks each model endpoint of the configuration
// (model.base_url and model.fallbacks) for its list of models, GET
// BASE/models with its key, as the model proxy asks it for GET /v1/models,
// and says what a model turn would meet there: an endpoint that does not
// answer, one that refuses the configured key, or one with no such route
// at a base URL without its /v1 (a turn then gets the endpoint's 404,
// "Invalid URL (POST /chat/completions)"). Warnings, not errors: an
// endpoint may be down while reach is checked, and some serve no list.
// Nothing is charged: the list is no model call.
func modelWarnings(ctx context.Context, cfg *config.Config) []string {
	m := cfg.Model
	if m == nil {
		return nil
	}
	type endpoint struct {
		what, base string
		key        config.Secret
	}
	eps := []endpoint{{"model.base_url", m.BaseURL, m.APIKey}}
	for i, f := range m.Fallbacks {
		eps = append(eps, endpoint{fmt.Sprintf("model.fallbacks[%d].base_url", i), f.BaseURL, f.APIKey})
	}
	// The key goes to the endpoint named, never where a redirect points.
	client := &http.Client{Timeout: modelCheckTimeout, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	warnings := make([]string, len(eps))
	var wg sync.WaitGroup
	for i, ep := range eps {
		wg.Go(func() {
			warnings[i] = modelWarning(ctx, client, ep.what, ep.base, ep.key.Reveal(), cfg.Authenticates())
		})
	}
	wg.Wait()
	var out []string
	for _, w := range warnings {
		if w != "" {
			out = append(out, w)
		}
	}
	return out
}

// modelWarning is modelWarnings' question to one endpoint: "" when it
// lists its models, or when nothing can be told from its answer.
func modelWarning(ctx context.Context, client *http.Client, what, base, key string, authenticates bool) string {
	u, err := url.Parse(base)
	if err != nil {
		return "" // the configuration's load names a base URL it cannot use
	}
	u = u.JoinPath("models")
	shown := bannerURL(base)
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return ""
	}
	req.Header.Set("Accept", "application/json")
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	resp, err := client.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return ""
		}
		return fmt.Sprintf("%s %s did not answer GET models (%s): the model proxy's turns fail (502) until it does; check the URL, or start the endpoint",
			what, shown, printable(openai.RedactQuery(err.Error(), u.String())))
	}
	io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<20))
	resp.Body.Close()
	switch code := resp.StatusCode; {
	case code >= 200 && code < 300:
		return ""
	case code == http.StatusNotFound || code == http.StatusMethodNotAllowed:
		if strings.HasSuffix(strings.TrimSuffix(u.Path, "/models"), "/v1") {
			return "" // an endpoint of the API that serves no list
		}
		return fmt.Sprintf("%s %s answered %d to GET models: it is not the API's base URL, where models, chat/completions and responses are; an OpenAI-compatible one most often ends in /v1 (%s/v1), and a model turn sent to this one gets its %d",
			what, shown, code, strings.TrimSuffix(shown, "/"), code)
	case code == http.StatusUnauthorized || code == http.StatusForbidden:
		if key == "" {
			if !authenticates {
				return "" // a client's own key is passed on: none was asked here
			}
			return fmt.Sprintf("%s %s answered %d to GET models without a key: set its api_key (reach sends a client's key on only while it authenticates nobody)", what, shown, code)
		}
		return fmt.Sprintf("%s %s refused its api_key (%d to GET models): every model turn would be refused so; check the key", what, shown, code)
	case code >= 500:
		return fmt.Sprintf("%s %s answered %d to GET models: the endpoint fails now; the model proxy's turns go to a fallback, or fail, while it does", what, shown, code)
	}
	return ""
}
