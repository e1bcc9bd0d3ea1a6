package projector

import "github.com/jackc/pgx/v5"

// planEachTime, as a query's first argument, runs it as an unnamed
// statement that Postgres plans for its parameters at every call, instead
// of pgx's cached prepared statement.
//
// Why: Postgres keeps a prepared statement's generic plan (costed without
// the parameters' values) once it costs no more than its first custom
// plans, and replans it only when the table is analyzed. A lookup by
// `= ANY($1)` first run on an empty table gets a sequential scan as its
// generic plan; under load autovacuum may not analyze the table for the
// whole run, and every lookup then reads the whole, growing table. At 3,000
// OLTs the screening read of executions (a row or two a call) read 390
// blocks a call and was Postgres's fifth costliest statement. Planning a
// lookup costs a fraction of a millisecond.
const planEachTime = pgx.QueryExecModeCacheDescribe
