package alerter

import (
	"strings"
	"testing"
	"time"

	"github.com/facho-olt/facho/streams"
)

func TestConfigValidate(t *testing.T) {
	nan := -100.0
	for _, c := range []struct {
		name string
		cfg  Config
		want string
	}{
		{"defaults", Config{}, ""},
		{"two alertmanagers", Config{AlertmanagerURLs: ParseURLs("http://am-1:9093, http://am-2:9093/")}, ""},
		{"bad alertmanager url", Config{AlertmanagerURLs: []string{"am-1:9093"}}, "alertmanager URL"},
		{"password not echoed", Config{AlertmanagerURLs: []string{"ftp://user:s3cret@am/"}}, "alertmanager URL"},
		{"tick too short", Config{Tick: time.Millisecond}, "tick"},
		{"group too big", Config{GroupMessages: 100000}, "group messages"},
		{"bad rules", Config{Rules: Rules{Defaults: Override{ONURxLowDBm: &nan}}}, "alert rules"},
	} {
		err := c.cfg.WithDefaults().Validate()
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%s: %v", c.name, err)
		case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
			t.Errorf("%s: %v, want an error about %s", c.name, err, c.want)
		case err != nil && strings.Contains(err.Error(), "s3cret"):
			t.Errorf("%s: the error shows the password: %v", c.name, err)
		}
	}
}

// Alertmanager gets the documented labels, none empty.
func TestToAM(t *testing.T) {
	pon, onu, v := int64(4194304000), int64(7), -31.5
	end := t0.Add(time.Hour)
	a := toAM(streams.Alert{ID: "abc", Key: "k", Rule: streams.RuleONURxLow, Severity: streams.SeverityWarning, OLTID: "olt-1", OLTName: "Norte",
		PonIndex: &pon, Pon: "0/1/3", ONUID: &onu, Serial: "HWTC00000007", Summary: "low", Value: &v, Unit: "dBm", StartsAt: t0, EndsAt: &end})
	want := map[string]string{"alertname": "onu_rx_low", "severity": "warning", "olt_id": "olt-1", "olt_name": "Norte", "pon": "0/1/3", "onu_id": "7", "serial": "HWTC00000007"}
	if len(a.Labels) != len(want) {
		t.Errorf("labels %v, want %v", a.Labels, want)
	}
	for k, v := range want {
		if a.Labels[k] != v {
			t.Errorf("label %s = %q, want %q", k, a.Labels[k], v)
		}
	}
	if a.Annotations["summary"] != "low" || a.Annotations["value"] != "-31.5 dBm" || a.EndsAt == nil || !a.StartsAt.Equal(t0) {
		t.Errorf("alert %+v", a)
	}
}
