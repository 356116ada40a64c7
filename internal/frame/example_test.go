package frame_test

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/mcpfleet/mcpfleet/internal/frame"
)

// A server's answer over the limit never reaches the reader whole: the
// Limiter cuts it as it passes, answers its request with an error in its
// place, and the stream goes on.
func Example() {
	in := `{"jsonrpc":"2.0","id":1,"result":{"text":"` + strings.Repeat("x", 100) + `"}}` + "\n" +
		`{"jsonrpc":"2.0","id":2,"result":{}}` + "\n"
	var answers frame.TooLargeAnswers
	out, _ := io.ReadAll(frame.NewLimiter(strings.NewReader(in), frame.Lines, 64, &answers, slog.New(slog.DiscardHandler)))
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		if strings.Contains(line, `"id":2`) {
			fmt.Println(line)
		}
	}
	var tl *frame.TooLarge
	fmt.Println(errors.As(answers.Take(mcp.NewRequestId(int64(1)).String()), &tl), tl.Limit)
	// Output:
	// {"jsonrpc":"2.0","id":2,"result":{}}
	// true 64
}
