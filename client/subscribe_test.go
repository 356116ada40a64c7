package client

import (
	"context"
	"errors"
	"net/http/httptest"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/mcpfleet/mcpfleet/internal/httpserver"
	"github.com/mcpfleet/mcpfleet/lifecycle"
	mcphttp "github.com/mcpfleet/mcpfleet/transport/http"
)

// updatingServer is an mcp-go streamable HTTP server whose resources offer
// subscribe (or not), and which can send notifications/resources/updated to
// every subscriptions/listen stream whose filter, as the server recorded
// it, names the URI. mcp-go has no such fan-out for 2026-07-28 streams.
type updatingServer struct {
	url string

	mu      sync.Mutex
	listens map[server.ClientSession]struct{}
}

func startUpdatingServer(t *testing.T, subscribe bool) *updatingServer {
	t.Helper()
	u := &updatingServer{listens: make(map[server.ClientSession]struct{})}
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
		server.WithToolCapabilities(true), server.WithResourceCapabilities(subscribe, false))
	httpserver.AddMCPGoTools(s)
	s.AddResource(mcp.NewResource("test://a", "a"), func(context.Context, mcp.ReadResourceRequest) ([]mcp.ResourceContents, error) {
		return []mcp.ResourceContents{mcp.TextResourceContents{URI: "test://a", Text: "a"}}, nil
	})
	streamable := server.NewStreamableHTTPServer(s)
	srv := httptest.NewServer(streamable)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = streamable.Shutdown(ctx)
		srv.Close()
	})
	u.url = srv.URL + "/mcp"
	return u
}

// update sends notifications/resources/updated for uri on every live
// listen stream subscribed to it, and returns on how many.
func (u *updatingServer) update(uri string) int {
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

// TestSubscribeWhileConnectedModernHTTP subscribes to resources of an
// mcp-go streamable HTTP server on protocol 2026-07-28 while the runtime is
// connected (its Listen stream already open for tools/list_changed):
//
//   - once SubscribeResource returns, the server has a stream subscribed
//     to the URI, and its update becomes an EventResourceUpdated of the
//     same generation;
//   - after UnsubscribeResource, an update for that URI sent just before
//     one for a second, still subscribed URI never shows, while the second
//     does (one stream, in order: no sleep needed);
//   - the runtime is the same throughout: re-opening the stream never read
//     as its loss.
func TestSubscribeWhileConnectedModernHTTP(t *testing.T) {
	t.Parallel()
	ctx := testCtx(t)
	srv := startUpdatingServer(t, true)
	m := newTestManager(t)
	rec := record(m)
	mustAdd(t, m, "s", ServerSpec{HTTP: &mcphttp.Spec{URL: srv.url}})
	mustWait(t, m, "s", lifecycle.Connected)
	st, _ := m.Status("s")
	if !mcp.IsModernProtocol(st.Protocol) {
		t.Fatalf("protocol %s, want 2026-07-28", st.Protocol)
	}
	gen := st.Generation
	updated := func(uri string, after int) func(Event) bool {
		n := 0
		return func(e Event) bool {
			if n++; n <= after || e.Kind != EventResourceUpdated {
				return false
			}
			if e.Server != "s" || e.Generation != gen {
				t.Errorf("update %+v, want server s generation %d", e, gen)
			}
			if e.URI != uri {
				t.Fatalf("updated %s, want %s", e.URI, uri)
			}
			return true
		}
	}

	for _, uri := range []string{"test://a", "test://b"} {
		if err := m.SubscribeResource(ctx, "s", uri); err != nil {
			t.Fatalf("SubscribeResource(%s): %v", uri, err)
		}
		n := len(rec.snapshot())
		if got := srv.update(uri); got != 1 {
			t.Fatalf("update(%s) reached %d listen streams, want 1", uri, got)
		}
		rec.wait(t, updated(uri, n))
	}
	if subs, _ := m.Subscriptions("s"); !slices.Equal(subs, []string{"test://a", "test://b"}) {
		t.Fatalf("Subscriptions = %v", subs)
	}

	if err := m.UnsubscribeResource(ctx, "s", "test://a"); err != nil {
		t.Fatalf("UnsubscribeResource: %v", err)
	}
	n := len(rec.snapshot())
	srv.update("test://a") // reaches only a stream the client already left, if any
	if got := srv.update("test://b"); got < 1 {
		t.Fatalf("update(b) reached %d listen streams", got)
	}
	rec.wait(t, updated("test://b", n)) // fails on an update of a first

	if st2, _ := m.Status("s"); st2.Generation != gen || st2.State != lifecycle.Connected {
		t.Fatalf("status after the changes: generation %d %v, want %d Connected", st2.Generation, st2.State, gen)
	}
	if got := states(rec.snapshot(), "s"); !slices.Equal(got, []string{"Connecting", "Connected"}) {
		t.Fatalf("states %v, want Connecting, Connected only", got)
	}
}

// TestSubscribeModernHTTPNotOffered subscribes on 2026-07-28 to a server
// that does not declare resources.subscribe: the call fails, and the
// subscription is not remembered.
func TestSubscribeModernHTTPNotOffered(t *testing.T) {
	t.Parallel()
	ctx := testCtx(t)
	srv := startUpdatingServer(t, false)
	m := newTestManager(t)
	mustAdd(t, m, "s", ServerSpec{HTTP: &mcphttp.Spec{URL: srv.url}})
	mustWait(t, m, "s", lifecycle.Connected)
	err := m.SubscribeResource(ctx, "s", "test://a")
	if err == nil || errors.Is(err, ErrUnavailable) {
		t.Fatalf("SubscribeResource = %v, want the refusal", err)
	}
	t.Logf("refused: %v", err)
	if subs, _ := m.Subscriptions("s"); len(subs) != 0 {
		t.Fatalf("Subscriptions = %v after a refusal", subs)
	}
	if st, _ := m.Status("s"); st.Generation != 1 || st.State != lifecycle.Connected {
		t.Fatalf("status after the refusal: %+v", st)
	}
}
