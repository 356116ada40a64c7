package client

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/mcpfleet/mcpfleet/internal/catalog"
	"github.com/mcpfleet/mcpfleet/store"
)

// WithCatalogCache keeps every server's last good catalog in the file at
// path, so that a Manager started later knows the servers' tools before
// they connect: a server whose entry is unchanged has its cached catalog
// published as soon as it is switched on (marked Cached in its status and
// catalog events), until its first live catalog replaces it. A call to a
// cached tool starts a lazy server and waits for it, as any call does.
//
// The file holds the catalogs and a hash of each entry's configuration,
// never header or environment values. A file that is missing, corrupt or
// not a catalog cache is ignored (with a logged reason) and replaced.
// Writes are atomic (a temporary file renamed over it), coalesced, and
// finished by Close.
func WithCatalogCache(path string) Option {
	return func(o *options) { o.cachePath = path }
}

// cacheVersion is the format of the file; another value is foreign.
const cacheVersion = 1

type cacheFile struct {
	Version int                    `json:"mcpfleetCatalogCache"`
	Servers map[string]cacheRecord `json:"servers"`
}

type cacheRecord struct {
	// Key is the sha256 of the server's configuration (see slotConfig.cacheKey).
	Key               string                 `json:"key"`
	SavedAt           time.Time              `json:"savedAt"`
	Tools             []mcp.Tool             `json:"tools,omitempty"`
	Prompts           []mcp.Prompt           `json:"prompts,omitempty"`
	Resources         []mcp.Resource         `json:"resources,omitempty"`
	ResourceTemplates []mcp.ResourceTemplate `json:"resourceTemplates,omitempty"`
	ServerInfo        mcp.Implementation     `json:"serverInfo"`
	Capabilities      mcp.ServerCapabilities `json:"capabilities"`
	Instructions      string                 `json:"instructions,omitempty"`
}

// catalogCache is the file's contents in memory, and the goroutine that
// writes them back.
type catalogCache struct {
	path string
	log  *slog.Logger
	// shared, when set (WithSharedState), keeps the catalogs instead of
	// the file, by key alone (shared.go); servers is then keyed by key.
	shared store.Catalogs

	mu      sync.Mutex // guards servers, dirty and pending
	servers map[string]cacheRecord
	dirty   bool
	pending map[string]struct{} // keys to write to shared

	wake chan struct{} // capacity 1
	stop chan struct{}
	done chan struct{}
}

// openCatalogCache reads the cache at path and starts its writer.
func openCatalogCache(path string, log *slog.Logger) *catalogCache {
	c := &catalogCache{path: path, log: log, servers: map[string]cacheRecord{},
		wake: make(chan struct{}, 1), stop: make(chan struct{}), done: make(chan struct{})}
	data, err := os.ReadFile(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
	case err != nil:
		log.Warn("mcpfleet: catalog cache not read; starting empty", "path", path, "error", err)
	default:
		var f cacheFile
		switch err := json.Unmarshal(data, &f); {
		case err != nil:
			log.Warn("mcpfleet: catalog cache is corrupt; ignoring it", "path", path, "error", err)
		case f.Version != cacheVersion:
			log.Warn("mcpfleet: not a catalog cache of this version; ignoring it", "path", path, "version", f.Version)
		default:
			for name, r := range f.Servers {
				c.servers[name] = r
			}
		}
	}
	go c.run()
	return c
}

// lookup returns the cached catalog of server if it was saved under key.
func (c *catalogCache) lookup(server, key string) (*catalog.Catalog, bool) {
	if c == nil || key == "" {
		return nil, false
	}
	if c.shared != nil {
		return c.sharedLookup(server, key)
	}
	c.mu.Lock()
	r, ok := c.servers[server]
	c.mu.Unlock()
	if !ok || r.Key != key {
		return nil, false
	}
	return r.catalog(server), true
}

// catalog is the record as server's catalog.
func (r cacheRecord) catalog(server string) *catalog.Catalog {
	return (&catalog.Catalog{Server: server, Tools: r.Tools, Prompts: r.Prompts, Resources: r.Resources,
		ResourceTemplates: r.ResourceTemplates, ServerInfo: r.ServerInfo, Capabilities: r.Capabilities,
		Instructions: r.Instructions, FetchedAt: r.SavedAt}).Seal()
}

// save records a live catalog of server, to be written soon. It never
// blocks on the file.
func (c *catalogCache) save(key string, cat *catalog.Catalog) {
	if c == nil || key == "" {
		return
	}
	r := cacheRecord{Key: key, SavedAt: cat.FetchedAt, Tools: cat.Tools, Prompts: cat.Prompts,
		Resources: cat.Resources, ResourceTemplates: cat.ResourceTemplates, ServerInfo: cat.ServerInfo,
		Capabilities: cat.Capabilities, Instructions: cat.Instructions}
	c.mu.Lock()
	if c.shared != nil {
		c.servers[key] = r
		c.pending[key] = struct{}{}
	} else {
		c.servers[cat.Server] = r
	}
	c.dirty = true
	c.mu.Unlock()
	select {
	case c.wake <- struct{}{}:
	default:
	}
}

// run writes the cache whenever it changed, until close. A shared store
// that failed a write is tried again every sharedRetry while the write is
// owed, so that what the Manager learned while the store was down is
// there once it is back.
func (c *catalogCache) run() {
	defer close(c.done)
	var retry <-chan time.Time
	for {
		select {
		case <-c.wake:
		case <-retry:
		case <-c.stop:
			c.flush()
			return
		}
		c.flush()
		retry = nil
		if c.owed() {
			retry = time.After(sharedRetry)
		}
	}
}

// close writes what is left and stops the writer.
func (c *catalogCache) close() {
	if c == nil {
		return
	}
	close(c.stop)
	<-c.done
}

// flush writes the cache if it changed: to a temporary file in the same
// directory, then renamed over the old one, so a reader (or a crash) sees
// the old file or the new, never half of one.
func (c *catalogCache) flush() {
	if c.shared != nil {
		c.flushShared()
		return
	}
	c.mu.Lock()
	if !c.dirty {
		c.mu.Unlock()
		return
	}
	data, err := json.Marshal(cacheFile{Version: cacheVersion, Servers: c.servers})
	c.dirty = false
	c.mu.Unlock()
	if err == nil {
		err = writeAtomic(c.path, data)
	}
	if err != nil {
		c.log.Warn("mcpfleet: could not write the catalog cache", "path", c.path, "error", err)
	}
}

func writeAtomic(path string, data []byte) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), filepath.Base(path)+".tmp*")
	if err != nil {
		return err
	}
	_, werr := tmp.Write(data)
	cerr := tmp.Close()
	if err := errors.Join(werr, cerr); err != nil {
		os.Remove(tmp.Name())
		return err
	}
	if err := os.Chmod(tmp.Name(), 0o600); err != nil {
		os.Remove(tmp.Name())
		return err
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		os.Remove(tmp.Name())
		return fmt.Errorf("rename: %w", err)
	}
	return nil
}

// cacheKey identifies what the server is, for the catalog cache: a hash of
// its config entry, or of its stdio or HTTP spec when it was added with
// Add. A server reached through a Dialer has none and is not cached. The
// hash keeps header and environment values out of the file.
func cacheKey(spec ServerSpec, configKey string) string {
	var b []byte
	switch {
	case configKey != "":
		b = []byte(configKey)
	case spec.Stdio != nil || spec.HTTP != nil:
		var err error
		if b, err = json.Marshal(struct {
			Stdio, HTTP any
			Prefix      string
		}{spec.Stdio, spec.HTTP, spec.ToolPrefix}); err != nil {
			return ""
		}
	default:
		return ""
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}
