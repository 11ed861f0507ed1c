package openshell

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"path"
	"slices"
	"strings"
)

// Relocation of the image-home mounts.
//
// Inside a Sandbox the image's /home/node is replaced by the per-revision runtime home
// (RuntimeHome), which is itself a PVC subpath mounted at RuntimeRoot. Kubernetes cannot mount
// another volume below a subpath mount without that mount shadowing the runtime's own state, so
// every approved Harness mount below /home/node (except the data mount, which has its own
// configured path) is mounted instead at MountsRoot/<sha16 of its original path>, and a
// bootstrap run before the Harness links RuntimeHome/<rest> to it. An environment variable that
// names such a mount exactly points at a "state" child the bootstrap creates, so the Harness's
// atomic writes (write a temporary file, rename over the target) happen inside a directory the
// process owns instead of replacing a symlink or changing the permissions of a root-owned
// mount root.
const (
	// MountsRoot holds the relocated /home/node mounts.
	MountsRoot = "/sandbox/.openclaw-mounts"
	// mountStateChild is the process-created child an environment reference points at.
	mountStateChild = "state"
	// maxRelocatedMounts bounds the bootstrap and therefore the command the gateway receives.
	maxRelocatedMounts = 16

	msgMountOverlap  = "OpenShell workspace mounts must not overlap beneath the runtime home."
	msgNodeRuntime   = "OpenShell requires the bounded Node Harness runtime command."
	nodeImportFlag   = "--import"
	bootstrapURLHead = "data:text/javascript;base64,"
)

// nodeExecutables are the argv[0] spellings of the bounded Node runtime wrapper: the bare name
// resolved through PATH, or the image's absolute Node binary (the path the enrollment network
// policy is bound to).
var nodeExecutables = []string{"node", "/usr/local/bin/node"}

// scriptSuffixes are the module files Node loads as the Harness entry point.
var scriptSuffixes = []string{".js", ".mjs", ".cjs"}

// relocation is one /home/node mount moved below MountsRoot.
type relocation struct {
	// original is the approved mount path, below /home/node.
	original string
	// link is where the Harness expects it: the same path below RuntimeHome.
	link string
	// target is the relocated mount path.
	target string
	// state is the child an environment reference was pointed at, or "" if none was.
	state    string
	readOnly bool
}

// relocatedMountPath is MountsRoot and the first 16 hex digits of SHA-256(original), so the
// same approved mount always lands at the same place and two mounts never share one.
func relocatedMountPath(original string) string {
	return MountsRoot + "/" + sha256Hex(original)[:16]
}

// relocateHomeMounts moves every approved mount below /home/node (mounts[2:]; the runtime root
// and the data mount come first and stay where placeMounts put them) to MountsRoot and returns
// the relocations in mount order. A mount of /home/node itself would replace the whole runtime
// home, and a mount at or below MountsRoot would collide with the relocated ones; both are
// refused as overlaps. placeMounts has already refused mounts nested in one another.
func relocateHomeMounts(mounts []sandboxMount) ([]sandboxMount, []relocation, error) {
	out := slices.Clone(mounts)
	var relocs []relocation
	for i := range out {
		p := out[i].mountPath
		if i >= 1 && (p == MountsRoot || strings.HasPrefix(p, MountsRoot+"/")) {
			return nil, nil, plain(msgMountOverlap, errorf("mount path %s is inside %s, where the Driver relocates /home/node mounts", p, MountsRoot))
		}
		if i < 2 {
			continue
		}
		if p == homeNode {
			return nil, nil, plain(msgMountOverlap, errorf("mount path %s would replace the whole runtime home %s; mount a child of it instead", p, RuntimeHome))
		}
		rest, ok := strings.CutPrefix(p, homeNode+"/")
		if !ok {
			continue
		}
		r := relocation{original: p, link: RuntimeHome + "/" + rest, target: relocatedMountPath(p), readOnly: out[i].readOnly}
		out[i].mountPath = r.target
		relocs = append(relocs, r)
	}
	if len(relocs) > maxRelocatedMounts {
		return nil, nil, plain(msgNodeRuntime, errorf("%d approved mounts below %s; the bootstrap links at most %d", len(relocs), homeNode, maxRelocatedMounts))
	}
	return out, relocs, nil
}

// pointEnvAtState rewrites every environment value that names a relocated mount exactly (after
// buildEnvironment moved /home/node to RuntimeHome) to the mount's state child, and records the
// child so the bootstrap creates it. A read-only mount cannot hold a process-created child, so a
// reference to one points at the relocated mount itself. HOME, TMPDIR and
// OPENCLAW_WORKSPACE_DIR are the Driver's own values and never name a relocated mount.
func pointEnvAtState(env map[string]string, relocs []relocation) {
	for i := range relocs {
		r := &relocs[i]
		for k, v := range env {
			if v != r.link {
				continue
			}
			if r.readOnly {
				env[k] = r.target
				continue
			}
			r.state = r.target + "/" + mountStateChild
			env[k] = r.state
		}
	}
}

// wrapNodeCommand returns the Sandbox command. Without relocations the Harness command is sent
// unchanged. With relocations the bootstrap must run before the Harness, so the command must be
// the bounded Node runtime wrapper, exactly
//
//	[node | /usr/local/bin/node, <entry script>]
//
// where the entry script is a clean absolute path ending in .js, .mjs or .cjs. Node options or
// further arguments are refused: an option could preempt or disable the bootstrap, and the
// driver could not tell. The rendered command prepends the bootstrap as an ES module preloaded
// through Node's --import flag (Node 20.6 or later, which the Harness image ships):
//
//	[<argv0>, --import, data:text/javascript;base64,<bootstrap>, <entry script>]
//
// The bootstrap is a pure function of the relocations, so one revision always renders
// byte-identical commands, and adoption and create replays compare equal.
func wrapNodeCommand(command []string, relocs []relocation) ([]string, error) {
	if len(relocs) == 0 {
		return slices.Clone(command), nil
	}
	if len(command) != 2 || !slices.Contains(nodeExecutables, command[0]) || !nodeEntryScript(command[1]) {
		return nil, unsupported(msgNodeRuntime,
			errorf("workload.command is %q; with mounts below %s it must be exactly [node, /absolute/entry.js] (or /usr/local/bin/node) so the Driver can preload its symlink bootstrap", command, homeNode))
	}
	return []string{command[0], nodeImportFlag, bootstrapURLHead + base64.StdEncoding.EncodeToString([]byte(bootstrapModule(relocs))), command[1]}, nil
}

func nodeEntryScript(s string) bool {
	if !exactPath(s) {
		return false
	}
	for _, suffix := range scriptSuffixes {
		if strings.HasSuffix(s, suffix) && len(path.Base(s)) > len(suffix) {
			return true
		}
	}
	return false
}

// bootstrapModule is the ES module run before the Harness. For each relocation it creates the
// link's parent directories in the runtime home and the symlink to the relocated mount, accepts
// an existing symlink only if it already points there (a restart), and fails the Harness start
// on anything else rather than writing state somewhere unexpected; then it creates the state
// children the environment points at. The link and state lists are JSON literals in mount order.
func bootstrapModule(relocs []relocation) string {
	links := make([][2]string, 0, len(relocs))
	states := []string{}
	for _, r := range relocs {
		links = append(links, [2]string{r.link, r.target})
		if r.state != "" {
			states = append(states, r.state)
		}
	}
	linksJSON, err := json.Marshal(links)
	if err != nil {
		// Arrays of strings always encode.
		panic(fmt.Sprintf("encode bootstrap links: %v", err))
	}
	statesJSON, err := json.Marshal(states)
	if err != nil {
		panic(fmt.Sprintf("encode bootstrap states: %v", err))
	}
	return `import{lstatSync,mkdirSync,readlinkSync,symlinkSync}from"node:fs";import{dirname}from"node:path";` +
		`const links=` + string(linksJSON) + `;const states=` + string(statesJSON) + `;` +
		`const stat=(p)=>{try{return lstatSync(p)}catch(e){if(e.code==="ENOENT")return null;throw e}};` +
		`for(const[l,t]of links){mkdirSync(dirname(l),{recursive:true,mode:0o700});const s=stat(l);` +
		`if(s===null){symlinkSync(t,l)}else if(!s.isSymbolicLink()||readlinkSync(l)!==t){throw new Error("OpenShell runtime home entry "+l+" is not the symlink to "+t)}}` +
		`for(const d of states){const s=stat(d);if(s===null){mkdirSync(d,{mode:0o700})}else if(!s.isDirectory()){throw new Error("OpenShell mount state "+d+" is not a directory")}}` + "\n"
}
