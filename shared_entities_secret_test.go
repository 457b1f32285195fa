package reach_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/agentreach/reach"
	"github.com/agentreach/reach/internal/store"
)

// An entity named from a secret argument is kept in the shared store under
// a digest of its name, one that names no secret under its name: a
// write on a stale read of either is refused, the refusal shows the secret
// masked, and recovery (MoveWrittenEntities from a checkpoint's masked
// arguments) claims no entity under the masked name.
func TestSharedEntitiesSecretNamesKeyed(t *testing.T) {
	const secret = "tok_live_5e6f7a8b9c0d1e"
	es := store.NewMemory()
	rt := reach.New(&reach.Options{Entities: es})
	rt.MustRegister(
		reach.Tool{Name: "get", Reentrancy: reach.Reentrant, Reads: []string{"acct:{token}", "item:{id}"}, Func: echo},
		reach.Tool{Name: "put", Access: reach.Write, Reentrancy: reach.Reentrant, Writes: []string{"acct:{token}", "item:{id}"}, Func: echo},
	)
	ctx, _ := begin(t, rt, nil)
	args := `{"token":"` + secret + `","id":"7"}`
	if res := call(rt, ctx, "get", args); res.IsError() {
		t.Fatal(res.ModelText())
	}
	// Nothing is kept before a write.
	v, err := es.EntityVersions(context.Background(), []string{"item:7", "acct:" + secret})
	if err != nil || len(v) != 0 {
		t.Fatalf("versions before any write: %v, %v", v, err)
	}
	ctx2, _ := begin(t, rt, nil) // another request writes both
	if res := rt.Call(ctx2, &reach.Call{ID: "w0", Tool: "put", Arguments: json.RawMessage(args)}); res.IsError() {
		t.Fatal(res.ModelText())
	}
	if v, _ := es.EntityVersions(context.Background(), []string{"acct:" + secret}); len(v) != 0 {
		t.Errorf("the account is kept under its name, with the token in it: %v", v)
	}
	if v, _ := es.EntityVersions(context.Background(), []string{"item:7"}); len(v) != 1 {
		t.Errorf("item:7, named from no secret, is not kept under its name: %v", v)
	}
	res := rt.Call(ctx, &reach.Call{ID: "w1", Tool: "put", Arguments: json.RawMessage(args)})
	if res.Status != reach.StatusRefused || res.Error.Code != "stale_read" {
		t.Fatalf("a write on a stale read: %s", res.ModelText())
	}
	if strings.Contains(res.ModelText(), secret) {
		t.Errorf("the refusal shows the token: %s", res.ModelText())
	}
	// A recovery gets the arguments as the checkpoint keeps them, masked.
	if err := rt.MoveWrittenEntities(context.Background(), "put", []byte(`{"token":"[REDACTED]","id":"8"}`)); err != nil {
		t.Fatal(err)
	}
	if v, _ := es.EntityVersions(context.Background(), []string{"acct:[REDACTED]", "item:8"}); v["acct:[REDACTED]"] != 0 || v["item:8"] == 0 {
		t.Errorf("after a recovery from masked arguments: %v, want item:8 moved on and nothing under acct:[REDACTED]", v)
	}
}

// An entity whose name only as a whole reads as holding a secret
// ("token:Tk-42": a credential after "token", though no argument is under
// a secret name) is keyed by its digest when a call writes it, and the
// checkpoint keeps its arguments as they are (nothing in them is masked):
// a recovery's MoveWrittenEntities moves on the entity under that same
// digest, so a read made before is stale, and keeps nothing under the
// name. Before, it claimed the name itself: the read stayed fresh, and the
// store held the name the runtime masks everywhere else.
func TestMoveWrittenEntitiesKeysAsCallsDo(t *testing.T) {
	es := store.NewMemory()
	rt := reach.New(&reach.Options{Entities: es})
	rt.MustRegister(
		reach.Tool{Name: "get", Reentrancy: reach.Reentrant, Reads: []string{"token:{id}"}, Func: echo},
		reach.Tool{Name: "revoke", Access: reach.Write, Reentrancy: reach.Reentrant, Writes: []string{"token:{id}"}, Func: echo},
	)
	args := `{"id":"Tk-42"}`
	ctx, _ := begin(t, rt, nil)
	if res := call(rt, ctx, "get", args); res.IsError() {
		t.Fatal(res.ModelText())
	}
	// The recovery of another life's revoke of it, cut off while it ran.
	if err := rt.MoveWrittenEntities(context.Background(), "revoke", []byte(args)); err != nil {
		t.Fatal(err)
	}
	if v, _ := es.EntityVersions(context.Background(), []string{"token:Tk-42"}); len(v) != 0 {
		t.Errorf("the recovery kept the entity under its name: %v", v)
	}
	res := rt.Call(ctx, &reach.Call{ID: "w1", Tool: "revoke", Arguments: json.RawMessage(args)})
	if res.Status != reach.StatusRefused || res.Error.Code != "stale_read" {
		t.Fatalf("a write on a read made before a recovery moved the entity on: %s; want refused as stale", res.ModelText())
	}
	if strings.Contains(res.ModelText(), "Tk-42") {
		t.Errorf("the refusal shows the token: %s", res.ModelText())
	}
}

// executingKept keeps the "executing" checkpoints it is given.
type executingKept struct {
	mu        sync.Mutex
	executing []reach.Checkpoint
}

func (k *executingKept) Executing(_ context.Context, c *reach.Checkpoint) error {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.executing = append(k.executing, *c)
	return nil
}

func (k *executingKept) Ended(context.Context, *reach.Checkpoint) {}

// A checkpointed write keeps with its "executing" checkpoint the keys
// under which the shared store keeps the entities it writes: an entity
// named from a secret argument by its digest, never the secret. From them
// (MoveEntityKeys) a recovery moves on the entity that the checkpoint's
// masked arguments cannot name, so that a read made while the write ran
// is stale. Before, the checkpoint kept no keys and the recovery, from the
// masked arguments, moved on only item:7.
func TestCheckpointKeepsSecretEntityKeys(t *testing.T) {
	const secret = "tok_live_5e6f7a8b9c0d1e"
	es := store.NewMemory()
	cps := &executingKept{}
	rt := reach.New(&reach.Options{Entities: es, Checkpoints: cps})
	rt.MustRegister(
		reach.Tool{Name: "get", Reentrancy: reach.Reentrant, Reads: []string{"acct:{token}"}, Func: echo},
		reach.Tool{Name: "put", Access: reach.Write, Reentrancy: reach.Reentrant, Writes: []string{"acct:{token}", "item:{id}"}, Func: echo},
	)
	args := `{"token":"` + secret + `","id":"7"}`
	ctx2, _ := begin(t, rt, nil) // another runtime's write, cut off while it ran
	if res := rt.Call(ctx2, &reach.Call{ID: "w0", Tool: "put", Arguments: json.RawMessage(args)}); res.IsError() {
		t.Fatal(res.ModelText())
	}
	ctx, _ := begin(t, rt, nil)
	if res := call(rt, ctx, "get", args); res.IsError() {
		t.Fatal(res.ModelText())
	}
	cps.mu.Lock()
	if len(cps.executing) != 1 {
		t.Fatalf("%d executing checkpoints; want the write's", len(cps.executing))
	}
	keys := cps.executing[0].Entities
	cps.mu.Unlock()
	sum := sha256.Sum256([]byte("acct:" + secret))
	if want := []string{"sha256:" + hex.EncodeToString(sum[:]), "item:7"}; !slices.Equal(keys, want) {
		t.Fatalf("the checkpoint keeps the keys %q; want %q", keys, want)
	}
	if strings.Contains(strings.Join(keys, " "), secret) {
		t.Fatalf("the checkpoint's keys hold the secret: %q", keys)
	}
	// The recovery moves on what the checkpoint kept.
	if err := rt.MoveEntityKeys(context.Background(), keys); err != nil {
		t.Fatal(err)
	}
	res := rt.Call(ctx, &reach.Call{ID: "w1", Tool: "put", Arguments: json.RawMessage(args)})
	if res.Status != reach.StatusRefused || res.Error.Code != "stale_read" {
		t.Fatalf("a write on a read of the account made before the recovery moved it on: %s; want refused as stale", res.ModelText())
	}
	if strings.Contains(res.ModelText(), secret) {
		t.Errorf("the refusal shows the secret: %s", res.ModelText())
	}
}
