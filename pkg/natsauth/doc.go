// Package natsauth is who may do what on NATS: one identity per Facho
// service (an nkey each), the table of what each identity may publish and
// subscribe to, and what turns that table into server configuration (the
// embedded server's users, the authorization block of a nats-server
// config file) and into client options (nkey seed or credentials file,
// TLS).
//
// The table (Table) is the one place that says who owns which subject,
// durable consumer and KV bucket; the server configuration is rendered from
// it, never written by hand. Adding a consumer, a subject or a bucket to
// package streams means adding it to its owner's Identity here: a test
// fails until every durable consumer has exactly one owner.
//
// Besides the services and the admin, the table has identities for
// people: the observer (reads every stream with ephemeral ordered
// consumers, lists and inspects, deletes nothing) and the operator (the
// observer plus leader step-downs and JetStream advisories). Integrators
// (integrator:<name>, integrators.go) are not in the table: `facho nats
// identity add` records them in the keys folder with the durables they
// own (named <name>-…, on FACHO_ONU, FACHO_ALERT and FACHO_NOTIFY), and
// EnsureIdentities returns the table plus them; every other identity is
// denied those durables (PermissionsAmong).
//
//	Table() + facho-integrators.json ──EnsureIdentities──▶ identities, public keys
//	  ──PermissionsAmong──▶ allow/deny subjects ──RenderAuthorizationOf──▶ facho-auth.conf
//	                                            ──ServerUsersOf──▶ embedded server users
//
// Seeds are secrets: they are read from files, written with mode 0600 and
// never printed, logged or quoted in an error.
package natsauth
