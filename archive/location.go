package archive

import (
	"errors"
	"fmt"
	"net/url"
	"strings"
	"time"
)

// Location is where an archive lives: s3://Bucket/Prefix. Prefix is "" or
// ends with "/"; the tables are Prefix+"events/" and Prefix+"dead_letters/".
type Location struct {
	Bucket string
	Prefix string
}

// ParseLocation reads "s3://bucket" or "s3://bucket/some/prefix" (a
// trailing "/" is added to the prefix). It names what is wrong in u.
func ParseLocation(u string) (Location, error) {
	p, err := url.Parse(u)
	switch {
	case u == "":
		return Location{}, errors.New("archive location is empty: give s3://bucket/prefix")
	case err != nil:
		return Location{}, fmt.Errorf("archive location %q: %w", u, err)
	case p.Scheme != "s3":
		return Location{}, fmt.Errorf("archive location %q: scheme must be s3 (s3://bucket/prefix)", u)
	case p.Host == "":
		return Location{}, fmt.Errorf("archive location %q: no bucket (s3://bucket/prefix)", u)
	case p.RawQuery != "" || p.Fragment != "" || p.User != nil:
		return Location{}, fmt.Errorf("archive location %q: no query, fragment or user info allowed", u)
	}
	prefix := strings.TrimPrefix(p.Path, "/")
	if prefix != "" && !strings.HasSuffix(prefix, "/") {
		prefix += "/"
	}
	if strings.Contains(prefix, "//") {
		return Location{}, fmt.Errorf("archive location %q: empty path segment in the prefix", u)
	}
	return Location{Bucket: p.Host, Prefix: prefix}, nil
}

// String is the s3:// URL of l.
func (l Location) String() string { return "s3://" + l.Bucket + "/" + l.Prefix }

// PartitionPrefix is the key prefix of one day's partition of table.
func (l Location) PartitionPrefix(table string, day time.Time) string {
	return fmt.Sprintf("%s%s/event_date=%s/", l.Prefix, table, day.UTC().Format(DateLayout))
}

// DateLayout is the format of the event_date partition values.
const DateLayout = "2006-01-02"
