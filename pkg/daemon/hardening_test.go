package daemon

import (
	"bufio"
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"io"
	"log/slog"
	"math/big"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcpmon/mcpmon/pkg/api/apispec"
	"github.com/mcpmon/mcpmon/pkg/config"
)

// lockedBuffer collects output written from server goroutines.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// startHardened starts `mcpmon run` on 127.0.0.1:0 with the server limits
// small, so a test sees the server act on them in well under a second. API
// keys are off (loopback only) so requests reach the handlers; tests that
// listen beyond loopback turn them back on.
func startHardened(t *testing.T, mut func(*config.Options)) (*Daemon, *lockedBuffer, *lockedBuffer) {
	t.Helper()
	o := embeddedOptions(t)
	o.Auth = config.AuthNone
	o.HTTPReadTimeout = 300 * time.Millisecond
	o.HTTPIdleTimeout = 300 * time.Millisecond
	if mut != nil {
		mut(&o)
	}
	logs, out := &lockedBuffer{}, &lockedBuffer{}
	d, err := Start(t.Context(), RoleAll, o, Deps{Logger: slog.New(slog.NewTextHandler(logs, nil)), Stdout: out})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Stop(); _ = d.Wait() })
	return d, logs, out
}

// closedByServer reads c until the server closes it. The client deadline is
// a safety net far beyond the server's limits: reaching it means the server
// kept the connection open, which is the failure.
func closedByServer(t *testing.T, c net.Conn, r io.Reader) []byte {
	t.Helper()
	_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
	got, err := io.ReadAll(r)
	if ne, ok := errors.AsType[net.Error](err); ok && ne.Timeout() {
		t.Fatalf("the server kept the connection open (client deadline reached); read %q", got)
	}
	return got
}

// TestSlowClientIsDisconnected: a client that drips its request headers or
// body a byte at a time is disconnected by the server's read timeouts, and
// a half-sent request changes nothing.
func TestSlowClientIsDisconnected(t *testing.T) {
	d, _, _ := startHardened(t, nil)
	for _, tc := range []struct {
		name, head string
	}{
		{"drips headers", "POST /v1/endpoints HTTP/1.1\r\nHost: 127.0.0.1\r\n"},
		{"drips body", "POST /v1/endpoints HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: 100000\r\n\r\n{\"name\":\""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := net.Dial("tcp", d.Addr())
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			if _, err := io.WriteString(c, tc.head); err != nil {
				t.Fatal(err)
			}
			// One byte every 20 ms until the server hangs up: forever, were
			// there no read timeout.
			stop := make(chan struct{})
			dripped := make(chan struct{})
			go func() {
				defer close(dripped)
				tick := time.NewTicker(20 * time.Millisecond)
				defer tick.Stop()
				for {
					select {
					case <-stop:
						return
					case <-tick.C:
						if _, err := c.Write([]byte("X")); err != nil {
							return
						}
					}
				}
			}()
			closedByServer(t, c, c)
			close(stop)
			<-dripped
			eps, err := d.Store().ListEndpoints(t.Context())
			if err != nil || len(eps) != 0 {
				t.Fatalf("endpoints after a dripped request: %v, %v", eps, err)
			}
		})
	}
}

// TestIdleKeepAliveIsClosed: a client that keeps a connection alive after
// its request and sends nothing more is disconnected after the idle timeout.
func TestIdleKeepAliveIsClosed(t *testing.T) {
	d, _, _ := startHardened(t, nil)
	c, err := net.Dial("tcp", d.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := io.WriteString(c, "GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	br := bufio.NewReader(c)
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || resp.Close {
		t.Fatalf("healthz = %d (close %v), want 200 on a kept-alive connection", resp.StatusCode, resp.Close)
	}
	if rest := closedByServer(t, c, br); len(rest) != 0 {
		t.Fatalf("the server sent %q on an idle connection", rest)
	}
}

// TestOversizedHeadersRefused: a header block over the cap is answered 431
// and the connection closed.
func TestOversizedHeadersRefused(t *testing.T) {
	d, _, _ := startHardened(t, nil)
	c, err := net.Dial("tcp", d.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	big := strings.Repeat("a", config.MaxHeaderBytes+8<<10)
	go func() { _, _ = io.WriteString(c, "GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Big: "+big+"\r\n\r\n") }()
	got := closedByServer(t, c, c)
	if !bytes.HasPrefix(got, []byte("HTTP/1.1 431 ")) {
		t.Fatalf("answer %.60q, want 431", got)
	}
}

// TestAPIHostAllowList: with --api-hosts the API answers only the listed
// Host values (421 otherwise, against DNS rebinding); /healthz, which
// Kubernetes probes by pod IP, is not restricted.
func TestAPIHostAllowList(t *testing.T) {
	d, _, _ := startHardened(t, func(o *config.Options) { o.APIHosts = []string{"mcpmon.internal"} })
	for _, tc := range []struct {
		host, path string
		want       int
	}{
		{"mcpmon.internal", "/v1/endpoints", http.StatusOK},
		{"MCPMON.internal.:8080", "/v1/endpoints", http.StatusOK},
		{"attacker.example", "/v1/endpoints", http.StatusMisdirectedRequest},
		{d.Addr(), "/v1/endpoints", http.StatusMisdirectedRequest},
		{"attacker.example", "/healthz", http.StatusOK},
	} {
		req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, "http://"+d.Addr()+tc.path, nil)
		if err != nil {
			t.Fatal(err)
		}
		req.Host = tc.host
		resp, err := apispec.Client(t).Do(req) // the 421 is a documented answer too
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != tc.want {
			t.Errorf("GET %s with Host %q = %d, want %d", tc.path, tc.host, resp.StatusCode, tc.want)
		}
	}
}

// TestPlaintextWarningAndBanner: listening on every interface without TLS
// logs one warning, and the banner names the address actually bound.
func TestPlaintextWarningAndBanner(t *testing.T) {
	d, logs, out := startHardened(t, func(o *config.Options) { o.Listen, o.Auth = "0.0.0.0:0", config.AuthKeys })
	if n := strings.Count(logs.String(), "without TLS"); n != 1 {
		t.Errorf("%d plaintext warnings, want 1:\n%s", n, logs)
	}
	if want := "listening on " + d.Addr() + " (HTTP, every interface)"; !strings.Contains(out.String(), want) {
		t.Errorf("banner %q lacks %q", out, want)
	}

	d, logs, out = startHardened(t, nil)
	if strings.Contains(logs.String(), "without TLS") {
		t.Errorf("a loopback listener logged the plaintext warning:\n%s", logs)
	}
	if want := "listening on " + d.Addr() + " (HTTP)"; !strings.Contains(out.String(), want) {
		t.Errorf("banner %q lacks %q", out, want)
	}
	if want := "MCP on http://" + d.Addr() + "/mcp"; !strings.Contains(out.String(), want) {
		t.Errorf("banner %q lacks %q", out, want)
	}
}

// TestServesTLS: with --tls-cert/--tls-key the listener speaks HTTPS only,
// the banner says so, and no plaintext warning is logged on any address.
func TestServesTLS(t *testing.T) {
	certFile, keyFile, pool := selfSignedCert(t)
	d, logs, out := startHardened(t, func(o *config.Options) {
		o.Listen, o.Auth = "0.0.0.0:0", config.AuthKeys
		o.TLSCert, o.TLSKey = certFile, keyFile
	})
	_, port, _ := net.SplitHostPort(d.Addr())
	client := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
	resp, err := client.Get("https://127.0.0.1:" + port + "/healthz")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET over TLS = %d", resp.StatusCode)
	}
	plain, err := http.Get("http://127.0.0.1:" + port + "/healthz")
	if err == nil {
		plain.Body.Close()
		if plain.StatusCode == http.StatusOK {
			t.Fatal("the TLS listener answered plain HTTP")
		}
	}
	if strings.Contains(logs.String(), "without TLS") {
		t.Errorf("plaintext warning with TLS on:\n%s", logs)
	}
	if !strings.Contains(out.String(), "https://127.0.0.1:"+port+"/v1") {
		t.Errorf("banner %q lacks the https URL", out)
	}

	o := embeddedOptions(t)
	o.TLSCert, o.TLSKey = certFile, filepath.Join(t.TempDir(), "missing.pem")
	if _, err := Start(t.Context(), RoleAll, o, Deps{}); !IsUsage(err) || !strings.Contains(err.Error(), "--tls-key") {
		t.Fatalf("Start with a missing key = %v, want a usage error naming --tls-key", err)
	}
}

// selfSignedCert writes a certificate for 127.0.0.1 and its key to PEM
// files and returns them with a pool trusting the certificate.
func selfSignedCert(t *testing.T) (certFile, keyFile string, pool *x509.CertPool) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "mcpmon test"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)}, KeyUsage: x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	kder, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	certFile, keyFile = filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	for file, block := range map[string]*pem.Block{certFile: {Type: "CERTIFICATE", Bytes: der}, keyFile: {Type: "EC PRIVATE KEY", Bytes: kder}} {
		if err := os.WriteFile(file, pem.EncodeToMemory(block), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	pool = x509.NewCertPool()
	pool.AddCert(cert)
	return certFile, keyFile, pool
}
