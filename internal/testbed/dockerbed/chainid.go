package dockerbed

import (
	"crypto/sha256"
	"encoding/json"
	"fmt"
)

// TopChainID is the chain ID of the whole layer stack of an image config (its JSON): the key
// under which a containerd snapshotter holds the image unpacked. The chain of one layer is its
// diff ID; each further layer's is the sha256 of the chain so far, a space and its diff ID.
func TopChainID(config []byte) (string, error) {
	var cfg struct {
		RootFS struct {
			DiffIDs []string `json:"diff_ids"`
		} `json:"rootfs"`
	}
	if err := json.Unmarshal(config, &cfg); err != nil {
		return "", fmt.Errorf("image config: %w", err)
	}
	if len(cfg.RootFS.DiffIDs) == 0 {
		return "", fmt.Errorf("image config lists no layer diff IDs")
	}
	chain := cfg.RootFS.DiffIDs[0]
	for _, diff := range cfg.RootFS.DiffIDs[1:] {
		chain = fmt.Sprintf("sha256:%x", sha256.Sum256([]byte(chain+" "+diff)))
	}
	return chain, nil
}
