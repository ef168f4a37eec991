package main

import (
	"context"
	"encoding/json"
	"encoding/pem"
	"flag"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/credentials"

	"github.com/lineageflow/lineageflow/graph"
	"github.com/lineageflow/lineageflow/internal/cli"
)

// sigV4Example is graph/testdata/sigv4-example.json, the known-good signed
// handshake package graph checks its signer against.
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
	b, err := os.ReadFile(filepath.Join("..", "..", "graph", "testdata", "sigv4-example.json"))
	if err != nil {
		t.Fatal(err)
	}
	var ex sigV4Example
	if err := json.Unmarshal(b, &ex); err != nil {
		t.Fatal(err)
	}
	return ex
}

// signs returns the handshake headers the Dialer of cfg sends, signing
// with the example's credentials at the example's time.
func signs(t *testing.T, ex sigV4Example, cfg graph.Config) map[string]string {
	t.Helper()
	cfg.Credentials = credentials.NewStaticCredentialsProvider(ex.AccessKeyID, ex.SecretAccessKey, ex.SessionToken)
	cfg.Now = func() time.Time { return ex.Time }
	d, err := graph.NewDialer(cfg)
	if err != nil {
		t.Fatal(err)
	}
	h, err := d.HandshakeHeader(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for k := range h {
		out[k] = h.Get(k)
	}
	return out
}

func sameHeaders(t *testing.T, what string, got, want map[string]string) {
	t.Helper()
	if len(got) != len(want) {
		t.Errorf("%s: headers %v, want %v", what, got, want)
		return
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s: %s = %q, want %q", what, k, got[k], v)
		}
	}
}

// The -neptune-iam, -region (or LINEAGEFLOW_REGION) and -gremlin-* flags
// of run, serve, verify and diff give the same signer, which signs the
// known-good example exactly.
func TestIAMFlagsSignTheExample(t *testing.T) {
	ex := loadSigV4Example(t)
	t.Setenv(cli.EnvName("region"), "")
	os.Unsetenv(cli.EnvName("region"))
	parse := func(fs *flag.FlagSet, args ...string) {
		t.Helper()
		if err := cli.Parse(fs, args); err != nil {
			t.Fatal(err)
		}
	}
	iam := []string{"-neptune-iam", "-region", ex.Region}

	// run: the sink's configuration, dialled as the sink dials it.
	{
		fs := flag.NewFlagSet("run", flag.ContinueOnError)
		region := fs.String("region", "", "")
		gopt := gremlinFlags(fs, region)
		parse(fs, iam...)
		scfg, err := gopt.config(ex.Endpoint, nil)
		if err != nil {
			t.Fatal(err)
		}
		sameHeaders(t, "run", signs(t, ex, scfg.WithDefaults().DialConfig()), ex.Header)
	}
	// serve: the shared connection flags on their own.
	{
		fs := flag.NewFlagSet("serve", flag.ContinueOnError)
		conn := gremlinConnFlags(fs, nil)
		parse(fs, iam...)
		cfg, err := conn.config(ex.Endpoint, nil)
		if err != nil {
			t.Fatal(err)
		}
		sameHeaders(t, "serve", signs(t, ex, cfg), ex.Header)
	}
	// verify: its whole flag set.
	{
		fs, o := verifyFlags()
		parse(fs, append([]string{"-gremlin-endpoint", ex.Endpoint}, iam...)...)
		cfg, err := o.conn.config(*o.endpoint, nil)
		if err != nil {
			t.Fatal(err)
		}
		sameHeaders(t, "verify", signs(t, ex, cfg), ex.Header)
	}
	// diff: both graphs.
	{
		fs, o := diffFlags()
		parse(fs, append([]string{"-production-endpoint", ex.Endpoint, "-canary-endpoint", ex.Endpoint}, iam...)...)
		for _, ep := range []string{*o.prodEP, *o.canaryEP} {
			cfg, err := o.conn.config(ep, nil)
			if err != nil {
				t.Fatal(err)
			}
			sameHeaders(t, "diff", signs(t, ex, cfg), ex.Header)
		}
	}
	// The region from the environment, as run takes it.
	{
		t.Setenv(cli.EnvName("region"), ex.Region)
		fs, o := verifyFlags()
		parse(fs, "-gremlin-endpoint", ex.Endpoint, "-neptune-iam")
		cfg, err := o.conn.config(*o.endpoint, nil)
		if err != nil {
			t.Fatal(err)
		}
		sameHeaders(t, "verify with LINEAGEFLOW_REGION", signs(t, ex, cfg), ex.Header)
	}
}

// handshakeCatcher is a wss:// endpoint that records the headers of each
// websocket handshake and refuses it.
func handshakeCatcher(t *testing.T) (endpoint, caFile string, got <-chan *http.Request) {
	t.Helper()
	ch := make(chan *http.Request, 16)
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case ch <- r.Clone(context.Background()):
		default:
		}
		http.Error(w, "forbidden", http.StatusForbidden)
	}))
	t.Cleanup(srv.Close)
	caFile = filepath.Join(t.TempDir(), "ca.pem")
	p := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})
	if err := os.WriteFile(caFile, p, 0o600); err != nil {
		t.Fatal(err)
	}
	return "wss://" + strings.TrimPrefix(srv.URL, "https://") + "/gremlin", caFile, ch
}

// verify and diff with -neptune-iam send, on the wire, the handshake the
// graph signer gives for their endpoint, region and credentials (from the
// AWS default chain, here the environment) at the time they signed.
func TestVerifyAndDiffSendIAMSignature(t *testing.T) {
	ex := loadSigV4Example(t)
	for k, v := range map[string]string{
		"AWS_ACCESS_KEY_ID": ex.AccessKeyID, "AWS_SECRET_ACCESS_KEY": ex.SecretAccessKey, "AWS_SESSION_TOKEN": ex.SessionToken,
		"AWS_CONFIG_FILE": filepath.Join(t.TempDir(), "none"), "AWS_SHARED_CREDENTIALS_FILE": filepath.Join(t.TempDir(), "none"),
		"AWS_PROFILE": "", "AWS_EC2_METADATA_DISABLED": "true",
	} {
		t.Setenv(k, v)
	}
	for _, cmd := range []struct {
		name string
		run  func(ctx context.Context, args []string) error
		args func(ep string) []string
	}{
		{"verify", runVerify, func(ep string) []string {
			return []string{"-gremlin-endpoint", ep, "-gen-seed", "1", "-gen-events", "1"}
		}},
		{"diff", runDiff, func(ep string) []string {
			return []string{"-production-endpoint", ep, "-canary-endpoint", ep}
		}},
	} {
		t.Run(cmd.name, func(t *testing.T) {
			ep, ca, got := handshakeCatcher(t)
			args := append(cmd.args(ep), "-neptune-iam", "-region", ex.Region, "-gremlin-ca-file", ca, "-read-timeout", "30s")
			if err := cmd.run(context.Background(), args); err == nil {
				t.Fatalf("%s against a refusing endpoint succeeded", cmd.name)
			}
			var r *http.Request
			select {
			case r = <-got:
			default:
				t.Fatalf("%s sent no handshake", cmd.name)
			}
			if r.URL.Path != "/gremlin" {
				t.Errorf("handshake path %q", r.URL.Path)
			}
			at, err := time.Parse("20060102T150405Z", r.Header.Get("X-Amz-Date"))
			if err != nil {
				t.Fatalf("X-Amz-Date: %v (headers %v)", err, r.Header)
			}
			ex := ex
			ex.Time = at
			want := signs(t, ex, graph.Config{Endpoint: ep, IAMAuth: true, Region: ex.Region})
			sent := map[string]string{"Host": r.Host}
			for k := range want {
				if k != "Host" {
					sent[k] = r.Header.Get(k)
				}
			}
			sameHeaders(t, cmd.name+" on the wire", sent, want)
			if !strings.Contains(sent["Authorization"], "Credential="+ex.AccessKeyID+"/") {
				t.Errorf("Authorization %q", sent["Authorization"])
			}
		})
	}
}
