package gateway

import (
	"context"
	"errors"
	"fmt"

	"github.com/agentreach/reach"
	"github.com/agentreach/reach/internal/audit"
	"github.com/agentreach/reach/internal/durable"
	"github.com/agentreach/reach/internal/store"
)

// persistence opens the store in the data folder (when the configuration
// names one, or came from a file): the audit log becomes a recorder, every
// write is checkpointed, idempotency records and dead letters are durable.
// It returns the audit log, or nil without a data folder.
func (g *Gateway) persistence(ctx context.Context, ro *reach.Options) (*audit.Log, error) {
	if g.opts.Ephemeral || !g.cfg.HasDataDir() {
		return nil, nil
	}
	dir, err := g.cfg.EnsureDataDir()
	if err != nil {
		return nil, err
	}
	st, err := store.Open(ctx, dir, nil)
	if err != nil {
		return nil, fmt.Errorf("opening the store in %s: %w", dir, err)
	}
	log, err := audit.New(ctx, st, nil)
	if err != nil {
		st.Close()
		return nil, fmt.Errorf("opening the audit log in %s: %w", dir, err)
	}
	cp := durable.New(st, nil, g.log.With("component", "checkpoints"))
	ro.Checkpoints, ro.DeadLetters = cp, cp
	ro.Idempotency = store.NewIdempotency(st, nil)
	g.store, g.audit = st, log
	return log, nil
}

// recover resolves what a previous run left in flight; call it once the
// tools are registered.
func (g *Gateway) recover(ctx context.Context) error {
	if g.store == nil {
		return nil
	}
	rep, err := durable.Recover(ctx, g.store, g.rt)
	if err != nil {
		return fmt.Errorf("recovering from the previous run: %w", err)
	}
	for _, f := range rep.MayHaveRun {
		g.log.Warn("a call was running when the gateway stopped: it may have run", "request", f.Request, "tool", f.Name, "idempotency_key", f.IdemKey)
	}
	for _, id := range rep.Interrupted {
		g.log.Warn("request interrupted by a restart", "request", id, "compensations", len(rep.Compensated[id]))
	}
	return nil
}

func (g *Gateway) closeStore() error {
	var errs []error
	if g.audit != nil {
		errs = append(errs, g.audit.Close())
	}
	if g.store != nil {
		errs = append(errs, g.store.Close())
	}
	return errors.Join(errs...)
}
