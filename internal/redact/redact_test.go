package redact

import (
	"bytes"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"testing"
)

func TestString(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"redis://:PASS@host:6379/0":                      "redis://:***@host:6379/0",
		"rediss://user:p%40ss@h/1 and wss://a:b@g/gr":    "rediss://user:***@h/1 and wss://a:***@g/gr",
		"redis://host:6379/0":                            "redis://host:6379/0",
		"http://127.0.0.1:4567":                          "http://127.0.0.1:4567",
		"ping redis://:hunter2@10.0.0.1:6379/0: refused": "ping redis://:***@10.0.0.1:6379/0: refused",
	} {
		if got := String(in); got != want {
			t.Errorf("String(%q) = %q, want %q", in, got, want)
		}
	}
}

// No password in any part of a log line: message, string, error, Stringer,
// group, logger attributes.
func TestHandler(t *testing.T) {
	t.Parallel()
	var buf bytes.Buffer
	base := errors.New("dedupredis: ping redis://:hunter2@10.0.0.1:6379/0: dial tcp: connection refused")
	l := slog.New(Handler(slog.NewTextHandler(&buf, nil))).With("dedup", "redis://:hunter2@h/0")
	l.Warn("redis redis://:hunter2@h/0 does not answer", "err", base, "url", "redis://u:hunter2@h/0",
		"s", stringer("wss://u:hunter2@n/gremlin"), slog.Group("g", "u", "redis://:hunter2@h/0"))
	l.WithGroup("x").Info("m", "u", "redis://:hunter2@h/0")
	out := buf.String()
	if strings.Contains(out, "hunter2") {
		t.Fatalf("password in the log:\n%s", out)
	}
	if strings.Count(out, "***") < 7 {
		t.Fatalf("redactions missing:\n%s", out)
	}
}

type stringer string

func (s stringer) String() string { return string(s) }

var _ fmt.Stringer = stringer("")
