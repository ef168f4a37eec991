package main

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
)

// TestCollectRefusesOpenAddressWithoutKeys: `collect` without API keys on
// an address beyond loopback refuses to start (exit status 2) with a
// message naming what to set, before any call to Kinesis; with a key
// file, with -insecure-no-auth, or on loopback it gets as far as Kinesis.
// Bad keys and bad budgets fail the same way.
func TestCollectRefusesOpenAddressWithoutKeys(t *testing.T) {
	var calls atomic.Int64
	kin := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		http.Error(w, `{"__type":"ResourceNotFoundException","message":"no stream"}`, http.StatusBadRequest)
	}))
	defer kin.Close()
	t.Setenv("LINEAGEFLOW_SECRET_ACCESS_KEY", "local")
	t.Setenv("LINEAGEFLOW_API_KEYS", "")
	keyFile := filepath.Join(t.TempDir(), "keys")
	if err := os.WriteFile(keyFile, []byte("# rotated monthly\n0123456789abcdef0123456789abcdef\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	base := []string{"-stream", "s", "-region", "us-east-1", "-kinesis-endpoint", kin.URL, "-access-key-id", "local"}
	for _, tt := range []struct {
		args   []string
		want   string // in the error
		remote bool   // got as far as Kinesis
	}{
		{[]string{"-http-addr", ":0"}, "set API keys (-api-keys-file, or LINEAGEFLOW_API_KEYS), listen on 127.0.0.1, or pass -insecure-no-auth", false},
		{[]string{"-http-addr", "0.0.0.0:0"}, "refusing to listen beyond loopback without API keys", false},
		{[]string{"-http-addr", ":0", "-api-keys-file", filepath.Join(t.TempDir(), "missing")}, "-api-keys-file", false},
		{[]string{"-http-addr", "127.0.0.1:0", "-linger", "5s"}, "-linger 5s", false},
		{[]string{"-http-addr", "127.0.0.1:0", "-max-inflight-bytes", "1000"}, "-max-inflight-bytes 1000", false},
		{[]string{"-http-addr", ":0", "-api-keys-file", keyFile}, "ResourceNotFoundException", true},
		{[]string{"-http-addr", ":0", "-insecure-no-auth"}, "ResourceNotFoundException", true},
		{[]string{"-http-addr", "127.0.0.1:0"}, "ResourceNotFoundException", true},
	} {
		before := calls.Load()
		err := runCollect(context.Background(), append(append([]string{}, base...), tt.args...))
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("collect %v: %v, want %q", tt.args, err, tt.want)
		}
		if remote := calls.Load() > before; remote != tt.remote {
			t.Errorf("collect %v: called Kinesis: %v, want %v", tt.args, remote, tt.remote)
		}
		if !tt.remote && exitCode(err) != 2 {
			t.Errorf("collect %v: exit status %d, want 2", tt.args, exitCode(err))
		}
	}
}
