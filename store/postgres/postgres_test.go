package postgres_test

import (
	"context"
	"crypto/rand"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"go.uber.org/goleak"

	"github.com/mcpfleet/mcpfleet/internal/testkit/pgtest"
	"github.com/mcpfleet/mcpfleet/internal/testkit/replicatest"
	"github.com/mcpfleet/mcpfleet/internal/testkit/sharedtest"
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

// prefixOf is a table prefix of t's own, so that the scenarios of one
// server do not meet.
func prefixOf() string { return "t_" + strings.ToLower(rand.Text()[:10]) + "_" }

// What the Managers of replicas and users see through PostgreSQL: the
// authorization server forgetting everything, the database slow and down,
// corrupt records, the cooldown counted at the upstream, the wake-up.
func TestSharedScenarios(t *testing.T) {
	srv := pgtest.Start(t)
	prefixes := map[string]string{}
	sharedtest.Run(t, sharedtest.Backend{
		Open: func(t *testing.T) store.Shared {
			p, ok := prefixes[t.Name()]
			if !ok {
				p = prefixOf()
				prefixes[t.Name()] = p
			}
			return open(t, srv, p)
		},
		Stop:   func(*testing.T) { srv.Stop() },
		Start:  func(t *testing.T) { srv.Restart(t) },
		Pause:  srv.Pause,
		Resume: srv.Resume,
	})
}

// A row that is not a record (a fence below zero, a task that is not
// JSON) is reported and ignored, and a good write replaces it.
func TestCorruptRecords(t *testing.T) {
	srv := pgtest.Start(t)
	pool, err := pgxpool.New(t.Context(), srv.URL(""))
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	var prefix string
	pair := func(t *testing.T) (store.Shared, store.Shared) {
		prefix = prefixOf()
		return open(t, srv, prefix), open(t, srv, prefix)
	}
	table := func(name string) string { return pgx.Identifier{prefix + name}.Sanitize() }
	storetest.RunCorrupt(t, pair, storetest.Corrupter{
		TokenFence: func(t *testing.T, k store.TokenKey) {
			_, err := pool.Exec(t.Context(), `UPDATE `+table("tokens")+` SET fence = -7 WHERE usr = $1 AND server = $2 AND issuer = $3`,
				k.User, k.Server, k.Issuer)
			if err != nil {
				t.Fatal(err)
			}
		},
		Task: func(t *testing.T, scope, server, taskID string) {
			_, err := pool.Exec(t.Context(), `UPDATE `+table("tasks")+` SET data = $4 WHERE scope = $1 AND server = $2 AND task_id = $3`,
				scope, server, taskID, []byte(`{"server":"gh","taskId":"ba`))
			if err != nil {
				t.Fatal(err)
			}
		},
	})
}
