package graph

import (
	"strings"
	"testing"
	"time"
)

func TestConfigValidate(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		cfg  Config
		want string // substring of the error; "" = valid
	}{
		{"local", Config{Endpoint: "ws://127.0.0.1:8182/gremlin"}, ""},
		{"neptune iam", Config{Endpoint: "wss://db.cluster-x.us-east-1.neptune.amazonaws.com:8182/gremlin", IAMAuth: true, Region: "us-east-1"}, ""},
		{"iam without a path", Config{Endpoint: "wss://db.example:8182", IAMAuth: true, Region: "us-east-1"}, ""},
		{"empty endpoint", Config{}, "Endpoint is empty"},
		{"http scheme", Config{Endpoint: "http://h:8182/gremlin"}, "scheme must be ws or wss"},
		{"no host", Config{Endpoint: "ws:///gremlin"}, "has no host"},
		{"iam without region", Config{Endpoint: "wss://h:8182/gremlin", IAMAuth: true}, "Region is empty"},
		{"iam over ws", Config{Endpoint: "ws://h:8182/gremlin", IAMAuth: true, Region: "us-east-1"}, "needs a wss://"},
		{"iam on another path", Config{Endpoint: "wss://db.example:8182/g", IAMAuth: true, Region: "us-east-1"}, "/gremlin"},
		{"negative dial timeout", Config{Endpoint: "ws://h:1/gremlin", DialTimeout: -time.Second}, "DialTimeout"},
	}
	for _, tt := range tests {
		err := tt.cfg.WithDefaults().Validate()
		if tt.want == "" {
			if err != nil {
				t.Errorf("%s: unexpected error: %v", tt.name, err)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: error %v, want it to contain %q", tt.name, err, tt.want)
		}
	}
	c := Config{Endpoint: "ws://h:1/gremlin"}.WithDefaults()
	if c.DialTimeout != DefaultDialTimeout || c.WriteBufferSize != DefaultWriteBufferSize || c.Logger == nil {
		t.Errorf("defaults: %+v", c)
	}
}

// An endpoint without a path is dialled (and signed) at /gremlin; any
// other path is kept.
func TestNormalizeEndpoint(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"wss://db.example:8182":          "wss://db.example:8182/gremlin",
		"wss://db.example:8182/":         "wss://db.example:8182/gremlin",
		"ws://127.0.0.1:8182/gremlin":    "ws://127.0.0.1:8182/gremlin",
		"ws://127.0.0.1:8182/other/path": "ws://127.0.0.1:8182/other/path",
		"":                               "",
		"::not a url":                    "::not a url",
	} {
		if got := NormalizeEndpoint(in); got != want {
			t.Errorf("%q: %q, want %q", in, got, want)
		}
	}
}
