//go:build linux

package stdio

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/mcpfleet/mcpfleet/internal/testkit/faultserver"
	"github.com/mcpfleet/mcpfleet/internal/testkit/proctest"
)

// TestFaults drives every fault mode through the same sequence (dial,
// handshake, a few calls, wait for a death if one happened, Close) and
// compares what was observed with the expected sequence of events:
//
//	dialed                        Dial returned a Conn
//	initialized                   the handshake succeeded
//	init-failed:<why>             it failed (transport-closed, deadline)
//	echo                          an echo call returned its argument
//	call-failed:<why>             a call failed
//	exited:<how>                  Done closed by itself (exit N, SIGX)
//	closed:<how>                  Close ended the process (exit N, SIGX)
//	closed                        Close after the process had died
func TestFaults(t *testing.T) {
	tests := []struct {
		name        string
		mode        string
		env         []string
		opts        []Option
		initTimeout time.Duration // handshake bound; default waitBound
		calls       int
		want        []string
		// minClose and maxClose bound how long Close took, when set.
		// maxClose is escalationBound: what it catches is a Close that
		// waited out one of the long waits (waitBound) it should not have
		// reached, which no load makes of a close of a few hundred ms.
		minClose, maxClose time.Duration
		check              func(t *testing.T, c *Conn)
	}{{
		name: "normal", mode: faultserver.ModeNormal, calls: 3,
		want: []string{"dialed", "initialized", "echo", "echo", "echo", "closed:exit 0"},
		// Exits on stdin EOF: no escalation.
		maxClose: escalationBound, opts: eofClose,
	}, {
		name: "exit at start", mode: faultserver.ModeExitAtStart, calls: 1,
		want: []string{"dialed", "init-failed:transport-closed", "exited:exit 3", "closed"},
		check: func(t *testing.T, c *Conn) {
			want := "process exited: exit status 3; stderr: "
			if err := c.Err(); !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), faultserver.ExitAtStartLine) {
				t.Errorf("Err() = %q, want it to contain %q and %q", err, want, faultserver.ExitAtStartLine)
			}
			if !slices.Contains(c.Stderr(), faultserver.ExitAtStartLine) {
				t.Errorf("Stderr() = %q, want it to contain %q", c.Stderr(), faultserver.ExitAtStartLine)
			}
		},
	}, {
		name: "crash after 2 calls", mode: faultserver.ModeCrashAfter, env: []string{faultserver.EnvN + "=2"}, calls: 3,
		want: []string{"dialed", "initialized", "echo", "echo", "call-failed:transport-closed", "exited:exit 2", "closed"},
		check: func(t *testing.T, c *Conn) {
			if err := c.Err(); !strings.Contains(err.Error(), "crashing on call 3") {
				t.Errorf("Err() = %q, want the stderr tail quoted", err)
			}
		},
	}, {
		name: "hang", mode: faultserver.ModeHang, calls: 1, initTimeout: 300 * time.Millisecond,
		opts: []Option{WithCloseGrace(50 * time.Millisecond), WithTermTimeout(waitBound)},
		want: []string{"dialed", "init-failed:deadline", "closed:SIGTERM"},
		// Ignores stdin EOF, dies of SIGTERM after the grace.
		minClose: 50 * time.Millisecond, maxClose: escalationBound,
	}, {
		name: "garbage on stdout", mode: faultserver.ModeGarbageStdout, calls: 3, opts: eofClose,
		want: []string{"dialed", "initialized", "echo", "echo", "echo", "closed:exit 0"},
		check: func(t *testing.T, c *Conn) {
			// One line at start, and one before each of the server's messages:
			// the handshake's answer, the tools/call answers.
			first, total := c.Stray()
			if total < 5 || len(first) == 0 || !strings.Contains(first[0], "not json at all") ||
				!slices.Contains(first, "garbage: this line is not JSON-RPC") {
				t.Errorf("Stray() = %q, %d; want the start line and the garbage lines, 5 or more", first, total)
			}
		},
	}, {
		name: "banner, then no answer", mode: faultserver.ModeBannerHang, calls: 1, initTimeout: 300 * time.Millisecond,
		opts: eofClose,
		want: []string{"dialed", "init-failed:deadline", "closed:exit 0"},
		check: func(t *testing.T, c *Conn) {
			if first, total := c.Stray(); total != 1 || !slices.Equal(first, []string{faultserver.BannerLine}) {
				t.Errorf("Stray() = %q, %d; want the banner, 1", first, total)
			}
		},
	}, {
		name: "stderr flood", mode: faultserver.ModeStderrFlood, calls: 3,
		opts: append(eofClose, WithStderrBuffer(50, 8<<10)),
		want: []string{"dialed", "initialized", "echo", "echo", "echo", "closed:exit 0"},
		check: func(t *testing.T, c *Conn) {
			if lines := c.Stderr(); len(lines) > 50 {
				t.Errorf("Stderr() kept %d lines, want <= 50", len(lines))
			}
		},
	}, {
		name: "ignore SIGTERM", mode: faultserver.ModeIgnoreSIGTERM, calls: 1,
		opts: []Option{WithCloseGrace(50 * time.Millisecond), WithTermTimeout(150 * time.Millisecond)},
		want: []string{"dialed", "initialized", "echo", "closed:SIGKILL"},
		// Escalates through the grace and the term timeout, no further.
		minClose: 200 * time.Millisecond, maxClose: escalationBound,
	}, {
		name: "grandchild", mode: faultserver.ModeGrandchild, calls: 1, opts: eofClose,
		want: []string{"dialed", "initialized", "echo", "closed:exit 0"},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			opts := tt.opts
			if opts == nil {
				opts = fastClose
			}
			c, err := Dial(testCtx(t, waitBound), faultSpec(tt.mode, tt.env...), opts...)
			if err != nil {
				t.Fatalf("Dial: %v", err)
			}
			got := []string{"dialed"}
			defer func() { proctest.NoChildren(t); goleak.VerifyNone(t) }()

			initTimeout := tt.initTimeout
			if initTimeout == 0 {
				initTimeout = waitBound
			}
			cl, err := connect(testCtx(t, initTimeout), c)
			failed := err != nil
			if failed {
				got = append(got, "init-failed:"+why(err))
			} else {
				got = append(got, "initialized")
			}

			var grandchild int
			if !failed && tt.mode == faultserver.ModeGrandchild {
				out, err := callTool(testCtx(t, waitBound), cl, "grandchild", nil)
				if grandchild, err = strconv.Atoi(out); err != nil {
					t.Fatalf("grandchild tool: %q, %v", out, err)
				}
				if !proctest.Alive(grandchild) {
					t.Fatalf("grandchild %d not alive before Close", grandchild)
				}
			}

			for i := 0; i < tt.calls && !failed; i++ {
				text := fmt.Sprintf("hello %d", i)
				out, err := callTool(testCtx(t, waitBound), cl, "echo", map[string]any{"text": text})
				switch {
				case err != nil:
					failed = true
					got = append(got, "call-failed:"+why(err))
				case out != text:
					t.Fatalf("echo(%q) = %q", text, out)
				default:
					got = append(got, "echo")
				}
			}

			if failed && tt.initTimeout == 0 {
				// A failure other than our own deadline means the process
				// died: Done must close by itself.
				d := waitDone(t, c)
				t.Logf("Done closed %v after the failure was seen", d)
				got = append(got, "exited:"+how(c.Err()))
			} else {
				select {
				case <-c.Done():
					t.Fatalf("Done closed while the server was expected alive: %v", c.Err())
				default:
				}
			}

			start := time.Now()
			if err := c.Close(testCtx(t, waitBound)); err != nil {
				t.Errorf("Close: %v", err)
			}
			took := time.Since(start)
			t.Logf("Close took %v", took)
			if errors.Is(c.Err(), ErrClosed) {
				got = append(got, "closed:"+how(c.Err()))
			} else {
				got = append(got, "closed")
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("events:\n got %q\nwant %q\nErr: %v", got, tt.want, c.Err())
			}
			if tt.maxClose > 0 && took > tt.maxClose {
				t.Errorf("Close took %v, want <= %v", took, tt.maxClose)
			}
			if took < tt.minClose {
				t.Errorf("Close took %v, want >= %v (escalated too early?)", took, tt.minClose)
			}
			if !errors.Is(c.Err(), ErrExited) {
				t.Errorf("Err() = %v, want it to match ErrExited", c.Err())
			}
			if grandchild != 0 {
				proctest.WaitDead(t, grandchild)
			}
			if tt.check != nil {
				tt.check(t, c)
			}
		})
	}
}
