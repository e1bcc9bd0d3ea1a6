package profiles

import (
	"context"
	"fmt"
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
