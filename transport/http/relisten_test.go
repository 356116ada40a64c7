package http_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	nethttp "net/http"
	"slices"
	"sync"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/mcpfleet/mcpfleet/internal/testkit/httpserver"
	mcphttp "github.com/mcpfleet/mcpfleet/transport/http"
)

// refusedURI is a resource the test server refuses to listen for.
const refusedURI = "test://refused"

// refuse answers a subscriptions/listen naming refusedURI with an error.
func refuse(next nethttp.Handler) nethttp.Handler {
	return nethttp.HandlerFunc(func(w nethttp.ResponseWriter, r *nethttp.Request) {
		if r.Method == nethttp.MethodPost && r.Header.Get(mcp.HeaderMethod) == string(mcp.MethodSubscriptionsListen) {
			body, _ := io.ReadAll(r.Body)
			r.Body = io.NopCloser(bytes.NewReader(body))
			var msg struct {
				ID any `json:"id"`
			}
			if bytes.Contains(body, []byte(refusedURI)) && json.Unmarshal(body, &msg) == nil {
				w.Header().Set("Content-Type", "application/json")
				_ = json.NewEncoder(w).Encode(map[string]any{"jsonrpc": "2.0", "id": msg.ID,
					"error": map[string]any{"code": mcp.INVALID_PARAMS, "message": "no such resource"}})
				return
			}
		}
		next.ServeHTTP(w, r)
	})
}

// updates collects the URIs of the resources/updated notifications a
// session receives.
func updates(s *session) <-chan string {
	ch := make(chan string, 256)
	s.client.OnNotification(func(n mcp.JSONRPCNotification) {
		if n.Method != mcp.MethodNotificationResourceUpdated {
			return
		}
		if uri, ok := n.Params.AdditionalFields["uri"].(string); ok {
			select {
			case ch <- uri:
			default:
			}
		}
	})
	return ch
}

// nextUpdate returns the next updated URI.
func nextUpdate(ctx context.Context, t *testing.T, ch <-chan string) string {
	t.Helper()
	select {
	case uri := <-ch:
		return uri
	case <-ctx.Done():
		t.Fatalf("no resources/updated: %v", ctx.Err())
		return ""
	}
}

// TestSubscribeResourceReopensListen subscribes to resources on a
// 2026-07-28 connection that is already listening (or, without list_changed,
// has found nothing to listen for), against an mcp-go server:
//
//   - SubscribeResource re-opens the stream with the URI in its filter, and
//     once it returns the server's update for the URI arrives;
//   - UnsubscribeResource re-opens it without: an update for the dropped
//     URI sent just before one for a URI still subscribed does not arrive,
//     while the other does (one stream, in order, so no sleep is needed);
//   - concurrent subscriptions all end up in the last stream's filter;
//   - a filter the server refuses fails SubscribeResource, which returns
//     once the stream is open again with the previous filter;
//   - none of this closes Done, and no goroutine outlives Close (goleak).
func TestSubscribeResourceReopensListen(t *testing.T) {
	for _, listChanged := range []bool{true, false} {
		t.Run(fmt.Sprintf("list_changed=%v", listChanged), func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
			defer cancel()
			srv := httpserver.StartUpdating(t, httpserver.UpdatingOptions{ListChanged: listChanged, Subscribe: true, Wrap: refuse})
			s := connect(ctx, t, mcphttp.Spec{URL: srv.URL})
			if v := s.client.ProtocolVersion(); !mcp.IsModernProtocol(v) {
				t.Fatalf("protocol %s, want 2026-07-28", v)
			}
			got := updates(s)
			subscribe := func(uri string) {
				t.Helper()
				if err := s.conn.SubscribeResource(ctx, s.client, uri); err != nil {
					t.Fatalf("SubscribeResource(%s): %v", uri, err)
				}
			}
			alive := func() {
				t.Helper()
				select {
				case <-s.conn.Done():
					t.Fatalf("connection marked dead: %v", s.conn.Err())
				default:
				}
			}

			subscribe("test://a")
			if n := srv.Update("test://a"); n != 1 {
				t.Fatalf("update(a) reached %d listen streams, want 1", n)
			}
			if uri := nextUpdate(ctx, t, got); uri != "test://a" {
				t.Fatalf("updated %s, want test://a", uri)
			}
			subscribe("test://b")
			subscribe("test://b") // no change: no new stream
			srv.Update("test://a")
			srv.Update("test://b")
			if a, b := nextUpdate(ctx, t, got), nextUpdate(ctx, t, got); a != "test://a" || b != "test://b" {
				t.Fatalf("updated %s, %s; want a, b", a, b)
			}
			alive()

			if err := s.conn.UnsubscribeResource(ctx, s.client, "test://a"); err != nil {
				t.Fatalf("UnsubscribeResource: %v", err)
			}
			srv.Update("test://a") // sent only on a stream the client left, if any
			if n := srv.Update("test://b"); n < 1 {
				t.Fatalf("update(b) reached %d listen streams", n)
			}
			if uri := nextUpdate(ctx, t, got); uri != "test://b" {
				t.Fatalf("updated %s after unsubscribing from it, want test://b", uri)
			}
			alive()

			// Concurrent changes: the stream that stays has all of them.
			var wg sync.WaitGroup
			uris := []string{"test://c", "test://d", "test://e", "test://f", "test://g"}
			for _, uri := range uris {
				wg.Go(func() {
					if err := s.conn.SubscribeResource(ctx, s.client, uri); err != nil {
						t.Errorf("SubscribeResource(%s): %v", uri, err)
					}
				})
			}
			wg.Wait()
			for _, uri := range uris {
				srv.Update(uri)
			}
			var seen []string
			for range uris {
				seen = append(seen, nextUpdate(ctx, t, got))
			}
			if !slices.Equal(seen, uris) {
				t.Fatalf("updates %v after concurrent subscriptions, want %v", seen, uris)
			}
			alive()

			// A refused filter: an error, and the previous one back.
			if err := s.conn.SubscribeResource(ctx, s.client, refusedURI); err == nil {
				t.Fatal("SubscribeResource of a refused URI succeeded")
			} else {
				t.Logf("refused: %v", err)
			}
			srv.Update(refusedURI)
			if n := srv.Update("test://b"); n < 1 {
				t.Fatalf("update(b) reached %d listen streams after the refusal", n)
			}
			if uri := nextUpdate(ctx, t, got); uri != "test://b" {
				t.Fatalf("updated %s after the refusal, want test://b", uri)
			}
			alive()
			s.mustEcho(ctx, t, "still alive")
		})
	}
}
