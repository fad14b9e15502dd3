package schedule

import (
	"errors"
	"strings"
	"testing"
	"time"
)

// FuzzNew: any schedule string is refused with ErrInvalidSchedule or
// parsed into slots that move forward: each Next is strictly after the
// instant asked about, in whole seconds, and a schedule that parsed fires
// at least once. Never a panic.
func FuzzNew(f *testing.F) {
	for _, s := range []string{
		"@every 30s", "@every 1s", "@every 500ms", "@every 2562047h", "@every -1s", "@every",
		"*/5 * * * *", "0 9 * * 1-5", "0 0 30 2 *", "0 0 29 2 *", "@daily", "@yearly", "@reboot",
		"CRON_TZ=Europe/Berlin 0 2 * * *", "CRON_TZ=Local 0 2 * * *", "TZ=", "CRON_TZ=", "CRON_TZ=../../etc/passwd 0 0 * * *",
		"TZ=America/New_York 30 2 * * *", "* * * * * *", "60 * * * *", "1-0 * * * *", "*/0 * * * *",
		strings.Repeat("1,", 200) + "1 * * * *", "",
	} {
		f.Add(s)
	}
	from := time.Date(2026, 3, 29, 0, 30, 0, 0, time.UTC) // a DST change in Europe
	f.Fuzz(func(t *testing.T, spec string) {
		sl, err := New("ep1", spec)
		if err != nil {
			if !errors.Is(err, ErrInvalidSchedule) {
				t.Fatalf("%q: error %v does not wrap ErrInvalidSchedule", spec, err)
			}
			return
		}
		at := from
		for i := range 5 {
			n := sl.Next(at)
			if n.IsZero() {
				if i == 0 {
					t.Fatalf("%q parsed but never fires after %s", spec, at)
				}
				return
			}
			if !n.After(at) || n.Nanosecond() != 0 {
				t.Fatalf("%q: Next(%s) = %s, want a later whole second", spec, at, n)
			}
			at = n
		}
	})
}
