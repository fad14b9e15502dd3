package tracing

import (
	"errors"
	"fmt"
	"net/url"
	"strings"

	"github.com/mcpmon/mcpmon/pkg/model"
)

// OTLP protocols the exporter speaks (OTEL_EXPORTER_OTLP_PROTOCOL).
const (
	ProtocolHTTP = "http/protobuf"
	ProtocolGRPC = "grpc"
)

// The standard variables Decide reads. The exporters and the SDK read the
// others themselves (OTEL_EXPORTER_OTLP_HEADERS, _TIMEOUT, _COMPRESSION,
// _CERTIFICATE, OTEL_TRACES_SAMPLER(_ARG), OTEL_BSP_*, OTEL_SERVICE_NAME,
// OTEL_RESOURCE_ATTRIBUTES), so their meaning is the SDK's, not a copy.
const (
	EnvEndpoint       = "OTEL_EXPORTER_OTLP_ENDPOINT"
	EnvTracesEndpoint = "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"
	EnvProtocol       = "OTEL_EXPORTER_OTLP_PROTOCOL"
	EnvTracesProtocol = "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL"
	EnvTracesExporter = "OTEL_TRACES_EXPORTER"
	EnvSDKDisabled    = "OTEL_SDK_DISABLED"
)

// maxEndpointLen bounds the --otlp-endpoint URL before it is parsed.
const maxEndpointLen = 2048

// Setup is what Decide made of the flag and the environment.
type Setup struct {
	// On exports traces; off, the prober's tracer is the no-op one.
	On       bool
	Protocol string // ProtocolHTTP or ProtocolGRPC
	// URL is where the exporter sends, from --otlp-endpoint: the traces
	// URL (base + /v1/traces) for OTLP/HTTP, scheme://host:port for gRPC.
	// Empty: the exporter reads OTEL_EXPORTER_OTLP_(TRACES_)ENDPOINT.
	URL string
	// Shown is the receiver as it may be logged: model.RedactURL's form,
	// credential-like query values redacted.
	Shown string
}

// ErrConfig reports a tracing setting that cannot be used.
var ErrConfig = errors.New("tracing configuration")

// Decide turns --otlp-endpoint (flag, "" when unset) and the standard
// OTEL_* variables into a Setup. Tracing is on when the flag or either
// endpoint variable is set, unless OTEL_SDK_DISABLED=true or
// OTEL_TRACES_EXPORTER=none. The flag is a base URL like
// OTEL_EXPORTER_OTLP_ENDPOINT and wins over both variables.
func Decide(flag string, getenv func(string) string) (Setup, error) {
	env := func(k string) string { return strings.TrimSpace(getenv(k)) }
	if strings.EqualFold(env(EnvSDKDisabled), "true") {
		return Setup{}, nil
	}
	switch exp := env(EnvTracesExporter); exp {
	case "", "otlp":
	case "none":
		return Setup{}, nil
	default:
		return Setup{}, fmt.Errorf("%w: %s=%q: only otlp (or none) is supported", ErrConfig, EnvTracesExporter, truncate(exp))
	}
	s := Setup{Protocol: cmpOr(env(EnvTracesProtocol), env(EnvProtocol), ProtocolHTTP)}
	switch s.Protocol {
	case ProtocolHTTP, ProtocolGRPC:
	default:
		return Setup{}, fmt.Errorf("%w: OTLP protocol %q: want %s or %s", ErrConfig, truncate(s.Protocol), ProtocolHTTP, ProtocolGRPC)
	}
	envURL := cmpOr(env(EnvTracesEndpoint), env(EnvEndpoint))
	switch {
	case flag != "":
		u, err := baseURL(flag)
		if err != nil {
			return Setup{}, err
		}
		s.URL, s.Shown = signalURL(u, s.Protocol), model.RedactURL(u.String())
	case envURL != "":
		s.Shown = model.RedactURL(envURL)
	default:
		return Setup{}, nil
	}
	s.On = true
	return s, nil
}

// baseURL checks --otlp-endpoint: an http(s) URL with a host and neither
// credentials nor a query (headers carry credentials:
// OTEL_EXPORTER_OTLP_HEADERS).
func baseURL(raw string) (*url.URL, error) {
	if len(raw) > maxEndpointLen {
		return nil, fmt.Errorf("%w: --otlp-endpoint is longer than %d bytes", ErrConfig, maxEndpointLen)
	}
	u, err := url.Parse(raw)
	switch {
	case err != nil || u.Host == "" || (u.Scheme != "http" && u.Scheme != "https"):
		return nil, fmt.Errorf("%w: --otlp-endpoint %q: want an http(s) URL with a host, such as http://collector:4318", ErrConfig, model.RedactURL(raw))
	case u.User != nil || u.RawQuery != "" || u.Fragment != "":
		return nil, fmt.Errorf("%w: --otlp-endpoint %q: no user, query or fragment (send credentials in %s)", ErrConfig, model.RedactURL(raw), "OTEL_EXPORTER_OTLP_HEADERS")
	}
	return u, nil
}

// signalURL is where the exporter sends: for OTLP/HTTP the base URL's path
// with /v1/traces appended, as the specification says of
// OTEL_EXPORTER_OTLP_ENDPOINT; for gRPC the scheme and host (the path is
// not part of a gRPC target).
func signalURL(u *url.URL, protocol string) string {
	if protocol == ProtocolGRPC {
		return u.Scheme + "://" + u.Host
	}
	v := *u
	v.Path = strings.TrimSuffix(v.Path, "/") + "/v1/traces"
	v.RawPath = ""
	return v.String()
}

func cmpOr(vs ...string) string {
	for _, v := range vs {
		if v != "" {
			return v
		}
	}
	return ""
}

// truncate bounds a value from the environment before it is echoed.
func truncate(s string) string {
	if len(s) > 64 {
		return s[:64] + "…"
	}
	return s
}
