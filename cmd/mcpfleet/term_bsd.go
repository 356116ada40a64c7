//go:build darwin || freebsd || netbsd || openbsd || dragonfly

package main

import "golang.org/x/sys/unix"

// isTerminal reports whether fd is a terminal.
func isTerminal(fd uintptr) bool {
	_, err := unix.IoctlGetTermios(int(fd), unix.TIOCGETA)
	return err == nil
}

// echoOff stops the terminal fd from showing what is typed (a secret
// asked for), and returns how to restore it.
func echoOff(fd uintptr) (func(), error) {
	t, err := unix.IoctlGetTermios(int(fd), unix.TIOCGETA)
	if err != nil {
		return nil, err
	}
	old := *t
	t.Lflag &^= unix.ECHO
	if err := unix.IoctlSetTermios(int(fd), unix.TIOCSETA, t); err != nil {
		return nil, err
	}
	return func() { _ = unix.IoctlSetTermios(int(fd), unix.TIOCSETA, &old) }, nil
}
