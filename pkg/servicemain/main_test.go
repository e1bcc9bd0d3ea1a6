package servicemain

import (
	"context"
	"flag"
	"io"
	"os"
	"os/exec"
	"strings"
	"testing"
)

// -h prints the usage and is not a failure: the binary exits 0 without an
// error line, as the flag package's own ExitOnError does.
func TestMainHelpExitsZero(t *testing.T) {
	if os.Getenv("SERVICEMAIN_TEST_MAIN") == "help" {
		Main("facho-test", func(context.Context, []string, func(string) string, io.Writer, io.Writer) error {
			return flag.ErrHelp
		})
		return
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestMainHelpExitsZero$")
	cmd.Env = append(os.Environ(), "SERVICEMAIN_TEST_MAIN=help")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("Main with flag.ErrHelp: %v\n%s", err, out)
	}
	if strings.Contains(string(out), "help requested") {
		t.Errorf("Main printed an error for -h:\n%s", out)
	}
}
