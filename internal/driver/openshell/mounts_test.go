package openshell

import (
	"bytes"
	"encoding/base64"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/openclaw/occ/internal/driver"
	"github.com/openclaw/occ/internal/gateway/openshellv1"
	"github.com/openclaw/occ/internal/installation"
)

const testSkillsClaim = "agent-support-skills"

// withHomeMounts gives the fixture revision the mounts a native Harness keeps below its image
// home: a writable package cache, writable node state named by OPENCLAW_NODE_STATE_DIR, and a
// read-only skills directory from another claim.
func withHomeMounts(h *driver.HarnessContext) {
	h.Requirements.Mounts = append(h.Requirements.Mounts,
		driver.WorkspaceMount{ClaimName: testClaim, SubPath: "cache", MountPath: "/home/node/.cache"},
		driver.WorkspaceMount{ClaimName: testClaim, SubPath: "node-state", MountPath: "/home/node/.openclaw/node"},
		driver.WorkspaceMount{ClaimName: testSkillsClaim, SubPath: "skills", MountPath: "/home/node/skills", ReadOnly: true},
	)
	setEnv(h, "OPENCLAW_NODE_STATE_DIR", driver.EnvVar{Value: "/home/node/.openclaw/node"})
	setEnv(h, "OPENCLAW_SKILLS_DIR", driver.EnvVar{Value: "/home/node/skills"})
	setEnv(h, "XDG_CACHE_HOME", driver.EnvVar{Value: "/home/node/.cache/xdg"})
}

func withCommand(argv ...string) func(*driver.HarnessContext) {
	return func(h *driver.HarnessContext) {
		withHomeMounts(h)
		h.Requirements.Command = argv
	}
}

// The mount-layout refusals join the package's refusal table, so each one is also proven to
// happen before any gateway call or Kubernetes request (TestProvisionRefusalsCallNothing).
func init() {
	refusalCases = append(refusalCases, []refusalCase{
		// Two approved mounts with the configured subpath on different claims: the data mount
		// names no claim, so which one is the workspace would be a guess.
		{name: "data mount matching two approved mounts", hctx: func(h *driver.HarnessContext) {
			h.Requirements.Mounts = append(h.Requirements.Mounts, driver.WorkspaceMount{ClaimName: testSkillsClaim, SubPath: "workspace", MountPath: "/home/node/other"})
		}, want: "OpenShell sandboxDataMount must exactly match one approved Harness workspace mount."},
		// The configured claim narrows the match to a claim the revision does not mount.
		{name: "data mount naming another claim", config: func(c *installation.SandboxConfiguration) {
			c.Kubernetes.SandboxDataMount.ClaimName = ptr("someone-elses-data")
		}, want: "OpenShell sandboxDataMount must exactly match one approved Harness workspace mount."},
		{name: "nested mounts below the image home", hctx: func(h *driver.HarnessContext) {
			withHomeMounts(h)
			h.Requirements.Mounts = append(h.Requirements.Mounts, driver.WorkspaceMount{ClaimName: testClaim, SubPath: "pip", MountPath: "/home/node/.cache/pip"})
		}, want: "OpenShell workspace mounts must not overlap beneath the runtime home."},
		{name: "mount replacing the whole image home", hctx: func(h *driver.HarnessContext) {
			h.Requirements.Mounts = append(h.Requirements.Mounts, driver.WorkspaceMount{ClaimName: testClaim, SubPath: "home", MountPath: "/home/node"})
		}, want: "OpenShell workspace mounts must not overlap beneath the runtime home."},
		{name: "mount inside the relocation root", hctx: func(h *driver.HarnessContext) {
			h.Requirements.Mounts = append(h.Requirements.Mounts, driver.WorkspaceMount{ClaimName: testClaim, SubPath: "x", MountPath: MountsRoot + "/0123456789abcdef"})
		}, want: "OpenShell workspace mounts must not overlap beneath the runtime home."},
		{name: "shell command with relocated mounts", hctx: withCommand("/bin/sh", "-c", "node /app/dist/harness/openclaw.js"),
			want: "OpenShell requires the bounded Node Harness runtime command.", code: driver.CodeHarnessUnsupported},
		{name: "Node options with relocated mounts", hctx: withCommand("node", "--require", "/tmp/x.js", "/app/dist/harness/codex.js"),
			want: "OpenShell requires the bounded Node Harness runtime command.", code: driver.CodeHarnessUnsupported},
		{name: "Harness arguments with relocated mounts", hctx: withCommand("node", "/app/dist/harness/codex.js", "--verbose"),
			want: "OpenShell requires the bounded Node Harness runtime command.", code: driver.CodeHarnessUnsupported},
		{name: "relative entry script with relocated mounts", hctx: withCommand("node", "dist/harness/codex.js"),
			want: "OpenShell requires the bounded Node Harness runtime command.", code: driver.CodeHarnessUnsupported},
		{name: "unclean entry script with relocated mounts", hctx: withCommand("node", "/app/../tmp/codex.js"),
			want: "OpenShell requires the bounded Node Harness runtime command.", code: driver.CodeHarnessUnsupported},
		{name: "another Node binary with relocated mounts", hctx: withCommand("/tmp/node", "/app/dist/harness/codex.js"),
			want: "OpenShell requires the bounded Node Harness runtime command.", code: driver.CodeHarnessUnsupported},
		{name: "too many relocated mounts", hctx: func(h *driver.HarnessContext) {
			for i := 0; i <= maxRelocatedMounts; i++ {
				h.Requirements.Mounts = append(h.Requirements.Mounts, driver.WorkspaceMount{ClaimName: testClaim, SubPath: "m" + string(rune('a'+i)), MountPath: "/home/node/m" + string(rune('a'+i))})
			}
		}, want: "OpenShell requires the bounded Node Harness runtime command."},
		{name: "relative path in the read-write filesystem policy", config: func(c *installation.SandboxConfiguration) {
			c.Policy.Filesystem = &installation.FilesystemPolicy{ReadWrite: []string{"/tmp", "var/cache"}}
		}, want: "OpenShell policy.filesystem.readWrite[1] must be an exact non-root absolute path."},
		// The relocated read-only skills mount keeps its protection: a read-write grant over the
		// relocation root would reach it.
		{name: "read-write policy over a relocated read-only mount", hctx: withHomeMounts, config: func(c *installation.SandboxConfiguration) {
			c.Policy.Filesystem = &installation.FilesystemPolicy{ReadWrite: []string{MountsRoot}}
		}, want: "OpenShell filesystem policy must not grant read-write access to read-only mount " + relocatedMountPath("/home/node/skills") + "."},
	}...)
}

// decodeBootstrap returns the bootstrap module of a wrapped command.
func decodeBootstrap(t *testing.T, command []string) string {
	t.Helper()
	if len(command) != 4 || command[1] != "--import" || !strings.HasPrefix(command[2], "data:text/javascript;base64,") {
		t.Fatalf("command %q is not the wrapped Node runtime", command)
	}
	raw, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(command[2], "data:text/javascript;base64,"))
	if err != nil {
		t.Fatal(err)
	}
	return string(raw)
}

// A native Harness with a package cache, node state and a skills directory below /home/node:
// each mount moves to /sandbox/.openclaw-mounts/<sha16>, the bootstrap links it back into the
// runtime home, and the variables naming a mount exactly point at its state child.
func TestRenderRelocatesHomeMounts(t *testing.T) {
	d := newTestDriver(t, nil)
	h := openclawContext(testNamespace)
	withHomeMounts(&h)
	req, err := d.RenderCreateSandbox(h)
	if err != nil {
		t.Fatal(err)
	}
	cache, state, skills := relocatedMountPath("/home/node/.cache"), relocatedMountPath("/home/node/.openclaw/node"), relocatedMountPath("/home/node/skills")
	if cache != "/sandbox/.openclaw-mounts/"+sha256Hex("/home/node/.cache")[:16] {
		t.Fatalf("relocated path %s", cache)
	}

	k := req.Spec.Template.DriverConfig.AsMap()["kubernetes"].(map[string]any)
	var got [][4]any
	for _, m := range k["containers"].(map[string]any)["agent"].(map[string]any)["volume_mounts"].([]any) {
		m := m.(map[string]any)
		got = append(got, [4]any{m["name"], m["mount_path"], m["sub_path"], m["read_only"]})
	}
	data, skillsVol := "workspace-"+sha256Hex(testClaim)[:12], "workspace-"+sha256Hex(testSkillsClaim)[:12]
	want := [][4]any{
		{data, RuntimeRoot, "openshell-runtime-" + sha256Hex(testRevisionID)[:16], false},
		{data, "/sandbox/enterprise", "workspace", false},
		{data, cache, "cache", false},
		{data, state, "node-state", false},
		{skillsVol, skills, "skills", true},
	}
	if !slices.Equal(got, want) {
		t.Fatalf("volume mounts\n got %v\nwant %v", got, want)
	}
	var vols [][2]any
	for _, v := range k["volumes"].([]any) {
		pvc := v.(map[string]any)["persistent_volume_claim"].(map[string]any)
		vols = append(vols, [2]any{v.(map[string]any)["name"], pvc["claim_name"]})
	}
	if !slices.Equal(vols, [][2]any{{data, testClaim}, {skillsVol, testSkillsClaim}}) {
		t.Fatalf("volumes %v", vols)
	}

	env := req.Spec.Environment
	if env["OPENCLAW_NODE_STATE_DIR"] != state+"/state" || env["OPENCLAW_SKILLS_DIR"] != skills ||
		env["XDG_CACHE_HOME"] != RuntimeHome+"/.cache/xdg" || env["OPENCLAW_STATE_DIR"] != RuntimeHome+"/.openclaw" ||
		env["HOME"] != RuntimeHome || env["TMPDIR"] != "/tmp" || env["OPENCLAW_WORKSPACE_DIR"] != "/sandbox/enterprise" {
		t.Fatalf("environment %v", env)
	}

	cmd := req.Spec.Command
	if cmd[0] != "node" || cmd[3] != "/app/dist/harness/codex.js" {
		t.Fatalf("command %q", cmd)
	}
	boot := decodeBootstrap(t, cmd)
	for _, s := range []string{
		`const links=[["` + RuntimeHome + `/.cache","` + cache + `"],["` + RuntimeHome + `/.openclaw/node","` + state + `"],["` + RuntimeHome + `/skills","` + skills + `"]]`,
		`const states=["` + state + `/state"]`,
		"symlinkSync", "mkdirSync",
	} {
		if !strings.Contains(boot, s) {
			t.Fatalf("bootstrap lacks %s:\n%s", s, boot)
		}
	}

	fs := req.Spec.Policy.Filesystem
	if !slices.Contains(fs.ReadWrite, cache) || !slices.Contains(fs.ReadWrite, state) || !slices.Contains(fs.ReadOnly, skills) || slices.Contains(fs.ReadWrite, skills) {
		t.Fatalf("filesystem ro=%v rw=%v", fs.ReadOnly, fs.ReadWrite)
	}
	for _, p := range append(slices.Clone(fs.ReadOnly), fs.ReadWrite...) {
		if strings.HasPrefix(p, homeNode) {
			t.Fatalf("policy still names the image home: %s", p)
		}
	}
}

// Without mounts below /home/node there is nothing to link, so the Harness command is sent as
// written (the fixture's data mount at /home/node/workspace moves to the configured path instead).
func TestRenderWithoutHomeMountsKeepsCommand(t *testing.T) {
	d := newTestDriver(t, nil)
	h := codexContext(testNamespace)
	h.Requirements.Command = []string{"/usr/local/bin/codex-harness", "--serve"}
	req, err := d.RenderCreateSandbox(h)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(req.Spec.Command, h.Requirements.Command) {
		t.Fatalf("command %q", req.Spec.Command)
	}
}

// The absolute Node binary is accepted too, and its spelling is kept.
func TestRenderWrapsAbsoluteNode(t *testing.T) {
	d := newTestDriver(t, nil)
	h := openclawContext(testNamespace)
	withHomeMounts(&h)
	h.Requirements.Command = []string{"/usr/local/bin/node", "/app/dist/harness/openclaw.mjs"}
	req, err := d.RenderCreateSandbox(h)
	if err != nil {
		t.Fatal(err)
	}
	if req.Spec.Command[0] != "/usr/local/bin/node" || req.Spec.Command[3] != "/app/dist/harness/openclaw.mjs" {
		t.Fatalf("command %q", req.Spec.Command)
	}
}

// The same revision renders byte-identical requests (map iteration order must not leak into
// the bootstrap or the environment), and another mount order is another, but stable, request.
func TestRenderRelocationIsDeterministic(t *testing.T) {
	d := newTestDriver(t, nil)
	h := openclawContext(testNamespace)
	withHomeMounts(&h)
	var first []byte
	for i := 0; i < 20; i++ {
		req, err := d.RenderCreateSandbox(h)
		if err != nil {
			t.Fatal(err)
		}
		out, err := MarshalRequestJSON(req)
		if err != nil {
			t.Fatal(err)
		}
		if i == 0 {
			first = out
		} else if !bytes.Equal(out, first) {
			t.Fatalf("render %d differs:\n%s\nvs\n%s", i, out, first)
		}
	}
	// A fresh driver built from the same configuration agrees too.
	req, err := newTestDriver(t, nil).RenderCreateSandbox(h)
	if err != nil {
		t.Fatal(err)
	}
	out, _ := MarshalRequestJSON(req)
	if !bytes.Equal(out, first) {
		t.Fatal("a second driver renders another request")
	}
}

// A native OpenClaw revision with mounts below /home/node provisions through the emulated
// gateway: the Harness Pod stored in the real apiserver carries the relocated mounts, the
// wrapped Node command and the state-child environment, exactly as render printed them.
func TestProvisionRelocatedHomeMounts(t *testing.T) {
	e := newEnv(t, envOptions{})
	d := e.driver(nil)
	e.prepare(d)
	h := e.hctx(driver.HarnessOpenClaw)
	withHomeMounts(&h)
	h = e.attach(d, h)
	rendered, err := d.RenderCreateSandbox(h)
	if err != nil {
		t.Fatal(err)
	}
	ref, err := d.ProvisionHarness(e.ctx, h)
	if err != nil {
		t.Fatal(err)
	}
	creates := e.gw.Journal().Method("CreateSandbox")
	if len(creates) != 1 {
		t.Fatalf("CreateSandbox calls %+v", creates)
	}
	sent, _ := MarshalRequestJSON(creates[0].Request.(*openshellv1.CreateSandboxRequest))
	want, _ := MarshalRequestJSON(rendered)
	if !bytes.Equal(sent, want) {
		t.Fatalf("sent request differs from render:\n%s\nvs\n%s", sent, want)
	}
	pod, err := e.admin.CoreV1().Pods(e.ns.Name).Get(e.ctx, ref.ResourceName, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("Harness Pod: %v", err)
	}
	var agent *corev1.Container
	for i := range pod.Spec.Containers {
		if slices.Equal(pod.Spec.Containers[i].Args, rendered.Spec.Command) {
			agent = &pod.Spec.Containers[i]
		}
	}
	if agent == nil {
		t.Fatalf("no container runs the wrapped command %q: %+v", rendered.Spec.Command, pod.Spec.Containers)
	}
	mounts := map[string]corev1.VolumeMount{}
	for _, m := range agent.VolumeMounts {
		mounts[m.MountPath] = m
		if strings.HasPrefix(m.MountPath, homeNode) {
			t.Fatalf("Pod mounts below the image home: %+v", m)
		}
	}
	cache, state, skills := relocatedMountPath("/home/node/.cache"), relocatedMountPath("/home/node/.openclaw/node"), relocatedMountPath("/home/node/skills")
	if m := mounts[cache]; m.SubPath != "cache" || m.ReadOnly || m.Name != volumeName(testClaim) {
		t.Fatalf("cache mount %+v in %+v", m, agent.VolumeMounts)
	}
	if m := mounts[state]; m.SubPath != "node-state" || m.ReadOnly {
		t.Fatalf("state mount %+v", m)
	}
	if m := mounts[skills]; m.SubPath != "skills" || !m.ReadOnly || m.Name != volumeName(testSkillsClaim) {
		t.Fatalf("skills mount %+v", m)
	}
	if m := mounts[RuntimeRoot]; m.SubPath != runtimeSubPath(h.Revision.ID) {
		t.Fatalf("runtime mount %+v", m)
	}
	envs := map[string]string{}
	for _, v := range agent.Env {
		envs[v.Name] = v.Value
	}
	if envs["OPENCLAW_NODE_STATE_DIR"] != state+"/state" || envs["HOME"] != RuntimeHome {
		t.Fatalf("Pod environment %v", envs)
	}
	// Provisioning again adopts the Sandbox: the replayed spec, bootstrap included, is equal.
	again, err := d.ProvisionHarness(e.ctx, h)
	if err != nil || again != ref {
		t.Fatalf("second provision: %+v %v", again, err)
	}
	if n := len(e.gw.Journal().Method("CreateSandbox")); n != 1 {
		t.Fatalf("%d CreateSandbox calls after adoption", n)
	}
}
