package gateway

import (
	"context"
	"fmt"
	"slices"
	"sort"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/mcpfleet/mcpfleet/snapshot"
)

// MetaServer is the _meta key under which the gateway names the server a
// prompt, resource or resource template comes from.
const MetaServer = "io.mcpfleet/server"

// Separator joins a server's name and a prompt's name in the qualified
// prompt names the gateway serves ("notes__summarize"), as the Manager's
// default separator does for tools.
const Separator = "__"

// mirror is what the gateway registered with its mcp-go server: the
// qualified names of the tools, so that a catalog change touches only the
// tools it names. Only the follower goroutine (and New, before it starts)
// uses it.
type mirror struct {
	tools map[string]struct{}
}

// routes says which server a resource URI belongs to: for resources/read
// (mcp-go finds the handler itself) it is only needed by resources/subscribe,
// which mcp-go leaves to the gateway. Replaced whole on every change.
type routes struct {
	uris      map[string]string // resource URI -> server
	templates []templateRoute
}

type templateRoute struct {
	tmpl   *mcp.URITemplate
	server string
}

// server returns the server of uri: the one listing it, else the first
// whose template matches it.
func (r *routes) server(uri string) (string, bool) {
	if s, ok := r.uris[uri]; ok {
		return s, true
	}
	for _, t := range r.templates {
		if t.tmpl != nil && t.tmpl.Regexp().MatchString(uri) {
			return t.server, true
		}
	}
	return "", false
}

// syncAll registers the whole View with the server: the tools (unless
// tool search serves them), the prompts and the resources.
func (g *Gateway) syncAll() {
	v := g.m.View()
	if g.meta == nil {
		tools := make([]server.ServerTool, 0, v.NumTools())
		names := make(map[string]struct{}, v.NumTools())
		for i := range v.NumTools() {
			t := v.ToolAt(i)
			tools = append(tools, g.serverTool(t))
			names[t.Qualified()] = struct{}{}
		}
		g.srv.SetTools(tools...)
		g.mirror.tools = names
	}
	g.syncPrompts(v)
	g.syncResources(v)
}

// applyDiff registers what a catalog change changed: the tools it names
// are added, replaced or deleted as the current View has them (the View
// may be newer than the event: it is the truth), and the prompts and
// resources are registered again if their lists changed. Each change
// makes mcp-go send one list_changed of its kind to every session.
func (g *Gateway) applyDiff(d *snapshot.Diff) {
	if d == nil {
		g.syncAll()
		return
	}
	v := g.m.View()
	if g.meta == nil {
		names := slices.Concat(d.Added, d.Removed, d.Changed)
		for _, q := range d.Quarantined {
			names = append(names, q.Qualified)
		}
		for _, q := range d.Promoted {
			names = append(names, q.Qualified)
		}
		var upsert []server.ServerTool
		var remove []string
		for _, name := range names {
			if t, ok := v.Tool(name); ok {
				upsert = append(upsert, g.serverTool(t))
				g.mirror.tools[name] = struct{}{}
			} else if _, ok := g.mirror.tools[name]; ok {
				remove = append(remove, name)
				delete(g.mirror.tools, name)
			}
		}
		switch {
		case len(upsert) > 0 && len(remove) > 0:
			// One list_changed for the change, not one per kind.
			g.syncAll()
			return
		case len(upsert) > 0:
			g.srv.AddTools(upsert...)
		case len(remove) > 0:
			g.srv.DeleteTools(remove...)
		}
	}
	if d.PromptsChanged {
		g.syncPrompts(v)
	}
	if d.ResourcesChanged || d.ResourceTemplatesChanged {
		g.syncResources(v)
	}
}

// serverTool is t as the gateway serves it: under its qualified name,
// called through the Manager.
func (g *Gateway) serverTool(t snapshot.Tool) server.ServerTool {
	def := t.Definition()
	def.Name = t.Qualified()
	srvName, name, qualified := t.Server(), t.Name(), t.Qualified()
	invoke := func(ctx context.Context, args any, opts ...callOption) (*mcp.CallToolResult, error) {
		return g.m.CallTool(ctx, srvName, name, args, opts...)
	}
	return server.ServerTool{Tool: def, Handler: func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return g.callTool(ctx, req, srvName, qualified, invoke)
	}}
}

// syncPrompts registers every server's prompts under qualified names.
func (g *Gateway) syncPrompts(v *snapshot.View) {
	var prompts []server.ServerPrompt
	for c := range v.Catalogs() {
		srvName := c.Server()
		for _, p := range c.Prompts() {
			name := p.Name
			p.Name = srvName + Separator + name
			p.Meta = withServer(p.Meta, srvName)
			prompts = append(prompts, server.ServerPrompt{Prompt: p, Handler: g.promptHandler(srvName, name)})
		}
	}
	g.srv.SetPrompts(prompts...)
}

// syncResources registers every server's resources and resource
// templates under their own URIs, and the routes resources/subscribe
// takes. Two servers offering one URI: the first by name keeps it, and the
// other is logged.
func (g *Gateway) syncResources(v *snapshot.View) {
	r := &routes{uris: map[string]string{}}
	var resources []server.ServerResource
	var templates []server.ServerResourceTemplate
	seenTemplates := map[string]string{}
	for c := range v.Catalogs() { // sorted by server
		srvName := c.Server()
		for _, res := range c.Resources() {
			if holder, dup := r.uris[res.URI]; dup {
				g.log.Warn("mcpfleet: gateway: two servers offer one resource URI; the first keeps it",
					"uri", res.URI, "server", srvName, "holder", holder)
				continue
			}
			r.uris[res.URI] = srvName
			res.Meta = withServer(res.Meta, srvName)
			resources = append(resources, server.ServerResource{Resource: res, Handler: g.resourceHandler(srvName)})
		}
		for _, t := range c.ResourceTemplates() {
			if t.URITemplate == nil || t.URITemplate.Template == nil {
				continue
			}
			raw := t.URITemplate.Raw()
			if holder, dup := seenTemplates[raw]; dup {
				g.log.Warn("mcpfleet: gateway: two servers offer one resource template; the first keeps it",
					"template", raw, "server", srvName, "holder", holder)
				continue
			}
			seenTemplates[raw] = srvName
			r.templates = append(r.templates, templateRoute{tmpl: t.URITemplate, server: srvName})
			t.Meta = withServer(t.Meta, srvName)
			templates = append(templates, server.ServerResourceTemplate{Template: t, Handler: server.ResourceTemplateHandlerFunc(g.resourceHandler(srvName))})
		}
	}
	sort.SliceStable(r.templates, func(i, j int) bool { return r.templates[i].server < r.templates[j].server })
	g.routes.Store(r)
	g.srv.SetResources(resources...)
	g.srv.SetResourceTemplates(templates...)
}

// withServer returns meta with MetaServer set to srvName, leaving the
// server's own meta unchanged.
func withServer(meta *mcp.Meta, srvName string) *mcp.Meta {
	out := &mcp.Meta{AdditionalFields: map[string]any{MetaServer: srvName}}
	if meta != nil {
		out.ProgressToken = meta.ProgressToken
		for k, v := range meta.AdditionalFields {
			if k != MetaServer {
				out.AdditionalFields[k] = v
			}
		}
	}
	return out
}

// promptHandler gets prompt name from srvName. A failure is a JSON-RPC
// error: prompts/get has no result that could carry it.
func (g *Gateway) promptHandler(srvName, name string) server.PromptHandlerFunc {
	return func(ctx context.Context, req mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
		var res *mcp.GetPromptResult
		err := g.request(ctx, srvName, func(ctx context.Context) (err error) {
			res, err = g.m.GetPrompt(ctx, srvName, name, req.Params.Arguments)
			return err
		})
		return res, err
	}
}

// resourceHandler reads a resource of srvName. A failure is a JSON-RPC
// error, as for prompts.
func (g *Gateway) resourceHandler(srvName string) server.ResourceHandlerFunc {
	return func(ctx context.Context, req mcp.ReadResourceRequest) ([]mcp.ResourceContents, error) {
		var res *mcp.ReadResourceResult
		err := g.request(ctx, srvName, func(ctx context.Context) (err error) {
			res, err = g.m.ReadResource(ctx, srvName, req.Params.URI)
			return err
		})
		if err != nil {
			return nil, err
		}
		return res.Contents, nil
	}
}

// resourceServer returns the server that offers uri.
func (g *Gateway) resourceServer(uri string) (string, error) {
	if s, ok := g.routes.Load().server(uri); ok {
		return s, nil
	}
	return "", fmt.Errorf("mcpfleet: gateway: no server offers resource %q", uri)
}
