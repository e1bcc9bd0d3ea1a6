package devstack_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
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
// live on the OLT page without reloading; open an ONU's history; create an OLT from a vendor
// profile; run now (the execution id shows), then disable the OLT and see
// its work stop (nodes disabled, nothing running, no new execution after
// an interval; run now refused with the reason); a workflow form shows its
// error at the field; as a viewer, "run now" and "disable" cannot be
// pressed (a forced submit is refused). Screenshots of the main pages are
// saved.
func TestConsoleInBrowser(t *testing.T) {
	if _, err := os.Stat(chromiumPath); err != nil {
		t.Skip("the browser test needs Debian's chromium (apt-get install chromium chromium-driver; .ci/run installs it): " + chromiumPath + " not found")
	}
	s := startStack(t, 1)
	if s.FirstAdminPassword == "" {
		t.Fatal("the stack created no first admin")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
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
	// Open an ONU's history from the OLT's ONU list: its state, the
	// charts (inline SVG drawn by the server) and the table of changes.
	var charts int
	run("open an ONU's history",
		chromedp.Click(`tr.onu a.onu-link`, chromedp.ByQuery),
		chromedp.WaitVisible(`#chart-rx_power_dbm svg`, chromedp.ByQuery),
		chromedp.WaitVisible(`#onu-changes`, chromedp.ByID),
		chromedp.Evaluate(`document.querySelectorAll(".chart svg").length`, &charts),
		shot("onu"),
	)
	if charts < 2 {
		t.Fatalf("%d charts on the ONU page, want status and rx at least", charts)
	}
	// An OLT created from a vendor profile: the profile's brand, OIDs and
	// default jobs are created when absent and assigned; its nodes show on
	// its page.
	run("create an OLT from a vendor profile",
		chromedp.Navigate(s.APIURL+"/vendor-profiles"), chromedp.WaitVisible(`table.grid`, chromedp.ByQuery), shot("vendor-profiles"),
		chromedp.Navigate(s.APIURL+"/vendor-profiles/huawei-ma5800"), chromedp.WaitVisible(`#profile-columns`, chromedp.ByID), shot("vendor-profile"),
		chromedp.Click(`#profile-new-olt`, chromedp.ByID),
		chromedp.WaitVisible(`#f-profile`, chromedp.ByID),
		chromedp.SendKeys(`#f-id`, "sim-p", chromedp.ByID),
		chromedp.SendKeys(`#f-name`, "MA5800 from its profile", chromedp.ByID),
		chromedp.SendKeys(`#f-ip`, sim.IP.String(), chromedp.ByID),
		chromedp.SendKeys(`#f-port`, strconv.Itoa(sim.Port), chromedp.ByID),
		chromedp.SendKeys(`#f-community`, "e2e-secret-community", chromedp.ByID),
		shot("olt-form-profile"),
		chromedp.Click(`#save`, chromedp.ByID),
		chromedp.WaitVisible(`#live-onus`, chromedp.ByID),
		// The profile's jobs arrive live as the projector and the planner
		// catch up.
		chromedp.WaitVisible(`#nodes tr.node .node-state`, chromedp.ByQuery),
	)

	// Run now, then disable the OLT: its nodes are disabled, the running
	// execution ends and no further run starts; run now is refused with
	// the reason.
	var execID string
	run("run now",
		chromedp.Navigate(s.APIURL+"/olts/sim-1"),
		chromedp.WaitVisible(`#nodes button.run-now`, chromedp.ByQuery),
		// Found and pressed in one step: the live refresh may replace the
		// node table between a lookup and a click.
		chromedp.Evaluate(`document.querySelector("#nodes button.run-now").click(); true`, nil),
		chromedp.WaitVisible(`#run-exec`, chromedp.ByID),
		chromedp.Text(`#run-exec`, &execID, chromedp.ByID),
	)
	if execID == "" {
		t.Fatal("run now shows no execution id")
	}
	// The requested execution shows in the executions (live) before the
	// OLT is disabled, so that what follows sees its end, not its start.
	run("the requested execution appears",
		chromedp.Poll(`!!document.querySelector('#live-executions a[href="/executions/`+execID+`"]')`, nil,
			chromedp.WithPollingTimeout(time.Minute), chromedp.WithPollingInterval(500*time.Millisecond)),
	)
	const workStopped = `(() => {
		const states = [...document.querySelectorAll("#nodes .node-state")].map(e => e.textContent.trim());
		const running = document.querySelectorAll("#nodes .in-flight .badge").length +
			[...document.querySelectorAll("#live-executions .badge")].filter(e => e.textContent.trim() === "RUNNING").length;
		return states.length > 0 && states.every(s => s === "disabled") && running === 0;
	})()`
	var newest, newestLater string
	const newestExec = `(document.querySelector("#live-executions tbody a") || {}).href || ""`
	if err := chromedp.Run(browser,
		chromedp.Click(`#olt-disable`, chromedp.ByID),
		chromedp.WaitVisible(`#olt-enable`, chromedp.ByID),
		chromedp.Poll(workStopped, nil, chromedp.WithPollingTimeout(time.Minute), chromedp.WithPollingInterval(500*time.Millisecond)),
		chromedp.Evaluate(newestExec, &newest),
		shot("olt-disabled"),
	); err != nil {
		var seen string
		_ = chromedp.Run(browser, chromedp.Evaluate(`[...document.querySelectorAll("#nodes tr.node, #live-executions tbody tr")].map(e => e.innerText.replace(/\s+/g, " ")).join(" | ")`, &seen))
		t.Fatalf("disable the OLT and see its work stop: %v; the page shows: %s", err, seen)
	}
	// One interval of the discovery job (30 s) and a little: nothing new.
	time.Sleep(35 * time.Second)
	var stillStopped bool
	var runErr string
	run("the disabled OLT stays idle",
		chromedp.Evaluate(workStopped, &stillStopped),
		chromedp.Evaluate(newestExec, &newestLater),
		chromedp.Click(`#nodes button.run-now`, chromedp.ByQuery),
		chromedp.WaitVisible(`#page-error`, chromedp.ByID),
		chromedp.Text(`#page-error`, &runErr, chromedp.ByID),
	)
	if !stillStopped || newest != newestLater {
		t.Errorf("the disabled OLT worked on: stopped %v, newest execution %q then %q", stillStopped, newest, newestLater)
	}
	if !strings.Contains(runErr, "disabled") {
		t.Errorf("run now on a disabled OLT: %q, want why it is refused", runErr)
	}

	run("other pages",
		chromedp.Navigate(s.APIURL+"/olts"), chromedp.WaitVisible(`table.grid`, chromedp.ByQuery), shot("olts"),
		chromedp.Navigate(s.APIURL+"/jobs"), chromedp.WaitVisible(`table.grid`, chromedp.ByQuery), shot("jobs"),
		chromedp.Navigate(s.APIURL+"/logs"), chromedp.WaitVisible(`table.grid`, chromedp.ByQuery), shot("logs"),
		chromedp.Navigate(s.APIURL+"/pollers"), chromedp.WaitVisible(`table.grid`, chromedp.ByQuery), shot("pollers"),
		chromedp.Navigate(s.APIURL+"/queue"), chromedp.WaitVisible(`#next-nodes`, chromedp.ByID), shot("queue"),
		chromedp.Navigate(s.APIURL+"/workflows/new"), chromedp.WaitVisible(`#f-chain_job_ids`, chromedp.ByID),
		chromedp.SendKeys(`#f-id`, "wf-1", chromedp.ByID),
		chromedp.SendKeys(`#f-name`, "discovery then optical", chromedp.ByID),
		chromedp.SetValue(`#f-olt_id`, "sim-p", chromedp.ByID),
		chromedp.SetValue(`#f-master_job_id`, "huawei-onu-discovery", chromedp.ByID),
		chromedp.SendKeys(`#f-chain_job_ids`, "no-such-job", chromedp.ByID),
		chromedp.Click(`#save`, chromedp.ByID),
		// A job of another brand than the OLT's: the error is at the field.
		chromedp.WaitVisible(`#error-master_job_id`, chromedp.ByID), shot("workflow-form-error"),
		chromedp.SetValue(`#f-master_job_id`, "huawei-ma5800-discovery", chromedp.ByID),
		chromedp.SetValue(`#f-chain_job_ids`, "huawei-ma5800-optical", chromedp.ByID),
		chromedp.Click(`#save`, chromedp.ByID),
		chromedp.WaitVisible(`#new-workflows`, chromedp.ByID),
		// The list reads the projector's table: reloaded until it has it.
		chromedp.ActionFunc(func(ctx context.Context) error {
			for range 30 {
				var n int
				if err := (chromedp.Tasks{chromedp.Navigate(s.APIURL + "/workflows"), chromedp.WaitVisible(`table.grid`, chromedp.ByQuery),
					chromedp.Evaluate(`document.querySelectorAll("table.grid tbody input[name=id]").length`, &n)}).Do(ctx); err != nil || n > 0 {
					return err
				}
				time.Sleep(time.Second)
			}
			return errors.New("the new workflow is not listed")
		}),
		shot("workflows"),
		chromedp.Navigate(s.APIURL+"/quotas"), chromedp.WaitVisible(`table.grid`, chromedp.ByQuery), shot("quotas"),
		chromedp.Navigate(s.APIURL+"/api/docs"), chromedp.WaitVisible(`details`, chromedp.ByQuery), shot("api-docs"),
		chromedp.Navigate(s.APIURL+"/olts"), chromedp.WaitVisible(`header.top`, chromedp.ByQuery),
		chromedp.Click(`.logout button`, chromedp.ByQuery),
		chromedp.WaitVisible(`#username`, chromedp.ByID),
		shot("login"),
	)

	// A viewer cannot press run now (nor disable); a forced submit is
	// refused by the server.
	var runDisabled, disableDisabled bool
	var forced string
	run("a viewer cannot press run now", append(login("vic", viewerPW),
		chromedp.Navigate(s.APIURL+"/olts/sim-p"),
		chromedp.WaitVisible(`#nodes button.run-now`, chromedp.ByQuery),
		chromedp.Evaluate(`document.querySelector("#nodes button.run-now").disabled`, &runDisabled),
		chromedp.Evaluate(`document.querySelector("#olt-disable").disabled`, &disableDisabled),
		shot("olt-viewer"),
		chromedp.Evaluate(`document.querySelector("#nodes button.run-now").disabled = false; true`, nil),
		chromedp.Click(`#nodes button.run-now`, chromedp.ByQuery),
		chromedp.WaitNotPresent(`#nodes`, chromedp.ByID),
		chromedp.Text(`body`, &forced, chromedp.ByQuery),
	)...)
	if !runDisabled || !disableDisabled {
		t.Errorf("a viewer can press run now (%v disabled) or disable (%v disabled)", runDisabled, disableDisabled)
	}
	if !strings.Contains(forced, "needs the operator role") {
		t.Errorf("a viewer's forced run now: %q, want refused", forced)
	}
}
