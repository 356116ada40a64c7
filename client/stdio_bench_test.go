package client_test

import (
	"testing"

	mcpclient "github.com/mark3labs/mcp-go/client"
	mcptransport "github.com/mark3labs/mcp-go/client/transport"

	"github.com/mcpfleet/mcpfleet/client"
	"github.com/mcpfleet/mcpfleet/internal/testkit/faultserver"
	"github.com/mcpfleet/mcpfleet/transport/stdio"
)

// faultServerSpec runs the fault server (the test binary re-executed) in
// its well-behaved mode.
func faultServerSpec() client.ServerSpec {
	inv := faultserver.Command(faultserver.ModeNormal)
	return client.ServerSpec{Stdio: &stdio.Spec{Command: inv.Path, Args: inv.Args, Env: inv.Env}}
}

// BenchmarkStdioCallTool compares a tool call through the Manager over a
// stdio server with the same call on a raw mcp-go stdio client of the same
// server (the fault server in its well-behaved mode). Compare the two with
// benchstat -col /impl.
func BenchmarkStdioCallTool(b *testing.B) {
	args := map[string]any{"text": "hello"}

	b.Run("impl=raw", func(b *testing.B) {
		inv := faultserver.Command(faultserver.ModeNormal)
		c := mcpclient.NewClient(mcptransport.NewStdio(inv.Path, inv.EnvList(), inv.Args...))
		defer c.Close()
		client.BenchRawCallTool(b, c, args, nil)
	})

	b.Run("impl=manager", func(b *testing.B) {
		client.BenchManagerCallTool(b, faultServerSpec(), args)
	})
}
