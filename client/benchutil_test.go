package client

import (
	"context"
	"testing"

	mcpclient "github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/mcpfleet/mcpfleet/lifecycle"
)

// The call-overhead benchmarks of every transport compare the two loops
// below side by side. They are exported so that benchmarks of the external
// test package can use them too.

// BenchRawCallTool sets c up as a host would, and as the Manager does: the
// same client info (on 2026-07-28 it rides in every request's _meta) and the
// tools listed first (mcp-go then does per-call work for known tools). ready,
// if set, runs after that. It then times calls of "echo" with args.
func BenchRawCallTool(b *testing.B, c *mcpclient.Client, args any, ready func(*mcpclient.Client) error) {
	ctx := context.Background()
	if err := c.Start(ctx); err != nil {
		b.Fatal(err)
	}
	init := mcp.InitializeRequest{}
	init.Params.ClientInfo = defaultOptions().clientInfo
	if _, err := c.Initialize(ctx, init); err != nil {
		b.Fatal(err)
	}
	if _, err := c.ListTools(ctx, mcp.ListToolsRequest{}); err != nil {
		b.Fatal(err)
	}
	if ready != nil {
		if err := ready(c); err != nil {
			b.Fatal(err)
		}
	}
	req := mcp.CallToolRequest{}
	req.Params.Name = "echo"
	req.Params.Arguments = args
	benchLoop(b, func() error {
		_, err := c.CallTool(ctx, req)
		return err
	})
}

// BenchManagerCallTool times calls of "echo" with args through a Manager
// made with opts, holding one server of spec.
func BenchManagerCallTool(b *testing.B, spec ServerSpec, args any, opts ...Option) {
	ctx := context.Background()
	m := New(opts...)
	defer m.Close()
	if err := m.Add(ctx, "s", spec); err != nil {
		b.Fatal(err)
	}
	BenchCallToolOn(b, m, "s", args)
}

// BenchCallToolOn waits for server of m to connect, then times calls of its
// "echo" with args.
func BenchCallToolOn(b *testing.B, m *Manager, server string, args any) {
	ctx := context.Background()
	if err := m.WaitFor(ctx, server, lifecycle.Connected); err != nil {
		b.Fatal(err)
	}
	benchLoop(b, func() error {
		_, err := m.CallTool(ctx, server, "echo", args)
		return err
	})
}

// benchLoop times call, reporting allocations and the process's CPU time
// per call, which is steadier than wall time on a shared machine.
func benchLoop(b *testing.B, call func() error) {
	b.ReportAllocs()
	cpu := processCPUTime()
	for b.Loop() {
		if err := call(); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(processCPUTime()-cpu)/float64(b.N), "cpu-ns/op")
}
