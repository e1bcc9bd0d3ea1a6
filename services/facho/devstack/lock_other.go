//go:build !unix

package devstack

// LockFileName is the lock file of a data folder.
const LockFileName = "dev.lock"

// LockDataDir does not lock off unix (no flock): running two `facho dev`
// on one data folder is the user's to avoid there.
func LockDataDir(dir string) (release func(), err error) { return func() {}, nil }
