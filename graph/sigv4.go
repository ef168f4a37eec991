package graph

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"sync"
	"time"

	gremlingo "github.com/apache/tinkerpop/gremlin-go/v3/driver"
	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
	"github.com/aws/aws-sdk-go-v2/config"
)

// emptySHA256 is the hex SHA-256 of an empty payload (a GET has none).
const emptySHA256 = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"

// sigV4Auth signs Neptune IAM websocket handshakes: a SigV4 signature of
// GET https://host:port/gremlin for service "neptune-db". Neptune checks
// the Authorization, X-Amz-Date, X-Amz-Security-Token (temporary
// credentials) and Host headers of the upgrade request. A signature is
// valid for minutes only, so every (re)connect signs again.
type sigV4Auth struct {
	u      *url.URL // the endpoint, scheme rewritten to https
	region string
	creds  aws.CredentialsProvider
	signer *v4.Signer
	now    func() time.Time

	mu struct {
		sync.Mutex
		lastErr error // of the last signing by provider
	}
}

// newSigV4Auth returns the signer of cfg's endpoint u, with cfg.Credentials
// or else the AWS default chain.
func newSigV4Auth(ctx context.Context, u *url.URL, cfg Config) (*sigV4Auth, error) {
	creds := cfg.Credentials
	if creds == nil {
		awsCfg, err := config.LoadDefaultConfig(ctx, config.WithRegion(cfg.Region))
		if err != nil {
			return nil, fmt.Errorf("graph: IAM auth: load AWS config: %w", err)
		}
		creds = awsCfg.Credentials
	}
	now := cfg.Now
	if now == nil {
		now = time.Now
	}
	return newSigV4AuthWith(u, cfg.Region, creds, now), nil
}

func newSigV4AuthWith(endpoint *url.URL, region string, creds aws.CredentialsProvider, now func() time.Time) *sigV4Auth {
	u := *endpoint
	u.Scheme = "https"
	if u.Path == "" {
		u.Path = "/gremlin"
	}
	return &sigV4Auth{u: &u, region: region, creds: aws.NewCredentialsCache(creds), signer: v4.NewSigner(), now: now}
}

// header returns freshly signed handshake headers.
func (a *sigV4Auth) header(ctx context.Context) (http.Header, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, a.u.String(), nil)
	if err != nil {
		return nil, err
	}
	creds, err := a.creds.Retrieve(ctx)
	if err != nil {
		return nil, fmt.Errorf("graph: IAM auth: credentials: %w", err)
	}
	if err := a.signer.SignHTTP(ctx, creds, req, emptySHA256, "neptune-db", a.region, a.now()); err != nil {
		return nil, fmt.Errorf("graph: IAM auth: sign: %w", err)
	}
	h := req.Header.Clone()
	h.Set("Host", req.Host)
	return h, nil
}

// provider is the gremlingo.NewDynamicAuth callback: gremlin-go calls it
// on every websocket dial. A signing error gives unsigned headers (the
// server then refuses the handshake, a connection error that is retried).
func (a *sigV4Auth) provider() gremlingo.AuthInfoProvider {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	h, err := a.header(ctx)
	a.mu.Lock()
	a.mu.lastErr = err
	a.mu.Unlock()
	return gremlingo.HeaderAuthInfo(h)
}
