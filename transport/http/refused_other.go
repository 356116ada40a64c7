//go:build !windows

package http

import (
	"errors"
	"syscall"
)

// connRefused reports whether err is a connection the server's host refused:
// nothing listens on the server's port, so the server's process is not
// running, and a process that answers there later is another one.
func connRefused(err error) bool { return errors.Is(err, syscall.ECONNREFUSED) }
