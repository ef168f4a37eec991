package checkpoint

import (
	"encoding/binary"
)

// Pebble key layout. One DB per worker process; every key of a shard's
// state starts with ShardPrefix so a shard is dropped with one DeleteRange.
//
//	s/<shard>/pos                       position (last processed record, durable full seq, watermark, next outbox seq)
//	s/<shard>/w/<bucket:8B BE>/<32B>    collapsed window entry (merge operands of Options.Merger)
//	s/<shard>/b/<bucket:8B BE>          pin of an open window bucket (seq string)
//	s/<shard>/r/<runId>                 per-run accumulation
//	s/<shard>/d/<sha256(payload)[:16]>  dedup entry -> arrival ms
//	s/<shard>/x/<arrival:8B BE><16B>    dedup expiry index
//	s/<shard>/o/<seq:8B BE>             outbox entry (opaque here: the processor encodes it)
//	s/<shard>/a/<seq:64 digits><sub:4B BE>  pending archive entry (opaque here: processor/archive.go)
//	s/<shard>/c/<seq:64 digits><sub:4B BE>  archive cut recorded before its objects are put (opaque)
//	dlq/<shard>/<seqno>/<sub:4B BE>     dead letter (JSON); kept when the shard moves
//
// Shard ids are Kinesis shard ids ("shardId-000000000001"): they hold no '/'.

// ShardPrefix returns "s/<shard>/".
func ShardPrefix(shard string) []byte { return []byte("s/" + shard + "/") }

// PrefixEnd returns the smallest key greater than every key with prefix p.
func PrefixEnd(p []byte) []byte {
	end := append([]byte(nil), p...)
	for i := len(end) - 1; i >= 0; i-- {
		end[i]++
		if end[i] != 0 {
			return end[:i+1]
		}
	}
	return nil
}

func sub(shard, part string) []byte { return []byte("s/" + shard + "/" + part) }

// PosKey is the key of the shard's position.
func PosKey(shard string) []byte { return sub(shard, "pos") }

// WindowPrefix is the prefix of every window entry of the shard.
func WindowPrefix(shard string) []byte { return sub(shard, "w/") }

// BucketPrefix is the prefix of the window entries of one bucket.
func BucketPrefix(shard string, bucket int64) []byte {
	return binary.BigEndian.AppendUint64(sub(shard, "w/"), uint64(bucket))
}

// AppendWindowKey appends the key of one window entry to dst.
func AppendWindowKey(dst []byte, shard string, bucket int64, key *[32]byte) []byte {
	dst = append(dst, "s/"...)
	dst = append(dst, shard...)
	dst = append(dst, "/w/"...)
	dst = binary.BigEndian.AppendUint64(dst, uint64(bucket))
	return append(dst, key[:]...)
}

// BucketFromWindowKey returns the bucket of a window entry key.
func BucketFromWindowKey(shard string, k []byte) int64 {
	n := len("s/") + len(shard) + len("/w/")
	return int64(binary.BigEndian.Uint64(k[n : n+8]))
}

// BucketMetaPrefix is the prefix of bucket pins.
func BucketMetaPrefix(shard string) []byte { return sub(shard, "b/") }

// BucketMetaKey is the key of one bucket's pin.
func BucketMetaKey(shard string, bucket int64) []byte {
	return binary.BigEndian.AppendUint64(sub(shard, "b/"), uint64(bucket))
}

// RunPrefix is the prefix of run states.
func RunPrefix(shard string) []byte { return sub(shard, "r/") }

// RunKey is the key of one run's state.
func RunKey(shard, runID string) []byte { return sub(shard, "r/"+runID) }

// DedupPrefix is the prefix of dedup entries.
func DedupPrefix(shard string) []byte { return sub(shard, "d/") }

// DedupKey is the key of one dedup entry.
func DedupKey(shard string, h [16]byte) []byte { return append(sub(shard, "d/"), h[:]...) }

// ExpiryPrefix is the prefix of the dedup expiry index.
func ExpiryPrefix(shard string) []byte { return sub(shard, "x/") }

// ExpiryKey is the key of one dedup expiry index entry.
func ExpiryKey(shard string, arrival int64, h [16]byte) []byte {
	return append(binary.BigEndian.AppendUint64(sub(shard, "x/"), uint64(arrival)), h[:]...)
}

// ExpiryBound is the first expiry key at or after arrival.
func ExpiryBound(shard string, arrival int64) []byte {
	return binary.BigEndian.AppendUint64(sub(shard, "x/"), uint64(arrival))
}

// OutboxPrefix is the prefix of outbox entries.
func OutboxPrefix(shard string) []byte { return sub(shard, "o/") }

// OutboxKey is the key of outbox entry seq.
func OutboxKey(shard string, seq uint64) []byte {
	return binary.BigEndian.AppendUint64(sub(shard, "o/"), seq)
}

// OutboxSeq returns the sequence of an outbox key.
func OutboxSeq(shard string, k []byte) uint64 {
	return binary.BigEndian.Uint64(k[len(OutboxPrefix(shard)):])
}

// ArchivePrefix is the prefix of the shard's pending archive entries.
func ArchivePrefix(shard string) []byte { return sub(shard, "a/") }

// ArchiveCutPrefix is the prefix of the shard's recorded archive cuts.
func ArchiveCutPrefix(shard string) []byte { return sub(shard, "c/") }

// AppendArchiveKey appends the key of the pending archive entry of record
// (seq, sub) to dst: the sequence number (56 digits on Kinesis)
// left-padded with zeros to ArchiveSeqWidth digits (keys sort as the
// stream does), then sub.
func AppendArchiveKey(dst []byte, shard, seq string, sub uint32) []byte {
	return appendPosKey(appendSub(dst, shard, "a/"), seq, sub)
}

// ArchiveCutKey is the key of the recorded archive cut ending at (seq, sub).
func ArchiveCutKey(shard, seq string, sub uint32) []byte {
	return appendPosKey(appendSub(nil, shard, "c/"), seq, sub)
}

// ArchiveKeyPos returns the position of a key under prefix (an
// [AppendArchiveKey] or [ArchiveCutKey] key).
func ArchiveKeyPos(prefix, k []byte) Pos {
	rest := k[len(prefix):]
	if len(rest) != ArchiveSeqWidth+4 {
		return Pos{}
	}
	d := rest[:ArchiveSeqWidth]
	i := 0
	for i < ArchiveSeqWidth-1 && d[i] == '0' {
		i++
	}
	return Pos{Seq: string(d[i:]), Sub: binary.BigEndian.Uint32(rest[ArchiveSeqWidth:])}
}

// ArchiveSeqWidth is the width sequence numbers are padded to in archive keys.
const ArchiveSeqWidth = 64

func appendPosKey(dst []byte, seq string, sub uint32) []byte {
	for i := len(seq); i < ArchiveSeqWidth; i++ {
		dst = append(dst, '0')
	}
	dst = append(dst, seq...)
	return binary.BigEndian.AppendUint32(dst, sub)
}

// DLQPrefix is the prefix of every dead letter (all shards).
var DLQPrefix = []byte("dlq/")

// ParkedPrefix is the prefix of every parked sink batch (all shards).
var ParkedPrefix = []byte("parked/")

// ParkedKey is the key of parked outbox entry seq of shard.
func ParkedKey(shard string, seq uint64) []byte {
	return binary.BigEndian.AppendUint64([]byte("parked/"+shard+"/"), seq)
}

// ParkedItemKey is the key of item i set apart from outbox entry seq of
// shard (processor/isolate.go): ParkedKey followed by i, so the items of
// an entry sort after it and in order.
func ParkedItemKey(shard string, seq uint64, i int) []byte {
	return binary.BigEndian.AppendUint32(append(ParkedKey(shard, seq), '/'), uint32(i))
}

// DLQShardPrefix is the prefix of the dead letters of shard, in sequence
// order (Kinesis sequence numbers of a shard have one length).
func DLQShardPrefix(shard string) []byte { return []byte("dlq/" + shard + "/") }

// DLQKey is the key of the dead letter of record (seq, sub) of shard.
func DLQKey(shard, seq string, sub uint32) []byte {
	k := []byte("dlq/" + shard + "/" + seq + "/")
	return binary.BigEndian.AppendUint32(k, sub)
}

// The Append* functions append the same keys as their allocating
// counterparts to dst (the barrier reuses one buffer for all its keys).

func appendSub(dst []byte, shard, part string) []byte {
	dst = append(dst, "s/"...)
	dst = append(dst, shard...)
	dst = append(dst, '/')
	return append(dst, part...)
}

// AppendDedupKey appends [DedupKey] to dst.
func AppendDedupKey(dst []byte, shard string, h *[16]byte) []byte {
	return append(appendSub(dst, shard, "d/"), h[:]...)
}

// AppendExpiryKey appends [ExpiryKey] to dst.
func AppendExpiryKey(dst []byte, shard string, arrival int64, h *[16]byte) []byte {
	dst = binary.BigEndian.AppendUint64(appendSub(dst, shard, "x/"), uint64(arrival))
	return append(dst, h[:]...)
}

// AppendRunKey appends [RunKey] to dst.
func AppendRunKey(dst []byte, shard, runID string) []byte {
	return append(appendSub(dst, shard, "r/"), runID...)
}

// AppendBucketMetaKey appends [BucketMetaKey] to dst.
func AppendBucketMetaKey(dst []byte, shard string, bucket int64) []byte {
	return binary.BigEndian.AppendUint64(appendSub(dst, shard, "b/"), uint64(bucket))
}
