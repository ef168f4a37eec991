package main

import (
	"context"
	"strings"
	"testing"
)

// Bad configuration of serve fails at start, saying what to fix, with exit
// status 2, before it dials or listens.
func TestServeBadConfig(t *testing.T) {
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"-gremlin-endpoint", "http://127.0.0.1:1/gremlin"}, "scheme must be ws or wss"},
		{[]string{"-gremlin-endpoint", ""}, "Endpoint is empty"},
		{[]string{"-gremlin-ca-file", "x.pem"}, "-gremlin-ca-file is for wss://"},
		{[]string{"-neptune-iam", "-gremlin-endpoint", "wss://h:8182/gremlin"}, "Region is empty"},
		{[]string{"-explorer-max-fanout", "-1"}, "must be positive"},
		{[]string{"-explorer-max-nodes", "10"}, "MaxNodes (10, -explorer-max-nodes) is below DefaultMaxNodes"},
		{[]string{"-explorer-poll-interval", "1ms"}, "PollInterval at least 10ms"},
		{[]string{"-explorer-max-heavy-reads", "-1"}, "MaxHeavyReads (-explorer-max-heavy-reads)"},
		{[]string{"-log-level", "loud"}, "-log-level"},
	} {
		err := runServe(context.Background(), append(tt.args, "-http-addr", "127.0.0.1:0"))
		if err == nil || !strings.Contains(err.Error(), tt.want) || exitCode(err) != 2 {
			t.Errorf("serve %v: %v (exit %d), want exit 2 and %q", tt.args, err, exitCode(err), tt.want)
		}
	}
}
