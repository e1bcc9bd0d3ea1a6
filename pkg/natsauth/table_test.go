package natsauth

import (
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"testing"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nkeys"

	"github.com/facho-olt/facho/streams"
)

// matches reports whether subject matches the pattern with NATS wildcards.
func matches(pattern, subject string) bool {
	p, s := strings.Split(pattern, "."), strings.Split(subject, ".")
	for i, tok := range p {
		if tok == ">" {
			return len(s) > i
		}
		if i >= len(s) || (tok != "*" && tok != s[i]) {
			return false
		}
	}
	return len(p) == len(s)
}

// mayPublish is what the server decides: allowed and not denied.
func mayPublish(p Permissions, subject string) bool {
	for _, d := range p.PublishDeny {
		if matches(d, subject) {
			return false
		}
	}
	for _, a := range p.PublishAllow {
		if matches(a, subject) {
			return true
		}
	}
	return false
}

func TestMatches(t *testing.T) {
	for _, tc := range []struct {
		pattern, subject string
		want             bool
	}{
		{"facho.config.>", "facho.config.brand.x", true},
		{"facho.config.>", "facho.config", false},
		{"facho.*.x", "facho.a.x", true},
		{"facho.*.x", "facho.a.b.x", false},
		{"a.b", "a.b", true},
		{"a.b", "a.b.c", false},
	} {
		if got := matches(tc.pattern, tc.subject); got != tc.want {
			t.Errorf("matches(%q, %q) = %v", tc.pattern, tc.subject, got)
		}
	}
}

func permissions(t *testing.T, name string) Permissions {
	t.Helper()
	id, err := Lookup(name)
	if err != nil {
		t.Fatal(err)
	}
	p, err := id.Permissions()
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// Every durable consumer streams provisions has exactly one owner: a new
// consumer fails here until it is given to its service.
func TestEveryDurableHasOneOwner(t *testing.T) {
	owners := map[string][]string{}
	for _, id := range Table() {
		for _, c := range id.Consumers {
			owners[c] = append(owners[c], id.Name)
		}
	}
	for _, cd := range streams.ConsumerConfigs(streams.Options{}) {
		if got := owners[cd.Config.Durable]; len(got) != 1 {
			t.Errorf("durable %s/%s: owners %v, want exactly one identity in natsauth.Table", cd.Stream, cd.Config.Durable, got)
		}
	}
	for _, id := range Table() {
		if _, err := id.Permissions(); err != nil {
			t.Error(err)
		}
	}
}

var placeholder = regexp.MustCompile(`<[^>]+>`)

// The table grants publishing exactly as the catalogue documents it: each
// event's publishers may publish it, nobody else (but the admin) may.
func TestPublishersAreTheCatalogues(t *testing.T) {
	durables := durableStreams()
	for _, spec := range streams.Catalogue() {
		subject := placeholder.ReplaceAllString(spec.Subject, "x1")
		for _, id := range Table() {
			if id.Admin {
				continue
			}
			p := permissions(t, id.Name)
			if spec.Stream == streams.StreamDLQ {
				// "every consumer": each its own consumers' subjects.
				for c := range durables {
					want := false
					for _, own := range id.Consumers {
						want = want || own == c
					}
					if got := mayPublish(p, streams.SubjectDLQ(c)); got != want {
						t.Errorf("%s may publish %s: %v, want %v", id.Name, streams.SubjectDLQ(c), got, want)
					}
				}
				continue
			}
			want := false
			// A subject several events share (olt.auto_disabled and
			// olt.auto_enabled) may be published by each of their publishers.
			for _, other := range streams.Catalogue() {
				if other.Subject != spec.Subject {
					continue
				}
				for _, pub := range other.Publishers {
					// "poller (any replica: ...)": the name is the first word.
					want = want || strings.Fields(pub)[0] == id.Name
				}
			}
			if got := mayPublish(p, subject); got != want {
				t.Errorf("%s may publish %s (%s): %v, want %v (catalogue publishers %v)", id.Name, subject, spec.Type, got, want, spec.Publishers)
			}
		}
	}
}

// What no service identity may do, whatever it owns.
func TestServicesMayNotAdminister(t *testing.T) {
	forbidden := []string{
		"$JS.API.STREAM.CREATE.FACHO_CONFIG",
		"$JS.API.STREAM.UPDATE.FACHO_CONFIG",
		"$JS.API.STREAM.DELETE.FACHO_VARBINDS",
		"$JS.API.STREAM.PURGE.FACHO_CONFIG",
		"$JS.API.STREAM.MSG.DELETE.FACHO_EXEC",
		"$JS.API.STREAM.DELETE.KV_facho_leases",
		"$JS.API.CONSUMER.CREATE.FACHO_SCHEDULE.poller",
		"$JS.API.CONSUMER.CREATE.FACHO_CONFIG.projector-config.facho.config.>",
		"$JS.API.CONSUMER.DURABLE.CREATE.FACHO_SCHEDULE.poller",
		"$JS.API.CONSUMER.DELETE.FACHO_EXEC.auditor-exec",
		"$JS.API.ACCOUNT.PURGE.x",
		"$SYS.REQ.SERVER.PING",
	}
	for _, id := range Table() {
		if id.Admin {
			continue
		}
		p := permissions(t, id.Name)
		for _, s := range forbidden {
			if mayPublish(p, s) {
				t.Errorf("%s may publish %s", id.Name, s)
			}
		}
	}
	admin := permissions(t, Admin)
	for _, s := range forbidden {
		if !mayPublish(admin, s) {
			t.Errorf("admin may not publish %s", s)
		}
	}
}

// A service reads and acks its own durables only.
func TestConsumersAreTheOwners(t *testing.T) {
	for _, id := range Table() {
		if id.Admin {
			continue
		}
		p := permissions(t, id.Name)
		for c, stream := range durableStreams() {
			owned := false
			for _, own := range id.Consumers {
				owned = owned || own == c
			}
			for _, s := range []string{
				"$JS.API.CONSUMER.MSG.NEXT." + stream + "." + c,
				"$JS.ACK." + stream + "." + c + ".1.2.3.4.5",
				"$JS.ACK._.hash." + stream + "." + c + ".1.2.3.4.5.tok",
			} {
				if got := mayPublish(p, s); got != owned {
					t.Errorf("%s may publish %s: %v, want %v", id.Name, s, got, owned)
				}
			}
		}
	}
}

// The rendered authorization block is what nats-server reads: parsed back,
// it holds every identity with the permissions of the table.
func TestRenderAuthorizationParses(t *testing.T) {
	dir := t.TempDir()
	keys, err := EnsureKeys(filepath.Join(dir, "keys"))
	if err != nil {
		t.Fatal(err)
	}
	auth, err := RenderAuthorization(keys)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "auth.conf"), auth, 0o600); err != nil {
		t.Fatal(err)
	}
	conf := "listen: 127.0.0.1:-1\njetstream { store_dir: " + `"` + filepath.Join(dir, "js") + `"` + " }\ninclude \"auth.conf\"\n"
	if err := os.WriteFile(filepath.Join(dir, "server.conf"), []byte(conf), 0o600); err != nil {
		t.Fatal(err)
	}
	opts, err := server.ProcessConfigFile(filepath.Join(dir, "server.conf"))
	if err != nil {
		t.Fatalf("nats-server does not read the rendered config: %v\n%s", err, auth)
	}
	want, err := ServerUsers(keys)
	if err != nil {
		t.Fatal(err)
	}
	if len(opts.Nkeys) != len(want) {
		t.Fatalf("parsed %d nkey users, want %d", len(opts.Nkeys), len(want))
	}
	for i, u := range opts.Nkeys {
		if u.Nkey != want[i].Nkey {
			t.Errorf("user %d: nkey %s, want %s", i, u.Nkey, want[i].Nkey)
		}
		if !reflect.DeepEqual(u.Permissions.Publish, want[i].Permissions.Publish) ||
			!reflect.DeepEqual(u.Permissions.Subscribe, want[i].Permissions.Subscribe) {
			t.Errorf("user %d: parsed permissions %+v / %+v, want %+v / %+v", i,
				u.Permissions.Publish, u.Permissions.Subscribe, want[i].Permissions.Publish, want[i].Permissions.Subscribe)
		}
	}
	for _, name := range Names() {
		seed, err := os.ReadFile(SeedFile(filepath.Join(dir, "keys"), name))
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(string(auth), strings.TrimSpace(string(seed))) {
			t.Fatalf("the authorization block holds the seed of %s", name)
		}
	}
}

func TestEnsureKeysKeepsSeeds(t *testing.T) {
	dir := t.TempDir()
	first, err := EnsureKeys(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(first) != len(Table()) {
		t.Fatalf("%d keys, want one per identity (%d)", len(first), len(Table()))
	}
	if err := os.Remove(SeedFile(dir, Poller)); err != nil {
		t.Fatal(err)
	}
	second, err := EnsureKeys(dir)
	if err != nil {
		t.Fatal(err)
	}
	for name, pub := range first {
		if changed := second[name] != pub; changed != (name == Poller) {
			t.Errorf("%s: key changed %v", name, changed)
		}
	}
	st, err := os.Stat(SeedFile(dir, Poller))
	if err != nil {
		t.Fatal(err)
	}
	if st.Mode().Perm() != 0o600 {
		t.Errorf("seed mode %04o, want 0600", st.Mode().Perm())
	}
}

func TestPublicKeyRefuses(t *testing.T) {
	dir := t.TempDir()
	keys, err := EnsureKeys(dir)
	if err != nil {
		t.Fatal(err)
	}
	seed, err := os.ReadFile(SeedFile(dir, API))
	if err != nil {
		t.Fatal(err)
	}
	acct, err := nkeys.CreateAccount()
	if err != nil {
		t.Fatal(err)
	}
	acctSeed, err := acct.Seed()
	if err != nil {
		t.Fatal(err)
	}
	write := func(name, content string, mode os.FileMode) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), mode); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(p, mode); err != nil {
			t.Fatal(err)
		}
		return p
	}
	for _, tc := range []struct {
		name    string
		path    string
		wantErr string
	}{
		{"readable by others", write("open.nk", string(seed), 0o644), "readable by group or others"},
		{"not a seed", write("junk.nk", "hello "+string(seed[:10]), 0o600), "no nkey seed"},
		{"an account seed", write("acct.nk", string(acctSeed), 0o600), "not a user seed"},
		{"missing", filepath.Join(dir, "nope.nk"), "no such file"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := PublicKey(tc.path)
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("err %v, want %q", err, tc.wantErr)
			}
			if strings.Contains(err.Error(), strings.TrimSpace(string(seed))) || strings.Contains(err.Error(), string(seed[:10])) {
				t.Fatalf("error quotes the seed: %v", err)
			}
		})
	}
	pub, err := PublicKey(SeedFile(dir, API))
	if err != nil || pub != keys[API] {
		t.Fatalf("PublicKey = %s, %v; want %s", pub, err, keys[API])
	}
}
