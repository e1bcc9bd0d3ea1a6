package devstack_test

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/facho-olt/facho/services/api/auth"
	"github.com/facho-olt/facho/services/facho/devstack"
)

// chromiumPath is Debian's Chromium (packages chromium and chromium-driver,
// installed by .ci/run).
const chromiumPath = "/usr/bin/chromium"

// docsScreenshots is where the README's screenshots live. A test run
// writes there only when FACHO_SCREENSHOTS=docs (so CI leaves the tracked
// files alone); otherwise into the test's temporary folder, or into
// FACHO_SCREENSHOTS when it names another folder.
const docsScreenshots = "../../../docs/screenshots"

func screenshotFolder(t *testing.T) string {
	switch v := os.Getenv("FACHO_SCREENSHOTS"); v {
	case "":
		return t.TempDir()
	case "docs":
		return docsScreenshots
	default:
		return v
	}
}

// TestConsoleInBrowser drives the console in headless Chromium against the
// whole system: log in as the first admin; create an OLT with a bad IP (the
// error shows at the field), then a good one (a simulated OLT of the
// Huawei vendor profile); assign the discovery job; see its ONUs appear
// live on the OLT page without reloading; as a viewer, "run now" and
// "disable" cannot be pressed. Screenshots of the main pages are saved.
func TestConsoleInBrowser(t *testing.T) {
	if _, err := os.Stat(chromiumPath); err != nil {
		t.Skip("the browser test needs Debian's chromium (apt-get install chromium chromium-driver; .ci/run installs it): " + chromiumPath + " not found")
	}
	s := startStack(t, 1)
	if s.FirstAdminPassword == "" {
		t.Fatal("the stack created no first admin")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	client := &devstack.Client{BaseURL: s.APIURL, Token: token}
	if _, err := devstack.ConfigureHuawei(ctx, client, nil, devstack.DemoOptions{IntervalSeconds: 30}); err != nil {
		t.Fatal(err)
	}
	const viewerPW = "viewer-password-1"
	if _, err := (&auth.Store{DB: s.DB}).CreateUser(ctx, "vic", auth.Viewer, viewerPW); err != nil {
		t.Fatal(err)
	}
	screenshotDir := screenshotFolder(t)
	if err := os.MkdirAll(screenshotDir, 0o755); err != nil {
		t.Fatal(err)
	}

	alloc, cancelAlloc := chromedp.NewExecAllocator(ctx,
		chromedp.ExecPath(chromiumPath),
		chromedp.Headless, chromedp.NoSandbox, chromedp.DisableGPU, chromedp.NoFirstRun, chromedp.NoDefaultBrowserCheck,
		chromedp.Flag("disable-background-networking", true), chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true), chromedp.WindowSize(1366, 900),
		chromedp.UserDataDir(t.TempDir()),
	)
	defer cancelAlloc()
	browser, cancelBrowser := chromedp.NewContext(alloc)
	// Cancelling the context closes Chromium (no process left behind).
	defer cancelBrowser()

	shot := func(name string) chromedp.Action {
		return chromedp.ActionFunc(func(ctx context.Context) error {
			var buf []byte
			var capture chromedp.Action = chromedp.FullScreenshot(&buf, 100)
			if name == "api-docs" { // a long page: its first screen
				capture = chromedp.CaptureScreenshot(&buf)
			}
			if err := capture.Do(ctx); err != nil {
				return err
			}
			return os.WriteFile(filepath.Join(screenshotDir, name+".png"), buf, 0o644)
		})
	}
	run := func(what string, actions ...chromedp.Action) {
		t.Helper()
		if err := chromedp.Run(browser, actions...); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
	}
	login := func(user, pw string) []chromedp.Action {
		return []chromedp.Action{
			chromedp.Navigate(s.APIURL + "/"),
			chromedp.WaitVisible(`#username`, chromedp.ByID),
			chromedp.SendKeys(`#username`, user, chromedp.ByID),
			chromedp.SendKeys(`#password`, pw, chromedp.ByID),
			chromedp.Click(`#login-submit`, chromedp.ByID),
			chromedp.WaitVisible(`header.top`, chromedp.ByQuery),
		}
	}

	run("log in as the first admin", append(login(s.FirstAdmin, s.FirstAdminPassword), chromedp.Navigate(s.APIURL+"/brands"),
		chromedp.WaitVisible(`table.grid`, chromedp.ByQuery), shot("brands"))...)

	sim := s.Fleet.OLTs()[0].Addr()
	var ipError string
	run("OLT with a bad IP",
		chromedp.Navigate(s.APIURL+"/olts/new"),
		chromedp.WaitVisible(`#f-name`, chromedp.ByID),
		chromedp.SendKeys(`#f-id`, "sim-1", chromedp.ByID),
		chromedp.SendKeys(`#f-name`, "Simulated MA5800", chromedp.ByID),
		chromedp.SendKeys(`#f-ip`, "300.1.2.3", chromedp.ByID),
		chromedp.SendKeys(`#f-port`, strconv.Itoa(sim.Port), chromedp.ByID),
		chromedp.SendKeys(`#f-community`, "e2e-secret-community", chromedp.ByID),
		chromedp.SetValue(`#f-brand_id`, "huawei", chromedp.ByID),
		chromedp.Click(`#save`, chromedp.ByID),
		chromedp.WaitVisible(`#error-ip`, chromedp.ByID),
		chromedp.Text(`#error-ip`, &ipError, chromedp.ByID),
		shot("olt-form-error"),
	)
	if ipError == "" {
		t.Fatal("no error at the ip field")
	}
	run("OLT with a good IP",
		chromedp.SetValue(`#f-ip`, sim.IP.String(), chromedp.ByID),
		// The community is not sent back to the browser: typed again.
		chromedp.SendKeys(`#f-community`, "e2e-secret-community", chromedp.ByID),
		chromedp.Click(`#save`, chromedp.ByID),
		chromedp.WaitVisible(`#live-onus`, chromedp.ByID),
	)
	// Assigned disabled first, so that the OLT page opens without ONUs.
	run("assign the discovery job (disabled)",
		chromedp.Navigate(s.APIURL+"/assignments/new?olt_id=sim-1"),
		chromedp.WaitVisible(`#f-job_id`, chromedp.ByID),
		chromedp.SetValue(`#f-job_id`, "huawei-onu-discovery", chromedp.ByID),
		chromedp.Click(`#f-enabled`, chromedp.ByID),
		chromedp.Click(`#save`, chromedp.ByID),
		chromedp.WaitVisible(`table.grid`, chromedp.ByQuery),
		shot("assignments"),
	)
	var before int
	run("OLT page without ONUs",
		chromedp.Navigate(s.APIURL+"/olts/sim-1"),
		chromedp.WaitVisible(`#live-onus`, chromedp.ByID),
		chromedp.Evaluate(`window.fachoMarker = 42; document.querySelectorAll("tr.onu").length`, &before),
	)
	if before != 0 {
		t.Fatalf("%d ONUs before the job was enabled", before)
	}
	// Enabled elsewhere (another operator, through the API) while the page
	// stays open: the ONUs arrive by server-sent events, without a reload.
	if err := client.Do(ctx, "POST", "/api/v1/jobs/huawei-onu-discovery/olts/sim-1/enable", nil, nil); err != nil {
		t.Fatal(err)
	}
	var onus, marker int
	run("ONUs appear live",
		chromedp.WaitVisible(`tr.onu`, chromedp.ByQuery),
		chromedp.Evaluate(`document.querySelectorAll("tr.onu").length`, &onus),
		chromedp.Evaluate(`window.fachoMarker || 0`, &marker),
		shot("olt"),
	)
	if onus == 0 || marker != 42 {
		t.Fatalf("%d ONUs, marker %d: want ONUs shown without a page reload", onus, marker)
	}
	run("other pages",
		chromedp.Navigate(s.APIURL+"/olts"), chromedp.WaitVisible(`table.grid`, chromedp.ByQuery), shot("olts"),
		chromedp.Navigate(s.APIURL+"/jobs"), chromedp.WaitVisible(`table.grid`, chromedp.ByQuery), shot("jobs"),
		chromedp.Navigate(s.APIURL+"/logs"), chromedp.WaitVisible(`table.grid`, chromedp.ByQuery), shot("logs"),
		chromedp.Navigate(s.APIURL+"/pollers"), chromedp.WaitVisible(`table.grid`, chromedp.ByQuery), shot("pollers"),
		chromedp.Navigate(s.APIURL+"/quotas"), chromedp.WaitVisible(`table.grid`, chromedp.ByQuery), shot("quotas"),
		chromedp.Navigate(s.APIURL+"/api/docs"), chromedp.WaitVisible(`details`, chromedp.ByQuery), shot("api-docs"),
		chromedp.Navigate(s.APIURL+"/olts"), chromedp.WaitVisible(`header.top`, chromedp.ByQuery),
		chromedp.Click(`.logout button`, chromedp.ByQuery),
		chromedp.WaitVisible(`#username`, chromedp.ByID),
		shot("login"),
	)

	var runDisabled, disableDisabled bool
	run("viewer", append(login("vic", viewerPW),
		chromedp.Navigate(s.APIURL+"/olts/sim-1"),
		chromedp.WaitVisible(`tr.onu`, chromedp.ByQuery),
		chromedp.Evaluate(`document.querySelector("button.run-now").disabled`, &runDisabled),
		chromedp.Evaluate(`document.querySelector("#olt-disable").disabled`, &disableDisabled),
	)...)
	if !runDisabled || !disableDisabled {
		t.Errorf("a viewer can press run now (%v disabled) or disable (%v disabled)", runDisabled, disableDisabled)
	}
}
