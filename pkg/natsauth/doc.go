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
// Seeds are secrets: they are read from files, written with mode 0600 and
// never printed, logged or quoted in an error.
package natsauth
