package gateway_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"strings"
	"testing"
	"time"

	mcpclient "github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/mcpfleet/mcpfleet/client"
	"github.com/mcpfleet/mcpfleet/gateway"
	"github.com/mcpfleet/mcpfleet/internal/testkit/cputime"
	"github.com/mcpfleet/mcpfleet/internal/testkit/faultserver"
	"github.com/mcpfleet/mcpfleet/transport/stdio"
)

// faultTemplate is a template of one server, the fault server over stdio.
func faultTemplate(b testing.TB) string {
	inv := faultserver.Command(faultserver.ModeNormal)
	env, _ := json.Marshal(inv.Env)
	args, _ := json.Marshal(inv.Args)
	return fmt.Sprintf(`{"mcpServers": {"f": {"command": %q, "args": %s, "env": %s}}}`, inv.Path, args, env)
}

// BenchmarkTeamAuth is a call through an authenticated gateway against
// the same call through the gateway without authentication (each session
// opened on a fleet connected, see warmUp): the same upstream (the fault server over stdio), the same mcp-go client over
// streamable HTTP (2025-11-25), the limits off:
//
//   - auth=none: a Gateway's HTTP handler, no credential;
//   - auth=token: the same with one bearer token (serve's default);
//   - auth=jwt: a Team, the client's JWT validated (cached after its
//     first request), its identity's gateway found;
//   - auth=jwt+policy: the same with a policy (one rule for everyone)
//     deciding each call;
//   - auth=apikey: the Team with an API key instead of a JWT.
func BenchmarkTeamAuth(b *testing.B) {
	inv := faultserver.Command(faultserver.ModeNormal)
	spec := client.ServerSpec{Stdio: &stdio.Spec{Command: inv.Path, Args: inv.Args, Env: inv.Env}}
	run := func(b *testing.B, c *mcpclient.Client) {
		req := mcp.CallToolRequest{}
		req.Params.Name, req.Params.Arguments = "f__echo", map[string]any{"text": "hello"}
		ctx := context.Background()
		if res, err := c.CallTool(ctx, req); err != nil || res.IsError {
			b.Fatalf("%+v %v", res, err)
		}
		b.ReportAllocs()
		cpu := cputime.Process()
		for b.Loop() {
			if res, err := c.CallTool(ctx, req); err != nil || res.IsError {
				b.Fatal(err)
			}
		}
		cputime.Report(b, cpu)
	}
	b.Run("auth=none", func(b *testing.B) {
		f := newFleet(b, map[string]client.ServerSpec{"f": spec}, gateway.WithClientLimits(-1, -1))
		run(b, dial(b, f.serveHTTP(b, gateway.HTTPOptions{}), "2025-11-25"))
	})
	b.Run("auth=token", func(b *testing.B) {
		f := newFleet(b, map[string]client.ServerSpec{"f": spec}, gateway.WithClientLimits(-1, -1))
		url := f.serveHTTP(b, gateway.HTTPOptions{Token: "bench-token-0123456789"})
		run(b, dialAs(b, url, "bench-token-0123456789", "2025-11-25"))
	})
	everyone := &gateway.Policy{Rules: []gateway.PolicyRule{{Name: "everyone", Identities: []string{"*"}}}}
	for _, p := range []struct {
		name   string
		policy *gateway.Policy
	}{{"auth=jwt", nil}, {"auth=jwt+policy", everyone}} {
		b.Run(p.name, func(b *testing.B) {
			tm := startTeam(b, teamOptions{template: faultTemplate(b), policy: p.policy, quiet: true,
				gatewayOps: []gateway.Option{gateway.WithClientLimits(-1, -1)}})
			tok := tm.token(b, "alice")
			warmUp(b, tm.url, tok)
			run(b, dialAs(b, tm.url, tok, "2025-11-25"))
		})
	}
	b.Run("auth=apikey", func(b *testing.B) {
		key := strings.Repeat("k", 32)
		path := filepath.Join(b.TempDir(), "keys.json")
		if err := os.WriteFile(path, []byte(fmt.Sprintf(`{"keys": [{"identity": "alice", "key": %q}]}`, key)), 0o600); err != nil {
			b.Fatal(err)
		}
		keys, err := gateway.LoadAPIKeys(path)
		if err != nil {
			b.Fatal(err)
		}
		tm := startTeam(b, teamOptions{template: faultTemplate(b), apiKeys: keys, quiet: true,
			gatewayOps: []gateway.Option{gateway.WithClientLimits(-1, -1)}})
		warmUp(b, tm.url, key)
		run(b, dialAs(b, tm.url, key, "2025-11-25"))
	})
}

// warmUp builds the identity's fleet and gateway with a session of its
// own, so that the benchmark's session opens on a fleet connected: mcp-go
// answers a session's requests as event streams from the first
// notification it sent it on (the list_changed of the fleet connecting),
// which the unauthenticated side, whose fleet connected first, never got.
func warmUp(b *testing.B, url, token string) {
	c := connectAs(b, url, token, "2025-11-25")
	toolNames(b, c) // waits for the fleet's servers (WithStartupWait)
	c.Close()
}

// BenchmarkTeamIdentities is a team of 1,000 identities of which 1% are
// active at a time (MaxIdentities and the pool's MaxLive 10): each comes
// once (its JWT, initialize, one call, the session ended), over a template
// of one streamable HTTP server whose requests carry the person's id.
// Reported:
//
//   - B/idle-identity: the live heap each identity leaves once its gateway
//     and fleet were closed (the difference between the heap after the
//     1,000 and after the first 10, over the 990 others), the validated
//     token cache included;
//   - the time per op: a returning identity (whose gateway and fleet were
//     closed) from its initialize to its first call's answer: its token
//     validated (cached), its fleet built (the catalog shared by server
//     identity, published before the connect), its gateway made, the
//     upstream connected and called.
func BenchmarkTeamIdentities(b *testing.B) {
	who := whoServer(b)
	tm := startTeamCapped(b, who.URL+"/mcp", 10)
	const n = 1000
	tokens := make([]string, n)
	for i := range tokens {
		tokens[i] = tm.token(b, fmt.Sprintf("user%04d", i))
	}
	// Each visit is a client of its own, with a connection of its own,
	// closed after: nothing of it stays in the benchmark's process but
	// what the gateway keeps.
	visit := func(i int) {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		ht := &http.Transport{}
		defer ht.CloseIdleConnections()
		tr, err := transport.NewStreamableHTTP(tm.url, transport.WithHTTPBasicClient(&http.Client{Transport: ht}),
			transport.WithHTTPHeaders(map[string]string{"Authorization": "Bearer " + tokens[i]}),
			transport.WithLogger(slog.New(slog.DiscardHandler)))
		if err != nil {
			b.Fatal(err)
		}
		c := mcpclient.NewClient(tr)
		defer c.Close() // ends the session (DELETE)
		if err := c.Start(ctx); err != nil {
			b.Fatal(err)
		}
		init := mcp.InitializeRequest{}
		init.Params.ProtocolVersion = "2025-11-25"
		if _, err := c.Initialize(ctx, init); err != nil {
			b.Fatalf("user%04d: %v", i, err)
		}
		req := mcp.CallToolRequest{}
		req.Params.Name = "who__whoami"
		res, err := c.CallTool(ctx, req)
		if err != nil || res.IsError {
			b.Fatalf("user%04d: %+v %v", i, res, err)
		}
	}
	heap := func() uint64 {
		runtime.GC()
		runtime.GC()
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		return ms.HeapAlloc
	}
	for i := range 10 {
		visit(i)
	}
	before := heap()
	for i := 10; i < n; i++ {
		visit(i)
	}
	after := heap()
	if path := os.Getenv("TEAM_HEAP_PROFILE"); path != "" {
		f, _ := os.Create(path)
		_ = pprof.WriteHeapProfile(f)
		f.Close()
	}
	if up := tm.Identities(); len(up) > 10 {
		b.Fatalf("%d identities up, want at most 10", len(up))
	}
	perIdle := float64(int64(after)-int64(before)) / float64(n-10)
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		visit((i * 37) % (n - 20)) // returning: closed long ago
	}
	b.ReportMetric(perIdle, "B/idle-identity")
}

// startTeamCapped is startTeam of whoTemplate(url) with at most max
// identities (and fleets) up.
func startTeamCapped(b *testing.B, url string, max int) *team {
	return startTeam(b, teamOptions{template: whoTemplate(url), maxIdentities: max, quiet: true,
		gatewayOps: []gateway.Option{gateway.WithClientLimits(-1, -1), gateway.WithSessionCaps(-1, -1, -1)}})
}
