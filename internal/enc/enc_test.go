package enc

import (
	"errors"
	"testing"
)

var errTest = errors.New("test: corrupt")

func TestRoundTrip(t *testing.T) {
	t.Parallel()
	var b []byte
	b = append(b, 7)
	b = AppendString(b, "héllo")
	b = AppendVarint(b, -42)
	b = AppendUvarint(b, 1<<40)
	b = AppendBool(b, true)
	b = AppendString(b, "")
	r := NewReader(b, errTest)
	if r.Byte() != 7 || r.String() != "héllo" || r.Varint() != -42 || r.Uvarint() != 1<<40 || r.Byte() != 1 || r.String() != "" {
		t.Fatal("values differ")
	}
	if r.Err() != nil || r.Len() != 0 {
		t.Fatalf("err %v, %d bytes left", r.Err(), r.Len())
	}
	for i := 0; i < len(b); i++ {
		r := NewReader(b[:i], errTest)
		_, _, _, _, _, _ = r.Byte(), r.String(), r.Varint(), r.Uvarint(), r.Byte(), r.String()
		if !errors.Is(r.Err(), errTest) {
			t.Fatalf("truncated at %d: err %v", i, r.Err())
		}
	}
}
