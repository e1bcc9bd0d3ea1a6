package console

import (
	"fmt"
	"html"
	"html/template"
	"math"
	"net/http"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"time"
)

// The ONU page (issue 12): the ONU's state, its history over a chosen
// range as charts (inline SVG drawn here, no script) and a table of its
// changes. Everything is read through the API: the ONU, its state at the
// range's start (point in time) and its history.

// numericField is a chartable ONU field.
type numericField struct {
	Name, Label, Unit string
}

var numericFields = []numericField{
	{"rx_power_dbm", "Rx power", "dBm"},
	{"tx_power_dbm", "Tx power", "dBm"},
	{"olt_rx_power_dbm", "OLT Rx power", "dBm"},
	{"temperature_c", "Temperature", "°C"},
	{"voltage_v", "Voltage", "V"},
	{"bias_ma", "Bias current", "mA"},
	{"distance_m", "Distance", "m"},
}

// onuRanges are the range presets, shortest first.
var onuRanges = []struct {
	Key string
	D   time.Duration
}{{"6h", 6 * time.Hour}, {"24h", 24 * time.Hour}, {"7d", 7 * 24 * time.Hour}, {"30d", 30 * 24 * time.Hour}}

// onuView is the data of an ONU page.
type onuView struct {
	OLTID, OLTName string
	Pon, ONUID     string
	Base           string // the page's path
	ONU            map[string]any
	NoCurrent      string
	Range          string
	From, To       time.Time
	FromInput      string
	ToInput        string
	Ranges         []string
	Charts         []onuChart
	Status         template.HTML
	Changes        []map[string]any
	Total, Offset  int
	Limit          int
	Prev, Next     string
	Truncated      bool
}

// onuChart is one field's chart.
type onuChart struct {
	Field, Label, Unit string
	SVG                template.HTML
	Last               string
	Changes            int
}

// series is one field's values over the range: the value at its start,
// then each change.
type series struct {
	start *float64
	pts   []point
}

type point struct {
	at time.Time
	v  *float64
}

func (c *Console) onuPage(w http.ResponseWriter, r *http.Request) {
	olt, pon, onu := r.PathValue("id"), r.PathValue("pon_index"), r.PathValue("onu_id")
	base := "/api/v1/olts/" + url.PathEscape(olt) + "/onus/" + url.PathEscape(pon) + "/" + url.PathEscape(onu)
	ov := &onuView{OLTID: olt, Pon: pon, ONUID: onu, ONU: map[string]any{}, Base: r.URL.Path}
	cur := c.call(r.Context(), http.MethodGet, base, nil)
	if cur.Status == http.StatusNotFound {
		// Known from its history only, or not at all.
		if probe := c.call(r.Context(), http.MethodGet, base+"/history?limit=1", nil); probe.Status == http.StatusNotFound {
			c.notFound(w, r)
			return
		}
		ov.NoCurrent, _ = cur.errMsg()
	} else {
		ov.ONU = cur.Body
	}
	v := c.newView(r, "ONU "+pon+"/"+onu, "olts")
	v.Live = "olt:" + olt
	v.Data = ov
	if !cur.ok() && cur.Status != http.StatusNotFound {
		v.Err, _ = cur.errMsg()
		c.render(w, cur.Status, "onu", v)
		return
	}
	if o := c.call(r.Context(), http.MethodGet, "/api/v1/olts/"+url.PathEscape(olt), nil); o.ok() {
		ov.OLTName = str(o.Body["name"])
	}
	if s := str(ov.ONU["serial"]); s != "" {
		v.Title = "ONU " + s
	}

	// The range: a preset (default 24 h) or from/to.
	now := time.Now().UTC()
	ov.To, ov.Range = now, r.URL.Query().Get("range")
	d := 24 * time.Hour
	found := false
	for _, p := range onuRanges {
		ov.Ranges = append(ov.Ranges, p.Key)
		if p.Key == ov.Range {
			d, found = p.D, true
		}
	}
	if !found {
		ov.Range = "24h"
	}
	ov.From = now.Add(-d)
	if f, t := r.URL.Query().Get("from"), r.URL.Query().Get("to"); f != "" || t != "" {
		var err error
		if t != "" {
			if ov.To, err = parseInputTime(t); err != nil {
				v.Err = "to: " + err.Error()
				ov.To = now
			}
		}
		ov.From = ov.To.Add(-d)
		if f != "" {
			if ov.From, err = parseInputTime(f); err != nil {
				v.Err = "from: " + err.Error()
				ov.From = ov.To.Add(-d)
			}
		}
		ov.Range = ""
		if !ov.From.Before(ov.To) {
			v.Err = "from must be before to"
			ov.From = ov.To.Add(-d)
		}
	}
	ov.FromInput, ov.ToInput = ov.From.Format("2006-01-02T15:04"), ov.To.Format("2006-01-02T15:04")
	rng := "from=" + url.QueryEscape(ov.From.Format(time.RFC3339)) + "&to=" + url.QueryEscape(ov.To.Format(time.RFC3339))

	// The state at the range's start, then every change of the range
	// (numeric fields and status) for the charts.
	start := c.call(r.Context(), http.MethodGet, base+"?at="+url.QueryEscape(ov.From.Format(time.RFC3339)), nil)
	names := []string{"status"}
	for _, f := range numericFields {
		names = append(names, f.Name)
	}
	const chartLimit = 10000
	hist := c.call(r.Context(), http.MethodGet, base+"/history?"+rng+"&limit="+strconv.Itoa(chartLimit)+"&fields="+strings.Join(names, ","), nil)
	if !hist.ok() {
		v.Err, _ = hist.errMsg()
	}
	ov.Truncated = num(hist.Body["total"]) > chartLimit
	byField := map[string][]map[string]any{}
	for _, x := range anySlice(hist.Body["history"]) {
		if m, ok := x.(map[string]any); ok {
			byField[str(m["field"])] = append(byField[str(m["field"])], m)
		}
	}
	for _, f := range numericFields {
		s := series{start: numPtr(start.Body[f.Name])}
		if !start.ok() {
			s.start = nil
		}
		for _, m := range byField[f.Name] {
			at, err := time.Parse(time.RFC3339Nano, str(m["at"]))
			if err != nil {
				continue
			}
			s.pts = append(s.pts, point{at: at, v: textNum(m["new_value"])})
		}
		if f.Name != "rx_power_dbm" && s.start == nil && !s.hasValue() {
			continue // the vendor has no such reading
		}
		ch := onuChart{Field: f.Name, Label: f.Label, Unit: f.Unit, Changes: len(s.pts), SVG: lineChart(f, s, ov.From, ov.To)}
		if last := s.last(); last != nil {
			ch.Last = strconv.FormatFloat(*last, 'f', -1, 64) + " " + f.Unit
		} else {
			ch.Last = "no value"
		}
		ov.Charts = append(ov.Charts, ch)
	}
	startStatus := ""
	if start.ok() {
		startStatus = str(start.Body["status"])
	}
	ov.Status = statusBand(startStatus, byField["status"], ov.From, ov.To)

	// The table of changes, newest first, paginated.
	q := url.Values{}
	q.Set("sort", "-at")
	q.Set("limit", "100")
	if o := r.URL.Query().Get("offset"); o != "" {
		q.Set("offset", o)
	}
	if f := r.URL.Query().Get("fields"); f != "" {
		q.Set("fields", f)
	}
	changes := c.call(r.Context(), http.MethodGet, base+"/history?"+rng+"&"+q.Encode(), nil)
	if !changes.ok() {
		v.Err, _ = changes.errMsg()
	}
	pg := pageOf(r, changes.Body, "history")
	ov.Changes, ov.Total, ov.Offset, ov.Limit, ov.Prev, ov.Next = pg.Rows, pg.Total, pg.Offset, pg.Limit, pg.Prev, pg.Next
	c.render(w, http.StatusOK, "onu", v)
}

// parseInputTime reads an RFC 3339 time or a datetime-local input (UTC).
func parseInputTime(v string) (time.Time, error) {
	for _, layout := range []string{time.RFC3339Nano, "2006-01-02T15:04:05", "2006-01-02T15:04"} {
		if t, err := time.Parse(layout, v); err == nil {
			return t.UTC(), nil
		}
	}
	return time.Time{}, fmt.Errorf("%q is not a time such as 2026-01-02T15:04", v)
}

func numPtr(v any) *float64 {
	if f, ok := v.(float64); ok {
		return &f
	}
	return nil
}

// textNum reads a history value (numbers as text; null no value).
func textNum(v any) *float64 {
	s, ok := v.(string)
	if !ok {
		return nil
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil || math.IsNaN(f) || math.IsInf(f, 0) {
		return nil
	}
	return &f
}

func (s series) hasValue() bool {
	for _, p := range s.pts {
		if p.v != nil {
			return true
		}
	}
	return false
}

func (s series) last() *float64 {
	if len(s.pts) > 0 {
		return s.pts[len(s.pts)-1].v
	}
	return s.start
}

// Chart geometry (SVG user units; the SVG scales to its box).
const (
	chartW, chartH           = 960.0, 200.0
	padL, padR, padT, padB   = 58.0, 14.0, 10.0, 24.0
	bandH                    = 26.0
	timeLayout, shortTimeFmt = "2006-01-02 15:04", "01-02 15:04"
)

// lineChart draws a field's values as a step line: a value holds until
// its next change; no value is a gap. Each change is a dot with a
// tooltip.
func lineChart(f numericField, s series, from, to time.Time) template.HTML {
	span := to.Sub(from).Seconds()
	if span <= 0 {
		span = 1
	}
	x := func(t time.Time) float64 {
		return padL + (chartW-padL-padR)*math.Min(math.Max(t.Sub(from).Seconds()/span, 0), 1)
	}
	lo, hi := math.Inf(1), math.Inf(-1)
	see := func(v *float64) {
		if v != nil {
			lo, hi = math.Min(lo, *v), math.Max(hi, *v)
		}
	}
	see(s.start)
	for _, p := range s.pts {
		see(p.v)
	}
	var b strings.Builder
	fmt.Fprintf(&b, `<svg class="chart-svg" viewBox="0 0 %g %g" role="img" aria-label="%s over time" data-field="%s">`, chartW, chartH, html.EscapeString(f.Label), html.EscapeString(f.Name))
	fmt.Fprintf(&b, `<rect class="plot" x="%g" y="%g" width="%g" height="%g"/>`, padL, padT, chartW-padL-padR, chartH-padT-padB)
	timeAxis(&b, from, to, chartH-padB, x)
	if math.IsInf(lo, 0) {
		fmt.Fprintf(&b, `<text class="nodata" x="%g" y="%g" text-anchor="middle">no reading in this range</text></svg>`, (chartW+padL)/2, chartH/2)
		return template.HTML(b.String())
	}
	if f.Unit == "dBm" && f.Name != "tx_power_dbm" {
		// The usual GPON receive window -27..-8 dBm: its lower edge shows.
		lo, hi = math.Min(lo, -28), math.Max(hi, math.Min(hi+1, -8))
	}
	if hi-lo < 1e-9 {
		lo, hi = lo-1, hi+1
	}
	pad := (hi - lo) * 0.08
	lo, hi = lo-pad, hi+pad
	y := func(v float64) float64 { return padT + (chartH-padT-padB)*(hi-v)/(hi-lo) }
	for i := 0; i <= 4; i++ {
		v := lo + (hi-lo)*float64(i)/4
		fmt.Fprintf(&b, `<line class="gridline" x1="%g" x2="%g" y1="%.1f" y2="%.1f"/><text class="ylabel" x="%g" y="%.1f" text-anchor="end">%s</text>`,
			padL, chartW-padR, y(v), y(v), padL-6, y(v)+4, html.EscapeString(strconv.FormatFloat(v, 'f', decimals(hi-lo), 64)))
	}
	if f.Unit == "dBm" && f.Name != "tx_power_dbm" && -27 >= lo && -27 <= hi {
		fmt.Fprintf(&b, `<line class="threshold" x1="%g" x2="%g" y1="%.1f" y2="%.1f"><title>-27 dBm: the low edge of the usual window</title></line>`, padL, chartW-padR, y(-27), y(-27))
	}
	fmt.Fprintf(&b, `<text class="unit" x="%g" y="%g">%s</text>`, padL+4, padT+12, html.EscapeString(f.Unit))
	// The step line, in segments between gaps.
	var path strings.Builder
	cur := s.start
	moveTo := func(px float64, v *float64) {
		if v != nil {
			fmt.Fprintf(&path, "M%.1f %.1f", px, y(*v))
		}
	}
	moveTo(x(from), cur)
	for _, p := range s.pts {
		px := x(p.at)
		if cur != nil {
			fmt.Fprintf(&path, "H%.1f", px)
		}
		switch {
		case p.v == nil:
		case cur == nil:
			moveTo(px, p.v)
		default:
			fmt.Fprintf(&path, "V%.1f", y(*p.v))
		}
		cur = p.v
	}
	if cur != nil {
		fmt.Fprintf(&path, "H%.1f", x(to))
	}
	if path.Len() > 0 {
		fmt.Fprintf(&b, `<path class="line" d="%s"/>`, path.String())
	}
	for _, p := range s.pts {
		val := "no value"
		if p.v != nil {
			val = strconv.FormatFloat(*p.v, 'f', -1, 64) + " " + f.Unit
		}
		cy := chartH - padB
		cls := "dot gap"
		if p.v != nil {
			cy, cls = y(*p.v), "dot"
		}
		fmt.Fprintf(&b, `<circle class="%s" cx="%.1f" cy="%.1f" r="3"><title>%s: %s</title></circle>`, cls, x(p.at), cy,
			html.EscapeString(p.at.UTC().Format(timeLayout)), html.EscapeString(val))
	}
	b.WriteString(`</svg>`)
	return template.HTML(b.String())
}

// decimals is the label precision for a value span.
func decimals(span float64) int {
	switch {
	case span >= 20:
		return 0
	case span >= 2:
		return 1
	}
	return 2
}

// timeAxis writes the time labels (start, quarters, end) at y.
func timeAxis(b *strings.Builder, from, to time.Time, y float64, x func(time.Time) float64) {
	layout := shortTimeFmt
	if to.Sub(from) <= 36*time.Hour {
		layout = "15:04"
	}
	for i := 0; i <= 4; i++ {
		t := from.Add(time.Duration(float64(to.Sub(from)) * float64(i) / 4))
		anchor := "middle"
		switch i {
		case 0:
			anchor = "start"
		case 4:
			anchor = "end"
		}
		fmt.Fprintf(b, `<line class="tick" x1="%.1f" x2="%.1f" y1="%g" y2="%g"/><text class="xlabel" x="%.1f" y="%g" text-anchor="%s">%s</text>`,
			x(t), x(t), y, y+4, x(t), y+16, anchor, html.EscapeString(t.UTC().Format(layout)))
	}
}

// statusBand draws the ONU's status over the range as coloured spans.
func statusBand(start string, changes []map[string]any, from, to time.Time) template.HTML {
	span := to.Sub(from).Seconds()
	if span <= 0 {
		span = 1
	}
	x := func(t time.Time) float64 {
		return padL + (chartW-padL-padR)*math.Min(math.Max(t.Sub(from).Seconds()/span, 0), 1)
	}
	type seg struct {
		at     time.Time
		status string
	}
	segs := []seg{{from, start}}
	for _, m := range changes {
		at, err := time.Parse(time.RFC3339Nano, str(m["at"]))
		if err != nil {
			continue
		}
		segs = append(segs, seg{at, str(m["new_value"])})
	}
	sort.SliceStable(segs, func(i, j int) bool { return segs[i].at.Before(segs[j].at) })
	var b strings.Builder
	fmt.Fprintf(&b, `<svg class="chart-svg band" viewBox="0 0 %g %g" role="img" aria-label="status over time">`, chartW, bandH)
	fmt.Fprintf(&b, `<text class="ylabel" x="%g" y="16" text-anchor="end">status</text>`, padL-6)
	for i, s := range segs {
		end := to
		if i+1 < len(segs) {
			end = segs[i+1].at
		}
		if !end.After(s.at) && i+1 < len(segs) {
			continue
		}
		cls := "st-none"
		switch s.status {
		case "ONLINE":
			cls = "st-online"
		case "OFFLINE":
			cls = "st-offline"
		case "":
		default:
			cls = "st-other"
		}
		label := s.status
		if label == "" {
			label = "no reading"
		}
		w := x(end) - x(s.at)
		if w <= 0 {
			w = 1
		}
		fmt.Fprintf(&b, `<rect class="%s" x="%.1f" y="4" width="%.1f" height="16"><title>%s from %s</title></rect>`, cls, x(s.at), w,
			html.EscapeString(label), html.EscapeString(s.at.UTC().Format(timeLayout)))
	}
	b.WriteString(`</svg>`)
	return template.HTML(b.String())
}
