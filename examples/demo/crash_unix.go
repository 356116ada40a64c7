//go:build unix

package main

import "syscall"

// crash kills the server process pid as a crash would: SIGKILL, no chance
// to clean up.
func crash(pid int) error { return syscall.Kill(pid, syscall.SIGKILL) }
