package testpeers

import (
	"context"
	"encoding/binary"
	"net"
	"net/netip"
	"strings"
	"testing"
)

// DNSServer is a minimal DNS responder on 127.0.0.1 UDP, and a resolver
// that asks only it: A queries for names in answers get that address; every
// other name is NXDOMAIN. Tests use it to make a public-looking name resolve
// to loopback (DNS rebinding) without touching the machine's resolver.
func DNSServer(t testing.TB, answers map[string]netip.Addr) *net.Resolver {
	t.Helper()
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	t.Cleanup(func() { pc.Close(); <-done })
	go func() {
		defer close(done)
		buf := make([]byte, 1500)
		for {
			n, addr, err := pc.ReadFrom(buf)
			if err != nil {
				return
			}
			if resp := dnsAnswer(buf[:n], answers); resp != nil {
				_, _ = pc.WriteTo(resp, addr)
			}
		}
	}()
	return &net.Resolver{PreferGo: true, Dial: func(ctx context.Context, _, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, "udp", pc.LocalAddr().String())
	}}
}

func dnsAnswer(q []byte, answers map[string]netip.Addr) []byte {
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
	ip, known := answers[name]
	resp := make([]byte, 0, 512)
	resp = append(resp, q[0], q[1])
	flags := uint16(0x8180)
	if !known {
		flags |= 3 // NXDOMAIN
	}
	ancount := uint16(0)
	if known && qtype == 1 && ip.Is4() {
		ancount = 1
	}
	resp = binary.BigEndian.AppendUint16(resp, flags)
	resp = binary.BigEndian.AppendUint16(resp, 1)
	resp = binary.BigEndian.AppendUint16(resp, ancount)
	resp = binary.BigEndian.AppendUint16(resp, 0)
	resp = binary.BigEndian.AppendUint16(resp, 0)
	resp = append(resp, q[12:qend]...)
	if ancount == 1 {
		resp = append(resp, 0xC0, 0x0C, 0, 1, 0, 1, 0, 0, 0, 60, 0, 4)
		a := ip.As4()
		resp = append(resp, a[:]...)
	}
	return resp
}
