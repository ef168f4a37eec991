// Package redact keeps credentials out of logs (issue 26, item 9): the
// password of a URL such as redis://:PASS@host:6379/0 or
// wss://user:PASS@host/gremlin, wherever it appears in a log line (the
// message, a string attribute, an error's text, a group's attributes).
package redact

import (
	"context"
	"fmt"
	"log/slog"
	"regexp"
)

// userinfo matches scheme://user:password@ (the user may be empty).
var userinfo = regexp.MustCompile(`([a-zA-Z][a-zA-Z0-9+.-]*://[^/@\s:]*):[^@\s/]*@`)

// String returns s with the password of every URL in it replaced by ***.
func String(s string) string {
	return userinfo.ReplaceAllString(s, "$1:***@")
}

// Handler returns h with every record's message and attributes passed
// through [String]. Errors become their redacted text.
func Handler(h slog.Handler) slog.Handler { return handler{h} }

type handler struct{ h slog.Handler }

func (r handler) Enabled(ctx context.Context, l slog.Level) bool { return r.h.Enabled(ctx, l) }

func (r handler) Handle(ctx context.Context, rec slog.Record) error {
	out := slog.NewRecord(rec.Time, rec.Level, String(rec.Message), rec.PC)
	rec.Attrs(func(a slog.Attr) bool {
		out.AddAttrs(attr(a))
		return true
	})
	return r.h.Handle(ctx, out)
}

func (r handler) WithAttrs(as []slog.Attr) slog.Handler {
	red := make([]slog.Attr, len(as))
	for i, a := range as {
		red[i] = attr(a)
	}
	return handler{r.h.WithAttrs(red)}
}

func (r handler) WithGroup(name string) slog.Handler { return handler{r.h.WithGroup(name)} }

func attr(a slog.Attr) slog.Attr {
	v := a.Value.Resolve()
	switch v.Kind() {
	case slog.KindString:
		return slog.String(a.Key, String(v.String()))
	case slog.KindGroup:
		g := v.Group()
		red := make([]any, len(g))
		for i, x := range g {
			red[i] = attr(x)
		}
		return slog.Group(a.Key, red...)
	case slog.KindAny:
		switch x := v.Any().(type) {
		case error:
			if s := x.Error(); s != String(s) {
				return slog.Any(a.Key, redactedError{String(s), x})
			}
		case fmt.Stringer:
			return slog.String(a.Key, String(x.String()))
		}
	}
	return slog.Attr{Key: a.Key, Value: v}
}

// redactedError is an error with its text redacted; errors.Is/As still see
// the original.
type redactedError struct {
	msg string
	err error
}

func (e redactedError) Error() string { return e.msg }
func (e redactedError) Unwrap() error { return e.err }
