package kubernetes

import (
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

func postgresLabels() map[string]string { return map[string]string{"app": Postgres} }

// resources builds requests and limits from "cpu/memory" pairs.
func resources(reqCPU, reqMem, limCPU, limMem string) corev1.ResourceRequirements {
	return corev1.ResourceRequirements{
		Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(reqCPU), corev1.ResourceMemory: resource.MustParse(reqMem)},
		Limits:   corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(limCPU), corev1.ResourceMemory: resource.MustParse(limMem)},
	}
}

func ptr[T any](v T) *T { return &v }

// restricted is the container security of the launcher's Pods: no privilege escalation and no
// capabilities.
func restricted() *corev1.SecurityContext {
	return &corev1.SecurityContext{
		AllowPrivilegeEscalation: ptr(false),
		Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
	}
}

// VolumeClaims are the PostgreSQL data and the bootstrap output volumes: ReadWriteOnce claims
// of 1Gi on k3s's local-path class. They are created before any Pod uses them and outlive Pod
// restarts, which is what lets the profile survive `k3d cluster stop/start`.
func VolumeClaims(namespace string, own Ownership) []*corev1.PersistentVolumeClaim {
	claim := func(name string) *corev1.PersistentVolumeClaim {
		return &corev1.PersistentVolumeClaim{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace, Labels: own.with(nil)},
			Spec: corev1.PersistentVolumeClaimSpec{
				AccessModes:      []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
				StorageClassName: ptr(StorageClassName),
				Resources:        corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}},
			},
		}
	}
	return []*corev1.PersistentVolumeClaim{claim(PostgresDataClaim), claim(BootstrapClaim)}
}

// PostgresStatefulSet runs PostgreSQL from the imported image. A StatefulSet rather than a bare
// Pod, so the Pod is recreated with the same name and volume after the node restarts; init.sql
// from the postgres-bootstrap Secret creates the OCE roles on the first start only.
func PostgresStatefulSet(namespace string, own Ownership, image string) *appsv1.StatefulSet {
	podLabels := own.with(postgresLabels())
	return &appsv1.StatefulSet{
		ObjectMeta: metav1.ObjectMeta{Name: Postgres, Namespace: namespace, Labels: own.with(postgresLabels())},
		Spec: appsv1.StatefulSetSpec{
			Replicas:    ptr(int32(1)),
			ServiceName: Postgres,
			Selector:    &metav1.LabelSelector{MatchLabels: postgresLabels()},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: podLabels},
				Spec: corev1.PodSpec{
					SecurityContext: &corev1.PodSecurityContext{
						RunAsNonRoot:   ptr(true),
						RunAsUser:      ptr(int64(PostgresUID)),
						RunAsGroup:     ptr(int64(PostgresUID)),
						FSGroup:        ptr(int64(PostgresUID)),
						SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
					},
					Containers: []corev1.Container{{
						Name:            Postgres,
						Image:           image,
						ImagePullPolicy: corev1.PullNever,
						Env: []corev1.EnvVar{
							{Name: "POSTGRES_DB", Value: DatabaseName},
							{Name: "POSTGRES_PASSWORD", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{
								LocalObjectReference: corev1.LocalObjectReference{Name: PostgresBootstrapSecret}, Key: PostgresPasswordKey,
							}}},
						},
						Ports: []corev1.ContainerPort{{Name: Postgres, ContainerPort: PostgresPort, Protocol: corev1.ProtocolTCP}},
						ReadinessProbe: &corev1.Probe{
							ProbeHandler:        corev1.ProbeHandler{Exec: &corev1.ExecAction{Command: []string{"pg_isready", "-U", "postgres", "-d", DatabaseName}}},
							InitialDelaySeconds: 2,
							PeriodSeconds:       2,
						},
						Resources:       resources("100m", "128Mi", "1", "1Gi"),
						SecurityContext: restricted(),
						VolumeMounts: []corev1.VolumeMount{
							{Name: "data", MountPath: PostgresDataMount},
							{Name: "init", MountPath: "/docker-entrypoint-initdb.d", ReadOnly: true},
						},
					}},
					Volumes: []corev1.Volume{
						{Name: "data", VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: PostgresDataClaim}}},
						{Name: "init", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{
							SecretName: PostgresBootstrapSecret,
							Items:      []corev1.KeyToPath{{Key: PostgresInitKey, Path: PostgresInitKey}},
						}}},
					},
				},
			},
		},
	}
}

// PostgresService is the ClusterIP Service behind the database URLs.
func PostgresService(namespace string, own Ownership) *corev1.Service {
	return &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: Postgres, Namespace: namespace, Labels: own.with(postgresLabels())},
		Spec: corev1.ServiceSpec{
			Selector: postgresLabels(),
			Ports:    []corev1.ServicePort{{Name: Postgres, Port: PostgresPort, TargetPort: intstr.FromString(Postgres), Protocol: corev1.ProtocolTCP}},
		},
	}
}

// prepareScript makes the bootstrap volume's root the controller user's and private: the
// bootstrap Job writes the admin password and service key there and refuses a directory that
// others can read.
const prepareScript = `const fs = require("node:fs"); const dir = "` + BootstrapMountPath + `"; fs.chownSync(dir, 1000, 1000); fs.chmodSync(dir, 0o700);`

// PreparePodObject runs once before PostgreSQL: as root, with only CHOWN and FOWNER, it gives the
// bootstrap claim's root to uid/gid 1000 with mode 0700 (a fresh local-path volume is 0777 and
// root-owned).
func PreparePodObject(namespace string, own Ownership, controllerImage string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: PreparePod, Namespace: namespace, Labels: own.with(nil)},
		Spec: corev1.PodSpec{
			RestartPolicy:                corev1.RestartPolicyNever,
			AutomountServiceAccountToken: ptr(false),
			SecurityContext: &corev1.PodSecurityContext{
				RunAsUser:      ptr(int64(0)),
				RunAsGroup:     ptr(int64(0)),
				SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
			},
			Containers: []corev1.Container{{
				Name:            "prepare",
				Image:           controllerImage,
				ImagePullPolicy: corev1.PullNever,
				Command:         []string{"node", "-e", prepareScript},
				Resources:       resources("100m", "128Mi", "1", "1Gi"),
				SecurityContext: &corev1.SecurityContext{
					AllowPrivilegeEscalation: ptr(false),
					Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}, Add: []corev1.Capability{"CHOWN", "FOWNER"}},
				},
				VolumeMounts: []corev1.VolumeMount{{Name: "bootstrap", MountPath: BootstrapMountPath}},
			}},
			Volumes: []corev1.Volume{{Name: "bootstrap", VolumeSource: corev1.VolumeSource{
				PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: BootstrapClaim},
			}}},
		},
	}
}
