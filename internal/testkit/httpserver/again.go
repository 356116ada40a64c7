package httpserver

import (
	"errors"
	"runtime"
	"syscall"
	"time"
)

// startAgain runs start, the listen of a server on the port it just left,
// again while the port is still in use: for a few milliseconds after the
// close, while the connections that other processes had with the old
// server wind down, Linux may refuse the bind (measured: up to 5 ms, when
// many short-lived client processes had connected). It gives up after a
// second.
func startAgain(start func() error) error {
	deadline := time.Now().Add(time.Second)
	for {
		err := start()
		if err == nil || !errors.Is(err, syscall.EADDRINUSE) || time.Now().After(deadline) {
			return err
		}
		runtime.Gosched()
	}
}
