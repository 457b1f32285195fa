package gateway

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/agentreach/reach/internal/config"
	"github.com/agentreach/reach/internal/policy/secrets"
)

// newRedactor registers every secret of the configuration (P6): the
// secrets file's values and every upstream header and env value and the
// model's key. The runtime cleans results, errors, recorded arguments and
// events with it, the approval queue what it shows, and the log handler
// every line.
func newRedactor(c *config.Config) (*secrets.Redactor, error) {
	r := secrets.New(nil)
	var vals []string
	for _, v := range c.SecretValues() {
		if len(v) >= 4 {
			vals = append(vals, v)
		}
	}
	if err := r.Add(vals...); err != nil {
		return nil, fmt.Errorf("registering secrets: %w", err)
	}
	return r, nil
}

// redactHandler masks secrets in a log record's message and attributes.
type redactHandler struct {
	h slog.Handler
	r *secrets.Redactor
}

func (h redactHandler) Enabled(ctx context.Context, l slog.Level) bool { return h.h.Enabled(ctx, l) }

func (h redactHandler) Handle(ctx context.Context, rec slog.Record) error {
	out := slog.NewRecord(rec.Time, rec.Level, h.r.RedactString(rec.Message), rec.PC)
	rec.Attrs(func(a slog.Attr) bool {
		out.AddAttrs(h.attr(a))
		return true
	})
	return h.h.Handle(ctx, out)
}

func (h redactHandler) attr(a slog.Attr) slog.Attr {
	v := a.Value.Resolve()
	switch v.Kind() {
	case slog.KindString:
		return slog.String(a.Key, h.r.RedactString(v.String()))
	case slog.KindGroup:
		as := v.Group()
		out := make([]any, 0, len(as))
		for _, x := range as {
			out = append(out, h.attr(x))
		}
		return slog.Group(a.Key, out...)
	case slog.KindAny:
		return slog.String(a.Key, h.r.RedactString(fmt.Sprint(v.Any())))
	}
	return slog.Attr{Key: a.Key, Value: v}
}

func (h redactHandler) WithAttrs(as []slog.Attr) slog.Handler {
	out := make([]slog.Attr, len(as))
	for i, a := range as {
		out[i] = h.attr(a)
	}
	return redactHandler{h.h.WithAttrs(out), h.r}
}

func (h redactHandler) WithGroup(name string) slog.Handler {
	return redactHandler{h.h.WithGroup(name), h.r}
}
