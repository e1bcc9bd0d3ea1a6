package availability

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/gosnmp/gosnmp"
)

// OIDSysUpTime is what a probe reads: cheap on every agent.
const OIDSysUpTime = ".1.3.6.1.2.1.1.3.0"

// target is where and how to probe an OLT. community is plaintext only in
// memory, never logged.
type target struct {
	host      string
	port      int
	community string
}

// probeResult is one probe's outcome. answered is false when the OLT sent
// nothing back (timeout, unreachable network); err is then why (without
// the community).
type probeResult struct {
	oltID    string
	start    time.Time
	duration time.Duration
	answered bool
	err      string
}

// probe sends one GET of sysUpTime.0 with its own gosnmp client (a client
// is not safe for concurrent use). Any response PDU, even an error status,
// proves the OLT answers.
func probe(ctx context.Context, t target, timeout time.Duration, retries int) (answered bool, err error) {
	g := &gosnmp.GoSNMP{
		Target: t.host, Port: uint16(t.port), Community: t.community, Version: gosnmp.Version2c,
		Timeout: timeout, Retries: retries, Context: ctx, MaxOids: 1,
	}
	if err := g.Connect(); err != nil {
		return false, fmt.Errorf("probe %s:%d: connect: %w", t.host, t.port, scrub(err, t.community))
	}
	defer g.Conn.Close()
	if _, err := g.Get([]string{OIDSysUpTime}); err != nil {
		return false, fmt.Errorf("probe %s:%d: no answer to a GET of sysUpTime.0: %w", t.host, t.port, scrub(err, t.community))
	}
	return true, nil
}

// scrub removes the community from an error text (gosnmp never puts it
// there, but an error is logged and published: keep the rule local).
func scrub(err error, community string) error {
	if community == "" || !strings.Contains(err.Error(), community) {
		return err
	}
	return errors.New(strings.ReplaceAll(err.Error(), community, "<community>"))
}

// NoAnswer tells whether an execution's error says the OLT did not answer
// (a timeout, nothing received), as opposed to an answer Facho could not
// use (a decoding error, a wrong profile).
func NoAnswer(errText string) bool {
	e := strings.ToLower(errText)
	// Not "node timeout" alone: a job that outran its timeout on an OLT
	// that answers slowly says nothing of whether it answers.
	for _, s := range []string{"did not answer", "no answer", "request timeout", "i/o timeout", "timed out", "no response",
		"connection refused", "no route to host", "network is unreachable", "host is down"} {
		if strings.Contains(e, s) {
			return true
		}
	}
	return false
}
