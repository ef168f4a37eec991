package main

import (
	"context"
	"errors"
	"flag"

	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/lineageflow/lineageflow/archive"
	"github.com/lineageflow/lineageflow/archive/reader"
	"github.com/lineageflow/lineageflow/explorer"
	"github.com/lineageflow/lineageflow/internal/awsconf"
)

// serveArchiveFlags are serve's flags of the event archive (Marquez's
// GET /api/v1/events/lineage).
type serveArchiveFlags struct {
	loc, endpoint, region, accessKey, secretKey *string
	maxDays                                     *int
}

func addServeArchiveFlags(fs *flag.FlagSet) *serveArchiveFlags {
	return &serveArchiveFlags{
		loc:       fs.String("archive", "", "event archive to serve Marquez's GET /api/v1/events/lineage from: s3://bucket/prefix (empty: that route answers 501)"),
		endpoint:  fs.String("archive-endpoint", "", "S3 endpoint URL override for the archive (e.g. http://127.0.0.1:4569; path-style)"),
		maxDays:   fs.Int("archive-max-days", 7, "most day partitions of the archive one events page reads (the bound on a page's cost)"),
		region:    fs.String("region", "", "AWS region: of the Neptune cluster (required with -neptune-iam) and of the archive's bucket (required with -archive)"),
		accessKey: fs.String("access-key-id", "", "static AWS access key id (stand-ins); empty: the SDK default chain"),
		secretKey: fs.String("secret-access-key", "", "static AWS secret access key: set it through the environment (LINEAGEFLOW_SECRET_ACCESS_KEY), never on the command line (a warning says so)"),
	}
}

func (f *serveArchiveFlags) aws() awsconf.Config {
	return awsconf.Config{Region: *f.region, AccessKeyID: *f.accessKey, SecretAccessKey: *f.secretKey}
}

// config checks the flags (no remote call) and returns the archive's
// configuration, nil without -archive.
func (f *serveArchiveFlags) config() (*explorer.ArchiveConfig, error) {
	if *f.loc == "" {
		if *f.endpoint != "" {
			return nil, errors.New("-archive-endpoint without -archive: give the archive's s3://bucket/prefix too")
		}
		return nil, nil
	}
	loc, err := archive.ParseLocation(*f.loc)
	errs := []error{err, reader.CheckEndpoint(*f.endpoint), f.aws().Validate()}
	if *f.maxDays < 1 || *f.maxDays > 366 {
		errs = append(errs, errors.New("-archive-max-days: give 1 to 366 day partitions per page"))
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return &explorer.ArchiveConfig{Store: reader.Store{Loc: loc}, MaxDays: *f.maxDays}, nil
}

func (f *serveArchiveFlags) client(ctx context.Context) (*s3.Client, error) {
	return reader.NewS3Client(ctx, f.aws(), *f.endpoint)
}
