package archivetest

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/lineageflow/lineageflow/archive/reader"
	"github.com/lineageflow/lineageflow/internal/awsconf"
	"github.com/lineageflow/lineageflow/testkit/testenv"
)

// StandinBucket returns a client of the S3 stand-in (skipping the test
// when it is not running, as testenv does) and a new bucket on it, named
// from name, the process and the time.
func StandinBucket(ctx context.Context, t testing.TB, name string) (*s3.Client, string) {
	t.Helper()
	c, err := reader.NewS3Client(ctx, awsconf.Config{Region: testenv.Region, AccessKeyID: testenv.AccessKeyID,
		SecretAccessKey: testenv.SecretAccessKey}, testenv.S3(t))
	if err != nil {
		t.Fatal(err)
	}
	bucket := fmt.Sprintf("%s-%d-%d", name, os.Getpid(), time.Now().UnixNano())
	if _, err := c.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String(bucket)}); err != nil {
		t.Fatalf("CreateBucket: %v", err)
	}
	return c, bucket
}
