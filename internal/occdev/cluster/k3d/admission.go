package k3d

import (
	"fmt"
	"path/filepath"

	"sigs.k8s.io/yaml"

	"github.com/openclaw/occ/internal/fsutil"
)

// AdmissionFile is the PodSecurity admission configuration's name in the state directory.
const AdmissionFile = "pod-security-admission.yaml"

// admissionNodePath is where server-0 sees the file (read-only); the apiserver is told to read it.
const admissionNodePath = "/etc/occ-development/" + AdmissionFile

// The file is the apiserver's AdmissionConfiguration carrying one PodSecurity plugin
// configuration. The types mirror the two upstream API groups field for field; they are written
// here because the upstream Go types live in modules occ does not otherwise link.
type admissionConfiguration struct {
	APIVersion string            `json:"apiVersion"`
	Kind       string            `json:"kind"`
	Plugins    []admissionPlugin `json:"plugins"`
}

type admissionPlugin struct {
	Name          string                   `json:"name"`
	Configuration podSecurityConfiguration `json:"configuration"`
}

type podSecurityConfiguration struct {
	APIVersion string                `json:"apiVersion"`
	Kind       string                `json:"kind"`
	Defaults   podSecurityDefaults   `json:"defaults"`
	Exemptions podSecurityExemptions `json:"exemptions"`
}

type podSecurityDefaults struct {
	Enforce        string `json:"enforce"`
	EnforceVersion string `json:"enforce-version"`
	Audit          string `json:"audit"`
	AuditVersion   string `json:"audit-version"`
	Warn           string `json:"warn"`
	WarnVersion    string `json:"warn-version"`
}

type podSecurityExemptions struct {
	Usernames      []string `json:"usernames"`
	Namespaces     []string `json:"namespaces"`
	RuntimeClasses []string `json:"runtimeClasses"`
}

// admissionConfig is the development cluster's PodSecurity policy: every level privileged (the
// sandbox platform's supervisors need it, and namespaces still opt into stricter levels with
// their own labels), and the sandbox RuntimeClasses exempt, so OpenShell's sandbox Pods are
// admitted whatever a namespace label says.
func admissionConfig(exemptRuntimeClasses []string) admissionConfiguration {
	classes := append([]string{}, exemptRuntimeClasses...)
	return admissionConfiguration{
		APIVersion: "apiserver.config.k8s.io/v1",
		Kind:       "AdmissionConfiguration",
		Plugins: []admissionPlugin{{
			Name: "PodSecurity",
			Configuration: podSecurityConfiguration{
				APIVersion: "pod-security.admission.config.k8s.io/v1",
				Kind:       "PodSecurityConfiguration",
				Defaults: podSecurityDefaults{
					Enforce: "privileged", EnforceVersion: "latest",
					Audit: "privileged", AuditVersion: "latest",
					Warn: "privileged", WarnVersion: "latest",
				},
				Exemptions: podSecurityExemptions{Usernames: []string{}, Namespaces: []string{}, RuntimeClasses: classes},
			},
		}},
	}
}

// admissionFileMode is the admission configuration's mode: the node's apiserver reads it
// through a bind mount.
const admissionFileMode = 0o644

// writeAdmissionConfig writes the configuration into the state directory and returns its path.
// It is 0644 because the node's apiserver reads it through a bind mount; it holds no secret, and
// the state directory itself stays 0700.
func writeAdmissionConfig(stateDir string, exemptRuntimeClasses []string) (string, error) {
	data, err := yaml.Marshal(admissionConfig(exemptRuntimeClasses))
	if err != nil {
		return "", fmt.Errorf("encode PodSecurity admission configuration: %w", err)
	}
	p := filepath.Join(stateDir, AdmissionFile)
	if err := fsutil.WriteFileAtomic(p, data, admissionFileMode); err != nil {
		return "", fmt.Errorf("write PodSecurity admission configuration: %w", err)
	}
	return p, nil
}
