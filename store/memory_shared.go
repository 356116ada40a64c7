package store

import (
	"context"
	"sync"
	"time"

	"github.com/mcpfleet/mcpfleet/internal/wakeup"
)

// Memory is a Shared store in the memory of one process: the per-user
// fleets of one host share credentials, refresh leases, cooldowns,
// catalogs and task handles through it. Nothing outlives the process. The
// zero value is not ready; use NewMemory.
type Memory struct {
	now func() time.Time
	up  wakeup.Set // ServerUp's wake-ups, by server

	mu        sync.Mutex // guards the fields below
	tokens    map[[2]string]*memTokens
	leases    map[string]*memLease
	fences    map[string]uint64
	cooldowns map[string]Cooldown
	catalogs  map[string][]byte
	tasks     map[string]map[[2]string]TaskRecord // by scope, then server and task id
}

type memTokens struct {
	bound   string
	records map[string]TokenRecord
}

type memLease struct {
	fence    uint64
	expires  time.Time
	released chan struct{} // closed by Release or a takeover
}

// NewMemory returns an empty Memory store.
func NewMemory() *Memory {
	return &Memory{now: time.Now, tokens: map[[2]string]*memTokens{}, leases: map[string]*memLease{},
		fences: map[string]uint64{}, cooldowns: map[string]Cooldown{}, catalogs: map[string][]byte{},
		tasks: map[string]map[[2]string]TaskRecord{}}
}

// Name names the store.
func (s *Memory) Name() string { return "memory store" }

func (s *Memory) fail(op, key string, err error) error {
	return &Error{Store: s.Name(), Op: op, Key: key, Err: err}
}

func clone(b []byte) []byte { return append([]byte(nil), b...) }

// LoadToken implements TokenStore.
func (s *Memory) LoadToken(ctx context.Context, k TokenKey) (TokenRecord, bool, error) {
	if err := ctx.Err(); err != nil {
		return TokenRecord{}, false, s.fail("load token", k.String(), err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	t := s.tokens[[2]string{k.User, k.Server}]
	if t == nil {
		return TokenRecord{}, false, nil
	}
	iss := k.Issuer
	if iss == "" {
		iss = t.bound
	}
	r, ok := t.records[iss]
	if !ok {
		return TokenRecord{}, false, nil
	}
	return TokenRecord{Data: clone(r.Data), Fence: r.Fence}, true, nil
}

// SaveToken implements TokenStore.
func (s *Memory) SaveToken(ctx context.Context, k TokenKey, r TokenRecord) error {
	if err := ctx.Err(); err != nil {
		return s.fail("save token", k.String(), err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	t := s.tokens[[2]string{k.User, k.Server}]
	if t == nil {
		t = &memTokens{records: map[string]TokenRecord{}}
		s.tokens[[2]string{k.User, k.Server}] = t
	}
	if old, ok := t.records[k.Issuer]; ok && old.Fence > r.Fence {
		return s.fail("save token", k.String(), ErrFenced)
	}
	t.records[k.Issuer] = TokenRecord{Data: clone(r.Data), Fence: r.Fence}
	t.bound = k.Issuer
	return nil
}

// DeleteTokens implements TokenStore.
func (s *Memory) DeleteTokens(ctx context.Context, user, server string) error {
	if err := ctx.Err(); err != nil {
		return s.fail("delete tokens", TokenKey{User: user, Server: server}.String(), err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.tokens, [2]string{user, server})
	return nil
}

// Acquire implements Leases.
func (s *Memory) Acquire(ctx context.Context, name string, ttl time.Duration) (Lease, error) {
	for {
		if err := ctx.Err(); err != nil {
			return Lease{}, s.fail("acquire lease", name, err)
		}
		s.mu.Lock()
		now := s.now()
		l := s.leases[name]
		if l == nil || !now.Before(l.expires) {
			if l != nil {
				close(l.released) // expired: taken over
			}
			s.fences[name]++
			nl := &memLease{fence: s.fences[name], expires: now.Add(ttl), released: make(chan struct{})}
			s.leases[name] = nl
			s.mu.Unlock()
			return Lease{Name: name, Fence: nl.fence, Expires: nl.expires}, nil
		}
		wait, released := l.expires.Sub(now), l.released
		s.mu.Unlock()
		if err := wakeup.Wait(ctx, released, wait); err != nil {
			return Lease{}, s.fail("acquire lease", name, err)
		}
	}
}

// Release implements Leases.
func (s *Memory) Release(_ context.Context, l Lease) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if cur := s.leases[l.Name]; cur != nil && cur.fence == l.Fence {
		delete(s.leases, l.Name)
		close(cur.released)
	}
	return nil
}

// Cooldown implements Cooldowns.
func (s *Memory) Cooldown(ctx context.Context, server string) (Cooldown, error) {
	if err := ctx.Err(); err != nil {
		return Cooldown{}, s.fail("read cooldown", server, err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.cooldowns[server], nil
}

// ClaimDial implements Cooldowns.
func (s *Memory) ClaimDial(ctx context.Context, server string, prev, next Cooldown) (bool, error) {
	if err := ctx.Err(); err != nil {
		return false, s.fail("claim dial", server, err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cooldowns[server].Attempts != prev.Attempts {
		return false, nil
	}
	s.cooldowns[server] = next
	return true, nil
}

// ServerUp implements Cooldowns.
func (s *Memory) ServerUp(ctx context.Context, server string) error {
	if err := ctx.Err(); err != nil {
		return s.fail("clear cooldown", server, err)
	}
	s.mu.Lock()
	delete(s.cooldowns, server)
	s.mu.Unlock()
	s.up.Wake(server)
	return nil
}

// WatchUp implements Cooldowns.
func (s *Memory) WatchUp(server string) (<-chan struct{}, func()) { return s.up.Watch(server) }

// LoadCatalog implements Catalogs.
func (s *Memory) LoadCatalog(ctx context.Context, key string) ([]byte, bool, error) {
	if err := ctx.Err(); err != nil {
		return nil, false, s.fail("load catalog", key, err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	d, ok := s.catalogs[key]
	return clone(d), ok, nil
}

// SaveCatalog implements Catalogs.
func (s *Memory) SaveCatalog(ctx context.Context, key string, data []byte) error {
	if err := ctx.Err(); err != nil {
		return s.fail("save catalog", key, err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.catalogs[key] = clone(data)
	return nil
}

// Tasks implements TaskStores. A scope takes memory only while it holds
// records: a user whose fleet never started a task costs nothing here.
func (s *Memory) Tasks(scope string) TaskStore { return &memTasks{s: s, scope: scope} }

// memTasks is one scope's view of Memory's tasks.
type memTasks struct {
	s     *Memory
	scope string
}

func (t *memTasks) err(op, key string, err error) error {
	return t.s.fail(op, t.scope+":"+key, err)
}

// SaveTask implements TaskStore.
func (t *memTasks) SaveTask(ctx context.Context, r TaskRecord) error {
	err := ctx.Err()
	if err == nil {
		err = r.Validate()
	}
	if err != nil {
		return t.err("save task", r.Key(), err)
	}
	t.s.mu.Lock()
	defer t.s.mu.Unlock()
	m := t.s.tasks[t.scope]
	if m == nil {
		m = map[[2]string]TaskRecord{}
		t.s.tasks[t.scope] = m
	}
	m[[2]string{r.Server, r.TaskID}] = r.Clone()
	return nil
}

// DeleteTask implements TaskStore.
func (t *memTasks) DeleteTask(ctx context.Context, server, taskID string) error {
	if err := ctx.Err(); err != nil {
		return t.err("delete task", server+"/"+taskID, err)
	}
	t.s.mu.Lock()
	defer t.s.mu.Unlock()
	m := t.s.tasks[t.scope]
	delete(m, [2]string{server, taskID})
	if len(m) == 0 {
		delete(t.s.tasks, t.scope)
	}
	return nil
}

// LoadTasks implements TaskStore.
func (t *memTasks) LoadTasks(ctx context.Context) ([]TaskRecord, error) {
	if err := ctx.Err(); err != nil {
		return nil, t.err("load tasks", "", err)
	}
	t.s.mu.Lock()
	defer t.s.mu.Unlock()
	out := make([]TaskRecord, 0, len(t.s.tasks[t.scope]))
	for _, r := range t.s.tasks[t.scope] {
		out = append(out, r.Clone())
	}
	return out, nil
}
