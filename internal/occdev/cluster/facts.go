package cluster

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// Facts are what `occ dev status` reads from a reachable cluster itself, beside what the state
// records of it. Each fact is a typed field that ReadFacts fills and PrintStatus prints, both
// here: a new fact about the cluster is a change to this file alone (the status document
// carries Facts whole, and the CLI prints it through PrintStatus).
type Facts struct {
	// Nodes are the cluster's nodes, by name.
	Nodes []Node `json:"nodes,omitempty"`
	// FactsProblem says why the facts could not be read; the rest of the status stands.
	FactsProblem string `json:"factsProblem,omitempty"`
}

// Node is one node of the cluster: whether its kubelet reports it Ready, and the version it
// runs (k3s reports its own release, "v1.33.4+k3s1").
type Node struct {
	Name  string `json:"name"`
	Ready bool   `json:"ready"`
	// NotReady is the Ready condition's reason when the node is not ready ("KubeletNotReady"),
	// or "no Ready condition" for a node whose kubelet never reported.
	NotReady       string `json:"notReady,omitempty"`
	KubeletVersion string `json:"kubeletVersion,omitempty"`
}

// factsTimeout bounds reading the facts: status stays quick when the cluster answers slowly.
const factsTimeout = 10 * time.Second

// ReadFacts reads the facts of the cluster kube reaches. A cluster that does not answer gives
// Facts with the problem, never an error: the facts add to a status, they do not decide it.
func ReadFacts(ctx context.Context, kube kubernetes.Interface) Facts {
	ctx, cancel := context.WithTimeout(ctx, factsTimeout)
	defer cancel()
	list, err := kube.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		return Facts{FactsProblem: "list the nodes: " + err.Error()}
	}
	var f Facts
	for _, n := range list.Items {
		f.Nodes = append(f.Nodes, nodeOf(n))
	}
	slices.SortFunc(f.Nodes, func(a, b Node) int { return strings.Compare(a.Name, b.Name) })
	return f
}

func nodeOf(n corev1.Node) Node {
	out := Node{Name: n.Name, KubeletVersion: n.Status.NodeInfo.KubeletVersion, NotReady: "no Ready condition"}
	for _, c := range n.Status.Conditions {
		if c.Type != corev1.NodeReady {
			continue
		}
		out.Ready, out.NotReady = c.Status == corev1.ConditionTrue, ""
		if !out.Ready {
			out.NotReady = c.Reason
			if out.NotReady == "" {
				out.NotReady = "Ready is " + string(c.Status)
			}
		}
	}
	return out
}

// Degraded says what of the facts makes the environment degraded (the first node that is not
// ready); empty when nothing does.
func (f Facts) Degraded() string {
	for _, n := range f.Nodes {
		if !n.Ready {
			return "the node " + n.Name + " is not ready (" + n.NotReady + ")"
		}
	}
	return ""
}

// PrintStatus writes the facts as lines of `occ dev status`, labelled in its 15-column layout.
func (f Facts) PrintStatus(w io.Writer) {
	for i, n := range f.Nodes {
		label := "Nodes:"
		if i > 0 {
			label = ""
		}
		state := "Ready"
		if !n.Ready {
			state = "not ready: " + n.NotReady
		}
		if n.KubeletVersion != "" {
			state += ", " + n.KubeletVersion
		}
		fmt.Fprintf(w, "%-15s%s (%s)\n", label, n.Name, state)
	}
	if f.FactsProblem != "" {
		fmt.Fprintf(w, "%-15s%s\n", "Nodes:", "unknown ("+f.FactsProblem+")")
	}
}
