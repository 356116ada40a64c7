package postgres_test

import (
	"context"
	"crypto/rand"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"go.uber.org/goleak"

	"github.com/mcpfleet/mcpfleet/internal/testkit/pgtest"
	"github.com/mcpfleet/mcpfleet/internal/testkit/replicatest"
	"github.com/mcpfleet/mcpfleet/internal/testkit/storetest"
	"github.com/mcpfleet/mcpfleet/store"
	"github.com/mcpfleet/mcpfleet/store/postgres"
)

func TestMain(m *testing.M) {
	replicatest.Main(m, openURL, func() int { goleak.VerifyTestMain(m); return 0 })
}

// openURL opens a Store from "url|prefix", as a replica process does.
func openURL(ctx context.Context, u string) (store.Shared, func(), error) {
	dsn, prefix, _ := strings.Cut(u, "|")
	pool, err := pgxpool.New(ctx, dsn)
	if err != nil {
		return nil, nil, err
	}
	s, err := postgres.New(ctx, pool, postgres.WithPrefix(prefix))
	if err != nil {
		pool.Close()
		return nil, nil, err
	}
	return s, func() { s.Close(); pool.Close() }, nil
}

// Four replica processes, fifty calls each, all at the moment the token
// expires: one refresh for the grant, no invalid_grant, every call
// answered.
func TestRefreshAcrossReplicas(t *testing.T) {
	srv := pgtest.Start(t)
	replicatest.Run(t, srv.URL("")+"|r1_", openURL, replicatest.Config{Replicas: 4, Calls: 50, LeaseTTL: 10 * time.Second})
}

// The replica holding the refresh lease is SIGKILLed while its refresh is
// at the authorization server: another refreshes once the lease expires.
func TestRefreshHolderKilled(t *testing.T) {
	srv := pgtest.Start(t)
	replicatest.Run(t, srv.URL("")+"|r2_", openURL, replicatest.Config{Replicas: 4, Calls: 50, LeaseTTL: 2 * time.Second, KillHolder: true})
}

// open returns a Store on srv's database under prefix, closed with t.
func open(t *testing.T, srv *pgtest.Server, prefix string) *postgres.Store {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	pool, err := pgxpool.New(ctx, srv.URL(""))
	if err != nil {
		t.Fatal(err)
	}
	s, err := postgres.New(ctx, pool, postgres.WithPrefix(prefix))
	if err != nil {
		pool.Close()
		t.Fatal(err)
	}
	t.Cleanup(func() {
		s.Close()
		pool.Close()
	})
	return s
}

func TestConformance(t *testing.T) {
	srv := pgtest.Start(t)
	storetest.Run(t, func(t *testing.T) (store.Shared, store.Shared) {
		prefix := "t_" + strings.ToLower(rand.Text()) + "_"
		return open(t, srv, prefix), open(t, srv, prefix)
	})
}
