package redis_test

import (
	"context"
	"crypto/rand"
	"net/url"
	"strings"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"
	"go.uber.org/goleak"

	"github.com/mcpfleet/mcpfleet/internal/testkit/redistest"
	"github.com/mcpfleet/mcpfleet/internal/testkit/replicatest"
	"github.com/mcpfleet/mcpfleet/internal/testkit/sharedtest"
	"github.com/mcpfleet/mcpfleet/internal/testkit/storetest"
	"github.com/mcpfleet/mcpfleet/store"
	"github.com/mcpfleet/mcpfleet/store/redis"
)

func TestMain(m *testing.M) {
	// go-redis logs every refused dial to stderr; the tests stop Redis on
	// purpose, and the store's errors say what failed.
	goredis.SetLogger(quiet{})
	replicatest.Main(m, openURL, func() int { goleak.VerifyTestMain(m); return 0 })
}

type quiet struct{}

func (quiet) Printf(context.Context, string, ...any) {}

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
	// One dial per command, no retries: a Redis that is down says so at
	// once (a host chooses its own).
	rdb := goredis.NewClient(&goredis.Options{Addr: srv.Addr(), MaxRetries: -1, DialerRetries: 1})
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

// prefixOf is a key prefix of t's own, so that the scenarios of one
// server do not meet.
func prefixOf(t *testing.T) string {
	return "t-" + strings.NewReplacer("/", "-", " ", "-").Replace(t.Name()) + "-" + rand.Text()[:6] + ":"
}

// What the Managers of replicas and users see through Redis: the
// authorization server forgetting everything, Redis slow and down,
// corrupt records, the cooldown counted at the upstream, the wake-up.
func TestSharedScenarios(t *testing.T) {
	srv := redistest.Start(t)
	prefixes := map[string]string{}
	sharedtest.Run(t, sharedtest.Backend{
		Open: func(t *testing.T) store.Shared {
			p, ok := prefixes[t.Name()]
			if !ok {
				p = prefixOf(t)
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

// A record Redis holds that is not one (a fence that does not parse, a
// task that is not JSON) is reported and ignored, and a good write
// replaces it.
func TestCorruptRecords(t *testing.T) {
	srv := redistest.Start(t)
	raw := goredis.NewClient(&goredis.Options{Addr: srv.Addr()})
	defer raw.Close()
	var prefix string
	pair := func(t *testing.T) (store.Shared, store.Shared) {
		prefix = prefixOf(t)
		return open(t, srv, prefix), open(t, srv, prefix)
	}
	storetest.RunCorrupt(t, pair, storetest.Corrupter{
		TokenFence: func(t *testing.T, k store.TokenKey) {
			esc := func(p string) string { return strings.ReplaceAll(url.PathEscape(p), ":", "%3A") }
			key := prefix + "tokens:" + esc(k.User) + ":" + esc(k.Server)
			if err := raw.HSet(t.Context(), key, "f:"+k.Issuer, "not-a-number").Err(); err != nil {
				t.Fatal(err)
			}
		},
		Task: func(t *testing.T, scope, server, taskID string) {
			key := prefix + "tasks:" + url.PathEscape(scope)
			field := url.PathEscape(server) + "/" + url.PathEscape(taskID)
			if err := raw.HSet(t.Context(), key, field, `{"server":"gh","taskId":"ba`).Err(); err != nil {
				t.Fatal(err)
			}
		},
	})
}
