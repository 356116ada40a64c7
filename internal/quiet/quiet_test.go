package quiet_test

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"

	"github.com/mcpfleet/mcpfleet/internal/quiet"
)

func TestDebug(t *testing.T) {
	var buf bytes.Buffer
	host := slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelInfo}))
	quiet.Debug(host).Error("from mcp-go")
	if buf.Len() != 0 {
		t.Fatalf("an Info host logger wrote %q", buf.String())
	}
	host = slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug}))
	quiet.Debug(host).With("k", "v").Error("from mcp-go")
	if got := buf.String(); !strings.Contains(got, "level=DEBUG") || !strings.Contains(got, "k=v") {
		t.Fatalf("a Debug host logger wrote %q", got)
	}
	quiet.Debug(nil).Error("nowhere") // must not panic
}

func ExampleDebug() {
	host := slog.New(slog.DiscardHandler)
	mcpgoLogger := quiet.Debug(host) // hand this to mcp-go's WithLogger options
	mcpgoLogger.Info("listening to server forever")
	// Output:
}
