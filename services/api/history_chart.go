package api

import (
	"net/http"
	"strconv"
	"time"
)

// Charts of a numeric ONU field over time, for one ONU or a PON. A range
// shorter than chartRollupRange is read from onu_history (every change);
// a longer one from onu_history_hourly (migration 020: per ONU, field and
// hour with a change, the least and greatest value held and the value at
// the end of the hour), or for a PON from pon_history_hourly (migration
// 022: the same per PON), so a chart of 30 days or a year reads a row per
// hour at most instead of every change.

// chartRollupRange is the range from which charts read the hourly rollups.
const chartRollupRange = 7 * 24 * time.Hour

// chartMaxRange bounds a chart's range (a row per hour: 9,600 points).
const chartMaxRange = 400 * 24 * time.Hour

// Chart sources, as the response names them.
const (
	chartSourceChanges = "changes"
	chartSourceHourly  = "hourly"
)

// chartPoint is one point of a chart: a change (min = max = last, the new
// value) or an hour (the range held during it and the value at its end);
// null: no reading.
type chartPoint struct {
	At   time.Time `json:"at"`
	Min  *float64  `json:"min"`
	Max  *float64  `json:"max"`
	Last *float64  `json:"last"`
}

// ponChartPoint is one hour of a PON's chart: the range of the values its
// ONUs held during it, and how many ONUs had a change in it.
type ponChartPoint struct {
	At   time.Time `json:"at"`
	Min  *float64  `json:"min"`
	Max  *float64  `json:"max"`
	ONUs int64     `json:"onus"`
}

// onuChart is GET .../onus/{pon_index}/{onu_id}/chart.
type onuChart struct {
	OLTID    string       `json:"olt_id"`
	PonIndex int64        `json:"pon_index"`
	ONUID    int64        `json:"onu_id"`
	Field    string       `json:"field"`
	From     time.Time    `json:"from"`
	To       time.Time    `json:"to"`
	Source   string       `json:"source"`
	Initial  *float64     `json:"initial"`
	Points   []chartPoint `json:"points"`
}

// ponChart is GET .../pons/{pon_index}/chart.
type ponChart struct {
	OLTID    string          `json:"olt_id"`
	PonIndex int64           `json:"pon_index"`
	Field    string          `json:"field"`
	From     time.Time       `json:"from"`
	To       time.Time       `json:"to"`
	Source   string          `json:"source"`
	Points   []ponChartPoint `json:"points"`
}

// chartRange reads field (a numeric ONU field, default rx_power_dbm),
// from and to (default the last 24 hours) and the source they call for.
func (s *server) chartRange(r *http.Request) (field string, from, to time.Time, source string, aerr *apiError) {
	field = r.URL.Query().Get("field")
	if field == "" {
		field = "rx_power_dbm"
	}
	if onuFieldKind(field) != "number" {
		var numeric []string
		for _, f := range onuFields {
			if f.Kind == "number" {
				numeric = append(numeric, f.Name)
			}
		}
		if len(field) > 64 {
			field = field[:64] + "…"
		}
		return "", from, to, "", badField("field", "field %q: a chart is of a numeric field: %v", field, numeric)
	}
	f, aerr := timeParam(r, "from")
	if aerr != nil {
		return "", from, to, "", aerr
	}
	t, aerr := timeParam(r, "to")
	if aerr != nil {
		return "", from, to, "", aerr
	}
	to = s.deps.Now().UTC()
	if t != nil {
		to = t.UTC()
	}
	from = to.Add(-24 * time.Hour)
	if f != nil {
		from = f.UTC()
	}
	switch {
	case from.After(to):
		return "", from, to, "", badField("from", "from (%s) is after to (%s)", from.Format(time.RFC3339), to.Format(time.RFC3339))
	case to.Sub(from) > chartMaxRange:
		return "", from, to, "", badField("from", "a chart covers at most %d days", int(chartMaxRange/(24*time.Hour)))
	}
	source = chartSourceChanges
	if to.Sub(from) >= chartRollupRange {
		source = chartSourceHourly
	}
	return field, from, to, source, nil
}

// numOfText is the number of an onu_history value (text) column in SQL,
// NULL when it is none (or not a number).
func numOfText(col string) string {
	return "CASE WHEN " + col + ` ~ '^-?[0-9.]+([eE][-+]?[0-9]+)?$' THEN ` + col + "::float8 END"
}

// getONUChart answers an ONU's chart of one numeric field: its points in
// [from, to] and initial, the value it held at from.
func (s *server) getONUChart(w http.ResponseWriter, r *http.Request) *apiError {
	k, aerr := s.knownONU(r)
	if aerr != nil {
		return aerr
	}
	field, from, to, source, aerr := s.chartRange(r)
	if aerr != nil {
		return aerr
	}
	var points []chartPoint
	var initial []struct{ V *float64 }
	if source == chartSourceHourly {
		// The hours that overlap [from, to].
		points, aerr = listRows[chartPoint](s, r, `SELECT hour, min_value, max_value, last_value FROM onu_history_hourly
			WHERE olt_id = $1 AND pon_index = $2 AND onu_id = $3 AND field = $4 AND hour > $5::timestamptz - interval '1 hour' AND hour <= $6
			ORDER BY hour`, k.OLT, k.PonIndex, k.ONUID, field, from, to)
		if aerr != nil {
			return aerr
		}
		initial, aerr = listRows[struct{ V *float64 }](s, r, `SELECT last_value FROM onu_history_hourly
			WHERE olt_id = $1 AND pon_index = $2 AND onu_id = $3 AND field = $4 AND hour <= $5::timestamptz - interval '1 hour'
			ORDER BY hour DESC LIMIT 1`, k.OLT, k.PonIndex, k.ONUID, field, from)
	} else {
		points, aerr = listRows[chartPoint](s, r, `SELECT at, v, v, v FROM (SELECT at, stream_seq, `+numOfText("new_value")+` AS v FROM onu_history
			WHERE olt_id = $1 AND pon_index = $2 AND onu_id = $3 AND field = $4 AND at >= $5 AND at <= $6) c
			ORDER BY at, stream_seq`, k.OLT, k.PonIndex, k.ONUID, field, from, to)
		if aerr != nil {
			return aerr
		}
		initial, aerr = listRows[struct{ V *float64 }](s, r, `SELECT `+numOfText("new_value")+` FROM onu_history
			WHERE olt_id = $1 AND pon_index = $2 AND onu_id = $3 AND field = $4 AND at < $5
			ORDER BY at DESC, stream_seq DESC LIMIT 1`, k.OLT, k.PonIndex, k.ONUID, field, from)
	}
	if aerr != nil {
		return aerr
	}
	var init *float64
	if len(initial) > 0 {
		init = initial[0].V
	}
	if points == nil {
		points = []chartPoint{}
	}
	writeJSON(w, http.StatusOK, onuChart{OLTID: k.OLT, PonIndex: k.PonIndex, ONUID: k.ONUID, Field: field, From: from, To: to,
		Source: source, Initial: init, Points: points})
	return nil
}

// getPONChart answers a PON's chart of one numeric field: per hour in
// [from, to], the range of the values its ONUs held and how many changed.
// Over the rollups it reads pon_history_hourly (migration 022: the rows
// of onu_history_hourly aggregated by PON and hour, written with them),
// a row per hour whatever the PON's size.
func (s *server) getPONChart(w http.ResponseWriter, r *http.Request) *apiError {
	olt := r.PathValue("id")
	if aerr := s.knownOLT(r, olt); aerr != nil {
		return aerr
	}
	pon, err := strconv.ParseInt(r.PathValue("pon_index"), 10, 64)
	if err != nil {
		return notFound("no PON %s on OLT %q: pon_index is an integer", r.PathValue("pon_index"), olt)
	}
	field, from, to, source, aerr := s.chartRange(r)
	if aerr != nil {
		return aerr
	}
	var points []ponChartPoint
	if source == chartSourceHourly {
		// The PON's rollup rows (a row per hour, not per ONU and hour).
		points, aerr = listRows[ponChartPoint](s, r, `SELECT hour, min_value, max_value, onus FROM pon_history_hourly
			WHERE olt_id = $1 AND pon_index = $2 AND field = $3 AND hour > $4::timestamptz - interval '1 hour' AND hour <= $5
			ORDER BY hour`, olt, pon, field, from, to)
		if aerr != nil {
			return aerr
		}
	} else {
		points, aerr = listRows[ponChartPoint](s, r, `SELECT date_trunc('hour', at, 'UTC'), min(least(o, n)), max(greatest(o, n)), count(DISTINCT onu_id)
			FROM (SELECT at, onu_id, `+numOfText("old_value")+` AS o, `+numOfText("new_value")+` AS n FROM onu_history
				WHERE olt_id = $1 AND pon_index = $2 AND field = $3 AND at >= $4 AND at <= $5) c
			GROUP BY 1 ORDER BY 1`, olt, pon, field, from, to)
		if aerr != nil {
			return aerr
		}
	}
	if points == nil {
		points = []ponChartPoint{}
	}
	writeJSON(w, http.StatusOK, ponChart{OLTID: olt, PonIndex: pon, Field: field, From: from, To: to, Source: source, Points: points})
	return nil
}

// chartRollupRangeText is chartRollupRange for the API's documentation.
var chartRollupRangeText = strconv.Itoa(int(chartRollupRange/(24*time.Hour))) + " days"
