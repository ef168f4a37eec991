// Package webguard holds what every HTTP server of lineageflow puts in
// front of its handler (issue 26, exposure): security headers on every
// answer, and on a loopback listener a Host allow-list that refuses the
// requests of a DNS-rebinding page (a hostile site whose name now points at
// 127.0.0.1: the browser sends its own name as Host).
package webguard

import (
	"net"
	"net/http"
	"strings"
)

// DefaultCSP is the Content-Security-Policy of an answer whose handler set
// none (API JSON, metrics, errors): nothing may load, nothing may frame it.
const DefaultCSP = "default-src 'none'; frame-ancestors 'none'"

// IsLoopback reports whether a listen address (host:port) is reachable from
// this machine only: 127.0.0.0/8, ::1 or localhost. An empty host
// (":8080") is every interface: not loopback.
func IsLoopback(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// Wrap returns h behind the guard: every answer carries
// X-Content-Type-Options: nosniff, X-Frame-Options: DENY and, unless the
// handler sets its own, [DefaultCSP]. When listenAddr is a loopback
// address, a request whose Host is not localhost, a loopback IP or one of
// extraHosts (names without port, case-insensitive) is refused with 421
// and never reaches h.
func Wrap(h http.Handler, listenAddr string, extraHosts []string) http.Handler {
	check := IsLoopback(listenAddr)
	allowed := map[string]bool{"localhost": true}
	for _, x := range extraHosts {
		if x = strings.TrimSpace(x); x != "" {
			allowed[strings.ToLower(x)] = true
		}
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hd := w.Header()
		hd.Set("X-Content-Type-Options", "nosniff")
		hd.Set("X-Frame-Options", "DENY")
		hd.Set("Content-Security-Policy", DefaultCSP) // a handler may replace it
		if check && !hostAllowed(r.Host, allowed) {
			hd.Set("Content-Type", "text/plain; charset=utf-8")
			w.WriteHeader(http.StatusMisdirectedRequest)
			_, _ = w.Write([]byte("unknown Host header: this server listens on loopback and answers only localhost, a loopback IP or its -allowed-hosts (DNS rebinding protection)\n"))
			return
		}
		h.ServeHTTP(w, r)
	})
}

func hostAllowed(hostport string, allowed map[string]bool) bool {
	host := hostport
	if h, _, err := net.SplitHostPort(hostport); err == nil {
		host = h
	}
	host = strings.ToLower(strings.TrimSuffix(strings.TrimPrefix(host, "["), "]"))
	if allowed[host] {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
