package oltsim

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Shape is the size of a generated OLT.
type Shape struct {
	Slots        int `json:"slots" yaml:"slots"`
	PortsPerSlot int `json:"ports_per_slot" yaml:"ports_per_slot"`
	ONUsPerPort  int `json:"onus_per_port" yaml:"onus_per_port"`
}

// ParseShape reads "SLOTSxPORTSxONUS" (e.g. "1x2x16"), the form the
// commands take on their command line.
func ParseShape(s string) (Shape, error) {
	parts := strings.Split(s, "x")
	if len(parts) != 3 {
		return Shape{}, fmt.Errorf("shape %q: want SLOTSxPORTSxONUS, e.g. 1x2x16", s)
	}
	var n [3]int
	for i, p := range parts {
		v, err := strconv.Atoi(p)
		if err != nil || v < 1 {
			return Shape{}, fmt.Errorf("shape %q: %q is not a positive number", s, p)
		}
		n[i] = v
	}
	return Shape{Slots: n[0], PortsPerSlot: n[1], ONUsPerPort: n[2]}, nil
}

// Faults are injected per OLT and may be changed while it runs.
type Faults struct {
	// Latency is added before each response; Jitter adds a uniform random
	// extra in [0, Jitter).
	Latency time.Duration `json:"latency" yaml:"latency"`
	Jitter  time.Duration `json:"jitter" yaml:"jitter"`
	// LossPercent drops that share of requests (0-100) without an answer.
	LossPercent float64 `json:"loss_percent" yaml:"loss_percent"`
	// NoAnswer drops every request.
	NoAnswer bool `json:"no_answer" yaml:"no_answer"`
	// SlowdownPerConcurrent adds this much latency per other request in
	// flight on the same OLT when a request arrives.
	SlowdownPerConcurrent time.Duration `json:"slowdown_per_concurrent" yaml:"slowdown_per_concurrent"`
	// MaxRPS caps requests per wall-clock second; excess requests are
	// dropped (no answer), as an overloaded OLT does. 0 = no cap.
	MaxRPS int `json:"max_rps" yaml:"max_rps"`
	// MalformedPercent sends that share of responses corrupted (truncated
	// or with a broken BER length).
	MalformedPercent float64 `json:"malformed_percent" yaml:"malformed_percent"`
	// MaxVarbinds drops, without an answer, every request carrying more
	// than this many varbinds, as agents do that time out on large GET
	// PDUs instead of answering tooBig. 0 = no limit.
	MaxVarbinds int `json:"max_varbinds" yaml:"max_varbinds"`
	// OIDNotIncreasing makes the agent answer every GETNEXT and GETBULK
	// with the OIDs it was asked (each once, value Integer 0) instead of
	// the next ones, as broken agents do: a walk cannot go on. GETs are
	// answered normally.
	OIDNotIncreasing bool `json:"oid_not_increasing" yaml:"oid_not_increasing"`
}

// Life makes a generated OLT change over time, deterministically from the
// OLT's Seed and the tick number. The zero value is off.
type Life struct {
	// Interval between automatic ticks; 0 means ticks only via OLT.Tick.
	Interval time.Duration `json:"interval" yaml:"interval"`
	// OfflinePercent: chance per tick that an online ONU goes offline.
	OfflinePercent float64 `json:"offline_percent" yaml:"offline_percent"`
	// OnlinePercent: chance per tick that an offline ONU comes back.
	OnlinePercent float64 `json:"online_percent" yaml:"online_percent"`
	// RxDriftDBm: maximum absolute Rx power change per tick (online ONUs),
	// kept within -8..-28 dBm.
	RxDriftDBm float64 `json:"rx_drift_dbm" yaml:"rx_drift_dbm"`
	// AddPercent / RemovePercent: chance per tick per PON port that an ONU
	// is provisioned (next free id) / that one ONU is removed.
	AddPercent    float64 `json:"add_percent" yaml:"add_percent"`
	RemovePercent float64 `json:"remove_percent" yaml:"remove_percent"`
	// RebootPercent: chance per tick that the agent reboots (sysUpTime
	// restarts from 0).
	RebootPercent float64 `json:"reboot_percent" yaml:"reboot_percent"`
}

// OLTConfig configures one simulated OLT.
type OLTConfig struct {
	Name      string `json:"name" yaml:"name"`           // unique in the fleet
	Listen    string `json:"listen" yaml:"listen"`       // "127.0.0.1:0" (the default) picks a free port
	Community string `json:"-" yaml:"community"`         // wrong community => no answer
	Profile   string `json:"profile" yaml:"profile"`     // see ProfileNames; empty with Recording
	Recording string `json:"recording" yaml:"recording"` // .snmprec file served as this OLT
	Shape     Shape  `json:"shape" yaml:"shape"`
	Seed      int64  `json:"seed" yaml:"seed"`
	// MaxResponseBytes bounds a response message; 0 means 65000. GETBULK
	// responses are truncated to fit, GET/GETNEXT get tooBig.
	MaxResponseBytes int    `json:"max_response_bytes" yaml:"max_response_bytes"`
	Faults           Faults `json:"faults" yaml:"faults"`
	Life             Life   `json:"life" yaml:"life"`
	// Traps is where the OLT sends a trap when an ONU goes offline or
	// comes back (traps.go); zero: none.
	Traps TrapTarget `json:"traps" yaml:"traps"`
}

// FleetConfig is a set of OLTs started together.
type FleetConfig struct {
	OLTs []OLTConfig `json:"olts" yaml:"olts"`
}

// DefaultMaxResponseBytes is used when OLTConfig.MaxResponseBytes is 0.
const DefaultMaxResponseBytes = 65000

// maxUDPPayload is the largest IPv4 UDP payload.
const maxUDPPayload = 65507

func (c OLTConfig) validate() error {
	if c.Name == "" {
		return fmt.Errorf("olt config: empty name")
	}
	if (c.Profile == "") == (c.Recording == "") {
		return fmt.Errorf("olt %s: exactly one of profile and recording must be set", c.Name)
	}
	if c.Profile != "" {
		sh := c.Shape
		if sh.Slots < 0 || sh.PortsPerSlot < 0 || sh.ONUsPerPort < 0 {
			return fmt.Errorf("olt %s: negative shape %+v", c.Name, sh)
		}
		if sh.ONUsPerPort > 256 && c.Profile != "huawei-ma5800" {
			return fmt.Errorf("olt %s: at most 256 ONUs per port", c.Name)
		}
		if sh.ONUsPerPort > 256 || sh.PortsPerSlot > 32 || sh.Slots > 64 {
			return fmt.Errorf("olt %s: shape %+v too large (max 64x32x256)", c.Name, sh)
		}
	}
	if c.MaxResponseBytes < 0 || c.MaxResponseBytes > maxUDPPayload {
		return fmt.Errorf("olt %s: max response bytes %d out of range", c.Name, c.MaxResponseBytes)
	}
	return nil
}
