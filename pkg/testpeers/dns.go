package testpeers

import (
	"context"
	"encoding/binary"
	"io"
	"net"
	"net/netip"
	"strings"
	"sync"
	"testing"
)

// DNSServer is a minimal DNS responder on 127.0.0.1 UDP, and a resolver
// that asks only it: A queries for names in answers get that address; every
// other name is NXDOMAIN. Tests use it to make a public-looking name resolve
// to loopback (DNS rebinding) without touching the machine's resolver.
func DNSServer(t testing.TB, answers map[string]netip.Addr) *net.Resolver {
	t.Helper()
	z := NewDNSZone(t)
	for name, ip := range answers {
		z.SetA(name, ip)
	}
	return z.Resolver
}

// DNSZone is a DNS server on 127.0.0.1 (UDP and TCP on one port) whose
// records a test changes while it runs, and Resolver, which asks only it.
// It answers A and TXT queries for the names it holds, SERVFAIL for the
// names set to fail, and NXDOMAIN for every other name. An answer too big
// for a 512-byte UDP message is sent truncated over UDP and whole over TCP,
// as a real server does, so a test can hand a client a TXT answer of up to
// 64 KiB.
type DNSZone struct {
	// Resolver sends every query to this zone and nowhere else.
	Resolver *net.Resolver
	// Addr is the zone's address (127.0.0.1:port, UDP and TCP), for a
	// resolver the code under test builds itself.
	Addr string

	mu   sync.Mutex
	a    map[string]netip.Addr
	txt  map[string][]string
	fail map[string]bool
}

// NewDNSZone starts an empty zone for the test's lifetime.
func NewDNSZone(t testing.TB) *DNSZone {
	t.Helper()
	z := &DNSZone{a: map[string]netip.Addr{}, txt: map[string][]string{}, fail: map[string]bool{}}
	pc, ln := listenDNS(t)
	var wg sync.WaitGroup
	t.Cleanup(func() { pc.Close(); ln.Close(); wg.Wait() })
	wg.Go(func() { z.serveUDP(pc) })
	wg.Go(func() { z.serveTCP(ln, &wg) })
	addr := pc.LocalAddr().String()
	z.Addr = addr
	z.Resolver = &net.Resolver{PreferGo: true, Dial: func(ctx context.Context, network, _ string) (net.Conn, error) {
		var d net.Dialer
		if strings.HasPrefix(network, "tcp") {
			return d.DialContext(ctx, "tcp", addr)
		}
		return d.DialContext(ctx, "udp", addr)
	}}
	return z
}

// SetA makes name (any case, no trailing dot) resolve to ip (IPv4).
func (z *DNSZone) SetA(name string, ip netip.Addr) {
	z.mu.Lock()
	defer z.mu.Unlock()
	z.a[strings.ToLower(name)] = ip
}

// SetTXT replaces name's TXT records with records (none: the name exists
// with no TXT record). A record longer than 255 bytes is sent as several
// character-strings, which a client joins back.
func (z *DNSZone) SetTXT(name string, records ...string) {
	z.mu.Lock()
	defer z.mu.Unlock()
	z.txt[strings.ToLower(name)] = records
}

// SetFail makes every query for name answer SERVFAIL.
func (z *DNSZone) SetFail(name string) {
	z.mu.Lock()
	defer z.mu.Unlock()
	z.fail[strings.ToLower(name)] = true
}

// listenDNS binds UDP and TCP on one loopback port: a resolver falls back
// from one to the other at the same address.
func listenDNS(t testing.TB) (net.PacketConn, net.Listener) {
	t.Helper()
	var last error
	for range 20 {
		pc, err := net.ListenPacket("udp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		ln, err := net.Listen("tcp", pc.LocalAddr().String())
		if err == nil {
			return pc, ln
		}
		pc.Close()
		last = err
	}
	t.Fatalf("no loopback port free for UDP and TCP: %v", last)
	return nil, nil
}

func (z *DNSZone) serveUDP(pc net.PacketConn) {
	buf := make([]byte, 1500)
	for {
		n, addr, err := pc.ReadFrom(buf)
		if err != nil {
			return
		}
		if resp := z.answer(buf[:n], 512); resp != nil {
			_, _ = pc.WriteTo(resp, addr)
		}
	}
}

func (z *DNSZone) serveTCP(ln net.Listener, wg *sync.WaitGroup) {
	for {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		wg.Go(func() {
			defer c.Close()
			for {
				var n [2]byte
				if _, err := io.ReadFull(c, n[:]); err != nil {
					return
				}
				q := make([]byte, binary.BigEndian.Uint16(n[:]))
				if _, err := io.ReadFull(c, q); err != nil {
					return
				}
				resp := z.answer(q, 65535)
				if resp == nil {
					return
				}
				if _, err := c.Write(binary.BigEndian.AppendUint16(nil, uint16(len(resp)))); err != nil {
					return
				}
				if _, err := c.Write(resp); err != nil {
					return
				}
			}
		})
	}
}

const (
	typeA   = 1
	typeTXT = 16
)

// answer is the response to query q in at most limit bytes: beyond it,
// the header with TC set and the question only.
func (z *DNSZone) answer(q []byte, limit int) []byte {
	if len(q) < 12 {
		return nil
	}
	var labels []string
	i := 12
	for i < len(q) && q[i] != 0 {
		l := int(q[i])
		if i+1+l > len(q) {
			return nil
		}
		labels = append(labels, string(q[i+1:i+1+l]))
		i += 1 + l
	}
	if i+5 > len(q) {
		return nil
	}
	qtype := binary.BigEndian.Uint16(q[i+1:])
	qend := i + 5
	name := strings.ToLower(strings.Join(labels, "."))

	z.mu.Lock()
	ip, hasA := z.a[name]
	txt, hasTXT := z.txt[name]
	fail := z.fail[name]
	z.mu.Unlock()

	flags := uint16(0x8180)
	var answers [][]byte
	switch {
	case fail:
		flags |= 2 // SERVFAIL
	case !hasA && !hasTXT:
		flags |= 3 // NXDOMAIN
	case qtype == typeA && hasA && ip.Is4():
		a := ip.As4()
		answers = append(answers, rr(typeA, a[:]))
	case qtype == typeTXT:
		for _, t := range txt {
			answers = append(answers, rr(typeTXT, txtData(t)))
		}
	}
	head := func(flags uint16, ancount int) []byte {
		resp := make([]byte, 0, 512)
		resp = append(resp, q[0], q[1])
		resp = binary.BigEndian.AppendUint16(resp, flags)
		resp = binary.BigEndian.AppendUint16(resp, 1)
		resp = binary.BigEndian.AppendUint16(resp, uint16(ancount))
		resp = binary.BigEndian.AppendUint16(resp, 0)
		resp = binary.BigEndian.AppendUint16(resp, 0)
		return append(resp, q[12:qend]...)
	}
	resp := head(flags, len(answers))
	for _, a := range answers {
		resp = append(resp, a...)
	}
	if len(resp) > limit {
		return head(flags|0x0200, 0) // TC: ask again over TCP
	}
	return resp
}

// rr is one answer record for the question's name (a pointer to it).
func rr(typ uint16, data []byte) []byte {
	out := []byte{0xC0, 0x0C}
	out = binary.BigEndian.AppendUint16(out, typ)
	out = append(out, 0, 1, 0, 0, 0, 60) // class IN, TTL 60
	out = binary.BigEndian.AppendUint16(out, uint16(len(data)))
	return append(out, data...)
}

// txtData is a TXT record's data: s in character-strings of at most 255
// bytes.
func txtData(s string) []byte {
	var out []byte
	for {
		chunk := s[:min(len(s), 255)]
		out = append(out, byte(len(chunk)))
		out = append(out, chunk...)
		s = s[len(chunk):]
		if s == "" {
			return out
		}
	}
}
