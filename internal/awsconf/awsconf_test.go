package awsconf

import (
	"context"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/kinesis"

	"github.com/lineageflow/lineageflow/testkit/testenv"
)

func TestValidate(t *testing.T) {
	ok := Config{Region: "us-east-1"}
	tests := []struct {
		name string
		c    Config
		want string // substring of the error; "" = valid
	}{
		{"default chain", ok, ""},
		{"stand-ins", Config{Region: "us-east-1", KinesisEndpoint: "http://127.0.0.1:4567", DynamoDBEndpoint: "https://localhost:8000", AccessKeyID: "a", SecretAccessKey: "b"}, ""},
		{"no region", Config{}, "region is empty"},
		{"endpoint without scheme", Config{Region: "r", KinesisEndpoint: "127.0.0.1:4567"}, "kinesis endpoint"},
		{"endpoint without host", Config{Region: "r", DynamoDBEndpoint: "http://"}, "dynamodb endpoint"},
		{"key without secret", Config{Region: "r", AccessKeyID: "a"}, "without a secret"},
		{"secret without key", Config{Region: "r", SecretAccessKey: "b"}, "without an access key id"},
		{"token alone", Config{Region: "r", SessionToken: "t"}, "session token"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.c.Validate()
			if tt.want == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("got %v, want an error about %q", err, tt.want)
			}
		})
	}
	// All problems are reported at once.
	err := Config{KinesisEndpoint: "x", AccessKeyID: "a"}.Validate()
	if n := strings.Count(err.Error(), "awsconf:"); n != 3 {
		t.Fatalf("%d problems reported, want 3: %v", n, err)
	}
}

func TestStaticCredentials(t *testing.T) {
	c := Config{Region: "eu-west-1", AccessKeyID: "AK", SecretAccessKey: "SK", KinesisEndpoint: "http://127.0.0.1:1"}
	cfg, err := c.AWS(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Region != "eu-west-1" {
		t.Fatalf("region %q", cfg.Region)
	}
	creds, err := cfg.Credentials.Retrieve(context.Background())
	if err != nil || creds.AccessKeyID != "AK" || creds.SecretAccessKey != "SK" {
		t.Fatalf("credentials %+v, %v", creds, err)
	}
	kc, err := c.Kinesis(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if got := kc.Options().BaseEndpoint; got == nil || *got != "http://127.0.0.1:1" {
		t.Fatalf("BaseEndpoint %v", got)
	}
	if _, err := (Config{}).Kinesis(context.Background()); err == nil {
		t.Fatal("invalid config built a client")
	}
	if Endpoint("") != nil {
		t.Fatal("empty endpoint must be nil")
	}
}

// TestKinesisStandin calls kinesalite through the client.
func TestKinesisStandin(t *testing.T) {
	ep := testenv.Kinesis(t)
	c := Config{Region: testenv.Region, KinesisEndpoint: ep, AccessKeyID: testenv.AccessKeyID, SecretAccessKey: testenv.SecretAccessKey}
	kc, err := c.Kinesis(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := kc.ListStreams(context.Background(), &kinesis.ListStreamsInput{}); err != nil {
		t.Fatalf("ListStreams on %s: %v", ep, err)
	}
}
