package poller

import (
	"errors"
	"fmt"

	"github.com/facho-olt/facho/streams"
)

// Honest outcomes: an SNMP operation that ended without an error is not a
// success when it read nothing worth one. The poller judges it, not the
// projector, because it has all it takes at the end of the attempt (the
// node's columns, what each answered, the OLT's known ONU set) and because
// the verdict must be the execution's terminal event: the planner counts
// consecutive failures and the auditor the quotas from execution.failed,
// and a discovery judged empty must not publish its Last batch (the
// projector would read it as "every ONU of the OLT is gone"). The
// projector's VARBINDS_UNPLACED warning stays for what only decoding can
// tell (varbinds read but not placeable under the brand's index scheme).
//
//   - a walk got an OID not after the one it asked from: oid_not_increasing
//     (snmp.go; also at the first answer, which used to pass for "nothing
//     under this OID" and end the walk as an empty success);
//   - a get with no ONU discovered for the OLT: no_onus_known;
//   - a get whose every value was missing (noSuchObject/noSuchInstance) or
//     failed: empty_read;
//   - a complete discovery that found no row in any of its columns:
//     profile_mismatch ("the profile X matched but none of its tables
//     answered"). An OLT without a single ONU reads the same and is
//     reported so (the message says it); its ONUs are not marked removed.
//
// None of them is retried (streams.ExecCauseRead): the OLT answered and
// would answer the same a minute later; the node's next run tries again.
// A walk (or bulkwalk) of other columns that finds nothing stays a success:
// some vendors omit the optical rows of offline ONUs, so an empty optical
// table is what an OLT whose ONUs are all offline answers.

// readError is an operation that answered but read nothing worth a
// success; cause is its execution.failed cause.
type readError struct {
	cause FailureCause
	err   error
}

func (e *readError) Error() string { return e.err.Error() }
func (e *readError) Unwrap() error { return e.err }

// readFailure makes a readError of cause with an operator's text.
func readFailure(cause FailureCause, format string, args ...any) error {
	return &readError{cause: cause, err: fmt.Errorf(format, args...)}
}

// readCause is the cause of err when it is a readError.
func readCause(err error) (FailureCause, bool) {
	var re *readError
	if errors.As(err, &re) {
		return re.cause, true
	}
	return "", false
}

// isValue says whether a varbind type carries a value (not an exception).
func isValue(typ string) bool {
	return !endOfWalk(typ) && typ != ""
}

// verdict judges an operation that ended without an error (see above):
// nil for a success, a readError otherwise.
func (ex *execution) verdict() error {
	node := ex.node
	switch {
	case node.Kind == streams.KindGet && ex.get != nil && ex.get.onus == 0:
		return readFailure(CauseNoONUsKnown, "no ONU of olt %s is known yet: a get reads the ONUs its discoveries found, and none has found one (run the discovery first)", node.OLTID)
	case node.Kind == streams.KindGet && ex.values == 0:
		return readFailure(CauseEmptyRead, "get %s read no value from the %d known ONUs of olt %s (%d varbinds, all missing or failed): do these OIDs exist on this OLT?",
			node.JobID, ex.getONUCount(), node.OLTID, ex.varbinds)
	case node.Kind == streams.KindDiscovery && ex.values == 0:
		return readFailure(CauseProfileMismatch, "the profile %s matched but none of its tables answered (%d columns walked to their end, no row): is this the right profile? (an OLT without a single ONU reads the same)",
			profileName(node), len(node.OIDs))
	}
	return nil
}

func (ex *execution) getONUCount() int {
	if ex.get == nil {
		return 0
	}
	return ex.get.onus
}

// profileName is how an operator knows the node's profile: its brand id
// (a brand made from a vendor profile has the profile's id).
func profileName(node streams.NodeDue) string {
	if node.BrandID != "" {
		return node.BrandID
	}
	return "of brand " + node.IndexScheme
}
