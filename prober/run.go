package prober

// run.go owns one probe's state (the run) and the choice of era: which
// handshake to try first and when to fall back to another. The handshakes
// are in discover.go (2026-07-28), handshake.go (initialize, shared by
// Streamable HTTP and legacy HTTP+SSE) and legacy.go (the 2024-11-05
// stream); the requests they send in streamable.go, request.go and
// reqwire.go; failures are classified in classify.go.

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/mcpmon/mcpmon/pkg/model"
	"github.com/mcpmon/mcpmon/pkg/msg"
	"github.com/mcpmon/mcpmon/pkg/netguard"
)

// run is the state of one probe: its own transport (no connection reuse
// across probes), trace timings, the negotiated session.
type run struct {
	p   *Prober
	ep  model.Endpoint
	res *msg.ProbeResult
	u   *url.URL

	client *httpClient
	// timeout is the probe's timeout, named by the messages of a timeout.
	timeout time.Duration

	mu      sync.Mutex
	phases  [11]phaseDur // msg.Phases() but total, tool_call and auth_token
	nPhases int
	marks   [3]timeMark // dns, connect, tls
	nMarks  int

	version   string
	sessionID string
	legacy    *legacyStream
	nextID    int64
	hasTools  bool

	buf []byte // readBody's buffer

	// The request headers' and the fast writer's state (request.go, reqwire.go).
	uri           string
	epHeaders     []hfield
	epHeadersDone bool
	hbuf          []hfield
	numBuf        [20]byte

	tools     []json.RawMessage // nil when tools/list was not read
	toolsMore bool              // tools/list had pages beyond those read (catalogLimits.full)
	degraded  *probeError       // why an alive server is degraded (tools/list failing)

	conf confCapture // what the conformance rules judge (conformance.go)

	// traceparent and tracestate go to the target on every request when
	// the endpoint opted in (otel.go); empty otherwise.
	traceparent, tracestate string
}

func newRun(p *Prober, ep model.Endpoint, res *msg.ProbeResult) *run {
	r := &run{p: p, ep: ep, res: res, timeout: p.timeoutOf(ep)}
	r.client = &httpClient{r: r}
	return r
}

// tlsConfig verifies the chain itself (the standard-library recipe for
// VerifyConnection) so it can record the certificate expiry even when
// verification fails, e.g. on an expired certificate.
func (r *run) tlsConfig() *tls.Config {
	roots := r.p.opts.RootCAs
	return &tls.Config{
		MinVersion:         tls.VersionTLS12,
		InsecureSkipVerify: true, // verified in VerifyConnection below
		VerifyConnection: func(cs tls.ConnectionState) error {
			if len(cs.PeerCertificates) == 0 {
				return errors.New("tls: server sent no certificate")
			}
			var exp time.Time
			for _, c := range cs.PeerCertificates {
				if exp.IsZero() || c.NotAfter.Before(exp) {
					exp = c.NotAfter
				}
			}
			r.mu.Lock()
			if r.res.CertExpiry == nil {
				e := exp.UTC()
				r.res.CertExpiry = &e
			}
			r.mu.Unlock()
			inter := x509.NewCertPool()
			for _, c := range cs.PeerCertificates[1:] {
				inter.AddCert(c)
			}
			_, err := cs.PeerCertificates[0].Verify(x509.VerifyOptions{
				DNSName:       cs.ServerName,
				Roots:         roots,
				Intermediates: inter,
			})
			return err
		},
	}
}

func (r *run) close() {
	if r.legacy != nil {
		r.legacy.close()
	}
	r.client.closeAll()
}

// probe chooses the era(s) to try and runs the handshake.
func (r *run) probe(ctx context.Context, prev *msg.ProbeResult) error {
	u, err := url.Parse(r.ep.URL)
	if err != nil {
		return failf(ClassProtocolError, 0, "invalid endpoint URL: %v", err)
	}
	r.u = u
	if err := r.p.guard.CheckURL(u); err != nil {
		if errors.Is(err, netguard.ErrBlocked) {
			return blocked(0, err)
		}
		return failf(ClassProtocolError, 0, "%v", err)
	}
	ctx = r.trace(ctx)
	pinned := r.ep.ProtocolVersion
	if pinned != "" && !slices.Contains(versions[:], pinned) {
		return failf(ClassVersionMismatch, 0, "pinned protocol version %q is not one the prober speaks (%s)", pinned, strings.Join(versions[:], ", "))
	}

	transport := r.ep.Transport
	if transport == "" {
		transport = TransportAuto
	}
	switch {
	case transport == TransportSSE || pinned == Version20241105:
		return r.legacyProbe(ctx)
	case pinned == Version20260728:
		return r.pinnedDiscoverProbe(ctx)
	case pinned != "":
		return r.initializeProbe(ctx, pinned)
	}

	prevVersion := ""
	if prev != nil && prev.Status != msg.StatusDown && !renegotiate(r.ep.ID, prev.Slot, r.res.Slot) {
		prevVersion = prev.ProtocolVersion
		if transport == TransportAuto && prev.Transport == TransportSSE {
			err := r.legacyProbe(ctx)
			if fallbackToStreamable(err) {
				r.resetSession()
				return r.initializeProbe(ctx, Version20251125)
			}
			return err
		}
	}
	if prevVersion == "" || prevVersion == Version20260728 {
		err := r.discoverProbe(ctx)
		if !fallbackFromDiscover(err) {
			return err
		}
		r.resetSession()
	}
	ver := Version20251125
	if prevVersion != "" && prevVersion != Version20260728 && prevVersion != Version20241105 {
		ver = prevVersion
	}
	err = r.initializeProbe(ctx, ver)
	if transport == TransportAuto && fallbackToLegacy(err) {
		r.resetSession()
		lerr := r.legacyProbe(ctx)
		if !fallbackToStreamable(lerr) {
			return lerr
		}
		if classOf(err) == ClassNotFound && classOf(lerr) == ClassNotMCP {
			// POST not served, GET a page: a web site, not an MCP server.
			return lerr
		}
		// Not a legacy server either: report what Streamable HTTP saw.
		r.resetSession()
		r.res.Transport = TransportStreamableHTTP
	}
	return err
}

// pinnedDiscoverProbe speaks only 2026-07-28, as the endpoint pins it: a
// server that answers server/discover the way a 2025-era server does does
// not speak the pinned revision.
func (r *run) pinnedDiscoverProbe(ctx context.Context) error {
	err := r.discoverProbe(ctx)
	if !fallbackFromDiscover(err) || classOf(err) == ClassVersionMismatch {
		return err
	}
	switch classOf(err) {
	case ClassNotFound, ClassNotMCP, ClassHTTP5xx, ClassSessionBroken:
		return err // says nothing about the revision
	}
	return failf(ClassVersionMismatch, 0, "endpoint pins protocol %s but the server answered server/discover as a 2025-era server: %v", Version20260728, err)
}

func (r *run) resetSession() {
	if r.legacy != nil {
		r.legacy.close()
		r.legacy = nil
	}
	r.sessionID, r.version, r.hasTools = "", "", false
	r.conf.reset()
	r.res.ServerName, r.res.ServerVersion, r.res.ProtocolVersion, r.res.Transport = "", "", "", ""
	r.dropAttemptPhases()
}

// fallbackFromDiscover: a server that answered server/discover but not as a
// 2026-07-28 server (400 -32000 "not initialized", -32022 unsupported version,
// -32601, 404/405, an HTML page) gets the 2025-era handshake. Failures that
// say nothing about the era (refused, timeout, auth, TLS, blocked) end the probe.
func fallbackFromDiscover(err error) bool {
	if err == nil {
		return false
	}
	switch classOf(err) {
	case ClassRefused, ClassDNS, ClassTLS, ClassTimeout, ClassBlockedTarget, ClassNetwork,
		ClassAuthRequired, ClassAuthRejected, ClassAuthMisconfigured, ClassForbidden, ClassRateLimited,
		ClassToolFailed: // the server spoke 2026-07-28; only its tool failed
		return false
	}
	return true
}

// fallbackToLegacy: a Streamable HTTP initialize answered 404/405 or with a
// non-MCP page may be a 2024-11-05 server whose URL is the SSE stream.
func fallbackToLegacy(err error) bool {
	var pe *probeError
	if !errors.As(err, &pe) {
		return false
	}
	return pe.class == ClassNotFound || (pe.class == ClassProtocolError && (pe.status == 400 || pe.status == 406 || pe.status == 415))
}

func fallbackToStreamable(err error) bool {
	return fallbackToLegacy(err) || classOf(err) == ClassNotMCP
}
