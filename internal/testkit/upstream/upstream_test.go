package upstream_test

import (
	"context"
	"fmt"
	"testing"

	mcpclient "github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"
	"go.uber.org/goleak"

	"github.com/mcpfleet/mcpfleet/internal/testkit/upstream"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// The server asks its client for a completion in the middle of a call; an
// mcp-go client with a sampling handler answers it, and the call returns
// the answer.
func Example() {
	ctx := context.Background()
	s := upstream.New("notes")
	c, _ := mcpclient.NewInProcessClientWithSamplingHandler(s.MCPServer, model{})
	defer c.Close()
	_ = c.Start(ctx)
	_, _ = c.Initialize(ctx, mcp.InitializeRequest{})
	req := mcp.CallToolRequest{}
	req.Params.Name, req.Params.Arguments = "sample", map[string]any{"prompt": "hello"}
	res, err := c.CallTool(ctx, req)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(res.Content[0].(mcp.TextContent).Text)
	// Output: the model says: hello
}

type model struct{}

func (model) CreateMessage(_ context.Context, req mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
	return &mcp.CreateMessageResult{Model: "m", SamplingMessage: mcp.SamplingMessage{Role: mcp.RoleAssistant,
		Content: mcp.NewTextContent("the model says: " + upstream.Text(req.Messages[0].Content))}}, nil
}
