package postgres

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/agentreach/reach/internal/crashpoint"
	"github.com/agentreach/reach/internal/store"
)

// EndExecutingFrame implements store.FrameEnder as sqlcore's does: f's
// state, undo and error are written where its checkpoint is still
// "executing" of f.Owner's life, and it reports whether they were.
//
// An end that arrives late, kept through an outage by a life that was
// then killed and written by its successor from the kept file, may find
// its checkpoint marked cancelled by another instance's recovery of that
// life (it took the life for dead first). That recovery saw no undo, so
// it ran none: dropping the end lost the undo for good. Instead, for an
// end that carries an undo, whose checkpoint that life owns and a
// recovery marked (cancelled, no undo):
//
//   - the request interrupted or stopped (the recovery ran its undos):
//     the undo is stored as an open dead letter, once (not if the
//     request already has one for that call), for an operator to retry
//     or dismiss (reach deadletters);
//   - the request still running (on another instance, or its recovery
//     not yet at it): the end is written over the mark, so that the
//     recovery or stop that ends the request finds the undo;
//   - the request ended by its client, or anything else: nothing, as no
//     undo of that request is run.
//
// Either way it still reports false: the checkpoint was not "executing".
func (s *Store) EndExecutingFrame(ctx context.Context, f *store.Frame) (bool, error) {
	landed, err := s.Core.EndExecutingFrame(ctx, f)
	if err != nil || landed || f.Owner == "" || len(f.Undo) == 0 {
		return landed, err
	}
	return false, s.lateEnd(ctx, f)
}

// lateEnd settles f's undo where a recovery marked its checkpoint first
// (see EndExecutingFrame). One statement: the frame's row is locked, so a
// second end of it (a successor killed before it dropped its kept line)
// finds the dead letter, or the undo written.
func (s *Store) lateEnd(ctx context.Context, f *store.Frame) error {
	var u struct {
		Tool      string          `json:"tool"`
		Arguments json.RawMessage `json:"arguments"`
		Key       string          `json:"key"`
	}
	if err := json.Unmarshal(f.Undo, &u); err != nil || u.Tool == "" {
		s.log.Error("idempotency: a kept ended checkpoint's undo cannot be read: it is not dead-lettered",
			"request", f.Request, "frame", f.Frame)
		return nil
	}
	frame := strings.TrimPrefix(u.Key, "undo:")
	if u.Key == "" || frame == "" {
		frame = f.Frame
	}
	var args any
	if len(u.Arguments) > 0 {
		args = string(u.Arguments)
	}
	now := time.Now().UnixNano()
	const msg = "the call's end, with this undo, was kept through a store outage and written only after another instance had " +
		"recovered its request (its instance was taken for dead): the recovery did not know the undo, and it did not run. " +
		"Retry this dead letter to undo the call's write, or dismiss it if the write should stay."
	rows, err := s.pool.Query(ctx, `WITH fr AS (
		SELECT r.state AS rstate, r.principal AS rprincipal, r.tenant AS rtenant FROM frames f JOIN requests r ON r.id = f.request
		WHERE f.request = $1 AND f.frame = $2 AND f.owner = $3 AND f.state = 'cancelled' AND f.undo IS NULL
		FOR UPDATE OF f
	), upd AS (
		UPDATE frames SET state = $4, undo = $5, updated = $6
		WHERE request = $1 AND frame = $2 AND EXISTS (SELECT 1 FROM fr WHERE rstate = 'running')
		RETURNING 'kept'::TEXT AS did
	), dl AS (
		INSERT INTO dead_letters (request, frame, tool, args, error, attempts, state, note, created, updated, principal, tenant)
		SELECT $1, $7::TEXT, $8, $9, $10, 0, 'open', '', $6, $6, rprincipal, rtenant FROM fr
		WHERE rstate IN ('interrupted', 'stopped')
			AND NOT EXISTS (SELECT 1 FROM dead_letters WHERE request = $1 AND frame = $7::TEXT)
		RETURNING 'dead-lettered'::TEXT AS did
	)
	SELECT did FROM upd UNION ALL SELECT did FROM dl`,
		f.Request, f.Frame, f.Owner, f.State, string(f.Undo), now, frame, u.Tool, args, msg)
	if err != nil {
		return fmt.Errorf("settling the late end of frame %s of request %s: %w", f.Frame, f.Request, err)
	}
	var did []string
	for rows.Next() {
		var d string
		if err := rows.Scan(&d); err != nil {
			rows.Close()
			return fmt.Errorf("settling the late end of frame %s of request %s: %w", f.Frame, f.Request, err)
		}
		did = append(did, d)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return fmt.Errorf("settling the late end of frame %s of request %s: %w", f.Frame, f.Request, err)
	}
	switch {
	case len(did) == 0:
	case did[0] == "kept":
		s.log.Warn("idempotency: a kept ended checkpoint reached the store after another instance marked it (its life taken for dead); its request still runs, so its undo is written there for the request's recovery or stop",
			"request", f.Request, "frame", f.Frame)
	default:
		s.log.Warn("idempotency: a kept ended checkpoint reached the store after another instance recovered its request (its life taken for dead): its undo did not run, and is dead-lettered: retry or dismiss it (reach deadletters)",
			"request", f.Request, "frame", f.Frame, "tool", u.Tool)
		crashpoint.Reached("deadletter.late") // a kill here: the next start writes the end again, and adds nothing
	}
	return nil
}
