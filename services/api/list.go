package api

import (
	"fmt"
	"net/http"
	"sort"
	"strconv"
	"strings"
)

// listSpec describes a paginated list over a read model: search, filters,
// a whitelist of sort columns, limit and offset.
type listSpec struct {
	// From is the FROM clause (a table or a join).
	From string
	// Cols is the select list, in the order of the row type's fields.
	Cols string
	// Search are the columns q matches (case-insensitive substring).
	Search []string
	// Sorts maps a sort name to its SQL expression; DefaultSort is the
	// ORDER BY without one (a unique tie-breaker is appended).
	Sorts       map[string]string
	DefaultSort string
	TieBreak    string
	// Where are conditions with $n placeholders numbered from 1 in Args.
	Where []string
	Args  []any
	// DefaultLimit and MaxLimit bound a page.
	DefaultLimit, MaxLimit int
}

// page is one page of a list.
type pageInfo struct {
	Total  int
	Limit  int
	Offset int
}

func (p pageInfo) body(key string, rows any, count int) map[string]any {
	return map[string]any{"count": count, "total": p.Total, "limit": p.Limit, "offset": p.Offset, key: rows}
}

// filter adds a condition on a query parameter when it is present.
func (l *listSpec) filter(cond string, v any) {
	l.Args = append(l.Args, v)
	l.Where = append(l.Where, strings.ReplaceAll(cond, "$?", "$"+strconv.Itoa(len(l.Args))))
}

// boolParam reads an optional true/false query parameter.
func boolParam(r *http.Request, name string) (*bool, *apiError) {
	switch strings.ToLower(r.URL.Query().Get(name)) {
	case "":
		return nil, nil
	case "true", "1", "yes":
		t := true
		return &t, nil
	case "false", "0", "no":
		f := false
		return &f, nil
	}
	return nil, badField(name, "%s must be true or false", name)
}

// listPage runs spec with the request's q, sort, limit and offset.
func listPage[T any](s *server, r *http.Request, spec listSpec) ([]T, pageInfo, *apiError) {
	var pi pageInfo
	if spec.DefaultLimit == 0 {
		spec.DefaultLimit = 100
	}
	if spec.MaxLimit == 0 {
		spec.MaxLimit = 1000
	}
	var aerr *apiError
	if pi.Limit, aerr = intParam(r, "limit", spec.DefaultLimit, spec.MaxLimit); aerr != nil {
		return nil, pi, aerr
	}
	if pi.Offset, aerr = intParam(r, "offset", 0, 1<<30); aerr != nil {
		return nil, pi, aerr
	}
	if q := r.URL.Query().Get("q"); q != "" && len(spec.Search) > 0 {
		if p := textProblem(q, maxNameRunes, false); p != "" {
			return nil, pi, badField("q", "q %s", p)
		}
		like := "%" + strings.NewReplacer(`\`, `\\`, `%`, `\%`, `_`, `\_`).Replace(q) + "%"
		var ors []string
		for _, c := range spec.Search {
			ors = append(ors, c+" ILIKE $?")
		}
		spec.filter("("+strings.Join(ors, " OR ")+")", like)
	}
	order := spec.DefaultSort
	if sortBy := r.URL.Query().Get("sort"); sortBy != "" {
		name, desc := strings.CutPrefix(sortBy, "-")
		expr, ok := spec.Sorts[name]
		if !ok {
			names := make([]string, 0, len(spec.Sorts))
			for n := range spec.Sorts {
				names = append(names, n)
			}
			sort.Strings(names)
			return nil, pi, badField("sort", "sort must be one of %s (a leading - sorts descending)", strings.Join(names, ", "))
		}
		order = expr
		if desc {
			order += " DESC NULLS LAST"
		}
	}
	if spec.TieBreak != "" {
		order += ", " + spec.TieBreak
	}
	where := ""
	if len(spec.Where) > 0 {
		where = " WHERE " + strings.Join(spec.Where, " AND ")
	}
	ctx, cancel := s.query(r)
	err := s.deps.DB.QueryRow(ctx, "SELECT count(*) FROM "+spec.From+where, spec.Args...).Scan(&pi.Total)
	cancel()
	if err != nil {
		return nil, pi, s.readModelDown(err)
	}
	n := len(spec.Args)
	sql := fmt.Sprintf("SELECT %s FROM %s%s ORDER BY %s LIMIT $%d OFFSET $%d", spec.Cols, spec.From, where, order, n+1, n+2)
	rows, aerr := listRows[T](s, r, sql, append(spec.Args, pi.Limit, pi.Offset)...)
	return rows, pi, aerr
}
