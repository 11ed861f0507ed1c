package occdev_test

import (
	"os"
	"testing"

	"github.com/openclaw/occ/internal/occdev/occdevtest"
	"github.com/openclaw/occ/internal/testbed"
)

func TestMain(m *testing.M) { os.Exit(testbed.Run(m)) }

type bed = occdevtest.Bed

func newBed(t *testing.T) *bed { return occdevtest.New(t) }
