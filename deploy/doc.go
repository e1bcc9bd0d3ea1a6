// Package deploy holds Facho's deployment: the systemd units (systemd/),
// the environment file (facho.env.example), the NATS cluster examples
// (nats-cluster/), the Debian packaging (debian/), the compose deployment
// (compose/), the image writer (ociimage/) and the release script
// (release). Its tests build a release once and check what an operator
// installs.
//
// Data flow of `bash deploy/release`:
//
//	services/*/cmd/*  ──go build (static, -trimpath, -X buildinfo)──▶ binaries
//	binaries + systemd/*.service + facho.env.example + debian/ ──dpkg-deb──▶ dist/facho_<v>_<arch>.deb
//	binaries ──tar──▶ dist/facho_<v>_linux_<arch>.tar.gz
//	binaries ──ociimage──▶ dist/facho_<v>_<arch>.oci.tar (podman/docker load -i)
//	compose/ ──pinned to the image──▶ dist/compose.yaml, dist/compose/
//	dist/* ──sha256sum──▶ dist/SHA256SUMS
package deploy
