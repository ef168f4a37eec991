package main

import (
	"context"
	"crypto"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"io"
	"log/slog"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lineageflow/lineageflow/testkit/testenv"
)

// serve beyond loopback without authentication refuses to start, saying
// what to set; on loopback, or with -insecure-no-auth, it does not refuse.
func TestServeRefusesUnauthenticatedExposure(t *testing.T) {
	for _, addr := range []string{"0.0.0.0:0", ":0", "10.1.2.3:8080", "[::]:0"} {
		err := runServe(context.Background(), []string{"-http-addr", addr})
		if err == nil || exitCode(err) != 2 || !strings.Contains(err.Error(), "listens beyond loopback and no authentication is set: set -auth-jwks-url") ||
			!strings.Contains(err.Error(), "-insecure-no-auth") {
			t.Errorf("serve -http-addr %s: %v (exit %d), want exit 2 saying what to set", addr, err, exitCode(err))
		}
	}
	for _, args := range [][]string{
		{"-auth-issuer", "https://idp/"},                                                        // issuer without keys
		{"-auth-jwks-url", "http://idp.example/jwks", "-auth-issuer", "x"},                      // http off loopback
		{"-auth-jwks-url", "https://idp.example/jwks"},                                          // no issuer
		{"-auth-jwks-file", "/nonexistent/jwks.json", "-auth-issuer", "x", "-insecure-no-auth"}, // both
	} {
		if err := runServe(context.Background(), append(args, "-http-addr", "0.0.0.0:0")); err == nil || exitCode(err) != 2 {
			t.Errorf("serve %v: %v, want exit 2", args, err)
		}
	}
	// -insecure-no-auth beyond loopback: starts (and stops at once: ctx done).
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := runServe(ctx, []string{"-http-addr", "127.0.0.1:0", "-insecure-no-auth", "-log-level", "error"}); err != nil {
		t.Errorf("serve -insecure-no-auth: %v", err)
	}
}

// SIGTERM (ctx done) drains the in-flight requests, then closes the graph,
// and serve returns nil (exit 0); the watch streams are ended first so the
// drain does not wait on them.
func TestServeGracefulShutdown(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var order []string
	note := func(s string) { mu.Lock(); order = append(order, s); mu.Unlock() }
	inFlight, release := make(chan struct{}), make(chan struct{})
	hs := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		close(inFlight)
		<-release
		note("request answered")
		_, _ = w.Write([]byte("lineage"))
	})}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- serveUntil(ctx, hs, ln, 10*time.Second, func() { note("streams ended") }, func() { note("graph closed") }, slog.New(slog.DiscardHandler))
	}()
	got := make(chan string, 1)
	go func() {
		resp, err := http.Get("http://" + ln.Addr().String() + "/api/lf/v1/lineage")
		if err != nil {
			got <- err.Error()
			return
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		got <- resp.Status + " " + string(b)
	}()
	<-inFlight
	cancel() // SIGTERM
	// The server stops accepting; the graph stays open while the request runs.
	waitUntil(t, func() bool { mu.Lock(); defer mu.Unlock(); return len(order) > 0 })
	close(release)
	if g := <-got; g != "200 OK lineage" {
		t.Fatalf("in-flight request: %q, want 200 with its answer", g)
	}
	if err := <-done; err != nil {
		t.Fatalf("serve after SIGTERM: %v, want nil (exit 0)", err)
	}
	mu.Lock()
	defer mu.Unlock()
	if strings.Join(order, ", ") != "streams ended, request answered, graph closed" {
		t.Fatalf("shutdown order: %v", order)
	}
}

func waitUntil(t *testing.T, f func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !f() {
		if time.Now().After(deadline) {
			t.Fatal("condition not met in 10 s")
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// The real serve over the Gremlin stand-in, with authentication against a
// JWKS the test serves on loopback: 401 without or with a bad token, the
// page and the API with a good one; an unknown Host is refused (421); every
// answer has nosniff and frame-ancestors 'none'.
func TestServeAuthOnStandins(t *testing.T) {
	gremlin := testenv.Gremlin(t)
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	b64 := base64.RawURLEncoding.EncodeToString
	jwks, _ := json.Marshal(map[string]any{"keys": []map[string]string{{"kty": "RSA", "kid": "k1", "n": b64(key.N.Bytes()), "e": b64(big.NewInt(int64(key.E)).Bytes())}}})
	idp := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { _, _ = w.Write(jwks) }))
	defer idp.Close()
	sign := func(claims map[string]any) string {
		h, _ := json.Marshal(map[string]string{"alg": "RS256", "kid": "k1"})
		c, _ := json.Marshal(claims)
		in := b64(h) + "." + b64(c)
		sum := sha256.Sum256([]byte(in))
		sig, err := rsa.SignPKCS1v15(rand.Reader, key, crypto.SHA256, sum[:])
		if err != nil {
			t.Fatal(err)
		}
		return in + "." + b64(sig)
	}
	good := sign(map[string]any{"iss": "https://idp.test/", "sub": "ana", "exp": time.Now().Add(time.Hour).Unix()})
	expired := sign(map[string]any{"iss": "https://idp.test/", "sub": "ana", "exp": time.Now().Add(-time.Hour).Unix()})

	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- runServe(ctx, []string{"-http-addr", addr, "-gremlin-endpoint", gremlin, "-log-level", "warn",
			"-auth-jwks-url", idp.URL, "-auth-issuer", "https://idp.test/", "-auth-header", "x-amzn-oidc-data"})
	}()
	get := func(path, host, hdr, tok string) (int, http.Header, string) {
		req, _ := http.NewRequest("GET", "http://"+addr+path, nil)
		if host != "" {
			req.Host = host
		}
		if hdr != "" {
			req.Header.Set(hdr, tok)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return 0, nil, err.Error()
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, resp.Header, string(b)
	}
	waitUntil(t, func() bool { c, _, _ := get("/api/lf/v1/health", "", "", ""); return c != 0 })
	for _, tt := range []struct {
		name, path, host, hdr, tok string
		want                       int
	}{
		{"page, no token", "/", "", "", "", 401},
		{"API, no token", "/api/v1/namespaces", "", "", "", 401},
		{"API, expired token", "/api/v1/namespaces", "", "Authorization", "Bearer " + expired, 401},
		{"API, bad token", "/api/v1/namespaces", "", "x-amzn-oidc-data", good[:len(good)-4] + "AAAA", 401},
		{"page, good token", "/", "", "Authorization", "Bearer " + good, 200},
		{"API, good token", "/api/v1/namespaces", "", "Authorization", "Bearer " + good, 200},
		{"API, good token in the trusted header", "/api/lf/v1/search?q=a", "", "x-amzn-oidc-data", good, 200},
		{"DNS rebinding", "/api/v1/namespaces", "rebind.attacker.example:80", "Authorization", "Bearer " + good, 421},
	} {
		code, h, body := get(tt.path, tt.host, tt.hdr, tt.tok)
		if code != tt.want {
			t.Errorf("%s: %d %.200s, want %d", tt.name, code, body, tt.want)
		}
		if h.Get("X-Content-Type-Options") != "nosniff" || !strings.Contains(h.Get("Content-Security-Policy"), "frame-ancestors 'none'") {
			t.Errorf("%s: headers %v lack nosniff or frame-ancestors 'none'", tt.name, h)
		}
	}
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("serve after SIGTERM: %v, want nil", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("serve did not stop within 30 s of SIGTERM")
	}
}
