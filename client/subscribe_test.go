package client

import (
	"context"
	"errors"
	"slices"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/mcpfleet/mcpfleet/internal/testkit/httpserver"
	"github.com/mcpfleet/mcpfleet/lifecycle"
	mcphttp "github.com/mcpfleet/mcpfleet/transport/http"
)

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
	srv := httpserver.StartUpdating(t, httpserver.UpdatingOptions{ListChanged: true, Subscribe: true})
	m := newTestManager(t)
	rec := record(m)
	mustAdd(t, m, "s", ServerSpec{HTTP: &mcphttp.Spec{URL: srv.URL}})
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
		if got := srv.Update(uri); got != 1 {
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
	srv.Update("test://a") // reaches only a stream the client already left, if any
	if got := srv.Update("test://b"); got < 1 {
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
	srv := httpserver.StartUpdating(t, httpserver.UpdatingOptions{ListChanged: true})
	m := newTestManager(t)
	mustAdd(t, m, "s", ServerSpec{HTTP: &mcphttp.Spec{URL: srv.URL}})
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

// TestResourceUpdatesOnlyOfSubscriptions: an update of a URI the host is
// not subscribed to (or no longer is) is no event; one of a subscribed URI
// or of a sub-resource of it is. A server that announces every update to
// every session (here: mcp-go's broadcast) shows it, and so did a
// superseded 2026-07-28 stream read after UnsubscribeResource returned
// (TestSubscribeWhileConnectedModernHTTP failed so, once in a loaded run).
func TestResourceUpdatesOnlyOfSubscriptions(t *testing.T) {
	srv := server.NewMCPServer("res", "1.0", server.WithResourceCapabilities(true, false))
	srv.AddResource(mcp.NewResource("test://a", "a"), func(context.Context, mcp.ReadResourceRequest) ([]mcp.ResourceContents, error) {
		return nil, nil
	})
	m := newTestManager(t)
	rec := record(m)
	mustAdd(t, m, "s", ServerSpec{Dialer: InProcess(srv)})
	mustWait(t, m, "s", lifecycle.Connected)
	ctx := testCtx(t)
	if err := m.SubscribeResource(ctx, "s", "test://a"); err != nil {
		t.Fatal(err)
	}
	if err := m.SubscribeResource(ctx, "s", "test://gone"); err != nil {
		t.Fatal(err)
	}
	if err := m.UnsubscribeResource(ctx, "s", "test://gone"); err != nil {
		t.Fatal(err)
	}
	// In one session's order: the last is waited for, so the others
	// were handled before it.
	for _, uri := range []string{"test://other", "test://gone", "test://a/child", "test://a"} {
		srv.SendNotificationToAllClients(mcp.MethodNotificationResourceUpdated, map[string]any{"uri": uri})
	}
	rec.wait(t, func(e Event) bool { return e.Kind == EventResourceUpdated && e.URI == "test://a" })
	var got []string
	for _, e := range rec.snapshot() {
		if e.Kind == EventResourceUpdated {
			got = append(got, e.URI)
		}
	}
	if want := []string{"test://a/child", "test://a"}; !slices.Equal(got, want) {
		t.Fatalf("updates %v, want %v", got, want)
	}
}
