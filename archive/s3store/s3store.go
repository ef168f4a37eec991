// Package s3store is the archive's object store on S3 (or an S3 API
// stand-in): the processor.ArchiveStore the worker writes its archive
// through. It is the only part of the archive that links the AWS SDK.
package s3store

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"

	"github.com/lineageflow/lineageflow/archive"
	"github.com/lineageflow/lineageflow/archive/reader"
	"github.com/lineageflow/lineageflow/internal/awsconf"
)

// API is what the store needs of an S3 client (*s3.Client has it).
type API interface {
	PutObject(ctx context.Context, in *s3.PutObjectInput, optFns ...func(*s3.Options)) (*s3.PutObjectOutput, error)
	GetObject(ctx context.Context, in *s3.GetObjectInput, optFns ...func(*s3.Options)) (*s3.GetObjectOutput, error)
	ListObjectsV2(ctx context.Context, in *s3.ListObjectsV2Input, optFns ...func(*s3.Options)) (*s3.ListObjectsV2Output, error)
}

// Store writes and reads the objects of one bucket.
type Store struct {
	api    API
	bucket string
	kmsKey string
}

// New returns a store over api in bucket; kmsKey, when set, encrypts every
// object with SSE-KMS under that key (id, ARN or alias).
func New(api API, bucket, kmsKey string) *Store {
	return &Store{api: api, bucket: bucket, kmsKey: kmsKey}
}

// Open returns a store for the bucket of an s3:// URL on the S3 of aws, at
// endpoint when set (a stand-in: path-style addressing).
func Open(ctx context.Context, c awsconf.Config, endpoint, bucket, kmsKey string) (*Store, error) {
	cl, err := reader.NewS3Client(ctx, c, endpoint)
	if err != nil {
		return nil, err
	}
	return New(cl, bucket, kmsKey), nil
}

// ParseURL splits s3://bucket/prefix into the bucket and the key prefix
// ("" or ending in "/"): archive.ParseLocation, with the bucket's name
// checked as S3 names buckets.
func ParseURL(s string) (bucket, prefix string, err error) {
	l, err := archive.ParseLocation(s)
	if err != nil {
		return "", "", err
	}
	if !validBucket(l.Bucket) {
		return "", "", fmt.Errorf("bucket %q: 3 to 63 lower-case letters, digits, '.' and '-'", l.Bucket)
	}
	return l.Bucket, l.Prefix, nil
}

func validBucket(b string) bool {
	if len(b) < 3 || len(b) > 63 {
		return false
	}
	for i := 0; i < len(b); i++ {
		c := b[i]
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '.' || c == '-') {
			return false
		}
	}
	return true
}

// Put writes body under key (a whole object: replaced if it exists).
func (s *Store) Put(ctx context.Context, key string, body []byte) error {
	in := &s3.PutObjectInput{Bucket: aws.String(s.bucket), Key: aws.String(key),
		Body: strings.NewReader(string(body)), ContentLength: aws.Int64(int64(len(body)))}
	if strings.HasSuffix(key, ".parquet") {
		in.ContentType = aws.String("application/vnd.apache.parquet")
	} else {
		in.ContentType = aws.String("application/json")
	}
	if s.kmsKey != "" {
		in.ServerSideEncryption = types.ServerSideEncryptionAwsKms
		in.SSEKMSKeyId = aws.String(s.kmsKey)
	}
	if _, err := s.api.PutObject(ctx, in); err != nil {
		return fmt.Errorf("s3 put s3://%s/%s: %w", s.bucket, key, err)
	}
	return nil
}

// Get returns the object under key.
func (s *Store) Get(ctx context.Context, key string) ([]byte, error) {
	out, err := s.api.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(s.bucket), Key: aws.String(key)})
	if err != nil {
		return nil, fmt.Errorf("s3 get s3://%s/%s: %w", s.bucket, key, err)
	}
	defer out.Body.Close()
	b, err := io.ReadAll(out.Body)
	if err != nil {
		return nil, fmt.Errorf("s3 get s3://%s/%s: %w", s.bucket, key, err)
	}
	return b, nil
}

// List returns, in key order, every key under prefix after startAfter.
func (s *Store) List(ctx context.Context, prefix, startAfter string) ([]string, error) {
	in := &s3.ListObjectsV2Input{Bucket: aws.String(s.bucket), Prefix: aws.String(prefix)}
	if startAfter != "" {
		in.StartAfter = aws.String(startAfter)
	}
	var keys []string
	for {
		out, err := s.api.ListObjectsV2(ctx, in)
		if err != nil {
			return nil, fmt.Errorf("s3 list s3://%s/%s: %w", s.bucket, prefix, err)
		}
		for _, o := range out.Contents {
			keys = append(keys, aws.ToString(o.Key))
		}
		if !aws.ToBool(out.IsTruncated) || out.NextContinuationToken == nil {
			return keys, nil
		}
		in.ContinuationToken = out.NextContinuationToken
	}
}
