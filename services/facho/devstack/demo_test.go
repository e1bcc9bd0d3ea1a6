package devstack_test

import (
	"context"
	"testing"

	"github.com/facho-olt/facho/services/facho/devstack"
)

// facho dev configures the demo at every start: on a data folder that
// already has it (the API answers 409 to a second create), it replaces it.
func TestConfigureHuaweiTwice(t *testing.T) {
	s := startStack(t, 1)
	ctx := context.Background()
	client := &devstack.Client{BaseURL: s.APIURL, Token: token}
	for i := 0; i < 2; i++ {
		ids, err := devstack.ConfigureHuawei(ctx, client, s.Fleet.OLTs(), devstack.DemoOptions{Community: "e2e-secret-community"})
		if err != nil || len(ids) != 1 {
			t.Fatalf("configure %d: %v %v", i+1, ids, err)
		}
	}
}
