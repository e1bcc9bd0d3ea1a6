package secret

import (
	"strings"
	"testing"
)

func TestSealOpen(t *testing.T) {
	k, err := NewKey()
	if err != nil {
		t.Fatal(err)
	}
	key, err := ParseKey(k)
	if err != nil {
		t.Fatal(err)
	}
	box, err := NewBox(key)
	if err != nil {
		t.Fatal(err)
	}
	sealed, err := box.Seal("s3cr3t-community")
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(sealed, "s3cr3t") {
		t.Fatalf("sealed value leaks plaintext: %s", sealed)
	}
	got, err := box.Open(sealed)
	if err != nil || got != "s3cr3t-community" {
		t.Fatalf("open = %q, %v", got, err)
	}
	other, _ := NewKey()
	okey, _ := ParseKey(other)
	obox, _ := NewBox(okey)
	if _, err := obox.Open(sealed); err == nil {
		t.Fatal("open with another key succeeded")
	}
	for _, bad := range []string{"", "public", "v1:!!", "v1:AAAA"} {
		if _, err := box.Open(bad); err == nil {
			t.Errorf("open(%q) succeeded", bad)
		}
	}
}

func TestParseKey(t *testing.T) {
	for _, tc := range []struct {
		in string
		ok bool
	}{{"", false}, {"notbase64!", false}, {"AAAA", false}, {strings.Repeat("A", 43) + "=", true}} {
		_, err := ParseKey(tc.in)
		if (err == nil) != tc.ok {
			t.Errorf("ParseKey(%q) err=%v, want ok=%v", tc.in, err, tc.ok)
		}
	}
}

func TestRotation(t *testing.T) {
	oldText, _ := NewKey()
	newText, _ := NewKey()
	oldKey, _ := ParseKey(oldText)
	oldBox, _ := NewBox(oldKey)
	sealedOld, err := oldBox.Seal("s3cret-community")
	if err != nil {
		t.Fatal(err)
	}
	env := map[string]string{EnvKey: newText, EnvOldKeys: " , " + oldText}
	box, err := BoxFromEnv(func(k string) string { return env[k] })
	if err != nil {
		t.Fatal(err)
	}
	if box.SealedWithCurrent(sealedOld) {
		t.Error("an old value reported sealed with the current key")
	}
	if pt, err := box.Open(sealedOld); err != nil || pt != "s3cret-community" {
		t.Fatalf("open old value: %q %v", pt, err)
	}
	resealed, err := box.Reseal(sealedOld)
	if err != nil || !box.SealedWithCurrent(resealed) {
		t.Fatalf("reseal: %v", err)
	}
	if _, err := oldBox.Open(resealed); err == nil {
		t.Error("the old key opens a resealed value")
	}
	newOnly, _ := BoxFromEnv(func(k string) string { return map[string]string{EnvKey: newText}[k] })
	if _, err := newOnly.Open(sealedOld); err == nil {
		t.Error("the new key alone opens an old value")
	}
	if _, err := BoxFromEnv(func(k string) string { return map[string]string{EnvKey: newText, EnvOldKeys: "bad"}[k] }); err == nil || strings.Contains(err.Error(), newText) {
		t.Errorf("bad old key: %v", err)
	}
}
