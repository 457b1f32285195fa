package postgres

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/agentreach/reach/internal/pgtest"
)

// TestListenCutBeforeListening: the listening connection dies without a
// word between its connect and its LISTEN (the network drops the LISTEN
// and all after it, and keeps the connection open). Watch makes it again,
// listens, and hears the signals. Without a bound on the LISTEN, it waited
// on the dead connection for ever and heard nothing again (an instance
// deaf to the others' stops, ends and approvals until restarted; seen as
// cluster's TestDeadListenerFound failing, when its cut came before the
// LISTEN).
func TestListenCutBeforeListening(t *testing.T) {
	ctx := context.Background()
	url := pgtest.Database(t)
	proxy := pgtest.NewProxy(t, pgtest.Shared(t).Addr())
	st, err := Open(ctx, proxy.Via(url), &Options{ConnectTimeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	cut := proxy.FreezeOn("LISTEN " + notifyChannel)
	heard := make(chan Signal, 64)
	listening := make(chan struct{}, 8)
	err = st.Watch(func(s Signal) {
		select {
		case heard <- s:
		default:
		}
	}, func(context.Context) {
		select {
		case listening <- struct{}{}:
		default:
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	// The deadlines only end a test that would otherwise hang.
	select {
	case <-cut:
	case <-time.After(60 * time.Second):
		t.Fatal("the listener never sent its LISTEN")
	}
	select {
	case <-listening:
	case <-time.After(60 * time.Second):
		t.Fatal("the listener whose connection was cut before its LISTEN never listened again")
	}
	admin, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close(ctx)
	// Heard on the connection made again (onConnect is called once it
	// listens); sent again until heard, in case a ping lost on a loaded
	// machine made it once more meanwhile.
	deadline := time.After(60 * time.Second)
	for {
		if _, err := admin.Exec(ctx, `SELECT pg_notify($1, $2)`, notifyChannel, notifyApproval+"after"); err != nil {
			t.Fatal(err)
		}
		again := time.After(100 * time.Millisecond)
	wait:
		for {
			select {
			case s := <-heard:
				if s.Kind == "approval" && s.ID == "after" {
					return
				}
			case <-again:
				break wait
			case <-deadline:
				t.Fatal("the listener made again after its cut hears no signal")
			}
		}
	}
}
