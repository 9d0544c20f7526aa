package backfill

import (
	"context"
	"log/slog"
	"sort"

	"github.com/otelstep/otelstep/config"
	"github.com/otelstep/otelstep/replay"
	"github.com/otelstep/otelstep/sink"
)

// Set is a service's delivery records and backfills: one for each JSONL
// file and OTLP/HTTP exporter that share a pipeline, by "FILE ->
// EXPORTER". The zero Set holds none; it is not safe for concurrent use
// (the service builds it, then starts and stops it).
type Set struct {
	m map[string]*backfill
}

// backfill is the delivery record of one JSONL file for one OTLP/HTTP
// exporter, and the goroutine that sends again, from the file, what the
// exporter did not deliver (replay.Record, Run).
type backfill struct {
	id       string // "file/metrics -> otlp_http/managed", for logs
	exporter string // "otlp_http/managed"
	rec      *replay.Record
	o        Options
	cancel   context.CancelFunc
	done     chan struct{}
}

// Track has fan record, for the pipeline's first JSONL file and each of
// its OTLP/HTTP exporters (among exp, the pipeline's sinks), which of the
// file's lines the exporter delivered. A file that cannot have a record
// (not a regular file, a record that cannot be read) is exported without
// one: the file is written all the same, and `otelstep replay` sends it.
func (s *Set) Track(cfg *config.Config, fan *sink.Fanout, exp []sink.Sink, log *slog.Logger) {
	var file *sink.File
	for _, e := range exp {
		if f, ok := e.(*sink.File); ok {
			file = f
			break
		}
	}
	if file == nil {
		return
	}
	for _, e := range exp {
		h, ok := e.(*sink.HTTP)
		if !ok {
			continue
		}
		id := file.Name() + " -> " + h.Name()
		if s.m == nil {
			s.m = map[string]*backfill{}
		}
		bf, ok := s.m[id]
		if !ok {
			ec := cfg.OTLPHTTP[h.Name()]
			bf = newBackfill(id, cfg.Files[file.Name()], ec, cfg.Secrets, h, log)
			if bf == nil {
				continue
			}
			s.m[id] = bf
		}
		fan.Track(file, h, bf.rec)
	}
}

func newBackfill(id string, fc config.FileExporter, ec *config.OTLPHTTPExporter, secrets []string, h *sink.HTTP, log *slog.Logger) *backfill {
	endpoint := ec.Endpoint
	if endpoint == "" {
		endpoint = ec.MetricsEndpoint + ec.TracesEndpoint + ec.LogsEndpoint
	}
	lg := log.With("backfill", id)
	rec, err := replay.OpenRecord(replay.RecordOptions{File: fc.Path, Endpoint: endpoint, Logger: lg})
	if err != nil {
		lg.Warn("no delivery record: what the exporter does not deliver is not sent again by otelstep (`otelstep replay` sends it)", "error", err)
		return nil
	}
	h.AddBacklog(rec.Backlog)
	return &backfill{id: id, exporter: h.Name(), rec: rec, o: Options{
		Record: rec, Exporter: h, Token: sink.BearerToken(ec.Headers), Secrets: secrets, Logger: lg,
	}}
}

// Records returns the delivery records of exporter's files, in the order
// of their ids.
func (s *Set) Records(exporter string) []*replay.Record {
	var out []*replay.Record
	for _, id := range s.ids() {
		if bf := s.m[id]; bf.exporter == exporter {
			out = append(out, bf.rec)
		}
	}
	return out
}

func (s *Set) ids() []string {
	ids := make([]string, 0, len(s.m))
	for id := range s.m {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	return ids
}

// Start starts every backfill, once the sinks run.
func (s *Set) Start(ctx context.Context) {
	for _, bf := range s.m {
		bctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
		bf.cancel, bf.done = cancel, make(chan struct{})
		go func() {
			defer close(bf.done)
			Run(bctx, bf.o)
		}()
	}
}

// Stop stops every backfill: a request in flight is cut short, its lines
// left to the next run.
func (s *Set) Stop() {
	for _, bf := range s.m {
		if bf.cancel != nil {
			bf.cancel()
			<-bf.done
		}
	}
}

// Close writes every delivery record, once the sinks reporting to them
// are shut down. A record that cannot be written is logged: its file is
// whole, and the next run or `otelstep replay` resends what it would have
// said was delivered.
func (s *Set) Close() {
	for _, bf := range s.m {
		_ = bf.rec.Close()
	}
}
