package client

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"time"

	"github.com/mcpfleet/mcpfleet/internal/catalog"
	"github.com/mcpfleet/mcpfleet/store"
	"github.com/mcpfleet/mcpfleet/transport/http/oauth"
)

// sharedTimeout bounds one request of the Manager's own to the shared
// store (a catalog read, a cooldown claim): past it the Manager goes on
// with what it has.
const sharedTimeout = 2 * time.Second

// WithUser names the user whose fleet the Manager is, for a host that
// runs one fleet per user (see the fleet package): the user's OAuth
// credentials are kept apart from every other user's, in the token store
// and in the shared state. Defaults to "", a host with one user.
func WithUser(id string) Option { return func(o *options) { o.user = id } }

// WithSharedState keeps what the Manager learns where its other replicas
// (and the other users' fleets) find it, and reads what they learned:
//
//   - OAuth credentials by user, server and issuer, instead of
//     WithTokenStore's store; a refresh holds the grant's lease, so that
//     one replica refreshes and the others read its token;
//   - the cooldown of each HTTP upstream, by its URL (without userinfo
//     and query): a server one replica found down is backed off by all,
//     one dial per backoff step for the whole set, and the replica that
//     finds it back wakes the others; a refusal of the user's own
//     credentials (401, 403, authorization needed) is the server up, and
//     backs off only that user's dials;
//   - the last good catalogs, by server identity (WithCatalogIdentity),
//     unless WithCatalogCache keeps them in a file.
//
// When the store cannot be reached the Manager goes on with what its
// process holds (see store.Shared). Task handles go there with
// TaskOptions.SharedScope.
func WithSharedState(s store.Shared) Option { return func(o *options) { o.shared = s } }

// WithCatalogIdentity names what each server is for the catalog cache,
// instead of a hash of its spec: servers of different Managers with one
// identity share their cached catalog. The fleet package gives each server
// of a user's fleet the identity of its template entry, which holds no
// per-user value, so that a returning user's tools show before any
// connect. identity returns "" for a server to leave it to the default.
func WithCatalogIdentity(identity func(server string) string) Option {
	return func(o *options) { o.catalogIdentity = identity }
}

// tokenStore returns the oauth.TokenStore the Manager's Authorizers use.
func (o *options) tokenStore() oauth.TokenStore {
	switch {
	case o.shared != nil:
		return &sharedTokens{st: o.shared, user: o.user}
	case o.user != "":
		return &userTokens{st: o.tokens, user: o.user}
	}
	return o.tokens
}

// oauthOptions are the options of server name's Authorizer.
func (m *Manager) oauthOptions(name string) []oauth.Option {
	opts := []oauth.Option{oauth.WithStore(m.tokens), oauth.WithLogger(m.opts.logger)}
	if m.opts.shared != nil {
		lease := "oauth:" + store.TokenKey{User: m.opts.user, Server: name}.String()
		opts = append(opts, oauth.WithLeases(m.opts.shared, lease, 0))
	}
	return append(opts, m.opts.oauthOptions...)
}

// userTokens keeps one user's entries in a store of many users' (the
// pool's): under the user's name, a slash, and the server's.
type userTokens struct {
	st   oauth.TokenStore
	user string
}

func (u *userTokens) key(server string) string { return url.PathEscape(u.user) + "/" + server }

func (u *userTokens) Load(ctx context.Context, key string) (*oauth.Entry, error) {
	return u.st.Load(ctx, u.key(key))
}

func (u *userTokens) Save(ctx context.Context, key string, e *oauth.Entry) error {
	return u.st.Save(ctx, u.key(key), e)
}

func (u *userTokens) Delete(ctx context.Context, key string) error {
	return u.st.Delete(ctx, u.key(key))
}

// sharedTokens is a shared store's TokenStore as an Authorizer's: entries
// as JSON, by user, server and the entry's issuer.
type sharedTokens struct {
	st   store.TokenStore
	user string
}

func (s *sharedTokens) Load(ctx context.Context, server string) (*oauth.Entry, error) {
	k := store.TokenKey{User: s.user, Server: server}
	r, ok, err := s.st.LoadToken(ctx, k)
	if err != nil || !ok {
		return nil, err
	}
	var e oauth.Entry
	if err := json.Unmarshal(r.Data, &e); err != nil {
		// The message of a JSON syntax error quotes no content.
		return nil, &store.Error{Store: storeName(s.st), Op: "load token", Key: k.String(),
			Err: fmt.Errorf("%w: %v", store.ErrCorrupt, err)}
	}
	e.Fence = r.Fence
	return &e, nil
}

func (s *sharedTokens) Save(ctx context.Context, server string, e *oauth.Entry) error {
	data, err := json.Marshal(e)
	if err != nil {
		return err
	}
	return s.st.SaveToken(ctx, store.TokenKey{User: s.user, Server: server, Issuer: e.Issuer},
		store.TokenRecord{Data: data, Fence: e.Fence})
}

func (s *sharedTokens) Delete(ctx context.Context, server string) error {
	return s.st.DeleteTokens(ctx, s.user, server)
}

func storeName(st any) string {
	if n, ok := st.(interface{ Name() string }); ok {
		return n.Name()
	}
	return "token store"
}

// ForgetAuthorization forgets everything the Manager holds for server
// name's OAuth: its tokens, its client registration and the remembered
// authorization server, in memory and in the token store (every issuer's,
// with a shared store), and any authorization in progress. The next
// request of the server's finds no token, and the server waits in
// NeedsAuthorization for the host to authorize it again, which registers
// the client again where the authorization server offers registration.
func (m *Manager) ForgetAuthorization(ctx context.Context, name string) error {
	s, a, err := m.authorizer("forget authorization", name)
	if err != nil {
		return err
	}
	if err := a.Forget(ctx); err != nil {
		return withOp("forget authorization", name, &ServerError{Server: name, Err: err})
	}
	s.forgotten()
	return nil
}

// forgotten moves a connected server, whose runtime holds a token now
// forgotten, to NeedsAuthorization: its next request would be refused.
func (s *slot) forgotten() {
	s.mu.Lock()
	l := s.lease
	s.mu.Unlock()
	if l != nil {
		s.needsAuthorization(l, &oauth.NeedsAuthorizationError{Reason: "the authorization was forgotten"})
	}
}

// sharedRetry is how often a write the shared store failed is tried
// again.
const sharedRetry = time.Second

// owed reports whether writes to the shared store are owed.
func (c *catalogCache) owed() bool {
	if c.shared == nil {
		return false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.pending) > 0
}

// sharedCatalogKey is the key of a catalog in the shared store.
func sharedCatalogKey(key string) string { return "catalog:" + key }

// prefetch reads the shared store's catalog under key into the cache's
// memory, so that enabling the server publishes it without I/O under the
// slot's lock. A store that fails or is slow costs nothing but the
// cached catalog.
func (c *catalogCache) prefetch(ctx context.Context, key string) {
	if c == nil || c.shared == nil || key == "" {
		return
	}
	c.mu.Lock()
	_, have := c.servers[key]
	c.mu.Unlock()
	if have {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, sharedTimeout)
	defer cancel()
	data, ok, err := c.shared.LoadCatalog(ctx, sharedCatalogKey(key))
	if err != nil {
		c.log.Warn("mcpfleet: shared catalog not read", "error", err)
		return
	}
	if !ok {
		return
	}
	var r cacheRecord
	if err := json.Unmarshal(data, &r); err != nil || r.Key != key {
		if err == nil {
			err = errors.New("its key is another's")
		}
		c.log.Warn("mcpfleet: shared catalog is corrupt; ignoring it",
			"error", &store.Error{Store: storeName(c.shared), Op: "load catalog", Key: key, Err: fmt.Errorf("%w: %v", store.ErrCorrupt, err)})
		return
	}
	c.mu.Lock()
	if _, have := c.servers[key]; !have {
		c.servers[key] = r
	}
	c.mu.Unlock()
}

// flushShared writes the records saved since the last flush to the shared
// store; one that fails stays owed, and is written at the next flush.
func (c *catalogCache) flushShared() {
	c.mu.Lock()
	pending := make(map[string]cacheRecord, len(c.pending))
	for k := range c.pending {
		pending[k] = c.servers[k]
	}
	clear(c.pending)
	c.mu.Unlock()
	for k, r := range pending {
		data, err := json.Marshal(r)
		if err == nil {
			ctx, cancel := context.WithTimeout(context.Background(), sharedTimeout)
			err = c.shared.SaveCatalog(ctx, sharedCatalogKey(k), data)
			cancel()
		}
		if err != nil {
			c.log.Warn("mcpfleet: could not write the shared catalog", "error", err)
			c.mu.Lock()
			c.pending[k] = struct{}{}
			c.mu.Unlock()
		}
	}
}

// openSharedCatalogs returns a catalog cache in the shared store, kept by
// the catalogs' keys alone (their identity), not by server names.
func openSharedCatalogs(st store.Catalogs, log *slog.Logger) *catalogCache {
	c := &catalogCache{shared: st, log: log, servers: map[string]cacheRecord{}, pending: map[string]struct{}{},
		wake: make(chan struct{}, 1), stop: make(chan struct{}), done: make(chan struct{})}
	go c.run()
	return c
}

// identityKey is the hash of a catalog identity.
func identityKey(id string) string {
	sum := sha256.Sum256([]byte("identity\x00" + id))
	return hex.EncodeToString(sum[:])
}

// sharedLookup returns the cached catalog under key alone.
func (c *catalogCache) sharedLookup(server, key string) (*catalog.Catalog, bool) {
	c.mu.Lock()
	r, ok := c.servers[key]
	c.mu.Unlock()
	if !ok {
		return nil, false
	}
	return r.catalog(server), true
}

// catalogKey names server name's catalog in the cache: its identity's
// hash (WithCatalogIdentity), else the hash of its config entry or spec;
// "" without a cache.
func (m *Manager) catalogKey(name string, spec ServerSpec, configKey string) string {
	if m.cache == nil {
		return ""
	}
	if f := m.opts.catalogIdentity; f != nil {
		if id := f(name); id != "" {
			return identityKey(id)
		}
	}
	return cacheKey(spec, configKey)
}
