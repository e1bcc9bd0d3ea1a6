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
