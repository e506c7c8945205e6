package migration

import (
	"os"
	"testing"

	"github.com/locksmith-go/locksmith/integration/internal/redisnode"
)

func TestMain(m *testing.M) { os.Exit(redisnode.Main(m)) }
