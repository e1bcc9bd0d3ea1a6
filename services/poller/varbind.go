package poller

import (
	"encoding/hex"
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/gosnmp/gosnmp"

	"github.com/facho-olt/facho/streams"
)

// toVarbind renders a gosnmp PDU in the contract's raw form (see
// streams.Varbind): hex for OctetString, decimal for numbers, dotted OIDs
// without the leading dot.
func toVarbind(pdu gosnmp.SnmpPDU) streams.Varbind {
	vb := streams.Varbind{OID: strings.TrimPrefix(pdu.Name, ".")}
	switch pdu.Type {
	case gosnmp.Integer:
		vb.Type, vb.Value = streams.VTInteger, decimal(pdu.Value)
	case gosnmp.OctetString:
		vb.Type = streams.VTOctetString
		if b, ok := pdu.Value.([]byte); ok {
			vb.Value = hexString(b)
		}
	case gosnmp.ObjectIdentifier:
		vb.Type = streams.VTOID
		if s, ok := pdu.Value.(string); ok {
			vb.Value = strings.TrimPrefix(s, ".")
		}
	case gosnmp.IPAddress:
		vb.Type = streams.VTIPAddress
		if s, ok := pdu.Value.(string); ok {
			vb.Value = s
		}
	case gosnmp.Counter32:
		vb.Type, vb.Value = streams.VTCounter32, decimal(pdu.Value)
	case gosnmp.Gauge32, gosnmp.Uinteger32:
		vb.Type, vb.Value = streams.VTGauge32, decimal(pdu.Value)
	case gosnmp.TimeTicks:
		vb.Type, vb.Value = streams.VTTimeTicks, decimal(pdu.Value)
	case gosnmp.Counter64:
		vb.Type, vb.Value = streams.VTCounter64, decimal(pdu.Value)
	case gosnmp.Null:
		vb.Type = streams.VTNull
	case gosnmp.NoSuchObject:
		vb.Type = streams.VTNoSuchObject
	case gosnmp.NoSuchInstance:
		vb.Type = streams.VTNoSuchInstance
	case gosnmp.EndOfMibView:
		vb.Type = streams.VTEndOfMibView
	case gosnmp.OpaqueFloat:
		vb.Type = streams.VTOpaque
		if f, ok := pdu.Value.(float32); ok {
			vb.Value = strconv.FormatFloat(float64(f), 'g', -1, 32)
		}
	case gosnmp.OpaqueDouble:
		vb.Type = streams.VTOpaque
		if f, ok := pdu.Value.(float64); ok {
			vb.Value = strconv.FormatFloat(f, 'g', -1, 64)
		}
	default:
		// Opaque, BitString, NsapAddress...: keep the bytes when there
		// are some, under the BER type's name.
		vb.Type = strings.TrimSpace(pdu.Type.String())
		if pdu.Type == gosnmp.Opaque {
			vb.Type = streams.VTOpaque
		}
		if b, ok := pdu.Value.([]byte); ok {
			vb.Value = hex.EncodeToString(b)
		} else if pdu.Value != nil {
			vb.Value = fmt.Sprint(pdu.Value)
		}
	}
	return vb
}

// decimal renders any gosnmp numeric value in base 10.
func decimal(v any) string {
	switch n := v.(type) {
	case int:
		return strconv.Itoa(n)
	case int64:
		return strconv.FormatInt(n, 10)
	case uint:
		return strconv.FormatUint(uint64(n), 10)
	case uint32:
		return strconv.FormatUint(uint64(n), 10)
	case uint64:
		return strconv.FormatUint(n, 10)
	case float64:
		if n == math.Trunc(n) {
			return strconv.FormatFloat(n, 'f', 0, 64)
		}
		return strconv.FormatFloat(n, 'g', -1, 64)
	case nil:
		return ""
	default:
		return gosnmp.ToBigInt(v).String()
	}
}

// hexString is hex.EncodeToString with one allocation instead of two.
func hexString(b []byte) string {
	if len(b) == 0 {
		return ""
	}
	var sb strings.Builder
	sb.Grow(2 * len(b))
	const digits = "0123456789abcdef"
	for _, c := range b {
		sb.WriteByte(digits[c>>4])
		sb.WriteByte(digits[c&0x0f])
	}
	return sb.String()
}
