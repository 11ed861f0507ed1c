package kubernetes

import (
	"github.com/openclaw/occ/internal/contract"
	"github.com/openclaw/occ/internal/occdev/controlplane"
)

// Names and keys the OCE chart and OCE's own launcher fix. The Secret
// names and keys are the chart's defaults, so the development values need not name them.
const (
	// DefaultNamespace is the platform namespace (OCC_DEVELOPMENT_KUBERNETES_NAMESPACE).
	DefaultNamespace = "oce-system"
	// ReleaseName is the OCE chart's release. The chart hard-codes some names as
	// openclaw-enterprise-* and derives others from the release, so only this name makes
	// both agree (the tenant bindings rely on it).
	ReleaseName = "openclaw-enterprise"
	// ChartPath is the chart inside an OCE checkout.
	ChartPath = "deploy/helm/openclaw-enterprise"
	// ChartName is the name the checkout's Chart.yaml must carry.
	ChartName = "openclaw-enterprise"

	PostgresBootstrapSecret = "postgres-bootstrap"
	PostgresPasswordKey     = "password"
	PostgresInitKey         = "init.sql"

	InstallationSecret = "occ-installation-startup"
	InstallationKey    = "installation.yaml"
	DatabaseSecret     = "occ-database"
	ApplicationURLKey  = "application-url"
	MigrationURLKey    = "migration-url"
	AuthSecret         = "occ-auth"
	AuthSecretKey      = "secret"
	// GatewayKeySecret holds the API key of the routing's private Gateway (gatewayRouting's
	// apiKeySecretName), created only when the routing controllers are installed.
	GatewayKeySecret    = "occ-private-gateway-key"
	GatewayKeySecretKey = "occ"

	PostgresDataClaim = "postgres-data"
	BootstrapClaim    = "bootstrap-password"
	StorageClassName  = controlplane.StorageClassName

	// Postgres names the StatefulSet, its Service and its app label.
	Postgres          = "postgres"
	PostgresPod       = "postgres-0"
	PostgresPort      = 5432
	DatabaseName      = "openclaw_enterprise"
	MigratorRole      = "occ_migrator"
	ApplicationRole   = "occ_app"
	PostgresUID       = 999
	PostgresDataMount = "/var/lib/postgresql"

	PostgresEgressPolicy   = "openclaw-development-postgres-egress"
	KubernetesEgressPolicy = "openclaw-development-kubernetes-egress"

	PreparePod = "bootstrap-password-prepare"
	ReaderPod  = "bootstrap-key-reader"

	// BootstrapMountPath is where the chart's bootstrap Job writes, and where the launcher's
	// Pods mount the same claim.
	BootstrapMountPath   = "/var/lib/openclaw/bootstrap"
	PasswordFileName     = "initial-admin-password"
	ServiceKeyFileName   = "initial-admin-service-key.json"
	AdminEmail           = "admin@development.openclaw.invalid"
	InstallationName     = "Kubernetes development"
	ControllerUID        = 1000
	ProxyDeployment      = "occ-development-api-proxy"
	ProxyService         = "occ-development-api"
	ProxyPort            = 8080
	ProxyNodePort        = 30080
	DevelopmentClient    = "occ-kubernetes-dev-client"
	APIService           = "openclaw-enterprise-api"
	APIPort              = 8080
	APIServiceAccount    = "openclaw-enterprise-api"
	WorkerServiceAccount = "openclaw-enterprise-worker"

	TenantWorkerBinding        = "openclaw-development-tenant-worker"
	TenantConfigurationBinding = "openclaw-development-tenant-configuration"
	TenantSecretsBinding       = "openclaw-development-tenant-secrets"
)

// The chart's own labels on its Pods (openclaw.labels), which the launcher's NetworkPolicies
// select.
const (
	labelName      = contract.LabelName
	labelInstance  = contract.LabelInstance
	labelComponent = contract.LabelComponent
	oceAppName     = "openclaw-enterprise"
)

// ProxyPodLabels are the development proxy's Pod labels. The chart's API ingress policy admits
// exactly these (values api.clients), so the proxy is the API's only local client.
func ProxyPodLabels() map[string]string {
	return map[string]string{labelName: DevelopmentClient}
}
