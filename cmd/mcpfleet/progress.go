package main

import (
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	"github.com/mcpfleet/mcpfleet/internal/texttable"
)

// spinInterval is how often a terminal's spinner turns.
const spinInterval = 100 * time.Millisecond

var spinFrames = []string{"⠋", "⠙", "⠹", "⠸", "⠼", "⠴", "⠦", "⠧", "⠇", "⠏"}

// progress tells the user what a command waits for (servers connecting, a
// long call): on a terminal a spinner on one line, redrawn in place and
// erased at the end; elsewhere (a pipe, a file, CI) one plain line per
// change of what it says, so that logs stay readable.
type progress struct {
	w   io.Writer
	tty bool

	mu    sync.Mutex // guards label and shown
	label string
	shown string // the line last printed (plain) or drawn (terminal)

	stop chan struct{}
	done chan struct{}
}

// newProgress starts a progress on w; tty says whether w is a terminal.
func newProgress(w io.Writer, tty bool) *progress {
	p := &progress{w: w, tty: tty, stop: make(chan struct{}), done: make(chan struct{})}
	if !tty {
		close(p.done)
		return p
	}
	go func() {
		defer close(p.done)
		t := time.NewTicker(spinInterval)
		defer t.Stop()
		for i := 0; ; i++ {
			select {
			case <-p.stop:
				p.mu.Lock()
				if p.shown != "" {
					fmt.Fprint(p.w, "\r\033[K")
				}
				p.mu.Unlock()
				return
			case <-t.C:
				p.mu.Lock()
				if p.label != "" {
					p.shown = texttable.Cut(spinFrames[i%len(spinFrames)]+" "+p.label, texttable.Width-1)
					fmt.Fprint(p.w, "\r\033[K"+p.shown)
				}
				p.mu.Unlock()
			}
		}
	}()
	return p
}

// set says what the command waits for now; "" says nothing.
func (p *progress) set(label string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.label = label
	if !p.tty && label != "" && label != p.shown {
		p.shown = label
		fmt.Fprintln(p.w, label)
	}
}

// end stops the spinner and erases its line.
func (p *progress) end() {
	if p.tty {
		select {
		case <-p.stop:
		default:
			close(p.stop)
		}
	}
	<-p.done
}

// waitingFor describes the servers a command waits for.
func waitingFor(names []string) string {
	if len(names) == 0 {
		return ""
	}
	const shown = 4
	list := strings.Join(names[:min(len(names), shown)], ", ")
	if len(names) > shown {
		list += fmt.Sprintf(" and %d more", len(names)-shown)
	}
	return "connecting " + texttable.Plural(len(names), "server", "servers") + ": " + list
}
