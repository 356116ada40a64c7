package http

import (
	"log/slog"
	"time"
)

const (
	// DefaultStreamOpenTimeout is how long Ready waits for the notification
	// stream to open.
	DefaultStreamOpenTimeout = 5 * time.Second
	// DefaultDeleteTimeout bounds the session DELETE that Close sends.
	DefaultDeleteTimeout = 2 * time.Second
	// DefaultDialTimeout bounds opening one TCP connection.
	DefaultDialTimeout = 10 * time.Second
)

// Option configures Dial.
type Option func(*options)

type options struct {
	logger            *slog.Logger
	legacy            bool
	streamOpenTimeout time.Duration
	deleteTimeout     time.Duration
	dialTimeout       time.Duration
	maxMessage        int64      // 0: no limit
	auth              Authorizer // WithAuthorizer; nil sends only the spec's headers
	resumeAttempts    int        // WithResumeAttempts; 0: no resumption, <0: no bound
	reopenAttempts    int        // WithStreamReopenAttempts; 0: a broken stream is the Conn's loss
	streamReplay      bool       // WithStreamReplay: reopen the stream with Last-Event-ID
	rejoin            *Rejoin    // WithRejoin; nil starts a session
	// wrapDial, set only by tests, wraps the pool's dial function under
	// the connection tracking, to hold dials and reads.
	wrapDial func(dialFunc) dialFunc
}

func defaultOptions() options {
	return options{
		logger:            slog.New(slog.DiscardHandler),
		streamOpenTimeout: DefaultStreamOpenTimeout,
		deleteTimeout:     DefaultDeleteTimeout,
		dialTimeout:       DefaultDialTimeout,
		resumeAttempts:    DefaultResumeAttempts,
		reopenAttempts:    DefaultStreamReopenAttempts,
	}
}

// WithLogger sets the logger for the connection and the mcp-go transport
// under it (mcp-go's own lines at Debug). Defaults to discarding: the
// package writes nothing to the host's stdout or stderr by itself. A nil
// logger discards.
func WithLogger(l *slog.Logger) Option {
	return func(o *options) {
		if l == nil {
			l = slog.New(slog.DiscardHandler)
		}
		o.logger = l
	}
}

// WithLegacyProtocol keeps the connection on the initialize handshake
// (protocol 2025-11-25 and older), skipping the 2026-07-28 server/discover
// probe. Dial with it after a server rejected 2026-07-28 with -32022 (see
// isUnsupportedProtocol). It has no effect on SSE, which is always legacy.
func WithLegacyProtocol() Option {
	return func(o *options) { o.legacy = true }
}

// WithStreamOpenTimeout sets how long Ready waits for the notification
// stream to open before it gives up waiting (the stream may still open
// later). Defaults to DefaultStreamOpenTimeout.
func WithStreamOpenTimeout(d time.Duration) Option {
	return func(o *options) {
		if d > 0 {
			o.streamOpenTimeout = d
		}
	}
}

// WithDeleteTimeout bounds the session DELETE sent on Close. Defaults to
// DefaultDeleteTimeout.
func WithDeleteTimeout(d time.Duration) Option {
	return func(o *options) {
		if d > 0 {
			o.deleteTimeout = d
		}
	}
}

// WithDialTimeout bounds opening one TCP connection. Defaults to
// DefaultDialTimeout.
func WithDialTimeout(d time.Duration) Option {
	return func(o *options) {
		if d > 0 {
			o.dialTimeout = d
		}
	}
}

// WithMaxMessageBytes bounds one message the server sends: a JSON response
// body, or one event of an SSE stream (a response's or the notification
// stream's). It is enforced while reading: an answer over it fails its
// request with an error that names the size and the limit, and the
// connection goes on. Zero or less means no limit, the default.
func WithMaxMessageBytes(n int64) Option {
	return func(o *options) { o.maxMessage = max(n, 0) }
}
