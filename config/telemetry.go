package config

import (
	"fmt"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"
)

// Telemetry is service.telemetry.metrics and service.telemetry.resource:
// otelstep's own metrics, read with the collector's schema (the collector
// takes them as go.opentelemetry.io/contrib/otelconf's v0.3.0 model: a
// level, then readers, each periodic with a push exporter or pull with a
// Prometheus one).
type Telemetry struct {
	// Level is none, basic, normal or detailed (lower case); "" when the
	// config does not say, which is normal, the collector's default (see
	// MetricsLevel).
	Level string
	// Readers are where the metrics go. None: they are served in the
	// Prometheus text format on the health endpoint's /metrics.
	Readers []MetricReader
	// Resource is service.telemetry.resource: attributes of the resource
	// the metrics are sent under. A nil value removes one of otelstep's own
	// (service.name, service.version, service.instance.id), as a null does
	// in the collector.
	Resource map[string]*string
}

// MetricsLevel is Level with the collector's default filled in.
func (t Telemetry) MetricsLevel() string {
	if t.Level == "" {
		return "normal"
	}
	return t.Level
}

// MetricReader is one service.telemetry.metrics.readers entry: exactly one
// of Periodic and Pull is set.
type MetricReader struct {
	Path     string // e.g. service.telemetry.metrics.readers[0], for messages
	Line     int
	Periodic *PeriodicReader
	Pull     *PullReader
}

// PeriodicReader is readers[].periodic: every Interval the metrics are
// collected and pushed with the OTLP exporter, each export bounded by
// Timeout.
type PeriodicReader struct {
	Interval time.Duration // interval, in milliseconds in the file; default 60 s
	Timeout  time.Duration // timeout, in milliseconds; default 30 s
	OTLP     OTLPMetricExporter
}

// OTLPMetricExporter is periodic.exporter.otlp with protocol http/protobuf
// (the only one otelstep implements).
type OTLPMetricExporter struct {
	// Endpoint is the URL; with no path the requests go to /v1/metrics
	// under it, with one to that path as it is (as the collector does).
	Endpoint string
	// Headers are headers (a list of name/value pairs, or a mapping) over
	// headers_list ("k=v,k2=v2"). Their values are secrets.
	Headers map[string]string
	// Compression is gzip or none (the default, as the SDK's).
	Compression string
	Timeout     time.Duration // timeout, in milliseconds; default 10 s
	// Temporality is temporality_preference: cumulative (default), delta
	// or lowmemory.
	Temporality string
}

// PullReader is readers[].pull.exporter.prometheus: the metrics served in
// the Prometheus text format on http://Host:Port/metrics.
type PullReader struct {
	Host string
	Port int // 0 picks a free port (tests)
	// WithoutTypeSuffix leaves _total off the counters' names.
	WithoutTypeSuffix bool
}

// Defaults of the collector's schema (the OpenTelemetry SDK's).
const (
	defaultReaderInterval = 60 * time.Second
	defaultReaderTimeout  = 30 * time.Second
	defaultExportTimeout  = 10 * time.Second
)

// telemetryMetrics decodes service.telemetry.metrics at path.
func (c *Config) telemetryMetrics(d *dec, v *yaml.Node, path string) error {
	return d.mapping(v, path, []string{"level", "readers", "address", "views"}, func(key string, kn, vn *yaml.Node) error {
		kp := join(path, key)
		switch key {
		case "level":
			s, err := d.str(vn, kp)
			if err != nil {
				return err
			}
			switch l := strings.ToLower(s); l {
			case "none", "basic", "normal", "detailed":
				c.Service.Telemetry.Level = l
			default:
				return d.errf(vn, kp, "unknown level %q (none, basic, normal or detailed)", s)
			}
		case "address":
			return d.errf(kn, kp, "address is not implemented (the collector deprecated it): use readers: [{pull: {exporter: {prometheus: {host: ..., port: ...}}}}]")
		case "views":
			return d.errf(kn, kp, "views are not implemented")
		case "readers":
			return d.sequence(vn, kp, func(i int, vn *yaml.Node) error {
				r, err := d.metricReader(vn, fmt.Sprintf("%s[%d]", kp, i))
				if err != nil {
					return err
				}
				c.Service.Telemetry.Readers = append(c.Service.Telemetry.Readers, r)
				return nil
			})
		}
		return nil
	})
}

// telemetryResource decodes service.telemetry.resource: a mapping of
// attribute names to strings, a null removing one of otelstep's own.
func (c *Config) telemetryResource(d *dec, v *yaml.Node, path string) error {
	res := map[string]*string{}
	err := d.mapping(v, path, nil, func(key string, kn, vn *yaml.Node) error {
		if isNull(vn) {
			res[key] = nil
			return nil
		}
		if vn.Kind != yaml.ScalarNode {
			return d.errf(vn, join(path, key), "expected a string, got %s", kindName(vn))
		}
		s := vn.Value
		res[key] = &s
		return nil
	})
	c.Service.Telemetry.Resource = res
	return err
}

func (d *dec) metricReader(v *yaml.Node, path string) (MetricReader, error) {
	r := MetricReader{Path: path, Line: v.Line}
	if v.Kind != yaml.MappingNode {
		return r, d.errf(v, path, "expected a mapping with periodic or pull, got %s", kindName(v))
	}
	err := d.mapping(v, path, []string{"periodic", "pull"}, func(key string, kn, vn *yaml.Node) error {
		kp := join(path, key)
		var err error
		if key == "periodic" {
			r.Periodic, err = d.periodicReader(vn, kp)
		} else {
			r.Pull, err = d.pullReader(vn, kp)
		}
		return err
	})
	if err != nil {
		return r, err
	}
	switch {
	case r.Periodic != nil && r.Pull != nil:
		return r, d.errf(v, path, "a reader is either periodic or pull, not both")
	case r.Periodic == nil && r.Pull == nil:
		return r, d.errf(v, path, "a reader needs periodic or pull")
	}
	return r, nil
}

func (d *dec) periodicReader(v *yaml.Node, path string) (*PeriodicReader, error) {
	p := &PeriodicReader{Interval: defaultReaderInterval, Timeout: defaultReaderTimeout}
	var exporter *yaml.Node
	err := d.mapping(v, path, []string{"interval", "timeout", "exporter"}, func(key string, kn, vn *yaml.Node) error {
		kp := join(path, key)
		var err error
		switch key {
		case "interval":
			p.Interval, err = d.millis(vn, kp)
		case "timeout":
			p.Timeout, err = d.millis(vn, kp)
		case "exporter":
			exporter = vn
		}
		return err
	})
	if err != nil {
		return nil, err
	}
	ep := join(path, "exporter")
	if isNull(exporter) {
		return nil, d.errf(v, ep, "a periodic reader needs an exporter (otlp)")
	}
	found := false
	err = d.mapping(exporter, ep, []string{"otlp", "console"}, func(key string, kn, vn *yaml.Node) error {
		if key == "console" {
			return d.errf(kn, join(ep, key), "the console exporter is not implemented (otlp with protocol http/protobuf is)")
		}
		found = true
		return d.otlpMetricExporter(vn, join(ep, key), &p.OTLP)
	})
	if err == nil && !found {
		err = d.errf(exporter, ep, "a periodic reader needs an exporter (otlp)")
	}
	return p, err
}

func (d *dec) otlpMetricExporter(v *yaml.Node, path string, e *OTLPMetricExporter) error {
	e.Compression, e.Timeout, e.Temporality = "none", defaultExportTimeout, "cumulative"
	var protocol, insecure *yaml.Node
	headers := map[string]string{}
	var list map[string]string
	err := d.mapping(v, path, []string{"protocol", "endpoint", "headers", "headers_list", "compression", "timeout", "insecure",
		"temporality_preference", "certificate", "client_key", "client_certificate", "default_histogram_aggregation"}, func(key string, kn, vn *yaml.Node) error {
		kp := join(path, key)
		var err error
		switch key {
		case "protocol":
			protocol = vn
			var s string
			if s, err = d.str(vn, kp); err == nil && s != "http/protobuf" {
				err = d.errf(vn, kp, "protocol %q is not implemented: otelstep exports its own metrics with http/protobuf", s)
			}
		case "endpoint":
			e.Endpoint, err = d.str(vn, kp)
		case "headers":
			err = d.headerPairs(vn, kp, headers)
			if err == nil {
				err = d.headerValues(vn, kp, "an HTTP header")
			}
		case "headers_list":
			var s string
			if s, err = d.str(vn, kp); err == nil {
				list, err = headersList(s)
				if err != nil {
					err = d.errf(vn, kp, "%v", err)
				}
				for _, v := range list {
					if err == nil {
						err = d.headerValue(vn, kp, "an HTTP header", v)
					}
				}
			}
		case "compression":
			e.Compression, err = d.str(vn, kp)
			if err == nil && e.Compression != "gzip" && e.Compression != "none" {
				err = d.errf(vn, kp, "compression %q is not implemented (gzip or none)", e.Compression)
			}
		case "timeout":
			e.Timeout, err = d.millis(vn, kp)
		case "insecure":
			insecure = vn
			_, err = d.boolean(vn, kp)
		case "temporality_preference":
			e.Temporality, err = d.str(vn, kp)
			if err == nil && e.Temporality != "cumulative" && e.Temporality != "delta" && e.Temporality != "lowmemory" {
				err = d.errf(vn, kp, "unknown temporality_preference %q (cumulative, delta or lowmemory)", e.Temporality)
			}
		default: // TLS files, histogram aggregation
			err = d.errf(kn, kp, "%s is not implemented", key)
		}
		return err
	})
	if err != nil {
		return err
	}
	if protocol == nil {
		return d.errf(v, join(path, "protocol"), "protocol is required (http/protobuf)")
	}
	if e.Endpoint == "" {
		return d.errf(v, join(path, "endpoint"), "endpoint is required")
	}
	u, perr := url.Parse(e.Endpoint)
	if perr != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return d.errf(v, join(path, "endpoint"), "endpoint %q must be an http:// or https:// URL", redactURL(e.Endpoint))
	}
	if insecure != nil {
		// For http/protobuf the endpoint's scheme decides; an insecure
		// that says otherwise would be silently overruled.
		b, _ := d.boolean(insecure, join(path, "insecure"))
		if b != (u.Scheme == "http") {
			return d.errf(insecure, join(path, "insecure"), "insecure: %v contradicts the endpoint's %s:// scheme, which decides for http/protobuf", b, u.Scheme)
		}
	}
	// headers take precedence over headers_list, as in the collector.
	e.Headers = list
	if e.Headers == nil {
		e.Headers = map[string]string{}
	}
	for k, v := range headers {
		e.Headers[k] = v
	}
	return nil
}

// headerPairs reads headers as the collector's schema has them, a list of
// {name, value}, or as a mapping like the exporters' headers.
func (d *dec) headerPairs(v *yaml.Node, path string, into map[string]string) error {
	if v.Kind == yaml.MappingNode {
		m, err := d.strMap(v, path)
		for k, s := range m {
			into[k] = s
		}
		return err
	}
	return d.sequence(v, path, func(i int, vn *yaml.Node) error {
		ip := fmt.Sprintf("%s[%d]", path, i)
		var name, value *string
		err := d.mapping(vn, ip, []string{"name", "value"}, func(key string, kn, vn *yaml.Node) error {
			s, err := d.str(vn, join(ip, key))
			if isNull(vn) {
				return d.errf(vn, join(ip, key), "%s is empty", key)
			}
			if key == "name" {
				name = &s
			} else {
				value = &s
			}
			return err
		})
		if err != nil {
			return err
		}
		if vn.Kind != yaml.MappingNode || name == nil || value == nil {
			return d.errf(vn, ip, "a header needs a name and a value")
		}
		into[*name] = *value
		return nil
	})
}

// headersList parses headers_list, "k1=v1,k2=v2" (the W3C baggage form the
// OTEL_EXPORTER_OTLP_HEADERS variable takes, values percent-encoded).
func headersList(s string) (map[string]string, error) {
	out := map[string]string{}
	for _, kv := range strings.Split(s, ",") {
		if strings.TrimSpace(kv) == "" {
			continue
		}
		k, v, ok := strings.Cut(kv, "=")
		k = strings.TrimSpace(k)
		if !ok || k == "" {
			// The text is not echoed: it holds header values.
			return nil, fmt.Errorf("headers_list: an entry is not name=value")
		}
		uv, err := url.PathUnescape(strings.TrimSpace(v))
		if err != nil {
			return nil, fmt.Errorf("headers_list: the value of %q is not percent-encoded right", k)
		}
		out[k] = uv
	}
	return out, nil
}

func (d *dec) pullReader(v *yaml.Node, path string) (*PullReader, error) {
	p := &PullReader{}
	var exporter *yaml.Node
	err := d.mapping(v, path, []string{"exporter"}, func(key string, kn, vn *yaml.Node) error {
		exporter = vn
		return nil
	})
	if err != nil {
		return nil, err
	}
	ep := join(path, "exporter")
	if isNull(exporter) {
		return nil, d.errf(v, ep, "a pull reader needs an exporter (prometheus)")
	}
	var prom *yaml.Node
	err = d.mapping(exporter, ep, []string{"prometheus"}, func(key string, kn, vn *yaml.Node) error {
		prom = vn
		return nil
	})
	if err != nil {
		return nil, err
	}
	pp := join(ep, "prometheus")
	if prom == nil {
		return nil, d.errf(exporter, pp, "a pull reader needs an exporter (prometheus)")
	}
	var host, port *yaml.Node
	err = d.mapping(prom, pp, []string{"host", "port", "without_type_suffix", "without_units", "without_scope_info", "with_resource_constant_labels"}, func(key string, kn, vn *yaml.Node) error {
		kp := join(pp, key)
		var err error
		switch key {
		case "host":
			host = vn
			p.Host, err = d.str(vn, kp)
		case "port":
			port = vn
			p.Port, err = d.integer(vn, kp)
			if err == nil && p.Port > 65535 {
				err = d.errf(vn, kp, "port %d is out of range", p.Port)
			}
		case "without_type_suffix":
			p.WithoutTypeSuffix, err = d.boolean(vn, kp)
		case "without_units", "without_scope_info":
			// otelstep's names carry no unit suffix and it writes no
			// otel_scope_info series: only true says what it does.
			var b bool
			if b, err = d.boolean(vn, kp); err == nil && !b {
				err = d.errf(vn, kp, "%s: false is not implemented (otelstep always leaves them out)", key)
			}
		default:
			err = d.errf(kn, kp, "%s is not implemented", key)
		}
		return err
	})
	if err != nil {
		return nil, err
	}
	if host == nil || p.Host == "" {
		return nil, d.errf(prom, join(pp, "host"), "host is required")
	}
	if port == nil {
		return nil, d.errf(prom, join(pp, "port"), "port is required")
	}
	// "[::1]" and "::1" both name the IPv6 loopback, as in the collector.
	p.Host = strings.TrimSuffix(strings.TrimPrefix(p.Host, "["), "]")
	return p, nil
}

// millis reads a duration in milliseconds, as the collector's schema has
// them: an integer (a Go duration like 500ms is refused, naming the unit).
func (d *dec) millis(n *yaml.Node, path string) (time.Duration, error) {
	if n.Kind != yaml.ScalarNode {
		return 0, d.errf(n, path, "expected milliseconds as an integer, got %s", kindName(n))
	}
	v, err := strconv.Atoi(n.Value)
	if err != nil {
		return 0, d.errf(n, path, "expected milliseconds as an integer (the collector's schema), got %q", n.Value)
	}
	if v <= 0 {
		return 0, d.errf(n, path, "must be positive, got %d", v)
	}
	return time.Duration(v) * time.Millisecond, nil
}

// telemetrySecrets adds the telemetry exporters' header values and an
// Authorization resource attribute to set.
func (c *Config) telemetrySecrets(set map[string]bool) {
	for _, r := range c.Service.Telemetry.Readers {
		if r.Periodic == nil {
			continue
		}
		for k, v := range r.Periodic.OTLP.Headers {
			set[v] = true
			if IsSecretKey(k) {
				if _, tok, ok := strings.Cut(v, " "); ok {
					set[tok] = true
				}
			}
		}
	}
	for k, v := range c.Service.Telemetry.Resource {
		if v != nil && IsSecretKey(k) {
			set[*v] = true
			if _, tok, ok := strings.Cut(*v, " "); ok {
				set[tok] = true
			}
		}
	}
}

// describeTelemetry writes the telemetry readers for Describe.
func (c *Config) describeTelemetry(p func(format string, args ...any)) {
	t := c.Service.Telemetry
	if len(t.Readers) == 0 {
		where := "off"
		if t.MetricsLevel() != "none" && len(c.Service.Extensions) > 0 {
			where = "on the health endpoint's /metrics"
		}
		p("telemetry metrics level=%s %s", t.MetricsLevel(), where)
		return
	}
	for _, r := range t.Readers {
		if r.Pull != nil {
			p("telemetry metrics level=%s pull prometheus http://%s/metrics", t.MetricsLevel(), hostPort(r.Pull.Host, r.Pull.Port))
			continue
		}
		e := r.Periodic.OTLP
		names := make([]string, 0, len(e.Headers))
		for k := range e.Headers {
			names = append(names, k+": <redacted>")
		}
		sort.Strings(names)
		p("telemetry metrics level=%s periodic every %s otlp http/protobuf %s compression=%s headers=[%s]", t.MetricsLevel(), r.Periodic.Interval, redactURL(e.Endpoint), e.Compression, strings.Join(names, "; "))
	}
}

func hostPort(host string, port int) string {
	if strings.Contains(host, ":") {
		host = "[" + host + "]"
	}
	return fmt.Sprintf("%s:%d", host, port)
}
