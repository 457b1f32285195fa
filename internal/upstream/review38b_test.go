package upstream

import (
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/agentreach/reach"
	"github.com/agentreach/reach/internal/config"
	"github.com/agentreach/reach/internal/redact"
)

// TestReview38bStderrTailMasksASecretAcrossItsCut: the stderr lines a
// command upstream's start error quotes (it exited, or did not answer in
// time) were cut to their 256 bytes before their secrets were masked: a
// secret that the cut split was no longer found, and its first bytes,
// most of a token, went into the error, which the status, the log and a
// tool call's error carry. Masked first, then cut.
func TestReview38bStderrTailMasksASecretAcrossItsCut(t *testing.T) {
	const secret = "ghp_Zq8wLm3Xv7Tn2Rb5Kc9Yd4Hf6Js1Pa0QeUo"
	red, err := redact.New(nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := red.Add(secret); err != nil {
		t.Fatal(err)
	}
	pad := strings.Repeat("x", stderrTailLine-20)
	for name, script := range map[string]string{
		"silent": `printf '%s\n' "$PAD using $TOKEN" >&2; printf '%s' "$PAD partial $TOKEN" >&2; exec sleep 30`,
		"exited": `printf '%s\n' "$PAD using $TOKEN" >&2; printf '%s' "$PAD partial $TOKEN" >&2; exit 3`,
	} {
		life, cancel := context.WithCancel(context.Background())
		h := &host{}
		up := config.Upstream{Name: "mem", Command: []string{"sh", "-c", script},
			Env:     map[string]config.Secret{"TOKEN": secret, "PAD": config.Secret(pad)},
			Timeout: config.Duration(time.Second), Required: true}
		p, err := Connect(t.Context(), life, &Options{Config: &config.Config{Upstreams: []config.Upstream{up}},
			Runner: h, Catalog: h, Levels: h, Models: reach.New(nil), Redactor: red})
		if err == nil {
			p.Close()
			t.Fatalf("%s: a command upstream that never answers connected", name)
		}
		msg := err.Error()
		if !strings.Contains(msg, "using") || !strings.Contains(msg, "partial") {
			t.Errorf("%s: the error does not quote the stderr's last lines: %s", name, msg)
		}
		if strings.Contains(msg, secret[:8]) {
			t.Errorf("%s: the error holds the start of the secret: %s", name, msg)
		}
		h.close()
		cancel()
	}
}

// lineHandler keeps the "line" of each record, masked as the gateway's
// log handler masks each record.
type lineHandler struct {
	mask  func(string) string
	lines []string
}

func (h *lineHandler) Enabled(context.Context, slog.Level) bool { return true }
func (h *lineHandler) Handle(_ context.Context, r slog.Record) error {
	r.Attrs(func(a slog.Attr) bool {
		if a.Key == "line" {
			h.lines = append(h.lines, h.mask(a.Value.String()))
		}
		return true
	})
	return nil
}
func (h *lineHandler) WithAttrs([]slog.Attr) slog.Handler { return h }
func (h *lineHandler) WithGroup(string) slog.Handler      { return h }

// TestReview38bStderrLongLineKeepsASecretWhole: a line of stderr longer
// than 4 KiB is logged in pieces as it arrives; a piece ended where the
// pipe's read ended, which could split a secret (a server that prints its
// configuration on one line), and the log handler, masking each record,
// found neither half. The end of a piece that may begin a secret is held
// for the next one.
func TestReview38bStderrLongLineKeepsASecretWhole(t *testing.T) {
	const secret = "ghp_Zq8wLm3Xv7Tn2Rb5Kc9Yd4Hf6Js1Pa0QeUo"
	red, err := redact.New(nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := red.Add(secret); err != nil {
		t.Fatal(err)
	}
	h := &lineHandler{mask: red.RedactString}
	l := newLineLogger(slog.New(h), red)
	for _, cut := range []int{5, 12, 20, 30} {
		h.lines = nil
		l.Write([]byte(strings.Repeat("c", 5000) + ` {"token":"` + secret[:cut]))
		l.Write([]byte(secret[cut:] + `"} and more` + "\n"))
		all := strings.Join(h.lines, "\n")
		if !strings.Contains(all, "and more") || !strings.Contains(all, "[REDACTED]") {
			t.Errorf("cut at %d: logged %q, want the line with the secret masked", cut, all)
		}
		for _, part := range []string{secret[:min(cut, 8)], secret[max(cut, len(secret)-8):]} {
			if strings.Contains(all, part) {
				t.Errorf("cut at %d: the log holds %q of the secret", cut, part)
			}
		}
	}
}
