//go:build unix

package stdio

import (
	"testing"
	"time"
)

// TestShellBannerThenSleep: the issue's own server, a shell that prints a
// line and sleeps, fails the handshake with the line quoted after the
// stray grace instead of the handshake's deadline (a minute here); a
// colored banner has its escape sequences escaped.
//
// The grace is short: the shell never writes again, so how long the
// silence lasts decides only when the handshake fails, never whether (and
// mcp-go's handshake, server/discover and then initialize, waits it out
// twice). TestBannerThenSilenceEndsHandshake runs on the default grace.
func TestShellBannerThenSleep(t *testing.T) {
	const grace = 300 * time.Millisecond
	for _, tt := range []struct{ name, script, line, quoted string }{
		{"plain", "echo Server listening on stdio...; sleep 600",
			"Server listening on stdio...", `"Server listening on stdio..."`},
		{"colored", `printf '\033[32mready\033[0m on port 3000\n'; sleep 600`,
			"\x1b[32mready\x1b[0m on port 3000", `"\x1b[32mready\x1b[0m on port 3000"`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			c := dial(t, Spec{Command: "sh", Args: []string{"-c", tt.script}}, append(fastClose, WithStrayGrace(grace))...)
			ctx := testCtx(t, time.Minute)
			began := time.Now()
			_, err := connect(ctx, c)
			t.Logf("after %v: %v", time.Since(began).Round(time.Millisecond), err)
			checkNotMCP(t, ctx, c, err, tt.line, tt.quoted)
		})
	}
}
