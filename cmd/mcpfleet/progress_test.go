package main

import (
	"bytes"
	"strings"
	"sync"
	"testing"
)

// signalWriter is a buffer that says when it was written to.
type signalWriter struct {
	mu      sync.Mutex
	b       bytes.Buffer
	written chan struct{}
}

func (w *signalWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	select {
	case w.written <- struct{}{}:
	default:
	}
	return w.b.Write(p)
}

func (w *signalWriter) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.String()
}

// TestProgress: on a terminal a spinner redraws one line in place and
// erases it at the end; elsewhere each change is one plain line and
// nothing is redrawn.
func TestProgress(t *testing.T) {
	plain := &signalWriter{written: make(chan struct{}, 1)}
	p := newProgress(plain, false)
	p.set("connecting 2 servers: a, b")
	p.set("connecting 2 servers: a, b")
	p.set("connecting 1 server: b")
	p.end()
	if got := plain.String(); got != "connecting 2 servers: a, b\nconnecting 1 server: b\n" {
		t.Fatalf("plain: %q", got)
	}

	tty := &signalWriter{written: make(chan struct{}, 1)}
	p = newProgress(tty, true)
	p.set("calling notes__find")
	select {
	case <-tty.written: // the spinner drew a frame
	case <-testCtx(t).Done():
		t.Fatal("no frame")
	}
	p.end()
	got := tty.String()
	if !strings.HasPrefix(got, "\r\033[K") || !strings.Contains(got, "calling notes__find") || !strings.HasSuffix(got, "\r\033[K") {
		t.Fatalf("terminal: %q", got)
	}
}
