package streams

import (
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

func TestOptionsFromEnv(t *testing.T) {
	for name, tc := range map[string]struct {
		env  map[string]string
		ok   bool
		want func(Options) bool
	}{
		"defaults": {map[string]string{}, true, func(o Options) bool {
			return o.Replicas == 1 && o.LeaseTTL == 30*time.Second && o.Storage == jetstream.FileStorage
		}},
		"cluster": {map[string]string{EnvReplicas: "3", EnvLeaseTTL: "10s", EnvVarbindsMaxAge: "48h"}, true, func(o Options) bool {
			return o.Replicas == 3 && o.LeaseTTL == 10*time.Second && o.VarbindsMaxAge == 48*time.Hour
		}},
		"memory":         {map[string]string{EnvStorage: "memory"}, true, func(o Options) bool { return o.Storage == jetstream.MemoryStorage }},
		"bad storage":    {map[string]string{EnvStorage: "tape"}, false, nil},
		"bad replicas":   {map[string]string{EnvReplicas: "three"}, false, nil},
		"too many":       {map[string]string{EnvReplicas: "9"}, false, nil},
		"bad duration":   {map[string]string{EnvLeaseTTL: "soon"}, false, nil},
		"negative":       {map[string]string{EnvPollerAckWait: "-5s"}, false, nil},
		"lease too tiny": {map[string]string{EnvLeaseTTL: "10ms"}, false, nil},
		"pollers ttl":    {map[string]string{EnvPollersTTL: "1s"}, false, nil},
		"max bytes":      {map[string]string{EnvMaxBytes: "256MiB"}, true, func(o Options) bool { return o.MaxBytes == 256<<20 }},
		"max bytes raw":  {map[string]string{EnvMaxBytes: "2097152"}, true, func(o Options) bool { return o.MaxBytes == 2<<20 }},
		"max bytes 0":    {map[string]string{EnvMaxBytes: "0"}, true, func(o Options) bool { return o.MaxBytes == 0 }},
		"max bytes tiny": {map[string]string{EnvMaxBytes: "1KiB"}, false, nil},
		"max bytes bad":  {map[string]string{EnvMaxBytes: "lots"}, false, nil},
		"max bytes MB":   {map[string]string{EnvMaxBytes: "256MB"}, false, nil},
	} {
		t.Run(name, func(t *testing.T) {
			o, err := OptionsFromEnv(func(k string) string { return tc.env[k] })
			if (err == nil) != tc.ok {
				t.Fatalf("err = %v, want ok=%v", err, tc.ok)
			}
			if tc.ok && !tc.want(o) {
				t.Errorf("options %+v", o)
			}
		})
	}
}

// The byte cap bounds every stream but the configuration stream, which is
// the truth and is kept forever.
func TestMaxBytesSparesTheConfigStream(t *testing.T) {
	for _, tc := range []struct {
		maxBytes, wantConfig, wantOthers int64
	}{
		{0, -1, -1},
		{64 << 20, -1, 64 << 20},
	} {
		for _, sc := range StreamConfigs(Options{MaxBytes: tc.maxBytes}) {
			want := tc.wantOthers
			if sc.Name == StreamConfig {
				want = tc.wantConfig
			}
			if sc.MaxBytes != want {
				t.Errorf("MaxBytes %d: stream %s capped at %d, want %d", tc.maxBytes, sc.Name, sc.MaxBytes, want)
			}
		}
	}
}
