package httpserver

import (
	"context"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
)

// Updating is an mcp-go streamable HTTP server on 127.0.0.1 with a resource
// "test://a" (and the AddMCPGoTools tools) that can send
// notifications/resources/updated to every subscriptions/listen stream
// whose filter, as the server recorded it, names the URI. mcp-go has no
// such fan-out for 2026-07-28 streams.
type Updating struct {
	// URL is the MCP endpoint.
	URL string

	mu      sync.Mutex // guards listens
	listens map[server.ClientSession]struct{}
}

// UpdatingOptions says what an Updating server declares.
type UpdatingOptions struct {
	// ListChanged declares tools with list_changed.
	ListChanged bool
	// Subscribe declares resources with subscribe.
	Subscribe bool
	// Wrap, if set, wraps the server's handler, to inject faults.
	Wrap func(http.Handler) http.Handler
}

// StartUpdating starts an Updating server, shut down when the test ends.
func StartUpdating(t testing.TB, o UpdatingOptions) *Updating {
	t.Helper()
	u := &Updating{listens: make(map[server.ClientSession]struct{})}
	hooks := &server.Hooks{}
	hooks.AddBeforeSubscriptionsListen(func(ctx context.Context, _ any, _ *mcp.SubscriptionsListenRequest) {
		sess := server.ClientSessionFromContext(ctx)
		if sess == nil {
			return
		}
		u.mu.Lock()
		u.listens[sess] = struct{}{}
		u.mu.Unlock()
		context.AfterFunc(ctx, func() {
			u.mu.Lock()
			delete(u.listens, sess)
			u.mu.Unlock()
		})
	})
	s := server.NewMCPServer("updating", "1.0", server.WithHooks(hooks),
		server.WithToolCapabilities(o.ListChanged), server.WithResourceCapabilities(o.Subscribe, false))
	AddMCPGoTools(s)
	s.AddResource(mcp.NewResource("test://a", "a"), func(context.Context, mcp.ReadResourceRequest) ([]mcp.ResourceContents, error) {
		return []mcp.ResourceContents{mcp.TextResourceContents{URI: "test://a", Text: "a"}}, nil
	})
	streamable := server.NewStreamableHTTPServer(s)
	var h http.Handler = streamable
	if o.Wrap != nil {
		h = o.Wrap(h)
	}
	srv := httptest.NewServer(h)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = streamable.Shutdown(ctx)
		srv.Close()
	})
	u.URL = srv.URL + "/mcp"
	return u
}

// Update sends notifications/resources/updated for uri on every live listen
// stream subscribed to it, and returns on how many.
func (u *Updating) Update(uri string) int {
	u.mu.Lock()
	defer u.mu.Unlock()
	n := 0
	for sess := range u.listens {
		f, ok := sess.(server.SessionWithSubscriptionFilter)
		if !ok {
			continue
		}
		if filter, active := f.SubscriptionFilter(); !active || !slices.Contains(filter.ResourceSubscriptions, uri) {
			continue
		}
		note := mcp.JSONRPCNotification{JSONRPC: mcp.JSONRPC_VERSION, Notification: mcp.Notification{
			Method: mcp.MethodNotificationResourceUpdated,
			Params: mcp.NotificationParams{AdditionalFields: map[string]any{"uri": uri}},
		}}
		select {
		case sess.NotificationChannel() <- note:
			n++
		default:
		}
	}
	return n
}
