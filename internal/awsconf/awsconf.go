// Package awsconf builds the AWS clients every component shares: region,
// endpoint overrides for the local stand-ins (kinesalite, dynalite) and
// credentials (static keys for the stand-ins, the SDK default chain
// otherwise).
//
// It owns no state and does no I/O beyond what the SDK's default config
// loader does (environment, shared config files, and the credential chain
// lazily on first use).
package awsconf

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/kinesis"
)

// Config says where the AWS services are and how to sign requests.
type Config struct {
	// Region is required (the KCL panics on an empty one and does not read
	// AWS_REGION), e.g. "us-east-1".
	Region string
	// KinesisEndpoint and DynamoDBEndpoint override the services' endpoints,
	// e.g. "http://127.0.0.1:4567" for kinesalite. Empty: the AWS endpoint
	// of Region.
	KinesisEndpoint  string
	DynamoDBEndpoint string
	// AccessKeyID and SecretAccessKey, when both set, are static credentials
	// (the stand-ins accept any). When both empty, the SDK default chain is
	// used (environment, shared files, SSO, web identity, IMDS...).
	AccessKeyID     string
	SecretAccessKey string
	SessionToken    string // optional, with static credentials only
}

// Validate reports what to fix in c, all problems at once.
func (c Config) Validate() error {
	var errs []error
	if strings.TrimSpace(c.Region) == "" {
		errs = append(errs, errors.New("awsconf: region is empty: set it (e.g. us-east-1); the KCL needs it explicitly and does not read AWS_REGION"))
	}
	for _, ep := range []struct{ name, v string }{{"kinesis", c.KinesisEndpoint}, {"dynamodb", c.DynamoDBEndpoint}} {
		if err := checkEndpoint(ep.v); err != nil {
			errs = append(errs, fmt.Errorf("awsconf: %s endpoint %q: %w: give a URL like http://127.0.0.1:4567, or leave it empty for AWS", ep.name, ep.v, err))
		}
	}
	switch {
	case c.AccessKeyID != "" && c.SecretAccessKey == "":
		errs = append(errs, errors.New("awsconf: access key id set without a secret access key: set both for static credentials, or neither to use the AWS default credential chain"))
	case c.AccessKeyID == "" && c.SecretAccessKey != "":
		errs = append(errs, errors.New("awsconf: secret access key set without an access key id: set both for static credentials, or neither to use the AWS default credential chain"))
	case c.AccessKeyID == "" && c.SessionToken != "":
		errs = append(errs, errors.New("awsconf: session token set without static credentials: set the access key id and secret too, or drop the token"))
	}
	return errors.Join(errs...)
}

func checkEndpoint(ep string) error {
	if ep == "" {
		return nil
	}
	u, err := url.Parse(ep)
	if err != nil {
		return err
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return errors.New("scheme must be http or https")
	}
	if u.Host == "" {
		return errors.New("no host")
	}
	return nil
}

// StaticCredentials reports whether c carries its own keys.
func (c Config) StaticCredentials() bool { return c.AccessKeyID != "" }

// AWS loads the shared aws.Config: c's region, c's static credentials if
// any, the SDK defaults for everything else. Endpoints are not part of it:
// apply them per client with [Endpoint] (as [Config.Kinesis] does).
func (c Config) AWS(ctx context.Context) (aws.Config, error) {
	if err := c.Validate(); err != nil {
		return aws.Config{}, err
	}
	opts := []func(*config.LoadOptions) error{config.WithRegion(c.Region)}
	if c.StaticCredentials() {
		opts = append(opts, config.WithCredentialsProvider(
			credentials.NewStaticCredentialsProvider(c.AccessKeyID, c.SecretAccessKey, c.SessionToken)))
	}
	cfg, err := config.LoadDefaultConfig(ctx, opts...)
	if err != nil {
		return aws.Config{}, fmt.Errorf("awsconf: load AWS config: %w", err)
	}
	return cfg, nil
}

// Credentials returns the credentials provider of [Config.AWS], for the
// KCL's NewKinesisClientLibConfigWithCredential.
func (c Config) Credentials(ctx context.Context) (aws.CredentialsProvider, error) {
	cfg, err := c.AWS(ctx)
	if err != nil {
		return nil, err
	}
	return cfg.Credentials, nil
}

// Kinesis returns a Kinesis client for c, on KinesisEndpoint when set.
// optFns are applied after the endpoint.
func (c Config) Kinesis(ctx context.Context, optFns ...func(*kinesis.Options)) (*kinesis.Client, error) {
	cfg, err := c.AWS(ctx)
	if err != nil {
		return nil, err
	}
	fns := append([]func(*kinesis.Options){func(o *kinesis.Options) {
		o.BaseEndpoint = Endpoint(c.KinesisEndpoint)
	}}, optFns...)
	return kinesis.NewFromConfig(cfg, fns...), nil
}

// Endpoint returns the value for a client's Options.BaseEndpoint: nil (the
// AWS endpoint) for "", else &ep. For DynamoDB:
//
//	dynamodb.NewFromConfig(cfg, func(o *dynamodb.Options) { o.BaseEndpoint = awsconf.Endpoint(c.DynamoDBEndpoint) })
func Endpoint(ep string) *string {
	if ep == "" {
		return nil
	}
	return aws.String(ep)
}
