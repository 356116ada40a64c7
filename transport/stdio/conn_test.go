package stdio

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/mcpfleet/mcpfleet/internal/testkit/faultserver"
)

// TestConnectListCall is the Manager's path: Dial, start an mcp-go client
// on Transport, handshake, list, call.
func TestConnectListCall(t *testing.T) {
	c := dial(t, faultSpec(faultserver.ModeNormal), fastClose...)
	cl := mustConnect(t, c)
	ctx := testCtx(t, waitBound)

	tools, err := cl.ListTools(ctx, mcp.ListToolsRequest{})
	if err != nil {
		t.Fatalf("ListTools: %v", err)
	}
	names := map[string]bool{}
	for _, tool := range tools.Tools {
		names[tool.Name] = true
		if tool.Name == "echo" && (tool.Annotations.ReadOnlyHint == nil || !*tool.Annotations.ReadOnlyHint) {
			t.Errorf("echo should be read-only: %+v", tool.Annotations)
		}
		if tool.Name == "add" && (tool.Annotations.ReadOnlyHint != nil || tool.Annotations.IdempotentHint != nil) {
			t.Errorf("add should carry no hints: %+v", tool.Annotations)
		}
	}
	for _, want := range []string{"echo", "add", "sleep", "pid"} {
		if !names[want] {
			t.Errorf("ListTools lacks %q: %v", want, names)
		}
	}
	if out, err := callTool(ctx, cl, "echo", map[string]any{"text": "hi"}); err != nil || out != "hi" {
		t.Errorf("echo = %q, %v", out, err)
	}
	if out, err := callTool(ctx, cl, "add", map[string]any{"a": 2, "b": 3}); err != nil || out != "5" {
		t.Errorf("add = %q, %v", out, err)
	}
	if out, err := callTool(ctx, cl, "pid", nil); err != nil || out != strconv.Itoa(c.PID()) {
		t.Errorf("pid = %q, %v; want %d", out, err, c.PID())
	}
	if c.Err() != nil {
		t.Errorf("Err() = %v while running", c.Err())
	}
}

// TestCloseConcurrent: Close from many goroutines at once, then again;
// every call returns the same (nil) result and the process is reaped.
func TestCloseConcurrent(t *testing.T) {
	c := dial(t, faultSpec(faultserver.ModeNormal), fastClose...)
	mustConnect(t, c)
	var wg sync.WaitGroup
	errs := make([]error, 8)
	for i := range errs {
		wg.Go(func() { errs[i] = c.Close(testCtx(t, waitBound)) })
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Errorf("Close #%d: %v", i, err)
		}
	}
	if err := c.Close(testCtx(t, waitBound)); err != nil {
		t.Errorf("Close again: %v", err)
	}
	if !errors.Is(c.Err(), ErrClosed) {
		t.Errorf("Err() = %v, want ErrClosed", c.Err())
	}
}

// TestCloseBeforeStart: a Conn whose transport was never started closes
// cleanly too (a dial abandoned before the handshake).
func TestCloseBeforeStart(t *testing.T) {
	lines := make(lineHandler, 64)
	c := dial(t, faultSpec(faultserver.ModeNormal), append(eofClose, WithStderrLogger(slog.New(lines), slog.LevelInfo))...)
	// Close a server that runs, not one still starting: it says so itself.
	// How long it took to get there is no concern of the test.
	waitLine(t, lines, startedLine)
	if err := c.Close(testCtx(t, waitBound)); err != nil {
		t.Fatal(err)
	}
	if got := how(c.Err()); got != "exit 0" {
		t.Errorf("ended by %s, want exit 0 (stdin EOF)", got)
	}
	// Starting afterwards fails the handshake instead of hanging.
	if _, err := connect(testCtx(t, waitBound), c); !errors.Is(err, transport.ErrTransportClosed) {
		t.Errorf("handshake after Close: %v, want ErrTransportClosed", err)
	}
}

// TestStderrFloodBounded: a child writing to stderr without pause neither
// blocks (calls keep working) nor makes us hold more than the ring allows.
func TestStderrFloodBounded(t *testing.T) {
	const maxLines, maxBytes = 64, 16 << 10
	c := dial(t, faultSpec(faultserver.ModeStderrFlood), append(fastClose, WithStderrBuffer(maxLines, maxBytes))...)
	cl := mustConnect(t, c)

	var before runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)

	// Keep calling until the child has pushed 32 MiB through stderr: far
	// more than the pipe (64 KiB) holds, so the drain must keep up.
	ctx := testCtx(t, 30*time.Second)
	calls := 0
	for {
		text := fmt.Sprint(calls)
		out, err := callTool(ctx, cl, "echo", map[string]any{"text": text})
		if err != nil || out != text {
			t.Fatalf("call %d during the flood: %q, %v", calls, out, err)
		}
		calls++
		if _, total, _ := c.ring.stats(); total >= 32<<20 {
			break
		}
	}
	held, total, dropped := c.ring.stats()
	lines := c.Stderr()
	t.Logf("%d calls while %d MiB of stderr went through; holding %d lines, %d bytes; dropped %d lines", calls, total>>20, len(lines), held, dropped)
	if len(lines) > maxLines || held > maxBytes {
		t.Errorf("ring holds %d lines, %d bytes; want <= %d, %d", len(lines), held, maxLines, maxBytes)
	}
	for _, l := range lines {
		if len(l) > MaxStderrLine+len(truncatedMark) {
			t.Errorf("a line of %d bytes was kept", len(l))
		}
	}

	var after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&after)
	if grew := int64(after.HeapAlloc) - int64(before.HeapAlloc); grew > 8<<20 {
		t.Errorf("heap grew by %d MiB during a %d MiB flood", grew>>20, total>>20)
	}
}

// TestDialCanceled: a Dial whose ctx is already over starts nothing.
func TestDialCanceled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := Dial(ctx, faultSpec(faultserver.ModeNormal)); !errors.Is(err, context.Canceled) {
		t.Errorf("Dial: %v, want context.Canceled", err)
	}
	noChildren(t)
}

// TestOutlivesDialContext: the process must outlive the ctx given to Dial
// (mcp-go's own transport would kill it with CommandContext).
func TestOutlivesDialContext(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	c, err := Dial(ctx, faultSpec(faultserver.ModeNormal), fastClose...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close(testCtx(t, waitBound)); noChildren(t) })
	cancel()
	cl := mustConnect(t, c)
	if out, err := callTool(testCtx(t, waitBound), cl, "echo", map[string]any{"text": "still here"}); err != nil || out != "still here" {
		t.Errorf("echo after the Dial ctx ended: %q, %v", out, err)
	}
}

// TestSpecHidesEnvValues: secrets in Env never reach String or LogValue.
func TestSpecHidesEnvValues(t *testing.T) {
	s := Spec{Command: "server", Args: []string{"--stdio"}, Env: map[string]string{"API_KEY": "s3cr3t-value", "B": "other-secret"}, Dir: "/srv"}
	var b strings.Builder
	slog.New(slog.NewJSONHandler(&b, nil)).Info("dial", "spec", s)
	for _, out := range []string{s.String(), fmt.Sprint(s), fmt.Sprintf("%v", s), b.String()} {
		if strings.Contains(out, "s3cr3t") || strings.Contains(out, "other-secret") {
			t.Errorf("secret printed: %s", out)
		}
		if !strings.Contains(out, "API_KEY") || !strings.Contains(out, "server") {
			t.Errorf("name or command missing: %s", out)
		}
	}
	if got, want := s.String(), "server --stdio env=[API_KEY,B] dir=/srv"; got != want {
		t.Errorf("String() = %q, want %q", got, want)
	}
	if err := (Spec{Command: "x", Env: map[string]string{"K": "a\x00b"}}).Validate(); err == nil || strings.Contains(err.Error(), "a\x00b") {
		t.Errorf("Validate: %v", err)
	}
}
