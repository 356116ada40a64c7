package http

import (
	"io"
	nethttp "net/http"
	"strings"
	"testing"
)

// TestAnswer404 pins which HTTP 404 bodies are taken for a JSON-RPC answer:
// an error response to a request, and nothing else; any other body is
// handed on whole.
func TestAnswer404(t *testing.T) {
	long := `{"jsonrpc":"2.0","id":1,"error":{"code":-32601,"message":"` + strings.Repeat("x", maxErrorBody) + `"}}`
	tests := []struct {
		name   string
		body   string
		answer bool
	}{
		{"method not found", `{"jsonrpc":"2.0","id":7,"error":{"code":-32601,"message":"Method not found"}}` + "\n", true},
		{"string id", `{"jsonrpc":"2.0","id":"a","error":{"code":-32601,"message":"nope"}}`, true},
		{"null id", `{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"Parse error"}}`, false},
		{"no id", `{"jsonrpc":"2.0","error":{"code":-32601,"message":"nope"}}`, false},
		{"result", `{"jsonrpc":"2.0","id":1,"result":{}}`, false},
		{"text", "404 page not found\n", false},
		{"session", "Invalid session ID\n", false},
		{"over the bound", long, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp := &nethttp.Response{
				StatusCode: nethttp.StatusNotFound, Status: "404 Not Found",
				Header:        nethttp.Header{"Content-Type": {"text/plain"}},
				Body:          io.NopCloser(strings.NewReader(tt.body)),
				ContentLength: int64(len(tt.body)),
			}
			got := answer404(resp)
			body, err := io.ReadAll(got.Body)
			if err != nil || string(body) != tt.body {
				t.Fatalf("body = %.80q, %v: want it whole", body, err)
			}
			if answered := got.StatusCode == nethttp.StatusOK; answered != tt.answer {
				t.Fatalf("status %d, want an answer: %v", got.StatusCode, tt.answer)
			}
			if tt.answer && (got.Header.Get("Content-Type") != "application/json" || got.ContentLength != int64(len(body))) {
				t.Errorf("Content-Type %q, ContentLength %d", got.Header.Get("Content-Type"), got.ContentLength)
			}
		})
	}
}
