package checkpoint

import (
	"testing"
)

// Fuzz targets of the position codec (s/<shard>/pos, written in every
// barrier and read on every start): decoding arbitrary bytes never panics,
// and what decodes re-encodes to the same position; a position encoded
// decodes to itself. testdata/fuzz/<FuzzName>/ holds committed seeds.

func positionSeeds(f *testing.F) {
	for _, p := range []Position{
		{},
		{Last: Pos{"49590338271490256608559692538361570959215759890000000001", 3}, Durable: "49590338271490256608559692538361570959215759890000000000",
			Watermark: 1767225600000, WMSet: true, MaxArrival: 1767225610000, NextOutbox: 42},
		{Last: Pos{"1", 1<<32 - 1}, Watermark: -1 << 63, MaxArrival: 1<<63 - 1, NextOutbox: 1<<64 - 1},
	} {
		f.Add(AppendPosition(nil, &p))
	}
	f.Add([]byte{})
	f.Add([]byte{1})
	f.Add([]byte{2, 0, 0, 0, 0, 0, 0, 0})
}

func FuzzDecodePosition(f *testing.F) {
	positionSeeds(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		p, err := DecodePosition(data)
		if err != nil {
			return
		}
		b := AppendPosition(nil, &p)
		again, err := DecodePosition(b)
		if err != nil || again != p {
			t.Fatalf("input %x decoded to %+v; its encoding %x decodes to %+v, %v", data, p, b, again, err)
		}
	})
}

func FuzzPositionRoundTrip(f *testing.F) {
	f.Add("49590338271490256608559692538361570959215759890000000001", uint32(3), "495903382714902566085596925383615709592157598900", int64(1767225600000), true, int64(1767225610000), uint64(42))
	f.Add("", uint32(0), "", int64(0), false, int64(0), uint64(0))
	f.Add("\x00\xff", uint32(1<<32-1), "\x80", int64(-1<<63), true, int64(1<<63-1), uint64(1<<64-1))
	f.Fuzz(func(t *testing.T, seq string, sub uint32, durable string, wm int64, wmSet bool, maxArrival int64, next uint64) {
		p := Position{Last: Pos{seq, sub}, Durable: durable, Watermark: wm, WMSet: wmSet, MaxArrival: maxArrival, NextOutbox: next}
		b := AppendPosition(nil, &p)
		got, err := DecodePosition(b)
		if err != nil || got != p {
			t.Fatalf("position %+v -> %x -> %+v, %v", p, b, got, err)
		}
		for i := range b {
			if _, err := DecodePosition(b[:i]); err == nil {
				t.Fatalf("position %+v truncated to %d of %d bytes decoded", p, i, len(b))
			}
		}
	})
}
