// Package source is the AWS side of reading: the KCL worker of the process
// (vmware-go-kcl-v2 over Kinesis and the DynamoDB lease table), the record
// processor that hands each leased shard's records to a [processor.Shard],
// the lease guard (a checkpoint is written only while this worker owns the
// lease), and the store that carries open runs from a parent shard to its
// children at a split or merge ([Handoff]: [DynamoHandoff], [MemHandoff]).
// It also holds the canary mirror ([RunMirror]): a KCL application of its
// own that puts a deterministic share of the stream on a canary stream.
//
// It decides when the KCL checkpoint is written, never what it is: the
// position comes from [processor.Shard.Checkpoint]. It knows nothing of
// windows, runs, Pebble keys or the graph beyond the [sink.Writer] it passes
// on; the processor knows nothing of the KCL, Kinesis or DynamoDB.
package source
