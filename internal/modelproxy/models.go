package modelproxy

import (
	"cmp"
	"context"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/agentreach/reach/internal/openai"
)

// maxModelsBody bounds the list of models passed on: a provider's list is
// tens of kilobytes.
const maxModelsBody = 8 << 20

// serveModels answers GET /v1/models and GET /v1/models/{id} with the
// configured endpoint's answer to GET models[/{id}] under its base URL: the
// OpenAI SDKs' models.list and models.retrieve, and the first thing a tool
// set to an OpenAI-compatible base URL asks (to check it, or to offer its
// models). It is no model call: nothing is charged or put in a graph. The
// endpoint is asked with its key as a turn is (model.api_key, else the
// client's Authorization when the gateway authenticates nobody), and its
// answer is passed on with the configured secrets masked.
func (p *Proxy) serveModels(w http.ResponseWriter, r *http.Request) {
	mc := p.opts.Model
	id, _ := strings.CutPrefix(strings.TrimPrefix(r.URL.Path, "/v1/models"), "/")
	u, err := url.Parse(mc.BaseURL)
	if err != nil {
		proxyError(w, http.StatusBadGateway, "api_error", "model_unreachable", "The model URL (model.base_url) is not usable: fix it in the configuration.")
		return
	}
	u = u.JoinPath("models")
	if id != "" {
		// A model's id may hold slashes (org/model), never a segment
		// that leaves models/: the endpoint's key goes with the GET.
		// Each segment is sent escaped, as the id the client named: a
		// "%2e%2e" in it (sent as %252e%252e) passed on as it is would
		// be ".." to the endpoint.
		var segs []string
		for seg := range strings.SplitSeq(id, "/") {
			if seg == "" || seg == "." || seg == ".." {
				proxyError(w, http.StatusBadRequest, "invalid_request_error", "bad_model_id", "A model's id has no empty, . or .. segment: name one that GET /v1/models lists.")
				return
			}
			segs = append(segs, url.PathEscape(seg))
		}
		u = u.JoinPath(segs...)
	}
	timeout := cmp.Or(time.Duration(mc.Timeout), 60*time.Second)
	ctx, cancel := context.WithTimeout(r.Context(), timeout)
	defer cancel()
	ureq, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		proxyError(w, http.StatusBadGateway, "api_error", "model_unreachable", "The model URL (model.base_url) is not usable: fix it in the configuration.")
		return
	}
	ureq.Header.Set("Accept", "application/json")
	if k := mc.APIKey.Reveal(); k != "" {
		ureq.Header.Set("Authorization", "Bearer "+k)
	} else if a := r.Header.Get("Authorization"); a != "" && !p.opts.Authenticates {
		ureq.Header.Set("Authorization", a)
	}
	resp, err := p.opts.Client.Do(ureq)
	if err != nil {
		if r.Context().Err() != nil {
			return // the client left
		}
		// Its query may hold the endpoint's key (as a turn's error).
		p.log.Warn("the model endpoint did not answer GET models", "err", openai.RedactQuery(err.Error(), u.String()))
		w.Header().Set("X-Should-Retry", "true")
		proxyError(w, http.StatusBadGateway, "api_error", "model_unreachable", "The model endpoint did not answer the list of models (its error is in reach's log). Try again; if it goes on, check model.base_url.")
		return
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, maxModelsBody+1))
	if err != nil || len(b) > maxModelsBody {
		proxyError(w, http.StatusBadGateway, "api_error", "model_bad_answer", "The model endpoint's list of models could not be read whole (at most 8 MiB). Try again.")
		return
	}
	w.Header().Set("Content-Type", cmp.Or(resp.Header.Get("Content-Type"), "application/json"))
	w.WriteHeader(resp.StatusCode)
	w.Write(p.redact(b))
}
