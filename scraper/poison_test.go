package scraper

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"testing"
	"time"

	colmetricspb "go.opentelemetry.io/proto/otlp/collector/metrics/v1"
	metricspb "go.opentelemetry.io/proto/otlp/metrics/v1"
	"google.golang.org/protobuf/proto"

	"github.com/otelstep/otelstep/pipeline"
	"github.com/otelstep/otelstep/sink"
)

// leasedScrape converts one of arenaPages with a fresh converter: its
// batch, with the scrape's lease, and what a converter without leases
// makes of the same page (the wanted output).
func leasedScrape(t *testing.T) (*pipeline.Batch, []byte) {
	t.Helper()
	p := arenaPages(t)[1]
	at := time.Unix(1_800_000_000, 0)
	want, err := NewConverter(fixtureTarget("arena")).ConvertAll(p.page, p.ct, at, time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	rms, leases, err := NewConverter(fixtureTarget("arena")).ConvertLeased(p.page, p.ct, at, time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	return &pipeline.Batch{Signal: pipeline.Metrics, Metrics: rms, Leases: leases}, marshalAll(t, want)
}

// encodeCaught is sink.EncodeRequest of b, with a panic returned as an
// error.
func encodeCaught(b *pipeline.Batch) (req []byte, err error) {
	defer func() {
		if r := recover(); r != nil {
			e, ok := r.(error)
			if !ok {
				e = fmt.Errorf("%v", r)
			}
			err = e
		}
	}()
	var out bytes.Buffer
	if err := sink.EncodeRequest(b, sink.Compression{}, &out); err != nil {
		return nil, err
	}
	return out.Bytes(), nil
}

// Held by two sinks and released by each once it has encoded it, a
// scrape's batch encodes to what a scrape without leases gives, in every
// build: the poison build's checks pass on a correct lifetime.
func TestReleaseAfterEncodePasses(t *testing.T) {
	b, want := leasedScrape(t)
	b.Retain(1) // two sinks
	for sinkNo := range 2 {
		req, err := encodeCaught(b)
		if err != nil {
			t.Fatalf("sink %d: %v", sinkNo, err)
		}
		var got colmetricspb.ExportMetricsServiceRequest
		if err := proto.Unmarshal(req, &got); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(marshalAll(t, got.ResourceMetrics), want) {
			t.Fatalf("sink %d encoded something other than the scrape", sinkNo)
		}
		b.Release()
	}
	if !b.Leases[0].Released() {
		t.Fatal("both sinks released the batch, its lease is not released")
	}
}

// A holder that releases for a sink still to encode (the bug a lease
// cannot see by itself) fails loudly in a poison build: the sink's
// encoder panics with pipeline.ErrUseAfterRelease, and the released
// memory itself reads as poison, so a reader that does not check sees
// garbage, not the next scrape's data. (A normal build lets the scrapes
// after it reuse the memory; the test needs the tag.)
func TestEarlyReleaseIsCaught(t *testing.T) {
	if !pipeline.PoisonReleased {
		t.Skip("an early release is caught in a build with -tags poison")
	}
	b, _ := leasedScrape(t)
	var gauges []*metricspb.NumberDataPoint
	for _, rm := range b.Metrics {
		for _, sm := range rm.ScopeMetrics {
			for _, m := range sm.Metrics {
				gauges = append(gauges, m.GetGauge().GetDataPoints()...)
			}
		}
	}
	if len(gauges) == 0 {
		t.Fatal("the page has no gauge points")
	}
	rms := b.Metrics
	b.Retain(1) // two sinks
	b.Release()
	b.Release() // the first sink releases twice: the second's reference too
	if _, err := encodeCaught(b); !errors.Is(err, pipeline.ErrUseAfterRelease) {
		t.Fatalf("encoding a released batch: %v, want a panic with %v", err, pipeline.ErrUseAfterRelease)
	}
	for i, p := range gauges {
		if p.TimeUnixNano != pipeline.PoisonUint64 || math.Float64bits(p.GetAsDouble()) != pipeline.PoisonFloat64Bits || p.Attributes != nil {
			t.Fatalf("gauge point %d of %d reads %v after the release: not poisoned", i, len(gauges), p)
		}
	}
	for _, rm := range rms {
		if rm.SchemaUrl != "\xdb\xdbreleased" || rm.Resource != nil || rm.ScopeMetrics != nil {
			t.Fatalf("a released resource reads %v: not poisoned", rm)
		}
	}
	// Retaining it again cannot revive it, in any build.
	defer func() {
		if r := recover(); r != pipeline.ErrUseAfterRelease {
			t.Fatalf("Retain of a released lease: recovered %v, want %v", r, pipeline.ErrUseAfterRelease)
		}
	}()
	b.Retain(1)
}
