package lifecycle_test

import (
	"fmt"
	"time"

	"github.com/mcpfleet/mcpfleet/lifecycle"
)

// A reconnect policy names only what differs from the defaults; the rest
// is filled in. A negative MaxAttempts retries for ever.
func ExamplePolicy() {
	p := lifecycle.Policy{InitialInterval: time.Second, MaxAttempts: -1}.WithDefaults()
	fmt.Println(p.InitialInterval, p.MaxInterval, p.MaxAttempts, p.ProbeInterval)
	// Output: 1s 30s -1 5m0s
}

// States have stable names, for logs and dashboards, and say what a call
// does in them.
func ExampleState() {
	for _, s := range []lifecycle.State{lifecycle.Connected, lifecycle.Reconnecting, lifecycle.PermanentlyFailed} {
		fmt.Printf("%s: accepting calls %v, catalog published %v\n", s, s.Accepting(), s.Publishes())
	}
	// Output:
	// Connected: accepting calls true, catalog published true
	// Reconnecting: accepting calls true, catalog published true
	// PermanentlyFailed: accepting calls false, catalog published false
}
