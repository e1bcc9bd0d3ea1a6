package natsauth

import (
	"strings"
	"testing"
)

func TestIntegratorValidation(t *testing.T) {
	for _, tc := range []struct {
		name     string
		durables []string
		want     string // error substring; "" for none
		durs     string
	}{
		{"acme", nil, "", "acme-1,acme-2,acme-3,acme-4"},
		{"acme", []string{"billing", "acme-crm", "billing"}, "", "acme-billing,acme-crm"},
		{"Acme", nil, "integrator name", ""},
		{"a.b", nil, "integrator name", ""},
		{"", nil, "integrator name", ""},
		{strings.Repeat("a", 33), nil, "integrator name", ""},
		{"acme", []string{"x.y"}, "durable", ""},
		{"acme", []string{"*"}, "durable", ""},
		{"projector", []string{"config"}, "Facho's own", ""},
		{"projector", []string{"mine"}, "", "projector-mine"},
		{"acme", make([]string, 33), "at most", ""},
	} {
		id, err := Integrator(tc.name, tc.durables)
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("Integrator(%q, %v): %v", tc.name, tc.durables, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("Integrator(%q, %v): %v, want an error with %q", tc.name, tc.durables, err, tc.want)
		case tc.want == "" && strings.Join(id.Durables, ",") != tc.durs:
			t.Errorf("Integrator(%q, %v): durables %v, want %s", tc.name, tc.durables, id.Durables, tc.durs)
		}
	}
}

// What the people's identities may publish, as the server decides it.
func TestPeoplePermissions(t *testing.T) {
	acme, err := Integrator("acme", nil)
	if err != nil {
		t.Fatal(err)
	}
	all := append(Table(), acme)
	perm := func(id Identity) Permissions {
		p, err := id.PermissionsAmong(all)
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	observer, _ := Lookup(Observer)
	operator, _ := Lookup(Operator)
	poller, _ := Lookup(Poller)
	for _, tc := range []struct {
		id      Identity
		subject string
		want    bool
	}{
		{observer, "$JS.API.STREAM.LIST", true},
		{observer, "$JS.API.STREAM.NAMES", true},
		{observer, "$JS.API.CONSUMER.LIST.FACHO_ONU", true},
		{observer, "$JS.API.CONSUMER.INFO.FACHO_ONU.acme-1", true},
		{observer, "$JS.API.CONSUMER.CREATE.FACHO_ONU.x_1", true}, // an ordered consumer
		{observer, "$JS.API.CONSUMER.DELETE.FACHO_ONU.x_1", false},
		{observer, "$JS.API.CONSUMER.DELETE.FACHO_ONU.acme-1", false},
		{observer, "$JS.API.CONSUMER.CREATE.FACHO_ONU.acme-1", false},
		{observer, "$JS.API.CONSUMER.MSG.NEXT.FACHO_ONU.acme-1", false},
		{observer, "$JS.API.STREAM.LEADER.STEPDOWN.FACHO_ONU", false},
		{operator, "$JS.API.STREAM.LEADER.STEPDOWN.FACHO_ONU", true},
		{operator, "$JS.API.CONSUMER.LEADER.STEPDOWN.FACHO_ONU.acme-1", true},
		{operator, "$JS.API.CONSUMER.DELETE.FACHO_DLQ.x_1", false},
		{operator, "$JS.API.STREAM.PURGE.FACHO_DLQ", false},
		{operator, "facho.dlq.projector-varbinds", false},
		{acme, "$JS.API.CONSUMER.CREATE.FACHO_ONU.acme-1", true},
		{acme, "$JS.API.CONSUMER.CREATE.FACHO_ALERT.acme-4.facho.alert.>", true},
		{acme, "$JS.API.CONSUMER.DELETE.FACHO_NOTIFY.acme-2", true},
		{acme, "$JS.API.CONSUMER.MSG.NEXT.FACHO_ONU.acme-1", true},
		{acme, "$JS.ACK.FACHO_ONU.acme-1.1.2.3.4.5", true},
		{acme, "$JS.API.STREAM.INFO.FACHO_ONU", true},
		{acme, "$JS.API.STREAM.INFO.FACHO_CONFIG", false},
		{acme, "$JS.API.CONSUMER.CREATE.FACHO_CONFIG.acme-1", false},
		{acme, "$JS.API.CONSUMER.CREATE.FACHO_ONU.acme-5", false},
		{acme, "$JS.API.CONSUMER.CREATE.FACHO_ONU", false},
		{acme, "$JS.API.CONSUMER.DURABLE.CREATE.FACHO_ONU.acme-1", false},
		{acme, "$JS.API.STREAM.LIST", false},
		{acme, "facho.onu.olt-1.discovered", false},
		{poller, "$JS.API.CONSUMER.DELETE.FACHO_ONU.acme-1", false},
		{poller, "$JS.API.CONSUMER.DELETE.FACHO_ONU.x_1", true}, // its own scans
	} {
		if got := mayPublish(perm(tc.id), tc.subject); got != tc.want {
			t.Errorf("%s may publish %s: %v, want %v", tc.id.Name, tc.subject, got, tc.want)
		}
	}
	if p := perm(operator); !contains(p.SubscribeAllow, "$JS.EVENT.>") || contains(perm(observer).SubscribeAllow, "$JS.EVENT.>") {
		t.Error("advisories: the operator's only")
	}
	if p := perm(acme); len(p.SubscribeAllow) != 1 || p.SubscribeAllow[0] != "_INBOX_integrator_acme.>" {
		t.Errorf("acme subscribes to %v, want its inbox only", p.SubscribeAllow)
	}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
