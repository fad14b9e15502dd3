package daemon

import (
	"io"
	"net"
	"strings"
	"testing"

	"github.com/mcpmon/mcpmon/pkg/config"
)

func embeddedOptions(t *testing.T) config.Options {
	o := config.Defaults()
	o.Listen = "127.0.0.1:0"
	o.DataDir = t.TempDir()
	return o
}

// TestStartFailuresAreClear: the usual ways a start goes wrong name what
// failed and what to do, and leave nothing running (the data dir can be
// opened again right after).
func TestStartFailuresAreClear(t *testing.T) {
	t.Run("listen address taken", func(t *testing.T) {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		defer ln.Close()
		o := embeddedOptions(t)
		o.Listen = ln.Addr().String()
		_, err = Start(t.Context(), RoleAll, o, Deps{})
		if err == nil || !strings.Contains(err.Error(), "--listen") {
			t.Fatalf("err = %v, want it to name --listen", err)
		}
		o.Listen = "127.0.0.1:0"
		d, err := Start(t.Context(), RoleAll, o, Deps{})
		if err != nil {
			t.Fatalf("the failed start left the data dir locked: %v", err)
		}
		d.Stop()
		if err := d.Wait(); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("data dir in use", func(t *testing.T) {
		o := embeddedOptions(t)
		d, err := Start(t.Context(), RoleAll, o, Deps{})
		if err != nil {
			t.Fatal(err)
		}
		defer func() { d.Stop(); _ = d.Wait() }()
		_, err = Start(t.Context(), RoleAll, o, Deps{})
		if err == nil || !strings.Contains(err.Error(), "another mcpmon") {
			t.Fatalf("err = %v, want it to say another mcpmon holds the data dir", err)
		}
	})
	t.Run("role without a shared queue", func(t *testing.T) {
		err := Main(t.Context(), RoleProber, []string{"--data-dir", t.TempDir()}, func(string) string { return "" }, io.Discard, io.Discard)
		if !IsUsage(err) || !strings.Contains(err.Error(), "--queue sqs") {
			t.Fatalf("err = %v, want a usage error pointing at --queue sqs", err)
		}
	})
}
