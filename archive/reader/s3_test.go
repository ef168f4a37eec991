package reader

import (
	"github.com/lineageflow/lineageflow/archive"
	"strings"
	"testing"
	"time"
)

func TestDays(t *testing.T) {
	at := func(s string) time.Time {
		v, err := time.Parse(time.RFC3339, s)
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	got := Days(at("2026-02-27T23:00:00+02:00"), at("2026-03-01T00:00:00Z"))
	var s []string
	for _, d := range got {
		s = append(s, d.Format(archive.DateLayout))
	}
	if strings.Join(s, " ") != "2026-02-27 2026-02-28 2026-03-01" {
		t.Errorf("days %v", s)
	}
	if Days(at("2026-03-02T00:00:00Z"), at("2026-03-01T00:00:00Z")) != nil {
		t.Error("days of an empty range")
	}
}
