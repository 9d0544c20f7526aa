package config

import (
	"strings"
	"testing"
)

// memoryConfig is base with an otlp_http exporter whose sending_queue is
// queue and the otlp receiver's admission admission (YAML, "" for none).
func memoryConfig(queue, admission string) string {
	src := strings.Replace(base, "exporters:\n", "exporters:\n  otlp_http:\n    endpoint: http://127.0.0.1:1\n    sending_queue:\n"+queue, 1)
	src = strings.Replace(src, "exporters: [file/traces]", "exporters: [file/traces, otlp_http]", 1)
	if admission != "" {
		src = strings.Replace(src, "  otlp:\n", "  otlp:\n    admission:\n"+admission, 1)
	}
	return src
}

// The exporter's queue in bytes (sending_queue.sizer bytes) or requests,
// and the OTLP receiver's byte budget (admission.request_limit_mib).
func TestMemoryLimits(t *testing.T) {
	cases := []struct {
		name, queue, admission string
		size                   int
		bytes                  int64
		mib                    int
	}{
		{"defaults", "      enabled: true\n", "", 1000, 0, 0},
		{"requests", "      queue_size: 50\n", "", 50, 0, 0},
		{"bytes", "      sizer: bytes\n      queue_size: 33554432\n", "      request_limit_mib: 32\n", 1000, 32 << 20, 32},
		{"bytes, sizer after", "      queue_size: 8388608\n      sizer: bytes\n", "", 1000, 8 << 20, 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c, err := Parse("t.yaml", []byte(memoryConfig(tc.queue, tc.admission)), env(nil))
			if err != nil {
				t.Fatal(err)
			}
			e := c.OTLPHTTP["otlp_http"]
			if e.QueueSize != tc.size || e.QueueBytes != tc.bytes || c.OTLP["otlp"].AdmissionMiB != tc.mib {
				t.Fatalf("queue %d requests, %d bytes, admission %d MiB; want %d, %d, %d", e.QueueSize, e.QueueBytes, c.OTLP["otlp"].AdmissionMiB, tc.size, tc.bytes, tc.mib)
			}
		})
	}
	refused := []struct {
		name, queue, admission string
		want                   []string
	}{
		{"items sizer", "      sizer: items\n", "", []string{"t.yaml:10:", "sending_queue.sizer", "items", "requests or bytes"}},
		{"bytes too few", "      sizer: bytes\n      queue_size: 1000\n", "", []string{"t.yaml:11:", "queue_size", "1 MiB"}},
		{"queue size zero", "      queue_size: 0\n", "", []string{"queue_size must be positive"}},
		{"admission zero", "      enabled: true\n", "      request_limit_mib: 0\n", []string{"t.yaml:4:", "admission.request_limit_mib", "want 1 to"}},
		{"admission not a number", "      enabled: true\n", "      request_limit_mib: 64MiB\n", []string{"t.yaml:4:", "request_limit_mib", "64MiB"}},
		{"admission waiting", "      enabled: true\n", "      waiting_limit_mib: 8\n", []string{"t.yaml:4:", "waiting_limit_mib"}},
	}
	for _, tc := range refused {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse("t.yaml", []byte(memoryConfig(tc.queue, tc.admission)), env(nil))
			if err == nil {
				t.Fatal("accepted")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not contain %q", err, w)
				}
			}
		})
	}
}
