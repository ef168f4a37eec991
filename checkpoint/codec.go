package checkpoint

import (
	"errors"
	"fmt"

	"github.com/lineageflow/lineageflow/internal/enc"
)

// ErrCorrupt is returned for state that does not decode.
var ErrCorrupt = errors.New("checkpoint: corrupt value")

// Position is what s/<shard>/pos holds, written in every barrier.
type Position struct {
	Last       Pos    // last processed user record (skip records <= Last on resume)
	Durable    string // last record all of whose sub-records are in this barrier
	Watermark  int64  // window watermark (Unix ms), valid when WatermarkSet
	WMSet      bool
	MaxArrival int64  // maximum arrival time seen (Unix ms): the clock of TTLs
	NextOutbox uint64 // sequence of the next outbox entry
}

// AppendPosition encodes p.
func AppendPosition(dst []byte, p *Position) []byte {
	dst = append(dst, 1) // version
	dst = enc.AppendString(dst, p.Last.Seq)
	dst = enc.AppendUvarint(dst, uint64(p.Last.Sub))
	dst = enc.AppendString(dst, p.Durable)
	dst = enc.AppendVarint(dst, p.Watermark)
	dst = enc.AppendBool(dst, p.WMSet)
	dst = enc.AppendVarint(dst, p.MaxArrival)
	return enc.AppendUvarint(dst, p.NextOutbox)
}

// DecodePosition decodes a position.
func DecodePosition(b []byte) (Position, error) {
	var p Position
	r := enc.NewReader(b, ErrCorrupt)
	if r.Byte() != 1 {
		return p, fmt.Errorf("%w: position version", ErrCorrupt)
	}
	p.Last.Seq = r.String()
	p.Last.Sub = uint32(r.Uvarint())
	p.Durable = r.String()
	p.Watermark = r.Varint()
	p.WMSet = r.Byte() == 1
	p.MaxArrival = r.Varint()
	p.NextOutbox = r.Uvarint()
	return p, r.Err()
}
