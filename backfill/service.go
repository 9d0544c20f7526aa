package service

import (
	"context"
	"log/slog"

	"github.com/otelstep/otelstep/config"
	"github.com/otelstep/otelstep/replay"
	"github.com/otelstep/otelstep/sink"
)

// backfill is the delivery record of one JSONL file for one OTLP/HTTP
// exporter that shares a pipeline with it, and the goroutine that sends
// again, from the file, what the exporter did not deliver (replay.Record,
// replay.Backfill).
type backfill struct {
	id       string // "file/metrics -> otlp_http/managed", for logs
	exporter string // "otlp_http/managed"
	rec      *replay.Record
	o        replay.BackfillOptions
	cancel   context.CancelFunc
	done     chan struct{}
}

// track has fan record, for the pipeline's first JSONL file and each of
// its OTLP/HTTP exporters, which of the file's lines the exporter
// delivered. A file that cannot have a record (not a regular file, a
// record that cannot be read) is exported without one: the file is
// written all the same, and `otelstep replay` sends it.
func (s *Service) track(fan *sink.Fanout, exp []sink.Sink, log *slog.Logger) {
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
		if s.backfills == nil {
			s.backfills = map[string]*backfill{}
		}
		bf, ok := s.backfills[id]
		if !ok {
			ec := s.cfg.OTLPHTTP[h.Name()]
			bf = newBackfill(id, s.cfg.Files[file.Name()], ec, s.cfg.Secrets, h, log)
			if bf == nil {
				continue
			}
			s.backfills[id] = bf
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
	return &backfill{id: id, exporter: h.Name(), rec: rec, o: replay.BackfillOptions{
		Record: rec, Exporter: h, Token: sink.BearerToken(ec.Headers), Secrets: secrets, Logger: lg,
	}}
}

// startBackfills starts every backfill, once the sinks run.
func (s *Service) startBackfills(ctx context.Context) {
	for _, bf := range s.backfills {
		bctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
		bf.cancel, bf.done = cancel, make(chan struct{})
		go func() {
			defer close(bf.done)
			replay.Backfill(bctx, bf.o)
		}()
	}
}

// stopBackfills stops every backfill: a request in flight is cut short,
// its lines left to the next run.
func (s *Service) stopBackfills() {
	for _, bf := range s.backfills {
		if bf.cancel != nil {
			bf.cancel()
			<-bf.done
		}
	}
}

// closeRecords writes every delivery record, once the sinks reporting to
// them are shut down. A record that cannot be written is logged: its file
// is whole, and the next run or `otelstep replay` resends what it would
// have said was delivered.
func (s *Service) closeRecords() {
	for _, bf := range s.backfills {
		_ = bf.rec.Close()
	}
}
