package testenv_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/lineageflow/lineageflow/testkit/testenv"
)

// TestStandinS3PutListGet drives the S3 stand-in (moto) with the AWS SDK the
// way the event archive does: path-style addressing, CreateBucket, PutObject
// of binary bytes under Hive-style keys, ListObjectsV2 by prefix with a
// delimiter and pagination, GetObject byte for byte, and an overwrite of
// the same key that replaces the object (no second one).
func TestStandinS3PutListGet(t *testing.T) {
	endpoint := testenv.S3(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c := s3.New(s3.Options{
		Region:       testenv.Region,
		BaseEndpoint: aws.String(endpoint),
		UsePathStyle: true,
		Credentials:  credentials.NewStaticCredentialsProvider(testenv.AccessKeyID, testenv.SecretAccessKey, ""),
	})
	bucket := fmt.Sprintf("testenv-%d-%d", os.Getpid(), time.Now().UnixNano())
	if _, err := c.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String(bucket)}); err != nil {
		t.Fatalf("CreateBucket: %v", err)
	}
	body := func(i int) []byte { return append([]byte{0, 0xff, byte(i)}, bytes.Repeat([]byte("PAR1"), 100+i)...) }
	keys := []string{
		"a/events/event_date=2026-01-01/shard-0.parquet",
		"a/events/event_date=2026-01-01/shard-1.parquet",
		"a/events/event_date=2026-01-02/shard-0.parquet",
		"a/dead_letters/event_date=2026-01-01/shard-0.parquet",
	}
	for i, k := range keys {
		if _, err := c.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(bucket), Key: aws.String(k), Body: bytes.NewReader(body(i))}); err != nil {
			t.Fatalf("PutObject %s: %v", k, err)
		}
	}
	// The same key again: replaced, not added.
	if _, err := c.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(bucket), Key: aws.String(keys[0]), Body: bytes.NewReader(body(0))}); err != nil {
		t.Fatalf("PutObject again: %v", err)
	}

	// Partitions of the events table: common prefixes under a delimiter.
	out, err := c.ListObjectsV2(ctx, &s3.ListObjectsV2Input{Bucket: aws.String(bucket), Prefix: aws.String("a/events/"), Delimiter: aws.String("/")})
	if err != nil {
		t.Fatalf("ListObjectsV2: %v", err)
	}
	var parts []string
	for _, p := range out.CommonPrefixes {
		parts = append(parts, aws.ToString(p.Prefix))
	}
	if fmt.Sprint(parts) != "[a/events/event_date=2026-01-01/ a/events/event_date=2026-01-02/]" {
		t.Fatalf("partitions: %v", parts)
	}

	// Every object under the prefix, one per page.
	var got []string
	p := s3.NewListObjectsV2Paginator(c, &s3.ListObjectsV2Input{Bucket: aws.String(bucket), Prefix: aws.String("a/events/"), MaxKeys: aws.Int32(1)})
	pages := 0
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if err != nil {
			t.Fatalf("list page: %v", err)
		}
		pages++
		for _, o := range page.Contents {
			got = append(got, aws.ToString(o.Key))
			if aws.ToInt64(o.Size) <= 0 {
				t.Errorf("%s: size %d", aws.ToString(o.Key), aws.ToInt64(o.Size))
			}
		}
	}
	if fmt.Sprint(got) != fmt.Sprint(keys[:3]) || pages < 3 {
		t.Fatalf("listed %v in %d pages, want %v in 3", got, pages, keys[:3])
	}

	for i, k := range keys {
		o, err := c.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(bucket), Key: aws.String(k)})
		if err != nil {
			t.Fatalf("GetObject %s: %v", k, err)
		}
		b, err := io.ReadAll(o.Body)
		o.Body.Close()
		if err != nil || !bytes.Equal(b, body(i)) {
			t.Fatalf("GetObject %s: %d bytes (err %v), want %d bytes as put", k, len(b), err, len(body(i)))
		}
	}
}
