package profiles

import (
	"errors"
	"fmt"
	"strings"

	"github.com/facho-olt/facho/streams"
)

// The checks of the profile language's row rules (an ONU named by a
// column's value, row filters) and of what a job can read.

// builtinPrefix starts the Source of an embedded profile.
const builtinPrefix = "builtin:"

// Problem is a profile file of a folder that was not loaded, and why.
type Problem struct {
	Source string `json:"source"`
	Error  string `json:"error"`
}

// Problems lists the files of the folder that could not be loaded.
func (c *Catalogue) Problems() []Problem { return append([]Problem(nil), c.problems...) }

// Builtin says whether the profile is one embedded in the binary.
func (p Profile) Builtin() bool { return strings.HasPrefix(p.Source, builtinPrefix) }

// resolveRows fills the OIDs of the index key and filters from the
// columns they name.
func (p *Profile) resolveRows() {
	if k := p.Index.Key; k != nil && k.OID == "" {
		if c, ok := p.Column(k.Column); ok {
			key := *k
			key.OID = c.OID
			p.Index.Key = &key
		}
	}
	if len(p.Index.Filter) > 0 {
		fs := append([]streams.RowFilter(nil), p.Index.Filter...)
		for i, f := range fs {
			if c, ok := p.Column(f.Column); ok && f.OID == "" {
				fs[i].OID = c.OID
			}
		}
		p.Index.Filter = fs
	}
}

// rowColumns are the ids of the columns the index's key and filters read.
func (p Profile) rowColumns() ([]string, []error) {
	var ids []string
	var errs []error
	ref := func(what, col, oid string) {
		if col == "" {
			errs = append(errs, fmt.Errorf("index %s: column (a column id of the profile) is required", what))
			return
		}
		c, ok := p.Column(col)
		switch {
		case !ok:
			errs = append(errs, fmt.Errorf("index %s: column %q is not in the profile", what, col))
		case c.Index != nil:
			errs = append(errs, fmt.Errorf("index %s: column %q has its own index", what, col))
		case strings.Trim(oid, ".") != strings.Trim(c.OID, "."):
			errs = append(errs, fmt.Errorf("index %s: oid %s is not column %q's (%s)", what, oid, col, c.OID))
		default:
			ids = append(ids, col)
		}
	}
	if k := p.Index.Key; k != nil {
		ref("key", k.Column, k.OID)
	}
	for i, f := range p.Index.Filter {
		ref(fmt.Sprintf("filter %d", i+1), f.Column, f.OID)
	}
	return ids, errs
}

// validateLang checks the row rules and that each job can read what it
// is given: a get rebuilds each ONU's row index from its key, so the index
// must allow that; a walk of the ONU tables reads the key's and filters'
// columns too.
func (p Profile) validateLang() []error {
	rowCols, errs := p.rowColumns()
	for _, c := range p.Columns {
		if c.Index != nil && (c.Index.Key != nil || len(c.Index.Filter) > 0) {
			errs = append(errs, fmt.Errorf("column %q: a column's own index takes no key nor filter", c.ID))
		}
	}
	_, formatErr := p.Index.Formatter()
	for _, j := range p.Jobs {
		primary := false
		for _, cid := range j.Columns {
			if c, ok := p.Column(cid); ok && c.Index == nil {
				primary = true
			}
		}
		if !primary {
			continue
		}
		if j.Kind == streams.KindGet {
			if formatErr != nil {
				errs = append(errs, fmt.Errorf("job %q: a get reads each ONU at its row index rebuilt from pon_index and onu_id, which this index cannot give (%v): walk it instead (kind bulkwalk)",
					j.ID, describeNoRowIndex(p.Index, formatErr)))
			}
			continue
		}
		for _, rc := range rowCols {
			if !contains(j.Columns, rc) {
				errs = append(errs, fmt.Errorf("job %q: the index's key or filter reads column %q: add it to the job's columns", j.ID, rc))
			}
		}
	}
	return errs
}

// describeNoRowIndex says why an index cannot rebuild a row index.
func describeNoRowIndex(idx streams.IndexSpec, err error) string {
	switch {
	case !errors.Is(err, streams.ErrNoRowIndex):
		return err.Error()
	case idx.Key != nil:
		return "the ONU is named by a column's value"
	}
	for _, part := range idx.Parts {
		if part.Type != streams.PartInt {
			return fmt.Sprintf("part %q is a %s", part.Name, part.Type)
		}
	}
	return "pon_index or onu_id is not a plain part or field"
}
