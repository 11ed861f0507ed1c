// Package charts prepares the pinned OpenShell Helm charts for `occ dev up`, with the Helm v3
// SDK and no helm binary: it packages the Gateway and Workspace charts extracted from the
// verified source archive (version and appVersion set from the pin), renders the Workspace
// chart once into the namespace-scoped objects the Installation carries as
// operatorWorkspaceResources, and builds the Gateway chart's values.
package charts

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/chartutil"

	"github.com/openclaw/occ/internal/contract"
	"github.com/openclaw/occ/internal/occdev/pins"
)

// Fixed names of the development install, the ones OpenShell's charts and OCE's launcher use.
const (
	// GatewayRelease is the Gateway's Helm release name and fullname override, so the Service,
	// StatefulSet and ServiceAccount are all "openshell-gateway".
	GatewayRelease = "openshell-gateway"
	// GatewayServiceAccount is the Gateway's ServiceAccount; workspace RoleBindings name it.
	GatewayServiceAccount = "openshell-gateway"
	// SandboxServiceAccount is the ServiceAccount sandbox Pods run as in every workspace.
	SandboxServiceAccount = "openshell-sandbox"
	// RuntimeClassName is the RuntimeClass sandbox Pods get by default.
	RuntimeClassName = "openshell-sandbox"
	// OperatorNamespaceSelector is the label selector through which the Gateway discovers the
	// workspace namespaces OCE prepares (operator workspace mode).
	OperatorNamespaceSelector = contract.OperatorWorkspaceSelector
	// WorkspaceRelease names the Workspace chart render, and so its objects.
	WorkspaceRelease = "openshell-workspace"
	// WorkspaceTemplateNamespace is the release namespace of the one-off render. It never
	// exists: namespaces are stripped from the rendered objects, and the driver places them in
	// each workspace namespace.
	WorkspaceTemplateNamespace = "openclaw-workspace-template"
)

// Charts are the two pinned charts, packaged and loaded.
type Charts struct {
	// Gateway is the OpenShell Gateway chart, ready for action.Install.
	Gateway *chart.Chart
	// GatewayPackage is the packaged Gateway chart (.tgz), or the selected local chart (a
	// directory or a .tgz).
	GatewayPackage string
	// Workspace is the per-namespace resources chart, for RenderWorkspace.
	Workspace *chart.Chart
	// WorkspacePackage is the packaged Workspace chart (.tgz), or the selected local chart.
	WorkspacePackage string
}

// PackageOptions say where the extracted charts are and where the packages go.
type PackageOptions struct {
	// Pins gives the chart paths and the version stamped on both charts.
	Pins *pins.Set
	// SourceDir is the extraction directory (artifacts.ExtractHelm's dest); chart paths from
	// the pins are relative to it.
	SourceDir string
	// OutputDir receives <name>-<version>.tgz for each chart; it is created 0700 if missing.
	OutputDir string
}

// The permission bits of what Package writes: a private directory of private packages.
const (
	packagedDirMode  fs.FileMode = 0o700
	packagedFileMode fs.FileMode = 0o600
)

// Package loads both charts from the extracted tree, sets version and appVersion to the pinned
// OpenShell version (the charts in git carry placeholders; upstream release CI rewrites them
// the same way), saves them as .tgz packages and loads the packages back, so what is returned
// is exactly what a later install reads.
func Package(o PackageOptions) (*Charts, error) {
	if o.Pins == nil {
		return nil, fmt.Errorf("package OpenShell charts: no pins given")
	}
	if err := os.MkdirAll(o.OutputDir, packagedDirMode); err != nil {
		return nil, fmt.Errorf("package OpenShell charts: create %s: %w", o.OutputDir, err)
	}
	version := o.Pins.OpenShell.Version
	out := &Charts{}
	var err error
	if out.Gateway, out.GatewayPackage, err = packageOne("Gateway", filepath.Join(o.SourceDir, filepath.FromSlash(o.Pins.OpenShell.Charts.Gateway)), version, o.OutputDir); err != nil {
		return nil, err
	}
	if out.Workspace, out.WorkspacePackage, err = packageOne("Workspace", filepath.Join(o.SourceDir, filepath.FromSlash(o.Pins.OpenShell.Charts.Workspace)), version, o.OutputDir); err != nil {
		return nil, err
	}
	return out, nil
}

func packageOne(what, dir, version, outDir string) (*chart.Chart, string, error) {
	fi, err := os.Stat(dir)
	if err != nil || !fi.IsDir() {
		return nil, "", fmt.Errorf("OpenShell %s chart: %s is not a directory in the extracted archive; check openshell.charts in the pin file", what, dir)
	}
	ch, err := loader.LoadDir(dir)
	if err != nil {
		return nil, "", fmt.Errorf("load OpenShell %s chart from %s: %w", what, dir, err)
	}
	ch.Metadata.Version = version
	ch.Metadata.AppVersion = version
	if err := ch.Validate(); err != nil {
		return nil, "", fmt.Errorf("OpenShell %s chart %s: %w", what, dir, err)
	}
	pkg, err := chartutil.Save(ch, outDir)
	if err != nil {
		return nil, "", fmt.Errorf("package OpenShell %s chart: %w", what, err)
	}
	if err := os.Chmod(pkg, packagedFileMode); err != nil {
		return nil, "", fmt.Errorf("package OpenShell %s chart: %w", what, err)
	}
	// Reading the package back plays the part of `helm show chart`: a package Helm cannot load
	// is caught here, before anything is installed.
	loaded, err := loader.LoadFile(pkg)
	if err != nil {
		return nil, "", fmt.Errorf("packaged OpenShell %s chart %s does not load: %w", what, pkg, err)
	}
	if loaded.Metadata.Version != version || loaded.Metadata.AppVersion != version {
		return nil, "", fmt.Errorf("packaged OpenShell %s chart %s has version %q appVersion %q, want %q", what, pkg, loaded.Metadata.Version, loaded.Metadata.AppVersion, version)
	}
	return loaded, pkg, nil
}

// LoadLocal loads a chart selected from the local file system instead of the pinned archive: a
// chart directory or a packaged chart (.tgz), as `helm show chart` accepts them. The chart must
// load and validate, and must not carry otherName, the name of the other chart's pinned
// directory, so a Workspace chart given as the Gateway's (or the reverse) is refused. Its own
// version is kept: it is an engineer's chart, not the pinned release.
func LoadLocal(path, otherName string) (*chart.Chart, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("cannot be read (%v)", err)
	}
	if !fi.IsDir() && !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("is neither a chart directory nor a packaged chart file")
	}
	ch, err := loader.Load(path)
	if err != nil {
		return nil, fmt.Errorf("is not a Helm chart (a directory with Chart.yaml, or a packaged .tgz): %v", err)
	}
	if err := ch.Validate(); err != nil {
		return nil, fmt.Errorf("is not a valid Helm chart: %v", err)
	}
	if ch.Name() == otherName {
		return nil, fmt.Errorf("is chart %q, the other of the two OpenShell charts", ch.Name())
	}
	return ch, nil
}
