package devstack

import (
	"errors"
	"fmt"
	"net"
	"strconv"

	"github.com/facho-olt/facho/pkg/portcheck"
)

// portUse is one port the stack will bind.
type portUse struct {
	what    string // "api", "embedded nats", ...
	network string // tcp or udp
	addr    string // host:port
}

// ports lists what the stack binds on fixed ports (port 0 is any free
// one, nothing to check). The private Postgres port is checked by pgboot,
// and only when it starts the cluster: a cluster of this data folder left
// running holds it rightly.
func (c Config) ports() []portUse {
	var out []portUse
	if c.NATSPort > 0 {
		out = append(out, portUse{"embedded nats", "tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(c.NATSPort))})
	}
	out = append(out, portUse{"api", "tcp", c.APIAddr})
	if c.MetricsPort > 0 {
		names := []string{"planner"}
		for i := 0; i < c.Pollers; i++ {
			names = append(names, fmt.Sprintf("poller-%d", i+1))
		}
		names = append(names, "projector", "auditor", "availability", "alerter", "trapd")
		for i, name := range names {
			out = append(out, portUse{name + " metrics", "tcp", net.JoinHostPort(c.MetricsHost, strconv.Itoa(c.MetricsPort+i))})
		}
	}
	if _, port, err := net.SplitHostPort(c.Trapd.Addr); err == nil && port != "0" {
		out = append(out, portUse{"trap receiver", "udp", c.Trapd.Addr})
	}
	if len(c.Fleet.OLTs) > 0 {
		if c.SimControlAddr != "" {
			out = append(out, portUse{"simulator control", "tcp", c.SimControlAddr})
		}
		for _, o := range c.Fleet.OLTs {
			out = append(out, portUse{"simulator " + o.Name, "udp", o.Listen})
		}
	}
	return out
}

// checkPorts reports every port of the stack that is already taken, by
// what and number ("api: port 8080 in use"), before anything starts.
func checkPorts(c Config) error {
	var errs []error
	for _, p := range c.ports() {
		err := portcheck.Free(p.network, p.addr)
		if err == nil {
			continue
		}
		if errors.Is(err, portcheck.ErrInUse) {
			_, port, _ := net.SplitHostPort(p.addr)
			if p.network == "udp" {
				port += "/udp"
			}
			errs = append(errs, fmt.Errorf("%s: port %s in use", p.what, port))
			continue
		}
		errs = append(errs, fmt.Errorf("%s: %w", p.what, err))
	}
	return errors.Join(errs...)
}
