package api_test

import (
	"context"
	"net/http"
	"testing"

	"github.com/facho-olt/facho/services/api/apiclient"
)

func ptr[T any](v T) *T { return &v }

// The Go client generated from the OpenAPI document with oapi-codegen
// (apiclient) compiles and talks to a running API: who am I, the vendor
// profiles, a brand created and read back, an OLT created and read back
// with its typed fields, and a typed 404.
func TestGeneratedClientCallsTheAPI(t *testing.T) {
	f := setup(t)
	ctx := context.Background()
	c, err := apiclient.NewClientWithResponses(f.srv.URL, apiclient.WithRequestEditorFn(func(_ context.Context, r *http.Request) error {
		r.Header.Set("Authorization", "Bearer "+token)
		return nil
	}))
	if err != nil {
		t.Fatal(err)
	}

	me, err := c.GetMeWithResponse(ctx)
	if err != nil || me.JSON200 == nil {
		t.Fatalf("me: %v %v", err, me.Status())
	}
	if me.JSON200.Role != "admin" || me.JSON200.Via != "static-token" {
		t.Errorf("me = %+v", *me.JSON200)
	}

	profiles, err := c.GetVendorProfilesWithResponse(ctx)
	if err != nil || profiles.JSON200 == nil || profiles.JSON200.Profiles == nil {
		t.Fatalf("vendor profiles: %v %s", err, profiles.Body)
	}
	found := false
	for _, p := range *profiles.JSON200.Profiles {
		found = found || p.Id == "huawei-ma5800"
	}
	if int(profiles.JSON200.Count) != len(*profiles.JSON200.Profiles) || !found {
		t.Errorf("vendor profiles: count %d, huawei-ma5800 listed %v", profiles.JSON200.Count, found)
	}

	brand, err := c.PostBrandsWithResponse(ctx, apiclient.PostBrandsJSONRequestBody{Id: ptr("huawei"), Name: ptr("Huawei"), IndexScheme: ptr("pon.onu")})
	if err != nil || brand.JSON201 == nil {
		t.Fatalf("create brand: %v %s", err, brand.Body)
	}
	if got, err := c.GetBrandsIdWithResponse(ctx, "huawei"); err != nil || got.JSON200 == nil || got.JSON200.Name != "Huawei" {
		t.Errorf("get brand: %v %s", err, got.Body)
	}

	created, err := c.PostOltsWithResponse(ctx, apiclient.PostOltsJSONRequestBody{Id: ptr("olt-a"), Name: ptr("OLT A"), Ip: ptr("192.0.2.1"),
		Port: ptr(int64(161)), Community: ptr("s3cr3t-community"), BrandId: ptr("huawei")})
	if err != nil || created.JSON201 == nil {
		t.Fatalf("create OLT: %v %s", err, created.Body)
	}
	view, err := created.JSON201.AsOltView()
	if err != nil || view.Id != "olt-a" || view.Port != 161 || !view.Enabled {
		t.Errorf("created OLT: %+v %v", view, err)
	}
	olt, err := c.GetOltsIdWithResponse(ctx, "olt-a")
	if err != nil || olt.JSON200 == nil {
		t.Fatalf("get OLT: %v %s", err, olt.Body)
	}
	if olt.JSON200.Ip != "192.0.2.1" || olt.JSON200.BrandId != "huawei" || olt.JSON200.Availability != nil {
		t.Errorf("OLT = %+v", *olt.JSON200)
	}

	missing, err := c.GetOltsIdWithResponse(ctx, "nope")
	if err != nil || missing.StatusCode() != http.StatusNotFound || missing.JSON404 == nil || missing.JSON404.Error == "" {
		t.Errorf("unknown OLT: %v %d %s", err, missing.StatusCode(), missing.Body)
	}
}
