package explorer

import (
	"bytes"
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"log/slog"
	"math/big"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// testIssuer signs tokens with an RSA and an EC key and serves them as a
// JWKS on loopback, as an OIDC issuer does.
type testIssuer struct {
	rsa  *rsa.PrivateKey
	ec   *ecdsa.PrivateKey
	srv  *httptest.Server
	iss  string
	jwks []byte
}

func b64u(b []byte) string { return base64.RawURLEncoding.EncodeToString(b) }

func newTestIssuer(t testing.TB) *testIssuer {
	t.Helper()
	rk, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	ek, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	pad := func(b []byte) []byte { return append(make([]byte, 32-len(b)), b...) }
	set := map[string]any{"keys": []map[string]string{
		{"kty": "RSA", "kid": "rsa1", "use": "sig", "alg": "RS256", "n": b64u(rk.N.Bytes()), "e": b64u(big.NewInt(int64(rk.E)).Bytes())},
		{"kty": "EC", "kid": "ec1", "crv": "P-256", "x": b64u(pad(ek.X.Bytes())), "y": b64u(pad(ek.Y.Bytes()))},
	}}
	ti := &testIssuer{rsa: rk, ec: ek, iss: "https://idp.test/"}
	ti.jwks, _ = json.Marshal(set)
	ti.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(ti.jwks)
	}))
	t.Cleanup(ti.srv.Close)
	return ti
}

// sign returns a JWT of claims signed by alg's key ("RS256", "ES256"; kid
// as given).
func (ti *testIssuer) sign(t testing.TB, alg, kid string, claims map[string]any) string {
	return ti.signEnc(t, base64.RawURLEncoding, alg, kid, claims)
}

// signEnc signs with segments in enc: the ALB pads them with '=' (and
// signs the padded text).
func (ti *testIssuer) signEnc(t testing.TB, enc *base64.Encoding, alg, kid string, claims map[string]any) string {
	t.Helper()
	h, _ := json.Marshal(map[string]string{"alg": alg, "kid": kid, "typ": "JWT"})
	c, _ := json.Marshal(claims)
	in := enc.EncodeToString(h) + "." + enc.EncodeToString(c)
	sum := sha256.Sum256([]byte(in))
	var sig []byte
	switch alg {
	case "RS256":
		s, err := rsa.SignPKCS1v15(rand.Reader, ti.rsa, crypto.SHA256, sum[:])
		if err != nil {
			t.Fatal(err)
		}
		sig = s
	case "ES256":
		r, s, err := ecdsa.Sign(rand.Reader, ti.ec, sum[:])
		if err != nil {
			t.Fatal(err)
		}
		sig = append(r.FillBytes(make([]byte, 32)), s.FillBytes(make([]byte, 32))...)
	}
	return in + "." + enc.EncodeToString(sig)
}

func (ti *testIssuer) claims(extra map[string]any) map[string]any {
	c := map[string]any{"iss": ti.iss, "sub": "user-42", "email": "ana@example.com", "aud": "lineage-explorer",
		"exp": time.Now().Add(time.Hour).Unix()}
	for k, v := range extra {
		if v == nil {
			delete(c, k)
		} else {
			c[k] = v
		}
	}
	return c
}

// syncBuf is a log sink safe for the server's goroutines.
type syncBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuf) Write(p []byte) (int, error) { s.mu.Lock(); defer s.mu.Unlock(); return s.b.Write(p) }
func (s *syncBuf) String() string              { s.mu.Lock(); defer s.mu.Unlock(); return s.b.String() }

// A request without a valid token gets 401 and never reaches the handler;
// one with a token signed by the test's JWKS gets through, its identity in
// the access log and the token nowhere in it.
func TestAuthJWT(t *testing.T) {
	t.Parallel()
	ti := newTestIssuer(t)
	var logs syncBuf
	l := slog.New(slog.NewTextHandler(&logs, nil))
	a, err := NewAuthenticator(context.Background(), AuthConfig{JWKSURL: ti.srv.URL, Issuer: ti.iss, Audience: "lineage-explorer",
		Header: "x-amzn-oidc-data", Logger: l})
	if err != nil {
		t.Fatal(err)
	}
	reached := 0
	inner := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		reached++
		_, _ = w.Write([]byte("lineage"))
	})
	srv := httptest.NewServer(AccessLog(a.Wrap(WithIdentityLog(inner)), l))
	defer srv.Close()
	good := ti.sign(t, "RS256", "rsa1", ti.claims(nil))
	goodEC := ti.sign(t, "ES256", "ec1", ti.claims(map[string]any{"aud": nil}))
	albStyle := ti.signEnc(t, base64.URLEncoding, "ES256", "ec1", ti.claims(map[string]any{"aud": "lineage-explorer"})) // the ALB pads with '='
	forged := ti.sign(t, "RS256", "rsa1", ti.claims(nil))
	forged = forged[:strings.LastIndex(forged, ".")+1] + b64u(make([]byte, 256))
	tampered := strings.Split(good, ".")
	tampered[1] = b64u([]byte(`{"iss":"` + ti.iss + `","sub":"admin","aud":"lineage-explorer","exp":9999999999}`))
	none := b64u([]byte(`{"alg":"none"}`)) + "." + b64u([]byte(`{"sub":"x"}`)) + "."
	for _, tt := range []struct {
		name, header, value string
		want                int
	}{
		{"no token", "", "", 401},
		{"garbage", "Authorization", "Bearer abc", 401},
		{"alg none", "Authorization", "Bearer " + none, 401},
		{"forged signature", "Authorization", "Bearer " + forged, 401},
		{"tampered claims", "Authorization", "Bearer " + strings.Join(tampered, "."), 401},
		{"expired", "Authorization", "Bearer " + ti.sign(t, "RS256", "rsa1", ti.claims(map[string]any{"exp": time.Now().Add(-time.Hour).Unix()})), 401},
		{"no exp", "Authorization", "Bearer " + ti.sign(t, "RS256", "rsa1", ti.claims(map[string]any{"exp": nil})), 401},
		{"other issuer", "Authorization", "Bearer " + ti.sign(t, "RS256", "rsa1", ti.claims(map[string]any{"iss": "https://evil/"})), 401},
		{"other audience", "Authorization", "Bearer " + ti.sign(t, "RS256", "rsa1", ti.claims(map[string]any{"aud": []string{"x"}})), 401},
		{"unknown kid", "Authorization", "Bearer " + ti.sign(t, "RS256", "nope", ti.claims(nil)), 401},
		{"RS256 key as ES256", "Authorization", "Bearer " + ti.sign(t, "ES256", "rsa1", ti.claims(nil)), 401},
		{"good bearer", "Authorization", "Bearer " + good, 200},
		{"good trusted header (ES256, aud list absent)", "x-amzn-oidc-data", goodEC, 401}, // -auth-audience set: aud required
		{"good trusted header", "x-amzn-oidc-data", ti.sign(t, "ES256", "ec1", ti.claims(map[string]any{"aud": []string{"a", "lineage-explorer"}})), 200},
		{"ALB padding", "x-amzn-oidc-data", albStyle, 200},
	} {
		before := reached
		req, _ := http.NewRequest("GET", srv.URL+"/api/lf/v1/search?q=orders", nil)
		if tt.header != "" {
			req.Header.Set(tt.header, tt.value)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != tt.want {
			t.Errorf("%s: %d, want %d", tt.name, resp.StatusCode, tt.want)
		}
		if tt.want == 401 && (reached != before || resp.Header.Get("WWW-Authenticate") == "") {
			t.Errorf("%s: refused request reached the handler or lacks WWW-Authenticate", tt.name)
		}
	}
	// Health stays open for probes.
	resp, err := http.Get(srv.URL + "/api/lf/v1/health")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Errorf("health without a token: %d, want 200 (probes)", resp.StatusCode)
	}
	out := logs.String()
	if !strings.Contains(out, `identity="user-42 <ana@example.com>"`) {
		t.Errorf("no identity in the access log:\n%s", out)
	}
	for _, tok := range []string{good, strings.Split(good, ".")[2], strings.Split(goodEC, ".")[2]} {
		if strings.Contains(out, tok) {
			t.Fatalf("a token in the log:\n%s", out)
		}
	}
}

// The ALB's way: one PEM key per kid at a URL with {kid}; and a JWKS file.
func TestAuthKeySources(t *testing.T) {
	t.Parallel()
	ti := newTestIssuer(t)
	pemSrv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/ec1" {
			http.NotFound(w, r)
			return
		}
		der, err := x509MarshalPKIX(&ti.ec.PublicKey)
		if err != nil {
			t.Error(err)
		}
		_, _ = w.Write(der)
	}))
	defer pemSrv.Close()
	a, err := NewAuthenticator(context.Background(), AuthConfig{JWKSURL: pemSrv.URL + "/{kid}", Issuer: ti.iss, Header: "x-amzn-oidc-data"})
	if err != nil {
		t.Fatal(err)
	}
	tok := ti.signEnc(t, base64.URLEncoding, "ES256", "ec1", ti.claims(nil)) // padded like the ALB's
	if id, err := a.Verify(context.Background(), tok); err != nil || id.Subject != "user-42" {
		t.Fatalf("ALB-style token: %v %v", id, err)
	}
	if _, err := a.Verify(context.Background(), ti.sign(t, "ES256", "../x", ti.claims(nil))); err == nil {
		t.Fatal("a kid with a path in it was accepted")
	}
	f := filepath.Join(t.TempDir(), "jwks.json")
	if err := os.WriteFile(f, ti.jwks, 0o600); err != nil {
		t.Fatal(err)
	}
	b, err := NewAuthenticator(context.Background(), AuthConfig{JWKSFile: f, Issuer: ti.iss})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.Verify(context.Background(), ti.sign(t, "RS256", "rsa1", ti.claims(nil))); err != nil {
		t.Fatal(err)
	}
	for _, c := range []AuthConfig{
		{JWKSURL: "http://idp.example/jwks"},            // plain http off loopback, no issuer
		{JWKSURL: ti.srv.URL, JWKSFile: f, Issuer: "x"}, // both
		{Issuer: "x"}, // issuer without keys
		{JWKSURL: "https://127.0.0.1:1/jwks", Issuer: ti.iss}, // unreachable at start
	} {
		if _, err := NewAuthenticator(context.Background(), c); err == nil {
			t.Errorf("%+v: accepted", c)
		}
	}
}

func x509MarshalPKIX(k *ecdsa.PublicKey) ([]byte, error) {
	der, err := x509.MarshalPKIXPublicKey(k)
	if err != nil {
		return nil, err
	}
	return pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der}), nil
}
