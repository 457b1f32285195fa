// Package httpjson writes the JSON answers of reach's HTTP APIs (the
// gateway's and the approval queue's): a value, or an error as
// {"error": {"code": ..., "message": ..., "suggestion": ...}}.
package httpjson

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
)

// Error is the body of every error answer, under "error".
type Error struct {
	Code       string `json:"code"`
	Message    string `json:"message"`
	Suggestion string `json:"suggestion,omitempty"`
}

// WriteError answers status with the error {"error": {code, message,
// suggestion}}; an empty suggestion is left out.
func WriteError(w http.ResponseWriter, status int, code, msg, suggestion string) {
	Write(w, status, map[string]Error{"error": {Code: code, Message: msg, Suggestion: suggestion}})
}

// Marshal encodes v as JSON without HTML escaping (a model's text keeps
// its <, > and &) and without the encoder's trailing newline.
func Marshal(v any) ([]byte, error) {
	var buf bytes.Buffer
	if err := encode(&buf, v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}

func encode(buf *bytes.Buffer, v any) error {
	enc := json.NewEncoder(buf)
	enc.SetEscapeHTML(false)
	return enc.Encode(v)
}

// Write answers status with v as JSON (without HTML escaping). If v cannot
// be encoded, the answer is a 500 with the error code "internal".
func Write(w http.ResponseWriter, status int, v any) {
	var buf bytes.Buffer
	if err := encode(&buf, v); err != nil {
		status = http.StatusInternalServerError
		buf.Reset()
		buf.WriteString(`{"error":{"code":"internal","message":"encoding the answer failed"}}` + "\n")
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(status)
	w.Write(buf.Bytes())
}

// ReadBody reads a request's body (limited by the server, see
// http.MaxBytesReader), answering 413 or 400 itself on failure.
func ReadBody(w http.ResponseWriter, r *http.Request) ([]byte, bool) {
	data, err := io.ReadAll(r.Body)
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			WriteError(w, http.StatusRequestEntityTooLarge, "body_too_large",
				fmt.Sprintf("The request body is larger than %d bytes.", mbe.Limit),
				"Send fewer or smaller calls per request, or raise max_body_bytes in the configuration.")
			return nil, false
		}
		WriteError(w, http.StatusBadRequest, "bad_body", "Reading the request body failed: "+err.Error()+".", "Send the body again.")
		return nil, false
	}
	return data, true
}
