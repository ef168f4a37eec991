package main

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os/exec"
	"regexp"
	"sort"
	"strings"
	"time"
)

// A component of the worker's CPU, recognised by the source file (or
// function) of a stack frame.
type component struct {
	name string
	re   *regexp.Regexp
}

// tier1: the frame nearest the leaf that matches one of these names the
// sample's component (so malloc, memmove, hashing called by the decoder are
// the decoder's). The order only matters for a frame matching two.
var tier1 = []component{
	{"sink", regexp.MustCompile(`lineageflow/lineageflow/sink\.|^main\.`)},
	{"barrier+outbox", regexp.MustCompile(`/processor/(barrier|outbox|drain|resume)\.go|lineageflow/lineageflow/checkpoint\.`)},
	{"dedup", regexp.MustCompile(`/processor/(dedup|fptable|shared)\.go`)},
	{"runs", regexp.MustCompile(`/processor/(runs|parents|handoff)\.go`)},
	{"model (run vertices, facets, columns, props)", regexp.MustCompile(`/processor/(runvertex|columns|alias|ids)\.go|/lineage/(props|facetprops|columns|graph|symlinks|lifecycle|ids|compact)\.go`)},
	{"window", regexp.MustCompile(`/processor/windows\.go|lineageflow/lineageflow/window\.`)},
	{"decode", regexp.MustCompile(`/lineage/(decode|decode_scan|event|facets|errors)\.go`)},
	{"processor (other)", regexp.MustCompile(`lineageflow/lineageflow/processor\.`)},
	{"de-aggregation", regexp.MustCompile(`lineageflow/internal/kpl\.|/source/deagg[a-z_]*\.go|kinesis-aggregation`)},
	{"GetRecords decoding (ours, source/getrecords*.go, cbor.go)", regexp.MustCompile(`/source/(getrecords[a-z_]*|cbor)\.go`)},
	{"source (KCL adapter, leases)", regexp.MustCompile(`lineageflow/lineageflow/source\.`)},
	{"SDK (Kinesis, DynamoDB)", regexp.MustCompile(`aws-sdk-go-v2|smithy-go`)},
	{"KCL", regexp.MustCompile(`vmware-go-kcl`)},
}

// tier2: samples without a tier-1 frame.
var tier2 = []component{
	{"GC", regexp.MustCompile(`^runtime\.(gcBgMarkWorker|bgsweep|bgscavenge|gcStart|gcMarkDone|markroot)`)},
	{"Pebble (background)", regexp.MustCompile(`cockroachdb/pebble`)},
	{"net, HTTP", regexp.MustCompile(`/src/net/|/src/crypto/tls/|^net\.|^net/http`)},
}

type share struct {
	name string
	d    time.Duration
	frac float64
}

// components reads a CPU profile (go tool pprof -traces -lines) and returns
// the share of each component, largest first.
func components(ctx context.Context, bin, profile string) ([]share, error) {
	out, err := exec.CommandContext(ctx, "go", "tool", "pprof", "-traces", "-lines", bin, profile).Output()
	if err != nil {
		return nil, fmt.Errorf("pprof -traces %s: %w", profile, err)
	}
	return classify(out)
}

func classify(traces []byte) ([]share, error) {
	by := map[string]time.Duration{}
	var total time.Duration
	var cur time.Duration
	var frames []string
	flush := func() {
		if cur > 0 {
			by[classifyStack(frames)] += cur
			total += cur
		}
		cur, frames = 0, frames[:0]
	}
	sc := bufio.NewScanner(bytes.NewReader(traces))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	inTraces := false
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "-----------+") {
			flush()
			inTraces = true
			continue
		}
		if !inTraces || strings.TrimSpace(line) == "" {
			continue
		}
		if strings.TrimSpace(line[:min(11, len(line))]) != "" {
			// "      10ms   frame": a new sample's value and its leaf.
			f := strings.Fields(line)
			if len(f) < 2 || strings.HasSuffix(f[0], ":") {
				continue // a pprof label line ("pebble:  wal-sync")
			}
			d, err := time.ParseDuration(f[0])
			if err != nil {
				return nil, fmt.Errorf("pprof -traces: value %q: %w", f[0], err)
			}
			flush()
			cur = d
			frames = append(frames, strings.Join(f[1:], " "))
			continue
		}
		frames = append(frames, strings.TrimSpace(line))
	}
	flush()
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if total == 0 {
		return nil, fmt.Errorf("pprof -traces: no samples")
	}
	out := make([]share, 0, len(by))
	for n, d := range by {
		out = append(out, share{n, d, float64(d) / float64(total)})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].d > out[j].d })
	return out, nil
}

func classifyStack(frames []string) string {
	for _, f := range frames {
		for _, c := range tier1 {
			if c.re.MatchString(f) {
				return c.name
			}
		}
	}
	for _, c := range tier2 {
		for _, f := range frames {
			if c.re.MatchString(f) {
				return c.name
			}
		}
	}
	return "runtime, other"
}

func formatShares(ss []share) string {
	parts := make([]string, len(ss))
	for i, s := range ss {
		parts[i] = fmt.Sprintf("%s %.1f%%", s.name, 100*s.frac)
	}
	return strings.Join(parts, ", ")
}
