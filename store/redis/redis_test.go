package redis_test

import (
	"context"
	"crypto/rand"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"
	"go.uber.org/goleak"

	"github.com/mcpfleet/mcpfleet/internal/testkit/redistest"
	"github.com/mcpfleet/mcpfleet/internal/testkit/storetest"
	"github.com/mcpfleet/mcpfleet/store"
	"github.com/mcpfleet/mcpfleet/store/redis"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

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
