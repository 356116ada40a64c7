package gateway

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/mark3labs/mcp-go/mcp"
)

// errDenied is the error of a request the policy refused.
var errDenied = errors.New("mcpfleet: gateway: denied by the policy")

// DeniedError is the error of a request a Team's policy refused: the
// identity, what it asked for, and the decision (its rule and entry).
type DeniedError struct {
	Identity string
	Server   string
	Tool     string // "" for a prompt or resource of Server
	Decision Decision
}

// Error says who was denied what, and by which rule.
func (e *DeniedError) Error() string {
	what := "server " + e.Server
	if e.Tool != "" {
		what = "tool " + e.Tool + " of server " + e.Server
	}
	return fmt.Sprintf("mcpfleet: gateway: denied: %s may not use %s: %s", e.Identity, what, e.Decision)
}

// Unwrap makes errors.Is find the sentinel of denials.
func (e *DeniedError) Unwrap() error { return errDenied }

// listed reports whether the policy lets the clients see srvName's tool
// (tool "": the server's prompts and resources). Hidden ones are logged at
// Debug with the rule that hid them.
func (g *Gateway) listed(srvName, tool string) bool {
	if !g.restricting() {
		return true
	}
	d := g.access(srvName, tool)
	if !d.Allowed {
		g.log.Debug("mcpfleet: gateway: policy: not listed", "server", srvName, "tool", tool, "decision", d.String())
	}
	return d.Allowed
}

// check decides a request of srvName's tool (a prompt or resource: tool
// "") by the policy: every decision is logged, with its rule (allowed at
// Debug, denied at Info) and told to the Observer; a denial is the error.
func (g *Gateway) check(srvName, tool string) error {
	if !g.restricting() {
		return nil
	}
	d := g.access(srvName, tool)
	g.obs.PolicyDecision(PolicyInfo{Identity: g.who, Server: srvName, Tool: tool, Decision: d})
	if d.Allowed {
		g.log.Debug("mcpfleet: gateway: policy: allowed", "server", srvName, "tool", tool, "rule", d.Rule)
		return nil
	}
	g.log.Info("mcpfleet: gateway: policy: denied", "server", srvName, "tool", tool, "rule", d.Rule, "why", d.Why)
	return &DeniedError{Identity: g.who, Server: srvName, Tool: tool, Decision: d}
}

// restricting reports whether a policy decides what the clients may use
// (a Team's with a policy in force).
func (g *Gateway) restricting() bool {
	return g.access != nil && (g.o.member.restricted == nil || g.o.member.restricted())
}

// policyChanged makes the gateway register its catalog again as its policy
// now decides: what it closes leaves the lists (clients are told
// list_changed), what it opens joins them. Calls are decided by the policy
// of the moment in any case, but a tool the policy opens can be called only
// once it is registered: the channel returned is closed once a
// registration that read the policy of this moment is done, or once the
// gateway follows its Manager no more.
func (g *Gateway) policyChanged() <-chan struct{} {
	done := make(chan struct{})
	g.syncMu.Lock()
	if g.syncEnded {
		close(done)
	} else {
		g.syncWaiters = append(g.syncWaiters, done)
	}
	g.syncMu.Unlock()
	select {
	case g.resync <- struct{}{}:
	default: // one is pending; it takes this waiter too
	}
	return done
}

// resynced registers the catalog again for the policy changes signalled,
// and tells their waiters. The waiters are taken before the registration,
// so that each saw its policy stored before it reads it; one added after
// signalled again and is taken by the next round.
func (g *Gateway) resynced() {
	g.syncMu.Lock()
	waiters := g.syncWaiters
	g.syncWaiters = nil
	g.syncMu.Unlock()
	g.syncAll()
	for _, w := range waiters {
		close(w)
	}
}

// endResyncs tells the waiters of policyChanged, now and later, that no
// registration will come: the follower has ended.
func (g *Gateway) endResyncs() {
	g.syncMu.Lock()
	defer g.syncMu.Unlock()
	g.syncEnded = true
	for _, w := range g.syncWaiters {
		close(w)
	}
	g.syncWaiters = nil
}

// admitDenied refuses, before mcp-go looks for a handler, a request of a
// tool, prompt or resource the policy closes (those are not registered,
// so mcp-go would say "not found"): the client is told it was denied, and
// by which rule. A request of one it does not know is left to mcp-go.
func (g *Gateway) admitDenied(ctx context.Context, method mcp.MCPMethod, name, uri string) error {
	switch method {
	case mcp.MethodToolsCall:
		if name == "" || g.srv.GetTool(name) != nil {
			return nil // a registered tool's handler decides
		}
		srv, tool, ok := g.resolveTool(name)
		if !ok {
			return nil
		}
		return g.denied(ctx, string(method), srv, tool)
	case mcp.MethodPromptsGet:
		srv, prompt, ok := strings.Cut(name, Separator)
		if _, known := g.m.View().Catalog(srv); !ok || !known {
			return nil
		}
		return g.denied(ctx, string(method), srv, prompt)
	case mcp.MethodResourcesRead:
		srv, ok := g.routes.Load().server(uri)
		if !ok {
			return nil
		}
		return g.denied(ctx, string(method), srv, "")
	}
	return nil
}

// denied checks a request that never reaches a handler, and tells the
// Observer of a denial as of a call.
func (g *Gateway) denied(ctx context.Context, method, srv, name string) error {
	tool := name
	if method != string(mcp.MethodToolsCall) {
		tool = "" // prompts and resources are the server's
	}
	err := g.check(srv, tool)
	if err != nil {
		g.obs.Call(CallInfo{Identity: g.who, Method: method, Server: srv, Name: name, Outcome: OutcomeDenied, Err: err})
	}
	return err
}

// resolveTool returns the server and tool a served tool name names, from
// the View: a qualified name, or, with bare names, the one server's tool.
func (g *Gateway) resolveTool(name string) (srv, tool string, ok bool) {
	v := g.m.View()
	if t, ok := v.Tool(name); ok {
		return t.Server(), t.Name(), true
	}
	if g.o.bareNames {
		for c := range v.Catalogs() {
			if srv != "" {
				return "", "", false // more than one server: names are qualified
			}
			srv = c.Server()
		}
		if srv != "" {
			return srv, name, true
		}
	}
	return "", "", false
}
