package main

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"sort"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/gosnmp/gosnmp"

	"github.com/facho-olt/facho/pkg/profiles"
	"github.com/facho-olt/facho/services/projector"
	"github.com/facho-olt/facho/streams"
)

const profilesUsage = `usage:
  facho profiles list [--dir DIR]          the vendor profiles (built-in plus DIR, FACHO_PROFILES_DIR)
  facho profiles show ID [--dir DIR]       one profile as JSON
  facho profiles check FILE [HOST[:PORT]]  validate a profile file; with an agent, walk it and print the
                                           ONUs Facho would store (community from FACHO_SNMP_COMMUNITY, default public)
`

// runProfiles serves `facho profiles list|show|check`.
func runProfiles(ctx context.Context, args []string, getenv func(string) string, stdout io.Writer) error {
	if len(args) == 0 {
		return errors.New(profilesUsage)
	}
	fs := flag.NewFlagSet("profiles "+args[0], flag.ContinueOnError)
	fs.SetOutput(stdout)
	dir := fs.String("dir", getenv("FACHO_PROFILES_DIR"), "folder of profiles added to the built-in ones")
	timeout := fs.Duration("timeout", 2*time.Second, "SNMP timeout (check)")
	rest := args[1:]
	var pos []string
	for len(rest) > 0 {
		if err := fs.Parse(rest); err != nil {
			return err
		}
		rest = fs.Args()
		if len(rest) > 0 {
			pos, rest = append(pos, rest[0]), rest[1:]
		}
	}
	switch args[0] {
	case "list":
		cat, err := profiles.Load(*dir)
		if err != nil {
			return err
		}
		tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "ID\tVENDOR\tNAME\tFIELDS\tJOBS\tSOURCE")
		for _, p := range cat.List() {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%d\t%s\n", p.ID, p.Vendor, p.Name, len(p.Columns), len(p.Jobs), p.Source)
		}
		if err := tw.Flush(); err != nil {
			return err
		}
		return listProblems(cat, stdout)
	case "show":
		if len(pos) != 1 {
			return errors.New("usage: facho profiles show ID")
		}
		cat, err := profiles.Load(*dir)
		if err != nil {
			return err
		}
		p, ok := cat.Get(pos[0])
		if !ok {
			return fmt.Errorf("no profile %q (facho profiles list)", pos[0])
		}
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(p)
	case "check":
		if len(pos) < 1 || len(pos) > 2 {
			return errors.New("usage: facho profiles check FILE [HOST[:PORT]]")
		}
		data, err := os.ReadFile(pos[0])
		if err != nil {
			return err
		}
		p, err := profiles.Parse(data, pos[0])
		if err != nil {
			return err
		}
		fmt.Fprintf(stdout, "%s: profile %s (%s) is valid: %d columns, %d jobs, index scheme %s, %d traps mapped\n", pos[0], p.ID, p.Name, len(p.Columns), len(p.Jobs), p.IndexScheme, len(p.Traps))
		for _, tr := range p.Traps {
			kind := tr.Kind
			if tr.KindFrom != nil {
				kind = "from " + tr.KindFrom.OID
			}
			fmt.Fprintf(stdout, "  trap %s %s: %s\n", tr.ID, tr.OID, kind)
		}
		if len(pos) == 1 {
			return nil
		}
		community := getenv("FACHO_SNMP_COMMUNITY")
		if community == "" {
			community = "public"
		}
		return checkAgent(ctx, p, pos[1], community, *timeout, stdout)
	}
	return fmt.Errorf("profiles: unknown command %q\n%s", args[0], profilesUsage)
}

// listProblems prints the profile files of the folder that were not
// loaded; an error when there is one, so a script notices.
func listProblems(cat *profiles.Catalogue, stdout io.Writer) error {
	problems := cat.Problems()
	for _, p := range problems {
		fmt.Fprintf(stdout, "not loaded: %s\n", p.Error)
	}
	if len(problems) > 0 {
		return fmt.Errorf("%d profile files not loaded (see above)", len(problems))
	}
	return nil
}

// checkAgent walks every column of p on the agent and prints what the
// projector would store, decoded by the projector's own code.
func checkAgent(ctx context.Context, p profiles.Profile, agent, community string, timeout time.Duration, stdout io.Writer) error {
	host, port := agent, 161
	if h, ps, err := net.SplitHostPort(agent); err == nil {
		n, err := strconv.Atoi(ps)
		if err != nil || n < 1 || n > 65535 {
			return fmt.Errorf("agent %q: bad port", agent)
		}
		host, port = h, n
	}
	info, err := profiles.ReadSysInfo(ctx, host, port, community, timeout)
	if err != nil {
		return err
	}
	match := "does not match"
	if single, err := profiles.New(p); err == nil {
		if _, ok := single.Identify(info.SysObjectID, info.SysDescr); ok {
			match = "matches"
		}
	}
	fmt.Fprintf(stdout, "agent %s: sysObjectID %s, sysDescr %q: %s the profile's rules\n", agent, info.SysObjectID, info.SysDescr, match)
	g := &gosnmp.GoSNMP{Target: host, Port: uint16(port), Community: community, Version: gosnmp.Version2c, Timeout: timeout, Retries: 1,
		MaxRepetitions: uint32(max(p.SNMP.MaxRepetitions, 10)), Context: ctx}
	if err := g.Connect(); err != nil {
		return fmt.Errorf("snmp %s: %w", agent, err)
	}
	defer g.Conn.Close()
	var vbs []streams.Varbind
	for _, c := range p.Columns {
		pdus, err := g.BulkWalkAll(c.OID)
		if err != nil {
			return fmt.Errorf("walk %s (%s): %w", c.ID, c.OID, err)
		}
		for _, pdu := range pdus {
			vbs = append(vbs, contractVarbind(pdu))
		}
		fmt.Fprintf(stdout, "column %-16s %-45s %5d varbinds\n", c.ID, c.OID, len(pdus))
	}
	idx := p.Index
	d, err := projector.DecodeBatch(streams.VarbindBatch{ExecutionID: "check", OLTID: "check", IndexScheme: p.IndexScheme, Index: &idx,
		Columns: p.Specs(), CollectedAt: time.Now().UTC(), Varbinds: vbs})
	if err != nil {
		return err
	}
	unplaced := 0
	for _, n := range d.Skipped {
		unplaced += n
	}
	fmt.Fprintf(stdout, "%d ONUs; %d of %d varbinds not placed %v; %d of rows that are no ONU (filter, key pattern)\n", len(d.ONUs), unplaced, len(vbs), d.Skipped, d.Filtered)
	for _, w := range implausible(p, d, vbs) {
		fmt.Fprintf(stdout, "warning: %s\n", w)
	}
	for _, k := range d.Keys() {
		f := d.ONUs[k]
		fmt.Fprintf(stdout, "%s\tpon_index=%d onu_id=%d index=%s %s\n", f.PortName, k.PonIndex, k.ONUID, f.Index, describe(f))
	}
	return checkHealth(g, p, stdout) // profiles_health.go
}

// describe prints an ONU's fields as key=value, sorted.
func describe(f *projector.ONUFields) string {
	kv := map[string]string{}
	if f.Serial != nil {
		kv["serial"] = *f.Serial
	}
	if f.Description != nil {
		kv["description"] = strconv.Quote(*f.Description)
	}
	if f.Status != nil {
		kv["status"] = *f.Status
	}
	if f.RxPowerSet {
		kv["rx_power"] = num(f.RxPowerDBm)
	}
	for k, v := range f.Text {
		kv[k] = strconv.Quote(v)
	}
	for k, v := range f.Num {
		kv[k] = num(v)
	}
	for k, v := range f.Time {
		if v == nil {
			kv[k] = "null"
		} else {
			kv[k] = v.Format(time.RFC3339)
		}
	}
	keys := make([]string, 0, len(kv))
	for k := range kv {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	for _, k := range keys {
		fmt.Fprintf(&b, " %s=%s", k, kv[k])
	}
	return strings.TrimSpace(b.String())
}

func num(p *float64) string {
	if p == nil {
		return "null"
	}
	return strconv.FormatFloat(*p, 'f', -1, 64)
}

// contractVarbind renders a gosnmp PDU as the varbind contract does.
func contractVarbind(p gosnmp.SnmpPDU) streams.Varbind {
	v := streams.Varbind{OID: strings.TrimPrefix(p.Name, ".")}
	switch p.Type {
	case gosnmp.OctetString:
		b, _ := p.Value.([]byte)
		v.Type, v.Value = streams.VTOctetString, hex.EncodeToString(b)
	case gosnmp.Integer:
		v.Type, v.Value = streams.VTInteger, gosnmp.ToBigInt(p.Value).String()
	case gosnmp.Counter32, gosnmp.Gauge32, gosnmp.TimeTicks, gosnmp.Counter64, gosnmp.Uinteger32:
		v.Type, v.Value = streams.VTGauge32, gosnmp.ToBigInt(p.Value).String()
	case gosnmp.ObjectIdentifier, gosnmp.IPAddress:
		s, _ := p.Value.(string)
		v.Type, v.Value = streams.VTOID, strings.TrimPrefix(s, ".")
	default:
		v.Type = streams.VTNull
	}
	return v
}
