package httpapi

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/url"

	"github.com/agentreach/reach/internal/ui"
)

// uiDeadLetters is the dead letters page's queue: it asks the API's own
// handlers (GET /v1/deadletters, POST .../retry and .../dismiss) for the
// page's sender, so that the page lists and acts on what the API would,
// with the same checks (operators only, a tenant's operator its tenant's),
// the same masking of the arguments, and the same audit of a dismissal.
type uiDeadLetters struct{ a *API }

// answer is an in-memory http.ResponseWriter: the API's answer to one
// of the page's asks.
type answer struct {
	h      http.Header
	status int
	body   bytes.Buffer
}

func (w *answer) Header() http.Header { return w.h }
func (w *answer) WriteHeader(status int) {
	if w.status == 0 {
		w.status = status
	}
}
func (w *answer) Write(p []byte) (int, error) {
	w.WriteHeader(http.StatusOK)
	return w.body.Write(p)
}

// ask runs h for r with the path's id and the body given, and decodes its
// answer into out, or returns the error message it answered.
func ask(r *http.Request, h http.HandlerFunc, id string, query url.Values, body []byte, out any) error {
	q := r.Clone(context.WithoutCancel(r.Context()))
	q.URL = &url.URL{Path: r.URL.Path, RawQuery: query.Encode()}
	q.Form, q.PostForm = nil, nil
	q.SetPathValue("id", id)
	q.Body, q.ContentLength = io.NopCloser(bytes.NewReader(body)), int64(len(body))
	q.Header = r.Header.Clone()
	q.Header.Set("Content-Type", "application/json")
	w := &answer{h: http.Header{}}
	h(w, q)
	if w.status != http.StatusOK {
		var e struct {
			Error struct{ Message, Suggestion string }
		}
		if json.Unmarshal(w.body.Bytes(), &e) != nil || e.Error.Message == "" {
			return errors.New(http.StatusText(w.status))
		}
		return errors.New(e.Error.Message)
	}
	return json.Unmarshal(w.body.Bytes(), out)
}

func (d uiDeadLetters) List(r *http.Request, state string) ([]ui.DeadLetter, error) {
	var out struct{ Deadletters []deadLetterJSON }
	if err := ask(r, d.a.listDeadLetters, "", url.Values{"state": {state}}, nil, &out); err != nil {
		return nil, err
	}
	ds := make([]ui.DeadLetter, 0, len(out.Deadletters))
	for _, j := range out.Deadletters {
		ds = append(ds, ui.DeadLetter{ID: j.ID, Request: j.Request, Tool: j.Tool, Args: string(j.Args), Error: j.Error, State: string(j.State),
			Note: j.Note, Attempts: j.Attempts, Updated: j.Updated})
	}
	return ds, nil
}

func (d uiDeadLetters) Retry(r *http.Request, id string) error {
	var out struct {
		Status     string
		Deadletter deadLetterJSON
	}
	if err := ask(r, d.a.retryDeadLetter, id, nil, nil, &out); err != nil {
		return err
	}
	if out.Status != "success" {
		return errors.New("it ran again and failed: " + out.Deadletter.Error)
	}
	return nil
}

func (d uiDeadLetters) Dismiss(r *http.Request, id, note string) error {
	body, _ := json.Marshal(map[string]string{"note": note})
	var out struct{}
	return ask(r, d.a.dismissDeadLetter, id, nil, body, &out)
}
