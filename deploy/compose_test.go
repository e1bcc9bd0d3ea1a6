package deploy_test

import (
	"os"
	"slices"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"

	"github.com/facho-olt/facho/pkg/natsauth"
)

type composeService struct {
	Image       string
	Entrypoint  []string
	Command     []string
	Environment map[string]string
	EnvFile     any `yaml:"env_file"`
	Volumes     []string
	DependsOn   map[string]struct{ Condition string } `yaml:"depends_on"`
}

// The compose file runs NATS (the official image), PostgreSQL and every
// Facho service of services/*/cmd/facho-* from the Facho image, each with
// its own NATS identity like its systemd unit, after the streams are
// provisioned as the admin identity.
func TestComposeFile(t *testing.T) {
	data, err := os.ReadFile("compose/compose.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var file struct {
		Services map[string]composeService
	}
	if err := yaml.Unmarshal(data, &file); err != nil {
		t.Fatalf("compose.yaml: %v", err)
	}
	s := file.Services
	if !strings.HasPrefix(s["nats"].Image, "nats:") {
		t.Errorf("nats runs %q, want the official nats image", s["nats"].Image)
	}
	if !strings.HasPrefix(s["postgres"].Image, "postgres:") {
		t.Errorf("postgres runs %q, want the official postgres image", s["postgres"].Image)
	}
	const image = "facho:@VERSION@"
	if p := s["provision"]; p.Image != image || strings.Join(p.Command, " ") != "streams provision" ||
		p.Environment[natsauth.EnvNkeySeedFile] != "/var/lib/facho/keys/"+natsauth.Admin+".nk" {
		t.Errorf("provision: %+v, want facho streams provision as admin", p)
	}
	identities := natsauth.Names()
	compose := map[string]bool{}
	for name, svc := range s {
		if len(svc.Entrypoint) == 0 {
			continue
		}
		bin := strings.TrimPrefix(svc.Entrypoint[0], "/usr/bin/")
		compose[bin] = true
		identity := strings.TrimPrefix(bin, "facho-")
		if name != identity {
			t.Errorf("compose service %s runs %s", name, bin)
		}
		if svc.Image != image {
			t.Errorf("%s: image %q, want %q", name, svc.Image, image)
		}
		if !slices.Contains(identities, identity) {
			t.Errorf("%s: no NATS identity %q in pkg/natsauth", name, identity)
		}
		if got := svc.Environment[natsauth.EnvNkeySeedFile]; got != "/var/lib/facho/keys/"+identity+".nk" {
			t.Errorf("%s: seed file %q, want its own identity's", name, got)
		}
		if svc.Environment["FACHO_SECRET_KEY"] == "" || svc.Environment["DATABASE_URL"] == "" || svc.EnvFile != "compose/facho.env" {
			t.Errorf("%s: environment %v, env_file %v", name, svc.Environment, svc.EnvFile)
		}
		if svc.DependsOn["provision"].Condition != "service_completed_successfully" {
			t.Errorf("%s does not wait for the streams' provisioning", name)
		}
	}
	for _, svc := range services(t) {
		if !compose[svc] {
			t.Errorf("%s (services/*/cmd/%s) has no compose service", svc, svc)
		}
	}
	for bin := range compose {
		if !slices.Contains(services(t), bin) {
			// Services that land in another branch of this release.
			t.Logf("compose runs %s, which is not built from this tree yet", bin)
		}
	}
}
