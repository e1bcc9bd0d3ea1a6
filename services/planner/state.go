package planner

import (
	"fmt"
	"sort"
	"time"

	"github.com/facho-olt/facho/streams"
)

// NodeKey names a node: one job on one OLT.
type NodeKey struct {
	JobID string
	OLTID string
}

// NodeID is the public id of a node (used in NodeDue.node_id and by the
// API's manual run): "<job_id>.<olt_id>". Ids never contain dots.
func (k NodeKey) NodeID() string { return k.JobID + "." + k.OLTID }

// NodeSpec is everything a NodeDue says about a node apart from its timing.
type NodeSpec struct {
	JobName           string
	BrandID           string
	IndexScheme       string
	Kind              string
	Target            streams.Target
	OIDs              []streams.OIDSpec
	Priority          int
	IntervalSeconds   int
	TimeoutSeconds    int
	MaxRetries        int
	RetryDelaySeconds int
	// SNMP is the OLT's tuning over its brand's.
	SNMP streams.SNMPTuning
}

// Interval is the node's interval as a duration.
func (s NodeSpec) Interval() time.Duration { return time.Duration(s.IntervalSeconds) * time.Second }

// Desired is a plannable node: its spec and since when it has been
// plannable without interruption (an event time from the stream, so a
// replay gives the same value).
type Desired struct {
	Spec  NodeSpec
	Since time.Time
}

type assignment struct {
	enabled bool
}

// state is the configuration as the config stream says it is. It is owned
// by one goroutine (the planner loop) and is not safe for concurrent use.
type state struct {
	defaults timeouts
	brands   map[string]streams.BrandUpserted
	oids     map[string]streams.OIDUpserted
	olts     map[string]streams.OLTUpserted
	jobs     map[string]streams.JobUpserted
	assigns  map[NodeKey]assignment
	byJob    map[string]map[string]bool // job -> OLTs assigned
	byOLT    map[string]map[string]bool // OLT -> jobs assigned
	// since holds every plannable node and the event time at which it
	// became plannable.
	since map[NodeKey]time.Time
}

type timeouts struct {
	discovery int
	poll      int
}

func newState(t timeouts) *state {
	return &state{
		defaults: t,
		brands:   map[string]streams.BrandUpserted{},
		oids:     map[string]streams.OIDUpserted{},
		olts:     map[string]streams.OLTUpserted{},
		jobs:     map[string]streams.JobUpserted{},
		assigns:  map[NodeKey]assignment{},
		byJob:    map[string]map[string]bool{},
		byOLT:    map[string]map[string]bool{},
		since:    map[NodeKey]time.Time{},
	}
}

// apply folds one config event into the state. Unknown event types are
// ignored (ok=false) so newer producers do not stop an older planner.
func (s *state) apply(env streams.Envelope) (known bool, err error) {
	var affected []NodeKey
	switch env.Type {
	case streams.TypeBrandUpserted:
		var e streams.BrandUpserted
		if err := streams.DecodeData(env, &e); err != nil {
			return true, err
		}
		s.brands[e.ID] = e
		affected = s.nodesWhere(func(j streams.JobUpserted) bool { return j.BrandID == e.ID })
	case streams.TypeOIDUpserted:
		var e streams.OIDUpserted
		if err := streams.DecodeData(env, &e); err != nil {
			return true, err
		}
		s.oids[e.ID] = e
		affected = s.nodesWhere(func(j streams.JobUpserted) bool { return contains(j.OIDIDs, e.ID) })
	case streams.TypeOLTUpserted:
		var e streams.OLTUpserted
		if err := streams.DecodeData(env, &e); err != nil {
			return true, err
		}
		s.olts[e.ID] = e
		affected = s.nodesOfOLT(e.ID)
	case streams.TypeBrandDeleted:
		var e streams.BrandDeleted
		if err := streams.DecodeData(env, &e); err != nil {
			return true, err
		}
		delete(s.brands, e.ID)
		affected = s.nodesWhere(func(j streams.JobUpserted) bool { return j.BrandID == e.ID })
	case streams.TypeOIDDeleted:
		var e streams.OIDDeleted
		if err := streams.DecodeData(env, &e); err != nil {
			return true, err
		}
		delete(s.oids, e.ID)
		affected = s.nodesWhere(func(j streams.JobUpserted) bool { return contains(j.OIDIDs, e.ID) })
	case streams.TypeOLTDeleted:
		var e streams.OLTDeleted
		if err := streams.DecodeData(env, &e); err != nil {
			return true, err
		}
		delete(s.olts, e.ID)
		affected = s.nodesOfOLT(e.ID)
	case streams.TypeJobUpserted:
		var e streams.JobUpserted
		if err := streams.DecodeData(env, &e); err != nil {
			return true, err
		}
		s.jobs[e.ID] = e
		affected = s.nodesOfJob(e.ID)
	case streams.TypeJobDeleted:
		var e streams.JobDeleted
		if err := streams.DecodeData(env, &e); err != nil {
			return true, err
		}
		delete(s.jobs, e.ID)
		affected = s.nodesOfJob(e.ID)
	case streams.TypeJobOLTAssigned:
		var e streams.JobOLTAssigned
		if err := streams.DecodeData(env, &e); err != nil {
			return true, err
		}
		k := NodeKey{JobID: e.JobID, OLTID: e.OLTID}
		s.assigns[k] = assignment{enabled: e.Enabled}
		addIndex(s.byJob, e.JobID, e.OLTID)
		addIndex(s.byOLT, e.OLTID, e.JobID)
		affected = []NodeKey{k}
	case streams.TypeJobOLTUnassigned:
		var e streams.JobOLTUnassigned
		if err := streams.DecodeData(env, &e); err != nil {
			return true, err
		}
		k := NodeKey{JobID: e.JobID, OLTID: e.OLTID}
		delete(s.assigns, k)
		delete(s.byJob[e.JobID], e.OLTID)
		delete(s.byOLT[e.OLTID], e.JobID)
		affected = []NodeKey{k}
	default:
		return false, nil
	}
	for _, k := range affected {
		_, plannable := s.nodeSpec(k)
		_, was := s.since[k]
		switch {
		case plannable && !was:
			s.since[k] = env.Time
		case !plannable && was:
			delete(s.since, k)
		}
	}
	return true, nil
}

// desired returns every plannable node with its current spec.
func (s *state) desired() map[NodeKey]Desired {
	out := make(map[NodeKey]Desired, len(s.since))
	for k, since := range s.since {
		spec, ok := s.nodeSpec(k)
		if !ok {
			continue // cannot happen: since is kept in step with nodeSpec
		}
		out[k] = Desired{Spec: spec, Since: since}
	}
	return out
}

// nodeSpec says whether a node is plannable and what it reads: the
// assignment is enabled, the job and the OLT exist and are enabled, the
// job's brand is the OLT's brand and exists, and at least one of the job's
// OIDs (of that brand) is known.
//
// Seam: a composite node (seed 004) would append its chained jobs here.
func (s *state) nodeSpec(k NodeKey) (NodeSpec, bool) {
	a, ok := s.assigns[k]
	if !ok || !a.enabled {
		return NodeSpec{}, false
	}
	job, ok := s.jobs[k.JobID]
	if !ok || !job.Enabled || job.IntervalSeconds <= 0 {
		return NodeSpec{}, false
	}
	olt, ok := s.olts[k.OLTID]
	if !ok || !olt.Enabled || olt.BrandID != job.BrandID {
		return NodeSpec{}, false
	}
	brand, ok := s.brands[job.BrandID]
	if !ok {
		return NodeSpec{}, false
	}
	var oids []streams.OIDSpec
	for _, id := range job.OIDIDs {
		o, ok := s.oids[id]
		if !ok || o.BrandID != job.BrandID {
			continue
		}
		oids = append(oids, streams.OIDSpec{ID: o.ID, OID: o.OID, Field: o.Field, Decoder: o.Decoder, IndexSuffix: o.IndexSuffix})
	}
	if len(oids) == 0 {
		return NodeSpec{}, false
	}
	return NodeSpec{
		JobName:           job.Name,
		BrandID:           job.BrandID,
		IndexScheme:       brand.IndexScheme,
		Kind:              job.Kind,
		Target:            streams.Target{Host: olt.IP, Port: olt.Port, CommunityEnc: olt.CommunityEnc},
		OIDs:              oids,
		Priority:          job.Priority,
		IntervalSeconds:   job.IntervalSeconds,
		TimeoutSeconds:    s.timeout(job),
		MaxRetries:        job.MaxRetries,
		RetryDelaySeconds: job.RetryDelaySeconds,
		SNMP:              brand.SNMP.Over(olt.SNMP),
	}, true
}

// timeout is the job's timeout, or the default of its kind (seed 001:
// discovery 300 s, polling 60 s; walks are as heavy as a discovery).
func (s *state) timeout(j streams.JobUpserted) int {
	if j.TimeoutSeconds > 0 {
		return j.TimeoutSeconds
	}
	switch j.Kind {
	case streams.KindGet:
		return s.defaults.poll
	default:
		return s.defaults.discovery
	}
}

func (s *state) nodesOfJob(jobID string) []NodeKey {
	out := make([]NodeKey, 0, len(s.byJob[jobID]))
	for olt := range s.byJob[jobID] {
		out = append(out, NodeKey{JobID: jobID, OLTID: olt})
	}
	return out
}

func (s *state) nodesOfOLT(oltID string) []NodeKey {
	out := make([]NodeKey, 0, len(s.byOLT[oltID]))
	for job := range s.byOLT[oltID] {
		out = append(out, NodeKey{JobID: job, OLTID: oltID})
	}
	return out
}

func (s *state) nodesWhere(match func(streams.JobUpserted) bool) []NodeKey {
	var out []NodeKey
	for id, j := range s.jobs {
		if match(j) {
			out = append(out, s.nodesOfJob(id)...)
		}
	}
	return out
}

func addIndex(m map[string]map[string]bool, a, b string) {
	if m[a] == nil {
		m[a] = map[string]bool{}
	}
	m[a][b] = true
}

func contains(xs []string, x string) bool {
	for _, v := range xs {
		if v == x {
			return true
		}
	}
	return false
}

// String helps test failures.
func (k NodeKey) String() string { return fmt.Sprintf("%s@%s", k.JobID, k.OLTID) }

func sortedKeys(m map[NodeKey]Desired) []NodeKey {
	out := make([]NodeKey, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].OLTID != out[j].OLTID {
			return out[i].OLTID < out[j].OLTID
		}
		return out[i].JobID < out[j].JobID
	})
	return out
}
