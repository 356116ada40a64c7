package gateway_test

import (
	"slices"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/mcpfleet/mcpfleet/client"
	"github.com/mcpfleet/mcpfleet/gateway"
	"github.com/mcpfleet/mcpfleet/internal/testkit/httpserver"
	mcphttp "github.com/mcpfleet/mcpfleet/transport/http"
)

func updatedOf(uri string) func(mcp.JSONRPCNotification) bool {
	return func(n mcp.JSONRPCNotification) bool {
		return n.Method == string(mcp.MethodNotificationResourceUpdated) && n.Params.AdditionalFields["uri"] == uri
	}
}

func (n *notes) countOf(ok func(mcp.JSONRPCNotification) bool) int {
	n.mu.Lock()
	defer n.mu.Unlock()
	c := 0
	for _, x := range n.list {
		if ok(x) {
			c++
		}
	}
	return c
}

// TestSubscriptions: each downstream session has its own resource
// subscriptions. The server is subscribed once for all of them, its
// updates reach only the sessions subscribed (on either protocol: a
// resources/subscribe, or a subscriptions/listen filter), and it is
// unsubscribed when the last one lets go.
func TestSubscriptions(t *testing.T) {
	srv := httpserver.StartUpdating(t, httpserver.UpdatingOptions{Subscribe: true})
	f := newFleet(t, map[string]client.ServerSpec{"u": {HTTP: &mcphttp.Spec{URL: srv.URL}}})
	url := f.serveHTTP(t, gateway.HTTPOptions{})
	ctx := testCtx(t)
	const uri = "test://a"
	subscribed := func(want ...string) {
		t.Helper()
		got, err := f.m.Subscriptions("u")
		if err != nil || !slices.Equal(got, want) {
			t.Fatalf("the server's subscriptions: %v %v, want %v", got, err, want)
		}
	}
	ann, bob := dial(t, url, "2025-11-25"), dial(t, url, "2025-11-25")
	na, nb := collect(ann), collect(bob)
	sub := mcp.SubscribeRequest{}
	sub.Params.URI = uri
	if err := ann.Subscribe(ctx, sub); err != nil {
		t.Fatal(err)
	}
	subscribed(uri)
	if n := srv.Update(uri); n != 1 {
		t.Fatalf("the update reached %d streams of the Manager's", n)
	}
	na.wait(t, 0, updatedOf(uri))

	if err := bob.Subscribe(ctx, sub); err != nil {
		t.Fatal(err)
	}
	modern := dial(t, url, "")
	nm := collect(modern)
	listen(t, modern, nm, mcp.SubscriptionFilter{ResourceSubscriptions: []string{uri}})
	subscribed(uri)
	srv.Update(uri)
	na.wait(t, 1, updatedOf(uri))
	nb.wait(t, 0, updatedOf(uri))
	nm.wait(t, 0, updatedOf(uri))
	if got := nb.countOf(updatedOf(uri)); got != 1 {
		t.Fatalf("bob got %d updates, of which the first came before he subscribed", got)
	}

	unsub := mcp.UnsubscribeRequest{}
	unsub.Params.URI = uri
	if err := ann.Unsubscribe(ctx, unsub); err != nil {
		t.Fatal(err)
	}
	subscribed(uri) // bob and the listen stream still are
	if err := bob.Unsubscribe(ctx, unsub); err != nil {
		t.Fatal(err)
	}
	subscribed(uri) // the listen stream still is
}
