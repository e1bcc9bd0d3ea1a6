package trapd

import (
	"errors"
	"fmt"
	"os"
	"time"
)

// Config of the trap receiver. Zero fields take the defaults of
// WithDefaults.
type Config struct {
	// Addr is the UDP address traps are received on; default ":162".
	Addr string
	// Instance names this replica (in the trap events' receiver and their
	// ids); default trapd-<hostname>-<pid>.
	Instance string
	// Source names the service in event envelopes; default trapd.
	Source string
	// ProfilesDir adds vendor profiles to the built-in ones.
	ProfilesDir string
	// Readers is how many goroutines read the socket; default 2.
	Readers int
	// Handlers is how many goroutines decode and publish what the readers
	// queued; default 4.
	Handlers int
	// QueueBytes bounds the datagrams read and not yet handled; default
	// 32 MiB (about 100,000 traps).
	QueueBytes int
	// MaxPacket bounds a datagram in bytes; default 8192.
	MaxPacket int
	// Rate and Burst are each source's token bucket (traps/s, traps);
	// default 500/s and 1000.
	Rate  float64
	Burst int
	// MaxSources bounds the sources tracked by the rate limiter; the
	// sources beyond share one bucket. Default 10000.
	MaxSources int
	// LogEvery bounds the log of dropped traps: one line per reason per
	// period; default 10s.
	LogEvery time.Duration
	// PublishTimeout bounds the acknowledgement of one publish; default 5s.
	PublishTimeout time.Duration
	// MaxPending bounds the publishes awaiting their acknowledgement;
	// default 8192.
	MaxPending int
	// ReadBuffer is the socket's receive buffer in bytes; default 4 MiB.
	ReadBuffer int
}

// WithDefaults fills zero fields.
func (c Config) WithDefaults() Config {
	if c.Addr == "" {
		c.Addr = ":162"
	}
	if c.Instance == "" {
		host, _ := os.Hostname()
		c.Instance = fmt.Sprintf("trapd-%s-%d", host, os.Getpid())
	}
	if c.Source == "" {
		c.Source = "trapd"
	}
	if c.Readers == 0 {
		c.Readers = 2
	}
	if c.Handlers == 0 {
		c.Handlers = 4
	}
	if c.QueueBytes == 0 {
		c.QueueBytes = 32 << 20
	}
	if c.MaxPacket == 0 {
		c.MaxPacket = 8192
	}
	if c.Rate == 0 {
		c.Rate = 500
	}
	if c.Burst == 0 {
		c.Burst = 1000
	}
	if c.MaxSources == 0 {
		c.MaxSources = 10000
	}
	if c.LogEvery == 0 {
		c.LogEvery = 10 * time.Second
	}
	if c.PublishTimeout == 0 {
		c.PublishTimeout = 5 * time.Second
	}
	if c.MaxPending == 0 {
		c.MaxPending = 8192
	}
	if c.ReadBuffer == 0 {
		c.ReadBuffer = 4 << 20
	}
	return c
}

// Validate checks the config after defaults.
func (c Config) Validate() error {
	var errs []error
	if c.Readers < 1 || c.Readers > 64 {
		errs = append(errs, fmt.Errorf("readers %d: want 1..64", c.Readers))
	}
	if c.Handlers < 1 || c.Handlers > 256 {
		errs = append(errs, fmt.Errorf("handlers %d: want 1..256", c.Handlers))
	}
	if c.QueueBytes < 1<<16 || c.QueueBytes > 1<<30 {
		errs = append(errs, fmt.Errorf("queue bytes %d: want 64 KiB..1 GiB", c.QueueBytes))
	}
	if c.MaxPacket < 484 || c.MaxPacket > 65535 {
		errs = append(errs, fmt.Errorf("max packet %d: want 484..65535 bytes", c.MaxPacket))
	}
	if c.Rate <= 0 || c.Burst < 1 {
		errs = append(errs, fmt.Errorf("rate %g/s burst %d: want both positive", c.Rate, c.Burst))
	}
	if c.MaxSources < 1 || c.MaxSources > 1_000_000 {
		errs = append(errs, fmt.Errorf("max sources %d: want 1..1000000", c.MaxSources))
	}
	if c.LogEvery < 0 {
		errs = append(errs, errors.New("log period must not be negative"))
	}
	if c.PublishTimeout <= 0 {
		errs = append(errs, errors.New("publish timeout must be positive"))
	}
	if c.MaxPending < 1 {
		errs = append(errs, errors.New("max pending must be positive"))
	}
	if c.ReadBuffer < 0 {
		errs = append(errs, errors.New("read buffer must not be negative"))
	}
	return errors.Join(errs...)
}
