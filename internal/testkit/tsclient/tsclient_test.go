package tsclient_test

import (
	"context"
	"testing"

	"github.com/mcpfleet/mcpfleet/internal/testkit/tsclient"
)

// A test of a streamable HTTP server with the TypeScript SDK's client. It
// needs node and the pinned npm packages, so this example is compiled, not
// run; cmd/mcpfleet's tests run the client.
func Example() {
	test := func(t *testing.T, url string) {
		c := tsclient.StartHTTP(t, url)
		names, err := c.ListTools(context.Background())
		if err != nil || len(names) == 0 {
			t.Fatalf("tools %v: %v", names, err)
		}
		res, err := c.Call(context.Background(), "echo", map[string]any{"message": "hi"})
		if err != nil || res.IsError || res.Text() != "hi" {
			t.Fatalf("echo: %+v %v", res, err)
		}
		for e := range c.Events { // until the client exits
			t.Log(e) // "tools/list_changed", "asked sampling/createMessage"
		}
	}
	_ = test
}
