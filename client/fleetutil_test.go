package client

import "time"

// ProcessCPUTime is processCPUTime for the benchmarks of the external test
// package: CPU time is steadier than wall time on a shared machine.
func ProcessCPUTime() time.Duration { return processCPUTime() }
