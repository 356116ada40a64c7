package cputime_test

import (
	"fmt"

	"github.com/mcpfleet/mcpfleet/internal/testkit/cputime"
)

// A benchmark reads Process before its loop and calls Report after it.
func ExampleProcess() {
	start := cputime.Process()
	sum := 0
	for i := range 1000 {
		sum += i
	}
	fmt.Println(sum, cputime.Process() >= start)
	// Output: 499500 true
}
