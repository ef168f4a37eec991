package sink

import (
	"crypto/tls"
	"log/slog"
	"strings"
	"testing"
	"time"
)

// An endpoint without a path is dialled (and signed) at /gremlin; with IAM
// any other path is refused at start.
func TestEndpointPathNormalised(t *testing.T) {
	for in, want := range map[string]string{
		"wss://db.example:8182":          "wss://db.example:8182/gremlin",
		"wss://db.example:8182/":         "wss://db.example:8182/gremlin",
		"ws://127.0.0.1:8182/gremlin":    "ws://127.0.0.1:8182/gremlin",
		"ws://127.0.0.1:8182/other/path": "ws://127.0.0.1:8182/other/path",
	} {
		if got := (Config{Endpoint: in}).WithDefaults().Endpoint; got != want {
			t.Errorf("%s: endpoint %s, want %s", in, got, want)
		}
	}
	err := Config{Endpoint: "wss://db.example:8182/g", IAMAuth: true, Region: "us-east-1"}.WithDefaults().Validate()
	if err == nil || !strings.Contains(err.Error(), "/gremlin") {
		t.Errorf("IAM with path /g: %v, want an error naming /gremlin", err)
	}
	if err := (Config{Endpoint: "wss://db.example:8182", IAMAuth: true, Region: "us-east-1"}).WithDefaults().Validate(); err != nil {
		t.Errorf("IAM without a path: %v", err)
	}
}

// The writers dial with exactly the connection settings of the sink's
// Config (the SigV4 signing itself is tested in package graph).
func TestDialConfig(t *testing.T) {
	tc, l := &tls.Config{ServerName: "db.example"}, slog.Default()
	c := Config{Endpoint: "wss://db.example:8182", TLS: tc, IAMAuth: true, Region: "eu-west-1",
		DialTimeout: 3 * time.Second, WriteBufferSize: 2 << 20, Logger: l}.WithDefaults()
	d := c.DialConfig()
	if d.Endpoint != "wss://db.example:8182/gremlin" || d.TLS != tc || !d.IAMAuth || d.Region != "eu-west-1" ||
		d.DialTimeout != 3*time.Second || d.WriteBufferSize != 2<<20 || d.Logger != l || d.Credentials != nil || d.Now != nil {
		t.Fatalf("DialConfig() = %+v", d)
	}
}
