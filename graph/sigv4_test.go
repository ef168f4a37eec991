package graph

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"net/url"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/credentials"
)

// sigV4Example is testdata/sigv4-example.json: one handshake signed by
// hand-checked SigV4 (see TestSigV4ExampleIsSigV4), the known-good example
// every command's IAM signing is compared with (cmd/lineageflow's tests
// read the same file).
type sigV4Example struct {
	Endpoint        string            `json:"endpoint"`
	Region          string            `json:"region"`
	AccessKeyID     string            `json:"accessKeyId"`
	SecretAccessKey string            `json:"secretAccessKey"`
	SessionToken    string            `json:"sessionToken"`
	Time            time.Time         `json:"time"`
	Header          map[string]string `json:"header"`
}

func loadSigV4Example(t *testing.T) sigV4Example {
	t.Helper()
	b, err := os.ReadFile("testdata/sigv4-example.json")
	if err != nil {
		t.Fatal(err)
	}
	var ex sigV4Example
	if err := json.Unmarshal(b, &ex); err != nil {
		t.Fatal(err)
	}
	return ex
}

// The Dialer of the example's configuration sends exactly the example's
// headers.
func TestSigV4KnownGoodExample(t *testing.T) {
	t.Parallel()
	ex := loadSigV4Example(t)
	d, err := NewDialer(Config{Endpoint: ex.Endpoint, IAMAuth: true, Region: ex.Region,
		Credentials: credentials.NewStaticCredentialsProvider(ex.AccessKeyID, ex.SecretAccessKey, ex.SessionToken),
		Now:         func() time.Time { return ex.Time }})
	if err != nil {
		t.Fatal(err)
	}
	h, err := d.HandshakeHeader(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for k, want := range ex.Header {
		if got := h.Get(k); got != want {
			t.Errorf("%s = %q, want %q", k, got, want)
		}
	}
	if len(h) != len(ex.Header) {
		t.Errorf("headers %v, want exactly %v", h, ex.Header)
	}
}

// The example's Authorization is SigV4 computed from first principles
// (canonical request, string to sign, derived key), not whatever the SDK
// printed once.
func TestSigV4ExampleIsSigV4(t *testing.T) {
	t.Parallel()
	ex := loadSigV4Example(t)
	u, err := url.Parse(ex.Endpoint)
	if err != nil {
		t.Fatal(err)
	}
	amzDate := ex.Time.UTC().Format("20060102T150405Z")
	day := amzDate[:8]
	scope := day + "/" + ex.Region + "/neptune-db/aws4_request"
	signed := "host;x-amz-date;x-amz-security-token"
	canonical := strings.Join([]string{
		"GET", u.Path, "",
		"host:" + u.Host, "x-amz-date:" + amzDate, "x-amz-security-token:" + ex.SessionToken, "",
		signed, emptySHA256,
	}, "\n")
	sum := sha256.Sum256([]byte(canonical))
	toSign := "AWS4-HMAC-SHA256\n" + amzDate + "\n" + scope + "\n" + hex.EncodeToString(sum[:])
	mac := func(key []byte, s string) []byte {
		m := hmac.New(sha256.New, key)
		m.Write([]byte(s))
		return m.Sum(nil)
	}
	key := []byte("AWS4" + ex.SecretAccessKey)
	for _, part := range []string{day, ex.Region, "neptune-db", "aws4_request"} {
		key = mac(key, part)
	}
	want := "AWS4-HMAC-SHA256 Credential=" + ex.AccessKeyID + "/" + scope + ", SignedHeaders=" + signed +
		", Signature=" + hex.EncodeToString(mac(key, toSign))
	if got := ex.Header["Authorization"]; got != want {
		t.Fatalf("example Authorization\n %s\nis not SigV4\n %s", got, want)
	}
	if ex.Header["X-Amz-Date"] != amzDate || ex.Header["X-Amz-Security-Token"] != ex.SessionToken || ex.Header["Host"] != u.Host {
		t.Fatalf("example headers %v", ex.Header)
	}
}

// TestSigV4Resign: re-signing (a reconnect) later gives a new date and
// signature, through the callback gremlin-go calls on every dial.
func TestSigV4Resign(t *testing.T) {
	t.Parallel()
	u, _ := url.Parse("wss://db.cluster-x.us-east-1.neptune.amazonaws.com:8182/gremlin")
	now := time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)
	clock := func() time.Time { return now }
	creds := credentials.NewStaticCredentialsProvider("AKIDEXAMPLE", "secret", "session-token")
	a := newSigV4AuthWith(u, "us-east-1", creds, clock)
	h1, err := a.header(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	now = now.Add(90 * time.Second)
	h2 := a.provider().GetHeader()
	if h2.Get("X-Amz-Date") == h1.Get("X-Amz-Date") || h2.Get("Authorization") == h1.Get("Authorization") {
		t.Fatal("re-signed headers did not change")
	}
	if !strings.Contains(h2.Get("Authorization"), "/20250102/us-east-1/neptune-db/aws4_request") {
		t.Fatalf("re-signed Authorization %q", h2.Get("Authorization"))
	}
}

// Without IAM a handshake carries no extra header.
func TestHandshakeHeaderWithoutIAM(t *testing.T) {
	t.Parallel()
	d, err := NewDialer(Config{Endpoint: "ws://127.0.0.1:8182/gremlin"})
	if err != nil {
		t.Fatal(err)
	}
	if h, err := d.HandshakeHeader(context.Background()); h != nil || err != nil {
		t.Fatalf("HandshakeHeader = %v, %v; want none", h, err)
	}
}
