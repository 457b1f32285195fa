package records

import (
	"crypto/sha256"
	"encoding/hex"

	"github.com/agentreach/reach/internal/fault"
	"github.com/agentreach/reach/internal/frames"
)

// Settle is the outcome of a call that went down the chain: the Result its
// caller gets (a refusal err becomes one, refused or cancelled) and the
// state its frame ends in.
func Settle(res *Result, err error) (*Result, frames.State) {
	if err != nil {
		e := fault.As(err)
		if e.Is(fault.ErrCancelled) {
			return &Result{Status: StatusCancelled, Error: e}, frames.Cancelled
		}
		return &Result{Status: StatusRefused, Error: e}, frames.Refused
	}
	switch res.Status {
	case StatusSuccess:
		return res, frames.Completed
	case StatusPending:
		return res, frames.AwaitingApproval
	case StatusCancelled:
		return res, frames.Cancelled
	}
	return res, frames.Failed
}

// Ended returns the checkpoint c of a call that ended so (res, or err, a
// refusal): in its final state, with its error, or with the digest of a
// result that succeeded.
func (c Checkpoint) Ended(res *Result, err error) *Checkpoint {
	c.End(res, err)
	return &c
}

// End makes c, a copy of a call's checkpoint, the checkpoint of its end,
// as Ended returns it: for a caller that keeps it in place.
func (c *Checkpoint) End(res *Result, err error) {
	switch {
	case err != nil:
		c.State, c.Error = frames.Cancelled, fault.As(err)
		if !c.Error.Is(fault.ErrCancelled) {
			c.State = frames.Refused
		}
	case res.Status == StatusSuccess:
		c.State = frames.Completed
		sum := sha256.Sum256(res.Data)
		var b [2 * sha256.Size]byte
		hex.Encode(b[:], sum[:])
		c.ResultDigest = string(b[:])
	default:
		c.State, c.Error = frames.Failed, res.Error
	}
}

// Replay is the result rec (a recorded one) as a repeat of its call
// returns it: marked replayed, with a note that nothing ran again. rec is
// left as it is.
func (rec *Result) Replay() *Result {
	out := *rec
	out.Replayed = true
	out.Notes = append(out.Notes[:len(out.Notes):len(out.Notes)],
		"this call was already made with the same idempotency key; its recorded result is returned and nothing ran again")
	return &out
}
