package streams

import (
	"context"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

func TestStreamLimitsFromEnv(t *testing.T) {
	env := map[string]string{
		EnvEventsMaxAge:                    "720h",
		EnvStreamMaxAge(StreamONU):         "8760h",
		EnvStreamMaxBytes(StreamVarbinds):  "10GiB",
		EnvStreamMaxBytes(StreamDLQ):       "0",
		EnvMaxBytes:                        "256MiB",
		EnvStreamCompression(StreamConfig): "none",
	}
	o, err := OptionsFromEnv(func(k string) string { return env[k] })
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]jetstream.StreamConfig{}
	for _, sc := range StreamConfigs(o) {
		got[sc.Name] = sc
	}
	for _, tc := range []struct {
		stream      string
		maxAge      time.Duration
		maxBytes    int64
		compression jetstream.StoreCompression
	}{
		{StreamONU, 8760 * time.Hour, 256 << 20, jetstream.S2Compression},
		{StreamExec, 720 * time.Hour, 256 << 20, jetstream.S2Compression},
		{StreamVarbinds, 7 * 24 * time.Hour, 10 << 30, jetstream.S2Compression},
		{StreamDLQ, 720 * time.Hour, -1, jetstream.S2Compression},
		{StreamConfig, 0, -1, jetstream.NoCompression},
	} {
		sc := got[tc.stream]
		if sc.MaxAge != tc.maxAge || sc.MaxBytes != tc.maxBytes || sc.Compression != tc.compression {
			t.Errorf("%s: max age %s bytes %d compression %v, want %s %d %v", tc.stream, sc.MaxAge, sc.MaxBytes, sc.Compression, tc.maxAge, tc.maxBytes, tc.compression)
		}
	}
	for name, bad := range map[string]map[string]string{
		"compression":        {EnvCompression: "zstd"},
		"stream compression": {EnvStreamCompression(StreamExec): "gzip"},
		"stream age":         {EnvStreamMaxAge(StreamExec): "forever"},
		"stream bytes":       {EnvStreamMaxBytes(StreamExec): "1KiB"},
	} {
		if _, err := OptionsFromEnv(func(k string) string { return bad[k] }); err == nil {
			t.Errorf("%s: %v accepted", name, bad)
		}
	}
	mem, err := OptionsFromEnv(func(k string) string { return map[string]string{EnvStorage: "memory"}[k] })
	if err != nil {
		t.Fatal(err)
	}
	for _, sc := range StreamConfigs(mem) {
		if sc.Compression != jetstream.NoCompression {
			t.Errorf("memory stream %s compressed", sc.Name)
		}
	}
}

// Compression can be turned on and off on streams that exist: the update
// is accepted and the stream keeps its messages.
func TestCompressionUpdatesExistingStreams(t *testing.T) {
	js := startJS(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for _, c := range []string{CompressionNone, CompressionS2, CompressionNone} {
		if err := Provision(ctx, js, Options{Compression: c}); err != nil {
			t.Fatalf("provision with %s: %v", c, err)
		}
		if _, err := js.Publish(ctx, SubjectAudit("test"), []byte(`{}`)); err != nil {
			t.Fatal(err)
		}
		s, err := js.Stream(ctx, StreamAudit)
		if err != nil {
			t.Fatal(err)
		}
		want := jetstream.S2Compression
		if c == CompressionNone {
			want = jetstream.NoCompression
		}
		if s.CachedInfo().Config.Compression != want {
			t.Errorf("compression %v after provisioning %s", s.CachedInfo().Config.Compression, c)
		}
	}
	s, err := js.Stream(ctx, StreamAudit)
	if err != nil {
		t.Fatal(err)
	}
	if n := s.CachedInfo().State.Msgs; n != 3 {
		t.Errorf("%d messages after the updates, want 3", n)
	}
}
