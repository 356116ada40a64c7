//go:build !linux && !darwin && !freebsd && !netbsd && !openbsd && !dragonfly && !windows

package main

import "errors"

// isTerminal reports false: on this OS the command line prints plain lines.
func isTerminal(uintptr) bool { return false }

// echoOff cannot stop echo on this OS: a secret asked for is shown.
func echoOff(uintptr) (func(), error) { return nil, errors.ErrUnsupported }
