package checkpoint

import (
	"testing"
)

func TestCompareSeq(t *testing.T) {
	t.Parallel()
	tests := []struct {
		a, b string
		want int
	}{
		{"9", "10", -1},
		{"49590338271490256608559692538361571095921575989136588898", "49590338271490256608559692538361571095921575989136588899", -1},
		{"100", "099", 1}, // length first
		{"", "0", -1},
		{"123", "123", 0},
	}
	for _, tt := range tests {
		t.Run(tt.a+"_"+tt.b, func(t *testing.T) {
			if got := CompareSeq(tt.a, tt.b); got != tt.want {
				t.Fatalf("CompareSeq(%q,%q) = %d, want %d", tt.a, tt.b, got, tt.want)
			}
			if got := CompareSeq(tt.b, tt.a); got != -tt.want {
				t.Fatalf("not antisymmetric")
			}
		})
	}
	if (Pos{"10", 0}).Compare(Pos{"9", 5}) != 1 || (Pos{"10", 1}).Compare(Pos{"10", 2}) != -1 {
		t.Fatal("Pos.Compare")
	}
}

func TestPinsSafe(t *testing.T) {
	t.Parallel()
	p := NewPins()
	if got := p.Safe("100"); got != "100" {
		t.Fatalf("empty Safe = %q", got)
	}
	p.Add("50")
	p.Add("9") // shorter string, smaller number
	p.Add("50")
	if got := p.Safe("100"); got != "9" {
		t.Fatalf("Safe = %q, want 9", got)
	}
	p.Release("9")
	if got := p.Safe("100"); got != "50" {
		t.Fatalf("Safe = %q, want 50", got)
	}
	p.Release("50")
	if got := p.Safe("40"); got != "40" {
		t.Fatalf("durable below pins: Safe = %q, want 40", got)
	}
	p.Release("50")
	if p.Len() != 0 || p.Safe("100") != "100" {
		t.Fatal("not empty")
	}
	p.Add("")
	if got := p.Safe("100"); got != "" {
		t.Fatalf("pin before first record: Safe = %q", got)
	}
	defer func() {
		if recover() == nil {
			t.Fatal("release of unpinned value did not panic")
		}
	}()
	p.Release("7")
}

func TestCodecsRoundTrip(t *testing.T) {
	t.Parallel()
	pos := Position{Last: Pos{"123", 4}, Durable: "122", Watermark: -5, WMSet: true, MaxArrival: 77, NextOutbox: 9}
	got, err := DecodePosition(AppendPosition(nil, &pos))
	if err != nil || got != pos {
		t.Fatalf("position %+v -> %+v %v", pos, got, err)
	}
}

func TestPrefixEnd(t *testing.T) {
	t.Parallel()
	if got := string(PrefixEnd([]byte("s/a/"))); got != "s/a0" {
		t.Fatalf("PrefixEnd = %q", got)
	}
	if got := PrefixEnd([]byte{0xff, 0xff}); got != nil {
		t.Fatalf("PrefixEnd(ff ff) = %v", got)
	}
}

func TestAppendKeysMatch(t *testing.T) {
	t.Parallel()
	h := [16]byte{1, 2, 3, 255}
	buf := []byte("junk")
	for _, c := range []struct{ got, want []byte }{
		{AppendDedupKey(buf[:0], "shardId-1", &h), DedupKey("shardId-1", h)},
		{AppendExpiryKey(buf[:0], "shardId-1", -7, &h), ExpiryKey("shardId-1", -7, h)},
		{AppendRunKey(buf[:0], "shardId-1", "r/1"), RunKey("shardId-1", "r/1")},
		{AppendBucketMetaKey(buf[:0], "shardId-1", 1767225600000), BucketMetaKey("shardId-1", 1767225600000)},
	} {
		if string(c.got) != string(c.want) {
			t.Fatalf("%q != %q", c.got, c.want)
		}
	}
}
