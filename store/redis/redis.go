// Package redis keeps mcpfleet's shared state in Redis
// (github.com/redis/go-redis/v9), for the replicas of a host: OAuth
// credentials by user, server and issuer with fenced writes, refresh
// leases (SET NX PX with a fencing counter, released by a script that
// checks the fence), the shared cooldown of upstream servers (a claim by
// compare-and-set in a script), catalogs by server identity, and task
// handles. Wake-ups (a lease released, a server back up) go by pub/sub on
// one connection per Store.
//
// It is a module of its own, so that a host that keeps its state in files
// or in memory needs no Redis client.
//
// Every key starts with the Store's prefix (DefaultPrefix), so that
// several hosts, or tests, can share one Redis. Nothing is stored with an
// expiry but leases and cooldowns: a Redis that evicts keys under memory
// pressure (maxmemory-policy other than noeviction) can lose credentials;
// give it noeviction, or a database of its own.
package redis

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/mcpfleet/mcpfleet/internal/wakeup"
	"github.com/mcpfleet/mcpfleet/store"
)

// DefaultPrefix starts every key a Store writes.
const DefaultPrefix = "mcpfleet:"

// Store is a store.Shared in Redis. It is safe for concurrent use. Close
// it to end its pub/sub connection; the Redis client stays the host's.
type Store struct {
	// Set at creation, read-only.
	rdb    *goredis.Client
	prefix string
	name   string
	ps     *goredis.PubSub
	done   chan struct{} // closed when the dispatcher has stopped
	wake   wakeup.Set    // lease releases and servers up, by channel and payload
}

// Option configures New.
type Option func(*Store)

// WithPrefix sets the prefix of every key and channel. Defaults to
// DefaultPrefix.
func WithPrefix(p string) Option { return func(s *Store) { s.prefix = p } }

// New returns a Store on rdb and subscribes to its wake-ups. ctx bounds
// the subscription's first round trip: a Redis that cannot be reached
// fails New.
func New(ctx context.Context, rdb *goredis.Client, opts ...Option) (*Store, error) {
	o := rdb.Options()
	s := &Store{rdb: rdb, prefix: DefaultPrefix, name: "redis " + o.Addr + "/" + strconv.Itoa(o.DB),
		done: make(chan struct{})}
	for _, opt := range opts {
		opt(s)
	}
	s.ps = rdb.Subscribe(ctx, s.channel("lease"), s.channel("up"))
	if _, err := s.ps.Receive(ctx); err != nil {
		s.ps.Close()
		return nil, s.fail("subscribe", "", err)
	}
	go s.dispatch(s.ps.Channel())
	return s, nil
}

// Name names the store: "redis host:port/db".
func (s *Store) Name() string { return s.name }

// Close ends the Store's subscription. The client is left open.
func (s *Store) Close() error {
	err := s.ps.Close()
	<-s.done
	return err
}

func (s *Store) channel(what string) string { return s.prefix + what }

func esc(p string) string { return url.PathEscape(p) }

// dispatch wakes the waiters of each message's subject.
func (s *Store) dispatch(ch <-chan *goredis.Message) {
	defer close(s.done)
	for msg := range ch {
		s.wake.Wake(msg.Channel + "\x00" + msg.Payload)
	}
}

func (s *Store) fail(op, key string, err error) error {
	return &store.Error{Store: s.name, Op: op, Key: key, Err: err}
}

// Tokens: one hash per user and server; field "bound" names the issuer
// their credentials are bound to, "d:<issuer>" and "f:<issuer>" hold each
// issuer's document and fence.
//
// The key joins user and server with ":", so neither may hold a ":" of
// its own: PathEscape leaves ":" as it is, and (alice, crm:eu) and
// (alice:crm, eu) were one key, each user loading the other's
// credentials. escPart escapes it too. Names without ":" have the key
// they had; a key written before for a name with ":" (it has two ":"
// after "tokens:") is read by no one any more: those users authorize
// again, and the old keys can be deleted (see SECURITY.md).
func (s *Store) tokensKey(user, server string) string {
	return s.prefix + "tokens:" + escPart(user) + ":" + escPart(server)
}

// escPart escapes p for a key whose parts are joined with ":".
func escPart(p string) string { return strings.ReplaceAll(url.PathEscape(p), ":", "%3A") }

// saveToken writes a record unless the stored one was written under a
// larger fence; a stored fence that does not parse (a corrupt record)
// counts as none, so that a good write replaces it.
var saveToken = goredis.NewScript(`
local cur = tonumber(redis.call('HGET', KEYS[1], 'f:' .. ARGV[1]) or '0') or 0
if cur > tonumber(ARGV[3]) then return 0 end
redis.call('HSET', KEYS[1], 'd:' .. ARGV[1], ARGV[2], 'f:' .. ARGV[1], ARGV[3], 'bound', ARGV[1])
return 1`)

// LoadToken implements store.TokenStore.
func (s *Store) LoadToken(ctx context.Context, k store.TokenKey) (store.TokenRecord, bool, error) {
	h, err := s.rdb.HGetAll(ctx, s.tokensKey(k.User, k.Server)).Result()
	if err != nil {
		return store.TokenRecord{}, false, s.fail("load token", k.String(), err)
	}
	iss := k.Issuer
	if iss == "" {
		b, ok := h["bound"]
		if !ok {
			return store.TokenRecord{}, false, nil
		}
		iss = b
	}
	d, ok := h["d:"+iss]
	if !ok {
		return store.TokenRecord{}, false, nil
	}
	f, err := strconv.ParseUint(h["f:"+iss], 10, 64)
	if err != nil {
		return store.TokenRecord{}, false, s.fail("load token", k.String(), fmt.Errorf("%w: its fence does not parse", store.ErrCorrupt))
	}
	return store.TokenRecord{Data: []byte(d), Fence: f}, true, nil
}

// SaveToken implements store.TokenStore.
func (s *Store) SaveToken(ctx context.Context, k store.TokenKey, r store.TokenRecord) error {
	n, err := saveToken.Run(ctx, s.rdb, []string{s.tokensKey(k.User, k.Server)}, k.Issuer, r.Data, r.Fence).Int()
	switch {
	case err != nil:
		return s.fail("save token", k.String(), err)
	case n == 0:
		return s.fail("save token", k.String(), store.ErrFenced)
	}
	return nil
}

// DeleteTokens implements store.TokenStore.
func (s *Store) DeleteTokens(ctx context.Context, user, server string) error {
	if err := s.rdb.Del(ctx, s.tokensKey(user, server)).Err(); err != nil {
		return s.fail("delete tokens", store.TokenKey{User: user, Server: server}.String(), err)
	}
	return nil
}

// Leases: the lease key holds the fence of its holder and expires with
// the lease; the fence key counts the fences ever given.
var acquireLease = goredis.NewScript(`
local pttl = redis.call('PTTL', KEYS[1])
if pttl > 0 then return {0, pttl} end
local f = redis.call('INCR', KEYS[2])
redis.call('SET', KEYS[1], f, 'PX', ARGV[1])
return {f, tonumber(ARGV[1])}`)

var releaseLease = goredis.NewScript(`
if redis.call('GET', KEYS[1]) == ARGV[1] then
  redis.call('DEL', KEYS[1])
  redis.call('PUBLISH', ARGV[2], ARGV[3])
  return 1
end
return 0`)

func (s *Store) leaseKey(name string) string { return s.prefix + "lease:" + name }
func (s *Store) fenceKey(name string) string { return s.prefix + "fence:" + name }

// Acquire implements store.Leases.
func (s *Store) Acquire(ctx context.Context, name string, ttl time.Duration) (store.Lease, error) {
	if err := ctx.Err(); err != nil {
		return store.Lease{}, s.fail("acquire lease", name, err)
	}
	ms := max(ttl.Milliseconds(), 1)
	// Watch before trying, so that a release between the try and the wait
	// is not missed.
	released, stop := s.wake.Watch(s.channel("lease") + "\x00" + name)
	defer stop()
	for {
		start := time.Now()
		res, err := acquireLease.Run(ctx, s.rdb, []string{s.leaseKey(name), s.fenceKey(name)}, ms).Int64Slice()
		if err != nil {
			return store.Lease{}, s.fail("acquire lease", name, err)
		}
		if len(res) != 2 {
			return store.Lease{}, s.fail("acquire lease", name, errors.New("unexpected answer to the lease script"))
		}
		if res[0] > 0 {
			return store.Lease{Name: name, Fence: uint64(res[0]), Expires: start.Add(ttl)}, nil
		}
		if err := wakeup.Wait(ctx, released, time.Duration(res[1])*time.Millisecond); err != nil {
			return store.Lease{}, s.fail("acquire lease", name, err)
		}
	}
}

// Release implements store.Leases.
func (s *Store) Release(ctx context.Context, l store.Lease) error {
	err := releaseLease.Run(ctx, s.rdb, []string{s.leaseKey(l.Name)}, strconv.FormatUint(l.Fence, 10),
		s.channel("lease"), l.Name).Err()
	if err != nil {
		return s.fail("release lease", l.Name, err)
	}
	return nil
}

// Cooldowns: one hash per server, "a" the attempts and "u" the time in
// Unix milliseconds; it expires an hour after its Until, so a server no
// one dials any more leaves nothing behind.
func (s *Store) cooldownKey(server string) string { return s.prefix + "cooldown:" + esc(server) }

const cooldownKeep = time.Hour

var claimDial = goredis.NewScript(`
local a = tonumber(redis.call('HGET', KEYS[1], 'a') or '0')
if a ~= tonumber(ARGV[1]) then return 0 end
redis.call('HSET', KEYS[1], 'a', ARGV[2], 'u', ARGV[3])
redis.call('PEXPIREAT', KEYS[1], ARGV[4])
return 1`)

// Cooldown implements store.Cooldowns.
func (s *Store) Cooldown(ctx context.Context, server string) (store.Cooldown, error) {
	h, err := s.rdb.HGetAll(ctx, s.cooldownKey(server)).Result()
	if err != nil {
		return store.Cooldown{}, s.fail("read cooldown", server, err)
	}
	if len(h) == 0 {
		return store.Cooldown{}, nil
	}
	a, err1 := strconv.Atoi(h["a"])
	u, err2 := strconv.ParseInt(h["u"], 10, 64)
	if err1 != nil || err2 != nil {
		return store.Cooldown{}, s.fail("read cooldown", server, store.ErrCorrupt)
	}
	return store.Cooldown{Attempts: a, Until: time.UnixMilli(u)}, nil
}

// ClaimDial implements store.Cooldowns.
func (s *Store) ClaimDial(ctx context.Context, server string, prev, next store.Cooldown) (bool, error) {
	n, err := claimDial.Run(ctx, s.rdb, []string{s.cooldownKey(server)}, prev.Attempts, next.Attempts,
		next.Until.UnixMilli(), next.Until.Add(cooldownKeep).UnixMilli()).Int()
	if err != nil {
		return false, s.fail("claim dial", server, err)
	}
	return n == 1, nil
}

// ServerUp implements store.Cooldowns.
func (s *Store) ServerUp(ctx context.Context, server string) error {
	_, err := s.rdb.TxPipelined(ctx, func(p goredis.Pipeliner) error {
		p.Del(ctx, s.cooldownKey(server))
		p.Publish(ctx, s.channel("up"), server)
		return nil
	})
	if err != nil {
		return s.fail("clear cooldown", server, err)
	}
	return nil
}

// WatchUp implements store.Cooldowns.
func (s *Store) WatchUp(server string) (<-chan struct{}, func()) {
	return s.wake.Watch(s.channel("up") + "\x00" + server)
}

func (s *Store) catalogKey(key string) string { return s.prefix + "catalog:" + esc(key) }

// LoadCatalog implements store.Catalogs.
func (s *Store) LoadCatalog(ctx context.Context, key string) ([]byte, bool, error) {
	d, err := s.rdb.Get(ctx, s.catalogKey(key)).Bytes()
	switch {
	case errors.Is(err, goredis.Nil):
		return nil, false, nil
	case err != nil:
		return nil, false, s.fail("load catalog", key, err)
	}
	return d, true, nil
}

// SaveCatalog implements store.Catalogs.
func (s *Store) SaveCatalog(ctx context.Context, key string, data []byte) error {
	if err := s.rdb.Set(ctx, s.catalogKey(key), data, 0).Err(); err != nil {
		return s.fail("save catalog", key, err)
	}
	return nil
}

// Tasks implements store.TaskStores: scope's records in one hash, a
// field per task (its server and id), each the record as JSON.
func (s *Store) Tasks(scope string) store.TaskStore { return &tasks{s: s, scope: scope} }

type tasks struct {
	s     *Store
	scope string
}

func (t *tasks) key() string { return t.s.prefix + "tasks:" + esc(t.scope) }

func taskField(server, taskID string) string { return esc(server) + "/" + esc(taskID) }

// SaveTask implements store.TaskStore.
func (t *tasks) SaveTask(ctx context.Context, r store.TaskRecord) error {
	data, err := json.Marshal(r)
	if err == nil {
		err = r.Validate()
	}
	if err == nil {
		err = t.s.rdb.HSet(ctx, t.key(), taskField(r.Server, r.TaskID), data).Err()
	}
	if err != nil {
		return t.s.fail("save task", esc(t.scope)+":"+r.Key(), err)
	}
	return nil
}

// DeleteTask implements store.TaskStore.
func (t *tasks) DeleteTask(ctx context.Context, server, taskID string) error {
	if err := t.s.rdb.HDel(ctx, t.key(), taskField(server, taskID)).Err(); err != nil {
		return t.s.fail("delete task", esc(t.scope)+":"+server+"/"+taskID, err)
	}
	return nil
}

// LoadTasks implements store.TaskStore. A record that is not one, or is
// another task's than its field says, is reported (store.ErrCorrupt) and
// left alone.
func (t *tasks) LoadTasks(ctx context.Context) ([]store.TaskRecord, error) {
	h, err := t.s.rdb.HGetAll(ctx, t.key()).Result()
	if err != nil {
		return nil, t.s.fail("load tasks", esc(t.scope), err)
	}
	var (
		out  []store.TaskRecord
		errs []error
	)
	for field, data := range h {
		srv, id, _ := strings.Cut(field, "/")
		srv, err1 := url.PathUnescape(srv)
		id, err2 := url.PathUnescape(id)
		if err := errors.Join(err1, err2); err != nil {
			errs = append(errs, t.s.fail("load task", esc(t.scope)+":"+field, fmt.Errorf("%w: %w", store.ErrCorrupt, err)))
			continue
		}
		r, err := store.UnmarshalTask([]byte(data), srv, id)
		if err != nil {
			errs = append(errs, t.s.fail("load task", esc(t.scope)+":"+field, err))
			continue
		}
		out = append(out, r)
	}
	return out, errors.Join(errs...)
}

var _ store.Shared = (*Store)(nil)
