//go:build windows

package main

import "os"

// crash kills the server process pid as a crash would: TerminateProcess,
// no chance to clean up.
func crash(pid int) error {
	p, err := os.FindProcess(pid)
	if err != nil {
		return err
	}
	defer p.Release()
	return p.Kill()
}
