package catalog

import (
	"crypto/sha256"
	"encoding/hex"
	"io"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
)

// Catalog is everything one server offered at one fetch. It is immutable once
// sealed: the Publisher and every View share it with readers that hold no lock,
// so a change is made by building a new Catalog (see [Catalog.WithTools]), never
// by editing one.
type Catalog struct {
	// Server is the name of the server in the manager, the key it is
	// published under.
	Server string
	// Generation is the generation of the runtime that fetched the catalog.
	// The Publisher ignores a catalog older than the one it last published
	// for the same server, or not newer than the one it last unpublished.
	Generation uint64

	// Tools, Prompts, Resources and ResourceTemplates are the lists as the
	// server sent them, all pages concatenated. Tool names are the server's
	// own (the wire names); qualified names live in the View.
	Tools             []mcp.Tool
	Prompts           []mcp.Prompt
	Resources         []mcp.Resource
	ResourceTemplates []mcp.ResourceTemplate

	// ServerInfo, Capabilities and Instructions are what the server said
	// about itself at initialization.
	ServerInfo   mcp.Implementation
	Capabilities mcp.ServerCapabilities
	Instructions string

	// FetchedAt is when the lists were fetched; it is not part of Hash, so
	// a refetch of the same content is recognized as no change.
	FetchedAt time.Time

	// Hash is the content hash of Tools, Prompts, Resources and
	// ResourceTemplates, set by Seal: the hex sha256 of the canonical JSON
	// object {"prompts":[…],"resourceTemplates":[…],"resources":[…],"tools":[…]},
	// each item in canonical JSON (sorted keys, verbatim numbers) and each
	// list sorted by those bytes. The lists count as sets: two fetches that
	// differ only in order or in JSON property order hash the same.
	Hash string

	// seal holds the digests computed with Hash. It is a pointer so that a
	// shallow copy of a sealed Catalog shares it, and so that the Publisher
	// can tell whether the lists were swapped after sealing (see sealedNow).
	seal *sealInfo
}

// sealInfo is what Seal derives besides Hash. Immutable once built.
type sealInfo struct {
	tools     []digest // per tool, in Catalog.Tools order
	toolsSum  digest   // canonical tool list, to skip per-tool diffs when equal
	prompts   digest
	resources digest
	templates digest
	meta      digest // ServerInfo, Capabilities, Instructions

	// The lists' identities at seal time. A Catalog copied and given a new
	// slice without a new Seal would otherwise carry a stale Hash.
	toolsPtr                                 *mcp.Tool
	promptsPtr                               *mcp.Prompt
	resourcesPtr                             *mcp.Resource
	templatesPtr                             *mcp.ResourceTemplate
	nTools, nPrompts, nResources, nTemplates int
	hash                                     string
}

// Seal computes Hash (and the digests the Publisher diffs with) and returns c.
// Callers must not modify c afterwards: it will be shared with readers that
// hold no lock. Sealing is O(size of the catalog); it is meant to be done once,
// by the goroutine that fetched the catalog, before Publish.
func (c *Catalog) Seal() *Catalog {
	s := &sealInfo{
		toolsPtr: first(c.Tools), promptsPtr: first(c.Prompts),
		resourcesPtr: first(c.Resources), templatesPtr: first(c.ResourceTemplates),
		nTools: len(c.Tools), nPrompts: len(c.Prompts),
		nResources: len(c.Resources), nTemplates: len(c.ResourceTemplates),
	}
	// The document hashed is {"prompts":[…],"resourceTemplates":[…],
	// "resources":[…],"tools":[…]}, keys in sorted order so that it is
	// itself canonical JSON.
	doc := sha256.New()
	io.WriteString(doc, `{"prompts":`)
	s.prompts, _ = hashList(c.Prompts, doc)
	io.WriteString(doc, `,"resourceTemplates":`)
	s.templates, _ = hashList(c.ResourceTemplates, doc)
	io.WriteString(doc, `,"resources":`)
	s.resources, _ = hashList(c.Resources, doc)
	io.WriteString(doc, `,"tools":`)
	s.toolsSum, s.tools = hashList(c.Tools, doc)
	io.WriteString(doc, "}")
	s.meta = sha256.Sum256(canonicalJSON(struct {
		ServerInfo   mcp.Implementation     `json:"serverInfo"`
		Capabilities mcp.ServerCapabilities `json:"capabilities"`
		Instructions string                 `json:"instructions"`
	}{c.ServerInfo, c.Capabilities, c.Instructions}))
	var sum digest
	doc.Sum(sum[:0])
	s.hash = hex.EncodeToString(sum[:])

	c.Hash = s.hash
	c.seal = s
	return c
}

// sealedNow reports whether c's Hash still describes its lists: it was sealed
// and neither Hash nor any list was replaced since. It cannot see edits made
// inside a list in place; those break the contract of Seal.
func (c *Catalog) sealedNow() bool {
	s := c.seal
	return s != nil && c.Hash == s.hash &&
		len(c.Tools) == s.nTools && first(c.Tools) == s.toolsPtr &&
		len(c.Prompts) == s.nPrompts && first(c.Prompts) == s.promptsPtr &&
		len(c.Resources) == s.nResources && first(c.Resources) == s.resourcesPtr &&
		len(c.ResourceTemplates) == s.nTemplates && first(c.ResourceTemplates) == s.templatesPtr
}

// sealed returns c if its seal is current, or a sealed shallow copy. The copy
// keeps a caller that forgot Seal (or reused a Catalog with a new list) from
// racing with readers: c itself is never written here.
func (c *Catalog) sealed() *Catalog {
	if c.sealedNow() {
		return c
	}
	cp := *c
	return cp.Seal()
}

// WithTools returns a sealed copy of c with Tools replaced, same generation.
// It is how a notifications/tools/list_changed refresh builds the next catalog
// without refetching the other lists; c itself is unchanged.
func (c *Catalog) WithTools(tools []mcp.Tool) *Catalog {
	cp := *c
	cp.Tools = tools
	return cp.Seal()
}

// WithPrompts returns a sealed copy of c with Prompts replaced, same
// generation, for a notifications/prompts/list_changed refresh.
func (c *Catalog) WithPrompts(prompts []mcp.Prompt) *Catalog {
	cp := *c
	cp.Prompts = prompts
	return cp.Seal()
}

// WithResources returns a sealed copy of c with Resources replaced, same
// generation, for a notifications/resources/list_changed refresh.
func (c *Catalog) WithResources(resources []mcp.Resource) *Catalog {
	cp := *c
	cp.Resources = resources
	return cp.Seal()
}

// WithResourceTemplates returns a sealed copy of c with ResourceTemplates
// replaced, same generation. The resources list_changed notification covers
// templates too, so a refresh usually replaces both.
func (c *Catalog) WithResourceTemplates(templates []mcp.ResourceTemplate) *Catalog {
	cp := *c
	cp.ResourceTemplates = templates
	return cp.Seal()
}

// first is the identity of a slice's backing array, or nil when it is empty.
func first[T any](s []T) *T {
	if len(s) == 0 {
		return nil
	}
	return &s[0]
}
