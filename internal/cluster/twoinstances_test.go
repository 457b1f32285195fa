package cluster

import (
	"context"
	"testing"
	"time"

	"github.com/agentreach/reach/internal/pgtest"
	"github.com/agentreach/reach/internal/store/postgres"
)

// twoInstances opens instances a and b of one cluster with the given TTL on
// a fresh database, each on a store of its own (a.st, b.st), and closes
// them when the test ends. It returns the database's URL too.
func twoInstances(t *testing.T, ttl time.Duration) (url string, a, b *Cluster) {
	t.Helper()
	ctx := context.Background()
	url = pgtest.Database(t)
	var cs [2]*Cluster
	for i, name := range []string{"a", "b"} {
		st, err := postgres.Open(ctx, url, nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { st.Close() })
		c, err := New(ctx, &Options{Store: st, Instance: name, TTL: ttl})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		cs[i] = c
	}
	return url, cs[0], cs[1]
}
