package config

import (
	"time"

	"go.yaml.in/yaml/v3"
)

// DefaultGRPCMaxConnectionIdle is keepalive.server_parameters.
// max_connection_idle unset: a gRPC connection with no call for this long
// is told to go away (GOAWAY) and closed. The collector leaves it to gRPC,
// which keeps idle connections for ever, until they can take every file
// descriptor, health's too. Two minutes is the OTLP/HTTP
// receiver's idle timeout, and far longer than an SDK's export interval,
// so a live exporter's connection is not churned.
const DefaultGRPCMaxConnectionIdle = 2 * time.Minute

// GRPCKeepalive is protocols.grpc.keepalive, with the collector's names and
// gRPC's meaning: a zero duration is gRPC's default (no bound for the idle
// time, the age and its grace; 2h between pings, 20s for their answer; a
// client may ping every 5m, and only during calls).
type GRPCKeepalive struct {
	// server_parameters
	MaxConnectionIdle     time.Duration // DefaultGRPCMaxConnectionIdle when unset
	MaxConnectionAge      time.Duration
	MaxConnectionAgeGrace time.Duration
	Time                  time.Duration
	Timeout               time.Duration
	// enforcement_policy
	MinTime             time.Duration
	PermitWithoutStream bool
}

// HTTPServer is protocols.http's timeouts and keep-alives, with the
// collector's names and net/http's meaning. Unset (zero) is otelstep's
// default (otlpin); a zero or negative value is refused, since no timeout
// would let one client hold a connection for ever.
type HTTPServer struct {
	ReadTimeout       time.Duration // read_timeout
	ReadHeaderTimeout time.Duration // read_header_timeout
	WriteTimeout      time.Duration // write_timeout
	IdleTimeout       time.Duration // idle_timeout, or keepalive.idle_timeout
	// DisableKeepAlives is keepalive.enabled: false (a connection per
	// request).
	DisableKeepAlives bool
}

// grpcKeepalive decodes protocols.grpc.keepalive into k.
func (d *dec) grpcKeepalive(v *yaml.Node, path string, k *GRPCKeepalive) error {
	return d.mapping(v, path, []string{"server_parameters", "enforcement_policy"}, func(key string, kn, vn *yaml.Node) error {
		kp := join(path, key)
		if key == "server_parameters" {
			return d.mapping(vn, kp, []string{"max_connection_idle", "max_connection_age", "max_connection_age_grace", "time", "timeout"}, func(key string, kn, vn *yaml.Node) error {
				into := &k.MaxConnectionIdle
				switch key {
				case "max_connection_age":
					into = &k.MaxConnectionAge
				case "max_connection_age_grace":
					into = &k.MaxConnectionAgeGrace
				case "time":
					into = &k.Time
				case "timeout":
					into = &k.Timeout
				}
				var err error
				*into, err = d.duration(vn, join(kp, key))
				return err
			})
		}
		return d.mapping(vn, kp, []string{"min_time", "permit_without_stream"}, func(key string, kn, vn *yaml.Node) error {
			var err error
			if key == "min_time" {
				k.MinTime, err = d.duration(vn, join(kp, key))
			} else {
				k.PermitWithoutStream, err = d.boolean(vn, join(kp, key))
			}
			return err
		})
	})
}

// httpServerKeys are the keys of protocols.http httpServerKey decodes.
var httpServerKeys = []string{"read_timeout", "read_header_timeout", "write_timeout", "idle_timeout", "keepalive"}

// httpServerKey decodes one of httpServerKeys into h.
func (d *dec) httpServerKey(key string, v *yaml.Node, path string, h *HTTPServer) error {
	kp := join(path, key)
	timeout := func(n *yaml.Node, p string, into *time.Duration) error {
		t, err := d.duration(n, p)
		if err == nil && t <= 0 {
			err = d.errf(n, p, "a timeout must be positive: without one a client could hold a connection for ever")
		}
		*into = t
		return err
	}
	switch key {
	case "read_timeout":
		return timeout(v, kp, &h.ReadTimeout)
	case "read_header_timeout":
		return timeout(v, kp, &h.ReadHeaderTimeout)
	case "write_timeout":
		return timeout(v, kp, &h.WriteTimeout)
	case "idle_timeout":
		return timeout(v, kp, &h.IdleTimeout)
	}
	return d.mapping(v, kp, []string{"enabled", "idle_timeout"}, func(key string, kn, vn *yaml.Node) error {
		if key == "idle_timeout" {
			return timeout(vn, join(kp, key), &h.IdleTimeout)
		}
		on, err := d.boolean(vn, join(kp, key))
		h.DisableKeepAlives = !on
		return err
	})
}
