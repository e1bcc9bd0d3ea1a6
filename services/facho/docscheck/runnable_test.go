package docscheck

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/facho-olt/facho/pkg/pgtest"
)

// runnableTag is the info string of a fenced shell block that the doc
// test runs against a `facho dev`: ```sh runnable.
const runnableTag = "runnable"

// block is a fenced code block of a document.
type block struct {
	File string // relative to the repository root
	Line int    // of the opening fence
	Info string // the fence's info string (sh runnable)
	Text string
}

// fencedBlocks returns the fenced code blocks of a Markdown text (``` fences
// at the start of a line; at most 10000 lines read).
func fencedBlocks(file, text string) []block {
	var out []block
	var cur *block
	var body []string
	sc := bufio.NewScanner(strings.NewReader(text))
	sc.Buffer(make([]byte, 0, 64*1024), 1<<20)
	for n := 1; sc.Scan() && n <= 10000; n++ {
		line := sc.Text()
		trimmed := strings.TrimSpace(line)
		switch {
		case cur == nil && strings.HasPrefix(trimmed, "```"):
			cur = &block{File: file, Line: n, Info: strings.TrimSpace(strings.TrimPrefix(trimmed, "```"))}
			body = nil
		case cur != nil && trimmed == "```":
			cur.Text = strings.Join(body, "\n")
			out = append(out, *cur)
			cur = nil
		case cur != nil:
			body = append(body, line)
		}
	}
	return out
}

// runnable reports whether a block's info string tags it as runnable.
func (b block) runnable() bool {
	f := strings.Fields(b.Info)
	return len(f) >= 2 && (f[0] == "sh" || f[0] == "bash" || f[0] == "console") && f[1] == runnableTag
}

// runnableBlocks are the runnable blocks of README.md and docs/*.md.
func runnableBlocks(t *testing.T, root string) []block {
	t.Helper()
	files := []string{"README.md"}
	docs, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range docs {
		files = append(files, filepath.Join("docs", filepath.Base(d)))
	}
	var out []block
	for _, f := range files {
		for _, b := range fencedBlocks(f, readFile(t, filepath.Join(root, f))) {
			if b.runnable() {
				out = append(out, b)
			}
		}
	}
	return out
}

func TestFencedBlocks(t *testing.T) {
	text := "intro\n```sh runnable\ncurl -s x \\\n  -d y\n```\n\n```sh\ngo run . dev\n```\n```\nplain\n```\n"
	got := fencedBlocks("x.md", text)
	if len(got) != 3 {
		t.Fatalf("blocks %+v", got)
	}
	for i, tc := range []struct {
		info, text string
		line       int
		runnable   bool
	}{
		{"sh runnable", "curl -s x \\\n  -d y", 2, true},
		{"sh", "go run . dev", 7, false},
		{"", "plain", 10, false},
	} {
		b := got[i]
		if b.Info != tc.info || b.Text != tc.text || b.Line != tc.line || b.runnable() != tc.runnable {
			t.Errorf("block %d = %+v (runnable %v), want %+v", i, b, b.runnable(), tc)
		}
	}
}

// The documents tag at least the getting-started commands as runnable:
// adding an OLT with curl, listing ONUs, and the stream tools.
func TestDocsTagTheirCommands(t *testing.T) {
	root := repoRoot(t)
	var all strings.Builder
	for _, b := range runnableBlocks(t, root) {
		all.WriteString(b.Text + "\n")
	}
	for _, want := range []string{"/api/v1/olts", "/onus", "facho tail", "facho export", "facho replay"} {
		if !strings.Contains(all.String(), want) {
			t.Errorf("no runnable block contains %q", want)
		}
	}
}

// freePort is a TCP port nothing listens on now.
func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// freeRange is the first of n consecutive free TCP ports (and UDP, for
// the simulator), tried at most 50 times.
func freeRange(t *testing.T, n int) int {
	t.Helper()
	for try := 0; try < 50; try++ {
		base := 20000 + (os.Getpid()*7919+try*104729+time.Now().Nanosecond())%40000
		ok := true
		var open []io.Closer
		for p := base; p < base+n && ok; p++ {
			l, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(p))
			if err != nil {
				ok = false
				break
			}
			open = append(open, l)
			u, err := net.ListenPacket("udp", "127.0.0.1:"+strconv.Itoa(p))
			if err != nil {
				ok = false
				break
			}
			open = append(open, u)
		}
		for _, c := range open {
			c.Close()
		}
		if ok {
			return base
		}
	}
	t.Fatal("no free port range")
	return 0
}

// TestRunnableDocCommands starts `facho dev` (the binary built from this
// repository, on free ports, a fresh database) and runs every block tagged
// ```sh runnable in README.md and docs/*.md with bash -e in its folder,
// each needing exit status 0 within a minute. What a block says for the
// default `facho dev` is rewritten to the started one (see
// CONTRIBUTING.md): the API's address, the first simulated OLT's port, the
// `go run` form of the facho command (the built binary), and the
// documentation's example address 192.0.2.10 (127.0.0.1: no SNMP leaves the
// machine). curl fails on an HTTP error answer.
func TestRunnableDocCommands(t *testing.T) {
	if testing.Short() {
		t.Skip("builds facho and runs facho dev")
	}
	for _, tool := range []string{"bash", "curl", "go"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Fatalf("the documentation's commands need %s: %v", tool, err)
		}
	}
	root := repoRoot(t)
	blocks := runnableBlocks(t, root)
	if len(blocks) == 0 {
		t.Fatal("no runnable block")
	}
	work := t.TempDir()
	bin := filepath.Join(work, "bin", "facho")
	build := exec.Command("go", "build", "-o", bin, "./cmd/facho")
	build.Dir = filepath.Join(root, "services", "facho")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build facho: %v\n%s", err, out)
	}

	apiAddr := "127.0.0.1:" + strconv.Itoa(freePort(t))
	natsPort, simControl := freePort(t), freePort(t)
	metrics := freeRange(t, 12)
	simPort := freeRange(t, 2)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	dev := exec.CommandContext(ctx, bin, "dev", "-data", filepath.Join(work, ".facho"), "-api", apiAddr,
		"-nats-port", strconv.Itoa(natsPort), "-metrics-port", strconv.Itoa(metrics), "-sim-port", strconv.Itoa(simPort),
		"-sim-control", "127.0.0.1:"+strconv.Itoa(simControl), "-olts", "1", "-interval", "10", "-first-run", "1s", "-pollers", "1")
	dev.Dir = work
	dev.Env = append(os.Environ(), "DATABASE_URL="+pgtest.URL(t), "FACHO_LOG_FORMAT=json", "FACHO_LOG_LEVEL=warn")
	var devOut bytes.Buffer
	dev.Stdout, dev.Stderr = &devOut, &devOut
	dev.Cancel = func() error { return dev.Process.Signal(syscall.SIGINT) }
	dev.WaitDelay = 15 * time.Second
	if err := dev.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	var waitErr error
	go func() { waitErr = dev.Wait(); close(done) }()
	defer func() {
		cancel()
		<-done
		if waitErr != nil && !errors.Is(waitErr, context.Canceled) {
			t.Logf("facho dev ended: %v", waitErr)
		}
		if t.Failed() {
			t.Logf("facho dev's output:\n%s", tailOf(devOut.String(), 4000))
		}
	}()

	api := "http://" + apiAddr
	const token = "facho-dev-token-change-me"
	waitUntil(t, done, "facho dev's first simulated OLT has ONUs", 180*time.Second, func() bool {
		req, _ := http.NewRequest(http.MethodGet, api+"/api/v1/olts/olt-1/onus?limit=1", nil)
		req.Header.Set("Authorization", "Bearer "+token)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return false
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode == http.StatusOK && !bytes.Contains(b, []byte(`"count":0`))
	})
	if _, err := os.Stat(filepath.Join(work, ".facho", "dev.json")); err != nil {
		t.Fatalf("facho dev wrote no dev.json: %v", err)
	}

	rewrite := strings.NewReplacer(
		"go run ./services/facho/cmd/facho", bin,
		"http://127.0.0.1:8080", api,
		"16101", strconv.Itoa(simPort),
		"192.0.2.10", "127.0.0.1",
	)
	// curl fails on an HTTP error; a block's own -s stays.
	const prelude = "curl() { command curl --fail-with-body --max-time 30 \"$@\"; }\n"
	for _, b := range blocks {
		name := fmt.Sprintf("%s:%d", b.File, b.Line)
		t.Run(name, func(t *testing.T) {
			bctx, bcancel := context.WithTimeout(ctx, time.Minute)
			defer bcancel()
			cmd := exec.CommandContext(bctx, "bash", "-e", "-o", "pipefail", "-c", prelude+rewrite.Replace(b.Text))
			cmd.Dir = work
			cmd.Env = append(os.Environ(), "TOKEN="+token, "PATH="+filepath.Dir(bin)+":"+os.Getenv("PATH"))
			out, err := cmd.CombinedOutput()
			if err != nil {
				t.Errorf("%s: %v\n--- block\n%s\n--- output\n%s", name, err, b.Text, tailOf(string(out), 3000))
			}
		})
	}
}

// waitUntil polls cond every 500 ms until it holds, limit passes or the
// process behind done ends.
func waitUntil(t *testing.T, done <-chan struct{}, what string, limit time.Duration, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(limit)
	for time.Now().Before(deadline) {
		select {
		case <-done:
			t.Fatalf("%s: facho dev ended", what)
		default:
		}
		if cond() {
			return
		}
		time.Sleep(500 * time.Millisecond)
	}
	t.Fatalf("%s: not within %s", what, limit)
}

func tailOf(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return "..." + s[len(s)-n:]
}
