package sink

import (
	"context"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
)

// TestSigV4Headers: the handshake headers carry a neptune-db SigV4
// signature for GET https://host:port/gremlin and change on re-sign.
func TestSigV4Headers(t *testing.T) {
	u, _ := url.Parse("wss://db.cluster-x.us-east-1.neptune.amazonaws.com:8182/gremlin")
	now := time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)
	clock := func() time.Time { return now }
	creds := credentials.NewStaticCredentialsProvider("AKIDEXAMPLE", "secret", "session-token")
	a := newSigV4AuthWith(u, "us-east-1", creds, clock)
	h1, err := a.header(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	auth := h1.Get("Authorization")
	for _, want := range []string{"AWS4-HMAC-SHA256", "Credential=AKIDEXAMPLE/20250102/us-east-1/neptune-db/aws4_request", "SignedHeaders=", "host", "Signature="} {
		if !strings.Contains(auth, want) {
			t.Fatalf("Authorization %q lacks %q", auth, want)
		}
	}
	if h1.Get("X-Amz-Date") != "20250102T030405Z" {
		t.Fatalf("X-Amz-Date = %q", h1.Get("X-Amz-Date"))
	}
	if h1.Get("X-Amz-Security-Token") != "session-token" {
		t.Fatalf("X-Amz-Security-Token = %q", h1.Get("X-Amz-Security-Token"))
	}
	if h1.Get("Host") != "db.cluster-x.us-east-1.neptune.amazonaws.com:8182" {
		t.Fatalf("Host = %q", h1.Get("Host"))
	}
	// Re-signing (a reconnect) later gives a new date and signature, through
	// the callback gremlin-go calls on every dial.
	now = now.Add(90 * time.Second)
	h2 := a.provider().GetHeader()
	if h2.Get("X-Amz-Date") == h1.Get("X-Amz-Date") || h2.Get("Authorization") == auth {
		t.Fatal("re-signed headers did not change")
	}
	if !strings.Contains(h2.Get("Authorization"), "neptune-db") {
		t.Fatalf("re-signed Authorization %q", h2.Get("Authorization"))
	}
	var _ aws.CredentialsProvider = creds
}

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
