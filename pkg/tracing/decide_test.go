package tracing

import (
	"errors"
	"strings"
	"testing"
)

func TestDecide(t *testing.T) {
	for _, tc := range []struct {
		name    string
		flag    string
		env     map[string]string
		want    Setup
		wantErr string
	}{
		{name: "off by default"},
		{name: "flag, OTLP/HTTP appends the signal path", flag: "http://collector:4318",
			want: Setup{On: true, Protocol: ProtocolHTTP, URL: "http://collector:4318/v1/traces", Shown: "http://collector:4318"}},
		{name: "flag with a base path", flag: "https://gw.example.com/otlp/",
			want: Setup{On: true, Protocol: ProtocolHTTP, URL: "https://gw.example.com/otlp/v1/traces", Shown: "https://gw.example.com/otlp/"}},
		{name: "flag over gRPC keeps scheme and host", flag: "http://collector:4317/ignored", env: map[string]string{EnvProtocol: "grpc"},
			want: Setup{On: true, Protocol: ProtocolGRPC, URL: "http://collector:4317", Shown: "http://collector:4317/ignored"}},
		{name: "traces protocol wins over the general one", flag: "http://c:4317", env: map[string]string{EnvProtocol: "http/protobuf", EnvTracesProtocol: "grpc"},
			want: Setup{On: true, Protocol: ProtocolGRPC, URL: "http://c:4317", Shown: "http://c:4317"}},
		{name: "endpoint variable turns it on, the exporter reads it", env: map[string]string{EnvEndpoint: "http://c:4318"},
			want: Setup{On: true, Protocol: ProtocolHTTP, Shown: "http://c:4318"}},
		{name: "traces endpoint variable", env: map[string]string{EnvTracesEndpoint: "http://c:4318/v1/traces?token=s3cr3t"},
			want: Setup{On: true, Protocol: ProtocolHTTP, Shown: "http://c:4318/v1/traces?token=<redacted>"}},
		{name: "SDK disabled", flag: "http://c:4318", env: map[string]string{EnvSDKDisabled: "true"}},
		{name: "exporter none", flag: "http://c:4318", env: map[string]string{EnvTracesExporter: "none"}},
		{name: "exporter otlp", flag: "http://c:4318", env: map[string]string{EnvTracesExporter: "otlp"},
			want: Setup{On: true, Protocol: ProtocolHTTP, URL: "http://c:4318/v1/traces", Shown: "http://c:4318"}},
		{name: "exporter console refused", env: map[string]string{EnvTracesExporter: "console"}, wantErr: "only otlp"},
		{name: "http/json refused", flag: "http://c:4318", env: map[string]string{EnvProtocol: "http/json"}, wantErr: `OTLP protocol "http/json"`},
		{name: "not a URL", flag: "collector:4318", wantErr: "want an http(s) URL with a host"},
		{name: "credentials in the URL refused, not echoed", flag: "http://user:pw-secret@c:4318", wantErr: "no user, query or fragment"},
		{name: "query refused", flag: "http://c:4318?api_key=q-secret", wantErr: "no user, query or fragment"},
		{name: "too long", flag: "http://c/" + strings.Repeat("a", maxEndpointLen), wantErr: "longer than"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Decide(tc.flag, func(k string) string { return tc.env[k] })
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) || !errors.Is(err, ErrConfig) {
					t.Fatalf("err %v, want one with %q", err, tc.wantErr)
				}
				for _, secret := range []string{"pw-secret", "q-secret"} {
					if strings.Contains(err.Error(), secret) {
						t.Errorf("error echoes a secret: %v", err)
					}
				}
				return
			}
			if err != nil || got != tc.want {
				t.Errorf("Decide = %+v, %v; want %+v", got, err, tc.want)
			}
		})
	}
}
