package main

import (
	"fmt"
	"io"
	"strings"

	"github.com/gosnmp/gosnmp"

	"github.com/facho-olt/facho/pkg/profiles"
	"github.com/facho-olt/facho/streams"
)

// checkHealth walks the health tables of p's health section on the agent
// and prints the reading the poller would publish, decoded by the poller's
// own code (profiles.DecodeHealth). Nothing without a health section.
func checkHealth(g *gosnmp.GoSNMP, p profiles.Profile, stdout io.Writer) error {
	specs := p.HealthSpecs()
	if len(specs) == 0 {
		return nil
	}
	var vbs []streams.Varbind
	walked := map[string]int{}
	for _, s := range specs {
		n, done := walked[s.OID]
		if !done {
			pdus, err := g.BulkWalkAll(s.OID)
			if err != nil {
				return fmt.Errorf("walk health %s (%s): %w", s.Field, s.OID, err)
			}
			for _, pdu := range pdus {
				vbs = append(vbs, contractVarbind(pdu))
			}
			n = len(pdus)
			walked[s.OID] = n
		}
		fmt.Fprintf(stdout, "health %-28s %-45s %5d varbinds\n", strings.TrimPrefix(s.Field, "health."), s.OID, n)
	}
	h := profiles.DecodeHealth(specs, vbs)
	if c := h.Chassis; c != nil {
		fmt.Fprintf(stdout, "chassis: cpu %s %%, memory %s %%, temperature %s C (%d boards)\n", num(c.CPUPercent), num(c.MemoryPercent), num(c.TemperatureC), c.Boards)
	}
	for _, u := range h.Fans {
		fmt.Fprintf(stdout, "fan %s %s: %s\n", u.Index, u.Name, u.Status)
	}
	for _, u := range h.PSUs {
		fmt.Fprintf(stdout, "psu %s %s: %s\n", u.Index, u.Name, u.Status)
	}
	for _, q := range h.PONs {
		fmt.Fprintf(stdout, "pon %s %s (pon_index %d): admin %s oper %s tx %s rx %s dBm temperature %s C\n", q.Index, q.Name, q.PonIndex,
			q.AdminState, q.OperState, num(q.TxPowerDBm), num(q.RxPowerDBm), num(q.TemperatureC))
	}
	for _, u := range h.Uplinks {
		fmt.Fprintf(stdout, "uplink %s %s: admin %s oper %s\n", u.Index, u.Name, u.AdminState, u.OperState)
	}
	fmt.Fprintf(stdout, "health: %d fans, %d psus, %d pon ports, %d uplinks; %d varbinds fed nothing\n", len(h.Fans), len(h.PSUs), len(h.PONs), len(h.Uplinks), h.Skipped)
	return nil
}
