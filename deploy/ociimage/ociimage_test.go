package main

import (
	"archive/tar"
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func testConfig(t *testing.T) Config {
	t.Helper()
	dir := t.TempDir()
	for name, body := range map[string]string{"facho": "cli", "facho-api": "api"} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return Config{BinDir: dir, Name: "facho", Version: "1.2.3", Commit: "abc", Arch: "amd64", Created: time.Unix(1700000000, 0).UTC()}
}

// The same inputs give the same bytes, whatever the files' times on disk.
func TestWriteReproducible(t *testing.T) {
	c := testConfig(t)
	var a, b bytes.Buffer
	if err := Write(&a, c); err != nil {
		t.Fatal(err)
	}
	later := time.Now().Add(time.Hour)
	if err := os.Chtimes(filepath.Join(c.BinDir, "facho"), later, later); err != nil {
		t.Fatal(err)
	}
	if err := Write(&b, c); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(a.Bytes(), b.Bytes()) {
		t.Error("two builds of the same inputs differ")
	}
	c.Version = "1.2.4"
	var d bytes.Buffer
	if err := Write(&d, c); err != nil {
		t.Fatal(err)
	}
	if bytes.Equal(a.Bytes(), d.Bytes()) {
		t.Error("another version gave the same archive")
	}
	// The archive is an OCI layout.
	names := map[string]bool{}
	tr := tar.NewReader(&a)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if !h.ModTime.Equal(c.Created) {
			t.Errorf("%s: mtime %v", h.Name, h.ModTime)
		}
		names[h.Name] = true
	}
	blobs := 0
	for n := range names {
		if strings.HasPrefix(n, "blobs/sha256/") && len(n) == len("blobs/sha256/")+64 {
			blobs++
		}
	}
	if !names["oci-layout"] || !names["index.json"] || blobs != 3 {
		t.Errorf("archive entries %v: want oci-layout, index.json and 3 blobs", names)
	}
}

func TestValidate(t *testing.T) {
	for _, tc := range []struct {
		name    string
		change  func(*Config)
		wantErr string
	}{
		{name: "ok", change: func(*Config) {}},
		{name: "no binaries folder", change: func(c *Config) { c.BinDir = "" }, wantErr: "-bin"},
		{name: "name with tag", change: func(c *Config) { c.Name = "facho:1" }, wantErr: "bare image name"},
		{name: "no version", change: func(c *Config) { c.Version = "" }, wantErr: "-version"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := testConfig(t)
			tc.change(&c)
			err := c.Validate()
			if tc.wantErr == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("Validate = %v, want %q", err, tc.wantErr)
			}
		})
	}
	c := testConfig(t)
	c.BinDir = t.TempDir()
	if err := Write(io.Discard, c); err == nil || !strings.Contains(err.Error(), "no binaries") {
		t.Errorf("Write without binaries: %v", err)
	}
}
