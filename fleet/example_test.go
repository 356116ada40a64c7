package fleet_test

import (
	"context"
	"fmt"
	"log"
	"net/http/httptest"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/mcpfleet/mcpfleet/client"
	"github.com/mcpfleet/mcpfleet/fleet"
	"github.com/mcpfleet/mcpfleet/lifecycle"
)

// A host that serves many users keeps one fleet per user: built from one
// template when the user's request comes, with the user's own token, and
// closed once the user has been idle for a while.
func ExamplePool() {
	// An MCP server that says which token it was sent.
	s := server.NewMCPServer("api", "1.0.0")
	s.AddTool(mcp.NewTool("whoami"), func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return mcp.NewToolResultText(req.Header.Get("Authorization")), nil
	})
	srv := httptest.NewServer(server.NewStreamableHTTPServer(s))
	defer srv.Close()

	tmpl, err := fleet.ParseTemplate([]byte(`{"mcpServers": {
		"api": {"url": "`+srv.URL+`/mcp", "headers": {"Authorization": "Bearer ${user:token}"}}}}`),
		client.WithSource("fleet.json"))
	if err != nil {
		log.Fatal(err)
	}
	userTokens := map[string]string{"alice": "tok-a", "bob": "tok-b"} // the host's user directory
	pool, err := fleet.New(fleet.Config{
		Template: tmpl,
		Values: func(ctx context.Context, user string) (map[string]string, error) {
			return map[string]string{"token": userTokens[user]}, nil
		},
		IdleTimeout: 10 * time.Minute,
		MaxLive:     500,
	})
	if err != nil {
		log.Fatal(err)
	}
	defer pool.Close()

	ctx := context.Background()
	for _, user := range []string{"alice", "bob"} {
		f, err := pool.Get(ctx, user) // built on the user's first request
		if err != nil {
			log.Fatal(err)
		}
		m := f.Manager()
		if err := m.WaitFor(ctx, "api", lifecycle.Connected); err != nil {
			log.Fatal(err)
		}
		res, err := m.CallTool(ctx, "api", "whoami", nil)
		if err != nil {
			log.Fatal(err)
		}
		fmt.Println(user, res.Content[0].(mcp.TextContent).Text)
		f.Release() // idle from now on: closed after IdleTimeout
	}
	fmt.Println(pool.Users())
	// Output:
	// alice Bearer tok-a
	// bob Bearer tok-b
	// [alice bob]
}

// A template's ${user:NAME} variables take each user's values.
func ExampleTemplate_Config() {
	tmpl, err := fleet.ParseTemplate([]byte(`{"mcpServers": {
		"crm": {"url": "https://crm.example.com/${user:tenant}/mcp", "headers": {"X-User": "${user:id}"}}}}`))
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(tmpl.Variables())
	cfg, err := tmpl.Config("alice", map[string]string{"tenant": "acme"})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(cfg.Servers["crm"].HTTP.URL, cfg.Servers["crm"].HTTP.Headers["X-User"])
	_, err = tmpl.Config("bob", nil)
	fmt.Println(err)
	// Output:
	// [id tenant]
	// https://crm.example.com/acme/mcp alice
	// mcpfleet: config (user "bob"): server "crm": field "url": ${user:tenant} has no value
	// mcpfleet: config (user "bob"): server "crm": field "command": missing: a server needs a command (stdio) or a url (http, sse)
}
