package gateway

import (
	"context"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/mcpfleet/mcpfleet/client"
	"github.com/mcpfleet/mcpfleet/snapshot"
)

// roundKey carries a tools/call's round (its requestState and the client's
// answers) and progress token to fleet.Call, which the meta-tools call
// with arguments only.
type roundKey struct{}

type roundInfo struct {
	round mcp.MultiRoundTripParams
	token mcp.ProgressToken
}

// metaHandler serves the meta-tool name.
func (g *Gateway) metaHandler(name string) server.ToolHandlerFunc {
	return func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		ctx = context.WithValue(ctx, roundKey{}, roundInfo{req.Params.MultiRoundTripParams, progressToken(req)})
		return g.meta.Handle(ctx, name, req.GetArguments())
	}
}

// fleet is the llm.Fleet the meta-tools call through: the Manager, with
// each call made as the gateway makes calls (counted against its session,
// cancelled with it, carrying its server's requests to its client).
type fleet struct{ g *Gateway }

func (f fleet) View() *snapshot.View { return f.g.m.View() }

func (f fleet) Call(ctx context.Context, qualified string, args any, opts ...client.CallOption) (*mcp.CallToolResult, error) {
	g := f.g
	ri, _ := ctx.Value(roundKey{}).(roundInfo)
	srvName, tool := "", ""
	if t, ok := g.m.View().Tool(qualified); ok {
		srvName, tool = t.Server(), t.Name()
	}
	if err := g.check(srvName, tool); err != nil {
		g.refused(string(mcp.MethodToolsCall), srvName, tool, err)
		return nil, err
	}
	return g.callRounds(ctx, ri.round, ri.token, srvName, tool, args,
		func(ctx context.Context, args any, more ...callOption) (*mcp.CallToolResult, error) {
			return g.m.Call(ctx, qualified, args, append(opts, more...)...)
		})
}
