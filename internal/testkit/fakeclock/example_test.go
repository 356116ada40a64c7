package fakeclock_test

import (
	"fmt"
	"time"

	"github.com/mcpfleet/mcpfleet/internal/testkit/fakeclock"
)

// A test decides when time passes: a timer fires when the test advances
// the clock past it, never by itself.
func Example() {
	clock := fakeclock.New(time.Unix(0, 0))
	fired, stop := clock.NewTimer(time.Minute)
	defer stop()
	clock.Advance(59 * time.Second)
	select {
	case <-fired:
		fmt.Println("too early")
	default:
		fmt.Println("not yet")
	}
	clock.Advance(time.Second)
	<-fired
	fmt.Println("fired at", clock.Now().Sub(time.Unix(0, 0)))
	// Output:
	// not yet
	// fired at 1m0s
}
