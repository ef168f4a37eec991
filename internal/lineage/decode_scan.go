package lineage

import (
	"fmt"
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

// strSafe[c] is true for the bytes that a JSON string holds as they are:
// printable ASCII other than '"' and '\\'.
var strSafe = func() (t [256]bool) {
	for c := 0x20; c < 0x80; c++ {
		t[c] = c != '"' && c != '\\'
	}
	return t
}()

// scanner is a single-pass JSON scanner over one record. It validates the
// syntax exactly as encoding/json does (grammar, control characters in
// strings, escapes, nesting depth, trailing data) and never allocates except
// for the first syntax error, which is sticky: after it every method is a
// no-op that reports "nothing here".
type scanner struct {
	data []byte
	pos  int
	err  *DecodeError // first syntax error
	buf  []byte       // unescape scratch
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
	data := s.data
	i := s.pos + 1
	start := i
	for i < len(data) {
		c := data[i]
		if strSafe[c] {
			i++
			continue
		}
		switch {
		case c == '"':
			s.pos = i + 1
			return data[start:i], fl
		case c == '\\':
			fl |= flEsc
			if i+1 >= len(data) {
				s.pos = len(data)
				s.fail()
				return nil, 0
			}
			switch data[i+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				i += 2
			case 'u':
				for j := i + 2; j < i+6; j++ {
					if j >= len(data) || !isHex(data[j]) {
						s.pos = j
						s.fail()
						return nil, 0
					}
				}
				i += 6
			default:
				s.pos = i + 1
				s.fail()
				return nil, 0
			}
		case c < 0x20:
			s.pos = i
			s.fail()
			return nil, 0
		default:
			fl |= flHigh
			i++
		}
	}
	s.pos = len(data)
	s.fail()
	return nil, 0
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
func (s *scanner) skip(depth int) {
	switch c := s.peek(); c {
	case '"':
		s.str()
	case '{':
		if depth > maxDepth {
			s.fail()
			return
		}
		for ok := s.objBegin(); ok; ok = s.objNext() {
			s.key()
			s.skip(depth + 1)
		}
	case '[':
		if depth > maxDepth {
			s.fail()
			return
		}
		for ok := s.arrBegin(); ok; ok = s.arrNext() {
			s.skip(depth + 1)
		}
	case 't':
		s.lit("true")
	case 'f':
		s.lit("false")
	case 'n':
		s.lit("null")
	default:
		if c == '-' || c >= '0' && c <= '9' {
			s.num()
			return
		}
		s.fail()
	}
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
	if fl&flEsc != 0 {
		s.buf = unquote(s.buf[:0], raw)
		return s.buf
	}
	return raw
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
