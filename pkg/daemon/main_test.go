package daemon

import (
	"os"
	"testing"
)

// TestMain gives the package's SQS clients static dummy credentials (the
// emulator ignores them; the SDK's chain needs some) once, in the process
// environment, so the long end-to-end tests can run in parallel: t.Setenv
// refuses parallel tests.
func TestMain(m *testing.M) {
	for k, v := range map[string]string{"AWS_ACCESS_KEY_ID": "test", "AWS_SECRET_ACCESS_KEY": "test"} {
		if os.Getenv(k) == "" {
			_ = os.Setenv(k, v)
		}
	}
	os.Exit(m.Run())
}
