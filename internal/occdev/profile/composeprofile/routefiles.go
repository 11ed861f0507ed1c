package composeprofile

import (
	"context"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/openclaw/occ/internal/occdev/controlplane/compose"
	"github.com/openclaw/occ/internal/occdev/engine"
	"github.com/openclaw/occ/internal/occdev/profile"
)

// routeFilesDir is where the ownership helper sees the route's files.
const routeFilesDir = "/routing"

// shareRouteFiles gives the route's two files (0600, written by occ's user) to the user the
// controller and worker-kubernetes run as, so that they, and only they, read them through their
// read-only mounts.
//
// Why a container: OCE's images run as a non-root user (USER node), and a 0600 file of another
// uid is unreadable to it. occ cannot chown on the host (it is not root, and on Docker Desktop
// or a Podman machine the owner the container sees is the VM's, not the host's), and widening
// the mode would show the key to every user of the host. A container sees the files as every
// service container on the same engine sees them, whatever the engine's flavour (rootful,
// rootless with user namespaces, a VM's file sharing): the uid:gid the services run as is
// asked of their own image, as their own user, and a short-lived root helper of the controller
// image, without network, with a read-only root and no capability but CHOWN, hands the files
// over. The mode stays 0600.
func (c Planned) shareRouteFiles(ctx context.Context, env profile.Env, keyPath, caPath string) error {
	eng := env.Engine().Verbs()
	owner, image := "", ""
	for _, name := range compose.APIServices {
		svc := c.Compose.Model.Project.Services[name]
		res, err := eng.RunOnce(ctx, engine.OneShot{Image: svc.Image, Network: "none", User: svc.User, Confined: true,
			Entrypoint: []string{"sh", "-c", "id -u && id -g"}})
		if err != nil {
			return fmt.Errorf("find the user service %s runs as: %w", name, err)
		}
		if res.ExitCode != 0 {
			return fmt.Errorf("find the user service %s runs as: `id` in image %s exited %d: %s", name, svc.Image, res.ExitCode, strings.TrimSpace(res.Stderr))
		}
		ids, err := parseIDs(res.Stdout)
		if err != nil {
			return fmt.Errorf("find the user service %s runs as (image %s): %w", name, svc.Image, err)
		}
		if ids.uid == 0 {
			return fmt.Errorf("service %s runs as root (image %s, user %q): occ hands the route's key only to a non-root service user; run the checkout's images as their own user (USER node), or remove `user:` from the Compose files", name, svc.Image, svc.User)
		}
		if owner != "" && ids.String() != owner {
			return fmt.Errorf("services %s and %s run as different users (%s and %s), but share the route's key and CA files: run both as one user", compose.APIServices[0], name, owner, ids)
		}
		owner = ids.String()
		if image == "" {
			image = svc.Image
		}
	}
	res, err := eng.RunOnce(ctx, engine.OneShot{
		Image: image, Network: "none", User: "0:0", Confined: true, CapAdd: []string{"CHOWN"},
		Binds:      []string{keyPath + ":" + routeFilesDir + "/" + compose.GatewayKeyName + ":z", caPath + ":" + routeFilesDir + "/" + compose.GatewayCAName + ":z"},
		Entrypoint: []string{"chown", owner, routeFilesDir + "/" + compose.GatewayKeyName, routeFilesDir + "/" + compose.GatewayCAName},
	})
	if err == nil && res.ExitCode != 0 {
		err = fmt.Errorf("chown exited %d: %s", res.ExitCode, strings.TrimSpace(res.Stderr))
	}
	if err != nil {
		return fmt.Errorf("hand %s and %s to the services' user %s: %w", filepath.Base(keyPath), filepath.Base(caPath), owner, err)
	}
	return nil
}

// ids is a uid:gid pair.
type ids struct{ uid, gid int }

func (i ids) String() string { return strconv.Itoa(i.uid) + ":" + strconv.Itoa(i.gid) }

// parseIDs reads the two lines of `id -u && id -g`.
func parseIDs(out string) (ids, error) {
	f := strings.Fields(out)
	if len(f) != 2 {
		return ids{}, fmt.Errorf("`id -u && id -g` printed %q, not a uid and a gid", out)
	}
	uid, err1 := strconv.Atoi(f[0])
	gid, err2 := strconv.Atoi(f[1])
	if err1 != nil || err2 != nil || uid < 0 || gid < 0 {
		return ids{}, fmt.Errorf("`id -u && id -g` printed %q, not a uid and a gid", out)
	}
	return ids{uid, gid}, nil
}
