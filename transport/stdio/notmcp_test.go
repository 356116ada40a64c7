package stdio

import (
	"context"
	"errors"
	"io"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcpfleet/mcpfleet/internal/testkit/faultserver"
	seam "github.com/mcpfleet/mcpfleet/transport"
)

// checkNotMCP checks that err, the handshake's, ended because the server
// wrote line to stdout and then nothing, before ctx's deadline: an *Error
// naming c's process around a *NotMCPError, matching transport.ErrNotMCP
// and transport.ErrMisconfigured, whose message quotes the line as quoted
// and says where logs belong.
func checkNotMCP(t *testing.T, ctx context.Context, c *Conn, err error, line, quoted string) {
	t.Helper()
	if ctx.Err() != nil {
		t.Fatalf("the handshake waited for its deadline: %v", err)
	}
	var e *Error
	var nm *NotMCPError
	if !errors.As(err, &e) || e.PID != c.PID() || !errors.As(err, &nm) || nm.Line != line {
		t.Fatalf("handshake = %v; want an *Error of pid %d around a *NotMCPError of %q", err, c.PID(), line)
	}
	if !errors.Is(err, seam.ErrNotMCP) || !errors.Is(err, seam.ErrMisconfigured) {
		t.Errorf("handshake = %v; want it to match ErrNotMCP and ErrMisconfigured", err)
	}
	for _, says := range []string{quoted, "to stdout that is not an MCP message", "logs belong on stderr"} {
		if !strings.Contains(err.Error(), says) {
			t.Errorf("error %q does not say %q", err, says)
		}
	}
}

// TestBannerThenSilenceEndsHandshake: a server that writes a line to
// stdout that is not a message and then nothing (the fault server's
// banner-hang mode, on every OS) fails the handshake with the line quoted
// once the stray grace has passed, long before the handshake's own
// deadline. It keeps the default grace (DefaultStrayGrace, waited out
// twice: mcp-go tries server/discover, then initialize): it is the test
// that shows a Conn watches for strays without being asked to.
func TestBannerThenSilenceEndsHandshake(t *testing.T) {
	c := dial(t, faultSpec(faultserver.ModeBannerHang), eofClose...)
	ctx := testCtx(t, time.Minute)
	began := time.Now()
	_, err := connect(ctx, c)
	t.Logf("after %v: %v", time.Since(began).Round(time.Millisecond), err)
	checkNotMCP(t, ctx, c, err, faultserver.BannerLine, strconv.Quote(faultserver.BannerLine))
}

// TestBannerThenServe: a server that writes a banner to stdout and then
// serves is not affected: its first message ends the watch for good. The
// grace is long here so that the test does not depend on how fast the
// machine gets the child to answer; that the first message disarms the
// watch is what is checked, and TestStrayWatch shows what a disarmed
// watch does not do.
func TestBannerThenServe(t *testing.T) {
	c := dial(t, faultSpec(faultserver.ModeBannerServe), append(eofClose, WithStrayGrace(time.Hour))...)
	cl := mustConnect(t, c)
	if c.silence.armed() {
		t.Error("the watch is still armed after the server's first message")
	}
	if got, err := callTool(testCtx(t, waitBound), cl, "echo", map[string]any{"text": "hi"}); err != nil || got != "hi" {
		t.Fatalf("echo = %q, %v", got, err)
	}
	if first, total := c.Stray(); total != 1 || first[0] != faultserver.BannerLine {
		t.Errorf("Stray() = %q, %d; want the banner", first, total)
	}
}

// fakeAfter stands in for time.AfterFunc: a test fires its timers.
type fakeAfter struct {
	mu     sync.Mutex
	timers []*fakeTimer
}

type fakeTimer struct {
	d       time.Duration
	f       func()
	stopped bool
}

func (t *fakeTimer) Stop() bool {
	was := !t.stopped
	t.stopped = true
	return was
}

func (a *fakeAfter) afterFunc(d time.Duration, f func()) interface{ Stop() bool } {
	a.mu.Lock()
	defer a.mu.Unlock()
	t := &fakeTimer{d: d, f: f}
	a.timers = append(a.timers, t)
	return t
}

// last returns the latest timer and how many were started.
func (a *fakeAfter) last() (*fakeTimer, int) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if len(a.timers) == 0 {
		return nil, 0
	}
	return a.timers[len(a.timers)-1], len(a.timers)
}

// TestStrayWatch pins when the watch times a silence and what ends it. A
// timer is fired by hand even when stopped, as a real one may fire just
// as it is stopped: a stale timer must do nothing.
func TestStrayWatch(t *testing.T) {
	const grace = 3 * time.Second
	newWatch := func() (*strayWatch, *fakeAfter) {
		a := &fakeAfter{}
		w := newStrayWatch(grace)
		w.afterFunc = a.afterFunc
		return w, a
	}
	ended := func(ctx context.Context) *NotMCPError {
		var nm *NotMCPError
		if ctx.Err() != nil && errors.As(context.Cause(ctx), &nm) {
			return nm
		}
		return nil
	}

	t.Run("stray line then silence ends the request", func(t *testing.T) {
		w, a := newWatch()
		w.stray("Server listening on stdio...")
		if _, n := a.last(); n != 0 {
			t.Fatal("a silence is timed with no request outstanding")
		}
		ctx, done := w.request(context.Background())
		defer done()
		tm, n := a.last()
		if n != 1 || tm.d != grace {
			t.Fatalf("%d timers, last of %v; want one of %v", n, tm.d, grace)
		}
		w.stray("and another")
		tm, _ = a.last()
		tm.f()
		nm := ended(ctx)
		if nm == nil || nm.Line != "Server listening on stdio..." || nm.Lines != 2 || nm.Silence != grace {
			t.Fatalf("request ended with %v (%#v); want the first line of 2 quoted", context.Cause(ctx), nm)
		}
		// A new request (initialize after server/discover) gets its own
		// grace.
		ctx2, done2 := w.request(context.Background())
		defer done2()
		if tm2, n := a.last(); n != 3 || tm2 == tm || ctx2.Err() != nil {
			t.Fatalf("a new request: %d timers, ctx %v; want a new grace", n, ctx2.Err())
		}
	})

	t.Run("a line before the request starts the timing at the request", func(t *testing.T) {
		w, a := newWatch()
		ctx, done := w.request(context.Background())
		defer done()
		if _, n := a.last(); n != 0 {
			t.Fatal("a silence is timed before any stray line")
		}
		w.stray("banner")
		tm, n := a.last()
		if n != 1 {
			t.Fatalf("%d timers after the stray line, want 1", n)
		}
		tm.f()
		if ended(ctx) == nil {
			t.Fatal("the request was not ended")
		}
	})

	t.Run("a message disarms for good", func(t *testing.T) {
		w, a := newWatch()
		ctx, done := w.request(context.Background())
		w.stray("banner")
		tm, _ := a.last()
		w.message()
		if !tm.stopped {
			t.Error("the timer was not stopped by the message")
		}
		tm.f() // stale
		if ctx.Err() != nil {
			t.Fatalf("a stale timer ended the request: %v", context.Cause(ctx))
		}
		done()
		w.stray("a log line after the handshake")
		ctx, done = w.request(context.Background())
		defer done()
		if _, n := a.last(); n != 1 || w.armed() {
			t.Fatalf("%d timers, armed %v after the first message; want no more timing", n, w.armed())
		}
		if _, ok := ctx.Deadline(); ok || ctx != context.Background() {
			t.Error("a disarmed watch wrapped the request's context")
		}
	})

	t.Run("stderr output and new requests start the silence over", func(t *testing.T) {
		w, a := newWatch()
		w.activity() // nothing timed yet: nothing to restart
		if _, n := a.last(); n != 0 {
			t.Fatal("stderr output started a timer")
		}
		w.stray("banner")
		ctx, done := w.request(context.Background())
		defer done()
		first, _ := a.last()
		w.activity()
		second, n := a.last()
		if n != 2 || !first.stopped {
			t.Fatalf("%d timers, first stopped %v; want the silence restarted", n, first.stopped)
		}
		ctx2, done2 := w.request(context.Background())
		third, n := a.last()
		if n != 3 || !second.stopped {
			t.Fatalf("%d timers, second stopped %v; want the silence restarted by the request", n, second.stopped)
		}
		first.f()
		second.f()
		if ctx.Err() != nil || ctx2.Err() != nil {
			t.Fatal("a stale timer ended a request")
		}
		third.f()
		if ended(ctx) == nil || ended(ctx2) == nil {
			t.Fatal("the outstanding requests were not both ended")
		}
		done2()
	})

	t.Run("the last request over stops the timing", func(t *testing.T) {
		w, a := newWatch()
		w.stray("banner")
		ctx, done := w.request(context.Background())
		tm, _ := a.last()
		done()
		if !tm.stopped || ctx.Err() == nil || ended(ctx) != nil {
			t.Fatalf("stopped %v, ctx %v; want the timer stopped and the request's context released", tm.stopped, context.Cause(ctx))
		}
		tm.f() // stale
	})

	t.Run("off", func(t *testing.T) {
		a := &fakeAfter{}
		w := newStrayWatch(0)
		w.afterFunc = a.afterFunc
		w.stray("banner")
		ctx, done := w.request(context.Background())
		defer done()
		if _, n := a.last(); n != 0 || ctx != context.Background() {
			t.Fatal("a watch with no grace timed a silence")
		}
	})
}

// TestStrayTapTellsWatch: the tap tells the watch of each stray line and
// of the first line that is a message, however the reads split them.
func TestStrayTapTellsWatch(t *testing.T) {
	w, a := newStrayWatch(time.Second), &fakeAfter{}
	w.afterFunc = a.afterFunc
	_, done := w.request(context.Background())
	defer done()
	in := "\x1b[1mServer\x1b[0m running on stdio\n  \n  {\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}\nlog line\n"
	tap := newStrayTap(iotestOneByte(strings.NewReader(in)), w)
	if _, err := io.Copy(io.Discard, tap); err != nil {
		t.Fatal(err)
	}
	w.mu.Lock()
	first, lines, spoke := w.first, w.lines, w.spoke
	w.mu.Unlock()
	if first != "\x1b[1mServer\x1b[0m running on stdio" || lines != 2 || !spoke {
		t.Fatalf("watch saw first %q, %d lines, spoke %v; want the banner, 2, true", first, lines, spoke)
	}
}

// iotestOneByte reads one byte at a time, the worst split.
func iotestOneByte(r io.Reader) io.Reader { return oneByte{r} }

type oneByte struct{ r io.Reader }

func (o oneByte) Read(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	return o.r.Read(p[:1])
}

// TestQuoteLine: a quoted line has its control characters and invalid
// UTF-8 escaped, and a long one is cut at a rune boundary and marked.
func TestQuoteLine(t *testing.T) {
	long := strings.Repeat("é", notMCPQuoted) // 2 bytes each
	for _, tt := range []struct{ in, want string }{
		{"Server listening on stdio...", `"Server listening on stdio..."`},
		{"\x1b[32mready\x1b[0m\t\x00\xff", `"\x1b[32mready\x1b[0m\t\x00\xff"`},
		{long, strconv.Quote(strings.Repeat("é", notMCPQuoted/2)) + "…"},
	} {
		if got := quoteLine(tt.in); got != tt.want {
			t.Errorf("quoteLine(%q) = %s, want %s", tt.in, got, tt.want)
		}
	}
}
