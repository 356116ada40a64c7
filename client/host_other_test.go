//go:build !linux

package client

// hostMain is Linux-only (host_linux_test.go): the tests that kill a host
// look at /proc.
func hostMain() {}
