package machine_test

import (
	"fmt"
	"time"

	"github.com/mcpfleet/mcpfleet/internal/machine"
	"github.com/mcpfleet/mcpfleet/lifecycle"
)

func ExampleBudget() {
	b := machine.NewBudget(lifecycle.Policy{
		InitialInterval: time.Second,
		MaxInterval:     4 * time.Second,
		Jitter:          -1, // no jitter, so the output is stable
		MaxAttempts:     4,
	}, nil)
	for {
		wait, ok := b.Failed()
		if !ok {
			fmt.Println("exhausted: the slot becomes", lifecycle.PermanentlyFailed)
			return
		}
		fmt.Println("retry in", wait)
	}
	// Output:
	// retry in 1s
	// retry in 2s
	// retry in 4s
	// retry in 4s
	// exhausted: the slot becomes PermanentlyFailed
}
