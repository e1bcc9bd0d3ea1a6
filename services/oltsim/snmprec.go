package oltsim

import (
	"bufio"
	"bytes"
	"encoding/hex"
	"fmt"
	"io"
	"math"
	"net/netip"
	"os"
	"strconv"
	"strings"
)

// loadSnmprec reads an snmpsim .snmprec file (OID|tag|value per line).
//
// It follows snmpsim 0.4: lines are whitespace-trimmed, blank lines and
// #comments skipped, the value is everything after the second '|', tags may
// carry an 'x' (hex) or 'e' (Python escapes) suffix. When an OID appears
// twice, GET answers the last record (snmpsim's index keeps the last offset)
// while GETNEXT/GETBULK walk into the first one (snmpsim reads the line after
// the previous OID). Unsorted files are sorted. Every GET miss answers
// noSuchInstance, as snmpsim does.
func loadSnmprec(path string) (*mibView, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("load snmprec: %w", err)
	}
	defer f.Close()
	v, err := parseSnmprec(f)
	if err != nil {
		return nil, fmt.Errorf("load snmprec %s: %w", path, err)
	}
	return v, nil
}

func parseSnmprec(r io.Reader) (*mibView, error) {
	br := bufio.NewReaderSize(r, 1<<16)
	b := &mibBuilder{strict: false}
	seen := make(map[string]int) // OID text -> index in b.entries of first occurrence
	lineNo := 0
	for {
		line, err := br.ReadBytes('\n')
		if len(line) > 0 {
			lineNo++
			if perr := parseSnmprecLine(b, seen, line, lineNo); perr != nil {
				return nil, perr
			}
		}
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("read line %d: %w", lineNo+1, err)
		}
	}
	return b.build(), nil
}

func parseSnmprecLine(b *mibBuilder, seen map[string]int, line []byte, lineNo int) error {
	t := bytes.TrimSpace(line)
	if len(t) == 0 || t[0] == '#' {
		return nil
	}
	parts := bytes.SplitN(t, []byte{'|'}, 3)
	if len(parts) != 3 || len(parts[0]) == 0 || len(parts[1]) == 0 {
		return fmt.Errorf("line %d: broken record %q", lineNo, truncate(t, 60))
	}
	o, err := parseOID(string(parts[0]))
	if err != nil {
		return fmt.Errorf("line %d: %w", lineNo, err)
	}
	v, err := snmprecValue(string(parts[1]), string(parts[2]))
	if err != nil {
		return fmt.Errorf("line %d (%s): %w", lineNo, o, err)
	}
	key := o.String()
	if i, dup := seen[key]; dup {
		// GET answers the last record; walks keep the first.
		last := appendVarbind(nil, o, v)
		b.entries[i].getEnc = last
		return nil
	}
	seen[key] = len(b.entries)
	b.add(o, v)
	return nil
}

func truncate(b []byte, n int) string {
	if len(b) > n {
		return string(b[:n]) + "..."
	}
	return string(b)
}

// snmprecValue decodes one value by snmprec tag.
func snmprecValue(tag, val string) (value, error) {
	enc := byte(0)
	if strings.HasSuffix(tag, "x") || strings.HasSuffix(tag, "e") {
		enc = tag[len(tag)-1]
		tag = tag[:len(tag)-1]
	}
	raw := []byte(val)
	switch enc {
	case 'x':
		h := strings.TrimSpace(val)
		d, err := hex.DecodeString(h)
		if err != nil {
			return value{}, fmt.Errorf("hex value: %w", err)
		}
		raw = d
	case 'e':
		d, err := unescapePython(val)
		if err != nil {
			return value{}, err
		}
		raw = d
	}
	switch tag {
	case "2":
		if enc != 0 {
			return value{}, fmt.Errorf("tag %s%c not supported", tag, enc)
		}
		n, err := strconv.ParseInt(strings.TrimSpace(val), 10, 64)
		if err != nil || n < math.MinInt32 || n > math.MaxInt32 {
			return value{}, fmt.Errorf("integer %q out of range", val)
		}
		return intValue(n), nil
	case "4":
		return bytesValue(raw), nil
	case "5":
		return value{typ: tagNull}, nil
	case "6":
		o, err := parseOID(val)
		if err != nil {
			return value{}, err
		}
		return oidValue(o), nil
	case "64":
		if enc != 0 {
			if len(raw) != 4 {
				return value{}, fmt.Errorf("ip address of %d bytes", len(raw))
			}
			return value{typ: tagIPAddress, b: raw}, nil
		}
		a, err := netip.ParseAddr(strings.TrimSpace(val))
		if err != nil || !a.Is4() {
			return value{}, fmt.Errorf("ip address %q", val)
		}
		b := a.As4()
		return value{typ: tagIPAddress, b: b[:]}, nil
	case "68":
		return value{typ: tagOpaque, b: raw}, nil
	case "65", "66", "67", "70":
		bits := 32
		if tag == "70" {
			bits = 64
		}
		n, err := strconv.ParseUint(strings.TrimSpace(val), 10, bits)
		if err != nil {
			return value{}, fmt.Errorf("unsigned %q: %w", val, err)
		}
		typ := map[string]byte{"65": tagCounter32, "66": tagGauge32, "67": tagTimeTicks, "70": tagCounter64}[tag]
		return value{typ: typ, u: n}, nil
	case "128", "129", "130":
		typ := map[string]byte{"128": tagNoSuchObject, "129": tagNoSuchInstance, "130": tagEndOfMibView}[tag]
		return value{typ: typ}, nil
	}
	return value{}, fmt.Errorf("unsupported tag %q", tag)
}

// unescapePython decodes the escapes snmpsim accepts in 'e' values.
func unescapePython(s string) ([]byte, error) {
	out := make([]byte, 0, len(s))
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c != '\\' {
			out = append(out, c)
			continue
		}
		i++
		if i >= len(s) {
			return nil, fmt.Errorf("dangling escape")
		}
		switch s[i] {
		case '\\', '\'', '"':
			out = append(out, s[i])
		case 'a':
			out = append(out, 7)
		case 'b':
			out = append(out, 8)
		case 'f':
			out = append(out, 12)
		case 'n':
			out = append(out, 10)
		case 'r':
			out = append(out, 13)
		case 't':
			out = append(out, 9)
		case 'v':
			out = append(out, 11)
		case 'x':
			if i+3 > len(s) {
				return nil, fmt.Errorf("short \\x escape")
			}
			d, err := hex.DecodeString(s[i+1 : i+3])
			if err != nil {
				return nil, fmt.Errorf("\\x escape: %w", err)
			}
			out = append(out, d[0])
			i += 2
		default:
			return nil, fmt.Errorf("unknown escape \\%c", s[i])
		}
	}
	return out, nil
}
