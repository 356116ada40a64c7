package redact

import (
	"context"
	"log/slog"
	"net/url"
)

// Logger returns a logger that writes through l's handler with every URL
// in the message and in the attribute values redacted (see Handler). A nil
// l is nil.
func Logger(l *slog.Logger, urls ...string) *slog.Logger {
	if l == nil {
		return nil
	}
	if h, ok := l.Handler().(*handler); ok && len(urls) == 0 {
		return slog.New(h)
	}
	return slog.New(Handler(l.Handler(), urls...))
}

// Handler returns a handler that passes each record to h with the URLs in
// its message, its string and error attribute values, and its *url.URL
// values redacted as Text does, urls included. Libraries that log the
// errors of their requests (mcp-go does) quote the URL in them.
func Handler(h slog.Handler, urls ...string) slog.Handler {
	return &handler{h: h, urls: urls}
}

type handler struct {
	h    slog.Handler
	urls []string
}

func (h *handler) Enabled(ctx context.Context, l slog.Level) bool { return h.h.Enabled(ctx, l) }

func (h *handler) Handle(ctx context.Context, r slog.Record) error {
	out := slog.NewRecord(r.Time, r.Level, Text(r.Message, h.urls...), r.PC)
	r.Attrs(func(a slog.Attr) bool {
		out.AddAttrs(h.attr(a))
		return true
	})
	return h.h.Handle(ctx, out)
}

func (h *handler) WithAttrs(attrs []slog.Attr) slog.Handler {
	red := make([]slog.Attr, len(attrs))
	for i, a := range attrs {
		red[i] = h.attr(a)
	}
	return &handler{h: h.h.WithAttrs(red), urls: h.urls}
}

func (h *handler) WithGroup(name string) slog.Handler {
	return &handler{h: h.h.WithGroup(name), urls: h.urls}
}

// attr redacts one attribute's value.
func (h *handler) attr(a slog.Attr) slog.Attr {
	v := a.Value.Resolve()
	switch v.Kind() {
	case slog.KindString:
		a.Value = slog.StringValue(Text(v.String(), h.urls...))
	case slog.KindGroup:
		group := v.Group()
		red := make([]slog.Attr, len(group))
		for i, g := range group {
			red[i] = h.attr(g)
		}
		a.Value = slog.GroupValue(red...)
	case slog.KindAny:
		switch x := v.Any().(type) {
		case error:
			a.Value = slog.AnyValue(Error(x, h.urls...))
		case *url.URL:
			a.Value = slog.StringValue(URL(x.String()))
		case url.URL:
			a.Value = slog.StringValue(URL(x.String()))
		default:
			a.Value = v
		}
	default:
		a.Value = v
	}
	return a
}
