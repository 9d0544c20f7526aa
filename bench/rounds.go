package bench

import (
	"context"
	"fmt"
	"reflect"
	"slices"
	"strings"
)

// Round is one round of a run of several (--rounds): every implementation
// measured once, each a fresh process, on the same load.
type Round[R, Q any] struct {
	// Order is the implementations' names in the order they ran.
	Order []string `json:"order"`
	// Results are in the report's order (otelstep first) whatever the
	// order they ran in; Ratios are otelstep's figures in this round over
	// each peer's in this round.
	Results []R `json:"results"`
	Ratios  []Q `json:"ratios,omitempty"`
}

// Spread is one ratio over the rounds: the median of its per-round values
// with the least and the greatest.
type Spread struct {
	Median float64 `json:"median"`
	Min    float64 `json:"min"`
	Max    float64 `json:"max"`
	Rounds int     `json:"rounds"`
}

// runOrder is the order (indexes into impls) round number round, from 1,
// runs them in: odd rounds as given, otelstep first; even rounds reversed,
// the peers first. The host's speed drifts within minutes, and whoever
// always ran first would always run on the host as it was.
func runOrder(n, round int) []int {
	order := make([]int, n)
	for i := range order {
		order[i] = i
	}
	if round%2 == 0 {
		slices.Reverse(order)
	}
	return order
}

// runRounds runs every implementation once a round, for rounds rounds (at
// least one), in runOrder; run measures one. ratios compares one round's
// results, given in impls' order.
func runRounds[R, Q any](ctx context.Context, impls []Impl, rounds int, run func(ctx context.Context, round int, im Impl) (R, error), ratios func([]R) []Q) ([]Round[R, Q], error) {
	out := make([]Round[R, Q], max(rounds, 1))
	for i := range out {
		rd := &out[i]
		rd.Results = make([]R, len(impls))
		for _, j := range runOrder(len(impls), i+1) {
			r, err := run(ctx, i+1, impls[j])
			if err != nil {
				return nil, err
			}
			rd.Order = append(rd.Order, impls[j].Name)
			rd.Results[j] = r
		}
		rd.Ratios = ratios(rd.Results)
	}
	return out, nil
}

// Summary is what a report shows of its rounds, embedded in each report:
// for each implementation (in the report's order) each figure in Results,
// for each peer each ratio in Ratios. With one round they are that round's
// and the rest is empty: the report of one round is as it always was. With
// more, Results hold each figure's median over the rounds (the whole run's
// counts, their totals), ResultsMin and ResultsMax its least and greatest;
// each of Ratios is the median of that ratio taken within each round, not
// a ratio of medians, with its spread over the rounds by the figure's JSON
// name; and Rounds holds every round's results and order.
type Summary[R, Q any] struct {
	Results    []R           `json:"results"`
	Ratios     []Q           `json:"ratios,omitempty"`
	ResultsMin []R           `json:"results_min,omitempty"`
	ResultsMax []R           `json:"results_max,omitempty"`
	Rounds     []Round[R, Q] `json:"rounds,omitempty"`
}

// overRounds is a ratio row that holds its spreads over the rounds.
type overRounds[Q any] interface {
	*Q
	setOverRounds(map[string]Spread)
}

func (q *Ratio) setOverRounds(s map[string]Spread)     { q.OverRounds = s }
func (q *OTLPRatio) setOverRounds(s map[string]Spread) { q.OverRounds = s }

// summarize is the summary of rounds (at least one), which hold the same
// implementations and peers in the same order; each ratio row holds its
// spread.
func summarize[R, Q any, PQ overRounds[Q]](rounds []Round[R, Q]) Summary[R, Q] {
	several := len(rounds) > 1
	var s Summary[R, Q]
	for i := range rounds[0].Results {
		med, lo, hi := combine(column(rounds, func(rd Round[R, Q]) R { return rd.Results[i] }))
		s.Results = append(s.Results, med)
		if several {
			s.ResultsMin, s.ResultsMax = append(s.ResultsMin, lo), append(s.ResultsMax, hi)
		}
	}
	for i := range rounds[0].Ratios {
		med, lo, hi := combine(column(rounds, func(rd Round[R, Q]) Q { return rd.Ratios[i] }))
		s.Ratios = append(s.Ratios, med)
		if several {
			PQ(&s.Ratios[i]).setOverRounds(spreads(med, lo, hi, len(rounds)))
		}
	}
	if several {
		s.Rounds = rounds
	}
	return s
}

// roundOf names the round in a log line when there are several.
func roundOf(round, rounds int) string {
	if rounds <= 1 {
		return ""
	}
	return fmt.Sprintf("round %d of %d: ", round, rounds)
}

func column[R, Q, T any](rounds []Round[R, Q], f func(Round[R, Q]) T) []T {
	out := make([]T, len(rounds))
	for i, rd := range rounds {
		out[i] = f(rd)
	}
	return out
}

// combine takes a struct's values, one per round, to one, field by field:
// a float64, int64 or *float64 field is its median over the rounds (of the
// rounds that have one, for a pointer), lo and hi its least and greatest;
// a field tagged `rounds:"total"` counts the whole run, so that a loss in
// any round shows, and is the sum of the rounds' (lo and hi still the least
// and greatest round's). Any other field (a name) is the first round's.
func combine[T any](xs []T) (med, lo, hi T) {
	med, lo, hi = xs[0], xs[0], xs[0]
	mv, lv, hv := reflect.ValueOf(&med).Elem(), reflect.ValueOf(&lo).Elem(), reflect.ValueOf(&hi).Elem()
	t := mv.Type()
	for f := range t.NumField() {
		total := t.Field(f).Tag.Get("rounds") == "total"
		field := func(x T) reflect.Value { return reflect.ValueOf(x).Field(f) }
		switch ft := t.Field(f).Type; {
		case ft.Kind() == reflect.Float64 || ft.Kind() == reflect.Int64:
			vs := make([]float64, len(xs))
			for i, x := range xs {
				vs[i] = number(field(x))
			}
			m, l, h := middle(vs, total)
			setNumber(mv.Field(f), m)
			setNumber(lv.Field(f), l)
			setNumber(hv.Field(f), h)
		case ft.Kind() == reflect.Pointer && ft.Elem().Kind() == reflect.Float64:
			var vs []float64
			for _, x := range xs {
				if p := field(x); !p.IsNil() {
					vs = append(vs, p.Elem().Float())
				}
			}
			if len(vs) == 0 {
				continue
			}
			// New pointers: the copies of xs[0] share its.
			m, l, h := middle(vs, total)
			mv.Field(f).Set(reflect.ValueOf(&m))
			lv.Field(f).Set(reflect.ValueOf(&l))
			hv.Field(f).Set(reflect.ValueOf(&h))
		}
	}
	return med, lo, hi
}

// number is a float64 or int64 field's value. The counts held in int64
// fields are far below 2^53: a float64 holds them exactly.
func number(v reflect.Value) float64 {
	if v.Kind() == reflect.Int64 {
		return float64(v.Int())
	}
	return v.Float()
}

// setNumber sets a float64 or int64 field to x (an int64 one to x
// truncated, as the mean of two counts is).
func setNumber(v reflect.Value, x float64) {
	if v.Kind() == reflect.Int64 {
		v.SetInt(int64(x))
		return
	}
	v.SetFloat(x)
}

// middle is the median of vs (the mean of the two middle values of an even
// count), or with total their sum, and the least and the greatest.
func middle(vs []float64, total bool) (med, lo, hi float64) {
	s := slices.Sorted(slices.Values(vs))
	n := len(s)
	lo, hi = s[0], s[n-1]
	if total {
		for _, v := range s {
			med += v
		}
		return med, lo, hi
	}
	if n%2 == 1 {
		return s[n/2], lo, hi
	}
	return (s[n/2-1] + s[n/2]) / 2, lo, hi
}

// spreads lists a ratio's float64 figures by their JSON name: med, lo and
// hi from combine over rounds rounds.
func spreads[T any](med, lo, hi T, rounds int) map[string]Spread {
	out := map[string]Spread{}
	mv, lv, hv := reflect.ValueOf(med), reflect.ValueOf(lo), reflect.ValueOf(hi)
	t := mv.Type()
	for f := range t.NumField() {
		if t.Field(f).Type.Kind() != reflect.Float64 {
			continue
		}
		name, _, _ := strings.Cut(t.Field(f).Tag.Get("json"), ",")
		out[name] = Spread{Median: mv.Field(f).Float(), Min: lv.Field(f).Float(), Max: hv.Field(f).Float(), Rounds: rounds}
	}
	return out
}
