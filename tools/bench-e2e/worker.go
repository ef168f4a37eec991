package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"math"
	"net/http"
	"os"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/kinesis"

	"github.com/lineageflow/lineageflow/testkit/harness"
)

// settle waits until the worker has sealed and acknowledged everything it
// read (outbox written == acked, no change for 2 s) and returns its stats.
func settle(ctx context.Context, p *harness.Proc, timeout time.Duration) (map[string]int64, error) {
	var last map[string]int64
	var stableSince time.Time
	err := harness.Poll(ctx, timeout, 200*time.Millisecond, func() (bool, error) {
		st := p.Stats()
		if st == nil {
			return false, nil
		}
		same := last != nil && st["outbox_written"] == last["outbox_written"] && st["records"] == last["records"]
		last = st
		if !same || st["outbox_written"] != st["outbox_acked"] {
			stableSince = time.Time{}
			return false, nil
		}
		if stableSince.IsZero() {
			stableSince = time.Now()
		}
		return time.Since(stableSince) > 2*time.Second, nil
	}, "every sealed window acknowledged")
	return last, err
}

// cpuSeconds returns the user+system CPU time of a process (Linux /proc).
func cpuSeconds(pid int) float64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return math.NaN()
	}
	s := string(b)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+2:])
	if len(f) < 13 {
		return math.NaN()
	}
	ut, _ := strconv.ParseFloat(f[11], 64)
	st, _ := strconv.ParseFloat(f[12], 64)
	return (ut + st) / 100 // USER_HZ
}

var httpAddr = regexp.MustCompile(`msg="http server listening" addr=(\S+)`)

// scrapeMetrics reads the worker's /metrics (address from its log) and
// returns the unlabelled samples and the sums of labelled ones by name.
func scrapeMetrics(p *harness.Proc) (map[string]float64, error) {
	m := httpAddr.FindStringSubmatch(p.Log())
	if m == nil {
		return nil, errors.New("no http address in the worker's log")
	}
	resp, err := http.Get("http://" + m[1] + "/metrics")
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	out := map[string]float64{}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || line[0] == '#' {
			continue
		}
		f := strings.Fields(line)
		if len(f) < 2 {
			continue
		}
		name, _, _ := strings.Cut(f[0], "{")
		if v, err := strconv.ParseFloat(f[1], 64); err == nil {
			out[name] += v
		}
	}
	return out, sc.Err()
}

// cleanupStream deletes the stream and the lease table of h (frees
// kinesalite's disk between rounds).
func cleanupStream(h *harness.Harness) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_, _ = h.Kinesis().DeleteStream(ctx, &kinesis.DeleteStreamInput{StreamName: aws.String(h.Stream), EnforceConsumerDeletion: aws.Bool(true)})
	_, _ = h.DynamoDB().DeleteTable(ctx, &dynamodb.DeleteTableInput{TableName: aws.String(h.App)})
}
