// Package upstream is an MCP server (mcp-go's) for the gateway's tests: a
// server of the fleet that asks its client things in the middle of a call
// (sampling, elicitation, roots, through multi round-trip results, so that
// it works on every protocol), reports progress, blocks until cancelled,
// and offers a prompt, a resource and a resource template.
package upstream

import (
	"context"
	"fmt"
	"strings"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
)

// Server is the test server. Started and Cancelled report the calls of
// the tool "slow": its label when it starts, and again when its context
// ends before it was released (the client cancelled it).
type Server struct {
	*server.MCPServer
	Started   chan string
	Cancelled chan string
}

// New returns a Server named name.
func New(name string) *Server {
	s := &Server{
		MCPServer: server.NewMCPServer(name, "test",
			server.WithToolCapabilities(true), server.WithPromptCapabilities(true),
			server.WithResourceCapabilities(true, true)),
		Started:   make(chan string, 64),
		Cancelled: make(chan string, 64),
	}
	readOnly := mcp.WithToolAnnotation(mcp.ToolAnnotation{ReadOnlyHint: mcp.ToBoolPtr(true)})
	s.AddTool(mcp.NewTool("echo", mcp.WithDescription("Returns its text."), mcp.WithString("text", mcp.Required()), readOnly),
		func(_ context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return mcp.NewToolResultText(req.GetString("text", "")), nil
		})
	s.AddTool(mcp.NewTool("sample", mcp.WithDescription("Asks the client's model to complete prompt; returns its text."),
		mcp.WithString("prompt", mcp.Required())), sample)
	s.AddTool(mcp.NewTool("elicit", mcp.WithDescription("Asks the user for a name; returns the action and the name."),
		mcp.WithString("message", mcp.Required())), elicit)
	s.AddTool(mcp.NewTool("roots", mcp.WithDescription("Returns the client's roots, one URI a line.")), roots)
	s.AddTool(mcp.NewTool("slow", mcp.WithDescription("Blocks until cancelled."), mcp.WithString("label", mcp.Required())),
		func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			label := req.GetString("label", "")
			s.Started <- label
			<-ctx.Done()
			s.Cancelled <- label
			return nil, ctx.Err()
		})
	s.AddTool(mcp.NewTool("progress", mcp.WithDescription("Reports steps progress notifications, then returns."),
		mcp.WithNumber("steps", mcp.Required())),
		func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			steps := int(req.GetFloat("steps", 1))
			var token mcp.ProgressToken
			if req.Params.Meta != nil {
				token = req.Params.Meta.ProgressToken
			}
			srv := server.ServerFromContext(ctx)
			for i := 1; i <= steps && token != nil; i++ {
				_ = srv.SendNotificationToClient(ctx, string(mcp.MethodNotificationProgress), map[string]any{
					"progressToken": token, "progress": i, "total": steps, "message": fmt.Sprintf("step %d", i)})
			}
			return mcp.NewToolResultText(fmt.Sprintf("%d steps", steps)), nil
		})
	s.AddPrompt(mcp.NewPrompt("greet", mcp.WithPromptDescription("Greets someone."), mcp.WithArgument("name", mcp.RequiredArgument())),
		func(_ context.Context, req mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
			return mcp.NewGetPromptResult("greeting", []mcp.PromptMessage{
				mcp.NewPromptMessage(mcp.RoleUser, mcp.NewTextContent("Hello, "+req.Params.Arguments["name"])),
			}), nil
		})
	s.AddResource(mcp.NewResource("mem://"+name+"/a", "a", mcp.WithMIMEType("text/plain")),
		func(_ context.Context, req mcp.ReadResourceRequest) ([]mcp.ResourceContents, error) {
			return []mcp.ResourceContents{mcp.TextResourceContents{URI: req.Params.URI, MIMEType: "text/plain", Text: "A of " + name}}, nil
		})
	s.AddResourceTemplate(mcp.NewResourceTemplate("mem://"+name+"/items/{id}", "item"),
		func(_ context.Context, req mcp.ReadResourceRequest) ([]mcp.ResourceContents, error) {
			return []mcp.ResourceContents{mcp.TextResourceContents{URI: req.Params.URI, MIMEType: "text/plain",
				Text: "item " + strings.TrimPrefix(req.Params.URI, "mem://"+name+"/items/")}}, nil
		})
	return s
}

// sample asks for a completion in a multi round-trip result: mcp-go sends
// it to a client before 2026-07-28 as sampling/createMessage, and the
// client on 2026-07-28 answers in its retry.
func sample(_ context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	if res := server.SamplingResponse(req.Params.InputResponses, "s"); res != nil {
		return mcp.NewToolResultText(Text(res.Content)), nil
	}
	prompt := req.GetString("prompt", "")
	return server.NewInputRequestBuilder("sample").Sample("s", mcp.CreateMessageParams{
		Messages:  []mcp.SamplingMessage{{Role: mcp.RoleUser, Content: mcp.NewTextContent(prompt)}},
		MaxTokens: 100,
	}).ToolResult(), nil
}

func elicit(_ context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	if res := server.ElicitationResponse(req.Params.InputResponses, "e"); res != nil {
		name := ""
		if m, ok := res.Content.(map[string]any); ok {
			name, _ = m["name"].(string)
		}
		return mcp.NewToolResultText(string(res.Action) + " " + name), nil
	}
	return server.NewInputRequestBuilder("elicit").Elicit("e", mcp.ElicitationParams{
		Message: req.GetString("message", ""),
		RequestedSchema: map[string]any{"type": "object",
			"properties": map[string]any{"name": map[string]any{"type": "string"}}, "required": []string{"name"}},
	}).ToolResult(), nil
}

func roots(_ context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	if res := server.RootsResponse(req.Params.InputResponses, "r"); res != nil {
		var uris []string
		for _, r := range res.Roots {
			uris = append(uris, r.URI)
		}
		return mcp.NewToolResultText(strings.Join(uris, "\n")), nil
	}
	return server.NewInputRequestBuilder("roots").Roots("r").ToolResult(), nil
}

// Text returns the text of a sampling message's content, whether it was
// decoded into mcp-go's type or left as JSON's map.
func Text(content any) string {
	switch c := content.(type) {
	case mcp.TextContent:
		return c.Text
	case map[string]any:
		s, _ := c["text"].(string)
		return s
	}
	return fmt.Sprint(content)
}
