// Command ociimage writes Facho's container image as an OCI image layout
// in a tar file (an "oci-archive": `podman load -i`, `docker load -i`,
// `skopeo copy oci-archive:...`), without a daemon and byte for byte the
// same for the same inputs: every file has uid/gid and mtime fixed
// (SOURCE_DATE_EPOCH), entries are sorted, gzip has no name or time.
//
// Data flow: static binaries (deploy/release builds them with CGO off)
// → one layer (/usr/bin/*, /etc/passwd with the non-root user facho,
// /var/lib/facho, /tmp, the CA bundle) → image config (entrypoint, user,
// labels) → manifest → index.json → tar.
package main

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"
)

// UID and GID of the image's non-root user facho.
const (
	UID = 65532
	GID = 65532
)

// Config is what the image is built from.
type Config struct {
	BinDir   string // every regular file in it goes to /usr/bin
	CABundle string // optional: copied to /etc/ssl/certs/ca-certificates.crt
	Name     string // image name, e.g. facho
	Version  string
	Commit   string
	Created  time.Time // also every file's mtime
	Source   string    // org.opencontainers.image.source
	Arch     string    // GOARCH, e.g. amd64
}

// Validate says what is missing.
func (c Config) Validate() error {
	var errs []error
	if c.BinDir == "" {
		errs = append(errs, errors.New("-bin: the folder of the binaries is required"))
	}
	if c.Name == "" || strings.ContainsAny(c.Name, ": /") {
		errs = append(errs, fmt.Errorf("-name %q: want a bare image name", c.Name))
	}
	if c.Version == "" {
		errs = append(errs, errors.New("-version is required"))
	}
	if c.Arch == "" {
		errs = append(errs, errors.New("-arch is required"))
	}
	return errors.Join(errs...)
}

func main() {
	if err := run(os.Args[1:], os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "ociimage:", err)
		os.Exit(1)
	}
}

func run(args []string, stderr io.Writer) error {
	fs := flag.NewFlagSet("ociimage", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var c Config
	var out string
	var epoch int64
	fs.StringVar(&c.BinDir, "bin", "", "folder of the static binaries (all go to /usr/bin)")
	fs.StringVar(&c.CABundle, "ca-bundle", "", "CA certificates bundle for TLS to NATS and Postgres (optional)")
	fs.StringVar(&c.Name, "name", "facho", "image name")
	fs.StringVar(&c.Version, "version", "", "image version (tag)")
	fs.StringVar(&c.Commit, "commit", "", "git commit (label org.opencontainers.image.revision)")
	fs.StringVar(&c.Source, "source", "", "project URL (label org.opencontainers.image.source)")
	fs.StringVar(&c.Arch, "arch", "amd64", "architecture (GOARCH)")
	fs.Int64Var(&epoch, "source-date-epoch", 0, "creation time and every file's mtime, seconds since 1970 (SOURCE_DATE_EPOCH)")
	fs.StringVar(&out, "out", "", "the OCI archive to write")
	if err := fs.Parse(args); err != nil {
		return err
	}
	c.Created = time.Unix(epoch, 0).UTC()
	if out == "" {
		return errors.New("-out is required")
	}
	if err := c.Validate(); err != nil {
		return err
	}
	f, err := os.Create(out)
	if err != nil {
		return fmt.Errorf("create %s: %w", out, err)
	}
	if err := Write(f, c); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("close %s: %w", out, err)
	}
	return nil
}

// file is one entry of the layer.
type file struct {
	path string // without leading slash
	mode int64
	uid  int
	dir  bool
	data []byte
}

// layerFiles lists the layer's files, sorted by path.
func layerFiles(c Config) ([]file, error) {
	files := []file{
		{path: "etc/", mode: 0o755, dir: true},
		{path: "etc/passwd", mode: 0o644, data: []byte(fmt.Sprintf("root:x:0:0:root:/root:/sbin/nologin\nfacho:x:%d:%d:facho:/var/lib/facho:/sbin/nologin\n", UID, GID))},
		{path: "etc/group", mode: 0o644, data: []byte(fmt.Sprintf("root:x:0:\nfacho:x:%d:\n", GID))},
		{path: "tmp/", mode: 0o1777, dir: true},
		{path: "usr/", mode: 0o755, dir: true},
		{path: "usr/bin/", mode: 0o755, dir: true},
		{path: "var/", mode: 0o755, dir: true},
		{path: "var/lib/", mode: 0o755, dir: true},
		{path: "var/lib/facho/", mode: 0o750, dir: true, uid: UID},
		// compose mounts the NATS keys volume here: a new volume takes
		// the owner of the image's folder, so the user facho writes it.
		{path: "var/lib/facho/keys/", mode: 0o700, dir: true, uid: UID},
	}
	entries, err := os.ReadDir(c.BinDir)
	if err != nil {
		return nil, fmt.Errorf("read binaries: %w", err)
	}
	bins := 0
	for _, e := range entries {
		if !e.Type().IsRegular() {
			continue
		}
		data, err := os.ReadFile(filepath.Join(c.BinDir, e.Name()))
		if err != nil {
			return nil, fmt.Errorf("read binary: %w", err)
		}
		files = append(files, file{path: "usr/bin/" + e.Name(), mode: 0o755, data: data})
		bins++
	}
	if bins == 0 {
		return nil, fmt.Errorf("no binaries in %s", c.BinDir)
	}
	if c.CABundle != "" {
		data, err := os.ReadFile(c.CABundle)
		if err != nil {
			return nil, fmt.Errorf("read CA bundle: %w", err)
		}
		files = append(files,
			file{path: "etc/ssl/", mode: 0o755, dir: true},
			file{path: "etc/ssl/certs/", mode: 0o755, dir: true},
			file{path: "etc/ssl/certs/ca-certificates.crt", mode: 0o644, data: data})
	}
	sort.Slice(files, func(i, j int) bool { return files[i].path < files[j].path })
	return files, nil
}

// layer returns the uncompressed and gzipped layer.
func layer(c Config) (raw, gz []byte, err error) {
	files, err := layerFiles(c)
	if err != nil {
		return nil, nil, err
	}
	var tb bytes.Buffer
	tw := tar.NewWriter(&tb)
	for _, f := range files {
		h := &tar.Header{Name: f.path, Mode: f.mode, Uid: f.uid, Gid: f.uid, ModTime: c.Created, Format: tar.FormatPAX}
		if f.dir {
			h.Typeflag = tar.TypeDir
		} else {
			h.Typeflag = tar.TypeReg
			h.Size = int64(len(f.data))
		}
		if err := tw.WriteHeader(h); err != nil {
			return nil, nil, fmt.Errorf("layer %s: %w", f.path, err)
		}
		if _, err := tw.Write(f.data); err != nil {
			return nil, nil, fmt.Errorf("layer %s: %w", f.path, err)
		}
	}
	if err := tw.Close(); err != nil {
		return nil, nil, fmt.Errorf("layer: %w", err)
	}
	var gb bytes.Buffer
	zw, err := gzip.NewWriterLevel(&gb, gzip.DefaultCompression)
	if err != nil {
		return nil, nil, err
	}
	if _, err := zw.Write(tb.Bytes()); err != nil {
		return nil, nil, fmt.Errorf("compress layer: %w", err)
	}
	if err := zw.Close(); err != nil {
		return nil, nil, fmt.Errorf("compress layer: %w", err)
	}
	return tb.Bytes(), gb.Bytes(), nil
}

// Media types of the OCI image specification.
const (
	MediaIndex    = "application/vnd.oci.image.index.v1+json"
	MediaManifest = "application/vnd.oci.image.manifest.v1+json"
	MediaConfig   = "application/vnd.oci.image.config.v1+json"
	MediaLayer    = "application/vnd.oci.image.layer.v1.tar+gzip"
)

// Descriptor points at a blob.
type Descriptor struct {
	MediaType   string            `json:"mediaType"`
	Digest      string            `json:"digest"`
	Size        int64             `json:"size"`
	Annotations map[string]string `json:"annotations,omitempty"`
}

// ImageConfig is the part of the image configuration a runtime executes.
type ImageConfig struct {
	User       string            `json:"User"`
	Env        []string          `json:"Env"`
	Entrypoint []string          `json:"Entrypoint"`
	Cmd        []string          `json:"Cmd"`
	WorkingDir string            `json:"WorkingDir"`
	Labels     map[string]string `json:"Labels"`
}

// Image is the image configuration blob.
type Image struct {
	Created      string      `json:"created"`
	Architecture string      `json:"architecture"`
	OS           string      `json:"os"`
	Config       ImageConfig `json:"config"`
	RootFS       struct {
		Type    string   `json:"type"`
		DiffIDs []string `json:"diff_ids"`
	} `json:"rootfs"`
}

// Manifest is the image manifest blob.
type Manifest struct {
	SchemaVersion int               `json:"schemaVersion"`
	MediaType     string            `json:"mediaType"`
	Config        Descriptor        `json:"config"`
	Layers        []Descriptor      `json:"layers"`
	Annotations   map[string]string `json:"annotations,omitempty"`
}

// Index is index.json.
type Index struct {
	SchemaVersion int          `json:"schemaVersion"`
	MediaType     string       `json:"mediaType"`
	Manifests     []Descriptor `json:"manifests"`
}

func digest(b []byte) string {
	s := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(s[:])
}

// Labels returns the image's labels (org.opencontainers.image.*).
func Labels(c Config) map[string]string {
	l := map[string]string{
		"org.opencontainers.image.title":       c.Name,
		"org.opencontainers.image.description": "Facho: GPON OLT polling over SNMP, event-sourced on NATS JetStream with Postgres read models. Every Facho binary is in /usr/bin; the entrypoint is the facho CLI, services run with --entrypoint /usr/bin/facho-<service>.",
		"org.opencontainers.image.version":     c.Version,
		"org.opencontainers.image.revision":    c.Commit,
		"org.opencontainers.image.created":     c.Created.Format(time.RFC3339),
	}
	if c.Source != "" {
		l["org.opencontainers.image.source"] = c.Source
	}
	return l
}

// Write writes the OCI archive of the image to w.
func Write(w io.Writer, c Config) error {
	raw, gz, err := layer(c)
	if err != nil {
		return err
	}
	var img Image
	img.Created = c.Created.Format(time.RFC3339)
	img.Architecture, img.OS = c.Arch, "linux"
	img.Config = ImageConfig{
		User:       strconv.Itoa(UID) + ":" + strconv.Itoa(GID),
		Env:        []string{"PATH=/usr/bin", "SSL_CERT_FILE=/etc/ssl/certs/ca-certificates.crt"},
		Entrypoint: []string{"/usr/bin/facho"},
		Cmd:        []string{"version"},
		WorkingDir: "/var/lib/facho",
		Labels:     Labels(c),
	}
	img.RootFS.Type = "layers"
	img.RootFS.DiffIDs = []string{digest(raw)}
	cfg, err := json.Marshal(img)
	if err != nil {
		return fmt.Errorf("image config: %w", err)
	}
	man, err := json.Marshal(Manifest{
		SchemaVersion: 2,
		MediaType:     MediaManifest,
		Config:        Descriptor{MediaType: MediaConfig, Digest: digest(cfg), Size: int64(len(cfg))},
		Layers:        []Descriptor{{MediaType: MediaLayer, Digest: digest(gz), Size: int64(len(gz))}},
	})
	if err != nil {
		return fmt.Errorf("manifest: %w", err)
	}
	ref := c.Name + ":" + c.Version
	idx, err := json.Marshal(Index{
		SchemaVersion: 2,
		MediaType:     MediaIndex,
		Manifests: []Descriptor{{
			MediaType: MediaManifest, Digest: digest(man), Size: int64(len(man)),
			Annotations: map[string]string{
				// podman and skopeo name the image after ref.name,
				// docker and containerd after io.containerd.image.name.
				"org.opencontainers.image.ref.name": ref,
				"io.containerd.image.name":          ref,
			},
		}},
	})
	if err != nil {
		return fmt.Errorf("index: %w", err)
	}
	tw := tar.NewWriter(w)
	add := func(name string, data []byte) error {
		h := &tar.Header{Name: name, Mode: 0o644, Size: int64(len(data)), ModTime: c.Created, Typeflag: tar.TypeReg, Format: tar.FormatPAX}
		if err := tw.WriteHeader(h); err != nil {
			return fmt.Errorf("archive %s: %w", name, err)
		}
		if _, err := tw.Write(data); err != nil {
			return fmt.Errorf("archive %s: %w", name, err)
		}
		return nil
	}
	blob := func(b []byte) string { return "blobs/sha256/" + strings.TrimPrefix(digest(b), "sha256:") }
	for _, dir := range []string{"blobs/", "blobs/sha256/"} {
		if err := tw.WriteHeader(&tar.Header{Name: dir, Mode: 0o755, ModTime: c.Created, Typeflag: tar.TypeDir, Format: tar.FormatPAX}); err != nil {
			return fmt.Errorf("archive %s: %w", dir, err)
		}
	}
	for _, e := range []struct {
		name string
		data []byte
	}{
		{"oci-layout", []byte(`{"imageLayoutVersion":"1.0.0"}`)},
		{"index.json", idx},
		{blob(man), man},
		{blob(cfg), cfg},
		{blob(gz), gz},
	} {
		if err := add(e.name, e.data); err != nil {
			return err
		}
	}
	if err := tw.Close(); err != nil {
		return fmt.Errorf("archive: %w", err)
	}
	return nil
}
