// Package config loads the OpenTelemetry Collector YAML that the benchmark
// orchestrator renders, with the collector's meaning, and refuses anything
// otelstep does not implement: an unknown component, key or statement is an
// error naming it and its line. Nothing in a config is silently ignored.
// Decoding goes on past an error to the next key, list item and component,
// so a refused config's error holds every error the file has (Errors
// lists them, in the file's order). Check adds what the machine says: a
// JSONL or log file that cannot be written, a port in use.
package config

import (
	"fmt"
	"log/slog"
	"net/url"
	"os"
	"sort"
	"strings"
	"time"

	"github.com/otelstep/otelstep/resource/ottl"
	"go.yaml.in/yaml/v3"
)

// Config is a loaded, expanded and validated collector config.
type Config struct {
	File string

	HealthCheck map[string]HealthCheck // by component id (e.g. "health_check")

	Prometheus map[string]*Prometheus
	OTLP       map[string]*OTLPReceiver

	Batch     map[string]Batch
	Resource  map[string][]ResourceAction
	Transform map[string]*Transform

	OTLPHTTP map[string]*OTLPHTTPExporter
	Files    map[string]FileExporter

	Connectors map[string]*Connector

	Service Service

	// Secrets are values that must never be printed: expanded values of
	// variables used in headers or the Authorization attribute, and header
	// values. Longest first, so redaction replaces whole tokens.
	Secrets []string

	// Warnings are what the config sets that is accepted but likely a
	// mistake (a variable stamped on every resource that is set but
	// empty); Check adds what the machine says.
	Warnings []Problem

	lines map[string]int // of the keys, by dotted path
}

// HealthCheck is extensions.health_check.
type HealthCheck struct {
	Endpoint string
	Path     string
}

// OTLPReceiver is receivers.otlp.
type OTLPReceiver struct {
	GRPCEndpoint            string // "" when the protocol is not configured
	HTTPEndpoint            string
	GRPCMaxRecvMiB          int
	HTTPMaxRequestBodyBytes int64
	GRPCKeepalive           GRPCKeepalive // otlp.go
	HTTPServer              HTTPServer
	// AdmissionMiB is admission.request_limit_mib (the OTel Arrow
	// receiver's name): the MiB of requests in flight, gRPC and HTTP
	// together, past which a request is answered "retry later"; 0 is
	// otlpin's default.
	AdmissionMiB int
}

// Batch is processors.batch.
type Batch struct {
	SendBatchSize    int
	SendBatchMaxSize int
	Timeout          time.Duration
}

// ResourceAction is one processors.resource.attributes entry.
type ResourceAction struct {
	Key           string
	Action        string // insert, update, upsert, delete, convert
	Value         any    // string, int64, float64 or bool; nil with FromAttribute
	FromAttribute string
	ConvertedType string // string, int, double (convert only)
	Line          int
}

// Transform is processors.transform: only the statements otelstep
// implements are accepted (package resource/ottl); each is parsed at load
// time.
type Transform struct {
	ErrorMode  string
	Statements []Statement
}

// Statement is one transform statement with its place in the pipelines.
type Statement struct {
	Signal string // metrics, traces or logs
	Line   int
	*ottl.Statement
}

// OTLPHTTPExporter is exporters.otlp_http / exporters.otlphttp.
type OTLPHTTPExporter struct {
	Endpoint        string
	MetricsEndpoint string
	TracesEndpoint  string
	LogsEndpoint    string
	Headers         map[string]string
	// HeaderVars names, by header, the environment variables its value
	// was expanded from (${env:OTEL_TOKEN}): what a log line or a printed
	// command names instead of the value.
	HeaderVars   map[string][]string
	Compression  string // gzip (the default), zstd, snappy or none
	Timeout      time.Duration
	Retry        Retry
	QueueEnabled bool
	// QueueSize bounds the queue in requests (sending_queue.queue_size
	// with sizer requests, the default: 1000), QueueBytes in bytes of
	// encoded requests (queue_size with sizer bytes; 0: the sink's
	// default, sink.DefaultQueueBytes). Both bounds hold whichever sizer
	// is named.
	QueueSize  int
	QueueBytes int64

	// CompressionLevel is compression_params.level, 0 when not set: the
	// type's default (compression.go).
	CompressionLevel int
}

// Retry is retry_on_failure.
type Retry struct {
	Enabled         bool
	InitialInterval time.Duration
	MaxInterval     time.Duration
	MaxElapsedTime  time.Duration
}

// FileExporter is exporters.file.
type FileExporter struct {
	Path string
	Line int // of path
}

// Service is the service section.
type Service struct {
	Extensions []string
	LogLevel   slog.Level
	// Logs is the rest of service.telemetry.logs.
	Logs      Logs
	Pipelines []Pipeline
	// Telemetry is service.telemetry.metrics and .resource (telemetry.go).
	Telemetry Telemetry
}

// Pipeline is one service.pipelines entry.
type Pipeline struct {
	ID         string // e.g. "metrics" or "traces/otlp"
	Signal     string
	Receivers  []string
	Processors []string
	Exporters  []string
	Line       int
	// ReceiverLines and ExporterLines are the lines of the receivers' and
	// exporters' list items, for errors about one of them.
	ReceiverLines, ExporterLines []int
}

// Load reads, expands and validates the config at path.
func Load(path string, env Lookup) (*Config, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("config: %w", err)
	}
	return Parse(path, data, env)
}

// Parse is Load on bytes already read; name is used in error messages.
func Parse(name string, data []byte, env Lookup) (*Config, error) {
	if env == nil {
		env = os.LookupEnv
	}
	var root yaml.Node
	if err := yaml.Unmarshal(data, &root); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	c := &Config{
		File:        name,
		HealthCheck: map[string]HealthCheck{},
		Prometheus:  map[string]*Prometheus{},
		OTLP:        map[string]*OTLPReceiver{},
		Batch:       map[string]Batch{},
		Resource:    map[string][]ResourceAction{},
		Transform:   map[string]*Transform{},
		OTLPHTTP:    map[string]*OTLPHTTPExporter{},
		Files:       map[string]FileExporter{},
		Connectors:  map[string]*Connector{},
		Service:     Service{LogLevel: slog.LevelInfo, Logs: defaultLogs()},
	}
	d := &dec{file: name, ids: map[string]bool{}, lines: map[string]int{}}
	if len(root.Content) == 0 {
		return nil, &Error{File: name, Msg: "config is empty"}
	}
	doc := root.Content[0]
	secretVars := map[string]bool{}
	expandErr := d.expandTree(doc, "", env, secretVars, false)
	c, err := c.decode(d, doc)
	if expandErr != nil {
		c, err = nil, errList(nil).add(expandErr).add(err)
	}
	if err != nil {
		// Every error, in the file's order.
		err = errList(Errors(err)).err()
	}
	return c, d.redactErr(err)
}

// decode fills c from doc, expanded.
func (c *Config) decode(d *dec, doc *yaml.Node) (*Config, error) {
	serviceOK := true
	err := d.mapping(doc, "", []string{"extensions", "receivers", "processors", "exporters", "connectors", "service"}, func(key string, k, v *yaml.Node) error {
		switch key {
		case "extensions":
			return d.components(v, key, []string{"health_check"}, c.extension(d))
		case "receivers":
			return d.components(v, key, []string{"prometheus", "otlp"}, c.receiver(d))
		case "processors":
			return d.components(v, key, []string{"batch", "resource", "transform"}, c.processor(d))
		case "exporters":
			return d.components(v, key, []string{"otlp_http", "otlphttp", "file"}, c.exporter(d))
		case "connectors":
			return d.components(v, key, sortedKeys(connectorSignals), c.connector(d))
		case "service":
			if d.tainted(v) {
				serviceOK = false
				return errReported
			}
			err := c.service(d, v)
			serviceOK = err == nil
			return err
		}
		return nil
	})
	// The references between sections are checked whenever the service
	// section could be read, so that one run reports those errors too.
	if serviceOK {
		err = errList(nil).add(err).add(c.validate(d, doc)).err()
	}
	if err != nil {
		return nil, err
	}
	c.collectSecrets()
	c.lines, c.Warnings = d.lines, d.warnings
	return c, nil
}

// expandTree expands variables in every scalar value (not in keys, as the
// collector does). A value that was one whole reference is retyped as YAML
// would type the expanded text. secret says n is in a secret place
// (secretPlace).
func (d *dec) expandTree(n *yaml.Node, path string, env Lookup, used map[string]bool, secret bool) error {
	switch n.Kind {
	case yaml.ScalarNode:
		if !strings.Contains(n.Value, "$") {
			return nil
		}
		whole := isWholeReference(n.Value) && n.Style&(yaml.SingleQuotedStyle|yaml.DoubleQuotedStyle) == 0
		out, names, err := expand(n.Value, env)
		if err != nil {
			if d.failed == nil {
				d.failed = map[*yaml.Node]bool{}
			}
			d.failed[n] = true
			if d.failedLines == nil {
				d.failedLines = map[int]bool{}
			}
			d.failedLines[n.Line] = true
			return d.errf(n, path, "%v", err)
		}
		for _, nm := range names {
			used[nm] = true
		}
		d.noteVariables(n, names, env, secret)
		n.Value = out
		if whole && out != "" {
			n.Tag = ""
			n.Style = 0
		} else {
			n.Tag = "!!str"
		}
	case yaml.MappingNode:
		var errs errList
		for i := 0; i+1 < len(n.Content); i += 2 {
			key := n.Content[i].Value
			errs = errs.add(d.expandTree(n.Content[i+1], join(path, key), env, used, secret || secretPlace(key, n)))
		}
		return errs.err()
	case yaml.SequenceNode:
		var errs errList
		for i, v := range n.Content {
			errs = errs.add(d.expandTree(v, fmt.Sprintf("%s[%d]", path, i), env, used, secret))
		}
		return errs.err()
	case yaml.AliasNode:
		return d.errf(n, path, "YAML aliases are not supported")
	}
	return nil
}

// components decodes a section of component ids ("type" or "type/name").
func (d *dec) components(n *yaml.Node, section string, types []string, fn func(id, typ, path string, k, v *yaml.Node) error) error {
	return d.mapping(n, section, nil, func(id string, k, v *yaml.Node) error {
		typ, name, _ := strings.Cut(id, "/")
		path := join(section, id)
		d.ids[id] = true
		if strings.Contains(id, "/") && name == "" {
			return d.errf(k, path, "component id %q has an empty name after /", id)
		}
		if !contains(types, typ) {
			if len(types) == 0 {
				return d.errf(k, path, "unknown component %q: otelstep implements no %s", id, section)
			}
			return d.errf(k, path, "unknown component type %q in %s (otelstep implements: %s)", typ, section, strings.Join(types, ", "))
		}
		err := fn(id, typ, path, k, v)
		if err != nil && d.tainted(v) {
			// A variable that did not expand was reported; what its
			// value made fail (an error on its line) would only repeat
			// it. The component's other errors are its own.
			kept := errList{errReported}
			for _, e := range errList(nil).add(err) {
				if !d.failedLines[lineOf(e)] {
					kept = append(kept, e)
				}
			}
			return kept
		}
		return err
	})
}

func (c *Config) extension(d *dec) func(id, typ, path string, k, v *yaml.Node) error {
	return func(id, typ, path string, k, v *yaml.Node) error {
		return c.healthCheck(d, id, path, v)
	}
}

func (c *Config) healthCheck(d *dec, id, path string, v *yaml.Node) error {
	hc := HealthCheck{Endpoint: "localhost:13133", Path: "/"}
	err := d.mapping(v, path, []string{"endpoint", "path"}, func(key string, kn, vn *yaml.Node) error {
		s, err := d.str(vn, join(path, key))
		if key == "endpoint" {
			hc.Endpoint = s
		} else {
			hc.Path = s
		}
		return err
	})
	c.HealthCheck[id] = hc
	return err
}

func (c *Config) receiver(d *dec) func(id, typ, path string, k, v *yaml.Node) error {
	return func(id, typ, path string, k, v *yaml.Node) error {
		switch typ {
		case "prometheus":
			p, err := d.prometheus(v, path)
			c.Prometheus[id] = p
			return err
		case "otlp":
			o := &OTLPReceiver{}
			err := d.mapping(v, path, []string{"protocols", "admission"}, func(key string, kn, vn *yaml.Node) error {
				pp := join(path, key)
				if key == "admission" {
					return d.mapping(vn, pp, []string{"request_limit_mib"}, func(key string, kn, vn *yaml.Node) error {
						var err error
						o.AdmissionMiB, err = d.integer(vn, join(pp, key))
						if err == nil && (o.AdmissionMiB < 1 || o.AdmissionMiB > 1<<20) {
							err = d.errf(vn, join(pp, key), "request_limit_mib %d: want 1 to %d", o.AdmissionMiB, 1<<20)
						}
						return err
					})
				}
				return d.mapping(vn, pp, []string{"grpc", "http"}, func(proto string, kn, vn *yaml.Node) error {
					ppp := join(pp, proto)
					if proto == "grpc" {
						o.GRPCEndpoint = "localhost:4317"
						o.GRPCKeepalive.MaxConnectionIdle = DefaultGRPCMaxConnectionIdle
						return d.mapping(vn, ppp, []string{"endpoint", "max_recv_msg_size_mib", "keepalive"}, func(key string, kn, vn *yaml.Node) error {
							var err error
							switch key {
							case "endpoint":
								o.GRPCEndpoint, err = d.str(vn, join(ppp, key))
							case "keepalive":
								err = d.grpcKeepalive(vn, join(ppp, key), &o.GRPCKeepalive)
							default:
								o.GRPCMaxRecvMiB, err = d.integer(vn, join(ppp, key))
							}
							return err
						})
					}
					o.HTTPEndpoint = "localhost:4318"
					return d.mapping(vn, ppp, append([]string{"endpoint", "max_request_body_size"}, httpServerKeys...), func(key string, kn, vn *yaml.Node) error {
						var err error
						if key == "endpoint" {
							o.HTTPEndpoint, err = d.str(vn, join(ppp, key))
						} else if key != "max_request_body_size" {
							err = d.httpServerKey(key, vn, ppp, &o.HTTPServer)
						} else {
							var n int
							n, err = d.integer(vn, join(ppp, key))
							o.HTTPMaxRequestBodyBytes = int64(n)
						}
						return err
					})
				})
			})
			if err == nil && o.GRPCEndpoint == "" && o.HTTPEndpoint == "" {
				err = d.errf(v, path, "at least one of protocols.grpc or protocols.http must be configured")
			}
			c.OTLP[id] = o
			return err
		}
		return nil
	}
}

func (c *Config) processor(d *dec) func(id, typ, path string, k, v *yaml.Node) error {
	return func(id, typ, path string, k, v *yaml.Node) error {
		switch typ {
		case "batch":
			b := Batch{SendBatchSize: 8192, Timeout: 200 * time.Millisecond}
			err := d.mapping(v, path, []string{"send_batch_size", "send_batch_max_size", "timeout"}, func(key string, kn, vn *yaml.Node) error {
				var err error
				switch key {
				case "send_batch_size":
					b.SendBatchSize, err = d.integer(vn, join(path, key))
				case "send_batch_max_size":
					b.SendBatchMaxSize, err = d.integer(vn, join(path, key))
				case "timeout":
					b.Timeout, err = d.duration(vn, join(path, key))
				}
				return err
			})
			if err == nil && b.SendBatchMaxSize > 0 && b.SendBatchMaxSize < b.SendBatchSize {
				err = d.errf(v, path, "send_batch_max_size (%d) must be at least send_batch_size (%d)", b.SendBatchMaxSize, b.SendBatchSize)
			}
			c.Batch[id] = b
			return err
		case "resource":
			acts, err := d.resourceActions(v, path)
			c.Resource[id] = acts
			return err
		case "transform":
			t, err := d.transform(v, path)
			c.Transform[id] = t
			return err
		}
		return nil
	}
}

func (d *dec) resourceActions(v *yaml.Node, path string) ([]ResourceAction, error) {
	var acts []ResourceAction
	var attrs *yaml.Node
	err := d.mapping(v, path, []string{"attributes"}, func(key string, kn, vn *yaml.Node) error {
		attrs = vn
		return nil
	})
	if err != nil {
		return nil, err
	}
	if attrs == nil {
		return nil, d.errf(v, path, "attributes is required")
	}
	err = d.sequence(attrs, join(path, "attributes"), func(i int, vn *yaml.Node) error {
		ap := fmt.Sprintf("%s.attributes[%d]", path, i)
		a := ResourceAction{Line: vn.Line}
		var valueNode, actionNode *yaml.Node
		err := d.mapping(vn, ap, []string{"key", "value", "from_attribute", "action", "converted_type"}, func(key string, kn, vn *yaml.Node) error {
			var err error
			switch key {
			case "key":
				a.Key, err = d.str(vn, join(ap, key))
			case "value":
				valueNode = vn
			case "from_attribute":
				a.FromAttribute, err = d.str(vn, join(ap, key))
			case "action":
				actionNode = vn
				a.Action, err = d.str(vn, join(ap, key))
			case "converted_type":
				a.ConvertedType, err = d.str(vn, join(ap, key))
			}
			return err
		})
		if err != nil {
			return err
		}
		if a.Key == "" {
			return d.errf(vn, ap, "key is required")
		}
		switch a.Action {
		case "insert", "update", "upsert":
			if valueNode == nil && a.FromAttribute == "" {
				return d.errf(vn, ap, "action %s on %q needs value or from_attribute", a.Action, a.Key)
			}
			if valueNode != nil && a.FromAttribute != "" {
				return d.errf(vn, ap, "action %s on %q has both value and from_attribute", a.Action, a.Key)
			}
			if valueNode != nil {
				val, err := d.scalarValue(valueNode, join(ap, "value"))
				if err != nil {
					return err
				}
				if s, ok := val.(string); ok && s == "" && a.Key == "Authorization" {
					return d.errf(valueNode, join(ap, "value"), "the Authorization attribute would be empty: the routing proxy drops such payloads")
				}
				if nm := d.emptyVars[valueNode]; nm != "" {
					d.warnings = append(d.warnings, Problem{Warning: true, Err: d.errf(valueNode, join(ap, "value"),
						"the environment variable %s is set but empty: every resource gets %s=%q", nm, a.Key, fmt.Sprint(val)).(*Error)})
				}
				if s, ok := val.(string); ok && IsSecretKey(a.Key) {
					// The token: the header it is sent in could not hold it either.
					if err := d.headerValue(valueNode, join(ap, "value"), "the Authorization attribute (the token)", s); err != nil {
						return err
					}
					d.warnShortToken(valueNode, join(ap, "value"), s)
				}
				a.Value = val
			}
		case "delete":
		case "convert":
			switch a.ConvertedType {
			case "string", "int", "double":
			case "":
				return d.errf(vn, ap, "action convert on %q needs converted_type (string, int or double)", a.Key)
			default:
				return d.errf(vn, join(ap, "converted_type"), "unknown converted_type %q (want string, int or double)", a.ConvertedType)
			}
		case "":
			return d.errf(vn, ap, "action is required")
		case "hash", "extract":
			return d.errf(actionNode, join(ap, "action"), "action %q is not implemented", a.Action)
		default:
			return d.errf(actionNode, join(ap, "action"), "unknown action %q (want insert, update, upsert, delete or convert)", a.Action)
		}
		if a.Action != "convert" && a.ConvertedType != "" {
			return d.errf(vn, join(ap, "converted_type"), "converted_type is only for action convert")
		}
		acts = append(acts, a)
		return nil
	})
	return acts, err
}

// scalarValue types a value as YAML does (string, int, float, bool).
func (d *dec) scalarValue(n *yaml.Node, path string) (any, error) {
	if n.Kind != yaml.ScalarNode {
		return nil, d.errf(n, path, "expected a scalar value, got %s", kindName(n))
	}
	var v any
	if err := n.Decode(&v); err != nil {
		return nil, d.errf(n, path, "%v", err)
	}
	switch x := v.(type) {
	case string, bool, float64:
		return x, nil
	case int:
		return int64(x), nil
	case int64:
		return x, nil
	case uint64:
		return nil, d.errf(n, path, "integer %d out of range", x)
	case nil:
		return nil, d.errf(n, path, "value is empty")
	}
	return fmt.Sprint(v), nil
}

func (c *Config) exporter(d *dec) func(id, typ, path string, k, v *yaml.Node) error {
	return func(id, typ, path string, k, v *yaml.Node) error {
		switch typ {
		case "file":
			var f FileExporter
			err := d.mapping(v, path, []string{"path"}, func(key string, kn, vn *yaml.Node) error {
				var err error
				f.Line = kn.Line
				f.Path, err = d.str(vn, join(path, key))
				return err
			})
			if err == nil && f.Path == "" {
				err = d.errf(v, path, "path is required")
			}
			c.Files[id] = f
			return err
		default: // otlp_http, otlphttp
			e := &OTLPHTTPExporter{
				Compression:  "gzip",
				Timeout:      30 * time.Second,
				Retry:        Retry{Enabled: true, InitialInterval: 5 * time.Second, MaxInterval: 30 * time.Second, MaxElapsedTime: 300 * time.Second},
				QueueEnabled: true,
				QueueSize:    1000,
			}
			var levelNode *yaml.Node // compression_params.level
			err := d.mapping(v, path, []string{"endpoint", "metrics_endpoint", "traces_endpoint", "logs_endpoint", "headers", "compression", "compression_params", "timeout", "retry_on_failure", "sending_queue"}, func(key string, kn, vn *yaml.Node) error {
				kp := join(path, key)
				var err error
				switch key {
				case "endpoint":
					e.Endpoint, err = d.str(vn, kp)
				case "metrics_endpoint":
					e.MetricsEndpoint, err = d.str(vn, kp)
				case "traces_endpoint":
					e.TracesEndpoint, err = d.str(vn, kp)
				case "logs_endpoint":
					e.LogsEndpoint, err = d.str(vn, kp)
				case "headers":
					e.Headers, err = d.strMap(vn, kp)
					if err == nil {
						err = d.headerValues(vn, kp, "an HTTP header")
					}
					if err == nil && vn.Kind == yaml.MappingNode {
						for i := 0; i+1 < len(vn.Content); i += 2 {
							if k, v := vn.Content[i], vn.Content[i+1]; IsSecretKey(k.Value) {
								d.warnShortToken(v, join(kp, k.Value), v.Value)
							}
						}
					}
					e.HeaderVars = d.varsOf(vn)
				case "compression":
					e.Compression, err = d.compression(vn, kp)
				case "compression_params":
					levelNode, err = d.compressionParams(e, vn, kp)
				case "timeout":
					e.Timeout, err = d.duration(vn, kp)
				case "retry_on_failure":
					err = d.mapping(vn, kp, []string{"enabled", "initial_interval", "max_interval", "max_elapsed_time", "multiplier", "randomization_factor"}, func(key string, kn, vn *yaml.Node) error {
						var err error
						switch key {
						case "enabled":
							e.Retry.Enabled, err = d.boolean(vn, join(kp, key))
						case "initial_interval":
							e.Retry.InitialInterval, err = d.duration(vn, join(kp, key))
						case "max_interval":
							e.Retry.MaxInterval, err = d.duration(vn, join(kp, key))
						case "max_elapsed_time":
							e.Retry.MaxElapsedTime, err = d.duration(vn, join(kp, key))
						default:
							return d.errf(kn, join(kp, key), "%s is not implemented (the backoff doubles with jitter)", key)
						}
						return err
					})
				case "sending_queue":
					size, sizeNode, sizer := 0, (*yaml.Node)(nil), "requests"
					err = d.mapping(vn, kp, []string{"enabled", "queue_size", "num_consumers", "sizer"}, func(key string, kn, vn *yaml.Node) error {
						var err error
						switch key {
						case "enabled":
							e.QueueEnabled, err = d.boolean(vn, join(kp, key))
						case "queue_size":
							size, err = d.integer(vn, join(kp, key))
							if err == nil && size <= 0 {
								err = d.errf(vn, join(kp, key), "queue_size must be positive")
							}
							sizeNode = vn
						case "sizer":
							sizer, err = d.str(vn, join(kp, key))
							if err == nil && sizer != "requests" && sizer != "bytes" {
								err = d.errf(vn, join(kp, key), "sizer %q is not implemented (requests or bytes)", sizer)
							}
						case "num_consumers":
							_, err = d.integer(vn, join(kp, key))
						}
						return err
					})
					if err == nil && sizeNode != nil {
						if sizer == "bytes" {
							e.QueueBytes = int64(size)
							if e.QueueBytes < 1<<20 {
								err = d.errf(sizeNode, join(kp, "queue_size"), "queue_size %d with sizer bytes is under 1 MiB: it would hold no request of a scrape", size)
							}
						} else {
							e.QueueSize = size
						}
					}
				}
				return err
			})
			if err == nil {
				err = d.compressionLevel(e, levelNode, join(path, "compression_params.level"))
			}
			if err == nil {
				if e.Endpoint == "" && (e.MetricsEndpoint == "" || e.TracesEndpoint == "" || e.LogsEndpoint == "") {
					err = d.errf(v, path, "endpoint is required")
				} else if e.Endpoint != "" {
					u, perr := url.Parse(e.Endpoint)
					if perr != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
						err = d.errf(v, join(path, "endpoint"), "endpoint %q must be an http:// or https:// URL", redactURL(e.Endpoint))
					}
				}
			}
			c.OTLPHTTP[id] = e
			return err
		}
	}
}

func redactURL(s string) string {
	u, err := url.Parse(s)
	if err != nil || u.User == nil {
		return s
	}
	u.User = url.User("redacted")
	return u.String()
}

func (c *Config) collectSecrets() {
	set := map[string]bool{}
	c.telemetrySecrets(set)
	for _, e := range c.OTLPHTTP {
		for k, v := range e.Headers {
			set[v] = true
			if strings.EqualFold(k, "authorization") {
				if _, tok, ok := strings.Cut(v, " "); ok {
					set[tok] = true
				}
			}
		}
	}
	for _, acts := range c.Resource {
		for _, a := range acts {
			if strings.EqualFold(a.Key, "authorization") {
				if s, ok := a.Value.(string); ok {
					set[s] = true
					if _, tok, ok := strings.Cut(s, " "); ok {
						set[tok] = true
					}
				}
			}
		}
	}
	for s := range set {
		if len(s) >= 4 { // too short a value would redact ordinary words
			c.Secrets = append(c.Secrets, s)
		}
	}
	sort.Slice(c.Secrets, func(i, j int) bool { return len(c.Secrets[i]) > len(c.Secrets[j]) })
}

// IsSecretKey reports whether an attribute or header key holds a secret.
func IsSecretKey(k string) bool {
	return strings.EqualFold(k, "authorization")
}
