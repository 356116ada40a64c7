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
	"github.com/mcpfleet/mcpfleet/internal/testkit/storetest"
	"github.com/mcpfleet/mcpfleet/store"
	"github.com/mcpfleet/mcpfleet/store/postgres"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

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
