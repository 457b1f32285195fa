package reach

import (
	"context"

	"github.com/agentreach/reach/internal/shape"
)

// shapeStage (13) shapes a successful result for the model on its way back
// from execute (internal/shape): field selection, flattening, truncation
// with a note, a one-line summary, and a note when the context budget runs
// low (R9).
func (rt *Runtime) shapeStage(next Handler) Handler {
	return func(ctx context.Context, c *Call) (*Result, error) {
		res, err := next(ctx, c)
		if err != nil || res == nil {
			return res, err
		}
		if res.Status == StatusSuccess && !res.Replayed {
			// Masked before it is cut or summed up: a cut inside a
			// secret leaves its first part before an ellipsis, neither
			// whole nor a text's end, which no mask after it finds.
			// (finishCall does not mask what was masked here again.)
			res.Data = rt.opts.Redactor.Redact(res.Data)
			s := &c.tool.Shaping
			data, note := shape.Apply(res.Data, s.Fields, s.Flatten, s.MaxBytes)
			if note != "" {
				res.Notes = append(res.Notes, note)
			}
			res.Data = data
			res.Summary = shape.Summarize(data)
			c.masked = data
		}
		if note := c.req.meter.LowContext(rt.opts.LowContext); note != "" {
			res.Notes = append(res.Notes, note)
		}
		return res, nil
	}
}

// oneLine is shape.OneLine: s on one line, cut to n bytes.
func oneLine(s string, n int) string { return shape.OneLine(s, n) }
