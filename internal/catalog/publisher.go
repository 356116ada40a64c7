package catalog

import (
	"cmp"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
)

// Publisher owns the current View and the per-server publications it is built
// from. Readers call View, which is one atomic load: no lock, no allocation,
// never blocked by a writer. Writers (Publish, Unpublish, Forget) serialize on
// a mutex, build the next View and swap it in whole.
//
// Building a View costs O(total tools) time and memory: the sorted tool slice
// (a copy of every mcp.Tool) and the name index are rebuilt so that reads stay
// allocation-free. Publishes are rare next to reads (once per connect or
// list_changed), so reads are what is optimized: with 1,000 servers of 10
// tools a publish takes about 10 ms and 5 MB, a read a few nanoseconds and
// nothing. A publish that changes nothing (a reconnect that fetched the same
// catalog) builds no View and costs a hash comparison. Connecting N servers
// at once therefore costs O(N × total tools) in all; that is milliseconds for
// fleets of tens of servers.
//
// Name collisions are settled by publish order. Each qualified name a server
// offers is claimed when it first appears in a published catalog of that
// server, and the claim lasts as long as the server keeps offering that name,
// across refreshes and reconnects. The oldest claim holds the name; a newer
// claim on it, from another server or a duplicate within the same server, is
// quarantined. When the holder's claim ends (the tool or the server goes, or
// the server's prefix changes), the next oldest claim is promoted. Claims made
// by one publish tie, and ties go to the server name, then the wire name,
// then list position, so the outcome never depends on map iteration.
//
// The zero Publisher uses the default Naming and is ready to use.
type Publisher struct {
	naming Naming
	cur    atomic.Pointer[View] // never nil once initialized; swapped under mu

	mu      sync.Mutex
	servers map[string]*entry // guarded by mu; published servers only
	floors  map[string]floor  // guarded by mu; every server ever published or unpublished, until Forget
	claims  []claim           // guarded by mu; all published tools, sorted by claimLess
	// catalogs is the servers' catalogs sorted by server. The current View
	// shares it, so it is replaced on each change, never modified in place.
	catalogs []*Catalog // guarded by mu
	seq      uint64     // guarded by mu; last claim sequence number handed out
}

// entry is one server's publication. Immutable once built: a publish builds a
// new entry, so claims can point into it without copying.
type entry struct {
	cat    *Catalog
	prefix string
	qnames []string          // qualified name per tool, in cat.Tools order
	seqs   map[string]uint64 // qualified name → when the server first claimed it
}

// floor is the newest generation the Publisher heard about for a server.
type floor struct {
	gen uint64
	// published is true when gen was published and false when it was
	// unpublished. A publish of the same generation may refresh a published
	// catalog, but may not bring back an unpublished one: that would be the
	// late list_changed refresh of a runtime that was just disabled.
	published bool
}

// claim is one tool's bid for its qualified name.
type claim struct {
	qualified string
	seq       uint64
	server    string
	e         *entry
	idx       int // index in e.cat.Tools
}

func claimLess(a, b claim) int {
	if c := strings.Compare(a.qualified, b.qualified); c != 0 {
		return c
	}
	if c := cmp.Compare(a.seq, b.seq); c != 0 {
		return c
	}
	if c := strings.Compare(a.server, b.server); c != 0 {
		return c
	}
	if c := strings.Compare(a.e.cat.Tools[a.idx].Name, b.e.cat.Tools[b.idx].Name); c != 0 {
		return c
	}
	return cmp.Compare(a.idx, b.idx)
}

// NewPublisher returns a Publisher whose View names tools with n, starting
// with an empty View of version 0.
func NewPublisher(n Naming) *Publisher {
	p := &Publisher{naming: n}
	p.mu.Lock()
	p.initLocked()
	p.mu.Unlock()
	return p
}

func (p *Publisher) initLocked() {
	if p.cur.Load() != nil {
		return
	}
	p.servers = make(map[string]*entry)
	p.floors = make(map[string]floor)
	v := &View{index: map[string]int{}, changed: make(chan struct{})}
	v.hash = p.viewHashLocked(v)
	p.cur.Store(v)
}

// View returns the current View; never nil. Lock-free and allocation-free,
// so it can be called on every request.
func (p *Publisher) View() *View {
	if v := p.cur.Load(); v != nil {
		return v
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.initLocked()
	return p.cur.Load()
}

// Generation returns the newest generation published or unpublished for
// server, and whether there is one. It can be newer than the Generation of
// the catalog in the View: a publish that changes nothing advances the
// generation but keeps the View, and the catalog in it, as they were.
func (p *Publisher) Generation(server string) (uint64, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	f, ok := p.floors[server]
	return f.gen, ok
}

// Publish makes c the catalog of c.Server, its tools named with prefix (""
// means the server name), and returns what changed for that server.
//
// It returns false, changing nothing, when c is nil or has no Server, or when
// c is a late result: c.Generation is older than the generation last
// published for the server, or not newer than the one last unpublished. A
// catalog of the same generation as the published one replaces it, as a
// list_changed refresh does; a newer one replaces it whatever it contains.
//
// When c has the same Hash, server info and prefix as the published catalog,
// Publish returns true with an empty Diff and no new View, so hosts caching
// per version do not churn on reconnects; the View then keeps the earlier
// catalog (and its Generation and FetchedAt). An unsealed catalog, or one
// whose lists were replaced after Seal, is sealed as a copy; c is never
// written.
func (p *Publisher) Publish(c *Catalog, prefix string) (Diff, bool) {
	if c == nil || c.Server == "" {
		return Diff{}, false
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.initLocked()

	server := c.Server
	if f, ok := p.floors[server]; ok {
		if c.Generation < f.gen || c.Generation == f.gen && !f.published {
			return Diff{Server: server}, false
		}
	}
	p.floors[server] = floor{gen: c.Generation, published: true}

	c = c.sealed()
	if prefix == "" {
		prefix = server
	}
	old := p.servers[server]
	if old != nil && old.prefix == prefix && old.cat.Hash == c.Hash && old.cat.seal.meta == c.seal.meta {
		return Diff{Server: server}, true
	}

	e := &entry{cat: c, prefix: prefix, qnames: make([]string, len(c.Tools)), seqs: make(map[string]uint64, len(c.Tools))}
	fresh := p.seq + 1 // one number for the whole publish: its claims are equally old
	for i := range c.Tools {
		q := p.naming.Qualify(prefix, c.Tools[i].Name)
		e.qnames[i] = q
		if _, ok := e.seqs[q]; ok {
			continue
		}
		if s, ok := old.seqOf(q); ok {
			e.seqs[q] = s
		} else {
			e.seqs[q] = fresh
			p.seq = fresh
		}
	}
	p.servers[server] = e
	p.setCatalogLocked(server, c)

	d := diffEntries(server, old, e)
	p.replaceClaimsLocked(server, e)
	p.swapLocked(&d)
	return d, true
}

// Unpublish removes the catalog of server, as when the server is disabled or
// has failed for good, and remembers generation so that a late publish of it
// or anything older is ignored. It returns false, changing nothing, when
// generation is older than the one last published or unpublished for the
// server: an unpublish from a runtime already replaced must not take down its
// successor's catalog. Accepted with nothing published, it only records the
// generation and returns an empty Diff.
func (p *Publisher) Unpublish(server string, generation uint64) (Diff, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.initLocked()

	if f, ok := p.floors[server]; ok && generation < f.gen {
		return Diff{Server: server}, false
	}
	p.floors[server] = floor{gen: generation, published: false}
	old := p.servers[server]
	if old == nil {
		return Diff{Server: server}, true
	}
	delete(p.servers, server)
	p.setCatalogLocked(server, nil)
	d := diffEntries(server, old, nil)
	p.replaceClaimsLocked(server, nil)
	p.swapLocked(&d)
	return d, true
}

// Forget removes server and everything remembered about it, its generation
// floor included. The manager calls it when a server is removed: a server
// added later under the same name is a new slot whose generations start
// again from 1, and must not be held to the old slot's floor.
func (p *Publisher) Forget(server string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.initLocked()

	delete(p.floors, server)
	old := p.servers[server]
	if old == nil {
		return
	}
	delete(p.servers, server)
	p.setCatalogLocked(server, nil)
	d := diffEntries(server, old, nil)
	p.replaceClaimsLocked(server, nil)
	p.swapLocked(&d)
}

// seqOf returns when e's server first claimed q, if e exists and claims it.
func (e *entry) seqOf(q string) (uint64, bool) {
	if e == nil {
		return 0, false
	}
	s, ok := e.seqs[q]
	return s, ok
}

// diffEntries compares a server's publication before and after; either may be
// nil. Quarantine changes are filled in later, by swapLocked.
func diffEntries(server string, old, cur *entry) Diff {
	d := Diff{Server: server}
	var oldSeal, curSeal *sealInfo
	if old != nil {
		oldSeal = old.cat.seal
	}
	if cur != nil {
		curSeal = cur.cat.seal
	}
	switch {
	case old == nil && cur == nil:
		return d
	case old == nil || cur == nil:
		s := curSeal
		if s == nil {
			s = oldSeal
		}
		d.PromptsChanged = s.nPrompts > 0
		d.ResourcesChanged = s.nResources > 0
		d.ResourceTemplatesChanged = s.nTemplates > 0
		d.InfoChanged = true
	default:
		d.PromptsChanged = oldSeal.prompts != curSeal.prompts
		d.ResourcesChanged = oldSeal.resources != curSeal.resources
		d.ResourceTemplatesChanged = oldSeal.templates != curSeal.templates
		d.InfoChanged = oldSeal.meta != curSeal.meta
		if old.prefix == cur.prefix && oldSeal.toolsSum == curSeal.toolsSum {
			return d
		}
	}

	before, after := old.digests(), cur.digests()
	for q, db := range before {
		da, ok := after[q]
		switch {
		case !ok:
			d.Removed = append(d.Removed, q)
		case da != db:
			d.Changed = append(d.Changed, q)
		}
	}
	for q := range after {
		if _, ok := before[q]; !ok {
			d.Added = append(d.Added, q)
		}
	}
	slices.Sort(d.Added)
	slices.Sort(d.Removed)
	slices.Sort(d.Changed)
	return d
}

// digests maps each qualified name of e to the digest of its tool. When a
// server lists two tools that qualify alike, the digests are combined, so a
// change to either shows as a change of the name.
func (e *entry) digests() map[string]digest {
	if e == nil {
		return nil
	}
	m := make(map[string]digest, len(e.qnames))
	for i, q := range e.qnames {
		dg := e.cat.seal.tools[i]
		if prev, ok := m[q]; ok {
			dg = sha256.Sum256(append(prev[:], dg[:]...))
		}
		m[q] = dg
	}
	return m
}

// replaceClaimsLocked swaps server's claims for those of e (nil: none). The
// claims stay sorted by merging, not sorting, so a publish costs O(total
// tools + tools of server × log) rather than a full sort. p.mu must be held.
func (p *Publisher) replaceClaimsLocked(server string, e *entry) {
	var added []claim
	if e != nil {
		added = make([]claim, len(e.qnames))
		for i, q := range e.qnames {
			added[i] = claim{qualified: q, seq: e.seqs[q], server: server, e: e, idx: i}
		}
		slices.SortFunc(added, claimLess)
	}
	merged := make([]claim, 0, len(p.claims)+len(added))
	i := 0
	for _, c := range p.claims {
		if c.server == server {
			continue
		}
		for i < len(added) && claimLess(added[i], c) < 0 {
			merged = append(merged, added[i])
			i++
		}
		merged = append(merged, c)
	}
	merged = append(merged, added[i:]...)
	p.claims = merged
}

// swapLocked builds the View from the current claims and servers, completes d
// with the quarantine changes, and publishes the View unless nothing changed.
// p.mu must be held.
func (p *Publisher) swapLocked(d *Diff) {
	prev := p.cur.Load()
	v := &View{
		version: prev.version + 1,
		tools:   make([]Tool, 0, len(p.claims)),
		index:   make(map[string]int, len(p.claims)),
		changed: make(chan struct{}),
	}
	var holder string
	for i := range p.claims {
		c := &p.claims[i]
		src := &c.e.cat.Tools[c.idx]
		if i > 0 && p.claims[i-1].qualified == c.qualified {
			v.quarantined = append(v.quarantined, Quarantine{Server: c.server, Tool: src.Name, Qualified: c.qualified, Holder: holder})
			continue
		}
		holder = c.server
		v.index[c.qualified] = len(v.tools)
		// Grow, then fill in place: the struct is large and a composite
		// literal passed to append is copied twice.
		v.tools = v.tools[:len(v.tools)+1]
		t := &v.tools[len(v.tools)-1]
		t.Qualified, t.Server, t.Tool = c.qualified, c.server, *src
	}
	v.catalogs = p.catalogs
	v.hash = p.viewHashLocked(v)

	d.Quarantined, d.Promoted = quarantineChanges(prev, v)
	if d.Empty() {
		return
	}
	p.cur.Store(v)
	close(prev.changed)
}

// quarantineChanges lists the tools quarantined in cur but not prev, and the
// tools quarantined in prev that cur lists as tools of the same server.
func quarantineChanges(prev, cur *View) (added, promoted []Quarantine) {
	type key struct{ server, tool, qualified string }
	was := make(map[key]bool, len(prev.quarantined))
	for _, q := range prev.quarantined {
		was[key{q.Server, q.Tool, q.Qualified}] = true
	}
	for _, q := range cur.quarantined {
		if !was[key{q.Server, q.Tool, q.Qualified}] {
			added = append(added, q)
		}
	}
	for _, q := range prev.quarantined {
		if t, ok := cur.Tool(q.Qualified); ok && t.Server == q.Server && t.Tool.Name == q.Tool {
			promoted = append(promoted, q)
		}
	}
	return added, promoted
}

// viewHashLocked hashes what determines v's tools: for every server its
// name, prefix, catalog hash and server info, plus the separator and the
// quarantined tools. Given those, the tools and their names follow, so
// hashing them one by one would add cost and no information. p.mu must be
// held (it reads the servers' prefixes).
func (p *Publisher) viewHashLocked(v *View) string {
	// One buffer and one Sum: feeding a hash.Hash field by field costs an
	// allocation per string, thousands per publish.
	buf := make([]byte, 0, 64+len(v.catalogs)*(3*8+64+32+32)+len(v.quarantined)*96)
	buf = appendStr(buf, p.naming.separator())
	for _, c := range v.catalogs {
		buf = appendStr(buf, c.Server)
		buf = appendStr(buf, p.servers[c.Server].prefix)
		buf = appendStr(buf, c.Hash)
		buf = append(buf, c.seal.meta[:]...)
	}
	buf = appendStr(buf, "quarantined")
	for _, q := range v.quarantined {
		buf = appendStr(buf, q.Server)
		buf = appendStr(buf, q.Tool)
		buf = appendStr(buf, q.Qualified)
	}
	sum := sha256.Sum256(buf)
	return hex.EncodeToString(sum[:])
}

// appendStr appends s length-prefixed, so that concatenations cannot alias.
func appendStr(b []byte, s string) []byte {
	b = binary.BigEndian.AppendUint64(b, uint64(len(s)))
	return append(b, s...)
}

// setCatalogLocked replaces server's catalog in p.catalogs with c (nil:
// removes it), copying the slice because the current View shares it. O(servers)
// and no sort. p.mu must be held.
func (p *Publisher) setCatalogLocked(server string, c *Catalog) {
	i, found := slices.BinarySearchFunc(p.catalogs, server, func(c *Catalog, s string) int {
		return strings.Compare(c.Server, s)
	})
	next := make([]*Catalog, 0, len(p.catalogs)+1)
	next = append(next, p.catalogs[:i]...)
	if c != nil {
		next = append(next, c)
	}
	if found {
		i++
	}
	p.catalogs = append(next, p.catalogs[i:]...)
}
