package reader

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/url"
	"sort"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/lineageflow/lineageflow/archive"
	"github.com/lineageflow/lineageflow/internal/awsconf"
)

// Days returns the UTC dates (midnight) from from's date to to's date,
// both included, oldest first; nil when to is before from.
func Days(from, to time.Time) []time.Time {
	d := truncDay(from)
	last := truncDay(to)
	var out []time.Time
	for !d.After(last) {
		out = append(out, d)
		d = d.AddDate(0, 0, 1)
	}
	return out
}

func truncDay(t time.Time) time.Time {
	t = t.UTC()
	return time.Date(t.Year(), t.Month(), t.Day(), 0, 0, 0, 0, time.UTC)
}

// S3API is the part of the S3 API the archive's readers use; *s3.Client
// implements it.
type S3API interface {
	ListObjectsV2(ctx context.Context, in *s3.ListObjectsV2Input, optFns ...func(*s3.Options)) (*s3.ListObjectsV2Output, error)
	GetObject(ctx context.Context, in *s3.GetObjectInput, optFns ...func(*s3.Options)) (*s3.GetObjectOutput, error)
	PutObject(ctx context.Context, in *s3.PutObjectInput, optFns ...func(*s3.Options)) (*s3.PutObjectOutput, error)
}

// NewS3Client returns an S3 client for c; endpoint, when set (the S3
// stand-in, e.g. http://127.0.0.1:4569), overrides AWS's and switches to
// path-style addressing.
func NewS3Client(ctx context.Context, c awsconf.Config, endpoint string) (*s3.Client, error) {
	if err := CheckEndpoint(endpoint); err != nil {
		return nil, err
	}
	cfg, err := c.AWS(ctx)
	if err != nil {
		return nil, err
	}
	return s3.NewFromConfig(cfg, func(o *s3.Options) {
		// Not a log line per GET whose answer carries no checksum
		// header (the stand-in's never do).
		o.DisableLogOutputChecksumValidationSkipped = true
		if endpoint != "" {
			o.BaseEndpoint = aws.String(endpoint)
			o.UsePathStyle = true
		}
	}), nil
}

// CheckEndpoint reports what is wrong with an S3 endpoint override ("" is
// fine: AWS's endpoint of the region).
func CheckEndpoint(ep string) error {
	if ep == "" {
		return nil
	}
	u, err := url.Parse(ep)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("archive endpoint %q: give a URL like http://127.0.0.1:4569, or leave it empty for AWS", ep)
	}
	return nil
}

// Store reads and writes the objects of one archive.
type Store struct {
	S3  S3API
	Loc archive.Location
}

// Object is one listed object.
type Object struct {
	Key  string
	Size int64
}

// List returns the objects of table's partition of day, sorted by key
// (by shard, then by first sequence number). Its cost is that of listing
// one partition: other days are never listed.
func (s Store) List(ctx context.Context, table string, day time.Time) ([]Object, error) {
	prefix := s.Loc.PartitionPrefix(table, day)
	var out []Object
	p := s3.NewListObjectsV2Paginator(s.S3, &s3.ListObjectsV2Input{Bucket: aws.String(s.Loc.Bucket), Prefix: aws.String(prefix)})
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if err != nil {
			return nil, fmt.Errorf("archive: list s3://%s/%s: %w", s.Loc.Bucket, prefix, err)
		}
		for _, o := range page.Contents {
			k := aws.ToString(o.Key)
			if !strings.HasSuffix(k, ".parquet") {
				continue
			}
			out = append(out, Object{Key: k, Size: aws.ToInt64(o.Size)})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Key < out[j].Key })
	return out, nil
}

// Get returns the bytes of one object.
func (s Store) Get(ctx context.Context, key string) ([]byte, error) {
	o, err := s.S3.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(s.Loc.Bucket), Key: aws.String(key)})
	if err != nil {
		return nil, fmt.Errorf("archive: get s3://%s/%s: %w", s.Loc.Bucket, key, err)
	}
	defer o.Body.Close()
	b, err := io.ReadAll(o.Body)
	if err != nil {
		return nil, fmt.Errorf("archive: read s3://%s/%s: %w", s.Loc.Bucket, key, err)
	}
	return b, nil
}

// Put writes one object (replacing any object of that key).
func (s Store) Put(ctx context.Context, key string, body []byte) error {
	_, err := s.S3.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(s.Loc.Bucket), Key: aws.String(key),
		Body: bytes.NewReader(body), ContentLength: aws.Int64(int64(len(body)))})
	if err != nil {
		return fmt.Errorf("archive: put s3://%s/%s: %w", s.Loc.Bucket, key, err)
	}
	return nil
}

// ReadEventsObject reads the rows of one object of the events table.
func (s Store) ReadEventsObject(ctx context.Context, key string) ([]archive.Row, error) {
	b, err := s.Get(ctx, key)
	if err != nil {
		return nil, err
	}
	rows, err := archive.ReadEvents(bytes.NewReader(b), int64(len(b)))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", key, err)
	}
	return rows, nil
}

// ScanStats counts what a scan read.
type ScanStats struct {
	Partitions, Objects int
	Bytes               int64
	Rows                int // rows read (before the time filter)
}

// EventsIn calls fn with the rows of every object of the partitions of
// the days [from, to] touches whose event time is in [from, to), one
// object at a time, in key order (day, shard, first sequence). Only those
// partitions are listed and read.
func (s Store) EventsIn(ctx context.Context, from, to time.Time, fn func(archive.Row) error) (ScanStats, error) {
	var st ScanStats
	if !to.After(from) {
		return st, nil
	}
	for _, day := range Days(from, to.Add(-time.Millisecond)) {
		objs, err := s.List(ctx, archive.EventsTable, day)
		if err != nil {
			return st, err
		}
		st.Partitions++
		for _, o := range objs {
			rows, err := s.ReadEventsObject(ctx, o.Key)
			if err != nil {
				return st, err
			}
			st.Objects++
			st.Bytes += o.Size
			st.Rows += len(rows)
			for _, r := range rows {
				if r.EventTime.Before(from) || !r.EventTime.Before(to) {
					continue
				}
				if err := fn(r); err != nil {
					return st, err
				}
			}
		}
	}
	return st, nil
}
