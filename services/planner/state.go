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
	Index             *streams.IndexSpec
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
	// Chain is the chained nodes of a composite node (seed 004), run after
	// this one in order under the same lease; WorkflowID names the
	// workflow that chains them.
	Chain         []ChainSpec
	StopOnFailure bool
	WorkflowID    string
}

// ChainSpec is one chained node of a composite node.
type ChainSpec struct {
	JobID          string
	JobName        string
	Kind           string
	OIDs           []streams.OIDSpec
	TimeoutSeconds int
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
	// workflows by id, and by OLT.
	workflows map[string]streams.WorkflowUpserted
	wfByOLT   map[string]map[string]bool
	// since holds every plannable node and the event time at which it
	// became plannable.
	since map[NodeKey]time.Time
	// touched collects the nodes the events applied since the last take
	// may have changed (for the persisted schedule).
	touched map[NodeKey]struct{}
	// autoDisabled holds the OLTs the planner disabled after consecutive
	// failures, until their next olt.upserted.
	autoDisabled map[string]streams.OLTAutoDisabled
	// oidCache holds each job's OID specs (see jobOIDs).
	oidCache map[string][]streams.OIDSpec
}

// timeouts are the defaults a job's node takes when the job sets none:
// the timeouts of its kind and the retries of its queue class (resolved:
// see ClassRetries.resolved).
type timeouts struct {
	discovery int
	poll      int
	retries   ClassRetries
}

func newState(t timeouts) *state {
	return &state{
		defaults:     t,
		brands:       map[string]streams.BrandUpserted{},
		oids:         map[string]streams.OIDUpserted{},
		olts:         map[string]streams.OLTUpserted{},
		jobs:         map[string]streams.JobUpserted{},
		assigns:      map[NodeKey]assignment{},
		byJob:        map[string]map[string]bool{},
		byOLT:        map[string]map[string]bool{},
		workflows:    map[string]streams.WorkflowUpserted{},
		wfByOLT:      map[string]map[string]bool{},
		since:        map[NodeKey]time.Time{},
		touched:      map[NodeKey]struct{}{},
		oidCache:     map[string][]streams.OIDSpec{},
		autoDisabled: map[string]streams.OLTAutoDisabled{},
	}
}

// apply folds one config event into the state. Unknown event types are
// ignored (ok=false) so newer producers do not stop an older planner.
func (s *state) apply(env streams.Envelope) (known bool, err error) {
	var affected []NodeKey
	switch env.Type {
	case streams.TypeJobOLTAssigned, streams.TypeJobOLTUnassigned, streams.TypeOLTUpserted, streams.TypeOLTDeleted,
		streams.TypeOLTAutoDisabled, streams.TypeOLTAutoEnabled, streams.TypeWorkflowUpserted, streams.TypeWorkflowDeleted,
		// Silences of alerts are not planned on.
		streams.TypeSilenceUpserted, streams.TypeSilenceDeleted:
	default:
		// Brands, OIDs and jobs (and their deletions) change what jobs read.
		clear(s.oidCache)
	}
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
		delete(s.autoDisabled, e.ID)
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
		delete(s.autoDisabled, e.ID)
		affected = s.nodesOfOLT(e.ID)
	case streams.TypeOLTAutoDisabled:
		var e streams.OLTAutoDisabled
		if err := streams.DecodeData(env, &e); err != nil {
			return true, err
		}
		if _, ok := s.olts[e.ID]; ok {
			s.autoDisabled[e.ID] = e
		}
		affected = s.nodesOfOLT(e.ID)
	case streams.TypeOLTAutoEnabled:
		var e streams.OLTAutoEnabled
		if err := streams.DecodeData(env, &e); err != nil {
			return true, err
		}
		// It ends the auto-disable it names; a later one stands.
		if d, ok := s.autoDisabled[e.ID]; ok && d.ExecutionID == e.DisabledExecutionID {
			delete(s.autoDisabled, e.ID)
		}
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
	case streams.TypeWorkflowUpserted:
		var e streams.WorkflowUpserted
		if err := streams.DecodeData(env, &e); err != nil {
			return true, err
		}
		affected = append(s.workflowNodes(e.ID), workflowKeys(e)...)
		if old, ok := s.workflows[e.ID]; ok && old.OLTID != e.OLTID {
			delete(s.wfByOLT[old.OLTID], e.ID)
		}
		s.workflows[e.ID] = e
		addIndex(s.wfByOLT, e.OLTID, e.ID)
	case streams.TypeWorkflowDeleted:
		var e streams.WorkflowDeleted
		if err := streams.DecodeData(env, &e); err != nil {
			return true, err
		}
		affected = s.workflowNodes(e.ID)
		if old, ok := s.workflows[e.ID]; ok {
			delete(s.wfByOLT[old.OLTID], e.ID)
		}
		delete(s.workflows, e.ID)
	default:
		return false, nil
	}
	for _, k := range affected {
		s.touched[k] = struct{}{}
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

// takeTouched returns and forgets the nodes touched since the last call.
func (s *state) takeTouched() map[NodeKey]struct{} {
	t := s.touched
	s.touched = map[NodeKey]struct{}{}
	return t
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
// OIDs (of that brand) is known; a job chained in an enabled workflow of
// the OLT is not plannable on its own. The master of an enabled workflow
// carries its chain (the chained jobs that are runnable on the OLT).
func (s *state) nodeSpec(k NodeKey) (NodeSpec, bool) {
	a, ok := s.assigns[k]
	if !ok || !a.enabled {
		return NodeSpec{}, false
	}
	if _, chained := s.chainedIn(k); chained {
		return NodeSpec{}, false
	}
	spec, ok := s.jobSpec(k)
	if !ok {
		return NodeSpec{}, false
	}
	if wf, ok := s.masterOf(k); ok {
		spec.WorkflowID, spec.StopOnFailure = wf.ID, wf.StopOnFailure
		for _, id := range wf.ChainJobIDs {
			c, ok := s.jobSpec(NodeKey{JobID: id, OLTID: k.OLTID})
			if !ok || id == k.JobID {
				continue // not runnable on this OLT: left out of the chain
			}
			spec.Chain = append(spec.Chain, ChainSpec{JobID: id, JobName: c.JobName, Kind: c.Kind, OIDs: c.OIDs, TimeoutSeconds: c.TimeoutSeconds})
		}
	}
	return spec, true
}

// jobSpec is what a job reads on an OLT, when it can run there.
func (s *state) jobSpec(k NodeKey) (NodeSpec, bool) {
	job, ok := s.jobs[k.JobID]
	if !ok || !job.Enabled || job.IntervalSeconds <= 0 {
		return NodeSpec{}, false
	}
	olt, ok := s.olts[k.OLTID]
	if !ok || !s.oltEnabled(k.OLTID) || olt.BrandID != job.BrandID {
		return NodeSpec{}, false
	}
	brand, ok := s.brands[job.BrandID]
	if !ok {
		return NodeSpec{}, false
	}
	oids := s.jobOIDs(job)
	if len(oids) == 0 {
		return NodeSpec{}, false
	}
	return NodeSpec{
		JobName:           job.Name,
		BrandID:           job.BrandID,
		IndexScheme:       brand.IndexScheme,
		Index:             brand.Index,
		Kind:              job.Kind,
		Target:            streams.Target{Host: olt.IP, Port: olt.Port, CommunityEnc: olt.CommunityEnc},
		OIDs:              oids,
		Priority:          job.Priority,
		IntervalSeconds:   job.IntervalSeconds,
		TimeoutSeconds:    s.timeout(job),
		MaxRetries:        s.defaults.retries.of(job),
		RetryDelaySeconds: job.RetryDelaySeconds,
		SNMP:              brand.SNMP.Over(olt.SNMP),
	}, true
}

// jobOIDs is what a job reads: its known OIDs of its brand. The slice is
// shared by every node of the job (never modified: rebuilt when an OID or
// the job changes), so 10,000 OLTs do not hold 10,000 copies.
func (s *state) jobOIDs(job streams.JobUpserted) []streams.OIDSpec {
	if c, ok := s.oidCache[job.ID]; ok {
		return c
	}
	var oids []streams.OIDSpec
	for _, id := range job.OIDIDs {
		o, ok := s.oids[id]
		if !ok || o.BrandID != job.BrandID {
			continue
		}
		oids = append(oids, streams.OIDSpec{ID: o.ID, OID: o.OID, Field: o.Field, Decoder: o.Decoder, IndexSuffix: o.IndexSuffix, Index: o.Index})
	}
	s.oidCache[job.ID] = oids
	return oids
}

// masterOf returns the enabled workflow whose master is k (the one with
// the smallest id when several claim it).
func (s *state) masterOf(k NodeKey) (streams.WorkflowUpserted, bool) {
	var best streams.WorkflowUpserted
	found := false
	for id := range s.wfByOLT[k.OLTID] {
		wf := s.workflows[id]
		if wf.Enabled && wf.MasterJobID == k.JobID && (!found || wf.ID < best.ID) {
			best, found = wf, true
		}
	}
	return best, found
}

// chainedIn returns the enabled workflow of k's OLT that chains k's job
// after another master.
func (s *state) chainedIn(k NodeKey) (streams.WorkflowUpserted, bool) {
	for id := range s.wfByOLT[k.OLTID] {
		wf := s.workflows[id]
		if wf.Enabled && wf.MasterJobID != k.JobID && contains(wf.ChainJobIDs, k.JobID) {
			return wf, true
		}
	}
	return streams.WorkflowUpserted{}, false
}

// workflowNodes are the nodes a workflow touches as it stands now.
func (s *state) workflowNodes(id string) []NodeKey {
	if wf, ok := s.workflows[id]; ok {
		return workflowKeys(wf)
	}
	return nil
}

func workflowKeys(wf streams.WorkflowUpserted) []NodeKey {
	out := []NodeKey{{JobID: wf.MasterJobID, OLTID: wf.OLTID}}
	for _, j := range wf.ChainJobIDs {
		out = append(out, NodeKey{JobID: j, OLTID: wf.OLTID})
	}
	return out
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

// disabledOLTs counts the known OLTs that are disabled.
func (s *state) disabledOLTs() int {
	n := 0
	for id := range s.olts {
		if !s.oltEnabled(id) {
			n++
		}
	}
	return n
}

// oltEnabled: the OLT exists, is enabled and not auto-disabled.
func (s *state) oltEnabled(id string) bool {
	o, ok := s.olts[id]
	_, auto := s.autoDisabled[id]
	return ok && o.Enabled && !auto
}
