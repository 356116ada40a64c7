// Command gosdkserver runs the Go SDK test server (package gosdkserver)
// over stdio, as a binary of its own: tests that start hundreds of them
// build it without the race detector, which would cost each child several
// times the memory and start-up time.
package main

import (
	"os"

	"github.com/mcpfleet/mcpfleet/internal/testkit/gosdkserver"
)

func main() {
	_ = os.Setenv(gosdkserver.EnvServe, "1")
	gosdkserver.Main()
}
