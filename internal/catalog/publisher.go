package catalog

import (
	"cmp"
	"crypto/sha256"
	"encoding/binary"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
)

// Publisher owns the current View and the per-server publications it is built
// from. Readers call View, which is one atomic load: no lock, no allocation,
// never blocked by a writer. Writers (Publish, Unpublish, Forget) serialize on
// a mutex and swap in the next View whole.
//
// A change costs what changed. A View holds its tools, catalogs and
// quarantined tools in persistent maps (a sorted B+ tree and, for lookups by
// name, a hash trie) that share every node a change does not touch with the
// View before: a publish or unpublish of a server with k tools, in a fleet of
// n tools, copies the paths to its k names, O(k log n), and nothing else:
// 30 to 40 µs for 10 tools whether the fleet holds 1,000 tools or 100,000,
// where rebuilding the View took 4 to 54 ms (see BENCHMARKS.md). Reads keep
// their shape: Tool is a hash lookup, constant time and allocation-free (a
// few nanoseconds dearer than a Go map); the sorted slices that Tools,
// Catalogs and Quarantined return are built from the maps by the first
// reader that asks for them, once per View, in O(n), the order of the walk
// that reader is about to make. A publish that changes nothing (a reconnect
// that fetched the same catalog) builds no View and costs a hash comparison.
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
	// claims are the claims on each qualified name, sorted by claimLess:
	// the holder first. A name with one claim, nearly every name, is in
	// claims, pointing at it; one with more is in crowded. Apart, a fleet's
	// map of names costs 24 bytes a slot rather than 40 (about 300 bytes a
	// server of ten tools). Guarded by mu.
	claims  map[string]*[1]claim
	crowded map[string][]claim
	seq     uint64 // guarded by mu; last claim sequence number handed out

	// What the next View is made of, guarded by mu. The current View shares
	// them, so a change replaces them with edited copies, never edits them.
	index       toolIndex            // holders by qualified name
	tools       *listing[Tool]       // holders by qualified name
	catalogs    *listing[*Catalog]   // by server
	quarantined *listing[Quarantine] // by queueKey
	serverSum   setSum               // of the published servers' serverDigest
	queueSum    setSum               // of the queueDigest of every name with quarantined tools
}

// entry is one server's publication. Immutable once built: a publish builds a
// new entry, so claims and Views can point into it without copying.
type entry struct {
	server string
	cat    *Catalog
	prefix string
	tools  []Tool   // per tool of cat, in cat.Tools order, under its qualified name
	seqs   []uint64 // per tool of cat: when the server first claimed its qualified name
	digest digest   // serverDigest: the server's share of the View hash
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
	seq uint64
	e   *entry
	idx int // index in e.tools
}

func (c claim) tool() *Tool { return &c.e.tools[c.idx] }

// claimLess orders the claims on one qualified name: the oldest first, ties
// broken by server, wire name and list position.
func claimLess(a, b claim) int {
	if c := cmp.Compare(a.seq, b.seq); c != 0 {
		return c
	}
	if c := strings.Compare(a.e.server, b.e.server); c != 0 {
		return c
	}
	if c := strings.Compare(a.tool().Tool.Name, b.tool().Tool.Name); c != 0 {
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
	p.claims = make(map[string]*[1]claim)
	p.crowded = make(map[string][]claim)
	p.tools = &listing[Tool]{}
	p.catalogs = &listing[*Catalog]{}
	p.quarantined = &listing[Quarantine]{}
	p.cur.Store(p.viewLocked(0))
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

	e := p.entryLocked(c, prefix, old)
	p.servers[server] = e
	d := diffEntries(server, old, e)
	p.replaceLocked(server, old, e, &d)
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
	d := diffEntries(server, old, nil)
	p.replaceLocked(server, old, nil, &d)
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
	d := diffEntries(server, old, nil)
	p.replaceLocked(server, old, nil, &d)
	p.swapLocked(&d)
}

// diffEntries compares a server's publication before and after; either may be
// nil. Quarantine changes are filled in later, by replaceLocked.
func diffEntries(server string, old, cur *entry) Diff {
	d := Diff{Server: server}
	if old == nil || cur == nil {
		// The server comes or goes whole, every name with it: no digest
		// to compare.
		e, list := cur, &d.Added
		if cur == nil {
			e, list = old, &d.Removed
		}
		if e == nil {
			return d
		}
		s := e.cat.seal
		d.PromptsChanged = s.nPrompts > 0
		d.ResourcesChanged = s.nResources > 0
		d.ResourceTemplatesChanged = s.nTemplates > 0
		d.InfoChanged = true
		*list = names(e, nil)
		return d
	}
	oldSeal, curSeal := old.cat.seal, cur.cat.seal
	d.PromptsChanged = oldSeal.prompts != curSeal.prompts
	d.ResourcesChanged = oldSeal.resources != curSeal.resources
	d.ResourceTemplatesChanged = oldSeal.templates != curSeal.templates
	d.InfoChanged = oldSeal.meta != curSeal.meta
	if old.prefix == cur.prefix && oldSeal.toolsSum == curSeal.toolsSum {
		return d
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
	m := make(map[string]digest, len(e.tools))
	for i := range e.tools {
		q, dg := e.tools[i].Qualified, e.cat.seal.tools[i]
		if prev, ok := m[q]; ok {
			dg = sha256.Sum256(append(prev[:], dg[:]...))
		}
		m[q] = dg
	}
	return m
}

// entryLocked builds server c.Server's publication of c under prefix. A
// name old (the publication it replaces, or nil) already claims keeps its
// claim's age; the others are claimed now. p.mu must be held.
func (p *Publisher) entryLocked(c *Catalog, prefix string, old *entry) *entry {
	e := &entry{
		server: c.Server,
		cat:    c,
		prefix: prefix,
		tools:  make([]Tool, len(c.Tools)),
		seqs:   make([]uint64, len(c.Tools)),
		digest: serverDigest(c.Server, prefix, c),
	}
	// A claim's age depends on its name alone (tools of one server that
	// qualify alike share it), so a first publish needs no map; a later one
	// looks the names up in what old claimed.
	var kept map[string]uint64
	if old != nil {
		kept = make(map[string]uint64, len(old.tools))
		for i := range old.tools {
			kept[old.tools[i].Qualified] = old.seqs[i]
		}
	}
	fresh := p.seq + 1 // one number for the whole publish: its claims are equally old
	for i := range c.Tools {
		q := p.naming.Qualify(prefix, c.Tools[i].Name)
		e.tools[i] = Tool{Qualified: q, Server: c.Server, Tool: &c.Tools[i]}
		if s, ok := kept[q]; ok {
			e.seqs[i] = s
		} else {
			e.seqs[i] = fresh
			p.seq = fresh
		}
	}
	return e
}

// claimsByName returns e's claims sorted by qualified name, then claimLess.
func (e *entry) claimsByName() []claim {
	if e == nil {
		return nil
	}
	out := make([]claim, len(e.tools))
	for i := range e.tools {
		out[i] = claim{seq: e.seqs[i], e: e, idx: i}
	}
	slices.SortFunc(out, func(a, b claim) int {
		if c := strings.Compare(a.tool().Qualified, b.tool().Qualified); c != 0 {
			return c
		}
		return claimLess(a, b)
	})
	return out
}

// replaceLocked replaces server's publication old with cur (either may be
// nil) in the claims and in what the next View is made of, and adds the
// quarantine changes to d. It visits the names of old and cur and no
// others: a name no claim of server's is on keeps its holder and its queue.
// p.mu must be held.
func (p *Publisher) replaceLocked(server string, old, cur *entry, d *Diff) {
	catalog := mapEdit[*Catalog]{key: server, del: cur == nil}
	if old != nil {
		p.serverSum.sub(old.digest)
	}
	if cur != nil {
		catalog.val = cur.cat
		p.serverSum.add(cur.digest)
	}
	p.catalogs = &listing[*Catalog]{m: p.catalogs.m.apply([]mapEdit[*Catalog]{catalog})}

	ch := &change{index: p.index.batch(), d: d}
	mine := cur.claimsByName()
	for _, q := range names(old, cur) {
		n := 0
		for n < len(mine) && mine[n].tool().Qualified == q {
			n++
		}
		p.reclaimLocked(ch, q, server, mine[:n])
		mine = mine[n:]
	}
	p.index = ch.index.done()
	if len(ch.tools) > 0 {
		p.tools = &listing[Tool]{m: p.tools.m.apply(ch.tools)}
	}
	if len(ch.queues) > 0 {
		p.quarantined = &listing[Quarantine]{m: p.quarantined.m.apply(ch.queues)}
	}
}

// change gathers what one publish or unpublish does to the View's maps, to
// apply it in one batch per map, and the quarantine changes of its Diff.
type change struct {
	index  *indexBatch
	tools  []mapEdit[Tool]       // sorted by name
	queues []mapEdit[Quarantine] // sorted by queueKey
	d      *Diff
}

// claimsOf returns the claims on qualified, the holder first. p.mu must be
// held; the slice is not to be written.
func (p *Publisher) claimsOf(qualified string) []claim {
	if one := p.claims[qualified]; one != nil {
		return one[:]
	}
	return p.crowded[qualified]
}

// setClaims makes after the claims on qualified, which were before. p.mu
// must be held.
func (p *Publisher) setClaims(qualified string, before, after []claim) {
	if len(before) > 1 && len(after) <= 1 {
		delete(p.crowded, qualified)
	}
	switch len(after) {
	case 0:
		delete(p.claims, qualified)
	case 1:
		p.claims[qualified] = (*[1]claim)(after)
	default:
		if len(before) == 1 {
			delete(p.claims, qualified)
		}
		p.crowded[qualified] = after
	}
}

// reclaimLocked replaces server's claims on qualified with mine (which may
// be none), then updates the name's holder and queue. Names must come in
// order, so that ch's edits are sorted. p.mu must be held.
func (p *Publisher) reclaimLocked(ch *change, qualified, server string, mine []claim) {
	before := p.claimsOf(qualified)
	after := mine[:len(mine):len(mine)] // sorted by claimLess already; a later change copies it
	if len(before) > 0 {
		after = slices.DeleteFunc(slices.Clone(before), func(c claim) bool { return c.e.server == server })
		after = append(after, mine...)
		slices.SortFunc(after, claimLess)
	}
	p.setClaims(qualified, before, after)

	// The holder is the oldest claim.
	var was, is *Tool
	if len(before) > 0 {
		was = before[0].tool()
	}
	if len(after) > 0 {
		is = after[0].tool()
	}
	switch {
	case is == nil:
		ch.index.delete(qualified)
		ch.tools = append(ch.tools, mapEdit[Tool]{key: qualified, del: true})
	case is != was:
		ch.index.set(is)
		ch.tools = append(ch.tools, mapEdit[Tool]{key: qualified, val: *is})
	}

	// The queue is every other claim, in the order they would be promoted.
	qb, qa := queue(qualified, before), queue(qualified, after)
	if slices.Equal(qb, qa) {
		return
	}
	if len(qb) > 0 {
		p.queueSum.sub(queueDigest(qualified, qb))
	}
	if len(qa) > 0 {
		p.queueSum.add(queueDigest(qualified, qa))
	}
	for i, q := range qa {
		ch.queues = append(ch.queues, mapEdit[Quarantine]{key: queueKey(qualified, i), val: q})
		if !queued(qb, q) {
			ch.d.Quarantined = append(ch.d.Quarantined, q)
		}
	}
	for i, q := range qb {
		if i >= len(qa) {
			ch.queues = append(ch.queues, mapEdit[Quarantine]{key: queueKey(qualified, i), del: true})
		}
		// Promoted: out of the queue, and holding the name now.
		if !queued(qa, q) && is != nil && is.Server == q.Server && is.Tool.Name == q.Tool {
			ch.d.Promoted = append(ch.d.Promoted, q)
		}
	}
}

// names returns the qualified names of old and cur (either may be nil),
// sorted, without repeats.
func names(old, cur *entry) []string {
	var out []string
	for _, e := range [...]*entry{old, cur} {
		if e != nil {
			for i := range e.tools {
				out = append(out, e.tools[i].Qualified)
			}
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// queue lists the quarantined claims on qualified, claims[1:], in order.
func queue(qualified string, claims []claim) []Quarantine {
	if len(claims) < 2 {
		return nil
	}
	out := make([]Quarantine, 0, len(claims)-1)
	for _, c := range claims[1:] {
		out = append(out, Quarantine{Server: c.e.server, Tool: c.tool().Tool.Name, Qualified: qualified, Holder: claims[0].e.server})
	}
	return out
}

// queued reports whether the same tool of the same server is in queue,
// whatever its holder.
func queued(queue []Quarantine, q Quarantine) bool {
	return slices.ContainsFunc(queue, func(e Quarantine) bool {
		return e.Server == q.Server && e.Tool == q.Tool && e.Qualified == q.Qualified
	})
}

// queueKey is the key of the place-th quarantined tool on qualified in the
// View's map of them, which orders them by name, then place. Qualified names
// hold no NUL (see ValidToolName), so a name's keys sort before those of
// every longer name it begins.
func queueKey(qualified string, place int) string {
	return qualified + "\x00" + string(binary.BigEndian.AppendUint32(nil, uint32(place)))
}

// swapLocked publishes the next View, unless d is empty. p.mu must be held.
func (p *Publisher) swapLocked(d *Diff) {
	if d.Empty() {
		return
	}
	prev := p.cur.Load()
	p.cur.Store(p.viewLocked(prev.version + 1))
	close(prev.changed)
}

// viewLocked returns a View of what the Publisher holds. O(1): the View
// shares the Publisher's maps, which the next change replaces rather than
// edits. p.mu must be held.
func (p *Publisher) viewLocked(version uint64) *View {
	return &View{
		version:     version,
		hash:        viewHash(p.naming.SeparatorOrDefault(), p.serverSum, p.queueSum),
		index:       p.index,
		tools:       p.tools,
		catalogs:    p.catalogs,
		quarantined: p.quarantined,
		changed:     make(chan struct{}),
	}
}

// Clear unpublishes and forgets every server at once, as when the manager
// closes, and returns the Diff of each server that was published (its tools
// removed). It makes one empty View however many servers there were: the
// cost is the diffs, O(total tools), where unpublishing the servers one by
// one would build a View each. With every server gone nothing is promoted,
// so no Diff reports a quarantine change.
func (p *Publisher) Clear() map[string]Diff {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.initLocked()
	out := make(map[string]Diff, len(p.servers))
	for server, old := range p.servers {
		out[server] = diffEntries(server, old, nil)
	}
	p.servers = make(map[string]*entry)
	p.floors = make(map[string]floor)
	p.claims = make(map[string]*[1]claim)
	p.crowded = make(map[string][]claim)
	p.index = toolIndex{}
	p.tools = &listing[Tool]{}
	p.catalogs = &listing[*Catalog]{}
	p.quarantined = &listing[Quarantine]{}
	p.serverSum, p.queueSum = setSum{}, setSum{}
	if prev := p.cur.Load(); len(out) > 0 { // no server published: the View is empty already
		p.cur.Store(p.viewLocked(prev.version + 1))
		close(prev.changed)
	}
	return out
}
