package stdio

import (
	"context"
	"testing"

	mcpclient "github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/mcpfleet/mcpfleet/internal/testkit/faultserver"
)

// BenchmarkCallTool compares one echo round trip through our Conn with the
// same call through mcp-go's own stdio transport, against the same server
// binary. Compare the sub-benchmarks with benchstat:
//
//	go test -run '^$' -bench CallTool -count 6 ./transport/stdio | tee out.txt
//	benchstat -col /impl out.txt
func BenchmarkCallTool(b *testing.B) {
	inv := faultserver.Command(faultserver.ModeNormal)
	b.Run("impl=raw", func(b *testing.B) {
		tr := transport.NewStdio(inv.Path, inv.EnvList(), inv.Args...)
		benchCalls(b, tr, func() { _ = tr.Close() })
	})
	b.Run("impl=conn", func(b *testing.B) {
		c, err := Dial(context.Background(), Spec{Command: inv.Path, Args: inv.Args, Env: inv.Env})
		if err != nil {
			b.Fatal(err)
		}
		benchCalls(b, c.Transport(), func() { _ = c.Close(context.Background()) })
	})
}

func benchCalls(b *testing.B, tr transport.Interface, closeFn func()) {
	defer closeFn()
	ctx := context.Background() // the raw transport kills its child when this ends
	cl := mcpclient.NewClient(tr)
	if err := cl.Start(ctx); err != nil {
		b.Fatal(err)
	}
	var initReq mcp.InitializeRequest
	initReq.Params.ClientInfo = mcp.Implementation{Name: "bench", Version: "test"}
	if _, err := cl.Initialize(ctx, initReq); err != nil {
		b.Fatal(err)
	}
	var req mcp.CallToolRequest
	req.Params.Name = "echo"
	req.Params.Arguments = map[string]any{"text": "benchmark"}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := cl.CallTool(ctx, req); err != nil {
			b.Fatal(err)
		}
	}
}
