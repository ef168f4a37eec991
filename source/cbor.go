package source

// A small CBOR (RFC 8949) reader and writer: only what the GetRecords call
// over application/x-amz-cbor-1.1 needs (getrecords_cbor.go). The reader
// works on a byte slice and never allocates for definite-length strings:
// byte and text strings come back as slices of the input. Every length is
// checked against what is left of the input and nesting is bounded, so a
// truncated or corrupt body is an error, never a panic or a huge
// allocation.

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"
)

// CBOR major types.
const (
	cborUint   = 0
	cborNegint = 1
	cborBytes  = 2
	cborText   = 3
	cborArray  = 4
	cborMap    = 5
	cborTag    = 6
	cborSimple = 7
)

// CBOR simple values and the break stop code.
const (
	cborFalse     = 0xf4
	cborTrue      = 0xf5
	cborNull      = 0xf6
	cborUndefined = 0xf7
	cborBreak     = 0xff
)

// cborMaxDepth bounds the nesting of arrays, maps and tags the reader follows.
const cborMaxDepth = 32

// errCBOR is wrapped by every malformed-input error of the reader.
var errCBOR = errors.New("malformed CBOR")

// cborReader reads CBOR items from b, from offset i.
type cborReader struct {
	b []byte
	i int
}

func (r *cborReader) fail(what string) error {
	return fmt.Errorf("%w at byte %d of %d: %s", errCBOR, r.i, len(r.b), what)
}

// more reports whether bytes are left.
func (r *cborReader) more() bool { return r.i < len(r.b) }

// peek returns the next initial byte (0 and false at the end).
func (r *cborReader) peek() (byte, bool) {
	if r.i >= len(r.b) {
		return 0, false
	}
	return r.b[r.i], true
}

// head reads an item's initial byte and argument. indef is true for
// additional information 31 (an indefinite length, or the break code for
// major type 7); arg is then 0.
func (r *cborReader) head() (major byte, arg uint64, indef bool, err error) {
	if r.i >= len(r.b) {
		return 0, 0, false, r.fail("unexpected end")
	}
	ib := r.b[r.i]
	major, ai := ib>>5, ib&31
	r.i++
	switch {
	case ai < 24:
		return major, uint64(ai), false, nil
	case ai == 31:
		if major == cborUint || major == cborNegint || major == cborTag {
			r.i--
			return 0, 0, false, r.fail(fmt.Sprintf("indefinite length on major type %d", major))
		}
		return major, 0, true, nil
	case ai > 27:
		r.i--
		return 0, 0, false, r.fail(fmt.Sprintf("reserved additional information %d", ai))
	}
	n := 1 << (ai - 24) // 1, 2, 4 or 8 bytes
	if len(r.b)-r.i < n {
		return 0, 0, false, r.fail("truncated argument")
	}
	p := r.b[r.i : r.i+n]
	r.i += n
	switch n {
	case 1:
		arg = uint64(p[0])
	case 2:
		arg = uint64(binary.BigEndian.Uint16(p))
	case 4:
		arg = uint64(binary.BigEndian.Uint32(p))
	default:
		arg = binary.BigEndian.Uint64(p)
	}
	return major, arg, false, nil
}

// span returns the next n bytes of the input.
func (r *cborReader) span(n uint64) ([]byte, error) {
	if n > uint64(len(r.b)-r.i) {
		return nil, r.fail(fmt.Sprintf("length %d beyond the end", n))
	}
	s := r.b[r.i : r.i+int(n)]
	r.i += int(n)
	return s, nil
}

// breakNext consumes the break code if it is next.
func (r *cborReader) breakNext() bool {
	if r.i < len(r.b) && r.b[r.i] == cborBreak {
		r.i++
		return true
	}
	return false
}

// nullNext consumes null or undefined if it is next.
func (r *cborReader) nullNext() bool {
	if r.i < len(r.b) && (r.b[r.i] == cborNull || r.b[r.i] == cborUndefined) {
		r.i++
		return true
	}
	return false
}

// str reads a byte string (major cborBytes) or text string (cborText).
// A definite-length string is a slice of the input (chunked false); an
// indefinite-length one is its chunks joined into a new slice (chunked
// true). Text is not checked for UTF-8, as the SDK's JSON decoder does
// not either.
func (r *cborReader) str(want byte) (s []byte, chunked bool, err error) {
	start := r.i
	major, n, indef, err := r.head()
	if err != nil {
		return nil, false, err
	}
	if major != want {
		r.i = start
		return nil, false, r.fail(fmt.Sprintf("major type %d where %d was expected", major, want))
	}
	if !indef {
		s, err = r.span(n)
		return s, false, err
	}
	var out []byte
	for !r.breakNext() {
		major, n, indef, err := r.head()
		if err != nil {
			return nil, false, err
		}
		if major != want || indef {
			return nil, false, r.fail("bad chunk in an indefinite-length string")
		}
		c, err := r.span(n)
		if err != nil {
			return nil, false, err
		}
		out = append(out, c...)
	}
	if out == nil {
		out = []byte{}
	}
	return out, true, nil
}

// text reads a text string.
func (r *cborReader) text() ([]byte, error) {
	s, _, err := r.str(cborText)
	return s, err
}

// container reads the head of an array or map: its length, or -1 for an
// indefinite length (then the caller reads up to the break code).
func (r *cborReader) container(want byte) (int, error) {
	start := r.i
	major, n, indef, err := r.head()
	if err != nil {
		return 0, err
	}
	if major != want {
		r.i = start
		return 0, r.fail(fmt.Sprintf("major type %d where %d was expected", major, want))
	}
	if indef {
		return -1, nil
	}
	// Every item takes at least one byte (two per map entry).
	if n > uint64(len(r.b)-r.i) {
		return 0, r.fail(fmt.Sprintf("%d items beyond the end", n))
	}
	return int(n), nil
}

// next reports whether item k of a container of length n (-1: indefinite)
// follows, consuming the break code at the end of an indefinite one.
func (r *cborReader) next(k, n int) bool {
	if n >= 0 {
		return k < n
	}
	return !r.breakNext()
}

// number reads an integer or a float, after any tags (tag, -1 if none;
// only the innermost tag is kept). isInt says whether it was an integer
// (then i is exact, f its float value).
func (r *cborReader) number() (i int64, f float64, isInt bool, tag int64, err error) {
	tag = -1
	for depth := 0; ; depth++ {
		start := r.i
		major, arg, indef, err := r.head()
		if err != nil {
			return 0, 0, false, 0, err
		}
		switch major {
		case cborTag:
			if depth >= cborMaxDepth {
				return 0, 0, false, 0, r.fail("too many tags")
			}
			tag = int64(arg)
			if arg > math.MaxInt64 {
				tag = math.MaxInt64
			}
			continue
		case cborUint:
			if arg > math.MaxInt64 {
				r.i = start
				return 0, 0, false, 0, r.fail("integer out of range")
			}
			return int64(arg), float64(arg), true, tag, nil
		case cborNegint:
			if arg > math.MaxInt64 {
				r.i = start
				return 0, 0, false, 0, r.fail("integer out of range")
			}
			v := -1 - int64(arg)
			return v, float64(v), true, tag, nil
		case cborSimple:
			if indef {
				break
			}
			switch r.b[start] & 31 {
			case 25:
				return 0, halfToFloat(uint16(arg)), false, tag, nil
			case 26:
				return 0, float64(math.Float32frombits(uint32(arg))), false, tag, nil
			case 27:
				return 0, math.Float64frombits(arg), false, tag, nil
			}
		}
		r.i = start
		return 0, 0, false, 0, r.fail(fmt.Sprintf("initial byte 0x%02x where a number was expected", r.b[start]))
	}
}

// halfToFloat converts an IEEE 754 half-precision float.
func halfToFloat(h uint16) float64 {
	exp := int(h>>10) & 0x1f
	mant := float64(h & 0x3ff)
	var v float64
	switch exp {
	case 0:
		v = math.Ldexp(mant, -24)
	case 31:
		if mant == 0 {
			v = math.Inf(1)
		} else {
			v = math.NaN()
		}
	default:
		v = math.Ldexp(mant+1024, exp-25)
	}
	if h&0x8000 != 0 {
		v = -v
	}
	return v
}

// skip reads over one item of any type.
func (r *cborReader) skip(depth int) error {
	if depth > cborMaxDepth {
		return r.fail("nested too deep")
	}
	start := r.i
	major, arg, indef, err := r.head()
	if err != nil {
		return err
	}
	switch major {
	case cborUint, cborNegint:
		return nil
	case cborBytes, cborText:
		r.i = start
		_, _, err := r.str(major)
		return err
	case cborArray, cborMap:
		n := int64(-1)
		if !indef {
			if arg > uint64(len(r.b)-r.i) {
				return r.fail(fmt.Sprintf("%d items beyond the end", arg))
			}
			n = int64(arg)
			if major == cborMap {
				n *= 2
			}
		}
		for k := int64(0); n < 0 || k < n; k++ {
			if n < 0 && r.breakNext() {
				return nil
			}
			if err := r.skip(depth + 1); err != nil {
				return err
			}
		}
		return nil
	case cborTag:
		return r.skip(depth + 1)
	default: // cborSimple
		if indef {
			r.i = start
			return r.fail("unexpected break code")
		}
		return nil
	}
}

// cborToJSON converts one CBOR item (an error response body) to JSON:
// maps with text keys, arrays, strings (byte strings as base64, as JSON
// carries blobs), numbers, booleans, null. The whole input must be one item.
func cborToJSON(b []byte) ([]byte, error) {
	r := cborReader{b: b}
	v, err := r.value(0)
	if err != nil {
		return nil, err
	}
	if r.more() {
		return nil, r.fail("bytes after the item")
	}
	return json.Marshal(v)
}

// value reads one item as a Go value for encoding/json.
func (r *cborReader) value(depth int) (any, error) {
	if depth > cborMaxDepth {
		return nil, r.fail("nested too deep")
	}
	ib, ok := r.peek()
	if !ok {
		return nil, r.fail("unexpected end")
	}
	switch ib >> 5 {
	case cborUint, cborNegint:
		i, _, _, _, err := r.number()
		return i, err
	case cborBytes:
		s, _, err := r.str(cborBytes)
		return s, err // []byte: base64 in JSON
	case cborText:
		s, err := r.text()
		return string(s), err
	case cborArray:
		n, err := r.container(cborArray)
		if err != nil {
			return nil, err
		}
		out := []any{}
		for k := 0; r.next(k, n); k++ {
			v, err := r.value(depth + 1)
			if err != nil {
				return nil, err
			}
			out = append(out, v)
		}
		return out, nil
	case cborMap:
		n, err := r.container(cborMap)
		if err != nil {
			return nil, err
		}
		out := map[string]any{}
		for k := 0; r.next(k, n); k++ {
			key, err := r.text()
			if err != nil {
				return nil, err
			}
			v, err := r.value(depth + 1)
			if err != nil {
				return nil, err
			}
			out[string(key)] = v
		}
		return out, nil
	case cborTag:
		if _, _, _, err := r.head(); err != nil {
			return nil, err
		}
		return r.value(depth + 1)
	}
	switch ib {
	case cborFalse, cborTrue:
		r.i++
		return ib == cborTrue, nil
	case cborNull, cborUndefined:
		r.i++
		return nil, nil
	}
	_, f, _, _, err := r.number()
	if err != nil {
		return nil, err
	}
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return nil, r.fail("NaN or infinity")
	}
	return f, nil
}

// jsonToCBOR converts a JSON document (a request body the SDK serialized)
// to CBOR: objects to maps, arrays, strings to text, integers to
// integers, other numbers to float64, booleans, null.
func jsonToCBOR(j []byte) ([]byte, error) {
	d := json.NewDecoder(bytes.NewReader(j))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil {
		return nil, fmt.Errorf("request body: %w", err)
	}
	if d.More() {
		return nil, errors.New("request body: more than one JSON value")
	}
	return appendCBOR(nil, v)
}

// appendCBOR appends the CBOR of a value decoded by encoding/json with
// UseNumber.
func appendCBOR(b []byte, v any) ([]byte, error) {
	switch v := v.(type) {
	case nil:
		return append(b, cborNull), nil
	case bool:
		if v {
			return append(b, cborTrue), nil
		}
		return append(b, cborFalse), nil
	case string:
		return append(appendHead(b, cborText, uint64(len(v))), v...), nil
	case json.Number:
		if i, err := strconv.ParseInt(string(v), 10, 64); err == nil {
			if i < 0 {
				return appendHead(b, cborNegint, uint64(-1-i)), nil
			}
			return appendHead(b, cborUint, uint64(i)), nil
		}
		f, err := strconv.ParseFloat(string(v), 64)
		if err != nil {
			return nil, fmt.Errorf("request body: number %s: %w", v, err)
		}
		b = append(b, cborSimple<<5|27)
		return binary.BigEndian.AppendUint64(b, math.Float64bits(f)), nil
	case []any:
		b = appendHead(b, cborArray, uint64(len(v)))
		for _, e := range v {
			var err error
			if b, err = appendCBOR(b, e); err != nil {
				return nil, err
			}
		}
		return b, nil
	case map[string]any:
		b = appendHead(b, cborMap, uint64(len(v)))
		for k, e := range v {
			b = append(appendHead(b, cborText, uint64(len(k))), k...)
			var err error
			if b, err = appendCBOR(b, e); err != nil {
				return nil, err
			}
		}
		return b, nil
	}
	return nil, fmt.Errorf("request body: unexpected %T", v)
}

// appendHead appends an item head with the shortest argument encoding.
func appendHead(b []byte, major byte, n uint64) []byte {
	m := major << 5
	switch {
	case n < 24:
		return append(b, m|byte(n))
	case n <= math.MaxUint8:
		return append(b, m|24, byte(n))
	case n <= math.MaxUint16:
		return binary.BigEndian.AppendUint16(append(b, m|25), uint16(n))
	case n <= math.MaxUint32:
		return binary.BigEndian.AppendUint32(append(b, m|26), uint32(n))
	}
	return binary.BigEndian.AppendUint64(append(b, m|27), n)
}
