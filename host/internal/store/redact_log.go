package store

import (
	"context"
	"log/slog"
)

// NewLogHandler returns a slog.Handler that redacts every record with red
// (nil: DefaultRedactor, which removes the registered secrets too) before
// h handles it: the message, string attributes and the text of any other
// value that is not a number, a bool, a time or a duration (errors,
// Stringers, structs), in groups too. A provider's error that quotes the
// request's key is logged without it.
func NewLogHandler(h slog.Handler, red *Redactor) slog.Handler {
	if red == nil {
		red = DefaultRedactor()
	}
	return &logHandler{h: h, red: red}
}

type logHandler struct {
	h   slog.Handler
	red *Redactor
}

var _ slog.Handler = (*logHandler)(nil)

// Enabled implements slog.Handler.
func (l *logHandler) Enabled(ctx context.Context, level slog.Level) bool {
	return l.h.Enabled(ctx, level)
}

// Handle implements slog.Handler.
func (l *logHandler) Handle(ctx context.Context, r slog.Record) error {
	out := slog.NewRecord(r.Time, r.Level, l.red.RedactString(r.Message), r.PC)
	r.Attrs(func(a slog.Attr) bool {
		out.AddAttrs(l.attr(a))
		return true
	})
	return l.h.Handle(ctx, out)
}

// WithAttrs implements slog.Handler.
func (l *logHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	red := make([]slog.Attr, len(attrs))
	for i, a := range attrs {
		red[i] = l.attr(a)
	}
	return &logHandler{h: l.h.WithAttrs(red), red: l.red}
}

// WithGroup implements slog.Handler.
func (l *logHandler) WithGroup(name string) slog.Handler {
	return &logHandler{h: l.h.WithGroup(name), red: l.red}
}

func (l *logHandler) attr(a slog.Attr) slog.Attr {
	v := a.Value.Resolve()
	switch v.Kind() {
	case slog.KindString:
		return slog.String(a.Key, l.red.RedactString(v.String()))
	case slog.KindGroup:
		g := v.Group()
		red := make([]slog.Attr, len(g))
		for i, x := range g {
			red[i] = l.attr(x)
		}
		return slog.Attr{Key: a.Key, Value: slog.GroupValue(red...)}
	case slog.KindAny:
		// An error, a Stringer, a struct: logged as its text, so
		// redacted as its text.
		return slog.String(a.Key, l.red.RedactString(v.String()))
	}
	return slog.Attr{Key: a.Key, Value: v}
}
