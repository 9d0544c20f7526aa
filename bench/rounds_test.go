package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"reflect"
	"slices"
	"strings"
	"testing"
)

// Odd rounds run otelstep first, even rounds the peers first, in reverse;
// each round's results are in the report's order whatever the order they
// ran in, and its ratios are of that round's results.
func TestRunRoundsOrder(t *testing.T) {
	impls := []Impl{{Name: "otelstep"}, {Name: "otelstep-v2", V2: true}, {Name: "peer", Peer: true}}
	var calls [][]string // per round, the names in the order run was called
	run := func(_ context.Context, round int, im Impl) (ScrapeResult, error) {
		for len(calls) < round {
			calls = append(calls, nil)
		}
		calls[round-1] = append(calls[round-1], im.Name)
		// A figure that tells the round and the implementation apart.
		return ScrapeResult{Name: im.Name, SamplesPerCPUSecond: float64(100*round + len(im.Name))}, nil
	}
	rounds, err := runRounds(context.Background(), impls, 3, run, scrapeRatios)
	if err != nil {
		t.Fatal(err)
	}
	want := [][]string{
		{"otelstep", "otelstep-v2", "peer"},
		{"peer", "otelstep-v2", "otelstep"},
		{"otelstep", "otelstep-v2", "peer"},
	}
	if !reflect.DeepEqual(calls, want) {
		t.Fatalf("called in %v, want %v", calls, want)
	}
	for i, rd := range rounds {
		if !slices.Equal(rd.Order, want[i]) {
			t.Errorf("round %d: order %v, want %v", i+1, rd.Order, want[i])
		}
		for j, r := range rd.Results {
			if r.Name != impls[j].Name || r.SamplesPerCPUSecond != float64(100*(i+1)+len(r.Name)) {
				t.Errorf("round %d: result %d is %+v, want %s's of this round", i+1, j, r, impls[j].Name)
			}
		}
		if len(rd.Ratios) != 2 || rd.Ratios[1].Peer != "peer" ||
			rd.Ratios[1].SamplesPerCPUSecond != float64(100*(i+1)+8)/float64(100*(i+1)+4) {
			t.Errorf("round %d: ratios %+v", i+1, rd.Ratios)
		}
	}

	// With no peer the one implementation runs once a round; rounds
	// below 1 are one.
	calls = nil
	if rounds, err = runRounds(context.Background(), impls[:1], 0, run, scrapeRatios); err != nil || len(rounds) != 1 || len(calls) != 1 {
		t.Errorf("--rounds 0: %d rounds, calls %v, %v", len(rounds), calls, err)
	}
}

// A failure in any round ends the run with its error: no report of the
// rounds before.
func TestRunRoundsError(t *testing.T) {
	boom := errors.New("peer exited")
	n := 0
	run := func(_ context.Context, round int, im Impl) (ScrapeResult, error) {
		n++
		if round == 2 && im.Peer {
			return ScrapeResult{}, boom
		}
		return ScrapeResult{Name: im.Name}, nil
	}
	rounds, err := runRounds(context.Background(), []Impl{{Name: "otelstep"}, {Name: "peer", Peer: true}}, 4, run, scrapeRatios)
	if !errors.Is(err, boom) || rounds != nil || n != 3 {
		t.Errorf("got %d rounds, %d runs, %v; want none, 3 runs (round 2 runs the peer first), %v", len(rounds), n, err, boom)
	}
}

// scrapeRounds makes rounds of otelstep against a peer from their figures
// in each round.
func scrapeRounds(otelstep, peer []ScrapeResult) []Round[ScrapeResult, Ratio] {
	var out []Round[ScrapeResult, Ratio]
	for i := range otelstep {
		otelstep[i].Name, peer[i].Name = "otelstep", "vmagent"
		results := []ScrapeResult{otelstep[i], peer[i]}
		out = append(out, Round[ScrapeResult, Ratio]{Order: []string{"otelstep", "vmagent"}, Results: results, Ratios: scrapeRatios(results)})
	}
	return out
}

// A ratio over rounds is the median of the ratios taken within each
// round, not the ratio of the medians: here one is 1, the other 2.
func TestRoundsRatioOfEachRound(t *testing.T) {
	rounds := scrapeRounds(
		[]ScrapeResult{{Samples: 1, SamplesPerCPUSecond: 10, PeakRSSBytes: 100}, {Samples: 1, SamplesPerCPUSecond: 20, PeakRSSBytes: 100}, {Samples: 1, SamplesPerCPUSecond: 30, PeakRSSBytes: 100}},
		[]ScrapeResult{{Samples: 1, SamplesPerCPUSecond: 10, PeakRSSBytes: 50}, {Samples: 1, SamplesPerCPUSecond: 5, PeakRSSBytes: 200}, {Samples: 1, SamplesPerCPUSecond: 30, PeakRSSBytes: 400}})
	var rep ScrapeReport
	rep.Summary = summarize(rounds)
	if got, ofMedians := rep.Results[0].SamplesPerCPUSecond/rep.Results[1].SamplesPerCPUSecond, 2.0; got != ofMedians {
		t.Fatalf("medians %g and %g: the case is not one where the two differ", rep.Results[0].SamplesPerCPUSecond, rep.Results[1].SamplesPerCPUSecond)
	}
	q := rep.Ratios[0]
	if q.Peer != "vmagent" || q.SamplesPerCPUSecond != 1 || q.PeakRSS != 0.5 {
		t.Errorf("ratios %+v: want samples per CPU-second 1 (of 1, 4, 1), peak RSS 0.5 (of 2, 0.5, 0.25)", q)
	}
	want := map[string]Spread{
		"samples_per_cpu_second":   {Median: 1, Min: 1, Max: 4, Rounds: 3},
		"peak_rss":                 {Median: 0.5, Min: 0.25, Max: 2, Rounds: 3},
		"backend_bytes_per_sample": {Rounds: 3},
	}
	if !reflect.DeepEqual(q.OverRounds, want) {
		t.Errorf("over rounds %+v, want %+v", q.OverRounds, want)
	}

	var out bytes.Buffer
	WriteScrape(&out, &rep)
	for _, line := range []string{
		"otelstep/vmagent samples per CPU-second: median 1.00 (1.00–4.00, 3 rounds)\n",
		"otelstep/vmagent peak RSS: median 0.50 (0.25–2.00, 3 rounds)\n",
		"; medians of 3 rounds",
	} {
		if !strings.Contains(out.String(), line) {
			t.Errorf("report lacks %q:\n%s", line, out.String())
		}
	}
}

// Each figure is its median (the mean of the middle two of an even count)
// with its least and greatest; the whole run's counts are summed, so a drop
// in one round shows; names stay.
func TestRoundsFigures(t *testing.T) {
	a, b := 2.0, 4.0
	rounds := scrapeRounds(
		[]ScrapeResult{
			{SamplesPerCPUSecond: 1000, PeakRSSBytes: 100 << 20, AllocsPerSample: &a, JSONLPoints: 10, BackendPoints: 10, BackendProtocol: "otlp"},
			{SamplesPerCPUSecond: 2000, PeakRSSBytes: 300 << 20, AllocsPerSample: &b, JSONLPoints: 10, BackendPoints: 7, Dropped: 3, BackendProtocol: "otlp"},
			{SamplesPerCPUSecond: 10000, PeakRSSBytes: 200 << 20, JSONLPoints: 10, BackendPoints: 10, BackendProtocol: "otlp"},
			{SamplesPerCPUSecond: 3000, PeakRSSBytes: 400 << 20, JSONLPoints: 10, BackendPoints: 10, BackendProtocol: "otlp"},
		},
		[]ScrapeResult{{Samples: 1}, {Samples: 1}, {Samples: 1}, {Samples: 1}})
	var rep ScrapeReport
	rep.Summary = summarize(rounds)
	med, lo, hi := rep.Results[0], rep.ResultsMin[0], rep.ResultsMax[0]
	if med.Name != "otelstep" || med.BackendProtocol != "otlp" {
		t.Errorf("names: %q, %q", med.Name, med.BackendProtocol)
	}
	if med.SamplesPerCPUSecond != 2500 || lo.SamplesPerCPUSecond != 1000 || hi.SamplesPerCPUSecond != 10000 {
		t.Errorf("samples per CPU-second %g (%g–%g), want 2500 (1000–10000)", med.SamplesPerCPUSecond, lo.SamplesPerCPUSecond, hi.SamplesPerCPUSecond)
	}
	if med.PeakRSSBytes != 250<<20 || lo.PeakRSSBytes != 100<<20 || hi.PeakRSSBytes != 400<<20 {
		t.Errorf("peak RSS %d (%d–%d), want 250 (100–400) MiB", med.PeakRSSBytes, lo.PeakRSSBytes, hi.PeakRSSBytes)
	}
	// Of the rounds that have one; and the rounds' own stay as they were.
	if med.AllocsPerSample == nil || *med.AllocsPerSample != 3 || *lo.AllocsPerSample != 2 || *hi.AllocsPerSample != 4 || a != 2 {
		t.Errorf("allocs per sample %v (%v–%v), want 3 (2–4)", med.AllocsPerSample, lo.AllocsPerSample, hi.AllocsPerSample)
	}
	if rep.Results[1].AllocsPerSample != nil {
		t.Errorf("the peer's allocs per sample: %v, want none", *rep.Results[1].AllocsPerSample)
	}
	if med.JSONLPoints != 40 || med.BackendPoints != 37 || med.Dropped != 3 || hi.Dropped != 3 {
		t.Errorf("points JSONL %d, backend %d, dropped %d (at most %d in a round): want the totals 40, 37, 3", med.JSONLPoints, med.BackendPoints, med.Dropped, hi.Dropped)
	}

	var out bytes.Buffer
	WriteScrape(&out, &rep)
	for _, want := range []string{" 2500 (1000–10000) ", " 40 / 37 ", " 250.0 (100.0–400.0) ", " 3.00 (2.00–4.00) ", " n/a "} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("report lacks %q:\n%s", want, out.String())
		}
	}
	var dropped string
	for _, line := range strings.Split(out.String(), "\n") {
		if rest, ok := strings.CutPrefix(strings.TrimSpace(line), "dropped points"); ok {
			dropped = strings.Fields(rest)[0]
		}
	}
	if dropped != "3" {
		t.Errorf("dropped points %q, want the total 3:\n%s", dropped, out.String())
	}

	// An odd count: the middle one.
	var odd ScrapeReport
	odd.Summary = summarize(rounds[:3])
	if got := odd.Results[0].SamplesPerCPUSecond; got != 2000 {
		t.Errorf("median of 1000, 2000, 10000: %g", got)
	}
}

// One round is the report as it always was: the round's figures, no
// ranges, no rounds.
func TestRoundsOne(t *testing.T) {
	for _, rounds := range [][]Round[OTLPResult, OTLPRatio]{otlpRounds(1), otlpRounds(2)} {
		var rep OTLPReport
		rep.Summary = summarize(rounds)
		b, err := json.Marshal(rep)
		if err != nil {
			t.Fatal(err)
		}
		var keys map[string]json.RawMessage
		if err := json.Unmarshal(b, &keys); err != nil {
			t.Fatal(err)
		}
		several := len(rounds) > 1
		for _, k := range []string{"results_min", "results_max", "rounds"} {
			if _, ok := keys[k]; ok != several {
				t.Errorf("%d rounds: key %q present %v", len(rounds), k, ok)
			}
		}
		if several != strings.Contains(string(keys["ratios"]), `"over_rounds"`) {
			t.Errorf("%d rounds: ratios %s", len(rounds), keys["ratios"])
		}
		if !several && (!reflect.DeepEqual(rep.Results, rounds[0].Results) || !reflect.DeepEqual(rep.Ratios, rounds[0].Ratios)) {
			t.Errorf("one round: report %+v %+v, round %+v %+v", rep.Results, rep.Ratios, rounds[0].Results, rounds[0].Ratios)
		}
		var out bytes.Buffer
		WriteOTLP(&out, &rep)
		if strings.Contains(out.String(), "–") != several || strings.Contains(out.String(), "otelstep vs otelcol: ") == several {
			t.Errorf("%d rounds:\n%s", len(rounds), out.String())
		}
	}
}

// otlpRounds makes n rounds of otelstep against a collector.
func otlpRounds(n int) []Round[OTLPResult, OTLPRatio] {
	var out []Round[OTLPResult, OTLPRatio]
	for i := range n {
		results := []OTLPResult{
			{Name: "otelstep", ItemsPerCPUSecond: float64(100 + i), PeakRSSBytes: 10 << 20, Accepted: 500, BackendItems: 500, BackendBytes: 5000, BackendBytesPerItem: 10},
			{Name: "otelcol", ItemsPerCPUSecond: 40, PeakRSSBytes: 100 << 20, Accepted: 500, BackendItems: 500, BackendBytes: 5000, BackendBytesPerItem: 10},
		}
		out = append(out, Round[OTLPResult, OTLPRatio]{Order: []string{"otelstep", "otelcol"}, Results: results, Ratios: otlpRatios(results)})
	}
	return out
}

// Every field of the reports' rows and ratios is one combine takes over
// the rounds: a number, or a name or the ratios' spreads, which are kept.
func TestRoundsEveryFieldCombined(t *testing.T) {
	for _, v := range []any{ScrapeResult{}, OTLPResult{}, Ratio{}, OTLPRatio{}} {
		ty := reflect.TypeOf(v)
		for f := range ty.NumField() {
			ft := ty.Field(f).Type
			switch {
			case ft.Kind() == reflect.Float64, ft.Kind() == reflect.Int64, ft.Kind() == reflect.String,
				ft.Kind() == reflect.Pointer && ft.Elem().Kind() == reflect.Float64, ft == reflect.TypeOf(map[string]Spread{}):
			default:
				t.Errorf("%s.%s is a %s: say in combine how rounds make one", ty.Name(), ty.Field(f).Name, ft)
			}
		}
	}
}
