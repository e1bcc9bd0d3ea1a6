package deploy_test

import (
	"archive/tar"
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/facho-olt/facho/pkg/jstest"
	"github.com/facho-olt/facho/pkg/natsauth"
	"github.com/facho-olt/facho/pkg/pgtest"
	"github.com/facho-olt/facho/streams"
)

func TestMain(m *testing.M) {
	code := pgtest.Main(m)
	if built.dist != "" {
		_ = os.RemoveAll(built.dist)
	}
	os.Exit(code)
}

// release is one run of `bash deploy/release`, shared by every test of
// the run: the build takes a minute or two.
type release struct {
	dist    string
	version string // as deploy/release says it
	commit  string
	deb     string
	image   string
	log     string
	err     error
}

var (
	releaseOnce sync.Once
	built       release
)

// buildRelease runs deploy/release once per test binary into a temporary
// dist/ (TestMain removes it).
func buildRelease(t *testing.T) release {
	t.Helper()
	if testing.Short() {
		t.Skip("-short: the release build (bash deploy/release) is skipped")
	}
	for _, tool := range []string{"dpkg-deb", "git", "bash"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("%s is not installed (Debian: apt-get install dpkg git bash): the release is not built", tool)
		}
	}
	releaseOnce.Do(func() {
		dist, err := os.MkdirTemp("", "facho-dist-")
		if err != nil {
			built.err = err
			return
		}
		built.dist = dist
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, "bash", "release")
		cmd.Env = append(os.Environ(), "FACHO_DIST="+dist)
		out, err := cmd.CombinedOutput()
		built.log = string(out)
		if err != nil {
			built.err = fmt.Errorf("bash deploy/release: %w\n%s", err, out)
			return
		}
		m := regexp.MustCompile(`(?m)^facho (\S+) \(commit (\S+), built`).FindStringSubmatch(built.log)
		if m == nil {
			built.err = fmt.Errorf("bash deploy/release did not say the version:\n%s", out)
			return
		}
		built.version, built.commit = m[1], m[2]
		debs, _ := filepath.Glob(filepath.Join(dist, "facho_*.deb"))
		images, _ := filepath.Glob(filepath.Join(dist, "facho_*.oci.tar"))
		if len(debs) != 1 || len(images) != 1 {
			built.err = fmt.Errorf("dist/ has debs %v and images %v, want one of each", debs, images)
			return
		}
		built.deb, built.image = debs[0], images[0]
	})
	if built.err != nil {
		t.Fatal(built.err)
	}
	return built
}

// run runs a command and returns its combined output.
func run(t *testing.T, name string, args ...string) (string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, name, args...).CombinedOutput()
	return string(out), err
}

// binaries are the names of the commands of services/*/cmd/*: what every
// artefact must hold, whichever services exist.
func binaries(t *testing.T) []string {
	t.Helper()
	dirs, err := filepath.Glob("../services/*/cmd/*")
	if err != nil || len(dirs) == 0 {
		t.Fatalf("no services/*/cmd/*: %v", err)
	}
	var names []string
	for _, d := range dirs {
		if goFiles, _ := filepath.Glob(filepath.Join(d, "*.go")); len(goFiles) > 0 {
			names = append(names, filepath.Base(d))
		}
	}
	sort.Strings(names)
	return names
}

// services are the binaries that run as a service (facho-<identity>).
func services(t *testing.T) []string {
	var s []string
	for _, b := range binaries(t) {
		if strings.HasPrefix(b, "facho-") {
			s = append(s, b)
		}
	}
	return s
}

func units(t *testing.T) []string {
	t.Helper()
	u, err := filepath.Glob("systemd/*.service")
	if err != nil || len(u) == 0 {
		t.Fatalf("no deploy/systemd units: %v", err)
	}
	for i := range u {
		u[i] = filepath.Base(u[i])
	}
	return u
}

func TestDebLintian(t *testing.T) {
	r := buildRelease(t)
	if _, err := exec.LookPath("lintian"); err != nil {
		t.Skip("lintian is not installed (Debian: apt-get install lintian): the package is not linted")
	}
	out, err := run(t, "lintian", "--fail-on", "error", "--allow-root", "--tag-display-limit", "0", r.deb)
	t.Logf("lintian %s:\n%s", filepath.Base(r.deb), out)
	if err != nil {
		t.Fatalf("lintian found errors: %v", err)
	}
	if regexp.MustCompile(`(?m)^E: `).MatchString(out) {
		t.Fatal("lintian reported errors")
	}
}

func TestDebContents(t *testing.T) {
	r := buildRelease(t)
	out, err := run(t, "dpkg-deb", "--contents", r.deb)
	if err != nil {
		t.Fatalf("dpkg-deb --contents: %v\n%s", err, out)
	}
	// path → "mode owner/group"
	entries := map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		f := strings.Fields(line)
		if len(f) < 6 {
			continue
		}
		entries[strings.TrimPrefix(f[5], ".")] = f[0] + " " + f[1]
	}
	want := map[string]string{
		"/etc/facho/facho.env":                           "-rw-r----- root/root",
		"/usr/share/bash-completion/completions/facho":   "-rw-r--r-- root/root",
		"/usr/share/doc/facho/examples/nats/nats-1.conf": "-rw-r--r-- root/root",
		"/usr/share/doc/facho/copyright":                 "-rw-r--r-- root/root",
		"/usr/lib/sysusers.d/facho.conf":                 "-rw-r--r-- root/root",
		"/usr/lib/tmpfiles.d/facho.conf":                 "-rw-r--r-- root/root",
	}
	for _, b := range binaries(t) {
		want["/usr/bin/"+b] = "-rwxr-xr-x root/root"
		want["/usr/share/man/man1/"+b+".1.gz"] = "-rw-r--r-- root/root"
	}
	for _, u := range units(t) {
		want["/lib/systemd/system/"+u] = "-rw-r--r-- root/root"
	}
	for path, mode := range want {
		if got, ok := entries[path]; !ok {
			t.Errorf("the package lacks %s", path)
		} else if got != mode {
			t.Errorf("%s is %s, want %s", path, got, mode)
		}
	}
	for _, field := range []struct{ name, want string }{
		{"Package", "facho"},
		{"Version", strings.ReplaceAll(r.version, "-", "~")},
		{"Architecture", "amd64"},
	} {
		got, err := run(t, "dpkg-deb", "--field", r.deb, field.name)
		if err != nil || strings.TrimSpace(got) != field.want {
			t.Errorf("control field %s = %q (%v), want %q", field.name, strings.TrimSpace(got), err, field.want)
		}
	}
	conffiles, err := run(t, "dpkg-deb", "--info", r.deb, "conffiles")
	if err != nil || strings.TrimSpace(conffiles) != "/etc/facho/facho.env" {
		t.Errorf("conffiles = %q (%v), want /etc/facho/facho.env", conffiles, err)
	}
	// The maintainer scripts and the completion parse.
	control := t.TempDir()
	if out, err := run(t, "dpkg-deb", "--control", r.deb, control); err != nil {
		t.Fatalf("dpkg-deb --control: %v\n%s", err, out)
	}
	for _, script := range []string{"postinst", "postrm"} {
		if out, err := run(t, "sh", "-n", filepath.Join(control, script)); err != nil {
			t.Errorf("%s: %v\n%s", script, err, out)
		}
	}
	root := unpack(t, r)
	completion := filepath.Join(root, "usr/share/bash-completion/completions/facho")
	if out, err := run(t, "bash", "-n", completion); err != nil {
		t.Errorf("bash completion: %v\n%s", err, out)
	}
	sums, err := os.ReadFile(filepath.Join(r.dist, "SHA256SUMS"))
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{r.deb, r.image} {
		if !strings.Contains(string(sums), "  "+filepath.Base(f)+"\n") {
			t.Errorf("SHA256SUMS does not list %s", filepath.Base(f))
		}
	}
	cmd := exec.Command("sha256sum", "--check", "--strict", "SHA256SUMS")
	cmd.Dir = r.dist
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Errorf("sha256sum --check: %v\n%s", err, out)
	}
}

// unpack extracts the package into a temporary root, as dpkg would
// install it (without the maintainer scripts).
func unpack(t *testing.T, r release) string {
	t.Helper()
	root := t.TempDir()
	if out, err := run(t, "dpkg-deb", "-x", r.deb, root); err != nil {
		t.Fatalf("dpkg-deb -x: %v\n%s", err, out)
	}
	return root
}

func TestSystemdVerifyInstalledUnits(t *testing.T) {
	r := buildRelease(t)
	if _, err := exec.LookPath("systemd-analyze"); err != nil {
		t.Skip("systemd-analyze is not installed (Debian: apt-get install systemd): the units are not verified")
	}
	root := unpack(t, r)
	// systemd-analyze verify --root checks the units against the unpacked
	// tree (that ExecStart's binary is there, among the rest); the test also
	// checks that no unit still names /usr/local.
	for _, u := range units(t) {
		path := filepath.Join(root, "lib/systemd/system", u)
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatalf("the package lacks unit %s: %v", u, err)
		}
		for _, m := range regexp.MustCompile(`(?m)^ExecStart=(\S+)`).FindAllStringSubmatch(string(data), -1) {
			if _, err := os.Stat(filepath.Join(root, m[1])); err != nil {
				t.Errorf("%s: ExecStart=%s is not in the package", u, m[1])
			}
		}
		if strings.Contains(string(data), "/usr/local/") {
			t.Errorf("%s still names /usr/local", u)
		}
		out, err := run(t, "systemd-analyze", "verify", "--root="+root, "--man=no", "--recursive-errors=no", path)
		if err != nil {
			t.Errorf("systemd-analyze verify %s: %v\n%s", u, err, out)
		} else if strings.TrimSpace(out) != "" {
			t.Logf("systemd-analyze verify %s:\n%s", u, out)
		}
	}
}

// readEnvFile parses a systemd EnvironmentFile (KEY=VALUE lines, #
// comments).
func readEnvFile(t *testing.T, path string) map[string]string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	env := map[string]string{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		k, v, ok := strings.Cut(line, "=")
		if !ok {
			t.Fatalf("%s: not KEY=VALUE: %q", path, line)
		}
		env[k] = v
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return env
}

func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// lockedBuffer collects a process's output while the test reads it.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// The installed binaries run with the installed environment file, edited
// as an operator edits it (the site's NATS, database, key and tokens),
// each service as its own NATS identity like its unit: the streams are
// provisioned again by the installed facho (idempotent, as at an upgrade),
// each service applies the migrations at start, answers /healthz, logs its
// version and exposes facho_build_info; SIGTERM stops it cleanly.
func TestDebInstalledBinariesRun(t *testing.T) {
	r := buildRelease(t)
	root := unpack(t, r)
	bin := func(name string) string { return filepath.Join(root, "usr/bin", name) }

	out, err := run(t, bin("facho"), "version", "-json")
	if err != nil {
		t.Fatalf("facho version: %v\n%s", err, out)
	}
	var v struct{ Version, Commit, Build_Date string }
	if err := json.Unmarshal([]byte(out), &v); err != nil {
		t.Fatalf("facho version -json: %v: %q", err, out)
	}
	if v.Version != r.version || v.Commit != r.commit || v.Build_Date == "unknown" {
		t.Fatalf("installed facho version = %+v, want version %s commit %s and a date", v, r.version, r.commit)
	}

	nats := jstest.Start(t, streams.Options{}, jstest.WithAuth())
	dbURL := pgtest.EmptyURL(t)
	key, err := run(t, bin("facho"), "keygen")
	if err != nil {
		t.Fatalf("facho keygen: %v\n%s", err, key)
	}
	env := readEnvFile(t, filepath.Join(root, "etc/facho/facho.env"))
	for _, k := range []string{"FACHO_NATS_URL", "DATABASE_URL", "FACHO_SECRET_KEY", "FACHO_STREAM_REPLICAS"} {
		if _, ok := env[k]; !ok {
			t.Errorf("the installed facho.env does not set %s", k)
		}
	}
	env["FACHO_NATS_URL"] = nats.URL
	env["DATABASE_URL"] = dbURL
	env["FACHO_SECRET_KEY"] = strings.TrimSpace(key)
	env["FACHO_API_TOKENS"] = "packaging-test-token"
	env["FACHO_STREAM_REPLICAS"] = "1"
	delete(env, "FACHO_NATS_TLS_CA") // the test server speaks plain TCP
	environ := func(extra map[string]string) []string {
		e := []string{"PATH=/usr/bin:/bin", "HOME=" + t.TempDir()}
		for k, v := range env {
			e = append(e, k+"="+v)
		}
		for k, v := range extra {
			e = append(e, k+"="+v)
		}
		return e
	}

	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	prov := exec.CommandContext(ctx, bin("facho"), "streams", "provision")
	prov.Env = environ(map[string]string{natsauth.EnvNkeySeedFile: natsauth.SeedFile(nats.KeysDir, natsauth.Admin)})
	if out, err := prov.CombinedOutput(); err != nil {
		t.Fatalf("installed facho streams provision (admin): %v\n%s", err, out)
	}

	for _, svc := range services(t) {
		t.Run(svc, func(t *testing.T) {
			identity := strings.TrimPrefix(svc, "facho-")
			seed := natsauth.SeedFile(nats.KeysDir, identity)
			if _, err := os.Stat(seed); err != nil {
				t.Fatalf("no NATS identity %q for %s: %v", identity, svc, err)
			}
			httpAddr := freeAddr(t)
			cmd := exec.CommandContext(ctx, bin(svc))
			cmd.Env = environ(map[string]string{
				natsauth.EnvNkeySeedFile: seed,
				"FACHO_HTTP_ADDR":        httpAddr,
				"FACHO_API_ADDR":         freeAddr(t),
			})
			var logs lockedBuffer
			cmd.Stdout, cmd.Stderr = &logs, &logs
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			exited := make(chan error, 1)
			go func() { exited <- cmd.Wait() }()
			defer func() {
				if cmd.ProcessState == nil {
					_ = cmd.Process.Kill()
					<-exited
				}
			}()
			metrics, err := waitHealthy(ctx, httpAddr, exited)
			if err != nil {
				t.Fatalf("%s: %v\n%s", svc, err, logs.String())
			}
			wantGauge := regexp.MustCompile(`facho_build_info\{[^}]*commit="` + regexp.QuoteMeta(r.commit) + `"[^}]*service="` + identity + `",version="` + regexp.QuoteMeta(r.version) + `"\} 1`)
			if !wantGauge.MatchString(metrics) {
				t.Errorf("/metrics has no facho_build_info of %s %s:\n%s", identity, r.version, grepLines(metrics, "facho_build_info"))
			}
			if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
				t.Fatal(err)
			}
			select {
			case err := <-exited:
				if err != nil {
					t.Errorf("%s after SIGTERM: %v\n%s", svc, err, logs.String())
				}
			case <-time.After(60 * time.Second):
				t.Fatalf("%s did not stop within 60 s of SIGTERM", svc)
			}
			first, _, _ := strings.Cut(logs.String(), "\n")
			var start map[string]any
			if err := json.Unmarshal([]byte(first), &start); err != nil || start["message"] != "starting" || start["version"] != r.version || start["commit"] != r.commit {
				t.Errorf("the first log line does not say the version: %q", first)
			}
		})
	}
}

// waitHealthy polls /healthz until 200 (within 90 s: the service migrates
// the database first) and returns /metrics.
func waitHealthy(ctx context.Context, addr string, exited <-chan error) (string, error) {
	deadline := time.Now().Add(90 * time.Second)
	client := &http.Client{Timeout: 5 * time.Second}
	var last string
	for time.Now().Before(deadline) {
		select {
		case err := <-exited:
			return "", fmt.Errorf("exited before it was healthy: %v", err)
		case <-ctx.Done():
			return "", ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
		resp, err := client.Get("http://" + addr + "/healthz")
		if err != nil {
			last = err.Error()
			continue
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		last = fmt.Sprintf("%d %s", resp.StatusCode, body)
		if resp.StatusCode != http.StatusOK {
			continue
		}
		resp, err = client.Get("http://" + addr + "/metrics")
		if err != nil {
			return "", err
		}
		defer resp.Body.Close()
		m, err := io.ReadAll(resp.Body)
		return string(m), err
	}
	return "", fmt.Errorf("/healthz not 200 within 90 s, last: %s", last)
}

func grepLines(s, sub string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, sub) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

// ociBlob reads a blob of an OCI archive by digest.
func ociArchive(t *testing.T, path string) map[string][]byte {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	files := map[string][]byte{}
	tr := tar.NewReader(f)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("read %s: %v", path, err)
		}
		if h.Typeflag != tar.TypeReg {
			continue
		}
		b, err := io.ReadAll(tr)
		if err != nil {
			t.Fatal(err)
		}
		files[h.Name] = b
	}
	return files
}

func blob(t *testing.T, files map[string][]byte, digest string) []byte {
	t.Helper()
	b, ok := files["blobs/sha256/"+strings.TrimPrefix(digest, "sha256:")]
	if !ok {
		t.Fatalf("the archive has no blob %s", digest)
	}
	return b
}

// The image: its config (entrypoint, non-root user, labels), its layer
// (every binary), and the binaries inside answer -h, in a container where
// a runtime works on this machine, else extracted from the layer.
func TestImage(t *testing.T) {
	r := buildRelease(t)
	files := ociArchive(t, r.image)
	var index struct {
		Manifests []struct {
			Digest      string
			Annotations map[string]string
		}
	}
	if err := json.Unmarshal(files["index.json"], &index); err != nil || len(index.Manifests) != 1 {
		t.Fatalf("index.json: %v, %d manifests", err, len(index.Manifests))
	}
	tag := strings.NewReplacer("~", "-", "+", "-").Replace(r.version)
	ref := "facho:" + tag
	if got := index.Manifests[0].Annotations["org.opencontainers.image.ref.name"]; got != ref {
		t.Errorf("ref.name = %q, want %q", got, ref)
	}
	var manifest struct {
		Config struct{ Digest string }
		Layers []struct{ MediaType, Digest string }
	}
	if err := json.Unmarshal(blob(t, files, index.Manifests[0].Digest), &manifest); err != nil || len(manifest.Layers) != 1 {
		t.Fatalf("manifest: %v, %d layers", err, len(manifest.Layers))
	}
	var config struct {
		OS, Architecture string
		Config           struct {
			User       string
			Entrypoint []string
			Labels     map[string]string
		}
	}
	if err := json.Unmarshal(blob(t, files, manifest.Config.Digest), &config); err != nil {
		t.Fatal(err)
	}
	c := config.Config
	if strings.Join(c.Entrypoint, " ") != "/usr/bin/facho" {
		t.Errorf("entrypoint %q, want /usr/bin/facho", c.Entrypoint)
	}
	if c.User == "" || c.User == "0" || strings.HasPrefix(c.User, "0:") || strings.HasPrefix(c.User, "root") {
		t.Errorf("user %q: the image runs as root", c.User)
	}
	for k, want := range map[string]string{
		"org.opencontainers.image.title":    "facho",
		"org.opencontainers.image.version":  tag,
		"org.opencontainers.image.revision": r.commit,
	} {
		if got := c.Labels[k]; got != want {
			t.Errorf("label %s = %q, want %q", k, got, want)
		}
	}
	if config.OS != "linux" || config.Architecture != "amd64" {
		t.Errorf("platform %s/%s", config.OS, config.Architecture)
	}

	// The layer: every binary, owned by root; /etc/passwd names the user.
	zr, err := gzip.NewReader(bytes.NewReader(blob(t, files, manifest.Layers[0].Digest)))
	if err != nil {
		t.Fatal(err)
	}
	extracted := t.TempDir()
	tr := tar.NewReader(zr)
	layer := map[string]*tar.Header{}
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		layer[h.Name] = h
		if strings.HasPrefix(h.Name, "usr/bin/") && h.Typeflag == tar.TypeReg {
			b, err := io.ReadAll(tr)
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(extracted, filepath.Base(h.Name)), b, 0o755); err != nil {
				t.Fatal(err)
			}
		}
		if h.Name == "etc/passwd" {
			b, _ := io.ReadAll(tr)
			uid, _, _ := strings.Cut(c.User, ":")
			if !strings.Contains(string(b), "facho:x:"+uid+":") {
				t.Errorf("/etc/passwd has no user facho with uid %s:\n%s", uid, b)
			}
		}
	}
	for _, b := range binaries(t) {
		h, ok := layer["usr/bin/"+b]
		if !ok {
			t.Errorf("the image lacks /usr/bin/%s", b)
			continue
		}
		if h.Uid != 0 || h.Mode&0o022 != 0 {
			t.Errorf("/usr/bin/%s: uid %d mode %o", b, h.Uid, h.Mode)
		}
	}
	if _, ok := layer["bin/sh"]; ok {
		t.Error("the image has a shell")
	}

	// -h of every service and of facho: in a container if a runtime works.
	if rt := workingRuntime(t, r.image, ref, c.User); rt != "" {
		t.Logf("ran the binaries in a container (%s)", rt)
		for _, b := range services(t) {
			out, err := run(t, rt, "run", "--rm", "--network=none", "--entrypoint", "/usr/bin/"+b, ref, "-h")
			if err != nil || !strings.Contains(out, "-http-addr") {
				t.Errorf("%s run %s -h: %v\n%s", rt, b, err, out)
			}
		}
		out, err := run(t, rt, "run", "--rm", "--network=none", ref, "version")
		if err != nil || !strings.Contains(out, r.commit) {
			t.Errorf("%s run %s version: %v\n%s", rt, ref, err, out)
		}
		return
	}
	t.Logf("no working container runtime on this machine (podman or docker): ran the binaries extracted from the image's layer")
	for _, b := range services(t) {
		out, err := run(t, filepath.Join(extracted, b), "-h")
		if err != nil || !strings.Contains(out, "-http-addr") {
			t.Errorf("extracted %s -h: %v\n%s", b, err, out)
		}
	}
	out, err := run(t, filepath.Join(extracted, "facho"), "version")
	if err != nil || !strings.Contains(out, r.commit) {
		t.Errorf("extracted facho version: %v\n%s", err, out)
	}
}

// workingRuntime loads the image into podman or docker, checks that the
// runtime reads its user and entrypoint, and returns the runtime's name,
// or "" when none is installed or none can run a container here (the
// load and the inspection are checked all the same).
func workingRuntime(t *testing.T, image, ref, user string) string {
	t.Helper()
	for _, rt := range []string{"podman", "docker"} {
		if _, err := exec.LookPath(rt); err != nil {
			continue
		}
		if out, err := run(t, rt, "load", "-i", image); err != nil {
			t.Logf("%s load: %v\n%s", rt, err, out)
			continue
		}
		t.Cleanup(func() { _, _ = run(t, rt, "rmi", "-f", ref) })
		out, err := run(t, rt, "image", "inspect", "--format", "{{.Config.User}} {{json .Config.Entrypoint}}", ref)
		if err != nil {
			t.Errorf("%s image inspect %s: %v\n%s", rt, ref, err, out)
			continue
		}
		if want := user + ` ["/usr/bin/facho"]`; strings.TrimSpace(out) != want {
			t.Errorf("%s reads user and entrypoint %q, want %q", rt, strings.TrimSpace(out), want)
		}
		t.Logf("%s loaded the image as %s", rt, ref)
		if out, err := run(t, rt, "run", "--rm", "--network=none", ref, "version"); err != nil {
			t.Logf("%s cannot run a container here: %v\n%s", rt, err, out)
			continue
		}
		return rt
	}
	return ""
}
