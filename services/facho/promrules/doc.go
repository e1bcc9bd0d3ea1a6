// Package promrules checks what Facho ships for Prometheus
// (deploy/prometheus): the alerting rules pass `promtool check rules`,
// their unit tests pass `promtool test rules`, the example configuration
// passes `promtool check config`, and every facho_* metric a rule reads
// is one a Facho service exports.
//
// Data flow: deploy/prometheus/*.yml -> promtool (Debian package
// prometheus) -> test result; the rules' metric names -> the services'
// Go sources.
package promrules

// Dir is deploy/prometheus relative to this package.
const Dir = "../../../deploy/prometheus"
