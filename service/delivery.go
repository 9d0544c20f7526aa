package service

import (
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/otelstep/otelstep/config"
	"github.com/otelstep/otelstep/internal/shellquote"
	"github.com/otelstep/otelstep/replay"
	"github.com/otelstep/otelstep/sink"
)

// ReportEveryEnv names the environment variable that sets how often an
// exporter's run of failed exports is summed up in the log (a Go duration;
// default sink.DefaultReportEvery).
const ReportEveryEnv = "OTELSTEP_EXPORTER_REPORT_EVERY"

// PlainScrubEnv names the environment variable that, set to 1, turns the
// JSONL token scrubber's sampled-word search off (sink.FileOptions.PlainScrub).
const PlainScrubEnv = "OTELSTEP_PLAIN_SCRUB"

func plainScrub() bool { return os.Getenv(PlainScrubEnv) == "1" }

// reportEvery is ReportEveryEnv's duration, 0 (the default) when unset or
// invalid (logged).
func reportEvery(log *slog.Logger) time.Duration {
	v, ok := os.LookupEnv(ReportEveryEnv)
	if !ok || v == "" {
		return 0
	}
	d, err := time.ParseDuration(v)
	if err != nil || d <= 0 {
		log.Warn("ignored: not a positive duration", "variable", ReportEveryEnv, "value", v)
		return 0
	}
	return d
}

// tokenEnv is the variable the exporter's Authorization header was
// expanded from, "" when none.
func tokenEnv(e *config.OTLPHTTPExporter) string {
	for k, vs := range e.HeaderVars {
		if config.IsSecretKey(k) && len(vs) > 0 {
			return vs[0]
		}
	}
	return ""
}

// deliverySummary is the stop line's account of what the OTLP/HTTP
// exporters took, over all of them: each batch's fate (the fates sum to
// what they took), what the backfill sent, what is left in the JSONL
// files, and, when anything is, the `otelstep replay` command per
// exporter that sends exactly that.
func (s *Service) deliverySummary() []any {
	if len(s.https) == 0 {
		return nil
	}
	fates := make([]sink.FateCount, len(sink.Fates()))
	var (
		accepted   sink.FateCount
		backfilled uint64
		left       sink.Backlog
		commands   []string
	)
	for _, h := range s.https {
		st := h.Stats()
		for _, f := range sink.Fates() {
			fates[f].Batches += st.Fates[f].Batches
			fates[f].Items += st.Fates[f].Items
		}
		a := st.Accepted()
		accepted.Batches += a.Batches
		accepted.Items += a.Items
		backfilled += st.BackfilledItems
		bl := h.Status().Backlog
		left = left.Add(bl)
		if bl.Total().Batches > 0 {
			if c := s.replayCommand(h.Name(), s.backfills.Records(h.Name())); c != "" {
				commands = append(commands, c)
			}
		}
	}
	// The leading figures say what became of what the backend was given:
	// accepted = delivered + left, then what was left by reason.
	out := []any{"backend_accepted_items", accepted.Items, "backend_delivered_items", fates[sink.Delivered].Items,
		"backend_left_items", accepted.Items - fates[sink.Delivered].Items}
	for _, f := range sink.Fates() {
		if f != sink.Delivered {
			out = append(out, "backend_left_"+f.String()+"_items", fates[f].Items)
		}
	}
	// What is in the JSONL files at stop is all left for replay: the
	// backfill ends with the run.
	all := left.Total()
	out = append(out, "backfill_sent_items", backfilled, "left_for_replay_batches", all.Batches, "left_for_replay_bytes", all.Bytes)
	if len(commands) > 0 {
		out = append(out, "replay", strings.Join(commands, " && "))
	}
	return out
}

// replayCommand is the `otelstep replay` command that sends to exporter
// id's backend what its delivery records' (recs) files hold that it has
// not got:
// the endpoint without userinfo, the files, the token's variable by name
// and the other headers by their variables' names (never a value). ""
// when the exporter has no single endpoint.
func (s *Service) replayCommand(id string, recs []*replay.Record) string {
	ec := s.cfg.OTLPHTTP[id]
	var files []string
	endpoint := ""
	for _, rec := range recs {
		if rec.Backlog().Total().Batches == 0 {
			continue
		}
		files = append(files, rec.File())
		endpoint = rec.Endpoint()
	}
	if ec == nil || ec.Endpoint == "" || len(files) == 0 {
		return ""
	}
	sort.Strings(files)
	args := []string{"otelstep", "replay", "--endpoint", shellquote.Quote(endpoint)}
	if v := tokenEnv(ec); v != "" {
		args = append(args, "--token-env", v)
	}
	names := slices.Sorted(func(yield func(string) bool) {
		for k := range ec.Headers {
			if !config.IsSecretKey(k) && !yield(k) {
				return
			}
		}
	})
	for _, k := range names {
		val := "<" + k + " as in the config>"
		if vs := ec.HeaderVars[k]; len(vs) == 1 {
			val = "${" + vs[0] + "}"
		}
		args = append(args, "--header", `"`+k+"="+val+`"`)
	}
	for _, f := range files {
		if abs, err := filepath.Abs(f); err == nil {
			f = abs
		}
		args = append(args, shellquote.Quote(f))
	}
	return strings.Join(args, " ")
}

// Delivery is the stop line's account of the OTLP/HTTP exporters'
// delivery (slog key-value pairs), set by the stop: what they took, each
// fate's items (summing to it), what the backfill sent, what is left in
// the JSONL files and the `otelstep replay` command that sends it.
func (s *Service) Delivery() []any { return s.delivery }
