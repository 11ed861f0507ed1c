package occdev_test

import (
	"os"
	"testing"

	"github.com/openclaw/occ/internal/occdev/occdevtest"
	"github.com/openclaw/occ/internal/testbed"
)

// TestMain runs the tests on the envtest bed and removes the occ binary the CLI tests share
// (built at most once per test binary) after the last of them.
func TestMain(m *testing.M) {
	code := testbed.Run(m)
	removeBuild()
	os.Exit(code)
}

type bed = occdevtest.Bed

func newBed(t *testing.T) *bed { return occdevtest.New(t) }
