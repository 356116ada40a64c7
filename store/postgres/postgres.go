// Package postgres keeps mcpfleet's shared state in PostgreSQL
// (github.com/jackc/pgx/v5), for the replicas of a host: OAuth credentials
// by user, server and issuer with fenced writes (an upsert that keeps a
// row written under a larger fence), refresh leases (a row per name whose
// fence only grows, taken over once expired by the database's clock),
// the shared cooldown of upstream servers (a claim by compare-and-set),
// catalogs by server identity, and task handles. Wake-ups (a lease
// released, a server back up) go by LISTEN/NOTIFY on one connection per
// Store.
//
// It is a module of its own, so that a host that keeps its state in files
// or in memory needs no PostgreSQL driver. New creates its tables if they
// are missing; every table name starts with the Store's prefix
// (DefaultPrefix).
package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/mcpfleet/mcpfleet/internal/wakeup"
	"github.com/mcpfleet/mcpfleet/store"
)

// DefaultPrefix starts every table and notification channel a Store uses.
const DefaultPrefix = "mcpfleet_"

// relisten is how long the listener waits before it connects again after
// it lost its connection.
const relisten = time.Second

// Store is a store.Shared in PostgreSQL. It is safe for concurrent use.
// Close it to end its listening connection; the pool stays the host's.
type Store struct {
	// Set at creation, read-only.
	pool   *pgxpool.Pool
	prefix string
	name   string
	t      tables
	cancel context.CancelFunc
	done   chan struct{} // closed when the listener has stopped
	wake   wakeup.Set    // lease releases and servers up, by channel and payload
}

// tables are the quoted names of the Store's tables.
type tables struct{ tokens, bindings, leases, cooldowns, catalogs, tasks string }

// Option configures New.
type Option func(*Store)

// WithPrefix sets the prefix of every table and channel name. Defaults to
// DefaultPrefix.
func WithPrefix(p string) Option { return func(s *Store) { s.prefix = p } }

// New returns a Store on pool, creating its tables if they are missing,
// and starts listening for wake-ups. A database that cannot be reached
// within ctx fails New.
func New(ctx context.Context, pool *pgxpool.Pool, opts ...Option) (*Store, error) {
	cc := pool.Config().ConnConfig
	s := &Store{pool: pool, prefix: DefaultPrefix, done: make(chan struct{}),
		name: fmt.Sprintf("postgres %s:%d/%s", cc.Host, cc.Port, cc.Database)}
	for _, opt := range opts {
		opt(s)
	}
	q := func(n string) string { return pgx.Identifier{s.prefix + n}.Sanitize() }
	s.t = tables{tokens: q("tokens"), bindings: q("token_bindings"), leases: q("leases"),
		cooldowns: q("cooldowns"), catalogs: q("catalogs"), tasks: q("tasks")}
	if err := s.migrate(ctx); err != nil {
		return nil, s.fail("create tables", "", err)
	}
	lctx, cancel := context.WithCancel(context.Background())
	s.cancel = cancel
	ready := make(chan error, 1)
	go s.listen(lctx, ready)
	select {
	case err := <-ready:
		if err != nil {
			cancel()
			<-s.done
			return nil, s.fail("listen", "", err)
		}
	case <-ctx.Done():
		cancel()
		<-s.done
		return nil, s.fail("listen", "", ctx.Err())
	}
	return s, nil
}

// Name names the store: "postgres host:port/database".
func (s *Store) Name() string { return s.name }

// Close stops listening. The pool is left open.
func (s *Store) Close() error {
	s.cancel()
	<-s.done
	return nil
}

func (s *Store) fail(op, key string, err error) error {
	return &store.Error{Store: s.name, Op: op, Key: key, Err: err}
}

func (s *Store) migrate(ctx context.Context) error {
	_, err := s.pool.Exec(ctx, `
CREATE TABLE IF NOT EXISTS `+s.t.tokens+` (
  usr text NOT NULL, server text NOT NULL, issuer text NOT NULL,
  data bytea NOT NULL, fence bigint NOT NULL, saved timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (usr, server, issuer));
CREATE TABLE IF NOT EXISTS `+s.t.bindings+` (
  usr text NOT NULL, server text NOT NULL, issuer text NOT NULL,
  PRIMARY KEY (usr, server));
CREATE TABLE IF NOT EXISTS `+s.t.leases+` (
  name text PRIMARY KEY, fence bigint NOT NULL, expires timestamptz NOT NULL);
CREATE TABLE IF NOT EXISTS `+s.t.cooldowns+` (
  server text PRIMARY KEY, attempts integer NOT NULL, until timestamptz NOT NULL);
CREATE TABLE IF NOT EXISTS `+s.t.catalogs+` (
  key text PRIMARY KEY, data bytea NOT NULL, saved timestamptz NOT NULL DEFAULT now());
CREATE TABLE IF NOT EXISTS `+s.t.tasks+` (
  scope text NOT NULL, server text NOT NULL, task_id text NOT NULL, data bytea NOT NULL,
  PRIMARY KEY (scope, server, task_id));`)
	return err
}

func (s *Store) channel(what string) string { return s.prefix + what }

// listen holds a connection of its own (not the pool's: LISTEN ties it up)
// and wakes the waiters of every notification; a lost connection is made
// again after relisten, and every waiter is woken, since a notification
// may have been missed meanwhile.
func (s *Store) listen(ctx context.Context, ready chan<- error) {
	defer close(s.done)
	first := true
	for ctx.Err() == nil {
		err := s.listenOnce(ctx, func() {
			if first {
				first = false
				ready <- nil
			} else {
				s.wake.WakeAll()
			}
		})
		if first {
			ready <- err
			return
		}
		t := time.NewTimer(relisten)
		select {
		case <-ctx.Done():
		case <-t.C:
		}
		t.Stop()
	}
}

func (s *Store) listenOnce(ctx context.Context, listening func()) error {
	conn, err := pgx.ConnectConfig(ctx, s.pool.Config().ConnConfig.Copy())
	if err != nil {
		return err
	}
	defer conn.Close(context.Background())
	for _, ch := range []string{s.channel("lease"), s.channel("up")} {
		if _, err := conn.Exec(ctx, "LISTEN "+pgx.Identifier{ch}.Sanitize()); err != nil {
			return err
		}
	}
	listening()
	for {
		n, err := conn.WaitForNotification(ctx)
		if err != nil {
			return err
		}
		s.wake.Wake(n.Channel + "\x00" + n.Payload)
	}
}

// LoadToken implements store.TokenStore.
func (s *Store) LoadToken(ctx context.Context, k store.TokenKey) (store.TokenRecord, bool, error) {
	var q string
	args := []any{k.User, k.Server}
	if k.Issuer == "" {
		q = `SELECT t.data, t.fence FROM ` + s.t.bindings + ` b JOIN ` + s.t.tokens +
			` t USING (usr, server, issuer) WHERE b.usr = $1 AND b.server = $2`
	} else {
		q = `SELECT data, fence FROM ` + s.t.tokens + ` WHERE usr = $1 AND server = $2 AND issuer = $3`
		args = append(args, k.Issuer)
	}
	var r store.TokenRecord
	var fence int64
	err := s.pool.QueryRow(ctx, q, args...).Scan(&r.Data, &fence)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return store.TokenRecord{}, false, nil
	case err != nil:
		return store.TokenRecord{}, false, s.fail("load token", k.String(), err)
	case fence < 0:
		return store.TokenRecord{}, false, s.fail("load token", k.String(), store.ErrCorrupt)
	}
	r.Fence = uint64(fence)
	return r, true, nil
}

// SaveToken implements store.TokenStore.
func (s *Store) SaveToken(ctx context.Context, k store.TokenKey, r store.TokenRecord) error {
	var n int
	err := s.pool.QueryRow(ctx, `
WITH t AS (
  INSERT INTO `+s.t.tokens+` AS t (usr, server, issuer, data, fence) VALUES ($1, $2, $3, $4, $5)
  ON CONFLICT (usr, server, issuer) DO UPDATE SET data = EXCLUDED.data, fence = EXCLUDED.fence, saved = now()
  WHERE t.fence <= EXCLUDED.fence
  RETURNING 1
), b AS (
  INSERT INTO `+s.t.bindings+` (usr, server, issuer) SELECT $1, $2, $3 FROM t
  ON CONFLICT (usr, server) DO UPDATE SET issuer = EXCLUDED.issuer
  RETURNING 1
)
SELECT count(*) FROM t`, k.User, k.Server, k.Issuer, r.Data, int64(r.Fence)).Scan(&n)
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
	_, err := s.pool.Exec(ctx, `
WITH b AS (DELETE FROM `+s.t.bindings+` WHERE usr = $1 AND server = $2)
DELETE FROM `+s.t.tokens+` WHERE usr = $1 AND server = $2`, user, server)
	if err != nil {
		return s.fail("delete tokens", store.TokenKey{User: user, Server: server}.String(), err)
	}
	return nil
}

// Acquire implements store.Leases. The lease's row stays when it is
// released (its expiry set to 1970), so that its fence keeps growing.
func (s *Store) Acquire(ctx context.Context, name string, ttl time.Duration) (store.Lease, error) {
	if err := ctx.Err(); err != nil {
		return store.Lease{}, s.fail("acquire lease", name, err)
	}
	ms := max(ttl.Milliseconds(), 1)
	released, stop := s.wake.Watch(s.channel("lease") + "\x00" + name)
	defer stop()
	for {
		var fence int64
		var expires time.Time
		var left float64
		err := s.pool.QueryRow(ctx, `
WITH a AS (
  INSERT INTO `+s.t.leases+` AS l (name, fence, expires)
  VALUES ($1, 1, clock_timestamp() + $2 * interval '1 millisecond')
  ON CONFLICT (name) DO UPDATE SET fence = l.fence + 1, expires = EXCLUDED.expires
  WHERE l.expires <= clock_timestamp()
  RETURNING fence, expires
)
SELECT a.fence, a.expires, 0::float8 FROM a
UNION ALL
SELECT 0, l.expires, extract(epoch FROM l.expires - clock_timestamp()) * 1000
FROM `+s.t.leases+` l WHERE l.name = $1 AND NOT EXISTS (SELECT 1 FROM a)
LIMIT 1`, name, ms).Scan(&fence, &expires, &left)
		if err != nil && !errors.Is(err, pgx.ErrNoRows) {
			return store.Lease{}, s.fail("acquire lease", name, err)
		}
		if fence > 0 {
			return store.Lease{Name: name, Fence: uint64(fence), Expires: expires}, nil
		}
		wait := time.Duration(left * float64(time.Millisecond))
		if err != nil || wait <= 0 {
			wait = time.Millisecond // expired between the two reads: try again
		}
		if err := wakeup.Wait(ctx, released, wait); err != nil {
			return store.Lease{}, s.fail("acquire lease", name, err)
		}
	}
}

// Release implements store.Leases.
func (s *Store) Release(ctx context.Context, l store.Lease) error {
	_, err := s.pool.Exec(ctx, `
WITH r AS (
  UPDATE `+s.t.leases+` SET expires = 'epoch' WHERE name = $1 AND fence = $2 RETURNING name
)
SELECT pg_notify($3, name) FROM r`, l.Name, int64(l.Fence), s.channel("lease"))
	if err != nil {
		return s.fail("release lease", l.Name, err)
	}
	return nil
}

// Cooldown implements store.Cooldowns.
func (s *Store) Cooldown(ctx context.Context, server string) (store.Cooldown, error) {
	var c store.Cooldown
	err := s.pool.QueryRow(ctx, `SELECT attempts, until FROM `+s.t.cooldowns+` WHERE server = $1`, server).
		Scan(&c.Attempts, &c.Until)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return store.Cooldown{}, nil
	case err != nil:
		return store.Cooldown{}, s.fail("read cooldown", server, err)
	}
	return c, nil
}

// ClaimDial implements store.Cooldowns.
func (s *Store) ClaimDial(ctx context.Context, server string, prev, next store.Cooldown) (bool, error) {
	var q string
	if prev.Attempts == 0 {
		q = `INSERT INTO ` + s.t.cooldowns + ` AS c (server, attempts, until) VALUES ($1, $3, $4)
ON CONFLICT (server) DO UPDATE SET attempts = EXCLUDED.attempts, until = EXCLUDED.until WHERE c.attempts = $2`
	} else {
		q = `UPDATE ` + s.t.cooldowns + ` SET attempts = $3, until = $4 WHERE server = $1 AND attempts = $2`
	}
	tag, err := s.pool.Exec(ctx, q, server, prev.Attempts, next.Attempts, next.Until)
	if err != nil {
		return false, s.fail("claim dial", server, err)
	}
	return tag.RowsAffected() == 1, nil
}

// ServerUp implements store.Cooldowns.
func (s *Store) ServerUp(ctx context.Context, server string) error {
	_, err := s.pool.Exec(ctx, `
WITH d AS (DELETE FROM `+s.t.cooldowns+` WHERE server = $1)
SELECT pg_notify($2, $1)`, server, s.channel("up"))
	if err != nil {
		return s.fail("clear cooldown", server, err)
	}
	return nil
}

// WatchUp implements store.Cooldowns.
func (s *Store) WatchUp(server string) (<-chan struct{}, func()) {
	return s.wake.Watch(s.channel("up") + "\x00" + server)
}

// LoadCatalog implements store.Catalogs.
func (s *Store) LoadCatalog(ctx context.Context, key string) ([]byte, bool, error) {
	var d []byte
	err := s.pool.QueryRow(ctx, `SELECT data FROM `+s.t.catalogs+` WHERE key = $1`, key).Scan(&d)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return nil, false, nil
	case err != nil:
		return nil, false, s.fail("load catalog", key, err)
	}
	return d, true, nil
}

// SaveCatalog implements store.Catalogs.
func (s *Store) SaveCatalog(ctx context.Context, key string, data []byte) error {
	_, err := s.pool.Exec(ctx, `INSERT INTO `+s.t.catalogs+` (key, data) VALUES ($1, $2)
ON CONFLICT (key) DO UPDATE SET data = EXCLUDED.data, saved = now()`, key, data)
	if err != nil {
		return s.fail("save catalog", key, err)
	}
	return nil
}

// Tasks implements store.TaskStores: scope's records are the rows of the
// tasks table under scope, each the record as JSON.
func (s *Store) Tasks(scope string) store.TaskStore { return &tasks{s: s, scope: scope} }

type tasks struct {
	s     *Store
	scope string
}

// SaveTask implements store.TaskStore.
func (t *tasks) SaveTask(ctx context.Context, r store.TaskRecord) error {
	data, err := json.Marshal(r)
	if err == nil {
		err = r.Validate()
	}
	if err == nil {
		_, err = t.s.pool.Exec(ctx, `INSERT INTO `+t.s.t.tasks+` (scope, server, task_id, data) VALUES ($1, $2, $3, $4)
ON CONFLICT (scope, server, task_id) DO UPDATE SET data = EXCLUDED.data`, t.scope, r.Server, r.TaskID, data)
	}
	if err != nil {
		return t.s.fail("save task", t.scope+":"+r.Key(), err)
	}
	return nil
}

// DeleteTask implements store.TaskStore.
func (t *tasks) DeleteTask(ctx context.Context, server, taskID string) error {
	_, err := t.s.pool.Exec(ctx, `DELETE FROM `+t.s.t.tasks+` WHERE scope = $1 AND server = $2 AND task_id = $3`,
		t.scope, server, taskID)
	if err != nil {
		return t.s.fail("delete task", t.scope+":"+server+"/"+taskID, err)
	}
	return nil
}

// LoadTasks implements store.TaskStore. A row that is not a record, or is
// another task's than its key says, is reported (store.ErrCorrupt) and
// left alone.
func (t *tasks) LoadTasks(ctx context.Context) ([]store.TaskRecord, error) {
	rows, err := t.s.pool.Query(ctx, `SELECT server, task_id, data FROM `+t.s.t.tasks+` WHERE scope = $1`, t.scope)
	if err != nil {
		return nil, t.s.fail("load tasks", t.scope, err)
	}
	defer rows.Close()
	var (
		out  []store.TaskRecord
		errs []error
	)
	for rows.Next() {
		var srv, id string
		var data []byte
		if err := rows.Scan(&srv, &id, &data); err != nil {
			return nil, t.s.fail("load tasks", t.scope, err)
		}
		r, err := store.UnmarshalTask(data, srv, id)
		if err != nil {
			errs = append(errs, t.s.fail("load task", t.scope+":"+srv+"/"+id, err))
			continue
		}
		out = append(out, r)
	}
	if err := rows.Err(); err != nil {
		return nil, t.s.fail("load tasks", t.scope, err)
	}
	return out, errors.Join(errs...)
}

var _ store.Shared = (*Store)(nil)
