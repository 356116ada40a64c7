package gateway

import (
	"context"
	"fmt"
	"regexp"
	"slices"
	"sort"
	"strings"

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

// routes says which server a resource URI belongs to: the gateway's own
// table, by which it routes resources/read and resources/subscribe.
// mcp-go would pick among the templates of every server in map order, so
// every resource and template the gateway registers with it has the same
// handler, which asks this table. Replaced whole on every change.
type routes struct {
	uris      map[string]string // a resource's exact URI -> its server
	templates []templateRoute   // no two of different servers overlap
	// quarantined are templates left out because they overlap a template
	// of another server's that came first.
	quarantined []QuarantinedTemplate
}

type templateRoute struct {
	tmpl   *mcp.URITemplate
	server string
}

// QuarantinedTemplate is a resource template the gateway does not serve:
// it overlaps (some URI matches both) a template of another server's that
// it served first, so a read of such a URI could not say which server it is
// for. The other server keeps it, as a tool name that two servers offer
// stays with the first.
type QuarantinedTemplate struct {
	Server   string `json:"server"`
	Template string `json:"template"`
	// Holder and HolderTemplate are the server that keeps the URIs and its
	// template.
	Holder         string `json:"holder"`
	HolderTemplate string `json:"holderTemplate"`
}

// server returns the server of uri: the one listing it as a resource,
// else the one whose template matches it (one at most: overlapping
// templates are quarantined).
func (r *routes) server(uri string) (string, bool) {
	if s, ok := r.uris[uri]; ok {
		return s, true
	}
	for _, t := range r.templates {
		if t.tmpl.Regexp().MatchString(uri) {
			return t.server, true
		}
	}
	return "", false
}

// holds reports whether srvName's template raw is served in r.
func (r *routes) holds(srvName, raw string) bool {
	for _, t := range r.templates {
		if t.server == srvName && t.tmpl.Raw() == raw {
			return true
		}
	}
	return false
}

// overlap reports whether some URI matches both templates, as far as one
// URI made of each (every expression replaced by "x") can tell: enough for
// a catch-all ({+any}) over a server's own, or one template twice.
func overlap(a, b *mcp.URITemplate) bool {
	return a.Regexp().MatchString(sampleURI(b)) || b.Regexp().MatchString(sampleURI(a))
}

var expression = regexp.MustCompile(`\{[^}]*\}`)

func sampleURI(t *mcp.URITemplate) string {
	return expression.ReplaceAllString(t.Raw(), "x")
}

// literalPrefix is how much of t is fixed before its first expression: the
// longer, the more specific.
func literalPrefix(t *mcp.URITemplate) int {
	if i := strings.IndexByte(t.Raw(), '{'); i >= 0 {
		return i
	}
	return len(t.Raw())
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
// templates under their own URIs, and the routes that reads and
// subscriptions take. Two servers offering one URI: the first by name
// keeps it, and the other is logged. A template that overlaps another
// server's is quarantined (see QuarantinedTemplate): the templates served
// before keep theirs, then the more specific (the longer fixed start), then
// the first by server name.
func (g *Gateway) syncResources(v *snapshot.View) {
	prev := g.routes.Load()
	r := &routes{uris: map[string]string{}}
	var resources []server.ServerResource
	type candidate struct {
		t      mcp.ResourceTemplate
		server string
		held   bool
	}
	var candidates []candidate
	read := server.ResourceHandlerFunc(g.readResource)
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
			resources = append(resources, server.ServerResource{Resource: res, Handler: read})
		}
		for _, t := range c.ResourceTemplates() {
			if t.URITemplate == nil || t.URITemplate.Template == nil {
				continue
			}
			candidates = append(candidates, candidate{t, srvName, prev.holds(srvName, t.URITemplate.Raw())})
		}
	}
	sort.SliceStable(candidates, func(i, j int) bool {
		a, b := candidates[i], candidates[j]
		if a.held != b.held {
			return a.held
		}
		if pa, pb := literalPrefix(a.t.URITemplate), literalPrefix(b.t.URITemplate); pa != pb {
			return pa > pb
		}
		return a.server < b.server
	})
	var templates []server.ServerResourceTemplate
	seen := map[string]bool{} // server + template: a server listing one twice
	wasQuarantined := map[QuarantinedTemplate]bool{}
	for _, q := range prev.quarantined {
		wasQuarantined[q] = true
	}
next:
	for _, c := range candidates {
		raw := c.t.URITemplate.Raw()
		if seen[c.server+"\x00"+raw] {
			continue
		}
		for _, held := range r.templates {
			if held.server != c.server && overlap(held.tmpl, c.t.URITemplate) {
				q := QuarantinedTemplate{Server: c.server, Template: raw, Holder: held.server, HolderTemplate: held.tmpl.Raw()}
				r.quarantined = append(r.quarantined, q)
				if !wasQuarantined[q] {
					g.log.Warn("mcpfleet: gateway: a resource template overlaps another server's; quarantined",
						"server", q.Server, "template", q.Template, "holder", q.Holder, "holder_template", q.HolderTemplate)
				}
				continue next
			}
		}
		seen[c.server+"\x00"+raw] = true
		r.templates = append(r.templates, templateRoute{tmpl: c.t.URITemplate, server: c.server})
		t := c.t
		t.Meta = withServer(t.Meta, c.server)
		templates = append(templates, server.ServerResourceTemplate{Template: t, Handler: server.ResourceTemplateHandlerFunc(read)})
	}
	g.routes.Store(r)
	g.srv.SetResources(resources...)
	g.srv.SetResourceTemplates(templates...)
}

// QuarantinedTemplates returns the resource templates the gateway does not
// serve because they overlap another server's (see QuarantinedTemplate).
func (g *Gateway) QuarantinedTemplates() []QuarantinedTemplate {
	return slices.Clone(g.routes.Load().quarantined)
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

// readResource reads a resource from the server the gateway's routes give
// its URI, whichever registration mcp-go found it by. A failure is a
// JSON-RPC error, as for prompts.
func (g *Gateway) readResource(ctx context.Context, req mcp.ReadResourceRequest) ([]mcp.ResourceContents, error) {
	srvName, err := g.resourceServer(req.Params.URI)
	if err != nil {
		return nil, err
	}
	var res *mcp.ReadResourceResult
	err = g.request(ctx, srvName, func(ctx context.Context) (err error) {
		res, err = g.m.ReadResource(ctx, srvName, req.Params.URI)
		return err
	})
	if err != nil {
		return nil, err
	}
	return res.Contents, nil
}

// resourceServer returns the server that offers uri.
func (g *Gateway) resourceServer(uri string) (string, error) {
	if s, ok := g.routes.Load().server(uri); ok {
		return s, nil
	}
	return "", fmt.Errorf("mcpfleet: gateway: no server offers resource %q", uri)
}
