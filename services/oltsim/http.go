package oltsim

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// OLTInfo is one entry of GET /olts. The community is never exposed.
type OLTInfo struct {
	Name      string     `json:"name"`
	Addr      string     `json:"addr"`
	Profile   string     `json:"profile,omitempty"`
	Recording string     `json:"recording,omitempty"`
	Shape     Shape      `json:"shape"`
	ONUs      int        `json:"onus"`
	Faults    FaultsJSON `json:"faults"`
}

// FaultsJSON is the wire form of Faults for the control API: durations are
// Go duration strings ("2ms"); plain numbers are read as nanoseconds.
type FaultsJSON struct {
	Latency               jsonDuration `json:"latency"`
	Jitter                jsonDuration `json:"jitter"`
	LossPercent           float64      `json:"loss_percent"`
	NoAnswer              bool         `json:"no_answer"`
	SlowdownPerConcurrent jsonDuration `json:"slowdown_per_concurrent"`
	MaxRPS                int          `json:"max_rps"`
	MalformedPercent      float64      `json:"malformed_percent"`
	MaxVarbinds           int          `json:"max_varbinds"`
	OIDNotIncreasing      bool         `json:"oid_not_increasing"`
}

func faultsToJSON(f Faults) FaultsJSON {
	return FaultsJSON{jsonDuration(f.Latency), jsonDuration(f.Jitter), f.LossPercent, f.NoAnswer,
		jsonDuration(f.SlowdownPerConcurrent), f.MaxRPS, f.MalformedPercent, f.MaxVarbinds, f.OIDNotIncreasing}
}

func (j FaultsJSON) faults() Faults {
	return Faults{time.Duration(j.Latency), time.Duration(j.Jitter), j.LossPercent, j.NoAnswer,
		time.Duration(j.SlowdownPerConcurrent), j.MaxRPS, j.MalformedPercent, j.MaxVarbinds, j.OIDNotIncreasing}
}

type jsonDuration time.Duration

func (d jsonDuration) MarshalJSON() ([]byte, error) {
	return json.Marshal(time.Duration(d).String())
}

func (d *jsonDuration) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err == nil {
		v, err := time.ParseDuration(s)
		if err != nil {
			return fmt.Errorf("duration %q: %w", s, err)
		}
		*d = jsonDuration(v)
		return nil
	}
	var n int64
	if err := json.Unmarshal(b, &n); err != nil {
		return fmt.Errorf("duration: want a string like \"2ms\" or nanoseconds: %w", err)
	}
	*d = jsonDuration(n)
	return nil
}

// onuJSON is ONU with NaN readings as null.
type onuJSON struct {
	ONU
	RxPowerDBm *float64 `json:"RxPowerDBm"`
	TxPowerDBm *float64 `json:"TxPowerDBm"`
}

func toONUJSON(us []ONU) []onuJSON {
	out := make([]onuJSON, len(us))
	for i, u := range us {
		out[i].ONU = u
		if !math.IsNaN(u.RxPowerDBm) {
			v := u.RxPowerDBm
			out[i].RxPowerDBm = &v
		}
		if !math.IsNaN(u.TxPowerDBm) {
			v := u.TxPowerDBm
			out[i].TxPowerDBm = &v
		}
	}
	return out
}

// Info describes the OLT for the control API.
func (o *OLT) Info() OLTInfo {
	return OLTInfo{Name: o.name, Addr: o.addr.String(), Profile: o.cfg.Profile, Recording: o.cfg.Recording,
		Shape: o.cfg.Shape, ONUs: o.onuCount(), Faults: faultsToJSON(o.Faults())}
}

// Handler serves the control API:
//
//	GET    /olts                   list of OLTInfo
//	GET    /olts/{name}            one OLTInfo
//	GET    /olts/{name}/record     Record snapshot
//	DELETE /olts/{name}/record     reset the record
//	GET    /olts/{name}/faults     faults in force
//	PUT    /olts/{name}/faults     replace faults (FaultsJSON body)
//	GET    /olts/{name}/onus       ground-truth ONU rows
//	GET    /olts/{name}/onus/{index}  one ONU's row
//	PATCH  /olts/{name}/onus/{index}  change one ONU (ONUPatch body)
//	GET    /olts/{name}/health     the OLT's own state (Health)
//	PATCH  /olts/{name}/health     fail a fan or PSU, take a PON port down (HealthPatch body)
//	POST   /olts/{name}/tick       advance simulated life one step
//	POST   /olts/{name}/reboot     restart sysUpTime
//	GET    /metrics                Prometheus metrics (own registry)
//	GET    /healthz                "ok"
func (f *Fleet) Handler() http.Handler {
	reg := prometheus.NewRegistry()
	for _, c := range []prometheus.Collector{newFleetCollector(f), collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{})} {
		if err := reg.Register(c); err != nil {
			f.log.Warn().Err(err).Msg("register metrics collector")
		}
	}
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.WriteString(w, "ok\n")
	})
	mux.HandleFunc("GET /olts", func(w http.ResponseWriter, r *http.Request) {
		out := make([]OLTInfo, 0, len(f.olts))
		for _, o := range f.olts {
			out = append(out, o.Info())
		}
		writeJSON(w, http.StatusOK, out)
	})
	withOLT := func(h func(w http.ResponseWriter, r *http.Request, o *OLT)) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			o := f.OLT(r.PathValue("name"))
			if o == nil {
				writeJSON(w, http.StatusNotFound, map[string]string{"error": "no such olt"})
				return
			}
			h(w, r, o)
		}
	}
	mux.HandleFunc("GET /olts/{name}", withOLT(func(w http.ResponseWriter, r *http.Request, o *OLT) {
		writeJSON(w, http.StatusOK, o.Info())
	}))
	mux.HandleFunc("GET /olts/{name}/record", withOLT(func(w http.ResponseWriter, r *http.Request, o *OLT) {
		writeJSON(w, http.StatusOK, o.Record())
	}))
	mux.HandleFunc("DELETE /olts/{name}/record", withOLT(func(w http.ResponseWriter, r *http.Request, o *OLT) {
		o.ResetRecord()
		w.WriteHeader(http.StatusNoContent)
	}))
	mux.HandleFunc("GET /olts/{name}/faults", withOLT(func(w http.ResponseWriter, r *http.Request, o *OLT) {
		writeJSON(w, http.StatusOK, faultsToJSON(o.Faults()))
	}))
	mux.HandleFunc("PUT /olts/{name}/faults", withOLT(func(w http.ResponseWriter, r *http.Request, o *OLT) {
		var fj FaultsJSON
		dec := json.NewDecoder(io.LimitReader(r.Body, 1<<16))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&fj); err != nil {
			writeJSON(w, http.StatusBadRequest, map[string]string{"error": err.Error()})
			return
		}
		o.SetFaults(fj.faults())
		writeJSON(w, http.StatusOK, faultsToJSON(o.Faults()))
	}))
	mux.HandleFunc("GET /olts/{name}/onus", withOLT(func(w http.ResponseWriter, r *http.Request, o *OLT) {
		writeJSON(w, http.StatusOK, toONUJSON(o.ONUs()))
	}))
	mux.HandleFunc("GET /olts/{name}/onus/{index}", withOLT(func(w http.ResponseWriter, r *http.Request, o *OLT) {
		u, ok := o.ONU(r.PathValue("index"))
		if !ok {
			writeJSON(w, http.StatusNotFound, map[string]string{"error": "no such onu"})
			return
		}
		writeJSON(w, http.StatusOK, toONUJSON([]ONU{u})[0])
	}))
	mux.HandleFunc("PATCH /olts/{name}/onus/{index}", withOLT(func(w http.ResponseWriter, r *http.Request, o *OLT) {
		index := r.PathValue("index")
		if _, ok := o.ONU(index); !ok {
			writeJSON(w, http.StatusNotFound, map[string]string{"error": "no such onu"})
			return
		}
		var p ONUPatch
		dec := json.NewDecoder(io.LimitReader(r.Body, 1<<16))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&p); err != nil {
			writeJSON(w, http.StatusBadRequest, map[string]string{"error": err.Error()})
			return
		}
		if err := o.PatchONU(index, p); err != nil {
			writeJSON(w, http.StatusBadRequest, map[string]string{"error": err.Error()})
			return
		}
		u, _ := o.ONU(index)
		writeJSON(w, http.StatusOK, toONUJSON([]ONU{u})[0])
	}))
	mux.HandleFunc("GET /olts/{name}/health", withOLT(func(w http.ResponseWriter, r *http.Request, o *OLT) {
		writeJSON(w, http.StatusOK, o.Health())
	}))
	mux.HandleFunc("PATCH /olts/{name}/health", withOLT(func(w http.ResponseWriter, r *http.Request, o *OLT) {
		var p HealthPatch
		dec := json.NewDecoder(io.LimitReader(r.Body, 1<<16))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&p); err != nil {
			writeJSON(w, http.StatusBadRequest, map[string]string{"error": err.Error()})
			return
		}
		if err := o.PatchHealth(p); err != nil {
			writeJSON(w, http.StatusBadRequest, map[string]string{"error": err.Error()})
			return
		}
		writeJSON(w, http.StatusOK, o.Health())
	}))
	mux.HandleFunc("PUT /olts/{name}/traps", withOLT(func(w http.ResponseWriter, r *http.Request, o *OLT) {
		var t TrapTarget
		dec := json.NewDecoder(io.LimitReader(r.Body, 1<<16))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&t); err != nil {
			writeJSON(w, http.StatusBadRequest, map[string]string{"error": err.Error()})
			return
		}
		if err := o.SetTrapTarget(t); err != nil {
			writeJSON(w, http.StatusBadRequest, map[string]string{"error": err.Error()})
			return
		}
		sent, failed := o.TrapsSent()
		writeJSON(w, http.StatusOK, map[string]any{"dest": t.Dest, "inform": t.Inform, "sent": sent, "failed": failed})
	}))
	mux.HandleFunc("POST /olts/{name}/tick", withOLT(func(w http.ResponseWriter, r *http.Request, o *OLT) {
		writeJSON(w, http.StatusOK, map[string]uint64{"tick": o.Tick()})
	}))
	mux.HandleFunc("POST /olts/{name}/reboot", withOLT(func(w http.ResponseWriter, r *http.Request, o *OLT) {
		o.Reboot()
		w.WriteHeader(http.StatusNoContent)
	}))
	return mux
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}
