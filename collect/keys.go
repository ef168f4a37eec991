package collect

import (
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"os"
	"strings"
)

// Key is one API key a producer may send as `Authorization: Bearer <key>`.
// Only its SHA-256 is kept; ID (the first 12 hex digits of that hash)
// labels its counters in /metrics and the logs, never the key itself.
type Key struct {
	ID  string
	sum [32]byte
}

// NewKey makes a Key of secret.
func NewKey(secret string) Key {
	sum := sha256.Sum256([]byte(secret))
	return Key{ID: hex.EncodeToString(sum[:6]), sum: sum}
}

// minKeyLen is the shortest key accepted: a guessable key is no key.
const minKeyLen = 16

// ParseKeys reads keys from a comma- or newline-separated list (the
// -api-keys flag, LINEAGEFLOW_API_KEYS) and a file (-api-keys-file: one
// key a line; blank lines and lines starting with '#' ignored). Several
// keys are valid at once, for rotation.
func ParseKeys(list, file string) ([]Key, error) {
	raw := strings.FieldsFunc(list, func(r rune) bool { return r == ',' || r == '\n' })
	if file != "" {
		b, err := os.ReadFile(file)
		if err != nil {
			return nil, fmt.Errorf("-api-keys-file: %w", err)
		}
		for _, line := range strings.Split(string(b), "\n") {
			if line = strings.TrimSpace(line); line != "" && !strings.HasPrefix(line, "#") {
				raw = append(raw, line)
			}
		}
	}
	var keys []Key
	for i, k := range raw {
		k = strings.TrimSpace(k)
		if len(k) < minKeyLen {
			return nil, fmt.Errorf("API key %d is %d characters long: give at least %d (e.g. openssl rand -hex 32)", i+1, len(k), minKeyLen)
		}
		keys = append(keys, NewKey(k))
	}
	return keys, nil
}

// match returns the key whose secret the request's Authorization header
// carries, comparing hashes in constant time against every key (no early
// exit, so timing tells nothing about which key nearly matched).
func match(keys []Key, header string) (Key, bool) {
	tok, ok := strings.CutPrefix(header, "Bearer ")
	if !ok {
		if tok, ok = strings.CutPrefix(header, "bearer "); !ok {
			return Key{}, false
		}
	}
	sum := sha256.Sum256([]byte(strings.TrimSpace(tok)))
	found := -1
	for i := range keys {
		if subtle.ConstantTimeCompare(sum[:], keys[i].sum[:]) == 1 {
			found = i
		}
	}
	if found < 0 {
		return Key{}, false
	}
	return keys[found], true
}

// ErrOpenWithoutKeys is returned by [CheckListen] for an address beyond
// loopback with no API key.
var ErrOpenWithoutKeys = errors.New("collect: refusing to listen beyond loopback without API keys")

// CheckListen refuses an address that accepts connections from other
// hosts (":8080", "0.0.0.0:8080", a LAN address) when there are no keys,
// unless insecure (the -insecure-no-auth flag) says so explicitly.
func CheckListen(addr string, keys []Key, insecure bool) error {
	if len(keys) > 0 || insecure {
		return nil
	}
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("-http-addr %q: %w", addr, err)
	}
	if host == "localhost" {
		return nil
	}
	if ip := net.ParseIP(host); ip != nil && ip.IsLoopback() {
		return nil
	}
	return fmt.Errorf("%w: -http-addr %q is reachable from other hosts; set API keys (-api-keys-file, or LINEAGEFLOW_API_KEYS), listen on 127.0.0.1, or pass -insecure-no-auth to accept unauthenticated writes", ErrOpenWithoutKeys, addr)
}
