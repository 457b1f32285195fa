package sqlite

import (
	"context"

	"github.com/agentreach/reach/internal/store"
	"github.com/agentreach/reach/internal/store/sqlcore"
)

// The open frames (checkpoints not yet final, which a restart marks as
// interrupted) are found without an index of their own: such an index is
// entered by every call's "executing" checkpoint and left by its end, a
// page more written by every commit one call at a time (docs/BENCHMARKS.md).
// Instead every frame whose rowid is at most the mark 'frames_settled'
// (store_meta) is final, except those that frames_held lists. A frame that
// is not final is always written as a new row (StPutFrame replaces one
// written before), at the end of the table (rowid = the largest + 1), so
// above the mark; only a final one is updated in place. The writer moves
// the mark now and then (settleMarks), holding the frames above it that
// are still open. Finding the open frames reads the frames above the mark
// and the held ones.

// A request's frames are found the same way (migration 20): the frames
// at or below the mark by an index of their request that only listed
// frames enter (frames_request), and the frames above it read in rowid
// order. The writer lists the frames above the mark as it moves the mark
// past them, so that a call's checkpoint enters no index of its request:
// a commit's calls in as many sessions wrote as many of its leaves.

// The claims (idempotency records in state 'claimed') are found the same
// way (migration 7), with the mark 'claims_settled' and idempotency_held:
// a claim is a new row at the end of the table, or the record of an
// expired result it takes, moved there (StIdemClaim sets its rowid).

// SQLite gives a new row the largest rowid + 1: once the last records are
// deleted (a sweep of expired results, a released claim, one recovery
// drops), a new claim would get a rowid at or below the claims' mark, where
// claims are not looked for. So a statement that deleted records is
// followed, in its batch, by stClaimsLower, which brings the mark down to
// the last record if it is above it (the rows between were just deleted).
// Frames are deleted by the retention sweep only (a frame put again is
// replaced by a row after the last, never below it), whose statement is
// followed by stFramesLower, which does the same for the frames' mark: a
// sweep that removed the newest frames (a gateway idle for longer than its
// retention) would otherwise leave the next open frame below it.

// deletesRecords reports whether statement id deletes idempotency records.
func deletesRecords(id stmtID) bool {
	return id == sqlcore.StIdemRelease || id == sqlcore.StIdemSettleDelete || id == sqlcore.StIdemSweep ||
		id == sqlcore.StIdemSweepSome
}

// settleMarks returns the write that moves both marks: the frames above
// the frames' mark that are still open are held, the mark goes to the last
// frame, and the held frames that are now final are let go; and so for
// the claims. Its cost is a read of the rows written since the last move.
// It sizes the room a claim keeps for its result too (stResultRoom,
// migration 17) from the last results.
func (s *Store) settleMarks() *sqlcore.Write {
	return &sqlcore.Write{What: "the marks of the settled frames and claims", Run: func(bt sqlcore.Batch, w *sqlcore.Write) {
		b := bt.(*batch)
		b.run(w, func() error {
			for _, id := range []stmtID{stFramesHold, stFramesList, stFramesSettled, stFramesUnhold, stClaimsHold, stClaimsSettled, stClaimsUnhold,
				stResultRoom} {
				if _, err := b.affected(id); err != nil {
					return err
				}
			}
			return nil
		})
	}}
}

// openFrames is the condition of the open frames: those above the mark
// and those held, read by their rowid, that are not final.
const openFrames = `rowid IN (SELECT frame FROM frames_held UNION ALL
	SELECT rowid FROM frames WHERE rowid > (SELECT value FROM store_meta WHERE key = 'frames_settled'))
	AND state NOT IN ` + sqlcore.FinalStates

// OpenFrames implements store.Frames: the frames above the mark and the
// held ones that are not final.
func (s *Store) OpenFrames(ctx context.Context) ([]*store.Frame, error) {
	if s.Closed() {
		return nil, store.ErrClosed
	}
	return s.QueryFrames(ctx, openFrames)
}

// requestFrames is the condition of a request's frames ($1): the listed
// ones, by the index of their request, and those above the mark that are
// not listed yet (migration 20), read in rowid order. Every frame at or
// below the mark is listed: a frame is written above it (a new row, or
// one put again, moved there), and the mark moves past it only with the
// write that lists it (settleMarks).
const requestFrames = `rowid IN (SELECT rowid FROM frames WHERE listed AND request = $1 UNION ALL
	SELECT rowid FROM frames WHERE rowid > (SELECT value FROM store_meta WHERE key = 'frames_settled') AND NOT listed AND request = $1)`

// RequestFrames implements store.Frames: a request's frames, listed or
// above the mark.
func (s *Store) RequestFrames(ctx context.Context, request string) ([]*store.Frame, error) {
	if s.Closed() {
		return nil, store.ErrClosed
	}
	return s.QueryFrames(ctx, requestFrames, request)
}
