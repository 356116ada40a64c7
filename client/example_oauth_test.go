package client_test

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"time"

	"github.com/mcpfleet/mcpfleet/client"
	"github.com/mcpfleet/mcpfleet/internal/testkit/oauthtest"
	"github.com/mcpfleet/mcpfleet/lifecycle"
	mcphttp "github.com/mcpfleet/mcpfleet/transport/http"
	"github.com/mcpfleet/mcpfleet/transport/http/oauth"
)

// A server behind the MCP authorization spec: it waits in
// NeedsAuthorization until the user approves, and AuthorizeLoopback runs
// the flow on a desktop host: it listens on 127.0.0.1 for the browser's
// redirect, opens the authorization URL (here a stand-in for the user
// approves it), and the server connects. The tokens are kept for every
// later runtime (WithTokenStore keeps them across host restarts).
func ExampleManager_AuthorizeLoopback() {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	// An MCP server behind an authorization server that registers clients
	// dynamically; its user approves at once.
	srv, err := oauthtest.Listen(oauthtest.Options{})
	if err != nil {
		panic(err)
	}
	defer srv.Stop()

	m := client.New()
	defer m.Close()
	err = m.Add(ctx, "notes", client.ServerSpec{
		HTTP:  &mcphttp.Spec{URL: srv.URL()},
		OAuth: &oauth.Config{CallbackPort: freePort()}, // {} would do, on the default port
	})
	if err != nil {
		panic(err)
	}
	if err := m.WaitFor(ctx, "notes", lifecycle.NeedsAuthorization); err != nil {
		panic(err)
	}
	st, _ := m.Status("notes")
	fmt.Println(st.State, "at an authorization URL:", st.AuthorizationURL != "")

	open := func(url string) error {
		// A desktop host opens a browser at url. Here the user approves at
		// once, and the browser follows the redirect to the listener.
		go func() {
			redirect, err := oauthtest.Approve(ctx, url)
			if err == nil {
				if resp, err := http.Get(redirect); err == nil {
					resp.Body.Close()
				}
			}
		}()
		return nil
	}
	if err := m.AuthorizeLoopback(ctx, "notes", open); err != nil {
		panic(err)
	}
	if err := m.WaitFor(ctx, "notes", lifecycle.Connected); err != nil {
		panic(err)
	}
	fmt.Println("authorized and", lifecycle.Connected)
	// Output:
	// NeedsAuthorization at an authorization URL: true
	// authorized and Connected
}

// freePort returns a port of 127.0.0.1 that was free a moment ago.
func freePort() int {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		panic(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}
