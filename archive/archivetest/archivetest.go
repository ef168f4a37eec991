// Package archivetest fills an event archive for tests and benchmarks the
// way the archive sink does: each unique valid record of a generated
// workload becomes one [archive.Row] (columns extracted by the worker's own
// decoder), on a shard chosen by its partition key, cut into objects per
// (event date, shard) under [archive.ObjectKey].
package archivetest

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"hash/fnv"
	"math/big"
	"sort"
	"time"

	"github.com/lineageflow/lineageflow/archive"
	"github.com/lineageflow/lineageflow/archive/reader"
	"github.com/lineageflow/lineageflow/internal/gen"
	"github.com/lineageflow/lineageflow/lineage"
)

// Unique returns the records of recs that the archive holds: valid
// (decodable) and first of their payload (a producer retry's copy is not
// archived again).
func Unique(recs []gen.Record) []gen.Record {
	seen := map[[32]byte]bool{}
	var out []gen.Record
	for _, r := range recs {
		if r.Malformed != "" {
			continue
		}
		if _, err := lineage.Decode(r.Data); err != nil {
			continue
		}
		k := sha256.Sum256(r.Data)
		if seen[k] {
			continue
		}
		seen[k] = true
		out = append(out, r)
	}
	return out
}

// Rows returns the archive rows of the unique valid records of recs, as a
// stream of shards shards would give them (shard by FNV of the partition
// key; sequence numbers increasing per shard; arrival one second after
// the event time).
func Rows(recs []gen.Record, shards int) ([]archive.Row, error) {
	if shards <= 0 {
		shards = 1
	}
	seq := make([]int64, shards)
	base, _ := new(big.Int).SetString("49650000000000000000000000000000000000000000000000000000", 10)
	var rows []archive.Row
	for _, r := range Unique(recs) {
		ev, err := lineage.Decode(r.Data)
		if err != nil {
			return nil, err
		}
		h := fnv.New32a()
		h.Write([]byte(r.PartitionKey))
		s := int(h.Sum32() % uint32(shards))
		seq[s]++
		sn := new(big.Int).Add(base, big.NewInt(seq[s]*1000)).String()
		rows = append(rows, Row(&ev, r.Data, fmt.Sprintf("shardId-%012d", s), sn, 0, ev.Time.Add(time.Second)))
	}
	return rows, nil
}

// Row is the archive row of one decoded event.
func Row(ev *lineage.Event, raw []byte, shard, seq string, sub int64, arrival time.Time) archive.Row {
	sum := sha256.Sum256(raw)
	r := archive.Row{EventTime: ev.Time.UTC(), EventType: string(ev.Type), Kind: ev.Kind.String(), RunID: ev.RunID,
		JobNamespace: ev.Job.Namespace, JobName: ev.Job.Name, Producer: ev.Producer, SchemaURL: ev.SchemaURL,
		Shard: shard, Sequence: seq, SubSequence: sub, ArrivalTime: arrival.UTC(),
		IdempotencyKey: hex.EncodeToString(sum[:]), Event: bytes.Clone(raw)}
	if ev.Parent != nil {
		r.ParentRunID = ev.Parent.RunID
		r.ParentJob = ev.Parent.Job.Namespace + "/" + ev.Parent.Job.Name
	}
	ins := ev.Inputs
	if ev.Kind == lineage.KindDataset {
		ins = ev.Datasets
	}
	for _, d := range ins {
		r.Inputs = append(r.Inputs, d.Namespace+"/"+d.Name)
	}
	for _, d := range ev.Outputs {
		r.Outputs = append(r.Outputs, d.Namespace+"/"+d.Name)
	}
	return r
}

// Object is one archive object: its key and Parquet bytes.
type Object struct {
	Key  string
	Body []byte
	Rows int
}

// Objects cuts rows into objects as the sink does: per (event date,
// shard), in sequence order, at most perObject rows each (0: one object
// per date and shard).
func Objects(prefix string, rows []archive.Row, perObject int) ([]Object, error) {
	type group struct {
		day   time.Time
		shard string
	}
	groups := map[group][]archive.Row{}
	for _, r := range rows {
		t := r.EventTime.UTC()
		g := group{time.Date(t.Year(), t.Month(), t.Day(), 0, 0, 0, 0, time.UTC), r.Shard}
		groups[g] = append(groups[g], r)
	}
	var out []Object
	for g, rs := range groups {
		sort.SliceStable(rs, func(i, j int) bool {
			return archive.PadSequence(rs[i].Sequence) < archive.PadSequence(rs[j].Sequence)
		})
		n := perObject
		if n <= 0 {
			n = len(rs)
		}
		for i := 0; i < len(rs); i += n {
			part := rs[i:min(i+n, len(rs))]
			var buf bytes.Buffer
			if err := archive.WriteEvents(&buf, part); err != nil {
				return nil, err
			}
			out = append(out, Object{Key: archive.ObjectKey(prefix, archive.EventsTable, g.day, g.shard, part[0].Sequence),
				Body: buf.Bytes(), Rows: len(part)})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Key < out[j].Key })
	return out, nil
}

// Write puts objs in the archive of st.
func Write(ctx context.Context, st reader.Store, objs []Object) error {
	for _, o := range objs {
		if err := st.Put(ctx, o.Key, o.Body); err != nil {
			return err
		}
	}
	return nil
}
