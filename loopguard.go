package reach

import "context"

// loopGuard (5): repetition without progress. Filled by the loop detectors.
func (rt *Runtime) loopGuard(next Handler) Handler {
	return func(ctx context.Context, c *Call) (*Result, error) {
		return next(ctx, c)
	}
}

// loopDone tells the loop guard what a call produced.
func (rt *Runtime) loopDone(c *Call, res *Result, err error) {}
