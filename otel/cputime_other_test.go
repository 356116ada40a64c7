//go:build !unix

package otel_test

import "time"

// processCPUTime is not measured here: cpu-ns/op reads zero.
func processCPUTime() time.Duration { return 0 }
