package webguard

import (
	"net/http"
	"net/http/httptest"
	"testing"
)

func TestWrap(t *testing.T) {
	t.Parallel()
	ok := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { _, _ = w.Write([]byte("secret lineage")) })
	page := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Security-Policy", "default-src 'self'; frame-ancestors 'none'")
	})
	for _, tt := range []struct {
		listen, host string
		extra        []string
		want         int
	}{
		{"127.0.0.1:8080", "127.0.0.1:8080", nil, 200},
		{"127.0.0.1:8080", "localhost:8080", nil, 200},
		{"127.0.0.1:8080", "LOCALHOST", nil, 200},
		{"[::1]:8080", "[::1]:8080", nil, 200},
		{"127.0.0.1:8080", "rebind.attacker.example:8080", nil, 421},
		{"127.0.0.1:8080", "rebind.attacker.example", nil, 421},
		{"127.0.0.1:8080", "", nil, 421},
		{"127.0.0.1:8080", "explorer.internal:8080", []string{"explorer.internal"}, 200},
		{"localhost:9090", "evil.example", nil, 421},
		{"0.0.0.0:8080", "lineage.example.com", nil, 200}, // beyond loopback: auth's job, not the Host's
		{":9090", "10.0.0.7:9090", nil, 200},
	} {
		rec := httptest.NewRecorder()
		req := httptest.NewRequest("GET", "/api/lf/v1/node", nil)
		req.Host = tt.host
		Wrap(ok, tt.listen, tt.extra).ServeHTTP(rec, req)
		if rec.Code != tt.want {
			t.Errorf("listen %s Host %q: %d, want %d", tt.listen, tt.host, rec.Code, tt.want)
		}
		if rec.Code == 421 && rec.Body.String() == "secret lineage" {
			t.Errorf("refused request reached the handler")
		}
		h := rec.Header()
		if h.Get("X-Content-Type-Options") != "nosniff" || h.Get("Content-Security-Policy") != DefaultCSP || h.Get("X-Frame-Options") != "DENY" {
			t.Errorf("listen %s Host %q: headers %v", tt.listen, tt.host, h)
		}
	}
	rec := httptest.NewRecorder()
	Wrap(page, "127.0.0.1:1", nil).ServeHTTP(rec, httptest.NewRequest("GET", "http://127.0.0.1/", nil))
	if got := rec.Header().Get("Content-Security-Policy"); got != "default-src 'self'; frame-ancestors 'none'" {
		t.Errorf("a handler's own CSP was not kept: %q", got)
	}
}
