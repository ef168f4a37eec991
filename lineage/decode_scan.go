package lineage

import (
	"encoding/binary"
	"fmt"
	"math/bits"
	"unicode/utf16"
	"unicode/utf8"
)

// maxDepth is encoding/json's nesting limit: a container nested deeper is a
// syntax error there, so it is one here too.
const maxDepth = 10000

// String flags reported by scanner.str.
const (
	flEsc  = 1 << iota // the raw string holds a backslash escape
	flHigh             // the raw string holds a byte >= 0x80
)

// scanner is the package's one JSON scanner: the decoder reads records
// with it and the facet readers (facetprops.go, columns.go, symlinks.go,
// lifecycle.go, facets.go) read facet objects with it. It is a cursor over
// one value, single pass, and validates the syntax exactly as
// encoding/json does (grammar, control characters in strings, escapes,
// nesting depth, trailing data). Its primitives:
//
//   - peek: the next byte after whitespace (a value's JSON type);
//   - objBegin/objNext with key or keyRaw, arrBegin/arrNext: iterate an
//     object's members or an array's elements;
//   - str, optStr, optRaw: a string (raw contents and flags, or unescaped
//     as encoding/json does, with unescape and appendText); num, null;
//   - skip and span: validate and pass (or return) any value, with
//     encoding/json's nesting limit; end: nothing but whitespace follows.
//
// It allocates only for the first syntax error, the unescape scratch and
// nesting past 64 levels. The first syntax error is sticky: after it every
// method is a no-op that reports "nothing here". The zero scanner, after
// reset, is ready to use.
type scanner struct {
	data []byte
	pos  int
	err  *DecodeError // first syntax error
	buf  []byte       // unescape scratch
	stk  []byte       // skip's open containers past 64 levels: 1 object, 0 array
}

func (s *scanner) reset(data []byte) {
	s.data, s.pos, s.err = data, 0, nil
}

// fail records a syntax error at s.pos and stops the scan.
func (s *scanner) fail() {
	if s.err != nil {
		return
	}
	if s.pos >= len(s.data) {
		s.err = &DecodeError{Reason: ReasonNotJSON, Msg: fmt.Sprintf("unexpected end of JSON input at byte %d (truncated?)", len(s.data))}
	} else {
		s.err = &DecodeError{Reason: ReasonNotJSON, Msg: fmt.Sprintf("invalid character %s at byte %d", quoteByte(s.data[s.pos]), s.pos)}
	}
	s.pos = len(s.data)
}

func quoteByte(c byte) string {
	if c >= 0x20 && c < 0x7f {
		return fmt.Sprintf("%q", rune(c))
	}
	return fmt.Sprintf("0x%02x", c)
}

// peek skips whitespace and returns the next byte, or 0 at the end.
func (s *scanner) peek() byte {
	for s.pos < len(s.data) {
		c := s.data[s.pos]
		if c > ' ' {
			return c
		}
		if c != ' ' && c != '\t' && c != '\n' && c != '\r' {
			return c
		}
		s.pos++
	}
	return 0
}

// end checks that only whitespace follows the top-level value.
func (s *scanner) end() {
	if s.err == nil && (s.peek() != 0 || s.pos < len(s.data)) {
		s.fail()
	}
}

// str scans the string at s.pos (which must be '"') and returns its raw
// contents, without the quotes, and its flags.
func (s *scanner) str() (raw []byte, fl uint8) {
	start := s.pos + 1
	end, fl, bad := scanStr(s.data, start)
	if end < 0 {
		s.pos = bad
		s.fail()
		return nil, 0
	}
	s.pos = end + 1
	return s.data[start:end], fl
}

// SWAR constants: one in every byte, 0x80 in every byte.
const (
	swarLo = 0x0101010101010101
	swarHi = 0x8080808080808080
)

// swarSpecial returns a word whose lowest set bit is the high bit of the
// first byte of w (little endian) that a JSON string does not hold as it
// is: '"', '\\', a control character (< 0x20) or a non-ASCII byte (>= 0x80);
// 0 if there is none. Bits above the first such byte may be spurious
// (borrows), the lowest one never is: a borrow into a byte only comes from
// a lower byte that is itself flagged, and the subtractions flag a byte
// >= 0x80 only where w has it anyway.
func swarSpecial(w uint64) uint64 {
	return ((w - swarLo*0x20) | ((w ^ swarLo*'"') - swarLo) | ((w ^ swarLo*'\\') - swarLo) | w) & swarHi
}

// scanStr scans the contents of the string that starts at data[i], just
// after its opening quote. It returns the index of the closing quote and
// the flags, or end -1 and the position of the syntax error (len(data) when
// the string is truncated). Printable ASCII runs go 8 bytes at a time;
// escapes, control characters and non-ASCII bytes take the careful path
// byte by byte. It checks exactly what encoding/json's scanner does: it
// does not validate UTF-8 (unquote replaces invalid bytes later).
func scanStr(data []byte, i int) (end int, fl uint8, bad int) {
	for {
		// Find the next special byte: 8 at a time, then byte by byte in
		// the last 7.
		for {
			if len(data)-i >= 8 {
				if t := swarSpecial(binary.LittleEndian.Uint64(data[i:])); t != 0 {
					i += bits.TrailingZeros64(t) >> 3
					break
				}
				i += 8
				continue
			}
			for i < len(data) && strSafe(data[i]) {
				i++
			}
			if i >= len(data) {
				return -1, 0, len(data)
			}
			break
		}
		c := data[i]
		if c == '"' {
			return i, fl, 0
		}
		switch {
		case c == '\\':
			fl |= flEsc
			if i+1 >= len(data) {
				return -1, 0, len(data)
			}
			switch data[i+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				i += 2
			case 'u':
				for j := i + 2; j < i+6; j++ {
					if j >= len(data) || !isHex(data[j]) {
						return -1, 0, j
					}
				}
				i += 6
			default:
				return -1, 0, i + 1
			}
		case c < 0x20:
			return -1, 0, i
		default:
			fl |= flHigh
			i++
			for i < len(data) && data[i] >= 0x80 {
				i++
			}
		}
	}
}

// strSafe reports whether a JSON string holds c as it is: printable
// ASCII other than '"' and '\\'.
func strSafe(c byte) bool {
	return c >= 0x20 && c < 0x80 && c != '"' && c != '\\'
}

func isHex(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}

// num scans the number at s.pos and returns its text.
func (s *scanner) num() []byte {
	data := s.data
	start, i := s.pos, s.pos
	if i < len(data) && data[i] == '-' {
		i++
	}
	digits := func() bool {
		if i >= len(data) || data[i] < '0' || data[i] > '9' {
			s.pos = i
			s.fail()
			return false
		}
		for i < len(data) && data[i] >= '0' && data[i] <= '9' {
			i++
		}
		return true
	}
	if i < len(data) && data[i] == '0' {
		i++
	} else if !digits() {
		return nil
	}
	if i < len(data) && data[i] == '.' {
		i++
		if !digits() {
			return nil
		}
	}
	if i < len(data) && (data[i] == 'e' || data[i] == 'E') {
		i++
		if i < len(data) && (data[i] == '+' || data[i] == '-') {
			i++
		}
		if !digits() {
			return nil
		}
	}
	s.pos = i
	return data[start:i]
}

// lit scans the literal word (true, false or null) at s.pos.
func (s *scanner) lit(word string) {
	for i := 0; i < len(word); i++ {
		if s.pos >= len(s.data) || s.data[s.pos] != word[i] {
			s.fail()
			return
		}
		s.pos++
	}
}

// null scans a null at s.pos (whose first byte is 'n').
func (s *scanner) null() { s.lit("null") }

// skip scans and discards the value at s.pos; depth is the nesting level a
// container there would have (the top-level value has depth 1).
//
// It is iterative, with the position in a local and a stack of the open
// containers (one bit per level in a word, spilling into s.stk past 64
// levels, so that skip does not allocate), and it does not unescape keys: facets
// are most of a record and all they need is validation. It fails at the
// same byte as the member-by-member methods (objBegin, key, ...) would.
func (s *scanner) skip(depth int) {
	if s.err != nil {
		return
	}
	data := s.data
	// The open containers: how many, and whether each is an object (1)
	// or an array (0), the innermost in bit 0 of objs; the outermost past
	// the 64th spill into s.stk.
	var (
		open int
		objs uint64
	)
	i := s.pos
	for {
		// A value starts at i (after whitespace).
		i = skipWS(data, i)
		if i >= len(data) {
			break
		}
		closed := true // the value is complete (not an open container)
		switch c := data[i]; c {
		case '"':
			end, _, bad := scanStr(data, i+1)
			if end < 0 {
				i = bad
				goto fail
			}
			i = end + 1
		case '{':
			if depth+open > maxDepth {
				goto fail
			}
			i = skipWS(data, i+1)
			if i < len(data) && data[i] == '}' {
				i++
				break
			}
			if i >= len(data) || data[i] != '"' {
				goto fail
			}
			if i = skipKey(data, i); i < 0 {
				i = -i - 1
				goto fail
			}
			if open >= 64 {
				s.stk = append(s.stk[:open-64], byte(objs>>63))
			}
			objs = objs<<1 | 1
			open++
			closed = false
		case '[':
			if depth+open > maxDepth {
				goto fail
			}
			i = skipWS(data, i+1)
			if i < len(data) && data[i] == ']' {
				i++
				break
			}
			if open >= 64 {
				s.stk = append(s.stk[:open-64], byte(objs>>63))
			}
			objs <<= 1
			open++
			closed = false
		case 't', 'f', 'n':
			s.pos = i
			switch c {
			case 't':
				s.lit("true")
			case 'f':
				s.lit("false")
			default:
				s.lit("null")
			}
			if s.err != nil {
				return
			}
			i = s.pos
		default:
			if c != '-' && (c < '0' || c > '9') {
				goto fail
			}
			s.pos = i
			s.num()
			if s.err != nil {
				return
			}
			i = s.pos
		}
		if !closed {
			continue
		}
		// A value ended at i: close containers until one has another
		// element.
		for {
			if open == 0 {
				s.pos = i
				return
			}
			i = skipWS(data, i)
			if i >= len(data) {
				goto fail
			}
			c := data[i]
			if objs&1 != 0 {
				if c == '}' {
					i++
					if open--; open >= 64 {
						objs = objs>>1 | uint64(s.stk[open-64])<<63
					} else {
						objs >>= 1
					}
					continue
				}
				if c != ',' {
					goto fail
				}
				i = skipWS(data, i+1)
				if i >= len(data) || data[i] != '"' {
					goto fail
				}
				if i = skipKey(data, i); i < 0 {
					i = -i - 1
					goto fail
				}
				break
			}
			if c == ']' {
				i++
				if open--; open >= 64 {
					objs = objs>>1 | uint64(s.stk[open-64])<<63
				} else {
					objs >>= 1
				}
				continue
			}
			if c != ',' {
				goto fail
			}
			i++
			break
		}
	}
fail:
	s.pos = i
	s.fail()
}

// skipWS returns the index of the first non-whitespace byte at or after i.
func skipWS(data []byte, i int) int {
	for i < len(data) && data[i] <= ' ' && (data[i] == ' ' || data[i] == '\t' || data[i] == '\n' || data[i] == '\r') {
		i++
	}
	return i
}

// skipKey scans the key at data[i] (a '"') and the ':' after it and
// returns the index after the ':', or -1-pos for a syntax error at pos.
func skipKey(data []byte, i int) int {
	end, _, bad := scanStr(data, i+1)
	if end < 0 {
		return -1 - bad
	}
	i = skipWS(data, end+1)
	if i >= len(data) || data[i] != ':' {
		return -1 - i
	}
	return i + 1
}

// span skips the value at s.pos and returns its raw bytes.
func (s *scanner) span(depth int) []byte {
	s.peek()
	start := s.pos
	s.skip(depth)
	if s.err != nil {
		return nil
	}
	return s.data[start:s.pos]
}

// objBegin consumes the '{' at s.pos and reports whether a member follows.
func (s *scanner) objBegin() bool {
	s.pos++
	switch s.peek() {
	case '}':
		s.pos++
		return false
	case '"':
		return true
	}
	s.fail()
	return false
}

// objNext consumes the ',' or '}' after a member and reports whether
// another member follows.
func (s *scanner) objNext() bool {
	switch s.peek() {
	case ',':
		s.pos++
		if s.peek() == '"' {
			return true
		}
	case '}':
		s.pos++
		return false
	}
	s.fail()
	return false
}

// key scans a member's key and its ':' and returns the key, unescaped.
// The result is valid until the next call that unescapes.
func (s *scanner) key() []byte {
	raw, fl := s.str()
	if s.err != nil {
		return nil
	}
	if s.peek() != ':' {
		s.fail()
		return nil
	}
	s.pos++
	return s.unescape(raw, fl)
}

// keyRaw is key without the unescaping: it returns the key's raw contents
// and flags, as str does. (key does not call it: one call less per key.)
func (s *scanner) keyRaw() (raw []byte, fl uint8) {
	raw, fl = s.str()
	if s.err != nil {
		return nil, 0
	}
	if s.peek() != ':' {
		s.fail()
		return nil, 0
	}
	s.pos++
	return raw, fl
}

// unescape returns the string whose raw contents and flags str gave,
// unescaped as encoding/json does: raw itself when it needs nothing, else
// s.buf, valid until the next call that unescapes.
func (s *scanner) unescape(raw []byte, fl uint8) []byte {
	if fl == 0 { // printable ASCII: the common case, inlined
		return raw
	}
	return s.unescapeSlow(raw, fl)
}

func (s *scanner) unescapeSlow(raw []byte, fl uint8) []byte {
	if plainText(raw, fl) {
		return raw
	}
	s.buf = unquote(s.buf[:0], raw)
	return s.buf
}

// plainText reports whether the string whose raw contents and flags str
// gave is its own unescaped form: no escape, valid UTF-8.
func plainText(raw []byte, fl uint8) bool {
	return fl&flEsc == 0 && (fl&flHigh == 0 || utf8.Valid(raw))
}

// optStr scans a value that may be a string and returns it, unescaped, and
// true; for any other value (null included) it returns "" and false. depth
// is the value's, as for skip.
func (s *scanner) optStr(depth int) (string, bool) {
	raw, fl, ok := s.optRaw(depth)
	if !ok {
		return "", false
	}
	return string(s.unescape(raw, fl)), true
}

// optRaw is optStr without the unescaping: the string's raw contents and
// flags (see unescape, appendText).
func (s *scanner) optRaw(depth int) (raw []byte, fl uint8, ok bool) {
	if s.peek() != '"' {
		s.skip(depth)
		return nil, 0, false
	}
	raw, fl = s.str()
	return raw, fl, s.err == nil
}

// appendText appends to b the string whose raw contents and flags str
// gave, unescaped.
func appendText(b, raw []byte, fl uint8) []byte {
	if plainText(raw, fl) {
		return append(b, raw...)
	}
	return unquote(b, raw)
}

// arrBegin consumes the '[' at s.pos and reports whether an element follows.
func (s *scanner) arrBegin() bool {
	s.pos++
	if s.peek() == ']' {
		s.pos++
		return false
	}
	return s.err == nil
}

// arrNext consumes the ',' or ']' after an element and reports whether
// another element follows.
func (s *scanner) arrNext() bool {
	switch s.peek() {
	case ',':
		s.pos++
		return true
	case ']':
		s.pos++
		return false
	}
	s.fail()
	return false
}

// unquote appends the unescaped form of the raw string contents to b,
// exactly as encoding/json does: invalid UTF-8 bytes and unpaired
// surrogates become U+FFFD. raw must have passed scanner.str.
func unquote(b, raw []byte) []byte {
	for r := 0; r < len(raw); {
		c := raw[r]
		switch {
		case c == '\\':
			switch e := raw[r+1]; e {
			case '"', '\\', '/':
				b = append(b, e)
				r += 2
			case 'b':
				b = append(b, '\b')
				r += 2
			case 'f':
				b = append(b, '\f')
				r += 2
			case 'n':
				b = append(b, '\n')
				r += 2
			case 'r':
				b = append(b, '\r')
				r += 2
			case 't':
				b = append(b, '\t')
				r += 2
			case 'u':
				rr := getu4(raw[r:])
				r += 6
				if utf16.IsSurrogate(rr) {
					rr1 := getu4(raw[r:])
					if dec := utf16.DecodeRune(rr, rr1); dec != utf8.RuneError {
						r += 6
						b = utf8.AppendRune(b, dec)
						break
					}
					rr = utf8.RuneError
				}
				b = utf8.AppendRune(b, rr)
			}
		case c < utf8.RuneSelf:
			b = append(b, c)
			r++
		default:
			rr, size := utf8.DecodeRune(raw[r:])
			r += size
			b = utf8.AppendRune(b, rr)
		}
	}
	return b
}

// getu4 decodes \uXXXX at the start of s, or returns -1.
func getu4(s []byte) rune {
	if len(s) < 6 || s[0] != '\\' || s[1] != 'u' {
		return -1
	}
	var r rune
	for _, c := range s[2:6] {
		switch {
		case '0' <= c && c <= '9':
			c -= '0'
		case 'a' <= c && c <= 'f':
			c = c - 'a' + 10
		case 'A' <= c && c <= 'F':
			c = c - 'A' + 10
		default:
			return -1
		}
		r = r*16 + rune(c)
	}
	return r
}
