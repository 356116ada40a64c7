//go:build unix

package otel_test

import (
	"syscall"
	"time"
)

// processCPUTime returns the CPU time the process has used, user and
// system: steadier per call than wall time on a shared machine.
func processCPUTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
