package archive

import (
	"strings"
	"testing"
	"time"
)

func TestParseLocation(t *testing.T) {
	for _, tt := range []struct{ in, bucket, prefix, err string }{
		{in: "s3://b", bucket: "b"},
		{in: "s3://b/", bucket: "b"},
		{in: "s3://b/lineage", bucket: "b", prefix: "lineage/"},
		{in: "s3://b/a/b/", bucket: "b", prefix: "a/b/"},
		{in: "", err: "empty"},
		{in: "https://b/p", err: "scheme must be s3"},
		{in: "s3:///p", err: "no bucket"},
		{in: "s3://b/p?x=1", err: "no query"},
		{in: "s3://b/a//c", err: "empty path segment"},
	} {
		l, err := ParseLocation(tt.in)
		if tt.err != "" {
			if err == nil || !strings.Contains(err.Error(), tt.err) {
				t.Errorf("%q: %v, want an error saying %q", tt.in, err, tt.err)
			}
			continue
		}
		if err != nil || l.Bucket != tt.bucket || l.Prefix != tt.prefix {
			t.Errorf("%q: %+v %v, want bucket %q prefix %q", tt.in, l, err, tt.bucket, tt.prefix)
		}
	}
	l, _ := ParseLocation("s3://b/p")
	day := time.Date(2026, 12, 5, 23, 0, 0, 0, time.UTC)
	if got, key := l.PartitionPrefix(EventsTable, day), ObjectKey(l.Prefix, EventsTable, day, "s", "1"); !strings.HasPrefix(key, got) {
		t.Errorf("partition prefix %q is not the prefix of object key %q", got, key)
	}
}
