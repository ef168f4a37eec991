package replay

import (
	"bufio"
	"bytes"
	"encoding/json"
	"os"
	"testing"

	"github.com/lineageflow/lineageflow/lineage"
)

// TestPartitionKeyRealEvents: on the real-event corpus (testdata/real,
// events of Marquez, the OpenLineage clients and integrations), every
// key is the one the OpenLineage Kinesis transport gives
// (client/java/transports-kinesis KinesisTransport.getPartitionKey):
// run.facets.parent.root.job first, then run.facets.parent.job, then the
// event's job, computed here independently of PartitionKey's decoding.
// The corpus's Spark serde event (line 28) has a root parent whose job
// differs from its parent's: it must key by the root.
func TestPartitionKeyRealEvents(t *testing.T) {
	f, err := os.Open("../../testdata/real/events.ndjson")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	type job struct{ Namespace, Name string }
	type ev struct {
		Run *struct {
			Facets *struct {
				Parent *struct {
					Job  *job
					Root *struct{ Job *job }
				}
			}
		}
		Job     *job
		Dataset *job
	}
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 4<<20)
	line, byRoot, byParent := 0, 0, 0
	for sc.Scan() {
		line++
		data := bytes.TrimSpace(sc.Bytes())
		if len(data) == 0 {
			continue
		}
		var e ev
		if err := json.Unmarshal(data, &e); err != nil {
			t.Fatalf("line %d: %v", line, err)
		}
		var want string
		switch {
		case e.Run != nil:
			j := e.Job
			if fs := e.Run.Facets; fs != nil && fs.Parent != nil {
				p := fs.Parent
				switch {
				case p.Root != nil && p.Root.Job != nil:
					j = p.Root.Job
					if p.Job == nil || *p.Job != *j {
						byRoot++
					}
				case p.Job != nil:
					j = p.Job
					byParent++
				}
			}
			want = "run:" + j.Namespace + "/" + j.Name
		case e.Dataset != nil:
			want = "dataset:" + e.Dataset.Namespace + "/" + e.Dataset.Name
		default:
			want = "job:" + e.Job.Namespace + "/" + e.Job.Name
		}
		if got := PartitionKey(data); got != want {
			t.Errorf("line %d: key %q, want %q", line, got, want)
		}
		// The decoder's key (lineage.Event.PartitionKey) agrees, for
		// every event it reads.
		if ev, err := lineage.Decode(data); err == nil {
			if got := ev.PartitionKey(); got != want {
				t.Errorf("line %d: decoded event's key %q, want %q", line, got, want)
			}
		}
		if line == 28 && want != "run:root-namespace/root-job-name" {
			t.Errorf("line 28 (Spark serde event): key %q, want the root parent's job", want)
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if line < 50 || byRoot == 0 || byParent == 0 {
		t.Fatalf("%d events, %d keyed by a root parent, %d by a parent job: the corpus does not exercise the rule", line, byRoot, byParent)
	}
	t.Logf("%d events: %d keyed by a root parent job that differs from the parent's, %d by the parent job", line, byRoot, byParent)
}
