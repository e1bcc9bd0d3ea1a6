package devstack_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/rs/zerolog"

	"github.com/facho-olt/facho/pkg/pgtest"
	"github.com/facho-olt/facho/services/alerter"
	"github.com/facho-olt/facho/services/availability"
	"github.com/facho-olt/facho/services/facho/devstack"
	"github.com/facho-olt/facho/services/oltsim"
	"github.com/facho-olt/facho/services/planner"
)

// TestConsoleAlertsInBrowser drives the console's alerting and health pages
// in headless Chromium against the whole system and a simulated OLT of 2
// PONs x 16 ONUs: a fiber cut (the 16 ONUs of one PON offline), one more
// ONU offline and one at -31.5 dBm. The OLT page shows the outage banner
// and one red row in its PON view; the Alerts page lists the outage and
// the two ONU alerts, filters by rule and by OLT, acks one through its form
// and silences its rule (the silence is listed). Then the OLT stops
// answering (the simulator's NoAnswer fault): its availability badge turns
// unreachable or unavailable with the error. Then it answers as a broken
// agent (OIDs not increasing): a failed discovery shows its cause, the
// hour's quota shows at risk. The execution page also lists the
// ONUs a GET run could not read whole. Screenshots: alerts, olt-pons.
func TestConsoleAlertsInBrowser(t *testing.T) {
	if _, err := os.Stat(chromiumPath); err != nil {
		t.Skip("the browser test needs Debian's chromium (apt-get install chromium chromium-driver; .ci/run installs it): " + chromiumPath + " not found")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 6*time.Minute)
	defer cancel()
	hold := time.Second
	s, err := devstack.Start(ctx, devstack.Config{
		DataDir: t.TempDir(), NATSPort: -1, DatabaseURL: pgtest.URL(t), APIAddr: "127.0.0.1:0", APIToken: token, Pollers: 1,
		Planner: planner.Config{FirstRunDelay: 200 * time.Millisecond, Tick: 100 * time.Millisecond, FirstRunSpread: -1},
		Availability: availability.Config{Recheck: time.Second, ProbeInterval: 2 * time.Second, UnavailableAfter: 3 * time.Second,
			ProbeTimeout: 300 * time.Millisecond},
		Fleet: oltsim.FleetConfig{OLTs: []oltsim.OLTConfig{{Name: "olt-a", Listen: "127.0.0.1:0", Community: "e2e-secret-community",
			Profile: "huawei-ma5800", Shape: oltsim.Shape{Slots: 1, PortsPerSlot: 2, ONUsPerPort: 16}, Seed: 1}}},
		Alerter: alerter.Config{Tick: 100 * time.Millisecond, Rules: alerter.Rules{Global: alerter.Override{ONUDownHold: &hold}}},
	}, zerolog.New(zerolog.NewTestWriter(t)).Level(zerolog.WarnLevel))
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := s.Stop(); err != nil {
			t.Errorf("stop: %v", err)
		}
	}()
	if s.FirstAdminPassword == "" {
		t.Fatal("the stack created no first admin")
	}
	olt := s.Fleet.OLTs()[0]
	onus := olt.ONUs()
	for _, o := range onus { // a healthy OLT to start from
		if err := olt.PatchONU(o.Index, oltsim.ONUPatch{Online: ptr(true), RxPowerDBm: ptr(-20.0)}); err != nil {
			t.Fatal(err)
		}
	}
	client := &devstack.Client{BaseURL: s.APIURL, Token: token}
	ids, err := devstack.ConfigureHuawei(ctx, client, s.Fleet.OLTs(), devstack.DemoOptions{Community: "e2e-secret-community", IntervalSeconds: 10})
	if err != nil {
		t.Fatal(err)
	}
	oltID := ids[0]
	waitFor(t, "32 ONUs online in onu_data", 90*time.Second, func() (bool, string) {
		var n int
		_ = s.DB.QueryRow(ctx, `SELECT count(*) FROM onu_data WHERE olt_id = $1 AND status = 'ONLINE'`, oltID).Scan(&n)
		return n == 32, fmt.Sprint(n)
	})
	cutPONAndTwoONUs(t, olt, onus)
	waitFor(t, "the outage and the two ONU alerts firing", 90*time.Second, func() (bool, string) {
		var rules string
		_ = s.DB.QueryRow(ctx, `SELECT coalesce(string_agg(DISTINCT rule, ','), '') FROM alerts WHERE state = 'firing' AND NOT inhibited`).Scan(&rules)
		return strings.Contains(rules, "pon_outage") && strings.Contains(rules, "onu_down") && strings.Contains(rules, "onu_rx_low"), rules
	})

	browser := newBrowser(t, ctx)
	screenshotDir := screenshotFolder(t)
	if err := os.MkdirAll(screenshotDir, 0o755); err != nil {
		t.Fatal(err)
	}
	shot := func(name string) chromedp.Action {
		return chromedp.ActionFunc(func(ctx context.Context) error {
			var buf []byte
			// The first screen (1366 x 900), as PNG: small enough for docs.
			if err := chromedp.CaptureScreenshot(&buf).Do(ctx); err != nil {
				return err
			}
			return os.WriteFile(filepath.Join(screenshotDir, name+".png"), buf, 0o644)
		})
	}
	run := func(what string, actions ...chromedp.Action) {
		t.Helper()
		if err := chromedp.Run(browser, actions...); err != nil {
			var seen string
			_ = chromedp.Run(browser, chromedp.Evaluate(`document.body ? document.body.innerText.slice(0, 2000) : ""`, &seen))
			t.Fatalf("%s: %v; the page shows:\n%s", what, err, seen)
		}
	}
	// reloadUntil reloads url until the JavaScript condition holds.
	reloadUntil := func(url, cond string, within time.Duration) chromedp.Action {
		return chromedp.ActionFunc(func(ctx context.Context) error {
			deadline := time.Now().Add(within)
			for time.Now().Before(deadline) {
				var ok bool
				if err := (chromedp.Tasks{chromedp.Navigate(url), chromedp.WaitVisible(`header.top`, chromedp.ByQuery),
					chromedp.Evaluate(cond, &ok)}).Do(ctx); err != nil {
					return err
				}
				if ok {
					return nil
				}
				time.Sleep(time.Second)
			}
			return errors.New("not within " + within.String() + ": " + cond)
		})
	}
	// waitLocation waits until the page's address contains sub (a form
	// submitted navigates: the old page's context goes away meanwhile).
	waitLocation := func(sub string) chromedp.Action {
		return chromedp.ActionFunc(func(ctx context.Context) error {
			for deadline := time.Now().Add(15 * time.Second); time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
				var loc, ready string
				if chromedp.Location(&loc).Do(ctx) == nil && strings.Contains(loc, sub) &&
					chromedp.Evaluate(`document.readyState`, &ready).Do(ctx) == nil && ready == "complete" {
					return nil
				}
			}
			return errors.New("the page did not go to " + sub)
		})
	}
	rowsOf := func(sel, col string) string {
		return `[...document.querySelectorAll("` + sel + `")].map(r => r.querySelector("` + col + `").textContent.trim()).join(",")`
	}

	run("log in as the first admin",
		chromedp.Navigate(s.APIURL+"/"),
		chromedp.WaitVisible(`#username`, chromedp.ByID),
		chromedp.SendKeys(`#username`, s.FirstAdmin, chromedp.ByID),
		chromedp.SendKeys(`#password`, s.FirstAdminPassword, chromedp.ByID),
		chromedp.Click(`#login-submit`, chromedp.ByID),
		chromedp.WaitVisible(`header.top`, chromedp.ByQuery),
	)

	// The OLT page: the outage banner, one red row in the PON view (16
	// down), the other PON with its ONU alerts; the OLT available.
	var outageRows, downs, availabilityText, banner string
	run("the OLT page during the PON outage",
		reloadUntil(s.APIURL+"/olts/"+oltID, `document.querySelectorAll("#pons tr.pon.outage").length === 1 && !!document.querySelector("#outage-banner")`, time.Minute),
		chromedp.Evaluate(rowsOf("#pons tr.pon.outage", ".pon-down"), &outageRows),
		chromedp.Evaluate(rowsOf("#pons tr.pon:not(.outage)", ".pon-down"), &downs),
		chromedp.Text(`#olt-availability`, &availabilityText, chromedp.ByID),
		chromedp.Text(`#outage-banner`, &banner, chromedp.ByID),
		chromedp.ScrollIntoView(`#live-pons`, chromedp.ByID),
		shot("olt-pons"),
	)
	if outageRows != "16" || downs != "1" {
		t.Errorf("PON view: outage row down %q, other PON down %q; want 16 and 1", outageRows, downs)
	}
	if availabilityText != "available" {
		t.Errorf("availability badge %q, want available", availabilityText)
	}
	if !strings.Contains(banner, "Outage") {
		t.Errorf("outage banner %q", banner)
	}
	var red string
	run("the outage row is red",
		chromedp.Evaluate(`getComputedStyle(document.querySelector("#pons tr.pon.outage .badge")).backgroundColor`, &red))
	if red == "" || red == "rgba(0, 0, 0, 0)" {
		t.Errorf("the outage row's badge has no colour: %q", red)
	}

	// The Alerts page: the outage and the two ONU alerts (the outage's
	// ONUs grouped under it, not listed).
	var rules string
	run("the alerts page",
		chromedp.Navigate(s.APIURL+"/alerts"),
		chromedp.WaitVisible(`#alerts tr.alert`, chromedp.ByQuery),
		chromedp.Evaluate(rowsOf("#alerts tr.alert:not(.inhibited)", "td.mono"), &rules),
		shot("alerts"),
	)
	for _, r := range []string{"pon_outage", "onu_down", "onu_rx_low"} {
		if !strings.Contains(rules, r) {
			t.Errorf("alerts page rules %q, want %s", rules, r)
		}
	}
	// Filter by rule, through the filter form.
	var filtered string
	run("filter by rule",
		chromedp.SetValue(`#alert-filters input[name=rule]`, "onu_rx_low", chromedp.ByQuery),
		chromedp.Submit(`#alert-filters`, chromedp.ByQuery),
		waitLocation("rule=onu_rx_low"),
		chromedp.WaitVisible(`#alerts tr.alert`, chromedp.ByQuery),
		chromedp.Evaluate(rowsOf("#alerts tr.alert", "td.mono"), &filtered),
	)
	if filtered != "onu_rx_low" {
		t.Errorf("filtered by rule onu_rx_low: %q", filtered)
	}
	// By OLT: every row of this OLT; an unknown OLT: none.
	var olts string
	var none int
	run("filter by OLT",
		chromedp.Navigate(s.APIURL+"/alerts?olt_id="+oltID),
		chromedp.WaitVisible(`#alerts tr.alert`, chromedp.ByQuery),
		chromedp.Evaluate(`[...new Set([...document.querySelectorAll("#alerts tr.alert td:nth-child(3) a")].map(a => a.textContent.trim()))].join(",")`, &olts),
		chromedp.SetValue(`#alert-filters input[name=olt_id]`, "no-such-olt", chromedp.ByQuery),
		chromedp.Submit(`#alert-filters`, chromedp.ByQuery),
		waitLocation("olt_id=no-such-olt"),
		chromedp.WaitVisible(`#alerts`, chromedp.ByID),
		chromedp.Evaluate(`document.querySelectorAll("#alerts tr.alert").length`, &none),
	)
	if olts != oltID || none != 0 {
		t.Errorf("filtered by OLT: OLTs %q (want %s), unknown OLT %d rows", olts, oltID, none)
	}
	// Ack the low-Rx alert through its form, with a comment.
	var acked string
	run("ack through the form",
		chromedp.Navigate(s.APIURL+"/alerts?rule=onu_rx_low"),
		chromedp.WaitVisible(`#alerts tr.alert .ack-form`, chromedp.ByQuery),
		chromedp.SendKeys(`#alerts tr.alert .ack-form input[name=comment]`, "truck rolled", chromedp.ByQuery),
		chromedp.Click(`#alerts tr.alert .ack-button`, chromedp.ByQuery),
		waitLocation("msg="),
		// The ack is an event: the list shows it once projected.
		reloadUntil(s.APIURL+"/alerts?rule=onu_rx_low", `!!document.querySelector("#alerts tr.alert .ack")`, 30*time.Second),
		chromedp.Text(`#alerts tr.alert .ack`, &acked, chromedp.ByQuery),
	)
	if !strings.Contains(acked, "acked by "+s.FirstAdmin) {
		t.Errorf("after the ack: %q", acked)
	}
	var comment string
	if err := s.DB.QueryRow(ctx, `SELECT coalesce(ack_comment, '') FROM alerts WHERE rule = 'onu_rx_low' AND acked_at IS NOT NULL`).Scan(&comment); err != nil || comment != "truck rolled" {
		t.Errorf("the ack's comment in the alerts table: %q %v", comment, err)
	}
	// Silence the rule from the alert's link: the form opens with its
	// fields, a bad duration shows at the field, then the silence is
	// listed.
	var silenceRule, silenceError, silences string
	run("silence form and list",
		chromedp.Click(`#alerts tr.alert .silence-link`, chromedp.ByQuery),
		waitLocation("/silences"),
		chromedp.WaitVisible(`#silence-form`, chromedp.ByID),
		chromedp.Value(`#f-rule`, &silenceRule, chromedp.ByID),
		chromedp.SetValue(`#f-duration`, "forever", chromedp.ByID),
		chromedp.Click(`#silence-create`, chromedp.ByID),
		waitLocation("/silences"),
		chromedp.WaitVisible(`#error-duration`, chromedp.ByID),
		chromedp.Text(`#error-duration`, &silenceError, chromedp.ByID),
		chromedp.SetValue(`#f-rule`, "onu_rx_low", chromedp.ByID),
		chromedp.SetValue(`#f-olt_id`, oltID, chromedp.ByID),
		chromedp.SetValue(`#f-duration`, "2h", chromedp.ByID),
		chromedp.SetValue(`#f-comment`, "fiber repair", chromedp.ByID),
		chromedp.Click(`#silence-create`, chromedp.ByID),
		waitLocation("msg=silence+created"),
		reloadUntil(s.APIURL+"/silences", `document.querySelectorAll("#silences tr.silence").length > 0`, 30*time.Second),
		chromedp.Evaluate(`[...document.querySelectorAll("#silences tr.silence")].map(r => r.innerText.replace(/\s+/g, " ")).join(" | ")`, &silences),
	)
	if silenceRule != "onu_rx_low" {
		t.Errorf("the silence form opened from the alert has rule %q", silenceRule)
	}
	if silenceError == "" {
		t.Errorf("a bad duration shows no error at the field")
	}
	if !strings.Contains(silences, "onu_rx_low") || !strings.Contains(silences, "active") || !strings.Contains(silences, "fiber repair") {
		t.Errorf("silences list: %q", silences)
	}

	// While every run succeeds, the hour's quota can be met.
	var riskBefore bool
	run("the quota before the OLT falls silent",
		chromedp.Navigate(s.APIURL+"/quotas?olt_id="+oltID),
		chromedp.WaitVisible(`table.grid`, chromedp.ByQuery),
		chromedp.Evaluate(`[...document.querySelectorAll("table.grid .badge")].some(b => b.textContent.includes("at risk"))`, &riskBefore),
	)
	if riskBefore {
		t.Errorf("the quota is at risk while every run succeeds")
	}

	// The OLT stops answering: its badge turns unreachable, then
	// unavailable, with the error.
	olt.SetFaults(oltsim.Faults{NoAnswer: true})
	var state, availErr string
	run("the availability badge of a silent OLT",
		reloadUntil(s.APIURL+"/olts/"+oltID, `["unreachable", "unavailable"].includes((document.querySelector("#olt-availability") || {}).textContent) && !!document.querySelector("#olt-availability-error")`, time.Minute),
		chromedp.Text(`#olt-availability`, &state, chromedp.ByID),
		chromedp.Text(`#olt-availability-error`, &availErr, chromedp.ByID),
	)
	if availErr == "" || strings.Contains(availErr, "e2e-secret-community") {
		t.Errorf("availability %s with error %q", state, availErr)
	}

	// It answers again, but as a broken agent whose walks cannot go on:
	// its discovery fails, and the execution page says why. (A run that
	// timed out while it was silent may end after the switch: the one
	// looked for is the broken agent's.)
	olt.SetFaults(oltsim.Faults{OIDNotIncreasing: true})
	var execID string
	// Its next discovery waits for the probes to see it answer and for
	// the retry of the run that timed out: minutes on a loaded machine.
	waitFor(t, "a failed execution with its cause", 4*time.Minute, func() (bool, string) {
		err := s.DB.QueryRow(ctx, `SELECT id FROM executions WHERE olt_id = $1 AND status = 'FAILED' AND cause = 'oid_not_increasing' ORDER BY updated_at DESC LIMIT 1`, oltID).Scan(&execID)
		return err == nil, fmt.Sprint(err)
	})
	var cause string
	run("the execution page's cause",
		chromedp.Navigate(s.APIURL+"/executions/"+execID),
		chromedp.WaitVisible(`code.cause`, chromedp.ByQuery),
		chromedp.Text(`code.cause`, &cause, chromedp.ByQuery),
	)
	if cause != "oid_not_increasing" {
		t.Errorf("execution %s: cause %q, want oid_not_increasing", execID, cause)
	}

	// The hour's quota cannot be met any more: at risk.
	run("the quota risk badge",
		reloadUntil(s.APIURL+"/quotas?olt_id="+oltID, `[...document.querySelectorAll("table.grid .badge")].some(b => b.textContent.includes("at risk"))`, 2*time.Minute),
	)

	// The ONUs a GET run could not read whole, listed on its execution
	// page. The simulator cannot fail one ONU alone, so this run is a row
	// of the executions read model as the projector writes it.
	if _, err := s.DB.Exec(ctx, `INSERT INTO executions (id, job_id, olt_id, status, attempt, varbinds, onus, failed_onus, failed_varbinds, onu_failures)
		VALUES ('browser-get-1', 'huawei-ma5800-optical', $1, 'SUCCESS', 1, 64, 32, 1, 2, $2)`, oltID,
		`[{"instance":"4194304000.7","pon_index":4194304000,"onu_id":7,"oids":["1.3.6.1.4.1.2011.6.128.1.1.2.51.1.4.4194304000.7","1.3.6.1.4.1.2011.6.128.1.1.2.51.1.6.4194304000.7"],"error":"request timeout"}]`); err != nil {
		t.Fatal(err)
	}
	var failures int
	var failureText string
	run("the execution page's per-ONU failures",
		chromedp.Navigate(s.APIURL+"/executions/browser-get-1"),
		chromedp.WaitVisible(`#onu-failures`, chromedp.ByID),
		chromedp.Evaluate(`document.querySelectorAll("#onu-failures + table tbody tr").length`, &failures),
		chromedp.Evaluate(`document.querySelector("#onu-failures + table").innerText`, &failureText),
	)
	if failures != 1 || !strings.Contains(failureText, "request timeout") || !strings.Contains(failureText, "4194304000.7") {
		t.Errorf("per-ONU failures: %d rows %q", failures, failureText)
	}
}

// newBrowser starts headless Chromium for a test; it is closed when the
// test ends.
func newBrowser(t *testing.T, ctx context.Context) context.Context {
	t.Helper()
	alloc, cancelAlloc := chromedp.NewExecAllocator(ctx,
		chromedp.ExecPath(chromiumPath),
		chromedp.Headless, chromedp.NoSandbox, chromedp.DisableGPU, chromedp.NoFirstRun, chromedp.NoDefaultBrowserCheck,
		chromedp.Flag("disable-background-networking", true), chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true), chromedp.WindowSize(1366, 900),
		chromedp.UserDataDir(t.TempDir()),
	)
	browser, cancelBrowser := chromedp.NewContext(alloc)
	t.Cleanup(func() { cancelBrowser(); cancelAlloc() })
	return browser
}
