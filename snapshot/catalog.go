package snapshot

import (
	"slices"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/mcpfleet/mcpfleet/internal/catalog"
)

// Catalog is everything one server offered at one fetch, as published in a
// View. It is a read-only handle: the lists it returns are copies. The zero
// Catalog is empty.
type Catalog struct {
	c *catalog.Catalog
}

// Server is the name of the server in the manager.
func (c Catalog) Server() string {
	if c.c == nil {
		return ""
	}
	return c.c.Server
}

// Generation is the generation of the runtime that fetched the catalog.
func (c Catalog) Generation() uint64 {
	if c.c == nil {
		return 0
	}
	return c.c.Generation
}

// Tools returns the server's tools as the server sent them (all pages, the
// server's own names). The slice is the caller's.
func (c Catalog) Tools() []mcp.Tool {
	if c.c == nil {
		return nil
	}
	return slices.Clone(c.c.Tools)
}

// NumTools returns how many tools the server offered.
func (c Catalog) NumTools() int {
	if c.c == nil {
		return 0
	}
	return len(c.c.Tools)
}

// Prompts returns the server's prompts. The slice is the caller's.
func (c Catalog) Prompts() []mcp.Prompt {
	if c.c == nil {
		return nil
	}
	return slices.Clone(c.c.Prompts)
}

// Resources returns the server's resources. The slice is the caller's.
func (c Catalog) Resources() []mcp.Resource {
	if c.c == nil {
		return nil
	}
	return slices.Clone(c.c.Resources)
}

// ResourceTemplates returns the server's resource templates. The slice is
// the caller's.
func (c Catalog) ResourceTemplates() []mcp.ResourceTemplate {
	if c.c == nil {
		return nil
	}
	return slices.Clone(c.c.ResourceTemplates)
}

// ServerInfo is the name and version the server gave at initialization.
func (c Catalog) ServerInfo() mcp.Implementation {
	if c.c == nil {
		return mcp.Implementation{}
	}
	return c.c.ServerInfo
}

// Capabilities are what the server declared at initialization.
func (c Catalog) Capabilities() mcp.ServerCapabilities {
	if c.c == nil {
		return mcp.ServerCapabilities{}
	}
	return c.c.Capabilities
}

// Instructions is the server's instructions text from initialization.
func (c Catalog) Instructions() string {
	if c.c == nil {
		return ""
	}
	return c.c.Instructions
}

// FetchedAt is when the lists were fetched.
func (c Catalog) FetchedAt() time.Time {
	if c.c == nil {
		return time.Time{}
	}
	return c.c.FetchedAt
}

// Hash is the content hash of the tools, prompts, resources and resource
// templates: the lists count as sets (order and JSON property order do not
// matter), and FetchedAt is not part of it, so a refetch of the same
// content hashes the same.
func (c Catalog) Hash() string {
	if c.c == nil {
		return ""
	}
	return c.c.Hash
}
