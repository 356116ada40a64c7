package http_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/url"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"

	mcphttp "github.com/mcpfleet/mcpfleet/transport/http"
)

func TestSpecValidate(t *testing.T) {
	tests := []struct {
		spec      mcphttp.Spec
		wantField string // "" means valid
	}{
		{mcphttp.Spec{URL: "http://127.0.0.1:1/mcp"}, ""},
		{mcphttp.Spec{URL: "https://example.com/sse", Kind: mcphttp.SSE, Timeout: time.Second}, ""},
		{mcphttp.Spec{}, "URL"},
		{mcphttp.Spec{URL: "ftp://example.com"}, "URL"},
		{mcphttp.Spec{URL: "http:///mcp"}, "URL"},
		{mcphttp.Spec{URL: "http://user:pw@example.com/mcp"}, "URL"},
		{mcphttp.Spec{URL: "http://example.com", Headers: map[string]string{"Bad Name": "x"}}, "Headers"},
		{mcphttp.Spec{URL: "http://example.com", Timeout: -time.Second}, "Timeout"},
		{mcphttp.Spec{URL: "http://example.com", Kind: 7}, "Kind"},
	}
	for _, tt := range tests {
		err := tt.spec.Validate()
		switch {
		case tt.wantField == "" && err != nil:
			t.Errorf("Validate(%v) = %v, want nil", tt.spec, err)
		case tt.wantField != "" && (err == nil || !strings.Contains(err.Error(), tt.wantField+":")):
			t.Errorf("Validate(%v) = %v, want an error naming %s", tt.spec, err, tt.wantField)
		}
	}
}

// TestSpecHidesSecrets checks that header values and URL query values never
// show in String, LogValue or a Dial error.
func TestSpecHidesSecrets(t *testing.T) {
	const secret = "s3cr3t-token"
	spec := mcphttp.Spec{
		URL:     "http://127.0.0.1:1/mcp?key=" + secret,
		Headers: map[string]string{"Authorization": "Bearer " + secret},
		Timeout: time.Second,
	}
	var buf bytes.Buffer
	slog.New(slog.NewJSONHandler(&buf, nil)).Info("spec", "spec", spec)
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	_, dialErr := mcphttp.Dial(ctx, spec)
	for name, s := range map[string]string{"String": spec.String(), "LogValue": buf.String(), "Dial error": fmt.Sprint(dialErr)} {
		if strings.Contains(s, secret) {
			t.Errorf("%s shows the secret: %s", name, s)
		}
		if name != "Dial error" && !strings.Contains(s, "Authorization") {
			t.Errorf("%s does not name the header: %s", name, s)
		}
	}
}

// TestClassify pins the classification of the errors mcp-go produces.
func TestClassify(t *testing.T) {
	refused := &net.OpError{Op: "dial", Net: "tcp", Err: &net.AddrError{Err: "x"}}
	tests := []struct {
		name                               string
		err                                error
		stale, notSent, unsupported, fatal bool
	}{
		{"nil", nil, false, false, false, false},
		{"404", transport.NewError(fmt.Errorf("failed to send request: %w", transport.ErrSessionTerminated)), true, false, false, true},
		{"400 -32000 raw", (&mcp.JSONRPCErrorDetails{Code: -32000, Message: "Bad Request: No valid session ID provided"}).AsError(), true, false, false, true},
		{"refused", transport.NewError(fmt.Errorf("failed to send request: %w", syscall.ECONNREFUSED)), false, true, false, true},
		{"dial error", transport.NewError(refused), false, true, false, true},
		{"EOF", transport.NewError(fmt.Errorf("post: %w", io.EOF)), false, false, false, true},
		{"canceled", transport.NewError(context.Canceled), false, false, false, false},
		{"deadline while dialing", transport.NewError(&net.OpError{Op: "dial", Err: context.DeadlineExceeded}), false, false, false, false},
		{"-32022", (&mcp.JSONRPCErrorDetails{Code: mcp.UNSUPPORTED_PROTOCOL_VERSION, Message: "unsupported"}).AsError(), false, false, true, false},
		{"tool error", errors.New("tool failed"), false, false, false, false},
		{"closed", transport.ErrTransportClosed, false, false, false, true},
		// A Conn's Close cut the request short before it was written.
		{"not sent, canceled by Close", transport.NewError(fmt.Errorf("failed to send request: %w",
			&url.Error{Op: "Post", URL: "http://x/mcp", Err: fmt.Errorf("%w: %w", mcphttp.ErrNotSent, context.Canceled)})), false, true, false, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := mcphttp.IsStaleSession(tt.err); got != tt.stale {
				t.Errorf("IsStaleSession(%v) = %v", tt.err, got)
			}
			if got := mcphttp.IsNotSent(tt.err); got != tt.notSent {
				t.Errorf("IsNotSent(%v) = %v", tt.err, got)
			}
			if got := mcphttp.IsUnsupportedProtocol(tt.err); got != tt.unsupported {
				t.Errorf("IsUnsupportedProtocol(%v) = %v", tt.err, got)
			}
			if got := mcphttp.IsTransportFatal(tt.err); got != tt.fatal {
				t.Errorf("IsTransportFatal(%v) = %v", tt.err, got)
			}
		})
	}
}
