// Package gremlinproxy is a fault-injecting proxy between a Gremlin
// client and Gremlin Server, for tests. It listens on 127.0.0.1, forwards
// the websocket byte stream frame by frame, and on command drops every
// connection, refuses new ones, holds responses (a stalled server), or
// answers requests itself with a GraphBinary status-500 response whose
// message is Neptune-shaped ({"code":"ConcurrentModificationException",
// ...}), the way Neptune reports its errors.
//
// It understands just enough of RFC 6455 (frame headers, client masking)
// and GraphBinary v1 (the request id of a request message) to do that; it
// never changes the frames it forwards.
package gremlinproxy

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"sync/atomic"
)

// Proxy forwards connections from its listener to the target address.
// Its methods are safe for concurrent use.
type Proxy struct {
	ln     net.Listener
	target string

	mu struct {
		sync.Mutex
		conns   map[*pair]struct{}
		refuse  bool
		stalled chan struct{} // non-nil while stalled; closed to release
		inject  []string      // messages for the next requests, in order
	}
	wg sync.WaitGroup

	requests, injected, dropped atomic.Int64
	maxRequest                  atomic.Int64
}

type pair struct {
	client, server net.Conn
	wmu            sync.Mutex // serialises frames written to client
	done           chan struct{}
	once           sync.Once
}

func (p *pair) close() {
	p.once.Do(func() {
		close(p.done)
		p.client.Close()
		p.server.Close()
	})
}

// Start listens on 127.0.0.1 (a free port) and forwards to target
// ("127.0.0.1:8182").
func Start(target string) (*Proxy, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	p := &Proxy{ln: ln, target: target}
	p.mu.conns = map[*pair]struct{}{}
	p.wg.Add(1)
	go p.accept()
	return p, nil
}

// Addr is the proxy's host:port.
func (p *Proxy) Addr() string { return p.ln.Addr().String() }

// URL is ws://<Addr>/gremlin.
func (p *Proxy) URL() string { return "ws://" + p.Addr() + "/gremlin" }

// Close stops listening and closes every connection.
func (p *Proxy) Close() {
	p.ln.Close()
	p.Drop()
	p.Stall(false)
	p.wg.Wait()
}

// Drop closes every open connection (both sides), as a network failure
// or a server crash would.
func (p *Proxy) Drop() {
	p.mu.Lock()
	conns := p.mu.conns
	p.mu.conns = map[*pair]struct{}{}
	p.mu.Unlock()
	for c := range conns {
		p.dropped.Add(1)
		c.close()
	}
}

// Refuse makes the proxy close new connections at once (on) or accept
// them again (off).
func (p *Proxy) Refuse(on bool) {
	p.mu.Lock()
	p.mu.refuse = on
	p.mu.Unlock()
}

// Stall holds every response from the server (on) until Stall(false);
// held responses are then delivered, unless their connection was closed.
func (p *Proxy) Stall(on bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	switch {
	case on && p.mu.stalled == nil:
		p.mu.stalled = make(chan struct{})
	case !on && p.mu.stalled != nil:
		close(p.mu.stalled)
		p.mu.stalled = nil
	}
}

// InjectError makes the next n requests fail: the proxy does not forward
// them and answers each with status 500 and a Neptune error message
// carrying code (e.g. "ConcurrentModificationException").
func (p *Proxy) InjectError(n int, code string) {
	msg := fmt.Sprintf(`{"requestId":"injected","code":"%s","detailedMessage":"injected by gremlinproxy"}`, code)
	p.mu.Lock()
	for i := 0; i < n; i++ {
		p.mu.inject = append(p.mu.inject, msg)
	}
	p.mu.Unlock()
}

// Stats are the proxy's counters.
type Stats struct {
	Requests        int64 // request messages seen
	Injected        int64 // requests answered with an injected error
	Dropped         int64 // connections closed by Drop
	MaxRequestBytes int64 // largest request payload seen
}

// Stats returns the proxy's counters.
func (p *Proxy) Stats() Stats {
	return Stats{Requests: p.requests.Load(), Injected: p.injected.Load(),
		Dropped: p.dropped.Load(), MaxRequestBytes: p.maxRequest.Load()}
}

func (p *Proxy) accept() {
	defer p.wg.Done()
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		p.mu.Lock()
		refuse := p.mu.refuse
		p.mu.Unlock()
		if refuse {
			c.Close()
			continue
		}
		s, err := net.Dial("tcp", p.target)
		if err != nil {
			c.Close()
			continue
		}
		pr := &pair{client: c, server: s, done: make(chan struct{})}
		p.mu.Lock()
		p.mu.conns[pr] = struct{}{}
		p.mu.Unlock()
		p.wg.Add(2)
		go p.upstream(pr)
		go p.downstream(pr)
	}
}

func (p *Proxy) forget(pr *pair) {
	pr.close()
	p.mu.Lock()
	delete(p.mu.conns, pr)
	p.mu.Unlock()
}

// upstream copies client -> server, inspecting request messages.
func (p *Proxy) upstream(pr *pair) {
	defer p.wg.Done()
	defer p.forget(pr)
	r := bufio.NewReaderSize(pr.client, 64<<10)
	if err := copyHTTPHead(r, pr.server); err != nil {
		return
	}
	for {
		f, err := readFrame(r)
		if err != nil {
			return
		}
		if f.opcode == opBinary && f.fin {
			payload := f.unmasked()
			p.requests.Add(1)
			if n := int64(len(payload)); n > p.maxRequest.Load() {
				p.maxRequest.Store(n)
			}
			if msg, ok := p.nextInjection(); ok {
				if id, ok := requestID(payload); ok {
					p.injected.Add(1)
					if err := pr.writeClient(serverFrame(errorResponse(id, 500, msg))); err != nil {
						return
					}
					continue
				}
			}
		}
		if _, err := pr.server.Write(f.raw); err != nil {
			return
		}
	}
}

// downstream copies server -> client, holding frames while stalled.
func (p *Proxy) downstream(pr *pair) {
	defer p.wg.Done()
	defer p.forget(pr)
	r := bufio.NewReaderSize(pr.server, 64<<10)
	var head bytes.Buffer
	if err := copyHTTPHead(r, &head); err != nil {
		return
	}
	if err := pr.writeClient(head.Bytes()); err != nil {
		return
	}
	for {
		f, err := readFrame(r)
		if err != nil {
			return
		}
		p.mu.Lock()
		stalled := p.mu.stalled
		p.mu.Unlock()
		if stalled != nil {
			select {
			case <-stalled:
			case <-pr.done:
				return
			}
		}
		if err := pr.writeClient(f.raw); err != nil {
			return
		}
	}
}

func (p *Proxy) nextInjection() (string, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.mu.inject) == 0 {
		return "", false
	}
	m := p.mu.inject[0]
	p.mu.inject = p.mu.inject[1:]
	return m, true
}

func (pr *pair) writeClient(b []byte) error {
	pr.wmu.Lock()
	defer pr.wmu.Unlock()
	_, err := pr.client.Write(b)
	return err
}

// copyHTTPHead copies the HTTP upgrade request or response, up to and
// including the blank line.
func copyHTTPHead(r *bufio.Reader, w io.Writer) error {
	for {
		line, err := r.ReadSlice('\n')
		if err != nil {
			return err
		}
		if _, err := w.Write(line); err != nil {
			return err
		}
		if len(line) <= 2 && bytes.Equal(bytes.TrimRight(line, "\r\n"), nil) {
			return nil
		}
	}
}

const (
	opBinary = 0x2
)

type frame struct {
	fin     bool
	opcode  byte
	masked  bool
	mask    [4]byte
	raw     []byte // header + payload as on the wire
	payload []byte // slice of raw
}

func (f *frame) unmasked() []byte {
	if !f.masked {
		return f.payload
	}
	out := make([]byte, len(f.payload))
	for i, b := range f.payload {
		out[i] = b ^ f.mask[i%4]
	}
	return out
}

var errFrame = errors.New("gremlinproxy: bad frame")

func readFrame(r *bufio.Reader) (*frame, error) {
	var h [14]byte
	if _, err := io.ReadFull(r, h[:2]); err != nil {
		return nil, err
	}
	f := &frame{fin: h[0]&0x80 != 0, opcode: h[0] & 0x0f, masked: h[1]&0x80 != 0}
	n := uint64(h[1] & 0x7f)
	hl := 2
	switch n {
	case 126:
		if _, err := io.ReadFull(r, h[2:4]); err != nil {
			return nil, err
		}
		n = uint64(binary.BigEndian.Uint16(h[2:4]))
		hl = 4
	case 127:
		if _, err := io.ReadFull(r, h[2:10]); err != nil {
			return nil, err
		}
		n = binary.BigEndian.Uint64(h[2:10])
		hl = 10
	}
	if n > 64<<20 {
		return nil, errFrame
	}
	if f.masked {
		if _, err := io.ReadFull(r, h[hl:hl+4]); err != nil {
			return nil, err
		}
		copy(f.mask[:], h[hl:hl+4])
		hl += 4
	}
	f.raw = make([]byte, hl+int(n))
	copy(f.raw, h[:hl])
	if _, err := io.ReadFull(r, f.raw[hl:]); err != nil {
		return nil, err
	}
	f.payload = f.raw[hl:]
	return f, nil
}

// serverFrame wraps payload in one unmasked, final binary frame.
func serverFrame(payload []byte) []byte {
	var b bytes.Buffer
	b.WriteByte(0x80 | opBinary)
	switch n := len(payload); {
	case n < 126:
		b.WriteByte(byte(n))
	case n < 1<<16:
		b.WriteByte(126)
		_ = binary.Write(&b, binary.BigEndian, uint16(n))
	default:
		b.WriteByte(127)
		_ = binary.Write(&b, binary.BigEndian, uint64(n))
	}
	b.Write(payload)
	return b.Bytes()
}

// requestID returns the 16-byte request id of a GraphBinary v1 request
// message: {mime length}{mime}{0x81}{uuid}...
func requestID(msg []byte) ([]byte, bool) {
	if len(msg) < 1 {
		return nil, false
	}
	off := 1 + int(msg[0])
	if len(msg) < off+1+16 || msg[off] != 0x81 {
		return nil, false
	}
	return msg[off+1 : off+17], true
}

// errorResponse is a GraphBinary v1 response message:
// {0x81}{nullable uuid}{int status}{nullable string message}
// {attributes map}{meta map}{fully qualified null data}.
func errorResponse(id []byte, status int32, msg string) []byte {
	var b bytes.Buffer
	b.WriteByte(0x81)
	b.WriteByte(0x00)
	b.Write(id)
	_ = binary.Write(&b, binary.BigEndian, status)
	b.WriteByte(0x00)
	_ = binary.Write(&b, binary.BigEndian, int32(len(msg)))
	b.WriteString(msg)
	_ = binary.Write(&b, binary.BigEndian, int32(0)) // status attributes
	_ = binary.Write(&b, binary.BigEndian, int32(0)) // result meta
	b.Write([]byte{0xfe, 0x01})                      // null data
	return b.Bytes()
}
