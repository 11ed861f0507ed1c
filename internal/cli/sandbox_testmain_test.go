package cli

import (
	"os"
	"testing"

	"github.com/openclaw/occ/internal/testbed"
)

// The `occ sandbox` end-to-end tests drive a real kube-apiserver; testbed.Run stops it after
// the package's tests (and starts nothing for tests that never ask for it).
func TestMain(m *testing.M) { os.Exit(testbed.Run(m)) }
