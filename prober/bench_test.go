package prober

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpmon/mcpmon/pkg/msg"
)

// The benchmarks measure the CPU a client spends per full probe
// (initialize + notifications/initialized + ping + DELETE, a new connection
// each time, as a monitor does). The go-sdk server runs in a child process
// (this test binary re-executed) so getrusage(RUSAGE_SELF) counts only the
// client's CPU; ns/op is wall time and includes the server's.
//
//	go test ./prober -run '^$' -bench 'Probe' -benchtime 2000x
const benchServerEnv = "PROBER_BENCH_SERVER"

// runBenchServer serves a tool-less go-sdk server on 127.0.0.1: /json
// (JSON answers) and /sse (SSE answers); prints its address; exits when
// stdin closes.
func runBenchServer() int {
	s := mcp.NewServer(&mcp.Implementation{Name: "bench", Version: "1"}, nil)
	mux := http.NewServeMux()
	mux.Handle("/json", mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, &mcp.StreamableHTTPOptions{JSONResponse: true}))
	mux.Handle("/sse", mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, nil))
	// /tools serves a server with one tool, so a probe lists tools too.
	withTool := sdkServer()
	mux.Handle("/tools", mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return withTool }, &mcp.StreamableHTTPOptions{JSONResponse: true}))
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	go http.Serve(l, mux)
	fmt.Println("http://" + l.Addr().String())
	_, _ = bufio.NewReader(os.Stdin).ReadString('\n')
	return 0
}

func benchServer(b *testing.B) string {
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), benchServerEnv+"=1")
	stdin, err := cmd.StdinPipe()
	if err != nil {
		b.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		b.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { stdin.Close(); _ = cmd.Wait() })
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		b.Fatal(err)
	}
	return strings.TrimSpace(line)
}

func cpuTime() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// ourProbe runs one probe the way the worker does for a server last seen on
// 2025-11-25 (no server/discover round trip).
func ourProbe(b *testing.B, p *Prober, url string) {
	ep := endpoint(url)
	ep.Transport = TransportStreamableHTTP
	prev := &msg.ProbeResult{Status: msg.StatusUp, ProtocolVersion: Version20251125, Transport: TransportStreamableHTTP}
	res := p.ProbeAfter(context.Background(), ep, cmd(), prev)
	if res.Class != ClassOK {
		b.Fatalf("probe: %s %s", res.Class, res.Error)
	}
}

// sdkProbe does the same handshake with the go-sdk client: fresh transport,
// pinned to 2025-11-25, no standalone SSE stream.
func sdkProbe(b *testing.B, url string, defaults bool) {
	tr := &http.Transport{}
	defer tr.CloseIdleConnections()
	c := mcp.NewClient(&mcp.Implementation{Name: "bench", Version: "1"}, nil)
	t := &mcp.StreamableClientTransport{Endpoint: url, HTTPClient: &http.Client{Transport: tr}, DisableStandaloneSSE: !defaults}
	var so *mcp.ClientSessionOptions
	if !defaults {
		so = &mcp.ClientSessionOptions{ProtocolVersion: Version20251125}
	}
	cs, err := c.Connect(context.Background(), t, so)
	if err != nil {
		b.Fatal(err)
	}
	if err := cs.Ping(context.Background(), nil); err != nil {
		b.Fatal(err)
	}
	if err := cs.Close(); err != nil {
		b.Fatal(err)
	}
}

func benchCPU(b *testing.B, probe func()) {
	b.ReportAllocs()
	probe() // warm up
	b.ResetTimer()
	start := cpuTime()
	for b.Loop() {
		probe()
	}
	b.ReportMetric(float64(cpuTime()-start)/float64(b.N), "cpu-ns/op")
}

func BenchmarkProbe(b *testing.B) {
	base := benchServer(b)
	p := testProber(b, nil)
	for _, answers := range []string{"json", "sse"} {
		b.Run(answers, func(b *testing.B) {
			benchCPU(b, func() { ourProbe(b, p, base+"/"+answers) })
		})
	}
}

func BenchmarkGoSDKClientProbe(b *testing.B) {
	base := benchServer(b)
	for _, answers := range []string{"json", "sse"} {
		b.Run(answers, func(b *testing.B) {
			benchCPU(b, func() { sdkProbe(b, base+"/"+answers, false) })
		})
		b.Run(answers+"/sdk-defaults", func(b *testing.B) {
			benchCPU(b, func() { sdkProbe(b, base+"/"+answers, true) })
		})
	}
}

// BenchmarkProbeCPURatio runs both clients alternately against the same
// server and reports their CPU per probe side by side and the ratio (target
// ≤ 0.5). Alternating keeps a noisy shared machine from favouring either.
func BenchmarkProbeCPURatio(b *testing.B) {
	base := benchServer(b)
	p := testProber(b, nil)
	for _, answers := range []string{"json", "sse"} {
		b.Run(answers, func(b *testing.B) {
			url := base + "/" + answers
			ourProbe(b, p, url)
			sdkProbe(b, url, false)
			// At least 300 rounds even under `make bench`'s -benchtime 1x:
			// a single probe's CPU is below the rusage resolution noise.
			rounds := max(b.N, 300)
			var ours, sdk time.Duration
			for range rounds {
				t := cpuTime()
				ourProbe(b, p, url)
				m := cpuTime()
				sdkProbe(b, url, false)
				ours += m - t
				sdk += cpuTime() - m
			}
			b.ReportMetric(float64(ours)/float64(rounds), "prober-cpu-ns/probe")
			b.ReportMetric(float64(sdk)/float64(rounds), "gosdk-cpu-ns/probe")
			b.ReportMetric(float64(ours)/float64(sdk), "ratio")
		})
	}
}

// rawProbe is the floor: the same four exchanges written by hand on one
// connection, with no parsing, classification or bookkeeping. What the
// kernel and the runtime charge for them bounds any client's ratio.
func rawProbe(b *testing.B, base string) {
	req0, _ := http.NewRequest("POST", base, nil)
	c, err := net.Dial("tcp", req0.URL.Host)
	if err != nil {
		b.Fatal(err)
	}
	br := bufio.NewReader(c)
	bw := bufio.NewWriter(c)
	sid := ""
	for i, body := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"x","version":"1"}}}`,
		`{"jsonrpc":"2.0","method":"notifications/initialized"}`,
		`{"jsonrpc":"2.0","id":2,"method":"ping","params":{}}`,
		"",
	} {
		method := "POST"
		if body == "" {
			method = "DELETE"
		}
		req, _ := http.NewRequest(method, base, bytes.NewReader([]byte(body)))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		if sid != "" {
			req.Header.Set("Mcp-Session-Id", sid)
			req.Header.Set("MCP-Protocol-Version", "2025-11-25")
		}
		c.SetDeadline(time.Now().Add(5 * time.Second))
		req.Write(bw)
		bw.Flush()
		resp, err := http.ReadResponse(br, req)
		if err != nil {
			b.Fatal(i, err)
		}
		if i == 0 {
			sid = resp.Header.Get("Mcp-Session-Id")
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
	c.Close()
}

func BenchmarkRawHTTPFloor(b *testing.B) {
	base := benchServer(b)
	benchCPU(b, func() { rawProbe(b, base+"/json") })
}

// BenchmarkRawHTTPFloorCPURatio alternates the hand-written floor with the
// go-sdk client as BenchmarkProbeCPURatio does with the prober: the best
// ratio any client can reach in that alternation (JSON answers only).
func BenchmarkRawHTTPFloorCPURatio(b *testing.B) {
	base := benchServer(b)
	url := base + "/json"
	rawProbe(b, url)
	sdkProbe(b, url, false)
	rounds := max(b.N, 300)
	var floor, sdk time.Duration
	for range rounds {
		t := cpuTime()
		rawProbe(b, url)
		m := cpuTime()
		sdkProbe(b, url, false)
		floor += m - t
		sdk += cpuTime() - m
	}
	b.ReportMetric(float64(floor)/float64(rounds), "floor-cpu-ns/probe")
	b.ReportMetric(float64(sdk)/float64(rounds), "gosdk-cpu-ns/probe")
	b.ReportMetric(float64(floor)/float64(sdk), "ratio")
}
