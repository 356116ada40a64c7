//go:build linux

package soak

import (
	"fmt"
	"os"
	"strconv"
	"time"
)

// Environment variables the soak reads.
const (
	// EnvDuration is how long faults are injected, as a Go duration.
	EnvDuration = "SOAK"
	// EnvSeed seeds the fault schedule and the callers' choices; every run
	// logs the one it used, so a failing run can be replayed as far as
	// timing allows.
	EnvSeed = "SOAK_SEED"
)

// DefaultDuration is the soak's length when SOAK is unset: short enough for
// every `go test ./...`, long enough for a few hundred faults.
const DefaultDuration = 30 * time.Second

// config is one soak's parameters.
type config struct {
	duration    time.Duration
	seed        uint64
	callers     int
	callTimeout time.Duration // each call's own context
	// pauseMin..pauseMax is a caller's pause between calls: without it the
	// in-process servers, which answer in microseconds, would take the two
	// cores from everything else.
	pauseMin, pauseMax time.Duration
	// startup bounds the first connect of the whole fleet (eight node
	// processes and four -race binaries starting at once).
	startup time.Duration
	// settle is how long after the faults stop every server must be
	// Connected again.
	settle time.Duration
}

func configFromEnv() (config, error) {
	c := config{
		duration:    DefaultDuration,
		seed:        uint64(time.Now().UnixNano()),
		callers:     8,
		callTimeout: 5 * time.Second,
		pauseMin:    5 * time.Millisecond,
		pauseMax:    40 * time.Millisecond,
		startup:     2 * time.Minute,
		settle:      10 * time.Second,
	}
	if v := os.Getenv(EnvDuration); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d <= 0 {
			return c, fmt.Errorf("%s=%q: want a positive Go duration such as 30s or 10m", EnvDuration, v)
		}
		c.duration = d
	}
	if v := os.Getenv(EnvSeed); v != "" {
		n, err := strconv.ParseUint(v, 10, 64)
		if err != nil {
			return c, fmt.Errorf("%s=%q: want an unsigned integer", EnvSeed, v)
		}
		c.seed = n
	}
	return c, nil
}

// needs is the test timeout a soak of this config needs: startup, the
// soak, the calls in flight when it ends, the settle time, the checks
// after it, and Close.
func (c config) needs() time.Duration {
	return c.startup + c.duration + 2*c.callTimeout + c.settle + 2*time.Minute
}
