package postgres

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/agentreach/reach/internal/pgtest"
)

// nameHolder is the backend pid holding instance name's lock, and its
// connection's client port (0, 0: none holds it).
func nameHolder(t *testing.T, admin *pgx.Conn, name string) (pid int32, port int) {
	t.Helper()
	err := admin.QueryRow(context.Background(), `SELECT l.pid, coalesce(a.client_port, 0)
		FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid,
			(SELECT hashtextextended('reach instance ' || $1, 0) AS k) h
		WHERE l.locktype = 'advisory' AND l.granted AND l.objsubid = 1
		AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database())
		AND l.classid::text::bigint = (h.k >> 32) & 4294967295
		AND l.objid::text::bigint = h.k & 4294967295`, name).Scan(&pid, &port)
	if errors.Is(err, pgx.ErrNoRows) {
		return 0, 0
	}
	if err != nil {
		t.Fatal(err)
	}
	return pid, port
}

// TestHoldInstanceAfterSilentCut: the connection holding the instance's
// name dies without a word (a network cut), and the server keeps its
// session, and with it the lock. The instance makes the connection again
// and takes its name again, ending its own old session; no other process
// took the name, so NameLost stays open. Before, the lock asked for again
// with no wait looked taken by another process: NameLost closed and the
// instance stopped admitting work for good.
func TestHoldInstanceAfterSilentCut(t *testing.T) {
	ctx := context.Background()
	url := pgtest.Database(t)
	proxy := pgtest.NewProxy(t, pgtest.Shared(t).Addr())
	st, err := Open(ctx, proxy.Via(url), &Options{ConnectTimeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if err := st.HoldInstance(ctx, "cut"); err != nil {
		t.Fatal(err)
	}
	admin, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close(ctx)
	old, port := nameHolder(t, admin, "cut")
	if old == 0 {
		t.Fatal("HoldInstance returned with the name's lock not held")
	}
	if !proxy.Freeze(port) {
		t.Fatalf("the name's lock connection (client port %d) does not go through the proxy", port)
	}
	// The deadline only ends a test that would otherwise hang.
	deadline := time.After(60 * time.Second)
	for {
		pid, _ := nameHolder(t, admin, "cut")
		if pid != 0 && pid != old {
			break
		}
		select {
		case <-st.NameLost():
			t.Fatal("NameLost closed after a cut of the name's own connection; no other process took the name")
		case <-deadline:
			t.Fatal("the name's lock was not taken again after its connection was cut")
		case <-time.After(50 * time.Millisecond):
		}
	}
	select {
	case <-st.NameLost():
		t.Fatal("NameLost closed, the name held again")
	default:
	}
	// Another process is still refused the name.
	b, err := Open(ctx, url, &Options{ConnectTimeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if err := b.HoldInstance(ctx, "cut"); !errors.Is(err, ErrInstanceRunning) {
		t.Fatalf("HoldInstance of the name held again = %v; want ErrInstanceRunning", err)
	}
}
