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

	"github.com/mcpfleet/mcpfleet/lifecycle"
	"github.com/mcpfleet/mcpfleet/snapshot"
)

// MetaServer is the _meta key under which the gateway names the server a
// prompt, resource or resource template comes from.
const MetaServer = "io.mcpfleet/server"

// Separator joins a server's name and a prompt's name in the qualified
// prompt names the gateway serves ("notes__summarize"), as the Manager's
// default separator does for tools.
const Separator = "__"

// MetaStale is the _meta key under which the gateway marks a tool served
// from the last good catalog of a server that is down: its value is an
// object with the server's "state" ("Reconnecting", "NeedsAuthorization",
// "PermanentlyFailed"). A call of it fails with the error that says why,
// until the server is back (see WithDropStaleTools).
const MetaStale = "io.mcpfleet/stale"

// mirror is what the gateway registered with its mcp-go server: the tools
// by the names they are served under, so that a catalog change touches
// only the tools it names. Only the follower goroutine (and New, before it
// starts) uses it.
type mirror struct {
	tools map[string]mirrored // by served name
	// served maps the View's qualified names to the names served.
	served map[string]string
	// kept are the tools of servers that are down which the View no longer
	// has (a server that failed for good is unpublished), by server and
	// qualified name: served stale from the last good catalog.
	kept map[string]map[string]snapshot.Tool
	// bare is set while tools are served under their own names (one
	// server, WithBareToolNames).
	bare bool
	// warned are the served names logged as not of the MCP form.
	warned map[string]bool
}

// mirrored is one tool registered.
type mirrored struct {
	t snapshot.Tool
	// stale is the state of its server if it is down, else the zero State
	// (Disconnected, which is never down).
	stale lifecycle.State
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
	g.syncTools(v)
	g.syncPrompts(v)
	g.syncResources(v)
}

// down reports whether a server in state st is down: its tools are
// served stale (or dropped).
func down(st lifecycle.State) bool {
	return st == lifecycle.Reconnecting || st == lifecycle.NeedsAuthorization || st == lifecycle.PermanentlyFailed
}

// keeps reports whether the tools of a server in state st that the View
// dropped stay served from the last good catalog: it is down, or
// connecting for the first time.
func keeps(st lifecycle.State) bool { return down(st) || st == lifecycle.Connecting }

// serverState returns the state of srvName, Closed if it is gone.
func (g *Gateway) serverState(srvName string) lifecycle.State {
	st, err := g.m.Status(srvName)
	if err != nil {
		return lifecycle.Closed
	}
	return st.State
}

// syncTools registers every tool the View has, and the kept tools of the
// servers that are down, as the policy and the naming say.
func (g *Gateway) syncTools(v *snapshot.View) {
	if g.meta != nil {
		return
	}
	statuses := g.m.Statuses()
	g.mirror.bare = g.o.bareNames && len(statuses) == 1
	states := make(map[string]lifecycle.State, len(statuses))
	for _, st := range statuses {
		states[st.Name] = st.State
	}
	// What was served of a server that keeps its tools and that the View
	// no longer has (the View may have dropped them before the event that
	// says so came) stays, from the last good catalog.
	for _, m := range g.mirror.tools {
		srv := m.t.Server()
		if _, inView := v.Tool(m.t.Qualified()); inView || !keeps(states[srv]) {
			continue
		}
		if g.mirror.kept == nil {
			g.mirror.kept = map[string]map[string]snapshot.Tool{}
		}
		if g.mirror.kept[srv] == nil {
			g.mirror.kept[srv] = map[string]snapshot.Tool{}
		}
		g.mirror.kept[srv][m.t.Qualified()] = m.t
	}
	for srv := range g.mirror.kept {
		if !keeps(states[srv]) {
			delete(g.mirror.kept, srv)
		}
	}
	tools := make([]server.ServerTool, 0, v.NumTools())
	g.mirror.tools = make(map[string]mirrored, v.NumTools())
	g.mirror.served = make(map[string]string, v.NumTools())
	add := func(t snapshot.Tool) {
		var stale lifecycle.State
		if st := states[t.Server()]; down(st) {
			if g.o.dropStale {
				return
			}
			stale = st
		}
		if !g.listed(t.Server(), t.Name()) {
			return
		}
		name := g.servedName(t)
		if _, dup := g.mirror.tools[name]; dup {
			return // a kept tool the View has again
		}
		m := mirrored{t: t, stale: stale}
		tools = append(tools, g.serverTool(name, m))
		g.mirror.tools[name] = m
		g.mirror.served[t.Qualified()] = name
	}
	for i := range v.NumTools() {
		add(v.ToolAt(i))
	}
	for _, kept := range g.mirror.kept {
		for _, t := range kept {
			add(t)
		}
	}
	if g.o.member.authorize != nil {
		// A person's server that waits for them to authorize it, of which
		// no catalog is known: one tool says so and gives the link.
		for _, st := range statuses {
			if _, known := v.Catalog(st.Name); st.State != lifecycle.NeedsAuthorization || known ||
				len(g.mirror.kept[st.Name]) > 0 || !g.listed(st.Name, "") {
				continue
			}
			tools = append(tools, g.authorizeTool(st.Name))
		}
	}
	g.srv.SetTools(tools...)
}

// AuthorizeTool is the name, after the server's name and Separator, of the
// tool a Team's gateway lists for a server that waits for the person to
// authorize it and whose tools are not known yet ("github__authorize"):
// calling it gives the authorization link (see Team).
const AuthorizeTool = "authorize"

// authorizeTool is the tool that asks the person to authorize srvName.
func (g *Gateway) authorizeTool(srvName string) server.ServerTool {
	name := srvName + Separator + AuthorizeTool
	def := mcp.NewTool(name, mcp.WithDescription(fmt.Sprintf(
		"Server %s needs you to authorize access to your account there before its tools can be used. "+
			"Call this tool to get the link to open; its tools appear once you approved.", srvName)))
	def.Meta = &mcp.Meta{AdditionalFields: map[string]any{MetaServer: srvName,
		MetaStale: map[string]any{"state": lifecycle.NeedsAuthorization.String()}}}
	return server.ServerTool{Tool: def, Handler: func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		if err := g.check(srvName, ""); err != nil {
			return nil, err
		}
		if res, err, ok := g.needsAuthorization(ctx, srvName, name); ok {
			return res, err
		}
		return mcp.NewToolResultError(fmt.Sprintf("the authorization of server %s could not be started; see the gateway's log", srvName)), nil
	}}
}

// stateChanged registers again the tools of srvName when it went down or
// came back (stale marks, or dropped tools), and every tool when the
// number of servers crossed one (bare names).
func (g *Gateway) stateChanged(srvName string, from, to lifecycle.State) {
	if g.meta != nil {
		return
	}
	switch {
	case g.o.bareNames && g.mirror.bare != (len(g.m.Statuses()) == 1):
		// A server came or went: the names change with the count.
		g.syncTools(g.m.View())
	case down(from) || down(to):
		if from == to {
			return
		}
		if !keeps(to) {
			delete(g.mirror.kept, srvName)
		}
		g.syncTools(g.m.View())
	case len(g.mirror.kept[srvName]) > 0 && !keeps(to):
		delete(g.mirror.kept, srvName)
		g.syncTools(g.m.View())
	}
}

// servedName is the name t is served under. One that is not of the form
// the MCP specification asks for (a server's name with a space in it, say)
// is served all the same, and logged once: some clients refuse it.
func (g *Gateway) servedName(t snapshot.Tool) string {
	name := t.Qualified()
	if g.mirror.bare {
		name = t.Name()
	}
	if !ValidToolName(name) && !g.mirror.warned[name] {
		if g.mirror.warned == nil {
			g.mirror.warned = map[string]bool{}
		}
		g.mirror.warned[name] = true
		g.log.Warn("mcpfleet: gateway: a tool name is not of the form MCP asks (1 to 128 of A-Z a-z 0-9 _ - .); some clients refuse it",
			"tool", name, "server", t.Server())
	}
	return name
}

// applyDiff registers what a catalog change changed: the tools it names
// are added, replaced or deleted as the current View has them (the View
// may be newer than the event: it is the truth), and the prompts and
// resources are registered again if their lists changed. A tool the View
// dropped because its server is down stays, stale (unless
// WithDropStaleTools). Each change makes mcp-go send one list_changed of
// its kind to every session.
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
		states := map[string]lifecycle.State{}
		state := func(srv string) lifecycle.State {
			st, ok := states[srv]
			if !ok {
				st = g.serverState(srv)
				states[srv] = st
			}
			return st
		}
		for _, q := range names {
			old, wasServed := g.mirror.served[q]
			t, inView := v.Tool(q)
			if !inView && wasServed {
				// Gone from the View: kept if its server is down, or
				// connecting for the first time (a catalog shown from the
				// cache stays until the connect tells otherwise).
				prev := g.mirror.tools[old]
				if srv := prev.t.Server(); keeps(state(srv)) && !g.o.dropStale {
					if g.mirror.kept[srv] == nil {
						if g.mirror.kept == nil {
							g.mirror.kept = map[string]map[string]snapshot.Tool{}
						}
						g.mirror.kept[srv] = map[string]snapshot.Tool{}
					}
					g.mirror.kept[srv][q] = prev.t
					t, inView = prev.t, true
				}
			} else if inView {
				delete(g.mirror.kept[t.Server()], q)
			}
			var m mirrored
			ok := inView
			if ok {
				m.t = t
				if st := state(t.Server()); down(st) {
					m.stale = st
					ok = !g.o.dropStale
				}
				ok = ok && g.listed(t.Server(), t.Name())
			}
			name := ""
			if ok {
				name = g.servedName(t)
			}
			if wasServed && old != name {
				remove = append(remove, old)
				delete(g.mirror.tools, old)
				delete(g.mirror.served, q)
			}
			if ok {
				upsert = append(upsert, g.serverTool(name, m))
				g.mirror.tools[name] = m
				g.mirror.served[q] = name
			}
		}
		switch {
		case len(upsert) > 0 && len(remove) > 0:
			// One list_changed for the change, not one per kind.
			g.syncTools(v)
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

// serverTool is m's tool as the gateway serves it: under name, marked
// stale if its server is down, called through the Manager.
func (g *Gateway) serverTool(name string, m mirrored) server.ServerTool {
	t := m.t
	def := t.Definition()
	def.Name = name
	if m.stale != 0 {
		meta := &mcp.Meta{AdditionalFields: map[string]any{}}
		if def.Meta != nil {
			meta.ProgressToken = def.Meta.ProgressToken
			for k, v := range def.Meta.AdditionalFields {
				meta.AdditionalFields[k] = v
			}
		}
		meta.AdditionalFields[MetaStale] = map[string]any{"state": m.stale.String()}
		def.Meta = meta
	}
	srvName, tool := t.Server(), t.Name()
	invoke := func(ctx context.Context, args any, opts ...callOption) (*mcp.CallToolResult, error) {
		return g.m.CallTool(ctx, srvName, tool, args, opts...)
	}
	return server.ServerTool{Tool: def, Handler: func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return g.callTool(ctx, req, srvName, tool, name, invoke)
	}}
}

// syncPrompts registers every server's prompts under qualified names.
func (g *Gateway) syncPrompts(v *snapshot.View) {
	var prompts []server.ServerPrompt
	for c := range v.Catalogs() {
		srvName := c.Server()
		if !g.listed(srvName, "") {
			continue
		}
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
	// The routes take in every server's, so that a read of a URI of a
	// server the policy closes is refused as denied; mcp-go is given the
	// open ones.
	for c := range v.Catalogs() { // sorted by server
		srvName := c.Server()
		open := g.listed(srvName, "")
		for _, res := range c.Resources() {
			if holder, dup := r.uris[res.URI]; dup {
				g.log.Warn("mcpfleet: gateway: two servers offer one resource URI; the first keeps it",
					"uri", res.URI, "server", srvName, "holder", holder)
				continue
			}
			r.uris[res.URI] = srvName
			if !open {
				continue
			}
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
		if !g.listed(c.server, "") {
			continue
		}
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
		err := g.request(ctx, string(mcp.MethodPromptsGet), srvName, name, func(ctx context.Context) (err error) {
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
	err = g.request(ctx, string(mcp.MethodResourcesRead), srvName, "", func(ctx context.Context) (err error) {
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
