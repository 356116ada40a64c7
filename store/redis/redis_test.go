package redis_test

import (
	"context"
	"crypto/rand"
	"strings"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"
	"go.uber.org/goleak"

	"github.com/mcpfleet/mcpfleet/internal/testkit/redistest"
	"github.com/mcpfleet/mcpfleet/internal/testkit/replicatest"
	"github.com/mcpfleet/mcpfleet/internal/testkit/storetest"
	"github.com/mcpfleet/mcpfleet/store"
	"github.com/mcpfleet/mcpfleet/store/redis"
)

func TestMain(m *testing.M) {
	replicatest.Main(m, openURL, func() int { goleak.VerifyTestMain(m); return 0 })
}

// openURL opens a Store from "addr|prefix", as a replica process does.
func openURL(ctx context.Context, u string) (store.Shared, func(), error) {
	addr, prefix, _ := strings.Cut(u, "|")
	rdb := goredis.NewClient(&goredis.Options{Addr: addr})
	s, err := redis.New(ctx, rdb, redis.WithPrefix(prefix))
	if err != nil {
		rdb.Close()
		return nil, nil, err
	}
	return s, func() { s.Close(); rdb.Close() }, nil
}

// Four replica processes, fifty calls each, all at the moment the token
// expires: one refresh for the grant, no invalid_grant, every call
// answered.
func TestRefreshAcrossReplicas(t *testing.T) {
	srv := redistest.Start(t)
	replicatest.Run(t, srv.Addr()+"|r1:", openURL, replicatest.Config{Replicas: 4, Calls: 50, LeaseTTL: 10 * time.Second})
}

// The replica holding the refresh lease is SIGKILLed while its refresh is
// at the authorization server: another refreshes once the lease expires.
func TestRefreshHolderKilled(t *testing.T) {
	srv := redistest.Start(t)
	replicatest.Run(t, srv.Addr()+"|r2:", openURL, replicatest.Config{Replicas: 4, Calls: 50, LeaseTTL: 2 * time.Second, KillHolder: true})
}

// open returns a Store on srv under prefix, closed with t.
func open(t *testing.T, srv *redistest.Server, prefix string) *redis.Store {
	t.Helper()
	rdb := goredis.NewClient(&goredis.Options{Addr: srv.Addr(), MaxRetries: -1})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	s, err := redis.New(ctx, rdb, redis.WithPrefix(prefix))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		s.Close()
		rdb.Close()
	})
	return s
}

func TestConformance(t *testing.T) {
	srv := redistest.Start(t)
	storetest.Run(t, func(t *testing.T) (store.Shared, store.Shared) {
		prefix := "t-" + rand.Text() + ":"
		return open(t, srv, prefix), open(t, srv, prefix)
	})
}
