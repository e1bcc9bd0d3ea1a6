# Sourced by deploy/release in a git work tree: sets version (X.Y.Z from a
# tag vX.Y.Z, X.Y.Z+N.gHASH N commits after it, 0.0.0~gitDATE.HASH without a
# tag; FACHO_VERSION overrides), debversion (the Debian package's),
# fileversion (for file names and image tags), commit (-dirty with
# uncommitted changes), date (RFC 3339, UTC) and exports SOURCE_DATE_EPOCH
# (the commit's time unless set). Run directly, it prints them.
commit="$(git rev-parse HEAD 2>/dev/null || echo unknown)"
short="$(git rev-parse --short=12 HEAD 2>/dev/null || echo unknown)"
if [ -n "$(git status --porcelain 2>/dev/null)" ]; then commit="$commit-dirty"; fi
export SOURCE_DATE_EPOCH="${SOURCE_DATE_EPOCH:-$(git log -1 --format=%ct 2>/dev/null || date +%s)}"
date="$(date -u -d "@$SOURCE_DATE_EPOCH" +%Y-%m-%dT%H:%M:%SZ)"
if [ -n "${FACHO_VERSION:-}" ]; then
  version="$FACHO_VERSION"
elif desc="$(git describe --tags --match 'v[0-9]*' --long 2>/dev/null)"; then
  # vX.Y.Z-N-gHASH
  base="${desc%-*-g*}"; base="${base#v}"
  n="${desc%-g*}"; n="${n##*-}"
  if [ "$n" = 0 ]; then version="$base"; else version="$base+$n.g$short"; fi
else
  version="0.0.0~git$(date -u -d "@$SOURCE_DATE_EPOCH" +%Y%m%d%H%M%S).$short"
fi
# Debian versions must start with a digit; a semver pre-release (1.0.0-rc1)
# sorts before the release with ~.
debversion="${version//-/\~}"
# File names and image tags may not carry ~ or +.
fileversion="$(printf %s "$version" | tr '~+' '--')"
if [ "${BASH_SOURCE[0]}" = "$0" ]; then
  printf 'version=%s\ndebversion=%s\nfileversion=%s\ncommit=%s\ndate=%s\n' "$version" "$debversion" "$fileversion" "$commit" "$date"
fi
