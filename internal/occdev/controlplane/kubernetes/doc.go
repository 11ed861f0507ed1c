// Package kubernetes runs the OCE control plane inside the development cluster (the
// Kubernetes-only profile, OCC_DEVELOPMENT_CONTROL_PLANE=kubernetes): generated credentials and
// the Secrets the OCE chart expects, the PostgreSQL StatefulSet with its volumes and restart
// egress policies, the OCE production chart from the checkout installed with the Helm SDK, the
// development tenant RBAC, the API proxy the host reaches through a NodePort, the Installation
// inputs of this profile, and the copy of the bootstrap service key through a reader Pod.
//
// Every object is built as a typed k8s.io/api value and created through the flow's recording
// connection (kubeobj.Conn), which records it in the private state before creating it, adopts
// an existing object only on exact ownership and removes it only with a UID precondition; the
// chart goes through the same Helm release code as the Gateway chart (helmrelease), and the key
// through the same verification as the Compose profile's (controlplane.KeyInstaller). Each step is a function of its inputs and safe to repeat: a second run
// converges on the same objects and reuses the credentials the first run stored in the
// cluster, because regenerating them would lock the running database out.
//
// Generated credentials are Secret values: they print as a placeholder in every format and in
// JSON, and only the Kubernetes Secrets and the database URLs inside them hold the real value.
package kubernetes
