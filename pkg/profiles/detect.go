package profiles

import (
	"context"
	"fmt"
	"regexp"
	"strings"
	"time"

	"github.com/gosnmp/gosnmp"
)

// The system group OIDs read to identify an agent.
const (
	OIDSysDescr    = "1.3.6.1.2.1.1.1.0"
	OIDSysObjectID = "1.3.6.1.2.1.1.2.0"
)

// SysInfo is what an agent says of itself.
type SysInfo struct {
	SysObjectID string `json:"sys_object_id"`
	SysDescr    string `json:"sys_descr"`
}

// ReadSysInfo reads sysObjectID.0 and sysDescr.0 of an SNMP v2c agent in
// one GET. The community is never part of an error text.
func ReadSysInfo(ctx context.Context, host string, port int, community string, timeout time.Duration) (SysInfo, error) {
	g := &gosnmp.GoSNMP{Target: host, Port: uint16(port), Community: community, Version: gosnmp.Version2c,
		Timeout: timeout, Retries: 1, Context: ctx}
	if err := g.Connect(); err != nil {
		return SysInfo{}, fmt.Errorf("snmp %s:%d: connect: %w", host, port, scrubbed(err, community))
	}
	defer g.Conn.Close()
	res, err := g.Get([]string{OIDSysObjectID, OIDSysDescr})
	if err != nil {
		return SysInfo{}, fmt.Errorf("snmp get %s:%d: %w", host, port, scrubbed(err, community))
	}
	var info SysInfo
	for _, v := range res.Variables {
		switch strings.TrimPrefix(v.Name, ".") {
		case OIDSysObjectID:
			if s, ok := v.Value.(string); ok {
				info.SysObjectID = strings.TrimPrefix(s, ".")
			}
		case OIDSysDescr:
			if b, ok := v.Value.([]byte); ok {
				info.SysDescr = strings.TrimSpace(strings.ToValidUTF8(string(b), "?"))
			}
		}
	}
	if info.SysObjectID == "" && info.SysDescr == "" {
		return info, fmt.Errorf("snmp get %s:%d: no sysObjectID nor sysDescr in the answer", host, port)
	}
	return info, nil
}

// scrubbed drops the community from a library's error text, where gosnmp
// might quote a packet (the only place a community can appear).
func scrubbed(err error, community string) error {
	if community == "" || !strings.Contains(err.Error(), community) {
		return err
	}
	return fmt.Errorf("%s", strings.ReplaceAll(err.Error(), community, "<community>"))
}

// Identify returns the profile of an agent from its sysObjectID and
// sysDescr. A profile matches when the sysObjectID is under one of its
// prefixes or the sysDescr matches one of its patterns; among the
// profiles that match, the most specific wins:
//  1. the longest sysObjectID prefix that matched (in arcs; a profile
//     matching by sysDescr alone has 0);
//  2. then the longest sysDescr text a pattern matched (V-SOL's EPON and
//     GPON OLTs share one sysObjectID: "^V1600D" and "^V1600G" tell them
//     apart);
//  3. then the higher priority;
//  4. then the smaller id, so the answer never depends on load order.
//
// False when none matches.
func (c *Catalogue) Identify(sysObjectID, sysDescr string) (Profile, bool) {
	oid := strings.Trim(sysObjectID, ".")
	var best Profile
	var bestScore matchScore
	found := false
	for _, p := range c.List() { // by id: a tie keeps the first
		score, ok := p.matches(oid, sysDescr)
		if ok && (!found || score.beats(bestScore)) {
			best, bestScore, found = p, score, true
		}
	}
	return best, found
}

// matchScore is how specifically a profile matched an agent.
type matchScore struct{ oidArcs, descrLen, priority int }

func (a matchScore) beats(b matchScore) bool {
	if a.oidArcs != b.oidArcs {
		return a.oidArcs > b.oidArcs
	}
	if a.descrLen != b.descrLen {
		return a.descrLen > b.descrLen
	}
	return a.priority > b.priority
}

// matches says whether the agent matches p, and how specifically.
func (p Profile) matches(oid, descr string) (matchScore, bool) {
	s := matchScore{priority: p.Match.Priority}
	ok := false
	for _, pre := range p.Match.SysObjectID {
		pre = strings.Trim(pre, ".")
		if oid != "" && (oid == pre || strings.HasPrefix(oid, pre+".")) {
			ok = true
			s.oidArcs = max(s.oidArcs, strings.Count(pre, ".")+1)
		}
	}
	if descr != "" {
		for _, d := range p.Match.SysDescr {
			re, err := regexp.Compile(d)
			if err != nil {
				continue
			}
			if loc := re.FindStringIndex(descr); loc != nil {
				ok = true
				s.descrLen = max(s.descrLen, loc[1]-loc[0])
			}
		}
	}
	return s, ok
}
