//go:build !linux && !darwin && !freebsd && !netbsd && !openbsd && !dragonfly && !windows

package main

// isTerminal reports false: on this OS the command line prints plain lines.
func isTerminal(uintptr) bool { return false }
