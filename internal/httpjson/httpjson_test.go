package httpjson_test

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/agentreach/reach/internal/httpjson"
)

func TestWrite(t *testing.T) {
	for _, c := range []struct {
		name   string
		write  func(w http.ResponseWriter)
		status int
		body   string
	}{
		{"value", func(w http.ResponseWriter) { httpjson.Write(w, http.StatusOK, map[string]any{"a": "<b>&"}) },
			http.StatusOK, `{"a":"<b>&"}` + "\n"},
		{"error", func(w http.ResponseWriter) {
			httpjson.WriteError(w, http.StatusNotFound, "not_found", "No such thing.", "Look elsewhere.")
		}, http.StatusNotFound, `{"error":{"code":"not_found","message":"No such thing.","suggestion":"Look elsewhere."}}` + "\n"},
		{"error without suggestion", func(w http.ResponseWriter) {
			httpjson.WriteError(w, http.StatusConflict, "busy", "Busy.", "")
		}, http.StatusConflict, `{"error":{"code":"busy","message":"Busy."}}` + "\n"},
		{"unencodable", func(w http.ResponseWriter) { httpjson.Write(w, http.StatusOK, map[string]any{"f": func() {}}) },
			http.StatusInternalServerError, `{"error":{"code":"internal","message":"encoding the answer failed"}}` + "\n"},
	} {
		t.Run(c.name, func(t *testing.T) {
			rec := httptest.NewRecorder()
			c.write(rec)
			if rec.Code != c.status || rec.Body.String() != c.body {
				t.Errorf("got %d %q, want %d %q", rec.Code, rec.Body.String(), c.status, c.body)
			}
			if ct, nosniff := rec.Header().Get("Content-Type"), rec.Header().Get("X-Content-Type-Options"); ct != "application/json" || nosniff != "nosniff" {
				t.Errorf("headers: Content-Type %q, X-Content-Type-Options %q", ct, nosniff)
			}
		})
	}
}
