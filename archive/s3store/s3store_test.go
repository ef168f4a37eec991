package s3store

import (
	"bytes"
	"context"
	"errors"
	"io"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
)

// fakeS3 is an in-memory S3 of the calls the store makes, with
// ListObjectsV2 pages of two keys (so paging is exercised).
type fakeS3 struct {
	mu   sync.Mutex
	objs map[string][]byte
	sse  map[string]string
}

func (f *fakeS3) PutObject(_ context.Context, in *s3.PutObjectInput, _ ...func(*s3.Options)) (*s3.PutObjectOutput, error) {
	b, err := io.ReadAll(in.Body)
	if err != nil {
		return nil, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.objs[aws.ToString(in.Key)] = b
	f.sse[aws.ToString(in.Key)] = string(in.ServerSideEncryption) + ":" + aws.ToString(in.SSEKMSKeyId)
	return &s3.PutObjectOutput{}, nil
}

func (f *fakeS3) GetObject(_ context.Context, in *s3.GetObjectInput, _ ...func(*s3.Options)) (*s3.GetObjectOutput, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	b, ok := f.objs[aws.ToString(in.Key)]
	if !ok {
		return nil, &types.NoSuchKey{}
	}
	return &s3.GetObjectOutput{Body: io.NopCloser(bytes.NewReader(b))}, nil
}

func (f *fakeS3) ListObjectsV2(_ context.Context, in *s3.ListObjectsV2Input, _ ...func(*s3.Options)) (*s3.ListObjectsV2Output, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	var keys []string
	after := aws.ToString(in.StartAfter)
	if in.ContinuationToken != nil {
		after = aws.ToString(in.ContinuationToken)
	}
	for k := range f.objs {
		if strings.HasPrefix(k, aws.ToString(in.Prefix)) && k > after {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	out := &s3.ListObjectsV2Output{}
	if len(keys) > 2 {
		keys = keys[:2]
		out.IsTruncated = aws.Bool(true)
		out.NextContinuationToken = aws.String(keys[1])
	}
	for _, k := range keys {
		out.Contents = append(out.Contents, types.Object{Key: aws.String(k)})
	}
	return out, nil
}

func TestStore(t *testing.T) {
	f := &fakeS3{objs: map[string][]byte{}, sse: map[string]string{}}
	s := New(f, "archive", "alias/lineage")
	ctx := context.Background()
	for _, k := range []string{"p/_cuts/s1/3", "p/_cuts/s1/1", "p/_cuts/s1/2", "p/_cuts/s1/5", "p/_cuts/s2/1", "p/events/x.parquet"} {
		if err := s.Put(ctx, k, []byte("v"+k)); err != nil {
			t.Fatal(err)
		}
	}
	keys, err := s.List(ctx, "p/_cuts/s1/", "p/_cuts/s1/1")
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(keys, ","); got != "p/_cuts/s1/2,p/_cuts/s1/3,p/_cuts/s1/5" {
		t.Fatalf("list: %s", got)
	}
	b, err := s.Get(ctx, "p/_cuts/s1/5")
	if err != nil || string(b) != "vp/_cuts/s1/5" {
		t.Fatalf("get: %q %v", b, err)
	}
	if _, err := s.Get(ctx, "nope"); !errors.As(err, new(*types.NoSuchKey)) {
		t.Fatalf("get of a missing key: %v", err)
	}
	if f.sse["p/events/x.parquet"] != "aws:kms:alias/lineage" {
		t.Fatalf("SSE of a put: %q", f.sse["p/events/x.parquet"])
	}
}

func TestParseURL(t *testing.T) {
	for in, want := range map[string]string{
		"s3://bucket":            "bucket|",
		"s3://bucket/":           "bucket|",
		"s3://bucket/lineage":    "bucket|lineage/",
		"s3://my.bucket/a/b/":    "my.bucket|a/b/",
		"s3://Bucket/x":          "error",
		"https://bucket/x":       "error",
		"s3:///x":                "error",
		"s3://bucket/a//b":       "error",
		"s3://bucket/x?versions": "error",
	} {
		b, p, err := ParseURL(in)
		got := b + "|" + p
		if err != nil {
			got = "error"
		}
		if got != want {
			t.Errorf("ParseURL(%q) = %q (%v), want %q", in, got, err, want)
		}
	}
}
