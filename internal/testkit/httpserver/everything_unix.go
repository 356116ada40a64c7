//go:build unix

package httpserver

import (
	"os/exec"
	"syscall"
)

// treeProcAttr starts server-everything in its own process group, so that
// killTree ends node together with anything it started.
func treeProcAttr() *syscall.SysProcAttr { return &syscall.SysProcAttr{Setpgid: true} }

// killTree sends SIGKILL to the process group cmd leads.
func killTree(cmd *exec.Cmd) { _ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
