package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/connectivity"
	"google.golang.org/grpc/credentials/insecure"
)

// A flood of idle connections to both OTLP listeners of otelstep run with
// 256 file descriptors: it accepts a bounded number at once (a quarter of
// the descriptors less a reserve, 32 per listener here), so it never holds
// more than about half of its descriptors however many wait, the health
// endpoint answers throughout, every idle connection is closed (the HTTP
// header timeout, gRPC's max_connection_idle, both 200ms here), and
// otelstep goes on receiving and stops cleanly.
func TestConnectionFloodLeavesHealth(t *testing.T) {
	if _, err := os.Stat("/proc/self/fd"); err != nil {
		t.Skip("needs /proc to count a process's file descriptors")
	}
	dir := t.TempDir()
	health, grpcAddr, httpAddr := freePort(t), freePort(t), freePort(t)
	cfgPath := writeConfig(t, dir, jsonlConfig(health, `      grpc:
        endpoint: `+grpcAddr+`
        keepalive:
          server_parameters:
            max_connection_idle: 200ms
      http:
        endpoint: `+httpAddr+`
        read_header_timeout: 200ms
        idle_timeout: 200ms
`, filepath.Join(dir, "traces.jsonl"), ""))
	// otelstep with 256 descriptors, soft and hard.
	wrapper := filepath.Join(dir, "otelstep-256")
	if err := os.WriteFile(wrapper, []byte("#!/bin/sh\nulimit -n 256 || exit 99\nexec "+buildBinary(t)+` "$@"`+"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	p := startOtelstep(t, wrapper, cfgPath, health, "OTEL_TOKEN="+testToken)
	fdDir := fmt.Sprintf("/proc/%d/fd", p.Cmd.Process.Pid)
	fds := func() int {
		ents, err := os.ReadDir(fdDir)
		if err != nil {
			return -1
		}
		return len(ents)
	}
	base := fds()

	// The highest descriptor count seen while the flood drains.
	var mu sync.Mutex
	peak := base
	stopSampling := make(chan struct{})
	sampled := make(chan struct{})
	go func() {
		defer close(sampled)
		for {
			n := fds()
			mu.Lock()
			peak = max(peak, n)
			mu.Unlock()
			select {
			case <-stopSampling:
				return
			case <-time.After(time.Millisecond):
			}
		}
	}()

	const flood = 300
	raw := make([]net.Conn, flood)
	for i := range raw {
		c, err := net.Dial("tcp", httpAddr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		raw[i] = c
	}
	ctx, cancel := context.WithTimeout(context.Background(), patience)
	defer cancel()
	ccs := make([]*grpc.ClientConn, flood)
	for i := range ccs {
		cc, err := grpc.NewClient(grpcAddr, grpc.WithTransportCredentials(insecure.NewCredentials()))
		if err != nil {
			t.Fatal(err)
		}
		defer cc.Close()
		cc.Connect()
		ccs[i] = cc
	}

	// Health answers while the connections wait.
	for range 5 {
		resp, err := (&http.Client{Timeout: patience}).Get("http://" + health + "/")
		if err != nil {
			t.Fatalf("health during the flood: %v", err)
		}
		resp.Body.Close()
		if resp.StatusCode != 200 {
			t.Fatalf("health during the flood: %d", resp.StatusCode)
		}
	}

	// Every idle connection is closed by otelstep: the raw ones read EOF
	// (not a timeout), the gRPC ones are told to go away once READY.
	var wg sync.WaitGroup
	rawClosed, grpcClosed := make([]bool, flood), make([]bool, flood)
	for i, c := range raw {
		wg.Go(func() {
			_ = c.SetReadDeadline(time.Now().Add(patience))
			_, err := io.ReadAll(c)
			var ne net.Error
			rawClosed[i] = !(errors.As(err, &ne) && ne.Timeout())
		})
	}
	for i, cc := range ccs {
		wg.Go(func() {
			for s := cc.GetState(); s != connectivity.Ready; s = cc.GetState() {
				if s == connectivity.Idle {
					cc.Connect()
				}
				if !cc.WaitForStateChange(ctx, s) {
					return
				}
			}
			grpcClosed[i] = cc.WaitForStateChange(ctx, connectivity.Ready)
		})
	}
	wg.Wait()
	close(stopSampling)
	<-sampled
	count := func(bs []bool) (n int) {
		for _, b := range bs {
			if b {
				n++
			}
		}
		return n
	}
	if n := count(rawClosed); n != flood {
		t.Errorf("%d of %d idle HTTP connections closed by otelstep", n, flood)
	}
	if n := count(grpcClosed); n != flood {
		t.Errorf("%d of %d idle gRPC connections closed by otelstep", n, flood)
	}
	mu.Lock()
	// 2 x 32 accepted at most, plus what it had: far from 256.
	if peak > base+2*32+16 {
		t.Errorf("otelstep held %d descriptors at the peak of the flood (%d before it), want at most %d", peak, base, base+2*32+16)
	}
	t.Logf("descriptors: %d before the flood, %d at its peak, of 256", base, peak)
	mu.Unlock()

	// Still receiving, and a clean stop.
	sendSpans(t, httpAddr, 3)
	p.Stop(t)
}
