package client

import (
	"time"

	"github.com/mcpfleet/mcpfleet/internal/testkit/cputime"
)

// processCPUTime is the CPU time the process used so far: steadier per
// call than wall time on a shared machine.
func processCPUTime() time.Duration { return cputime.Process() }

// ProcessCPUTime is processCPUTime for the benchmarks of the external test
// package.
func ProcessCPUTime() time.Duration { return processCPUTime() }
