// Package observe reads an environment a state records and changes nothing in it: `occ dev
// status` (GetStatus: each recorded object, the cluster occ created, the imported images, the
// workloads, and the control plane's section, which the registered parts hand in as Parts),
// `occ dev list` (List: every named environment's status, summed up as its health), `occ dev
// logs` (Logs, over the recorded services: the Compose services through the recorded engine,
// every Kubernetes workload through the recorded cluster's pods/log), the names SERVICE
// completes to (ServiceNames), the workload states `occ dev status` shows (WorkloadStatuses),
// and the debug bundle, written on request (`occ dev diagnose`) or for a failed up, reload or
// down (FailureBundle). Every connection is the one the state records (package recorded). The
// flow in package occdev calls it; it never imports the flow.
package observe
