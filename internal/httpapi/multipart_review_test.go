package httpapi

import (
	"bytes"
	"mime/multipart"
	"net/http"
	"net/http/httptest"
	"os"
	"testing"
)

// TestBodyDeadlineMultipartFilesRemoved: a handler behind the body's
// deadline that parses a multipart form (FormValue does) gets the request
// as a copy; the temporary files of its large parts are removed once it
// answers, as net/http removes those of the request it served, which
// never saw the copy's form.
func TestBodyDeadlineMultipartFilesRemoved(t *testing.T) {
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	s := &Server{api: &API{}, maxBody: 1 << 20}
	h := s.bodyDeadline(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if err := r.ParseMultipartForm(1 << 10); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		w.Write([]byte(r.FormValue("note")))
	}))
	srv := httptest.NewServer(h)
	defer srv.Close()
	var body bytes.Buffer
	mw := multipart.NewWriter(&body)
	mw.WriteField("note", "ok")
	fw, _ := mw.CreateFormFile("file", "big.bin")
	fw.Write(bytes.Repeat([]byte("x"), 64<<10)) // over the form's memory: a temporary file
	mw.Close()
	resp, err := http.Post(srv.URL, mw.FormDataContentType(), &body)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("status %d", resp.StatusCode)
	}
	srv.Close() // the request is finished
	if left, _ := os.ReadDir(tmp); len(left) != 0 {
		t.Errorf("%d temporary files of the parsed form left in TMPDIR (%s...)", len(left), left[0].Name())
	}
}
