// Package cputime reads the CPU time the test process has used, for
// benchmarks that report it beside wall time (cpu-ns/op): on the shared
// 2-core machine the CPU a call costs is steadier than the time it takes.
package cputime

import (
	"testing"
	"time"
)

// Report reports as cpu-ns/op the CPU time the process used since start
// (a Process reading), divided among b.N operations. Where the CPU time
// cannot be read it reports nothing.
func Report(b *testing.B, start time.Duration) {
	if now := Process(); now > 0 {
		b.ReportMetric(float64(now-start)/float64(b.N), "cpu-ns/op")
	}
}
