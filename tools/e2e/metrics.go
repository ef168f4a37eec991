package main

import (
	"bufio"
	"context"
	"fmt"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// requiredMetrics are the series a worker must export (issue "Run it in
// production", point 1).
var requiredMetrics = []string{
	"lineage_records_read_total", "lineage_events_decoded_total", "lineage_duplicates_detected_total",
	"lineage_invalid_records_total", "lineage_late_records_total", "lineage_windows_sealed_total",
	"lineage_edges_emitted_total", "lineage_graph_writes_total", "lineage_write_reduction_ratio",
	"lineage_sink_batch_duration_seconds", "lineage_sink_retries_total", "lineage_outbox_depth",
	"lineage_backpressured", "lineage_barrier_duration_seconds", "lineage_shard_millis_behind_latest",
	"lineage_shard_checkpoint_age_seconds",
}

var listenRe = regexp.MustCompile(`msg="http server listening" addr=(\S+)`)

// checkMetrics scrapes /metrics of every running worker while the graph is
// complete and checks the counters against what the generator injected:
// every record read once, duplicates detected = the producer retries,
// invalid records = the malformed ones (no worker failed over, so each
// record was processed exactly once).
func checkMetrics(ctx context.Context, s *state) error {
	sum := map[string]float64{}
	seen := map[string]bool{}
	for _, p := range s.procs {
		m := listenRe.FindStringSubmatch(p.Log())
		if m == nil {
			return fmt.Errorf("worker %s logged no http listen address", p.Spec.ID)
		}
		series, err := scrape(ctx, "http://"+m[1]+"/metrics")
		if err != nil {
			return fmt.Errorf("scrape %s: %w", p.Spec.ID, err)
		}
		for name, v := range series {
			seen[name] = true
			sum[name] += v
		}
		for _, path := range []string{"/healthz", "/readyz"} {
			if code, err := get(ctx, "http://"+m[1]+path); err != nil || code != http.StatusOK {
				return fmt.Errorf("%s %s: status %d, err %w", p.Spec.ID, path, code, err)
			}
		}
	}
	var missing []string
	for _, name := range requiredMetrics {
		if !seen[name] {
			missing = append(missing, name)
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("metrics not exported: %s", strings.Join(missing, ", "))
	}
	checks := []struct {
		name string
		want int
	}{
		{"lineage_records_read_total", s.records},
		{"lineage_duplicates_detected_total", s.want.Duplicates},
		{"lineage_invalid_records_total", s.want.Invalid},
	}
	for _, c := range checks {
		if int(sum[c.name]) != c.want {
			return fmt.Errorf("%s = %v summed over workers, want %d", c.name, sum[c.name], c.want)
		}
	}
	s.h.Logf("metrics: records=%v duplicates=%v invalid=%v edges_emitted=%v write_reduction=%v",
		sum["lineage_records_read_total"], sum["lineage_duplicates_detected_total"],
		sum["lineage_invalid_records_total"], sum["lineage_edges_emitted_total"], sum["lineage_write_reduction_ratio"])
	return nil
}

// scrape returns the sum of every sample of each metric family (labels
// summed away; histogram families by their _count).
func scrape(ctx context.Context, url string) (map[string]float64, error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	out := map[string]float64{}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		name, rest, _ := strings.Cut(line, " ")
		if i := strings.IndexByte(name, '{'); i >= 0 {
			name = name[:i]
			if j := strings.LastIndexByte(line, '}'); j >= 0 {
				rest = strings.TrimSpace(line[j+1:])
			}
		}
		v, err := strconv.ParseFloat(strings.Fields(rest)[0], 64)
		if err != nil {
			continue
		}
		switch {
		case strings.HasSuffix(name, "_bucket"), strings.HasSuffix(name, "_sum"):
			continue
		case strings.HasSuffix(name, "_count"):
			name = strings.TrimSuffix(name, "_count")
		}
		out[name] += v
	}
	return out, sc.Err()
}

func get(ctx context.Context, url string) (int, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return 0, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, err
	}
	resp.Body.Close()
	return resp.StatusCode, nil
}
