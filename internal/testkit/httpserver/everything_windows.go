//go:build windows

package httpserver

import (
	"os/exec"
	"syscall"
)

// treeProcAttr asks for nothing: Windows has no process group that
// killTree could end as a whole.
func treeProcAttr() *syscall.SysProcAttr { return nil }

// killTree ends the process cmd started. Unlike on Unix, what it started
// lives on; the tests that restart server-everything run on Linux.
func killTree(cmd *exec.Cmd) { _ = cmd.Process.Kill() }
