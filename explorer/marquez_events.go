package explorer

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/lineageflow/lineageflow/archive/reader"
)

// ArchiveConfig is the event archive `serve -archive` reads Marquez's
// GET /api/v1/events/lineage from.
type ArchiveConfig struct {
	Store reader.Store
	// MaxDays is the most day partitions one page reads (default 7): the
	// bound on a page's cost, whatever range it asks.
	MaxDays int
	// Timeout bounds the reads of one page (default 30 s).
	Timeout time.Duration
}

// timeParam reads an ISO-8601 time parameter (def when absent).
func timeParam(r *http.Request, name string, def time.Time) (time.Time, error) {
	v := r.URL.Query().Get(name)
	if v == "" {
		return def, nil
	}
	t, err := time.Parse(time.RFC3339Nano, v)
	if err != nil {
		return time.Time{}, badRequest("%s=%s: want an ISO-8601 time such as 2026-01-02T15:04:05Z", name, quoteShort(v))
	}
	return t.UTC(), nil
}

// mqLineageEvents serves Marquez's GET /api/v1/events/lineage from the
// event archive: the raw events of [after, before), newest first, limit
// per page (a page ends on a whole event time), reading at most
// ArchiveConfig.MaxDays day partitions. The answer is Marquez's
// {"events": [...], "totalCount": n} where totalCount is the number of
// events of this page (counting the whole range would read all of it),
// plus "nextBefore", the before of the next (older) page, when there may
// be one.
func (s *Server) mqLineageEvents(w http.ResponseWriter, r *http.Request) {
	ac := s.cfg.Archive
	limit, offset, err := page(r)
	if err == nil && offset != 0 {
		err = badRequest("offset=%d: the archive is paged by time: ask the next page with before=<nextBefore of this one>", offset)
	}
	var before, after time.Time
	if err == nil {
		before, err = timeParam(r, "before", time.Now().UTC())
	}
	if err == nil {
		after, err = timeParam(r, "after", time.Unix(0, 0).UTC())
	}
	if err == nil {
		if d := r.URL.Query().Get("sortDirection"); d != "" && d != "desc" {
			err = badRequest("sortDirection=%s: the archive is served newest first only (desc)", quoteShort(d))
		}
	}
	if err == nil && !before.After(after) {
		err = badRequest("before=%s is not after after=%s", before.Format(time.RFC3339Nano), after.Format(time.RFC3339Nano))
	}
	if err != nil {
		s.fail(w, r, err)
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), ac.Timeout)
	defer cancel()
	p, err := ac.Store.PageDesc(ctx, after, before, limit, ac.MaxDays)
	w.Header().Set("X-Lineageflow-Archive-Partitions", strconv.Itoa(p.Scanned.Partitions))
	if err != nil {
		s.log.Warn("event archive read failed", "route", "GET /api/v1/events/lineage", "err", err)
		writeError(w, http.StatusServiceUnavailable, "the event archive did not answer: try again later", "archive_unavailable")
		return
	}
	// The events as the producers sent them, byte for byte (json.Marshal
	// would re-escape a RawMessage's <, > and &).
	var b bytes.Buffer
	b.WriteString(`{"events":[`)
	n := 0
	for _, row := range p.Rows {
		if !json.Valid(row.Event) {
			continue
		}
		if n > 0 {
			b.WriteByte(',')
		}
		b.Write(bytes.TrimSpace(row.Event))
		n++
	}
	fmt.Fprintf(&b, `],"totalCount":%d`, n)
	if p.More {
		fmt.Fprintf(&b, `,"nextBefore":%q`, p.NextBefore.UTC().Format("2006-01-02T15:04:05.000Z"))
	}
	b.WriteString("}\n")
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(b.Bytes())
}
