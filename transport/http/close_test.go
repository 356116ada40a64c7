package http_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/mcpfleet/mcpfleet/internal/testkit/httpserver"
	mcphttp "github.com/mcpfleet/mcpfleet/transport/http"
)

// TestCloseSendsDelete checks that Close ends a session the server keeps
// with a DELETE, and that there is none on 2026-07-28, which has no
// sessions.
func TestCloseSendsDelete(t *testing.T) {
	tests := []struct {
		name        string
		kind        httpserver.Kind
		opts        []mcphttp.Option
		wantDeletes int64
	}{
		{"mcpgo-stateful/legacy", httpserver.MCPGoStateful, legacy, 1},
		{"gosdk-stateful/legacy", httpserver.GoSDKStateful, legacy, 1},
		{"mcpgo/modern", httpserver.MCPGo, nil, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
			defer cancel()
			srv := httpserver.Start(t, tt.kind)
			s := connect(ctx, t, mcphttp.Spec{URL: srv.URL()}, tt.opts...)
			s.mustEcho(ctx, t, "hi")
			if err := s.conn.Close(ctx); err != nil {
				t.Fatalf("Close: %v", err)
			}
			if got := srv.Deletes(); got != tt.wantDeletes {
				t.Errorf("server got %d DELETEs, want %d", got, tt.wantDeletes)
			}
			select {
			case <-s.conn.Done():
			default:
				t.Fatal("Done open after Close")
			}
			if !errors.Is(s.conn.Err(), mcphttp.ErrClosed) {
				t.Errorf("Err after Close = %v, want ErrClosed", s.conn.Err())
			}
			if _, err := s.echo(ctx, "closed"); err == nil {
				t.Error("call after Close succeeded")
			}
		})
	}
}

// TestCloseBounded checks that Close returns promptly when the server
// accepts the DELETE but never answers, whether the delete timeout or the
// caller's context ends first, and that concurrent Closes are safe.
func TestCloseBounded(t *testing.T) {
	tests := []struct {
		name     string
		opts     []mcphttp.Option
		closeCtx time.Duration
		wantErr  bool // the Close context may end first
	}{
		{"delete timeout", []mcphttp.Option{mcphttp.WithLegacyProtocol(), mcphttp.WithDeleteTimeout(100 * time.Millisecond)}, 10 * time.Second, false},
		{"close context", legacy, 100 * time.Millisecond, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
			defer cancel()
			srv := httpserver.Start(t, httpserver.MCPGoStateful)
			s := connect(ctx, t, mcphttp.Spec{URL: srv.URL()}, tt.opts...)
			s.mustEcho(ctx, t, "hi")
			srv.SetHang(true)

			closeCtx, closeCancel := context.WithTimeout(ctx, tt.closeCtx)
			defer closeCancel()
			start := time.Now()
			var wg sync.WaitGroup
			errs := make([]error, 3)
			for i := range errs {
				wg.Add(1)
				go func() {
					defer wg.Done()
					errs[i] = s.conn.Close(closeCtx)
				}()
			}
			wg.Wait()
			took := time.Since(start)
			t.Logf("Close took %v: %v", took, errs)
			if took > 2*time.Second {
				t.Errorf("Close took %v against a hanging server", took)
			}
			for _, err := range errs {
				if err != nil && !(tt.wantErr && errors.Is(err, context.DeadlineExceeded)) {
					t.Errorf("Close: %v", err)
				}
			}
			if got := srv.Deletes(); got != 1 {
				t.Errorf("server got %d DELETEs, want 1", got)
			}
			// The teardown finishes soon after, whatever Close returned.
			if err := s.conn.Close(ctx); err != nil {
				t.Errorf("second Close: %v", err)
			}
		})
	}
}
