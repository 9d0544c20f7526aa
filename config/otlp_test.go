package config

import (
	"strings"
	"testing"
	"time"
)

func otlpConfig(grpc, http string) string {
	return `receivers:
  otlp:
    protocols:
      grpc:
        endpoint: 127.0.0.1:4317
` + grpc + `      http:
        endpoint: 127.0.0.1:4318
` + http + `exporters:
  file:
    path: /tmp/x.jsonl
service:
  pipelines:
    traces:
      receivers: [otlp]
      exporters: [file]
`
}

// The otlp receiver's gRPC keepalive and HTTP timeouts, with the
// collector's names; max_connection_idle is 2m unless set (0: none, as in
// gRPC); an HTTP timeout must be positive.
func TestOTLPConnectionSettings(t *testing.T) {
	c, err := Parse("t.yaml", []byte(otlpConfig("", "")), env(nil))
	if err != nil {
		t.Fatal(err)
	}
	o := c.OTLP["otlp"]
	if o.GRPCKeepalive != (GRPCKeepalive{MaxConnectionIdle: DefaultGRPCMaxConnectionIdle}) || o.HTTPServer != (HTTPServer{}) {
		t.Errorf("defaults: %+v %+v", o.GRPCKeepalive, o.HTTPServer)
	}
	c, err = Parse("t.yaml", []byte(otlpConfig(`        keepalive:
          server_parameters:
            max_connection_idle: 0s
            max_connection_age: 1h
            max_connection_age_grace: 30s
            time: 1m
            timeout: 5s
          enforcement_policy:
            min_time: 10s
            permit_without_stream: true
`, `        read_timeout: 30s
        read_header_timeout: 5s
        write_timeout: 40s
        keepalive:
          enabled: false
          idle_timeout: 90s
`)), env(nil))
	if err != nil {
		t.Fatal(err)
	}
	o = c.OTLP["otlp"]
	if want := (GRPCKeepalive{MaxConnectionAge: time.Hour, MaxConnectionAgeGrace: 30 * time.Second, Time: time.Minute, Timeout: 5 * time.Second, MinTime: 10 * time.Second, PermitWithoutStream: true}); o.GRPCKeepalive != want {
		t.Errorf("keepalive %+v, want %+v", o.GRPCKeepalive, want)
	}
	if want := (HTTPServer{ReadTimeout: 30 * time.Second, ReadHeaderTimeout: 5 * time.Second, WriteTimeout: 40 * time.Second, IdleTimeout: 90 * time.Second, DisableKeepAlives: true}); o.HTTPServer != want {
		t.Errorf("http %+v, want %+v", o.HTTPServer, want)
	}
	if c, err := Parse("t.yaml", []byte(otlpConfig("", "        idle_timeout: 3s\n")), env(nil)); err != nil || c.OTLP["otlp"].HTTPServer.IdleTimeout != 3*time.Second {
		t.Errorf("idle_timeout at the top: %v", err)
	}
	for _, bad := range []struct{ grpc, http, want string }{
		{"", "        read_header_timeout: 0s\n", "read_header_timeout: a timeout must be positive"},
		{"        keepalive:\n          server_parameters:\n            max_idle: 1m\n", "", `unknown key "max_idle"`},
		{"        keepalive:\n          server_parameters:\n            time: soon\n", "", "protocols.grpc.keepalive.server_parameters.time"},
	} {
		_, err := Parse("t.yaml", []byte(otlpConfig(bad.grpc, bad.http)), env(nil))
		if err == nil || !strings.Contains(err.Error(), bad.want) {
			t.Errorf("%q%q: %v, want %q", bad.grpc, bad.http, err, bad.want)
		}
	}
}
