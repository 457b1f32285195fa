package postgres

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/agentreach/reach/internal/pgtest"
	"github.com/agentreach/reach/internal/store"
	"github.com/agentreach/reach/internal/store/storetest"
)

func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }

func openPostgres(t testing.TB, url string) *Store {
	t.Helper()
	s, err := Open(context.Background(), url, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// The PostgreSQL store keeps the contract of every store, on a throwaway
// cluster (internal/pgtest: without PostgreSQL's binaries this skips,
// unless REACH_CI is set).
func TestContract(t *testing.T) {
	storetest.Run(t, func(t *testing.T) store.Store { return openPostgres(t, pgtest.Database(t)) })
}

var t0 = time.Unix(1_700_000_000, 123456789)

func frameIDs(fs []*store.Frame) []string {
	var out []string
	for _, f := range fs {
		out = append(out, f.Request+"/"+f.Frame+"/"+f.State)
	}
	return out
}
