package docscheck

import (
	"os"
	"testing"

	"github.com/facho-olt/facho/pkg/pgtest"
)

// TestMain stops the shared private test cluster when this binary is its
// last user (see pgtest.Main).
func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }
