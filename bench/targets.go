package bench

import (
	"bytes"
	"embed"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/model/textparse"
)

//go:embed testdata/vllm.txt testdata/dcgm.txt testdata/node.txt
var pages embed.FS

const textContentType = "text/plain; version=0.0.4; charset=utf-8"

// Page is one exposition page a synthetic target serves.
type Page struct {
	Name    string // vllm, dcgm, node, or gen-N-B
	Body    []byte
	Samples int // as textparse counts them
}

// LoadPage returns a fixture page by name (vllm, dcgm, node), or a
// generated one for "gen:N:B" (N series, histograms of B buckets; see
// GenPage).
func LoadPage(name string) (Page, error) {
	if rest, ok := strings.CutPrefix(name, "gen:"); ok {
		n, b, ok := strings.Cut(rest, ":")
		series, err1 := strconv.Atoi(n)
		buckets, err2 := strconv.Atoi(b)
		if !ok || err1 != nil || err2 != nil || series < 1 || buckets < 1 {
			return Page{}, fmt.Errorf("page %q: want gen:SERIES:BUCKETS, both positive", name)
		}
		return GenPage(series, buckets), nil
	}
	body, err := pages.ReadFile("testdata/" + name + ".txt")
	if err != nil {
		return Page{}, fmt.Errorf("page %q: want vllm, dcgm, node or gen:SERIES:BUCKETS", name)
	}
	return newPage(name, body)
}

func newPage(name string, body []byte) (Page, error) {
	n, err := CountSamples(body)
	if err != nil {
		return Page{}, fmt.Errorf("page %s: %w", name, err)
	}
	return Page{Name: name, Body: body, Samples: n}, nil
}

// CountSamples counts a text-format page's samples with textparse.
func CountSamples(body []byte) (int, error) {
	p, err := textparse.New(body, textContentType, labels.NewSymbolTable(), textparse.ParserOptions{})
	if err != nil {
		return 0, err
	}
	n := 0
	for {
		e, err := p.Next()
		if err != nil {
			if errors.Is(err, io.EOF) {
				return n, nil
			}
			return n, err
		}
		if e == textparse.EntrySeries {
			n++
		}
	}
}

// GenPage makes a text page of series series shaped like an inference
// server's: a half counters, a quarter gauges, a quarter histograms of
// buckets buckets (each histogram series is buckets+1 bucket samples, _sum
// and _count), spread over families of 50 series with two labels each.
func GenPage(series, buckets int) Page {
	var b bytes.Buffer
	const perFamily = 50
	kinds := []string{"counter", "counter", "gauge", "histogram"}
	for i := 0; i < series; {
		fam := i / perFamily
		kind := kinds[fam%len(kinds)]
		name := fmt.Sprintf("gen_%s_%d", kind, fam)
		if kind == "counter" {
			name += "_total"
		}
		fmt.Fprintf(&b, "# HELP %s Generated %s family %d.\n# TYPE %s %s\n", strings.TrimSuffix(name, "_total"), kind, fam, strings.TrimSuffix(name, "_total"), kind)
		for j := 0; j < perFamily && i < series; j, i = j+1, i+1 {
			lbl := fmt.Sprintf(`model="m%d",engine="%d"`, j%7, j)
			switch kind {
			case "histogram":
				var cum int
				for k := range buckets {
					cum += k + j
					fmt.Fprintf(&b, "%s_bucket{%s,le=\"%g\"} %d\n", name, lbl, float64(int(1)<<k)/1000, cum)
				}
				fmt.Fprintf(&b, "%s_bucket{%s,le=\"+Inf\"} %d\n%s_sum{%s} %g\n%s_count{%s} %d\n", name, lbl, cum+1, name, lbl, float64(cum)*0.37, name, lbl, cum+1)
			default:
				fmt.Fprintf(&b, "%s{%s} %d\n", name, lbl, 1000*i+j)
			}
		}
	}
	p, err := newPage(fmt.Sprintf("gen-%d-%d", series, buckets), b.Bytes())
	if err != nil {
		panic(err) // the generator's own output: a bug here
	}
	return p
}

// ShiftValues returns a copy of text page body with n added to every finite
// sample value: what a live target's next scrape looks like (counters grow,
// gauges move). Adding the same amount to every value keeps each
// histogram's cumulative buckets and count consistent, so the conversion
// keeps every point. Timestamps and the series bytes are kept.
func ShiftValues(body []byte, n int64) []byte {
	return mapSampleLines(make([]byte, 0, len(body)+len(body)/16), body, func(dst, line []byte) []byte {
		return shiftLine(dst, line, n)
	})
}

// mapSampleLines appends text page body to dst line by line, its sample
// lines (not comments or blank lines) through f, which appends the line as
// it should read.
func mapSampleLines(dst, body []byte, f func(dst, line []byte) []byte) []byte {
	for len(body) > 0 {
		line := body
		if i := bytes.IndexByte(body, '\n'); i >= 0 {
			line = body[:i+1]
		}
		body = body[len(line):]
		if t := bytes.TrimLeft(line, " \t"); len(t) == 0 || t[0] == '#' || t[0] == '\n' {
			dst = append(dst, line...)
			continue
		}
		dst = f(dst, line)
	}
	return dst
}

// shiftLine appends sample line to dst with n added to its value.
func shiftLine(dst, line []byte, n int64) []byte {
	end := bytes.IndexAny(line, " \t") // the series ends at the first blank after the labels
	if i := bytes.LastIndexByte(line, '}'); i >= 0 {
		end = i + 1
	}
	if end < 0 {
		return append(dst, line...)
	}
	vs := end
	for vs < len(line) && (line[vs] == ' ' || line[vs] == '\t') {
		vs++
	}
	ve := vs
	for ve < len(line) && line[ve] != ' ' && line[ve] != '\t' && line[ve] != '\n' {
		ve++
	}
	v, err := strconv.ParseFloat(string(line[vs:ve]), 64)
	if err != nil || math.IsNaN(v) || math.IsInf(v, 0) {
		return append(dst, line...)
	}
	dst = append(dst, line[:vs]...)
	dst = strconv.AppendFloat(dst, v+float64(n), 'g', -1, 64)
	return append(dst, line[ve:]...)
}

// Targets are synthetic scrape targets on loopback: each serves one page
// and counts what it served.
type Targets struct {
	list    []target
	servers []*http.Server
}

type target struct {
	page   Page
	addr   string
	served *atomic.Int64 // pages served
}

// Distinct returns text page body with the label node="N" (N is n, the copy's
// number) added to every sample line's series: the copies of a page then
// expose no equal label sets, as a job's DCGM pages do (their UUID and
// Hostname labels differ by node). Identical copies are the other end,
// as a job's node-exporter and vLLM pages are.
func Distinct(body []byte, n int) []byte {
	lbl := fmt.Sprintf("node=%q", strconv.Itoa(n))
	return mapSampleLines(make([]byte, 0, len(body)+len(body)/4), body, func(out, line []byte) []byte {
		if i := bytes.IndexByte(line, '{'); i >= 0 {
			out = append(out, line[:i+1]...)
			out = append(out, lbl...)
			if rest := bytes.TrimLeft(line[i+1:], " \t"); len(rest) > 0 && rest[0] != '}' {
				out = append(out, ',')
			}
			return append(out, line[i+1:]...)
		}
		end := bytes.IndexAny(line, " \t")
		if end < 0 {
			return append(out, line...)
		}
		out = append(out, line[:end]...)
		out = append(out, '{')
		out = append(out, lbl...)
		out = append(out, '}')
		return append(out, line[end:]...)
	})
}

// StartTargets starts copies targets serving each page; with distinct,
// each copy's series carry a label of their own (Distinct). Each scrape
// sees new values (ShiftValues), as from a live target, unless frozen:
// then every scrape gets the same bytes, the page with 1 added to its
// values, as from a target whose series stand still (an idle server's
// gauges and counters, or a test page).
func StartTargets(pages []Page, copies int, distinct, frozen bool) (*Targets, error) {
	t := &Targets{}
	for _, p := range pages {
		for k := range copies {
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Close()
				return nil, fmt.Errorf("target for %s: %w", p.Name, err)
			}
			served := new(atomic.Int64)
			page := p.Body
			if distinct {
				page = Distinct(page, k)
			}
			var next atomic.Pointer[[]byte]
			first := ShiftValues(page, 1)
			next.Store(&first)
			srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				// Every scrape sees new values, as from a live target.
				// The next page is rendered after answering, so the
				// rendering is not part of the scrape's duration.
				body := *next.Load()
				w.Header().Set("Content-Type", textContentType)
				w.Header().Set("Content-Length", strconv.Itoa(len(body)))
				_, _ = w.Write(body)
				n := served.Add(1)
				if !frozen {
					nb := ShiftValues(page, n+1)
					next.Store(&nb)
				}
			})}
			go func() { _ = srv.Serve(ln) }()
			t.servers = append(t.servers, srv)
			t.list = append(t.list, target{page: p, addr: ln.Addr().String(), served: served})
		}
	}
	return t, nil
}

// Addrs returns the targets' addresses by page name.
func (t *Targets) Addrs() map[string][]string {
	m := map[string][]string{}
	for _, x := range t.list {
		m[x.page.Name] = append(m[x.page.Name], x.addr)
	}
	return m
}

// Served returns the pages and samples served so far.
func (t *Targets) Served() (scrapes, samples int64) {
	for _, x := range t.list {
		n := x.served.Load()
		scrapes += n
		samples += n * int64(x.page.Samples)
	}
	return scrapes, samples
}

// Close stops the targets.
func (t *Targets) Close() {
	for _, s := range t.servers {
		_ = s.Close()
	}
}
