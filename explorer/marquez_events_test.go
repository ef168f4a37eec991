package explorer

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/getkin/kin-openapi/openapi3"

	"github.com/lineageflow/lineageflow/archive"
	"github.com/lineageflow/lineageflow/archive/archivetest"
	"github.com/lineageflow/lineageflow/archive/reader"
	"github.com/lineageflow/lineageflow/internal/gen"
)

// TestMarquezEventsFromArchive: with an event archive, GET
// /api/v1/events/lineage pages the archived events of [after, before)
// newest first, byte for byte as the producers sent them; walking the
// pages by nextBefore gives every event of the range once, and each page
// reads at most MaxDays day partitions. Bad parameters are 400s naming
// the parameter; without an archive the route is 501 naming -archive.
func TestMarquezEventsFromArchive(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	ep := gremlinEndpoint(t)
	c, bucket := archivetest.StandinBucket(ctx, t, "explorer")
	st := reader.Store{S3: c, Loc: archive.Location{Bucket: bucket, Prefix: "lf/"}}
	// Ten days of events; some share one millisecond.
	recs := gen.Generate(gen.Config{Seed: 5, Events: 1200, EventGap: 12 * time.Minute})
	rows, err := archivetest.Rows(recs, 2)
	if err != nil {
		t.Fatal(err)
	}
	objs, err := archivetest.Objects(st.Loc.Prefix, rows, 60)
	if err != nil {
		t.Fatal(err)
	}
	if err := archivetest.Write(ctx, st, objs); err != nil {
		t.Fatal(err)
	}

	// The range: from the third day to the middle of the eighth.
	first := rows[0].EventTime
	for _, r := range rows {
		if r.EventTime.Before(first) {
			first = r.EventTime
		}
	}
	day0 := reader.Days(first, first)[0]
	after, before := day0.AddDate(0, 0, 2), day0.AddDate(0, 0, 7).Add(13*time.Hour)
	want := map[string]time.Time{}
	for _, r := range rows {
		if !r.EventTime.Before(after) && r.EventTime.Before(before) {
			want[r.IdempotencyKey] = r.EventTime
		}
	}

	// The answers' shape is openapi.yaml's (the archive-less 501 is
	// checked by TestOpenAPI).
	doc, err := openapi3.NewLoader().LoadFromFile("openapi.yaml")
	if err != nil {
		t.Fatal(err)
	}
	op := doc.Paths.Find("/api/v1/events/lineage").Get
	schemaOf := func(code int) *openapi3.Schema {
		return op.Responses.Status(code).Value.Content["application/json"].Schema.Value
	}
	conforms := func(code int, body []byte) {
		t.Helper()
		var v any
		if err := json.Unmarshal(body, &v); err != nil {
			t.Fatal(err)
		}
		if err := schemaOf(code).VisitJSON(v); err != nil {
			t.Errorf("%d answer does not match openapi.yaml: %v", code, err)
		}
	}

	const maxDays, limit = 2, 70
	_, hs := newTestServer(t, ep, Config{Archive: &ArchiveConfig{Store: st, MaxDays: maxDays}})
	get := func(q url.Values) (int, []byte, http.Header) {
		resp, err := http.Get(hs.URL + "/api/v1/events/lineage?" + q.Encode())
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, b, resp.Header
	}
	got := map[string]bool{}
	var last time.Time
	cur := before
	pages := 0
	for {
		pages++
		if pages > 100 {
			t.Fatal("more than 100 pages")
		}
		code, body, hdr := get(url.Values{"after": {after.Format(time.RFC3339Nano)}, "before": {cur.Format(time.RFC3339Nano)}, "limit": {strconv.Itoa(limit)}})
		if code != http.StatusOK {
			t.Fatalf("page %d: %d %s", pages, code, body)
		}
		conforms(code, body)
		if n, _ := strconv.Atoi(hdr.Get("X-Lineageflow-Archive-Partitions")); n > maxDays || n < 1 {
			t.Errorf("page %d read %d partitions, want 1..%d", pages, n, maxDays)
		}
		var p struct {
			Events     []json.RawMessage `json:"events"`
			TotalCount int               `json:"totalCount"`
			NextBefore string            `json:"nextBefore"`
		}
		if err := json.Unmarshal(body, &p); err != nil {
			t.Fatalf("page %d: %v", pages, err)
		}
		if p.TotalCount != len(p.Events) {
			t.Errorf("page %d: totalCount %d, %d events", pages, p.TotalCount, len(p.Events))
		}
		times := make([]time.Time, len(p.Events))
		for i, raw := range p.Events {
			sum := sha256.Sum256(raw) // byte for byte: the archive's key
			k := hex.EncodeToString(sum[:])
			at, ok := want[k]
			if !ok {
				t.Fatalf("page %d event %d is not an archived event of the range (or not byte-identical): %.200s", pages, i, raw)
			}
			if got[k] {
				t.Fatalf("page %d event %d was already on an earlier page", pages, i)
			}
			got[k] = true
			if !last.IsZero() && at.After(last) {
				t.Fatalf("page %d event %d at %s after the previous one at %s: not newest first", pages, i, at, last)
			}
			last, times[i] = at, at
			if i >= limit && !at.Equal(times[limit-1]) {
				t.Fatalf("page %d has %d events: beyond limit %d only events of the limit's time may follow", pages, len(p.Events), limit)
			}
		}
		if p.NextBefore == "" {
			break
		}
		nb, err := time.Parse(time.RFC3339Nano, p.NextBefore)
		if err != nil || !nb.Before(cur) {
			t.Fatalf("page %d: nextBefore %q does not move back from %s", pages, p.NextBefore, cur)
		}
		cur = nb
	}
	if len(got) != len(want) {
		t.Fatalf("the pages gave %d events, the range holds %d", len(got), len(want))
	}
	t.Logf("%d events of %d archived in %d pages of at most %d (%d partitions each at most)", len(got), len(rows), pages, limit, maxDays)

	for _, tc := range []struct{ q, want string }{
		{"before=yesterday", `before=\"yesterday\": want an ISO-8601 time`},
		{"after=2026-01-02T00:00:00Z&before=2026-01-01T00:00:00Z", "is not after"},
		{"offset=5", "offset=5"},
		{"sortDirection=asc", `sortDirection=\"asc\"`},
		{"limit=-1", `limit=\"-1\"`},
	} {
		q, _ := url.ParseQuery(tc.q)
		code, body, _ := get(q)
		if code != http.StatusBadRequest || !strings.Contains(string(body), tc.want) {
			t.Errorf("?%s: %d %s, want 400 naming %q", tc.q, code, body, tc.want)
		}
		conforms(http.StatusBadRequest, body)
	}

	_, plain := newTestServer(t, ep, Config{})
	resp, err := http.Get(plain.URL + "/api/v1/events/lineage")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusNotImplemented || !strings.Contains(string(b), "-archive") {
		t.Errorf("without an archive: %d %s, want 501 naming -archive", resp.StatusCode, b)
	}
}
