package service

import (
	"net"
	"net/http"
	"time"

	"github.com/otelstep/otelstep/config"
	"github.com/otelstep/otelstep/otlpin"
	"google.golang.org/grpc/keepalive"
)

// This file keeps the process's file descriptors and the health endpoint
// available under a flood of connections: each OTLP listener accepts a
// bounded number of connections (the rest wait in the kernel's backlog,
// holding no descriptor of ours), idle ones are closed (gRPC keepalive's
// max_connection_idle, the HTTP server's timeouts), and the health endpoint
// has its own listener, bound and timeouts.

// fdReserve is the file descriptors kept out of the OTLP listeners' bound
// for everything else: the health endpoint, scrapes, the JSONL files, the
// exporters' connections, the runtime's own.
const fdReserve = 128

// maxConnections is the bound on the connections open at once on each OTLP
// listener: a quarter of the descriptors the process may open less
// fdReserve (two receivers of two protocols could share them), between 16
// and otlpin.DefaultMaxConnections.
func maxConnections() int {
	n, ok := openFileLimit()
	if !ok {
		return otlpin.DefaultMaxConnections
	}
	return int(min(max((n-fdReserve)/4, 16), otlpin.DefaultMaxConnections))
}

// grpcKeepalive is the otlpin form of protocols.grpc.keepalive.
func grpcKeepalive(k config.GRPCKeepalive) (keepalive.ServerParameters, keepalive.EnforcementPolicy) {
	return keepalive.ServerParameters{
			MaxConnectionIdle: k.MaxConnectionIdle, MaxConnectionAge: k.MaxConnectionAge, MaxConnectionAgeGrace: k.MaxConnectionAgeGrace,
			Time: k.Time, Timeout: k.Timeout,
		}, keepalive.EnforcementPolicy{
			MinTime: k.MinTime, PermitWithoutStream: k.PermitWithoutStream,
		}
}

// healthMaxConns bounds the health endpoint's open connections: a job
// script polls it once in a while, and a flood of it must not take the
// descriptors the receivers and sinks need. Its timeouts free a slot held
// by an idle or slow client within seconds.
const healthMaxConns = 32

// healthServer is the health endpoint's server on ln, bounded.
func healthServer(ln net.Listener, h http.Handler) (*http.Server, net.Listener) {
	srv := &http.Server{
		Handler:           h,
		ReadHeaderTimeout: 2 * time.Second,
		ReadTimeout:       5 * time.Second,
		WriteTimeout:      5 * time.Second,
		IdleTimeout:       5 * time.Second,
		MaxHeaderBytes:    16 << 10,
	}
	return srv, otlpin.LimitListener(ln, healthMaxConns)
}
