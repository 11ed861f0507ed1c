package platform

import (
	"fmt"

	"github.com/openclaw/occ/internal/occdev/option"
	"github.com/openclaw/occ/internal/occdev/pins"
	"github.com/openclaw/occ/internal/occdev/step"
)

// GatewayRenderPlan is what the offline render of the Gateway chart assumes of the cluster it
// will run on: the Kubernetes version, where it comes from, and where the served API versions
// beyond Helm's defaults come from.
type GatewayRenderPlan struct {
	KubernetesVersion string `json:"kubernetesVersion"`
	Source            string `json:"kubernetesVersionSource"`
	APIVersions       string `json:"apiVersions"`
}

// GatewayRenderInput is what PlanGatewayRender plans from.
type GatewayRenderInput struct {
	// K3s is the k3s image of occ's own clusters, and SelectedBy the variable that selected it
	// ("" when it is the pinned one).
	K3s        pins.Image
	SelectedBy string
	// Existing says the cluster is an existing one, whose version is not known before it is
	// contacted.
	Existing bool
	// PinFile is the pin file that pinned K3s ("" for the pins built into occ), set by the
	// setting PinFileSetting: a k3s pin without a release tag is its bad value.
	PinFile        string
	PinFileSetting option.Setting
	// Manifest is the Agent Sandbox manifest whose CustomResourceDefinitions the render sees.
	Manifest AgentSandboxManifest
}

// PlanGatewayRender decides what the offline render of the Gateway chart assumes: the
// Kubernetes version of the k3s image's release tag (a tag that names none is a bad pin file),
// and the API versions of the Agent Sandbox manifest.
func PlanGatewayRender(in GatewayRenderInput) (GatewayRenderPlan, error) {
	kv, err := K3sKubernetesVersion(in.K3s)
	if err != nil {
		pinFile := in.PinFile
		if pinFile == "" {
			pinFile = "the pins built into occ"
		}
		return GatewayRenderPlan{}, &option.Error{Option: in.PinFileSetting.String(), Value: pinFile, Rule: err.Error(), Fix: "pin k3s.image with its release tag"}
	}
	source := "the pinned k3s image "
	if in.SelectedBy != "" {
		source = "the k3s image " + in.SelectedBy + " selects, "
	}
	r := GatewayRenderPlan{KubernetesVersion: kv, Source: source + in.K3s.Name() + ":" + in.K3s.Tag}
	if in.Existing {
		r.Source += ", which occ's own clusters run: the existing cluster's version is not known before it is contacted (the install itself renders with the cluster's live version and API versions)"
	}
	r.APIVersions = "Helm's defaults and those the CustomResourceDefinitions of the Agent Sandbox manifest " + in.Manifest.Source() + " serve"
	return r, nil
}

// Describe is the dry run's line of the render check (CheckGatewayRender) the plan r assumes.
func (r GatewayRenderPlan) Describe() step.Description {
	return step.Note(fmt.Sprintf("nothing created; renders the Gateway chart with the install's values and the capabilities of the cluster it will run on (Kubernetes %s from %s; API versions of %s), and refuses it unless every image it can make the cluster run (containers, their environment and flags, and the images its ConfigMaps name, such as gateway.toml's supervisor_image and sandbox_runtime_image) is one of the pinned digests, and each pinned image is named; gateway.toml's %s is left to the chart (every Sandbox OCE creates names its image)",
		r.KubernetesVersion, r.Source, r.APIVersions, DefaultImageKey))
}
